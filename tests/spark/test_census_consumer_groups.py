"""The census's ``consumer_groups`` table on real log dirs, from the log dirs and from inventories, against
the independent reading of ``__consumer_offsets`` and of the log ranges (tests/consumer_offsets_oracle.py:
kafka-python and Kafka's JSON schemas). A version 2 inventory (before commit rows) is still read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafka_schemas as ks
import realworld
from consumer_offsets_oracle import checkpoint, commits, log_range
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import METADATA_KEY, build_inventory, write_inventory
from logdoctor.spark.census import run_census

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_790_000_000_000
DIRS = ("zk-lewi217", "zk-2.8-seanorth", "zk-3.6-saikrupa82-a")


def _expected(rw: Path) -> set[tuple]:
    out = set()
    for name in DIRS:
        d = rw / name
        starts = checkpoint(d / "log-start-offset-checkpoint")
        for co in d.glob("__consumer_offsets-*"):
            for (group, topic, part), committed in commits(co).items():
                folder = d / f"{topic}-{part}"
                start, end = log_range(folder, starts.get((topic, part))) if folder.is_dir() else (None, None)
                inside = start is not None and start <= committed <= end
                lag = end - committed if inside else None
                out.add((group, topic, part, committed, start, end, lag, None if end is None else not inside))
    return out


def _rows(folder: Path) -> set[tuple]:
    return {
        (r["group"], r["topic"], r["partition"], r["committed_offset"], r["log_start_offset"],
         r["log_end_offset"], r["lag_records"], r["out_of_range"])
        for r in pq.read_table(folder).to_pylist()
    }  # fmt: skip


def test_consumer_groups_table_from_log_dirs_and_inventories(spark, tmp_path: Path) -> None:
    ks.require()
    rw = realworld.require()
    expected = _expected(rw)
    assert any(e[-1] for e in expected) and any(e[6] for e in expected)  # a reset and a real lag
    from_dirs = run_census(spark, [str(rw / n) for n in DIRS], tmp_path / "from-dirs", now_ms=NOW)
    assert _rows(Path(from_dirs.tables["consumer_groups"])) == expected
    # the lag in bytes: the broker's own replica, from the batch holding the committed offset to the end
    by_key = {(r["group"], r["topic"], r["partition"]): r for r in from_dirs.consumer_groups}
    seanorth = rw / "zk-2.8-seanorth" / "some-topic-0"
    logs = sorted(seanorth.glob("*.log"))
    row = by_key[("simple-consumer-example", "some-topic", 0)]
    from kp_oracle import batches

    data = logs[-1].read_bytes()
    pos = next(p for p, _size, last, _ts in batches(data) if last >= row["committed_offset"])
    assert row["lag_bytes"] == len(data) - pos
    # the same from inventories (schema version 3, commit rows) ...
    inv = tmp_path / "inventories"
    inv.mkdir()
    for n in DIRS:
        i = build_inventory([str(rw / n)], Depth.DEFAULT, now_ms=NOW)
        write_inventory(i, str(inv / f"{n}.parquet"))
    from_inv = run_census(spark, [str(inv)], tmp_path / "from-inv", now_ms=NOW)
    assert _rows(Path(from_inv.tables["consumer_groups"])) == expected
    # ... and a version 2 inventory (no commit rows, no commit columns) is read, with no groups
    old = pq.read_table(inv / "zk-lewi217.parquet")
    old = old.filter(pa.compute.not_equal(old.column("record"), "commit"))
    old = old.drop_columns(["group", "committed_offset", "commit_timestamp", "lag_bytes", "lag_ms"])
    old = old.replace_schema_metadata({METADATA_KEY: b"2"})
    v2 = tmp_path / "v2"
    v2.mkdir()
    pq.write_table(old, v2 / "zk-lewi217.parquet")
    from_v2 = run_census(spark, [str(v2)], tmp_path / "from-v2", now_ms=NOW)
    assert not pq.read_table(from_v2.tables["consumer_groups"]).num_rows
    assert not [f for f in from_v2.findings if f["code"] == "INVENTORY_UNREADABLE"]

"""Issue 57 item 4: ``--view latest`` gives one row per key whatever the bytes. kv-0 of ../shared/semantics
with a copy of its batch at 2,300 appended to segment 2,200 under base offset 2,750 (hostile_semantics), so
that offsets 2,750-2,799 are in two segments: each offset is read once, from its first copy in the log's
order (what a consumer fetching on from segment 2,200 gets: the broker returns that segment to its end, then
the fetch goes on at 2,800), and the overlap is named. The oracle is kafka-python's decoding of the same
files, each offset taken once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka.record import MemoryRecords

import hostile_semantics as hs
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices
from logdoctor.spark.export import run_export
from logdoctor.spark.latest import LatestStats, latest_rows
from logdoctor.spark.sources.slice_reader import read_slice

pytestmark = [pytest.mark.realworld]


def kafka_python_latest_once(folder: Path) -> dict[bytes, bytes]:
    """{key: latest value}, tombstoned keys removed, as kafka-python decodes the segments in order, an
    offset seen already (in an earlier segment) not taken again."""
    state: dict[bytes, bytes | None] = {}
    seen = -1
    for log in sorted(folder.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            for r in batch:
                if r.offset <= seen:
                    continue
                seen = r.offset
                if r.key is not None:
                    state[bytes(r.key)] = None if r.value is None else bytes(r.value)
    return {k: v for k, v in state.items() if v is not None}


def _state(table: pa.Table) -> dict[bytes, bytes]:
    keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
    assert len(set(keys)) == len(keys), "a key twice"
    return dict(zip(keys, values, strict=True))


def test_offsets_in_two_segments_give_one_row_per_key(tmp_path: Path) -> None:
    kv = hs.kv_duplicated_offsets(tmp_path) / "kv-0"
    want = kafka_python_latest_once(kv)
    assert len(want) == 434  # the README's live keys: the copy holds the same keys (2,300 = 2,750 mod 450)
    opts = parse_read_options({"view": "latest"})
    stats, problems = LatestStats(), []
    batches = list(
        latest_rows(plan_slices(discover(str(kv)), opts), opts, read_slice, stats=stats, problems=problems)
    )
    assert _state(pa.Table.from_batches(batches)) == want  # was 482 rows for 436 keys
    assert (stats.records, stats.repeated, stats.keys) == (3000, 50, 450)
    (named,) = problems
    assert Path(named["path"]).name == "00000000000000002750.log" and "offsets 2750-2799" in named["error"]


@pytest.mark.spark
def test_export_latest_names_the_overlap(spark, tmp_path: Path) -> None:
    logs = hs.kv_duplicated_offsets(tmp_path / "in")
    want = kafka_python_latest_once(logs / "kv-0")
    out = tmp_path / "out"
    result = run_export(
        spark, [str(logs)], str(out), options={"topics": "kv", "view": "latest"}, writer="arrow"
    )
    assert _state(pq.read_table(out, columns=["key", "value"])) == want and result.rows == 434
    assert any("offsets 2750-2799" in s.error for s in result.skipped)  # named: exit 1 (EX_WARNINGS)
    (entry,) = result.latest
    assert entry["offsets_read_twice"] == 50

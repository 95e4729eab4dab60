"""Compacted topics as tables (issue 46, item 1): ``--view latest`` / option ``view=latest`` gives one row per
(topic, partition, key), the record with the key's highest offset, keys whose latest record is a tombstone
left out, records without a key left out and counted. Checked against ../shared/semantics kv-0 (written by
Kafka's classes; its README gives the 434 live keys and a SHA-256 of their latest values) and against the
latest-per-key table computed here from kafka-python's decoding, through every output."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tables_util as tu
from kafka.record import MemoryRecords

import realworld
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices, task_groups
from logdoctor.spark.export import ExportError, run_export
from logdoctor.spark.sources.slice_reader import read_slices
from logdoctor.spark.tables.export import run_table_export

pytestmark = [pytest.mark.realworld]

LATEST = {"topics": "kv", "view": "latest"}
KV_STATE_SHA256 = "fbbdf80ecab2fb6e7b8eb21777464812023d647c31aed601e58fdc36d3e76543"  # its README


def _kv() -> Path:
    return realworld.require_semantics() / "kafka-logs" / "kv-0"


def kafka_python_latest(folder: Path, below: int | None = None) -> dict[bytes, bytes]:
    """{key: latest value} of a partition folder as kafka-python decodes it, tombstoned keys removed."""
    state: dict[bytes, bytes | None] = {}
    for log in sorted(folder.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            if getattr(batch, "is_control_batch", False):
                continue
            for r in batch:
                if r.key is not None and (below is None or r.offset < below):
                    state[bytes(r.key)] = None if r.value is None else bytes(r.value)
    return {k: v for k, v in state.items() if v is not None}


def digest(rows: dict[bytes, bytes]) -> str:
    h = hashlib.sha256()
    for k in sorted(rows, key=lambda b: b.decode()):
        h.update(k + b"\t" + rows[k].hex().encode() + b"\n")
    return h.hexdigest()


def as_state(table) -> dict[bytes, bytes]:
    keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
    assert len(set(keys)) == len(keys), "a key twice"
    return dict(zip(keys, values, strict=True))


def read_latest(path: Path, **options: str):
    import pyarrow as pa

    opts = parse_read_options({"view": "latest", **options})
    batches = [
        rb for g in task_groups(plan_slices(discover(str(path)), opts), opts) for rb in read_slices(g, opts)
    ]
    return pa.Table.from_batches(batches) if batches else None


def test_kv_latest_is_the_readmes_434_keys() -> None:
    want = kafka_python_latest(_kv())
    assert len(want) == 434 and digest(want) == KV_STATE_SHA256
    state = as_state(read_latest(_kv()))
    assert state == want


def test_ending_offsets_give_the_table_as_of_then() -> None:
    want = kafka_python_latest(_kv(), below=1500)
    assert as_state(read_latest(_kv(), endingOffsets="1500")) == want


def test_small_splits_and_a_key_in_every_segment() -> None:
    """Every segment split into many slices: one task still holds the whole partition."""
    opts = parse_read_options({"view": "latest", "maxPartitionBytes": "8k", "minPartitions": "8"})
    slices = plan_slices(discover(str(_kv())), opts)
    assert len(slices) > 6
    (group,) = task_groups(slices, opts)
    assert len(group) == len(slices)


def test_aborted_records_never_change_the_state() -> None:
    ptx = realworld.require_semantics() / "kafka-logs" / "ptx-0"
    table = read_latest(ptx)
    assert table.num_rows == 230  # keys are unique per offset: the read_committed records
    assert set(table.column("transaction_result").to_pylist()) == {None, "committed"}


def test_internal_compacted_topics_of_real_brokers() -> None:
    """__consumer_offsets of the real log dirs: the coordinator's state as compaction would leave it."""
    realworld.require()  # skips with a reason without ../shared
    checked = 0
    for log_dir in realworld.log_dirs():
        for folder in sorted(log_dir.glob("__consumer_offsets-*")):
            if not any(folder.glob("*.log")):
                continue
            want = kafka_python_latest(folder)
            table = read_latest(folder)
            assert (as_state(table) if table is not None else {}) == want, folder
            checked += 1
    assert checked > 0


@pytest.mark.spark
@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_parquet(spark, tmp_path, writer):
    out = tmp_path / "out"
    result = run_export(spark, [str(_kv().parent)], str(out), options=LATEST, writer=writer)
    assert result.rows == 434
    assert digest(as_state(pq.read_table(out, columns=["key", "value"]))) == KV_STATE_SHA256
    if writer == "arrow":
        (entry,) = result.latest
        assert (entry["keys"], entry["keys_deleted"], entry["rows"], entry["records"]) == (450, 16, 434, 3000)


@pytest.mark.spark
@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_tables(spark, tmp_path, fmt):
    out = tmp_path / "table"
    result = run_table_export(spark, [str(_kv().parent)], str(out), fmt=fmt, options=LATEST)
    assert result.rows == 434
    assert digest(as_state(tu.read_table(fmt, out))) == KV_STATE_SHA256
    again = run_table_export(spark, [str(_kv().parent)], str(out), fmt=fmt, mode="overwrite", options=LATEST)
    assert again.rows == 434
    assert digest(as_state(tu.read_table(fmt, out))) == KV_STATE_SHA256


@pytest.mark.spark
@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_two_runs_keep_the_table_as_the_topics_state(spark, tmp_path, fmt):
    """Offsets up to 1500, then --mode append: the newer offsets as upserts and deletes in one commit, the
    same table as one run over everything; a third run changes nothing."""
    out = str(tmp_path / "table")
    run_table_export(spark, [str(_kv().parent)], out, fmt=fmt, options={**LATEST, "endingOffsets": "1500"})
    assert as_state(tu.read_table(fmt, out)) == kafka_python_latest(_kv(), below=1500)
    assert json.loads(tu.properties(fmt, out)["logdoctor.latest_upto"]) == {"kv": {"0": 1500}}
    version = tu.version(fmt, out)
    run_table_export(spark, [str(_kv().parent)], out, fmt=fmt, mode="append", options=LATEST)
    table = tu.read_table(fmt, out)
    assert digest(as_state(table)) == KV_STATE_SHA256 and table.num_rows == 434
    assert tu.version(fmt, out) != version
    assert json.loads(tu.properties(fmt, out)["logdoctor.latest_upto"]) == {"kv": {"0": 3000}}
    version = tu.version(fmt, out)
    third = run_table_export(spark, [str(_kv().parent)], out, fmt=fmt, mode="append", options=LATEST)
    assert third.rows == 0 and tu.version(fmt, out) == version
    with pytest.raises(ExportError, match="holds the latest view"):
        run_table_export(spark, [str(_kv().parent)], out, fmt=fmt, mode="append", options={"topics": "kv"})


@pytest.mark.spark
def test_kafka_log_dataframe(spark):
    from logdoctor.spark.sources import register

    register(spark)
    table = spark.read.format("kafka-log").option("view", "latest").load(str(_kv())).toArrow()
    assert digest(as_state(table)) == KV_STATE_SHA256


def test_cli_refuses_append_before_spark(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "logdoctor", "export", str(_kv().parent), "--out", str(tmp_path / "o"),
         "--view", "latest", "--mode", "append"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 64 and "--format iceberg or delta" in res.stderr
    assert not (tmp_path / "o").exists()

"""Issue 45 through every output: Parquet (arrow and spark writers), Iceberg, Delta and the ``kafka-log``
DataFrame give ../shared/semantics' ptx-0 as Kafka's consumers read it: 230 records by default
(read_committed), all 372 data records labelled with read_uncommitted; the table exports' append mode
picks up a transaction open at the previous run once its marker is there. Expected values come from
kafka-python's decoding and Kafka's consumer recomputed (kp_oracle.consumer_view), never from logdoctor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tables_util as tu

import kp_oracle
import realworld
from logdoctor.formats.control import EndTxnMarker, control_record_spec
from logdoctor.formats.writer import build_record_batch
from logdoctor.spark.export import run_export
from logdoctor.spark.tables.export import run_table_export

pytestmark = [pytest.mark.spark, pytest.mark.realworld]

LEVELS = {"read_committed": "committed", "read_uncommitted": "labels"}


def _ptx() -> Path:
    return realworld.require_semantics() / "kafka-logs" / "ptx-0"


def _expected() -> tuple[dict[int, str | None], list[int]]:
    labels, committed, lso = kp_oracle.consumer_view(sorted(_ptx().glob("*.log")))
    assert (len(committed), len(labels), lso) == (230, 372, 364)
    return labels, committed


def _check(table, level: str) -> None:
    labels, committed = _expected()
    got = sorted(
        zip(table.column("offset").to_pylist(), table.column("transaction_result").to_pylist(), strict=True)
    )
    if level == "read_committed":
        assert [o for o, _ in got] == committed
        assert {r for _, r in got} == {None, "committed"}
    else:
        assert dict(got) == labels and len(got) == 372


def _options(level: str | None) -> dict[str, str]:
    return {"topics": "ptx"} | ({} if level is None else {"kafka.isolation.level": level})


@pytest.mark.parametrize("level", [None, "read_uncommitted"])
@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_parquet(spark, tmp_path, writer, level):
    out = tmp_path / "out"
    result = run_export(spark, [str(_ptx().parent)], str(out), options=_options(level), writer=writer)
    _check(pq.read_table(out, columns=["offset", "transaction_result"]), level or "read_committed")
    assert result.rows == (230 if level is None else 372)
    (entry,) = result.transactions
    assert entry["last_stable_offset"] == 364
    if level is None:
        assert entry["left_out"] == {
            "aborted": 130,
            "open": 12,
            "above_last_stable_offset": 0,
            "above_high_watermark": 0,
        }
        assert [o["first_offset"] for o in entry["open_transactions"]] == [364]
    else:
        assert entry["records_left_out"] == 0


@pytest.mark.parametrize("level", [None, "read_uncommitted"])
@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_tables(spark, tmp_path, fmt, level):
    out = tmp_path / "table"
    result = run_table_export(spark, [str(_ptx().parent)], str(out), fmt=fmt, options=_options(level))
    _check(tu.read_table(fmt, out), level or "read_committed")
    assert result.rows == (230 if level is None else 372)


@pytest.mark.parametrize("level", [None, "read_uncommitted", "read_committed"])
def test_kafka_log_dataframe(spark, level):
    from logdoctor.spark.sources import register

    register(spark)
    reader = spark.read.format("kafka-log")
    if level is not None:
        reader = reader.option("kafka.isolation.level", level)
    table = reader.load(str(_ptx())).select("offset", "transaction_result").toArrow()
    _check(table, level or "read_committed")


def _commit_the_open_transaction(folder: Path) -> None:
    """What the coordinator writes when producer 8104 (epoch 7) commits: a COMMIT marker at the log end."""
    last = max(folder.glob("*.log"))
    marker = control_record_spec(EndTxnMarker(committed=True, coordinator_epoch=0), timestamp=1712000000376)
    with last.open("ab") as f:
        f.write(
            build_record_batch(
                [marker], base_offset=376, producer_id=8104, producer_epoch=7, is_transactional=True,
                is_control=True, partition_leader_epoch=0,
            )
        )  # fmt: skip


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_append_gets_a_transaction_open_at_the_previous_run_once_its_marker_is_there(spark, tmp_path, fmt):
    logdir = realworld.writable_copy(_ptx().parent, tmp_path / "kafka-logs")
    out = str(tmp_path / "table")
    first = run_table_export(spark, [str(logdir)], out, fmt=fmt, options={"topics": "ptx"})
    assert first.rows == 230
    _commit_the_open_transaction(logdir / "ptx-0")
    labels, committed, lso = kp_oracle.consumer_view(sorted((logdir / "ptx-0").glob("*.log")))
    assert lso is None and len(committed) == 242 and labels[364] == "committed"
    second = run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append", options={"topics": "ptx"})
    assert second.rows == 12
    offsets = tu.read_table(fmt, out).column("offset").to_pylist()
    assert sorted(offsets) == committed  # every committed record once, none twice
    third = run_table_export(spark, [str(logdir)], out, fmt=fmt, mode="append", options={"topics": "ptx"})
    assert third.rows == 0


def test_cli_summary_says_what_was_left_out(tmp_path):
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "logdoctor",
        "export",
        str(_ptx().parent),
        "--out",
        str(out),
        "--topics",
        "ptx",
    ]
    res = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["isolation_level"] == "read_committed" and summary["rows"] == 230
    (entry,) = summary["transactions"]
    assert (entry["topic"], entry["partition"], entry["last_stable_offset"]) == ("ptx", 0, 364)
    assert entry["left_out"]["aborted"] == 130 and entry["left_out"]["open"] == 12
    (o,) = entry["open_transactions"]
    assert (o["producer_id"], o["producer_epoch"], o["first_offset"], o["records"]) == (8104, 7, 364, 12)
    res = subprocess.run([*cmd[:-4], "--out", str(tmp_path / "all"), "--topics", "ptx", "--isolation-level",
                          "read_uncommitted"], capture_output=True, text=True, check=False)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Exported 372 records" in res.stdout and "read_uncommitted: every data record kept" in res.stdout

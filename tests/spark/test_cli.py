"""The export and census commands end to end: local[1] in a subprocess, local[2] in the shared session."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import oracle
import pyarrow.parquet as pq
import pytest

from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.export import ExportError, FormatUnavailableError, run_export

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("export") / "fleet",
        [
            TopicSpec(
                "events",
                partitions=3,
                records_per_partition=700,
                records_per_batch=7,
                segment_bytes=32 * 1024,
            )
        ],
    )
    return path


def _expected(logdir):
    return oracle.digest(
        (t, p, o, k, v) for log in logdir.glob("*/*.log") for t, p, o, _, k, v in oracle.records_of(log)
    )


def test_export_command_with_local_1(logdir, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from logdoctor.cli.main import main; main()",
            "export",
            str(logdir),
            "--out",
            str(out),
            "--master",
            "local[1]",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    table = pq.read_table(out)
    rows = zip(
        *(table.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")), strict=True
    )
    assert oracle.digest(rows) == _expected(logdir)
    assert summary["rows"] == table.num_rows == 2100 and summary["skipped"] == []
    assert sorted(os.listdir(out / "topic=events")) == ["partition=0", "partition=1", "partition=2"]


def test_export_with_local_2_reports_skipped_corrupt_ranges(spark, logdir, tmp_path):
    import shutil

    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    log = sorted((copy / "events-2").glob("*.log"))[-1]
    data = log.read_bytes()
    log.write_bytes(data + b"\x00" * 100)  # a zero-filled tail, as after a crash on a preallocating fs
    assert spark.sparkContext.master == "local[2]"
    result = run_export(spark, [str(copy)], tmp_path / "out")
    assert result.rows == 2100
    assert [(s.path, s.valid_bytes, s.skipped_bytes) for s in result.skipped] == [(str(log), len(data), 100)]


def test_export_advertises_no_format_it_does_not_bundle():
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    res = CliRunner().invoke(app, ["export", "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "parquet" in res.output and "spark.jars.packages" in res.output
    # issue 25: iceberg and delta are bundled now (pyiceberg, deltalake; tests/spark/test_tables.py)
    assert "iceberg" in res.output and "delta" in res.output


def test_a_format_without_its_jars_stops_before_writing_and_says_how_to_give_them(spark, logdir, tmp_path):
    """No data source jar is bundled, and none can be fetched here: ``--format delta`` is a name Spark
    does not know in this session, so the export stops at Spark's lookup of the source, before anything
    is written, and says how to give Spark the jars (exit 69 from the command)."""
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    out = tmp_path / "out"
    with pytest.raises(FormatUnavailableError) as e:
        run_export(spark, [str(logdir)], out, fmt="delta")
    assert "'delta'" in str(e.value) and "spark.jars.packages=" in str(e.value), e.value
    assert not out.exists()
    # issue 25: `--format delta` alone writes a Delta table with deltalake; `--writer spark` asks Spark's
    # own data source of that name, which needs its jars
    res = CliRunner().invoke(
        app,
        ["export", str(logdir), "--out", str(out), "--format", "delta", "--writer", "spark"],
        terminal_width=400,
    )
    assert res.exit_code == 69, res.output
    assert "spark.jars.packages" in res.output and "nothing was written" in res.output, res.output
    assert not out.exists()
    with pytest.raises(ExportError, match="not a data source name"):
        run_export(spark, [str(logdir)], out, fmt="../x")


def test_demo_command_finds_the_planted_faults(spark, tmp_path):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    res = CliRunner().invoke(app, ["demo", str(tmp_path / "demo")], terminal_width=200)
    assert res.exit_code == 0, res.output
    for text in ("REPLICA_LAG", "INDEX_CORRUPT", "RETENTION_RISK", "LOG_DIR_NEARLY_FULL",
                 "logdoctor sync-replica", "logdoctor repair", "logdoctor move-partition",
                 "REPLICA_MISPLACED", "logdoctor move-partition events-0"):
        assert text in res.output, text
    assert (tmp_path / "demo" / "census" / "findings").is_dir()
    # the tiered partition is planted (its remote tier beside the brokers); the census shows its remote part
    assert "tiered partition: orders-2" in res.output
    assert (tmp_path / "demo" / "fleet" / "remote-storage" / "kafka-tiered-storage").is_dir()
    import pyarrow.parquet as pq

    parts = pq.read_table(tmp_path / "demo" / "census" / "partitions").to_pylist()
    tiered = [p for p in parts if (p["topic"], p["partition"]) == ("orders", 2)]
    assert tiered and tiered[0]["remote_segments"] > 0 and tiered[0]["remote_log_start_offset"] == 0


def test_the_arrow_export_finds_the_skipped_ranges_in_its_one_spark_job(spark, logdir, tmp_path):
    """Issue 35: the write tasks check the segments for damage themselves; no second Spark job (a
    kafka-log-segments pass over the same bytes) runs, and the skipped range is still named exactly."""
    import shutil

    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    log = sorted((copy / "events-1").glob("*.log"))[0]
    data = log.read_bytes()
    log.write_bytes(data + b"\x00" * 64)  # a zero-filled tail
    sc = spark.sparkContext
    sc.setJobGroup("issue-35-one-job", "arrow export")
    try:
        result = run_export(spark, [str(copy)], tmp_path / "out")
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert result.writer == "arrow" and result.rows == 2100
    assert [(s.path, s.valid_bytes, s.skipped_bytes) for s in result.skipped] == [(str(log), len(data), 64)]
    assert len(sc.statusTracker().getJobIdsForGroup("issue-35-one-job")) == 1

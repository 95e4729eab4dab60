"""`export --format iceberg|delta` takes no `--partition-by` (a table is partitioned by topic, and by day with
`--partition-by-day`): refused with 64 before Spark starts, never silently ignored (issue 25)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import logdoctor.cli.export  # noqa: F401  (registers the command)
from logdoctor.cli.app import app
from logdoctor.sample.logdir import TopicSpec, generate_log_dir


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_partition_by_is_refused_for_a_table(tmp_path: Path, fmt: str) -> None:
    spec = TopicSpec("orders", partitions=1, records_per_partition=10)
    root, _ = generate_log_dir(tmp_path / "logs", [spec])
    out = tmp_path / "out"
    args = ["export", str(root), "--out", str(out), "--format", fmt, "--partition-by", "partition"]
    res = CliRunner().invoke(app, args, env={"JAVA_HOME": "/nonexistent", "PATH": "/usr/bin:/bin"})
    assert res.exit_code == 64, res.output
    assert "--partition-by applies to the Parquet export" in res.output
    assert not out.exists()  # refused before anything started or was written

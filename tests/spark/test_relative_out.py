"""Issue 31 item 5: an export to a relative ``--out`` writes absolute locations, so the table it wrote,
and the read command it printed, work from any folder (before: ``FileNotFoundError`` for
``relice/metadata/...`` when read from elsewhere; the arrow writer's tasks wrote under their own folder)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import realworld

pytestmark = pytest.mark.spark


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    return CliRunner().invoke(app, args, terminal_width=400)


def _audit_count() -> int:
    """kafka-python's record count of audit-0 (the never-tiered log dir of ../shared/tiered)."""
    from kafka.record import MemoryRecords

    n = 0
    folder = realworld.require_tiered() / "original" / "kafka-logs" / "audit-0"
    for log in sorted(folder.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            n += sum(1 for _ in batch)
    return n


@pytest.mark.parametrize("fmt", ["parquet", "iceberg", "delta"])
def test_a_relative_out_is_written_and_read_from_anywhere(spark, tmp_path, monkeypatch, fmt):
    logs = realworld.require_tiered() / "original" / "kafka-logs"
    lake, other = tmp_path / "lake", tmp_path / "other"
    lake.mkdir()
    other.mkdir()
    monkeypatch.chdir(lake)
    res = _cli(["export", str(logs), "--topics", "audit", "--out", "relice", "--format", fmt, "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["out_dir"] == str(lake / "relice")
    expected = _audit_count()
    if fmt == "parquet":
        code = f"import pyarrow.parquet as pq; print(pq.read_table({str(lake / 'relice')!r}).num_rows)"
    else:
        *stmts, last = summary["read_with"].split("; ")
        code = "\n".join([*stmts, f"print(({last}).num_rows)"])
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=other, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) == expected == summary["rows"]

"""Issue 59 item 5: Ctrl-C of a table export says what the table holds, read from the table: its one
commit (rows and snapshot/version, as the format's own library reads them back) or nothing; never
"incomplete", and no Spark ERROR line under the one line. The interrupt is sent at the moment the commit
seam (PAUSE_ENV) says it has reached, never after a fixed sleep. Issue 59 item 10: the summary's times
add up to the total, each part named."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import tables_util as tu
from test_tables_commit import _run_until

import realworld
from logdoctor.spark.tables import PAUSE_ENV

pytestmark = pytest.mark.spark

REAL = "zk-3.6-saikrupa82-a"  # one topic of 29 records in 3 segments (a real broker's)


def _export(out: Path, fmt: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
    d = realworld.require() / REAL
    return subprocess.Popen(
        [sys.executable, "-m", "logdoctor", "export", str(d), "--out", str(out), "--format", fmt,
         "--master", "local[1]"],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})}, text=True, **kw,
    )  # fmt: skip


def _interrupted_at(tmp_path: Path, fmt: str, stage: str) -> tuple[int, str, Path]:
    out = tmp_path / "table"
    err = tmp_path / "stderr.txt"
    with err.open("w") as sink:
        proc = _export(out, fmt, {PAUSE_ENV: f"{stage}:600"}, stdout=subprocess.PIPE, stderr=sink)
        try:
            _run_until(proc, f"pausing {stage} the commit", timeout=900)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    return code, err.read_text(), out


def _rows_and_version(fmt: str, out: Path) -> tuple[int, int]:
    if fmt == "iceberg":
        table = tu.iceberg_table(out)
        return table.scan().to_arrow().num_rows, table.current_snapshot().snapshot_id
    from deltalake import DeltaTable

    return tu.read_table(fmt, out).num_rows, DeltaTable(str(out)).version()


@pytest.mark.parametrize("fmt", tu.FORMATS)
def test_ctrl_c_after_the_commit_says_the_table_has_it(tmp_path: Path, fmt: str) -> None:
    code, stderr, out = _interrupted_at(tmp_path, fmt, "after")
    assert code == 130, stderr
    last = stderr.strip().splitlines()[-1]
    m = re.fullmatch(
        r"interrupted: logdoctor export was stopped: the table has its commit of ([\d,]+) rows "
        r"\((snapshot|version) (\d+)\)",
        last,
    )
    assert m is not None, stderr
    rows, version = _rows_and_version(fmt, out)  # the format's own library, reading the table back
    assert (int(m.group(1).replace(",", "")), int(m.group(3))) == (rows, version) and rows == 29
    assert "incomplete" not in stderr and " ERROR " not in stderr, stderr


def test_ctrl_c_before_the_commit_says_nothing_was_committed(tmp_path: Path) -> None:
    code, stderr, out = _interrupted_at(tmp_path, "iceberg", "before")
    assert code == 130, stderr
    assert stderr.strip().splitlines()[-1] == (
        "interrupted: logdoctor export was stopped: nothing was committed; the table is as it was"
    ), stderr
    from pyiceberg.exceptions import NoSuchTableError

    with pytest.raises(NoSuchTableError):  # a new table: still none
        tu.iceberg_table(out)
    assert " ERROR " not in stderr, stderr


def test_the_times_printed_add_up_to_the_total(tmp_path: Path) -> None:
    """The line said "22.8 s (4.7 s of it starting Spark; the export 2.0 s)": 16 s were nobody's."""
    proc = _export(tmp_path / "table", "iceberg", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr
    line = " ".join(stdout.split())
    m = re.search(r", in ([\d.]+) s: (.*?)\s*Left out|, in ([\d.]+) s: (.*?)\s*Read it with", line)
    assert m is not None, line
    total, parts = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    seconds = [float(s) for s in re.findall(r"(?:^|, )([\d.]+) s ", parts)]
    names = re.findall(r"(?:^|, )[\d.]+ s ([a-z][^,]*)", parts)
    assert "starting Spark" in names and "a Spark pass over the segments naming the skipped ranges" in names
    assert abs(sum(seconds) - float(total)) <= 0.05 * len(seconds) + 0.05, line

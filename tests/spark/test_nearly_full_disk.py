"""LOG_DIR_NEARLY_FULL through the real statvfs path: a log dir on a small tmpfs, filled until the
census warns, with the disk's size and use read from the file system (no df.json anywhere)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tmpfs
from logdoctor.cli.main import _register, app
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = [pytest.mark.spark, pytest.mark.needs_root]

SIZE = 8 * 2**20


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs.mounted(tmp_path / "disk", SIZE) as mnt:
        yield mnt


def test_a_nearly_full_tmpfs_is_seen_through_statvfs(spark, small_disk: Path, tmp_path: Path) -> None:
    _register()
    # one broker, its log dir on the small file system
    built, _ = generate_log_dir(
        tmp_path / "gen", [TopicSpec("orders", partitions=2, records_per_partition=200)]
    )
    broker = small_disk / "broker-1"
    shutil.copytree(built.parent, broker)
    log_dir = broker / built.name
    assert not list(small_disk.rglob("df.json"))
    # fill the disk to ~93% (between the warning at 85% and the error at 95%)
    st = os.statvfs(small_disk)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    fill = int(0.93 * SIZE) - used
    (small_disk / "ballast").write_bytes(b"\0" * fill)
    st = os.statvfs(small_disk)
    # what df itself prints for that file system (coreutils, an implementation this project did not write)
    df = subprocess.run(["df", "--output=pcent", str(small_disk)], capture_output=True, text=True, check=True)
    expected_pct = df.stdout.splitlines()[1].strip()

    result = CliRunner().invoke(app, ["census", str(broker), "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code in (0, 1, 2), result.output
    report = json.loads(result.stdout)
    rows = [d for d in report["log_dirs"] if d["log_dir"] == str(log_dir)]
    assert len(rows) == 1
    row = rows[0]
    assert row["disk_source"] == "statvfs"
    assert row["disk_total_bytes"] == st.f_blocks * st.f_frsize == SIZE
    full = [f for f in report["findings"] if f["code"] == "LOG_DIR_NEARLY_FULL"]
    assert len(full) == 1 and full[0]["severity"] == "warning"
    assert f" is {expected_pct} full " in full[0]["message"]
    # and past 95% the same finding is an error
    (small_disk / "more").write_bytes(b"\0" * int(0.04 * SIZE))
    again = json.loads(
        CliRunner().invoke(app, ["census", str(broker), "--out", str(tmp_path / "out2"), "--json"]).stdout
    )
    assert [f["severity"] for f in again["findings"] if f["code"] == "LOG_DIR_NEARLY_FULL"] == ["error"]

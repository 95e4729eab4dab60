"""Output placement refusals and the one disk-usage definition (df's), checked against df itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from logdoctor.errors import OutputOverlapsInputError
from logdoctor.logdir.disk import SimulatedDisk, disk_usage
from logdoctor.logdir.outputs import check_output_location, overlap


def test_overlap_relations(tmp_path: Path) -> None:
    logdir = tmp_path / "kafka-logs"
    logdir.mkdir()
    assert overlap(str(logdir), str(logdir)) == "is"
    assert overlap(str(logdir / "census"), str(logdir)) == "inside"
    assert overlap(str(tmp_path), str(logdir)) == "contains"
    assert overlap(str(tmp_path / "out"), str(logdir)) is None
    assert overlap(str(tmp_path / "kafka-logs-2"), str(logdir)) is None  # a name prefix is no parent
    assert overlap(f"file://{logdir}/x", str(logdir)) == "inside"
    assert overlap("s3://bucket/fleet", "s3://bucket/fleet/b1") == "contains"
    assert overlap("s3://bucket/fleet-out", "s3://bucket/fleet") is None
    assert overlap("s3://other/fleet", "s3://bucket/fleet") is None
    assert overlap(str(logdir), "s3://bucket" + str(logdir)) is None


def test_symlinked_output_is_caught(tmp_path: Path) -> None:
    logdir = tmp_path / "kafka-logs"
    logdir.mkdir()
    link = tmp_path / "out"
    link.symlink_to(logdir)
    with pytest.raises(OutputOverlapsInputError) as e:
        check_output_location(link / "tables", [logdir])
    assert e.value.relation == "inside" and str(logdir) in str(e.value)
    check_output_location(tmp_path / "elsewhere", [logdir])


def _df(path: Path) -> tuple[int, int, int, int]:
    """(size, used, available, use%) as GNU df prints them in bytes."""
    out = subprocess.run(
        ["df", "-B1", "--output=size,used,avail,pcent", str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()[-1].split()
    return int(out[0]), int(out[1]), int(out[2]), int(out[3].rstrip("%"))


@pytest.mark.skipif(shutil.which("df") is None, reason="df is not installed")
def test_disk_usage_is_what_df_prints(tmp_path: Path) -> None:
    u = disk_usage(str(tmp_path))
    size, used, avail, pct = _df(tmp_path)
    assert u.source == "statvfs"
    assert u.total_bytes == size
    # the file system is live (other processes write to it): allow a little drift between the two reads
    assert abs(u.used_bytes - used) < 64 << 20 and abs(u.available_bytes - avail) < 64 << 20
    assert abs(u.used_percent - pct) <= 1


def test_a_df_json_beside_a_log_dir_changes_nothing(tmp_path: Path) -> None:
    """A file beside a log dir never overrides the real disk (it did: a demo hook in every command)."""
    (tmp_path / "b1").mkdir()
    (tmp_path / "df.json").write_text(json.dumps({"b1": {"total_bytes": 1000, "available_bytes": 30}}))
    u = disk_usage(str(tmp_path / "b1"))
    assert u.source == "statvfs"
    st = os.statvfs(tmp_path)
    assert u.total_bytes == st.f_blocks * st.f_frsize != 1000
    # the one other source is explicit, in-process and keyed by the absolute path
    fake = {str(tmp_path / "b1"): SimulatedDisk(1000, 30)}
    got = disk_usage(str(tmp_path / "b1"), fake)
    assert (got.source, got.total_bytes, got.used_bytes, got.available_bytes, got.used_percent) == (
        "simulated",
        1000,
        970,
        30,
        97,
    )
    assert disk_usage(str(tmp_path / "missing" / "x"), fake).source in ("statvfs", "unavailable")

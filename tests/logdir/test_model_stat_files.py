"""Partition(stat_files=True), the scan's listing: one stat per file; what cannot be statted is left out.
Symlinks are never listed (never followed), in either mode."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import realworld
from logdoctor.logdir import LogDir
from logdoctor.logdir.model import Partition

DIR = "zk-3.7-nikhildighe-b0"
PART = "__consumer_offsets-12"  # segments 0 and 862, producer snapshots


@pytest.fixture
def part_dir(tmp_path: Path) -> Path:
    logdir = tmp_path / "kafka-logs"
    realworld.writable_copy(realworld.require() / DIR, logdir)
    d = logdir / PART
    os.symlink(d / "gone", d / "00000000000000099999.log")  # dangling: its stat fails
    (d / "00000000000000000862.timeindex").unlink()
    os.symlink(d / "gone", d / "00000000000000000862.timeindex")
    return d


@pytest.mark.realworld
def test_symlinks_are_never_listed(part_dir: Path) -> None:
    """Lazy or not, a symlink is no segment file (never followed): it is listed apart, unread."""
    for stat_files in (False, True):
        lazy = LogDir(part_dir.parent).partition("__consumer_offsets", 12)
        p = Partition(None, part_dir, lazy.dir_name, stat_files=stat_files)
        assert [s.base_offset for s in p.segments] == [0, 862]
        assert p.segments[1].timeindex_path is None and p.segments[1].timeindex_size is None
        assert [(i.path.name, i.kind, i.target) for i in p.irregular] == [
            ("00000000000000000862.timeindex", "symlink", str(part_dir / "gone")),
            ("00000000000000099999.log", "symlink", str(part_dir / "gone")),
        ]
        # the 99999 .log is no segment, and no index lacks its .log
        assert not [o for o in p.orphan_files if o.kind == "index-without-log"]


@pytest.mark.realworld
def test_stat_files_leaves_out_what_cannot_be_statted(part_dir: Path) -> None:
    lazy = LogDir(part_dir.parent).partition("__consumer_offsets", 12)
    p = Partition(None, part_dir, lazy.dir_name, stat_files=True)
    assert "00000000000000000869.snapshot" in [e.name for e in p._scandir[0]]  # listed, not yet statted
    (part_dir / "00000000000000000869.snapshot").unlink()  # removed since the scandir: its stat fails
    assert [s.base_offset for s in p.segments] == [0, 862]
    seg0, active = p.segments
    assert active.timeindex_file is None and active.timeindex_size is None
    assert seg0.log_file == os.path.join(part_dir, "00000000000000000000.log")
    assert seg0.log_name == "00000000000000000000.log"
    assert seg0.index_file == os.path.join(part_dir, "00000000000000000000.index")
    assert seg0.size == os.stat(seg0.log_file).st_size
    listed = sorted(n for n in os.listdir(part_dir) if not os.path.islink(part_dir / n))
    assert [e.name for e in p.entries] == listed
    snapshots = sorted(
        (int(n.split(".")[0]), str(part_dir / n)) for n in listed if n.endswith(".snapshot")
    )
    assert snapshots == [(862, str(part_dir / "00000000000000000862.snapshot"))]
    assert p.producer_snapshot_files == snapshots

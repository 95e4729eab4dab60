"""Nothing is read until asked: every file open and map is recorded while the model is used."""

from __future__ import annotations

import builtins
import io
import mmap
import os

import pytest

from logdoctor.logdir import LogDir
from logdoctor.sample.logdir import TopicSpec, generate_log_dir


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("lazy")
    path, fleet = generate_log_dir(
        root,
        [
            TopicSpec("a.b_c-d", partitions=3, records_per_partition=200, records_per_batch=2,
                      segment_bytes=2000),
            TopicSpec("other", partitions=2, records_per_partition=50, segment_bytes=1500),
        ],
        index_interval_bytes=300,
    )
    return path, fleet


@pytest.fixture
def io_log(monkeypatch):
    """Record (call, path) for every open/os.open/mmap and every scandir."""
    calls: list[tuple[str, str]] = []
    real_open, real_os_open, real_mmap, real_scandir = builtins.open, os.open, mmap.mmap, os.scandir

    def rec_open(file, *a, **k):
        calls.append(("open", os.fspath(file) if not isinstance(file, int) else f"fd{file}"))
        return real_open(file, *a, **k)

    def rec_os_open(path, *a, **k):
        calls.append(("os.open", os.fspath(path)))
        return real_os_open(path, *a, **k)

    class RecMmap(real_mmap):  # type: ignore[misc, valid-type]
        def __new__(cls, fileno, *a, **k):
            calls.append(("mmap", os.readlink(f"/proc/self/fd/{fileno}")))
            return real_mmap.__new__(real_mmap, fileno, *a, **k)

    def rec_scandir(path="."):
        calls.append(("scandir", os.fspath(path)))
        return real_scandir(path)

    monkeypatch.setattr(builtins, "open", rec_open)
    monkeypatch.setattr(io, "open", rec_open)
    monkeypatch.setattr(os, "open", rec_os_open)
    monkeypatch.setattr(mmap, "mmap", RecMmap)
    monkeypatch.setattr(os, "scandir", rec_scandir)
    return calls


def _reads(calls):
    return [c for c in calls if c[0] != "scandir"]


def test_listing_reads_nothing(log_dir, io_log):
    path, fleet = log_dir
    ld = LogDir(path)
    assert io_log == []  # construction touches nothing
    parts = ld.partitions
    names = [(p.topic, p.partition) for p in parts]
    assert names == sorted((r.topic, r.partition) for r in fleet.replicas)
    total_segments = 0
    for p in parts:
        for s in p.segments:
            total_segments += 1
            _ = (s.base_offset, s.size, s.mtime_ms, s.index_path, s.timeindex_path, s.index_size)
        _ = (p.active_segment, p.orphan_files, p.producer_snapshots, p.files)
    assert total_segments == sum(len(r.segments) for r in fleet.replicas) > 10
    assert _reads(io_log) == []
    scans = [c[1] for c in io_log if c[0] == "scandir"]
    assert len(scans) == len(set(scans)) == 1 + len(parts)  # one scandir per folder, root included


def test_log_end_offset_reads_only_the_active_segment(log_dir, io_log):
    path, fleet = log_dir
    ld = LogDir(path)
    p = ld.partition("a.b_c-d", 1)
    segs = p.segments
    assert len(segs) > 3
    io_log.clear()
    leo = p.log_end_offset
    assert leo == fleet.replica(0, "a.b_c-d", 1).log_end_offset
    touched = {os.path.basename(c[1]) for c in _reads(io_log)}
    active = segs[-1]
    assert touched == {active.log_path.name, active.index_path.name}
    assert p.log_start_offset == 0  # the log-start checkpoint is read, no segment file
    assert {os.path.basename(c[1]) for c in _reads(io_log)} - touched == {"log-start-offset-checkpoint"}


def test_checkpoints_read_once_and_only_when_asked(log_dir, io_log):
    path, fleet = log_dir
    ld = LogDir(path)
    for p in ld.partitions:
        _ = p.segments
    assert _reads(io_log) == []
    rps = [p.recovery_point for p in ld.partitions]
    assert rps == [r.recovery_point for r in sorted(fleet.replicas, key=lambda r: (r.topic, r.partition))]
    assert [os.path.basename(c[1]) for c in _reads(io_log)] == ["recovery-point-offset-checkpoint"]


def test_segment_accessors_read_on_demand(log_dir, io_log):
    path, _ = log_dir
    seg = LogDir(path).partition("other", 0).segments[0]
    io_log.clear()
    seg.time_index()
    assert [os.path.basename(c[1]) for c in _reads(io_log)] == [seg.timeindex_path.name]
    io_log.clear()
    view = seg.map_log()
    assert len(view) == seg.size
    assert [(c[0], os.path.basename(c[1])) for c in _reads(io_log)] == [
        ("os.open", seg.log_path.name),
        ("mmap", seg.log_path.name),
    ]


def test_offsets_keep_no_file_open(log_dir, tmp_path):
    """Log end offsets of every partition, with the model kept alive, leave no fd or map behind
    (a broker-sized dir has thousands of partitions; ulimit -n is often 1024)."""
    path, fleet = log_dir
    # an index-less copy forces the scan-from-0 path (mmap) too
    bare = tmp_path / "bare"
    bare.mkdir()
    for part in path.iterdir():
        if part.is_dir():
            (bare / part.name).mkdir()
            for f in part.glob("*.log"):
                (bare / part.name / f.name).write_bytes(f.read_bytes())
    before = len(os.listdir("/proc/self/fd"))
    lds = [LogDir(path), LogDir(bare)]
    leos = [[p.log_end_offset for p in ld.partitions] for ld in lds]
    expected = [r.log_end_offset for r in sorted(fleet.replicas, key=lambda r: (r.topic, r.partition))]
    assert leos == [expected, expected]
    assert len(os.listdir("/proc/self/fd")) == before

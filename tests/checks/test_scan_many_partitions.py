"""The scan of many partitions never runs a full garbage collection (issue 26: with 50,000 partitions the
automatic full collections, each walking every report kept so far, were half of the CPU time of
``scan --quick``), still frees the cyclic garbage of the partitions it checked, and leaves the collector as
it found it."""

from __future__ import annotations

import gc
import os
import sys
import weakref
from pathlib import Path

import pytest

from logdoctor.checks import scanner
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.logdir import model

PARTITIONS = 3000


def _log_dir(root: Path, partitions: int) -> Path:
    (root / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    for i in range(partitions):
        (root / f"bench.t{i // 100}-{i % 100}").mkdir()
    return root


def _full_collections() -> int:
    return gc.get_stats()[2]["collections"]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_scan_of_thousands_of_partitions_runs_no_full_collection(tmp_path: Path, enabled: bool) -> None:
    d = _log_dir(tmp_path, PARTITIONS)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        before = _full_collections()
        rep = scan([d], ScanOptions(depth=Depth.QUICK), jobs=1)
        assert _full_collections() == before
        assert gc.isenabled() is enabled  # restored as found
    finally:
        (gc.enable if was else gc.disable)()
    assert len(rep.partitions) == PARTITIONS


def test_the_cyclic_garbage_of_checked_partitions_is_freed_during_the_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Partition <-> Segment objects form cycles; with the automatic collector off, the scan's own young
    collections must free them as it goes, not keep every partition's until the end."""
    d = _log_dir(tmp_path, 400)
    for i in range(400):
        (d / f"bench.t{i // 100}-{i % 100}" / "00000000000000000000.log").write_bytes(b"")
    alive: list[weakref.ref[model.Partition]] = []
    peak = 0
    real_init = model.Partition.__init__

    def tracking_init(self: model.Partition, *a: object, **kw: object) -> None:
        nonlocal peak
        real_init(self, *a, **kw)  # type: ignore[arg-type]
        if a[0] is not None:
            return  # the LogDir's own listing (kept for the whole scan); check_partition passes None
        alive.append(weakref.ref(self))
        peak = max(peak, sum(r() is not None for r in alive[-200:]))

    monkeypatch.setattr(model.Partition, "__init__", tracking_init)
    rep = scan([d], ScanOptions(depth=Depth.QUICK), jobs=1)
    assert len(rep.partitions) == 400
    assert peak < 100, peak


def test_partitions_that_leave_no_cycle_are_not_collected_for(tmp_path: Path) -> None:
    """Issue 49 goal 4: the scan's own young collections come after partitions with segments only (each walks
    every object made since the last, the kept reports too: 3,125 collections in a scan of 50,000 empty
    partitions, for 193 objects of garbage in all). 3,000 empty partitions: none; the test above checks
    that partitions with segments are still collected for."""
    d = _log_dir(tmp_path, PARTITIONS)
    was = gc.isenabled()
    gc.disable()
    try:
        before = gc.get_stats()[1]["collections"]
        rep = scan([d], ScanOptions(depth=Depth.QUICK), jobs=1)
        assert gc.get_stats()[1]["collections"] == before
    finally:
        (gc.enable if was else gc.disable)()
    assert len(rep.partitions) == PARTITIONS and not any(p.segments for p in rep.partitions)


def test_the_root_is_listed_and_each_checkpoint_parsed_once_per_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every check of the log dir level (root files, KRaft strays, remote tier evidence, log start offsets)
    uses the same listing and checkpoints: with 50,000 partitions each re-listing cost 50,000 entries."""
    from logdoctor.formats.checkpoint import new_offset_checkpoint, write_offset_checkpoint
    from logdoctor.logdir.names import LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT

    d = _log_dir(tmp_path, 300)
    entries = [(f"bench.t{i // 100}", i % 100, 0) for i in range(300)]
    cp = write_offset_checkpoint(new_offset_checkpoint(entries))
    for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT):
        (d / name).write_bytes(cp)
    listed: list[str] = []
    parsed: list[str] = []
    real_scandir, real_read = os.scandir, model._read_offset_checkpoint

    def scandir(path: object = ".") -> object:
        if sys._getframe(1).f_code.co_filename == model.__file__:  # the LogDir model's listings
            listed.append(os.fspath(path))  # type: ignore[arg-type]
        return real_scandir(path)  # type: ignore[arg-type]

    def read(path: Path) -> model.CheckpointRead:
        parsed.append(path.name)
        return real_read(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(model, "_read_offset_checkpoint", read)
    rep = scan([d], ScanOptions(depth=Depth.QUICK), jobs=1)
    assert len(rep.partitions) == 300
    # (recognize() and the remote-tier evidence glance at the names once more, without the model)
    assert listed.count(str(d)) == 1, listed.count(str(d))
    assert sorted(parsed) == sorted(set(parsed)), parsed
    assert LOG_START_OFFSET_CHECKPOINT in parsed and RECOVERY_POINT_CHECKPOINT in parsed
    # outside a scan every LogDir reads afresh (a repair then a scan in one process sees the new files)
    assert model.LogDir.shared(d) is not model.LogDir.shared(d)


def test_the_log_dir_level_stats_no_partition_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The root-file permission check knows a partition folder is a folder from the listing: the only stat of
    a partition folder in a scan is the partition check's own (its permissions), once: the fstat of the log
    dir's listing of its folders, or without it one os.stat."""
    d = _log_dir(tmp_path, 300)
    stats: list[str] = []
    real_stat = os.stat

    def stat(path: object, *a: object, **kw: object) -> os.stat_result:
        stats.append(os.fspath(path))  # type: ignore[arg-type]
        return real_stat(path, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat)
    rep = scan([d], ScanOptions(depth=Depth.QUICK), jobs=1)
    assert len(rep.partitions) == 300
    folder = str(d / "bench.t1-7")
    # the log dir's one listing (formats.folders: an fstat of each folder) holds the check's stat
    assert stats.count(folder) == 0, stats.count(folder)
    monkeypatch.setattr(scanner._Listing, "begin", classmethod(lambda cls, ld: None))
    stats.clear()
    rep = scan([d], ScanOptions(depth=Depth.QUICK), jobs=1)
    assert stats.count(folder) == 1, stats.count(folder)

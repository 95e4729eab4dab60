"""Every real log dir, undamaged: no error findings, and exactly the warnings its files explain.

The expected findings are derived from the files themselves (not from the scanner): a .log whose
.index/.timeindex is absent (left out of the snapshot, see MANIFEST.json), leftovers (.tmp, index
files with no .log), a missing clean-shutdown marker, an empty meta.properties or partition.metadata.
Also: the batch walker against two independent decoders, serial == parallel output, and --quick
never opening an inactive .log.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import kafka_schemas
import realworld
from consumer_offsets_oracle import expected_out_of_range
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.state import segment_walk as walker  # the scan's segment walk
from logdoctor.logdir.names import parse_partition_dir

NOW = 1_800_000_000_000
SEG_RE_SUFFIXES = (".index", ".timeindex")


def _expected(d: Path, depth: Depth = Depth.DEFAULT) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(errors, warnings) as (code, path) from the files of the log dir (``depth``: --quick reads no
    __consumer_offsets, so it judges no committed offset)."""
    errors: set[tuple[str, str]] = set()
    warnings: set[tuple[str, str]] = set()
    live_parts = []
    for entry in sorted(d.iterdir()):
        if entry.is_file() and entry.name.endswith(".tmp"):
            warnings.add(("ORPHAN_FILE", str(entry)))
        if not entry.is_dir():
            continue
        parsed = parse_partition_dir(entry.name)
        if parsed is None or parsed.kind.value != "log":
            continue
        live_parts.append(parsed)
        names = {p.name for p in entry.iterdir()}
        for name in names:
            stem, _dot, suffix = name.partition(".")
            if suffix == "log":
                missing = [s for s in SEG_RE_SUFFIXES if stem + s not in names]
                if missing:
                    warnings.add(("INDEX_MISSING", str(entry / name)))
            elif suffix in ("index", "timeindex", "txnindex") and f"{stem}.log" not in names:
                warnings.add(("ORPHAN_FILE", str(entry / name)))
        pm = entry / "partition.metadata"
        if pm.exists() and pm.stat().st_size == 0:
            errors.add(("PARTITION_METADATA_INVALID", str(pm)))
    if depth is not Depth.QUICK and kafka_schemas.available():  # commits outside the log (independent replay)
        for _group, topic, part, _committed in expected_out_of_range(d)[0]:
            warnings.add(("CONSUMER_OFFSET_OUT_OF_RANGE", str(d / f"{topic}-{part}")))
    meta = d / "meta.properties"
    if meta.exists() and meta.stat().st_size == 0:
        warnings.add(("META_PROPERTIES_INVALID", str(meta)))
    if not (d / ".kafka_cleanshutdown").exists() and any(not p.is_metadata for p in live_parts):
        warnings.add(("UNCLEAN_SHUTDOWN", str(d / ".kafka_cleanshutdown")))
    return errors, warnings


@pytest.mark.realworld
@pytest.mark.parametrize("depth", [Depth.QUICK, Depth.DEFAULT, Depth.DEEP], ids=lambda d: d.name.lower())
@pytest.mark.parametrize("log_dir", realworld.params(realworld.log_dirs()))
def test_real_log_dir_scans_clean(log_dir: Path, depth: Depth) -> None:
    report = scan([log_dir], ScanOptions(depth=depth, now_ms=NOW), jobs=1)
    got_errors = {(f.code, f.path) for f in report.findings if f.severity.label == "error"}
    got_warnings = {(f.code, f.path) for f in report.findings if f.severity.label == "warning"}
    exp_errors, exp_warnings = _expected(log_dir, depth)
    assert got_errors == exp_errors
    assert got_warnings == exp_warnings
    # the scan lists every partition folder and reads each partition's log end offset
    live = [p for p in log_dir.iterdir() if p.is_dir() and parse_partition_dir(p.name) is not None]
    assert len(report.partitions) == len(live)


@pytest.mark.realworld
def test_real_dirs_with_clean_shutdown_have_consistent_checkpoints(realworld_dir: Path) -> None:
    # recovery points and high watermarks written by the broker match the log end offsets we compute
    checked = 0
    for e in realworld.manifest()["entries"]:
        d = realworld_dir / e["name"]
        report = scan([d], ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=2)
        for p in report.partitions:
            if (
                p.recovery_point is not None
                and p.log_end_offset is not None
                and e["has"]["clean_shutdown_marker"]
            ):
                assert p.recovery_point == p.log_end_offset, (d, p.topic, p.partition)
                checked += 1
    assert checked > 100


@pytest.mark.realworld
def test_walker_matches_two_independent_decoders(realworld_dir: Path) -> None:
    from kafka.record import MemoryRecords

    from logdoctor.formats.records import scan_batches

    walked = 0
    for path in realworld.files(suffix=".log"):
        data = path.read_bytes()
        base = int(path.name.split(".")[0])
        ours = walker.walk(data, base, verify_crc=True, with_positions=True)
        assert ours.clean, (path, ours.damage)
        theirs = scan_batches(data, source=str(path), verify_crc=True)
        assert theirs.error is None
        assert ours.batches == len(theirs.batches)
        assert list(ours.positions or []) == [b.position for b in theirs.batches]
        assert list(ours.last_offsets or []) == [b.last_offset for b in theirs.batches]
        assert ours.valid_bytes == theirs.valid_bytes == len(data)
        assert ours.max_timestamp == max((b.max_timestamp for b in theirs.batches), default=-1)
        kp, last = MemoryRecords(data), []
        while (b := kp.next_batch()) is not None:
            assert b.validate_crc()
            last.append(b.last_offset if b.magic == 2 else b._offset)
        assert list(ours.last_offsets or []) == last
        walked += ours.batches
    assert walked > 20_000


@pytest.mark.realworld
def test_serial_and_parallel_scans_give_the_same_report(realworld_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    realworld.writable_copy(realworld_dir / "zk-2.8-seanorth", d)
    serial = scan([d], ScanOptions(depth=Depth.DEEP, now_ms=NOW), jobs=1).to_json()
    parallel = scan([d], ScanOptions(depth=Depth.DEEP, now_ms=NOW), jobs=2).to_json()
    # each log dir's disk is a live measurement of a shared file system (used bytes move between two
    # scans): its size is compared, the rest like every other field
    for doc in (serial, parallel):
        for ld in doc["log_dirs"]:
            ld["disk"] = ld["disk"]["total_bytes"]
    assert serial == parallel
    assert [(p["topic"], p["partition"]) for p in serial["partitions"]] == sorted(
        (p["topic"], p["partition"]) for p in serial["partitions"]
    )


_opened: list[str] = []
_recording = False


def _audit(event: str, args: tuple) -> None:
    if _recording and event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
        _opened.append(os.fsdecode(args[0]))


@pytest.mark.realworld
@pytest.mark.parametrize("name", ["zk-3.7-nikhildighe-b0", "zk-2.7-donaldy", "zk-2.1-yuanliubei"])
def test_quick_never_opens_an_inactive_log(realworld_dir: Path, name: str) -> None:
    global _recording
    if _audit not in getattr(sys, "_logdoctor_hooks", []):
        sys.addaudithook(_audit)
        sys._logdoctor_hooks = [*getattr(sys, "_logdoctor_hooks", []), _audit]  # type: ignore[attr-defined]
    d = realworld_dir / name
    inactive, active = set(), set()
    for part in d.iterdir():
        if part.is_dir():
            logs = sorted(p for p in part.iterdir() if p.name.endswith(".log"))
            inactive.update(str(p) for p in logs[:-1])
            active.update(str(p) for p in logs[-1:])
    assert inactive, "the dir must have inactive segments for this test to mean anything"
    for depth, must_open_inactive in ((Depth.QUICK, False), (Depth.DEEP, True)):
        _opened.clear()
        _recording = True
        try:
            scan([d], ScanOptions(depth=depth, now_ms=NOW), jobs=1)  # in-process: every open is seen
        finally:
            _recording = False
        opened_logs = {p for p in _opened if p.endswith(".log")}
        assert bool(opened_logs & inactive) is must_open_inactive
        if depth is Depth.QUICK:
            assert opened_logs <= active

"""Issue 26: `scan --deep` walks the segments of a partition on every core (threads in the C fast lane,
``_speedups.scan_v2``, which releases the GIL) and reports exactly what the serial Python walk
reports: the same findings in the same order, the same JSON, the same walk results.

The reference is the serial walk of the Python loop alone (``fast_lane.FAST_WALK = None``, one thread), the
walk every release before this one ran; the data is real (../shared/realworld, Kafka's bytes) and the
same data damaged."""

from __future__ import annotations

import json
import os
import random
import sys
import threading
from pathlib import Path

import pytest

import on_threads
import realworld

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "repair"))

import damage

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.state import fast_lane, file_records, partition, segment_walk
from logdoctor.formats import native
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.skipif(native.scan_v2 is None, reason="needs the C extension and crc32c")

NOW_MS = 1_800_000_000_000


def _scan_json(
    log_dir: Path, *, parallel: bool, monkeypatch: pytest.MonkeyPatch, depth: Depth = Depth.DEEP
) -> str:
    with monkeypatch.context() as m:
        if parallel:
            m.setattr(fast_lane, "walk_threads", lambda: 4)  # more threads than segments or cores
        else:
            m.setattr(fast_lane, "FAST_WALK", None)
            m.setattr(fast_lane, "walk_threads", lambda: 1)
        rep = scan([log_dir], ScanOptions(depth=depth, now_ms=NOW_MS), jobs=1)
    out = rep.to_json()
    for d in out["log_dirs"]:
        d.pop("disk")  # the file system's free bytes (statvfs) move with everything else on the machine
    return json.dumps(out, indent=1, sort_keys=True)


def _multi_segment_partitions(log_dir: Path) -> list[Path]:
    return [p for p in sorted(log_dir.iterdir()) if p.is_dir() and len(list(p.glob("*.log"))) > 1]


@pytest.mark.parametrize("log_dir", realworld.params(realworld.log_dirs()))
def test_parallel_deep_scan_of_real_log_dirs_reports_what_the_serial_walk_reports(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    realworld.require()
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch)
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch) == serial


def test_real_multi_segment_partitions_exist() -> None:
    """The real data holds partitions of several segments (what the parallel walk spreads)."""
    realworld.require()
    assert sum(len(_multi_segment_partitions(d)) for d in realworld.log_dirs()) >= 3


def _damaged_copy(tmp_path: Path) -> Path:
    """A real log dir whose biggest partition is split into four segments (as a broker rolls them), then
    damaged in three of them: a flipped byte in a batch (CRC mismatch), offsets going backwards, a torn
    final batch."""
    src = realworld.require() / realworld.log_dir_names()[0]
    log_dir = damage.copy_log_dir(src, tmp_path / "logs")
    part = damage.biggest_partition(log_dir, min_batches=16)
    assert part is not None
    # a flipped byte in the second segment's third batch (CRC mismatch), the last one's final batch torn
    logs = damage.split_flip_and_cut(part)
    # the third segment's second batch re-numbered to its first's base offset: offsets go backwards
    batches = damage.batch_positions(logs[2])
    data = bytearray(logs[2].read_bytes())
    data[batches[1][0] : batches[1][0] + 8] = batches[0][2].to_bytes(8, "big", signed=True)
    logs[2].write_bytes(bytes(data))
    return log_dir


def test_parallel_deep_scan_of_a_damaged_real_partition_reports_what_the_serial_walk_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log_dir = _damaged_copy(tmp_path)
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch)
    kinds = {f["code"] for f in json.loads(serial)["findings"]}
    assert "LOG_CORRUPT" in kinds  # the damage is found (the comparison is not of two clean scans)
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch) == serial


def test_parallel_deep_scan_of_many_segments_with_mixed_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generated partition of many small segments (more than threads), one torn, one with a bad CRC
    in its middle."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=3000, value_size=200, segment_bytes=64 * 1024)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    part = log_dir / "t-0"
    logs = sorted(part.glob("*.log"))
    assert len(logs) >= 8
    damage.cut_final_batch(logs[2], 11)
    data = bytearray(logs[5].read_bytes())
    data[len(data) // 2] ^= 0xFF
    logs[5].write_bytes(bytes(data))
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch)
    assert len(json.loads(serial)["findings"]) >= 2
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch) == serial


def test_default_scan_walks_segments_without_usable_time_indexes_on_every_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default scan walks each segment whose time index the broker cannot use (missing, empty,
    zeroed: the retention data-loss case) for its true largest timestamp; those walks run at once on
    the walk threads and report what the serial walks report."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=3000, value_size=200, segment_bytes=64 * 1024)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    logs = sorted((log_dir / "t-0").glob("*.log"))
    assert len(logs) >= 8
    for log in logs[1:4]:
        log.with_suffix(".timeindex").unlink()
    logs[5].with_suffix(".timeindex").write_bytes(b"")
    logs[6].with_suffix(".timeindex").write_bytes(bytes(24))
    damage.cut_final_batch(logs[6], 5)
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch, depth=Depth.DEFAULT)
    codes = {f["code"] for f in json.loads(serial)["findings"]}
    assert {"INDEX_MISSING", "RETENTION_RISK"} <= codes
    threads: list[str] = []
    walk_file = file_records.walk_file

    def recorded(*args):
        threads.append(threading.current_thread().name)
        return walk_file(*args)

    monkeypatch.setattr(partition, "walk_file", recorded)
    monkeypatch.setattr(file_records, "walk_file", recorded)
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch, depth=Depth.DEFAULT) == serial
    assert sum(t.startswith("logdoctor-walk") for t in threads) >= 5


def test_deep_scan_walks_every_segment_once_and_all_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: `scan --deep` reads each .log once, every segment of the partition (the active one, and
    the recovered ones of an unclean shutdown, included) handed to the walk threads at once: no segment
    is walked alone on the scan's thread first while the other cores wait. Without a clean-shutdown
    marker (check_recovery walks with CRCs too) and with a torn active segment; the findings are the
    serial walk's."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=3000, value_size=200, segment_bytes=64 * 1024)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    logs = sorted((log_dir / "t-0").glob("*.log"))
    assert len(logs) >= 8
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    damage.cut_final_batch(logs[-1], 7)
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch)
    assert "LOG_CORRUPT" in {f["code"] for f in json.loads(serial)["findings"]}
    calls: list[list[str]] = []
    walk_files = file_records.walk_files

    def recorded(paths, *args):
        calls.append(list(paths))
        return walk_files(paths, *args)

    monkeypatch.setattr(partition, "walk_files", recorded)
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch) == serial
    walked = [p for c in calls for p in c]
    assert sorted(walked) == sorted(map(str, logs))  # each once
    assert calls[0] == [str(p) for p in logs]  # all at once, in segment order


def _serial_walk(data: bytes, monkeypatch: pytest.MonkeyPatch) -> segment_walk.WalkResult:
    with monkeypatch.context() as m:
        m.setattr(fast_lane, "FAST_WALK", None)
        return segment_walk.walk(data, verify_crc=True, with_positions=True)


def _real_logs() -> list[Path]:
    realworld.require()
    logs = sorted(realworld.files(".log"), key=lambda p: -p.stat().st_size)
    return [p for p in logs if 0 < p.stat().st_size <= 1 << 20 and p.parent.name != "_broker_logs"][:8]


@pytest.mark.parametrize("split_crc", [False, True], ids=["serial-crc", "crc-on-threads"])
def test_fast_lane_walk_of_mutated_real_segments_equals_the_python_walk(
    monkeypatch: pytest.MonkeyPatch, split_crc: bool
) -> None:
    """The C fast lane takes over only what the Python loop would take without a finding: on real
    segments with bytes flipped in batch headers (lengths, offsets, magic, CRC, record counts,
    timestamps) and tails cut, every figure of the walk (positions, offsets, damage, counts) is the
    Python loop's. ``crc-on-threads``: every run's CRCs checked in slices on three walk threads (the
    path of a segment of 32 MiB or more walked from the main thread), a mismatch sending the walk back
    to the serial CRC walk."""
    checked = [0]
    if split_crc:
        crc_check = fast_lane.FAST_CRC

        def counted(*args):
            checked[0] += 1
            return crc_check(*args)

        monkeypatch.setattr(fast_lane, "SPLIT_CRC_BYTES", 0)
        monkeypatch.setattr(fast_lane, "walk_threads", lambda: 3)
        monkeypatch.setattr(fast_lane, "FAST_CRC", counted)
    rng = random.Random(26)
    header_fields = [0, 3, 7, 8, 11, 16, 17, 20, 23, 26, 35, 42, 57, 60, 61, 70]
    compared = 0
    for log in _real_logs():
        data = log.read_bytes()
        starts = [pos for pos, _size, _base in damage.batch_positions(log)] or [0]
        cases = [data, data[: len(data) - 5], data + bytes(100)]
        for _ in range(15):
            m = bytearray(data)
            at = rng.choice(starts) + rng.choice(header_fields)
            if at < len(m):
                m[at] ^= 1 << rng.randrange(8)
            cases.append(bytes(m))
        for case in cases:
            fast = segment_walk.walk(case, verify_crc=True, with_positions=True)
            assert fast == _serial_walk(case, monkeypatch), log
            # without positions and without CRCs too
            assert segment_walk.walk(case, verify_crc=False) == _walk_without(case, monkeypatch)
            compared += 1
    assert compared > 60
    assert (checked[0] > 100) is split_crc  # the slices were really checked on the threads


def _walk_without(data: bytes, monkeypatch: pytest.MonkeyPatch) -> segment_walk.WalkResult:
    with monkeypatch.context() as m:
        m.setattr(fast_lane, "FAST_WALK", None)
        return segment_walk.walk(data, verify_crc=False)


def test_gil_free_walk_from_many_threads_gives_the_serial_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """_speedups.scan_v2 runs without the GIL: four threads walking the same real segments (shared
    buffers) at once, over and over, each get exactly the serial Python walk's results."""
    logs = _real_logs()
    expected = {str(p): _serial_walk(p.read_bytes(), monkeypatch) for p in logs}
    buffers = {str(p): p.read_bytes() for p in logs}

    def worker(seed: int) -> list[str]:
        failures = []
        for order in on_threads.shuffled_rounds(list(buffers), seed):
            for path in order:
                got = segment_walk.walk(buffers[path], verify_crc=True, with_positions=True)
                if got != expected[path]:
                    failures.append(path)
            for path, got in zip(order, file_records.walk_files(order, True, True), strict=True):
                if got != expected[path]:
                    failures.append(f"walk_files {path}")
        return failures

    assert not on_threads.failures_on_threads(worker)


def test_scan_pool_workers_walk_one_segment_at_a_time() -> None:
    """Memory stays bounded by the cores: the scan's pool workers (which already spread the partitions)
    walk their segments one at a time; the scan's own process walks one per core."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from logdoctor.checks import scanner

    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(
        1, mp_context=ctx, initializer=scanner._worker_init, initargs=(os.getpid(),)
    ) as ex:
        assert ex.submit(fast_lane.walk_threads).result() == 1
    assert fast_lane.walk_threads() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("depth", [Depth.DEEP, Depth.DEFAULT])
def test_walks_started_ahead_skip_a_log_the_broker_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: Depth
) -> None:
    """The walks started before the checks (every .log at --deep, the active segment's and the ones
    retention needs at the default depth) come after the listing's permission check: a .log the broker's
    user cannot read is reported PERMISSION_DENIED and never walked (root could read it)."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=3000, value_size=200, segment_bytes=64 * 1024)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    logs = sorted((log_dir / "t-0").glob("*.log"))
    for log in logs[1:4]:
        log.with_suffix(".timeindex").unlink()  # walked for their timestamps at the default depth
    hidden = logs[2]
    for root, _dirs, names in os.walk(log_dir):
        os.chown(root, 65534, 65534)
        for name in names:
            if os.path.join(root, name) != str(hidden):
                os.chown(os.path.join(root, name), 65534, 65534)
    os.chmod(hidden, 0o600)  # root's: the broker (the log dir's owner, nobody) cannot read it
    walked: list[str] = []
    walk_file = file_records.walk_file

    def recorded(path, *args):
        walked.append(path)
        return walk_file(path, *args)

    monkeypatch.setattr(partition, "walk_file", recorded)
    monkeypatch.setattr(file_records, "walk_file", recorded)
    monkeypatch.setattr(fast_lane, "walk_threads", lambda: 4)
    rep = scan([log_dir], ScanOptions(depth=depth, now_ms=NOW_MS), jobs=1)
    assert str(hidden) not in walked
    assert len(walked) >= 3
    assert "PERMISSION_DENIED" in {f.code for f in rep.findings if f.path == str(hidden)}


def test_default_scan_walks_the_active_segment_beside_the_retention_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: at the default depth, after a clean shutdown, the active segment's CRC walk and the walks
    retention needs for segments without a .timeindex run at once on the walk threads (each .log once),
    instead of the active one alone first; the findings are the serial walk's."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=3000, value_size=200, segment_bytes=64 * 1024)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    logs = sorted((log_dir / "t-0").glob("*.log"))
    for log in logs[1:4]:
        log.with_suffix(".timeindex").unlink()
    damage.cut_final_batch(logs[-1], 5)
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch, depth=Depth.DEFAULT)
    codes = {f["code"] for f in json.loads(serial)["findings"]}
    assert {"INDEX_MISSING", "LOG_CORRUPT"} <= codes, codes
    walked: list[tuple[str, str]] = []
    walk_file = file_records.walk_file

    def recorded(path, *args):
        walked.append((path, threading.current_thread().name))
        return walk_file(path, *args)

    monkeypatch.setattr(partition, "walk_file", recorded)
    monkeypatch.setattr(file_records, "walk_file", recorded)
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch, depth=Depth.DEFAULT) == serial
    assert sorted(p for p, _ in walked) == sorted(map(str, [*logs[1:4], logs[-1]]))  # each once
    assert all(t.startswith("logdoctor-walk") for _, t in walked)

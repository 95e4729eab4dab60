"""The index rebuild of `repair` on every core (issue 26): segments rebuilt at once on the walk threads
(``rules.indexes.rebuilt_each``, ``_speedups.recover_v2`` without the GIL) plan exactly what the serial
rebuild plans: the same actions, steps and bytes, in the same order, on real log dirs whose indexes are
removed and on a generated partition of many segments with mixed damage (one of them needing producer
state, which stays serial). Each parallel run is checked to have really rebuilt on the walk threads."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import damage
import pytest

import on_threads
import realworld
from logdoctor.checks.state import fast_lane
from logdoctor.formats import native
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.repair.planner import plan_repair
from logdoctor.repair.rules import indexes
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.skipif(native.recover_v2 is None, reason="needs the C extension and crc32c")

NOW_MS = 1_800_000_000_000


def _plan(
    log_dir: Path, tmp_path: Path, *, parallel: bool, monkeypatch: pytest.MonkeyPatch, deep: bool = False
):
    """The plan's JSON and every step's bytes; with ``parallel``, also the threads that rebuilt."""
    threads: list[str] = []

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return rebuild_indexes(*args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(indexes, "rebuild_indexes", recorded)
        if parallel:
            m.setattr(fast_lane, "walk_threads", lambda: 4)  # more threads than cores, fewer than segments
        else:
            m.setattr(fast_lane, "FAST_WALK", None)
            m.setattr(fast_lane, "walk_threads", lambda: 1)
        plan, _ = plan_repair([str(log_dir)], backup_dir=str(tmp_path / "backup"), now_ms=NOW_MS, deep=deep)
    steps = [(s.op, s.path, s.data) for a in plan.actions for s in a.steps]
    out = plan.to_json()
    out.pop("created_ms")  # the clock when planned
    return json.dumps(out, sort_keys=True), steps, threads


def _assert_same_plan(
    log_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep: bool = False
) -> int:
    serial, serial_steps, serial_threads = _plan(
        log_dir, tmp_path, parallel=False, monkeypatch=monkeypatch, deep=deep
    )
    assert not any(t.startswith("logdoctor-walk") for t in serial_threads)
    par, par_steps, par_threads = _plan(log_dir, tmp_path, parallel=True, monkeypatch=monkeypatch, deep=deep)
    assert par == serial
    assert par_steps == serial_steps
    return sum(t.startswith("logdoctor-walk") for t in par_threads)


@pytest.mark.parametrize("names", realworld.log_dir_tiers())
def test_real_log_dirs_without_indexes_plan_the_same_rebuilds_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: list[str]
) -> None:
    root = realworld.require()
    rebuilt_on_threads = 0
    for name in names:
        log_dir = damage.copy_log_dir(root / name, tmp_path / name / "logs")
        for p in list(log_dir.rglob("*.index")) + list(log_dir.rglob("*.timeindex")):
            p.unlink()
        rebuilt_on_threads += _assert_same_plan(log_dir, tmp_path / name, monkeypatch)
    assert rebuilt_on_threads >= 3  # real partitions of several segments went to the threads


def _mixed_damage(tmp_path: Path) -> Path:
    topics = [
        TopicSpec(
            "t",
            partitions=1,
            records_per_partition=3000,
            value_size=200,
            segment_bytes=64 * 1024,
            idempotent=True,
            leader_epochs=3,
        )
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    part = log_dir / "t-0"
    logs = sorted(part.glob("*.log"))
    assert len(logs) >= 8
    for log in logs[:6]:
        log.with_suffix(".index").unlink()  # INDEX_MISSING
    logs[6].with_suffix(".timeindex").write_bytes(bytes(12 * 4))  # zero time index: RETENTION_RISK
    logs[3].with_suffix(".txnindex").write_bytes(
        b"\x00" * 17
    )  # a torn .txnindex: rebuilt with producer state
    damage.cut_final_batch(logs[2], 11)  # a torn batch: the rebuilt indexes stop there
    data = bytearray(logs[4].read_bytes())
    data[len(data) // 2] ^= 0xFF  # a CRC mismatch in the middle of a segment
    logs[4].write_bytes(bytes(data))
    return log_dir


@pytest.mark.parametrize("deep", [False, True])
def test_many_segments_with_mixed_damage_plan_the_same_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep: bool
) -> None:
    log_dir = _mixed_damage(tmp_path)
    # at least two rebuilds on the walk threads at either depth: the default scan walks a segment without
    # its .index whole with CRCs (issue 59 item 2), as --deep walks every segment, and the rebuild of such a
    # segment goes where --deep's goes
    assert _assert_same_plan(log_dir, tmp_path, monkeypatch, deep=deep) >= 2
    plan, _ = plan_repair([str(log_dir)], backup_dir=str(tmp_path / "backup"), now_ms=NOW_MS, deep=deep)
    kinds = {a.kind for a in plan.actions}
    assert "rebuild-indexes" in kinds  # the damage is planned for (not a comparison of two empty plans)
    paths = {s.path for a in plan.actions for s in a.steps}
    assert any(p.endswith(".txnindex") for p in paths) and any(p.endswith(".index") for p in paths)


def test_in_walk_threads_keeps_order_and_a_bounded_backlog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Results come in the items' order, and no more than two per thread wait to be taken beyond those
    running: memory does not grow with the number of segments."""
    monkeypatch.setattr(fast_lane, "walk_threads", lambda: 3)
    lock = threading.Lock()
    done = taken = most = 0
    rng = random.Random(7)
    delays = [rng.random() / 2000 for _ in range(300)]

    def work(i: int) -> int:
        nonlocal done, most
        time.sleep(delays[i])
        with lock:
            done += 1
            most = max(most, done - taken)
        return i

    out = []
    for x in fast_lane.in_walk_threads(work, range(300)):
        with lock:
            taken += 1
        out.append(x)
        time.sleep(0.0005)  # a slow consumer: the threads would run ahead if nothing held them
    assert out == list(range(300))
    assert most <= 2 * 3 + 3


def test_gil_free_rebuild_from_many_threads_gives_the_serial_results() -> None:
    """Four threads rebuilding the same real segments (shared buffers) at once, over and over, each get
    the serial rebuild's results (entries, bytes, errors)."""
    realworld.require()
    logs = [p for d in realworld.log_dirs() for p in sorted(d.rglob("*.log")) if p.stat().st_size > 0][:40]
    assert len(logs) >= 10
    buffers = {str(p): p.read_bytes() for p in logs}
    bases = {str(p): int(p.name[:20]) for p in logs}
    expected = {p: rebuild_indexes(b, bases[p], index_interval_bytes=100) for p, b in buffers.items()}
    fields = ("offset_index", "time_index", "txn_index", "valid_bytes", "leader_epochs", "error")

    def worker(seed: int) -> list[str]:
        failures = []
        for order in on_threads.shuffled_rounds(list(buffers), seed):
            for p in order:
                got = rebuild_indexes(buffers[p], bases[p], index_interval_bytes=100)
                if [str(getattr(got, f)) for f in fields] != [str(getattr(expected[p], f)) for f in fields]:
                    failures.append(p)
        return failures

    assert not on_threads.failures_on_threads(worker)


def _flip_crc_of_batch(data: bytes, k: int) -> tuple[bytes, int]:
    """``data`` with the k-th v2 batch's stored CRC changed, and that batch's position."""
    pos = 0
    for _ in range(k):
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    m = bytearray(data)
    m[pos + 17] ^= 0x40
    return bytes(m), pos


def test_a_segment_rebuilt_alone_checks_its_crcs_on_threads_and_rebuilds_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """crc_checked_prefix (CRCs checked in slices on the walk threads) then rebuild_indexes told not to
    check them again: the same result as the serial rebuild on every real segment, as it is and with a
    batch's CRC broken (the prefix ends at that batch, and the rebuild stops there as recovery would)."""
    monkeypatch.setattr(fast_lane, "SPLIT_CRC_BYTES", 0)
    monkeypatch.setattr(fast_lane, "walk_threads", lambda: 3)
    realworld.require()
    logs = [p for d in realworld.log_dirs() for p in sorted(d.rglob("*.log")) if p.stat().st_size > 0]
    compared = damaged = 0
    for log in logs:
        data = log.read_bytes()
        base = int(log.name[:20])
        cases = [(data, None)]
        if data[16] == 2 and len(data) > 2000:
            cases.append(_flip_crc_of_batch(data, 3))
        for case, bad in cases:
            prefix = fast_lane.crc_checked_prefix(case)
            if bad is not None:
                assert prefix == bad
                damaged += 1
            split = rebuild_indexes(case, base, index_interval_bytes=100, crc_checked_until=prefix)
            serial = rebuild_indexes(case, base, index_interval_bytes=100)
            for name in (
                "offset_index",
                "time_index",
                "txn_index",
                "valid_bytes",
                "batch_count",
                "leader_epochs",
            ):
                assert getattr(split, name) == getattr(serial, name), (log, name)
            assert str(split.error) == str(serial.error)
            compared += 1
    assert compared >= 20 and damaged >= 5


def test_crc_checked_until_really_skips_the_check() -> None:
    """The parameter is not decoration: told that a batch with a broken CRC was checked, the C lane takes
    it (so only crc_checked_prefix may say so); without it, the rebuild stops there."""
    realworld.require()
    log = next(
        p
        for d in realworld.log_dirs()
        for p in sorted(d.rglob("*.log"))
        if p.stat().st_size > 4000 and p.read_bytes()[16] == 2
    )
    data, bad = _flip_crc_of_batch(log.read_bytes(), 2)
    base = int(log.name[:20])
    assert rebuild_indexes(data, base).valid_bytes == bad
    assert rebuild_indexes(data, base, crc_checked_until=len(data)).valid_bytes > bad


def test_a_partition_of_one_segment_plans_the_same_with_its_crcs_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition's only segment, its indexes lost: rebuilt with its CRCs checked on the threads first,
    the same plan and bytes as the serial rebuild."""
    topics = [TopicSpec("t", partitions=1, records_per_partition=3000, value_size=200, segment_bytes=1 << 30)]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    (log, *more) = sorted((log_dir / "t-0").glob("*.log"))
    assert not more
    for p in log.parent.glob("*index"):
        p.unlink()
    checked: list[int] = []
    prefix = fast_lane.crc_checked_prefix

    def recorded(buf):
        checked.append(prefix(buf))
        return checked[-1]

    monkeypatch.setattr(indexes, "crc_checked_prefix", recorded)
    monkeypatch.setattr(fast_lane, "SPLIT_CRC_BYTES", 0)
    serial, serial_steps, _ = _plan(log_dir, tmp_path, parallel=False, monkeypatch=monkeypatch)
    assert checked == [0]  # serial: nothing checked ahead
    par, par_steps, _ = _plan(log_dir, tmp_path, parallel=True, monkeypatch=monkeypatch)
    assert par == serial and par_steps == serial_steps
    assert checked[-1] == log.stat().st_size  # the parallel run checked every CRC on the threads first
    assert any(p.endswith(".index") for _op, p, _data in par_steps)

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

import realworld
from logdoctor.checks import state
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
            m.setattr(state, "walk_threads", lambda: 4)  # more threads than cores, fewer than segments
        else:
            m.setattr(state, "FAST_WALK", None)
            m.setattr(state, "walk_threads", lambda: 1)
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


def test_real_log_dirs_without_indexes_plan_the_same_rebuilds_on_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = realworld.require()
    rebuilt_on_threads = 0
    for name in realworld.log_dir_names():
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
    assert _assert_same_plan(log_dir, tmp_path, monkeypatch, deep=deep) >= (2 if deep else 4)
    plan, _ = plan_repair([str(log_dir)], backup_dir=str(tmp_path / "backup"), now_ms=NOW_MS, deep=deep)
    kinds = {a.kind for a in plan.actions}
    assert "rebuild-indexes" in kinds  # the damage is planned for (not a comparison of two empty plans)
    paths = {s.path for a in plan.actions for s in a.steps}
    assert any(p.endswith(".txnindex") for p in paths) and any(p.endswith(".index") for p in paths)


def test_in_walk_threads_keeps_order_and_a_bounded_backlog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Results come in the items' order, and no more than two per thread wait to be taken beyond those
    running: memory does not grow with the number of segments."""
    monkeypatch.setattr(state, "walk_threads", lambda: 3)
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
    for x in state.in_walk_threads(work, range(300)):
        with lock:
            taken += 1
        out.append(x)
        time.sleep(0.0005)  # a slow consumer: the threads would run ahead if nothing held them
    assert out == list(range(300))
    assert most <= 2 * 3 + 3


def test_gil_free_rebuild_from_many_threads_gives_the_serial_results() -> None:
    """Four threads rebuilding the same real segments (shared buffers) at once, over and over, each get
    the serial rebuild's results (entries, bytes, errors)."""
    logs = [p for d in realworld.log_dirs() for p in sorted(d.rglob("*.log")) if p.stat().st_size > 0][:40]
    assert len(logs) >= 10
    buffers = {str(p): p.read_bytes() for p in logs}
    bases = {str(p): int(p.name[:20]) for p in logs}
    expected = {p: rebuild_indexes(b, bases[p], index_interval_bytes=100) for p, b in buffers.items()}
    failures: list[str] = []

    def worker(seed: int) -> None:
        order = list(buffers)
        random.Random(seed).shuffle(order)
        for _ in range(3):
            for p in order:
                got = rebuild_indexes(buffers[p], bases[p], index_interval_bytes=100)
                want = expected[p]
                if (got.offset_index, got.time_index, got.txn_index, got.valid_bytes, got.leader_epochs) != (
                    want.offset_index,
                    want.time_index,
                    want.txn_index,
                    want.valid_bytes,
                    want.leader_epochs,
                ) or str(got.error) != str(want.error):
                    failures.append(p)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures

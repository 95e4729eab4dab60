"""The segment walk's C fast lane and the walk threads that run it on every core.

The C lane (``_speedups.scan_v2``) walks runs of whole v2 batches with good CRCs and growing offsets
without the GIL, so that the walks of several segments, and the CRC checks of one big run, run at once on
threads (:func:`in_walk_threads`). Invariants: what runs on the walk threads gives what the serial walk
gives, in the order asked (results are yielded in order; a big run's CRCs checked in slices stand only
when every slice matches, else the serial CRC walk runs again and finds the mismatch as before); at most
two results per thread wait to be taken, so memory does not grow with the number of items; a walk thread
never waits on the walk threads (the CRC split runs from the main thread only); a forked process makes its
own pool. Without the C extension (:data:`FAST_WALK` None) every walk runs in its caller's thread, the
Python loop alone (what tests compare the lane with).
"""

from __future__ import annotations

import os
import threading
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from logdoctor.checks.walk_ahead import cores
from logdoctor.formats import native

FAST_WALK: Any = native.scan_v2
"""The C fast lane of :func:`walk` (``_speedups.scan_v2``: runs of whole v2 batches with good CRCs and
growing offsets, walked without the GIL); None: the Python loop alone (what tests compare it with)."""
FAST_CRC: Any = native.crc_check_v2
"""The CRC check of framed v2 batches (``_speedups.crc_check_v2``, without the GIL): a big run's CRCs
on every walk thread (:func:`_fast_lane`); None: scan_v2 checks them as it walks."""
#: a run of at least this many bytes has its CRCs checked on every walk thread (below, one is as fast)
SPLIT_CRC_BYTES = 32 << 20
_FAST_CHUNK = 1 << 16  # batches per call: the positions buffer is 16 bytes a batch (1 MiB)

T = TypeVar("T")
R = TypeVar("R")
_pool: tuple[int, ThreadPoolExecutor] | None = None
_thread_limit: int | None = None


def limit_walk_threads(n: int | None) -> None:
    """At most ``n`` walk threads in this process (None: one per core). The scan's pool workers take one:
    the pool already spreads partitions over the cores, and threads there would map cores x cores
    segments at once."""
    global _thread_limit
    _thread_limit = n


def walk_threads() -> int:
    """Threads :func:`walk_files` uses: one per core this process may run on, at most the limit of
    :func:`limit_walk_threads`."""
    return max(1, min(cores(), _thread_limit)) if _thread_limit is not None else cores()


def in_walk_threads(fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
    """``fn(x)`` of each item, yielded in order, computed on :func:`walk_threads` threads: for work that
    spends its time in C without the GIL (the deep walk, the index rebuild), one mapped segment per
    thread at a time. At most two results per thread wait to be taken, so memory does not grow with
    the number of items. One item, or one core: in this thread."""
    threads = min(walk_threads(), len(items))
    if threads <= 1 or FAST_WALK is None:
        yield from map(fn, items)
        return
    pool = _walk_pool()
    pending: deque[Future[R]] = deque()
    try:
        for x in items:
            pending.append(pool.submit(fn, x))
            if len(pending) >= 2 * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:  # the caller stopped early (or one raised): drop what was not started
            f.cancel()


def _walk_pool() -> ThreadPoolExecutor:
    """The walk threads of this process (:func:`walk_threads` of them), made on first use."""
    global _pool
    if _pool is None or _pool[0] != os.getpid():  # a forked pool worker makes its own
        _pool = (os.getpid(), ThreadPoolExecutor(walk_threads(), thread_name_prefix="logdoctor-walk"))
    return _pool[1]


def _fast_lane(
    mv: memoryview,
    pos: int,
    n: int,
    verify_crc: bool,
    has_prev: bool,
    prev_last: int,
    max_ts: int,
    max_ts_off: int,
    out: bytearray | None,
    max_batches: int,
) -> tuple[int, int, int, int, int, int, int, int]:
    """``FAST_WALK`` (scan_v2), with the CRCs of a big run checked on every walk thread: the batches are
    framed first without CRCs (the same walk, the same stops but the CRC), then slices of them are
    checked at once (``FAST_CRC``, without the GIL). All good: that walk is the CRC walk's (it would
    have taken the same batches and stopped at the same place). Any mismatch: the serial CRC walk runs
    from ``pos`` again, and finds it as before. Only from the main thread (a walk thread never waits on
    the walk threads) and with more than one of them."""
    fast = FAST_WALK
    if not verify_crc or not _crc_on_threads(n - pos):
        return fast(mv, pos, n, verify_crc, has_prev, prev_last, max_ts, max_ts_off, out, max_batches)
    frame = out if out is not None else bytearray(16 * max_batches)
    got = fast(mv, pos, n, False, has_prev, prev_last, max_ts, max_ts_off, frame, max_batches)
    if got[1] and _first_crc_mismatch(mv, frame, got[1]) is not None:
        return fast(mv, pos, n, True, has_prev, prev_last, max_ts, max_ts_off, out, max_batches)
    return got


def _crc_on_threads(nbytes: int) -> bool:
    """Whether ``nbytes`` of batches have their CRCs checked in slices on the walk threads: a big run
    (SPLIT_CRC_BYTES), more than one thread, and a caller that is not a walk thread itself (it would
    wait on its own pool)."""
    return (
        FAST_CRC is not None
        and nbytes >= SPLIT_CRC_BYTES
        and walk_threads() >= 2
        and threading.current_thread() is threading.main_thread()
    )


def _first_crc_mismatch(mv: memoryview, frame: bytearray, count: int) -> int | None:
    """The index of the first of the ``count`` batches framed in ``frame`` (scan_v2's positions) whose
    CRC-32C does not match, checked in slices on every walk thread; None when all match."""
    slices = walk_threads()
    cuts = [count * k // slices for k in range(slices + 1)]
    checked = list(in_walk_threads(lambda k: FAST_CRC(mv, frame, cuts[k], cuts[k + 1]), range(slices)))
    return next((got for got, end in zip(checked, cuts[1:], strict=True) if got < end), None)


def crc_checked_prefix(buf: memoryview | bytes) -> int:
    """Where the run of whole v2 batches from position 0 whose CRC-32Cs match ends, found on every walk
    thread: the batches are framed without CRCs (scan_v2, which stops where the walk would: a torn or
    corrupt entry, v0/v1, offsets going backwards), then slices of them checked at once (FAST_CRC,
    without the GIL); the run ends at the first mismatch. 0 when the buffer is small, one thread is
    all there is, the caller is a walk thread itself, or there is no C lane. What
    ``formats.recovery.rebuild_indexes(crc_checked_until=...)`` takes, so that one big segment's
    rebuild checks its CRCs on every core."""
    mv = memoryview(buf)
    n = len(mv)
    if FAST_WALK is None or not _crc_on_threads(n):
        return 0
    frame = bytearray(16 * _FAST_CHUNK)
    pos, has_prev, prev_last = 0, False, 0
    while pos < n:
        pos2, count, _, _, _, last, _, _ = FAST_WALK(
            mv, pos, n, False, has_prev, prev_last, -1, -1, frame, _FAST_CHUNK
        )
        if not count:
            break
        bad = _first_crc_mismatch(mv, frame, count)
        if bad is not None:  # the run ends where that batch starts
            return int(array("q", bytes(frame[8 * bad : 8 * bad + 8]))[0])
        pos, has_prev, prev_last = pos2, True, last
    return pos

"""Reads paced to a rate (``--max-read-rate BYTES/s``, issue 58): a scan of a running broker's disks that
never takes more of their bandwidth than it was given.

One pacer (:func:`limit` sets it; each Spark task sets its own from the read options): every read of a
file's bytes calls :func:`pace` with the bytes it read, and :func:`pace` sleeps until the bytes read since
the pacer started, at the rate given, are due. The average rate over any stretch longer than :data:`BURST`
bytes' worth of time stays at or under the limit; a pause of the reader (decoding, writing the output) is
not saved up beyond :data:`BURST` bytes for a burst after it. Threads of one process and the processes it
forks share the one pacer (the scan's walk threads and its workers: their reads add up on the same disks).
Spark's tasks run in processes of their own, each paced to its share (``maxReadRate``).
"""

from __future__ import annotations

import mmap
import re
import struct
import time

__all__ = ["BURST", "limit", "limited", "pace", "parse_size"]

#: the bytes a reader may read at once without waiting after a pause (the read chunk of a walk: 512 KiB)
BURST = 1 << 20
_DUE = struct.Struct("d")


class _Pacer:
    """The time by which the bytes read so far are paid for at the rate, in memory shared with the processes
    forked after it was made (a scan's workers: their reads add up on the same disks), under a lock they
    share too (CLOCK_MONOTONIC is the same clock in every process)."""

    def __init__(self, rate: int) -> None:
        import multiprocessing

        self.rate = rate
        self.lock = multiprocessing.get_context("fork").Lock()
        self.shared = mmap.mmap(-1, 8)  # anonymous and MAP_SHARED: the same page in forked children
        _DUE.pack_into(self.shared, 0, time.monotonic())

    def pace(self, nbytes: int) -> None:
        with self.lock:
            now = time.monotonic()
            due = max(_DUE.unpack_from(self.shared, 0)[0], now - BURST / self.rate) + nbytes / self.rate
            _DUE.pack_into(self.shared, 0, due)
        if due > now:
            time.sleep(due - now)


_pacer: _Pacer | None = None


def limit(rate: int | None) -> None:
    """Pace this process's reads to ``rate`` bytes a second (None: not paced)."""
    global _pacer
    if rate is not None and rate <= 0:
        raise ValueError(f"a read rate must be positive, got {rate}")
    _pacer = None if rate is None else _Pacer(rate)


def limited() -> int | None:
    """The rate this process's reads are paced to, or None."""
    return None if _pacer is None else _pacer.rate


def pace(nbytes: int) -> None:
    """``nbytes`` just read: wait as long as the rate asks (nothing when not paced)."""
    pacer = _pacer
    if pacer is not None and nbytes > 0:
        pacer.pace(nbytes)


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt])(?:i?b)?|b)?\s*(?:/s)?\s*", re.IGNORECASE)


def parse_size(text: str) -> int:
    """A byte count from ``50MiB``, ``50m``, ``128MB``, ``1048576`` (and a rate's ``/s``: ``50MiB/s``). Units
    as Spark's byte strings read them: k, m, g, t (with or without ``b`` or ``ib``) are powers of 1024. Raises
    ValueError naming what it expected."""
    m = _SIZE.fullmatch(str(text))
    value = int(float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())) if m else 0
    if value <= 0:
        raise ValueError(f"expected a positive byte count such as 50MiB, 128m or 1048576, got {text!r}")
    return value

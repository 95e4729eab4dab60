"""Reads paced to a rate (``--max-read-rate BYTES/s``, issue 58): a scan of a running broker's disks that
never takes more of their bandwidth than it was given.

One pacer per process (:func:`limit` sets it; forked scan workers and each Spark task set their own from the
read options): every read of a file's bytes calls :func:`pace` with the bytes it read, and :func:`pace`
sleeps until the bytes read since the pacer started, at the rate given, are due. The average rate over
any stretch longer than :data:`BURST` bytes' worth of time stays at or under the limit; a pause of the
reader (decoding, writing the output) is not saved up beyond :data:`BURST` bytes for a burst after it.
Threads of one process share the one pacer (the scan's walk threads: their reads add up on one disk).
"""

from __future__ import annotations

import re
import threading
import time

__all__ = ["BURST", "limit", "limited", "pace", "parse_size"]

#: the bytes a reader may read at once without waiting after a pause (the read chunk of a walk: 512 KiB)
BURST = 1 << 20


class _Pacer:
    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.lock = threading.Lock()
        self.due = time.monotonic()  # when the bytes read so far are paid for at the rate

    def pace(self, nbytes: int) -> None:
        with self.lock:
            now = time.monotonic()
            self.due = max(self.due, now - BURST / self.rate) + nbytes / self.rate
            wait = self.due - now
        if wait > 0:
            time.sleep(wait)


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

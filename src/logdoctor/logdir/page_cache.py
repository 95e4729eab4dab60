"""The page cache left as a read found it (issue 58): a read of a running broker's segments drops the pages
it brought into the cache itself and keeps those that were cached before it.

A :class:`CacheGuard` is taken around the reads of one open file. Before a range is read,
:meth:`~CacheGuard.note` asks the kernel which of its pages are resident (``cachestat(2)`` counts them a
window at a time; for a window cached in part, ``mincore(2)`` over a mapping of that range made for the
question only, never populated); after it was read, :meth:`~CacheGuard.drop` advises the kernel that the
pages of the range that were *not* resident are not needed (``posix_fadvise(POSIX_FADV_DONTNEED)``), and
:meth:`~CacheGuard.close` does so for every range noted (the kernel's readahead past the last read too).
Pages that were cached before stay: the broker's hot data (a consumer's tail, the active segment) is not
pushed out by a scan. A reader that goes on through a big file notes ahead of itself and drops behind itself
a window at a time (:data:`WINDOW`), so the cache it fills stays bounded by a few windows.

The guard is in force while :func:`leave_as_found` is on (the read-only commands turn it on; ``--keep-cache``
leaves it off): otherwise :func:`guard` gives None and nothing is asked or dropped. Only files of
:data:`MIN_GUARDED` bytes or more are guarded (an index or a checkpoint file costs more in system calls
than its pages weigh in the cache). A page being read by the broker at the moment it is dropped is read
again from disk by the broker: the price Kafka's DumpLogSegments users pay too (KIP-824's motive).

``posix_fadvise`` cannot drop a page that a mapping still maps: a mapped reader drops after unmapping
(:func:`watch_mapping`). Linux only; elsewhere (no ``mincore`` in the C library) the guard is never taken.
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Callable
from functools import cache
from typing import Any

__all__ = [
    "MIN_GUARDED",
    "WINDOW",
    "CacheGuard",
    "cached_pages",
    "guard",
    "leave_as_found",
    "readahead_bytes",
    "resident_pages",
    "watch_mapping",
]

#: the bytes a reader notes ahead of itself and drops behind itself at a time
WINDOW = 32 << 20
#: how far back of where the last drop ended the next one starts (a large folio astride that end)
FOLIO_LAG = 4 << 20
#: files smaller than this are not guarded (their pages weigh less than the system calls cost)
MIN_GUARDED = 1 << 20
PAGE = mmap.PAGESIZE

_LOW_BIT = bytes(i & 1 for i in range(256))  # mincore's byte per page: bit 0 is "resident", the rest reserved
_on = False  # process-wide: set by the command (forked scan workers inherit it)


def leave_as_found(on: bool) -> None:
    """Turn the guard on (a read-only command) or off (``--keep-cache``, or a command that reads its
    files again soon: ``repair``) for this process."""
    global _on
    _on = on


@cache
def _libc() -> Any:
    """libc with mmap, munmap and mincore typed (ctypes imported on first use: not at the command's start)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


_MAP_FAILED = (1 << 64) - 1  # (void *) -1 as ctypes gives a c_void_p result


def resident_pages(fd: int, start: int, length: int) -> bytes | None:
    """One byte per page of ``[start, start + length)`` of ``fd`` (``start`` rounded down to a page): 1 where
    the page is in the page cache, 0 where not. None when the kernel cannot tell (no mincore, a failed map).
    """
    libc = _libc()
    if libc is None or length <= 0:
        return None
    first = start - start % PAGE
    span = start + length - first
    addr = libc.mmap(None, span, mmap.PROT_READ, mmap.MAP_SHARED, fd, first)
    if addr is None or addr == _MAP_FAILED:
        return None
    import ctypes

    try:
        vec = ctypes.create_string_buffer((span + PAGE - 1) // PAGE)
        if libc.mincore(addr, span, vec) != 0:
            return None
        return vec.raw.translate(_LOW_BIT)
    finally:
        libc.munmap(addr, span)


_CACHESTAT = 451  # cachestat(2) (Linux 6.5): the same number on every architecture
_cachestat_works = True


def cached_pages(fd: int, start: int, length: int) -> int | None:
    """How many pages of ``[start, start + length)`` of ``fd`` are in the page cache (``cachestat(2)``:
    counted by the kernel, ~100 times cheaper than :func:`resident_pages`' map and vector); None where the
    kernel has no cachestat (before Linux 6.5)."""
    global _cachestat_works
    libc = _libc()
    if libc is None or not _cachestat_works:
        return None
    import ctypes

    rng = (ctypes.c_uint64 * 2)(start, length)
    stat = (ctypes.c_uint64 * 5)()  # nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted
    if libc.syscall(_CACHESTAT, fd, rng, stat, 0) != 0:
        _cachestat_works = ctypes.get_errno() not in (38, 1)  # ENOSYS, EPERM (a seccomp filter)
        return None
    return int(stat[0])


class CacheGuard:
    """The pages of one open file that were not in the page cache before it was read, dropped after.

    :meth:`note` a range before reading it (a range noted once is not asked again), :meth:`drop` a range
    when done with it, :meth:`close` at the end (drops every range noted). Ranges are kept as runs of pages
    not resident: a file that was not cached at all is one run."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        st = os.fstat(fd)
        self.size = st.st_size
        # how far ahead of a reader to note: two windows, or twice the file system's readahead when that is
        # more (pages its readahead brought in before they were noted would be taken as cached before)
        self.ahead = max(2 * WINDOW, 2 * readahead_bytes(st.st_dev))
        self.noted_end = 0  # every page below this was noted (reads go forward; a range behind is not asked)
        self._runs: list[tuple[int, int]] = []  # [start, end) byte runs not resident when noted, sorted
        self._dropped_to = 0  # drop() done below this

    def note(self, start: int, length: int) -> None:
        """Ask which pages of ``[start, start + length)`` are resident now, before they are read."""
        start = max(start, self.noted_end)
        end = start + length
        if length <= 0 or end <= self.noted_end:
            return
        first = start - start % PAGE
        self.noted_end = end
        runs = self._runs
        # the common cases counted, not mapped: every page cached (nothing to note), or none (one run)
        pages = (min(end, self.size) - first + PAGE - 1) // PAGE
        if pages <= 0:
            return  # past the end of the file
        cached = cached_pages(self.fd, first, end - first)
        if cached is not None and cached >= pages:
            return
        if cached == 0:
            lo, hi = first, first + pages * PAGE
            if runs and runs[-1][1] == lo:
                runs[-1] = (runs[-1][0], hi)
            else:
                runs.append((lo, hi))
            return
        vec = resident_pages(self.fd, start, end - start)
        if vec is None:
            return
        at = 0
        n = len(vec)
        while at < n:
            hole = vec.find(0, at)
            if hole < 0:
                break
            stop = vec.find(1, hole)
            stop = n if stop < 0 else stop
            lo, hi = first + hole * PAGE, first + stop * PAGE
            if runs and runs[-1][1] == lo:
                runs[-1] = (runs[-1][0], hi)
            else:
                runs.append((lo, hi))
            at = stop

    def note_ahead(self, position: int) -> None:
        """A reader at ``position`` going forward: what lies within ``ahead`` bytes of it noted now, a
        :data:`WINDOW` at a time (before the kernel's readahead brings it in)."""
        while self.noted_end < position + self.ahead:
            self.note(self.noted_end, WINDOW)

    def drop(self, start: int, end: int) -> None:
        """Advise away the pages of ``[start, end)`` that were not resident when noted."""
        for lo, hi in self._runs:
            if hi <= start:
                continue
            if lo >= end:
                break
            lo, hi = max(lo, start), min(hi, end)
            if hi > lo:
                os.posix_fadvise(self.fd, lo, hi - lo, os.POSIX_FADV_DONTNEED)

    def drop_behind(self, position: int) -> None:
        """A reader done with everything below ``position``: what it brought in there dropped. Each drop
        starts :data:`FOLIO_LAG` bytes before where the last one ended: the kernel keeps a large folio (the
        page cache's unit, up to a few MiB) that a drop's range covers only in part, so the one astride
        the last drop's end is dropped by the next."""
        position -= position % PAGE
        if position > self._dropped_to:
            self.drop(max(0, self._dropped_to - FOLIO_LAG), position)
            self._dropped_to = position

    def close(self) -> None:
        """Everything noted and not resident before dropped (the kernel's readahead past the reads too)."""
        self.drop(0, max(self.noted_end, self._runs[-1][1] if self._runs else 0))
        self._runs = []


@cache
def readahead_bytes(device: int) -> int:
    """The readahead of the file system on ``device`` (an ``st_dev``: its backing device's
    ``read_ahead_kb``), 0 when not known."""
    try:
        with open(f"/sys/class/bdi/{os.major(device)}:{os.minor(device)}/read_ahead_kb") as f:
            return int(f.read()) << 10
    except (OSError, ValueError):
        return 0


def guard(fd: int, size: int) -> CacheGuard | None:
    """A guard for the reads of ``fd`` (a file of ``size`` bytes) when :func:`leave_as_found` is on and the
    file is worth it (:data:`MIN_GUARDED`); None otherwise."""
    if not _on or size < MIN_GUARDED or _libc() is None:
        return None
    return CacheGuard(fd)


def watch_mapping(fd: int, size: int) -> Callable[[object], None] | None:
    """For a whole file of ``size`` bytes about to be mapped from ``fd`` and read through the mapping: its
    pages not resident now noted, and a function ``attach(mapping)`` to call with the mapping (an
    :class:`mmap.mmap`) that drops them once the mapping is gone (when the last view of it is released:
    pages still mapped cannot be dropped). Call it before mapping (a MAP_POPULATE map reads everything at
    once). None when the guard is off or nothing is to be dropped."""
    if not _on or size < MIN_GUARDED or _libc() is None:
        return None
    g = CacheGuard(fd)
    g.note(0, size)
    runs = g._runs
    if not runs:
        return None
    st = os.fstat(fd)
    identity = (st.st_dev, st.st_ino)
    path = f"/proc/self/fd/{fd}"
    try:
        path = os.readlink(path)
    except OSError:
        return None

    def attach(mapping: object) -> None:
        weakref.finalize(mapping, _drop_runs, path, identity, runs)

    return attach


def _drop_runs(path: str, identity: tuple[int, int], runs: list[tuple[int, int]]) -> None:
    """The runs dropped from the file at ``path``, if it is still the same file (device, inode)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == identity:
            for lo, hi in runs:
                os.posix_fadvise(fd, lo, hi - lo, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)

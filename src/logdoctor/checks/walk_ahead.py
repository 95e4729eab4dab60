"""The walk of a big .log read a chunk at a time (:func:`read_walk`: the whole file in one call of
``_speedups.walk_read_v2``, without the GIL), and the early walks of a ``logdoctor scan --deep`` of a few big
partitions (:func:`start`, :func:`take`), started before the scan's modules load.

Early walks: on a quiet machine one core is idle while the interpreter imports the scan (~60 ms), and the
deep walk of 1 GiB takes ~0.1 s on both. :mod:`logdoctor.checks.early_walk` chooses the files;
:func:`start` walks them on threads of their own, which spend the whole walk of a file in C and never wait
for the GIL the importing thread holds. This module is light to import (os, threading, the extension not
yet configured with its types): nothing of the scan, no dataclasses, so the walks start ~15 ms earlier
than the scan's own walk threads could (BENCHMARKS.md, issue 35). :mod:`logdoctor.checks.state.file_records`
walks with :func:`read_walk` too (``file_records._walk_read``) and takes an early walk instead of walking the
file again (``file_records._take_early``) only when it is the same walk of the same bytes: with CRCs and
positions, of a file that had not changed for :data:`SETTLED_NS` when it was read and is unchanged since.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any, NamedTuple

from logdoctor.formats import extension
from logdoctor.logdir import page_cache, read_rate
from logdoctor.logdir.files import open_regular
from logdoctor.logdir.sparse import is_sparse

__all__ = [
    "MAX_BATCH_READ",
    "MMAP_THRESHOLD",
    "READ_CHUNK",
    "SETTLED_NS",
    "RawWalk",
    "cores",
    "identity",
    "new_chunk",
    "read_walk",
    "start",
    "take",
    "walker",
]

#: a .log from this size is walked a chunk at a time (:func:`read_walk`) or mapped in chunks, never read
#: whole into memory
MMAP_THRESHOLD = 64 * 1024 * 1024
#: the chunk :func:`read_walk` reads into: a buffer of the walk thread's that stays in the core's own cache
#: between the copy from the page cache and the CRCs and records (8 MiB: 1.1x the CPU, BENCHMARKS.md)
READ_CHUNK = 512 << 10
#: the biggest batch :func:`read_walk` reads, into a buffer of its own when bigger than the chunk (Kafka's
#: default message.max.bytes is 1 MiB); a bigger one, or damage claiming so: the mapped walk
MAX_BATCH_READ = 64 << 20
#: the bytes the C walk reads between two calls of its read discipline (:func:`_disciplined_walk`): each call
#: waits for the GIL, which the importing or scanning thread holds (every chunk: ~2,000 waits a GiB)
DISCIPLINE_EVERY = 8 << 20
#: a file whose last change (its ctime) is at least this old when it is stat'ed: any later change gives it
#: another ctime (the file system's clock is coarse, a tick of a few ms: a change within the same tick as
#: the one before could leave the ctime as it was)
SETTLED_NS = 1_000_000_000


class RawWalk(NamedTuple):
    """What :func:`read_walk` found in a file whose every batch it took
    (``checks.state.segment_walk.WalkResult`` is made of it): the file's size, its batches and records, the
    first batch's first and last offsets, the last batch's last offset, the largest maxTimestamp with its
    batch's last offset, and (walked with positions) every batch's file position and last offset as native
    int64s."""

    size: int
    batches: int
    records: int
    first_offset: int
    first_batch_last_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    positions: bytes
    last_offsets: bytes


def identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What tells two states of a file apart: device, inode, size, mtime, ctime."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def new_chunk(size: int = READ_CHUNK) -> mmap.mmap:
    """A buffer of ``size`` bytes for :func:`read_walk`: an anonymous mapping, whose pages the kernel gives
    as the first read fills them (a bytearray of 8 MiB is zeroed by the interpreter first, ~3 ms holding
    the GIL)."""
    return mmap.mmap(-1, size)


@cache
def walker() -> Callable[..., Any] | None:
    """``_speedups.walk_read_v2`` with the CRC-32C function configured; None without the C extension or
    without a usable CRC-32C function (the walks are then the Python ones of checks.state.segment_walk)."""
    ext = extension.load()
    if ext is None or not ext.configure_crc32c(extension.crc32c_address()):
        return None
    return ext.walk_read_v2


def read_walk(
    path: str,
    verify_crc: bool,
    with_positions: bool,
    buf: mmap.mmap | bytearray,
    min_size: int,
    end: int | None = None,
) -> RawWalk | OSError | None:
    """The walk of the regular file ``path`` (``checks.state.segment_walk.walk``: batches framed, CRC-32Cs
    checked with ``verify_crc``, with ``with_positions`` every batch's position kept and every record decoded,
    the --deep walk) read a chunk of ``len(buf)`` bytes at a time into ``buf`` (a batch bigger than that into
    a buffer of its own), when the C walk takes every batch of it. None, at once, for anything else (a
    file under ``min_size`` or with holes, without the extension; a batch the C walk stops at: damage,
    v0/v1, a torn end, a batch bigger than :data:`MAX_BATCH_READ`; with ``with_positions``, a batch whose
    records do not decode): the caller then walks the mapped file, which
    finds and words it as always. ``end``: the file walked up to there at most (its listed size: the moment
    its partition is read as of; the C walk's end, as FileRecords.slice's). An OSError (NotRegularFileError
    is one) is returned, not raised."""
    try:
        fd = open_regular(path)
    except OSError as e:
        return e
    try:
        st = os.fstat(fd)
        size = st.st_size if end is None else min(st.st_size, end)
        walk = walker()
        if size < min_size or is_sparse(st) or walk is None:
            return None
        got = _disciplined_walk(walk, fd, size, buf, verify_crc, with_positions)
        if got is None:
            return None
        *found, aside = got
        if aside and _aside_undecodable(fd, aside, path):
            return None  # worded with the file's positions by the mapped walk
        return RawWalk(size, *found)
    except OSError as e:
        return e
    finally:
        os.close(fd)


def _disciplined_walk(
    walk: Callable[..., Any],
    fd: int,
    size: int,
    buf: mmap.mmap | bytearray,
    verify_crc: bool,
    with_positions: bool,
) -> Any:
    """The C walk of ``fd``, with the command's read discipline applied a chunk at a time: the page cache left
    as found (:mod:`logdoctor.logdir.page_cache`: noted a window ahead of the walk, dropped behind it) and
    the reads paced (:mod:`logdoctor.logdir.read_rate`). Without either, the walk as it always ran."""
    guard = page_cache.guard(fd, size)
    if guard is None and read_rate.limited() is None:
        return walk(fd, size, buf, verify_crc, with_positions, MAX_BATCH_READ)
    paced = [0]  # bytes read and paced so far
    rate = read_rate.limited()
    # paced at least ten times a second: a burst at full speed between two paces is a tenth of a second's
    every = DISCIPLINE_EVERY if rate is None else max(READ_CHUNK, min(DISCIPLINE_EVERY, rate // 10))

    def each(done: int, read: int) -> None:
        if guard is not None:
            guard.drop_behind(done)
            guard.note_ahead(done)
        read_rate.pace(read - paced[0])
        paced[0] = read

    if guard is not None:
        guard.note_ahead(0)
    try:
        return walk(fd, size, buf, verify_crc, with_positions, MAX_BATCH_READ, each, every)
    finally:
        if guard is not None:
            guard.close()


def _aside_undecodable(fd: int, aside: bytes, path: str) -> bool:
    """Whether any of the batches at the file positions ``aside`` (the C walk left their records to the
    Python path: compressed ones) has records that do not decode, decoded as ``dump --deep`` decodes them
    (:func:`logdoctor.checks.undecodable.undecodable_batches`), each read from ``fd``."""
    from array import array

    from logdoctor.checks.undecodable import undecodable_batches
    from logdoctor.formats.record_types import LOG_OVERHEAD, entry_length

    at_zero = array("q", [0])
    for pos in memoryview(aside).cast("q"):
        head = os.pread(fd, LOG_OVERHEAD, pos)
        size = entry_length(head) if len(head) == LOG_OVERHEAD else 0
        if size < 61:
            return True  # not the batch the C walk framed there: the file changed since (walked again)
        batch = os.pread(fd, size, pos)
        if len(batch) != size or undecodable_batches(memoryview(batch), at_zero, size, path):
            return True
    return False


# --- early walks ------------------------------------------------------------------------------------------


class _Walk:
    """One file's early walk: ``done`` is held until ``got`` is set (None: not taken)."""

    __slots__ = ("done", "got", "path")

    def __init__(self, path: str) -> None:
        self.path = path
        self.got: tuple[os.stat_result, RawWalk] | None = None
        self.done = threading.Lock()
        self.done.acquire()


class _Early:
    """The early walks of this process (``pid``), by path; ``todo`` the ones no thread has begun."""

    __slots__ = ("lock", "pid", "todo", "walks")

    def __init__(self, paths: Sequence[str]) -> None:
        self.pid = os.getpid()
        self.walks = {p: _Walk(p) for p in paths}
        self.todo: Iterator[_Walk] = iter(list(self.walks.values()))
        self.lock = threading.Lock()


_early: _Early | None = None


def start(paths: Sequence[str]) -> int:
    """Start the --deep walks (CRCs, positions, every record decoded) of these .log files now, in order, on
    up to one thread per core: the files chosen by :mod:`logdoctor.checks.early_walk` (which also decides
    that the broker's user may read them). Nothing on one core (no idle one) or without the C walk.
    Returns how many walks it started."""
    global _early
    threads = min(cores(), len(paths))
    if threads < 2 or walker() is None:
        return 0
    early = _early = _Early(paths)
    for i in range(threads):
        name = f"logdoctor-early-walk-{i}"
        threading.Thread(target=_walk_early, args=(early,), name=name, daemon=True).start()
    return len(paths)


def _walk_early(early: _Early) -> None:
    buf = new_chunk()
    while True:
        with early.lock:
            walk = next(early.todo, None)
        if walk is None:
            return
        try:
            walk.got = _walk_settled(walk.path, buf)
        finally:
            walk.done.release()


def _walk_settled(path: str, buf: mmap.mmap) -> tuple[os.stat_result, RawWalk] | None:
    """The --deep :func:`read_walk` of a file that had not changed for :data:`SETTLED_NS`, with its stat
    taken before the read (equal after it too); None for anything else."""
    try:
        before = os.stat(path)
        if time.time_ns() - before.st_ctime_ns < SETTLED_NS:
            return None  # being written (a broker's active segment): walked by the scan, in its turn
        got = read_walk(path, True, True, buf, 0)
        if not isinstance(got, RawWalk) or identity(os.stat(path)) != identity(before):
            return None
    except OSError:
        return None
    return before, got


def take(path: str) -> RawWalk | None:
    """The early walk of ``path`` (waited for) when there is one and the file is unchanged since it was
    read: its stat (device, inode, size, mtime, ctime) equals the one taken before the read, when the file
    had not changed for :data:`SETTLED_NS` (every change of a file's bytes gives it a new ctime), so the
    bytes walked are the file's bytes now. None otherwise: the caller walks it. Each walk is taken once."""
    early = _early
    if early is None or early.pid != os.getpid():
        return None
    walk = early.walks.pop(path, None)
    if walk is None:
        return None
    with walk.done:
        got = walk.got
    if got is None:
        return None
    before, raw = got
    try:
        unchanged = identity(os.stat(path)) == identity(before)
    except OSError:
        return None
    return raw if unchanged else None

"""A ``repair``'s big .log files mapped, and their pages faulted in, on a thread of their own while its
modules load, for :func:`logdoctor.checks.state.kept_mappings.mappings_kept` to adopt.

Invariants: a mapping is adopted only for the same inode at the same size (the rule of every kept
mapping: a MAP_SHARED mapping shows the file's bytes as they are now, whenever it was made); files being
written (changed within SETTLED_NS), with holes, under MMAP_THRESHOLD or beyond the kept limit are never
mapped; the pages are faulted in without the GIL, at a lower priority than the imports, and the thread
stops within a chunk when told; what is not adopted is closed when :func:`mappings_kept` is left or by
:func:`drop_early_mappings`, so a later run in the same process never sees it; only in the process that
made them.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from collections.abc import Sequence
from typing import Any

from logdoctor.checks.walk_ahead import MMAP_THRESHOLD, SETTLED_NS
from logdoctor.formats import native
from logdoctor.logdir.files import open_regular
from logdoctor.logdir.sparse import is_sparse

#: what :func:`mappings_kept` keeps mapped at most (page tables: 2 MiB per GiB kept)
#: (here, below the kept mappings: the early ones are limited to what would be kept)
KEEP_MAPPED_BYTES = 2 << 30


#: the populate of :func:`map_early` (``_speedups.populate_read``: without the GIL); None: no early mappings
POPULATE: Any = native.populate_read


#: the nice value of the early mappings' thread: on a machine whose other core is busy, the thread shares a
#: core with the imports it should run beside, and at the same priority it delayed them as long as it ran
#: (their wait in the run queue: ~50-90 ms of ~90; at 10, ~5-14 ms)
EARLY_NICE = 10
#: bytes populated per call: what is left when the thread is told to stop (~10 ms of a core)
EARLY_POPULATE_CHUNK = 64 << 20


class _EarlyMappings:
    """The mappings :func:`map_early` made, by (device, inode, size), for the process that made them; the
    thread that maps and populates them."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.maps: dict[tuple[int, int, int], mmap.mmap] = {}
        self.order: list[mmap.mmap] = []  # every one mapped, adopted or not: populated in this order
        self.lock = threading.Lock()
        self.stopping = False
        self.thread: threading.Thread | None = None
        self.mapped = threading.Event()  # every file mapped (or given up): what there is to adopt is there


_early_maps: _EarlyMappings | None = None


def map_early(paths: Sequence[str], limit: int = KEEP_MAPPED_BYTES) -> int:
    """Map these big .log files (MAP_SHARED, read only) and fault their pages in, on one thread of its own,
    now: for a command about to enter :func:`mappings_kept` (``logdoctor repair LOGDIR...``, whose
    planning scan maps its segments with MAP_POPULATE, ~0.1 s per GiB in the kernel), so that the kernel
    does it while the command's modules load on the other core (:mod:`logdoctor.cli.repair_fast`, which
    chooses the files as a ``scan --deep``'s early walks do: :func:`logdoctor.checks.early_walk.early_logs`,
    only those the broker's user may read). Each file is mapped without MAP_POPULATE (Python's mmap holds
    the GIL while it maps: with MAP_POPULATE the imports waited for it) and populated by
    :data:`POPULATE` without the GIL, one byte read a page (madvise, like MAP_POPULATE, holds the process's
    mmap lock and made the imports wait: ``populate_read`` in _speedups.c).

    :func:`mappings_kept` adopts such a mapping instead of mapping the file anew when it is the same
    inode at the same size (the rule of every kept mapping: a MAP_SHARED mapping shows the file's bytes
    as they are now, whenever it was made); it then counts against the kept limit. Files beyond
    ``limit`` bytes in all (they would not be kept), under MMAP_THRESHOLD or with holes (never kept), or
    changed within :data:`SETTLED_NS` (being written: a broker's active segment, whose size would differ by
    then, and a cut under the mapping would make a read of it SIGBUS) are not mapped. What is not
    adopted is closed when :func:`mappings_kept` is left, or by :func:`drop_early_mappings` (the
    command's end): a later run in the same process never sees it. Only in this process (a forked child
    maps as without them). Returns how many files it will map at most (0: none, or no C extension)."""
    global _early_maps
    drop_early_mappings()
    if POPULATE is None or not paths:
        return 0
    early = _EarlyMappings()
    early.thread = threading.Thread(
        target=_map_and_populate, args=(early, list(paths), limit), name="logdoctor-map-early", daemon=True
    )
    _early_maps = early
    early.thread.start()
    return len(paths)


def lower_this_thread() -> None:
    """This thread alone (Linux: a nice value per thread) :data:`EARLY_NICE` lower than it runs, at most 19:
    lower, never higher (a process run under ``nice -n 15``, a batch job beside a live broker, keeps its
    threads at 15 and more; as root, setting 10 outright would have raised the thread's priority)."""
    with contextlib.suppress(OSError, AttributeError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + EARLY_NICE))


def _map_and_populate(early: _EarlyMappings, paths: list[str], limit: int) -> None:
    """Map every file first (a few microseconds each: all of them there to adopt, whenever the scan asks),
    then fault each one's pages in, in order (reads, not madvise: see ``populate_read`` in _speedups.c,
    madvise made the imports wait). At a lower priority (:data:`EARLY_NICE`) than the thread importing."""
    lower_this_thread()
    try:
        _map_all(early, paths, limit)
    finally:
        early.mapped.set()
    for mm in early.order:
        try:
            view = memoryview(mm)
        except ValueError:  # closed
            continue
        try:
            for at in range(0, len(view), EARLY_POPULATE_CHUNK):  # stops within a chunk when told
                if early.stopping:
                    return
                POPULATE(view[at : at + EARLY_POPULATE_CHUNK], False)
        except OSError:
            pass
        finally:
            view.release()


def _map_all(early: _EarlyMappings, paths: list[str], limit: int) -> None:
    mapped = 0
    for path in paths:
        try:
            fd = open_regular(path)
        except OSError:  # NotRegularFileError is one: the scan finds what it is
            continue
        try:
            st = os.fstat(fd)
            if (
                st.st_size < MMAP_THRESHOLD
                or is_sparse(st)
                or mapped + st.st_size > limit
                or time.time_ns() - st.st_ctime_ns < SETTLED_NS  # being written (a broker's active segment)
            ):
                continue
            mm = mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        except (OSError, ValueError):
            continue
        finally:
            os.close(fd)
        mapped += st.st_size
        with early.lock:
            if early.stopping:
                mm.close()
                return
            early.maps[(st.st_dev, st.st_ino, st.st_size)] = mm
            early.order.append(mm)


def _adopt_early(key: tuple[int, int, int]) -> mmap.mmap | None:
    """The early mapping of the file of this (device, inode, size), taken from the early mappings."""
    early = _early_maps
    if early is None or early.pid != os.getpid():
        return None
    early.mapped.wait()  # still mapping (microseconds a file): the file asked for may be next
    with early.lock:
        return early.maps.pop(key, None)


def _give_back_early(key: tuple[int, int, int], mm: mmap.mmap) -> None:
    early = _early_maps
    if early is not None and early.pid == os.getpid():
        with early.lock:
            early.maps.setdefault(key, mm)


def _stop_early() -> None:
    """The early mappings' thread stopped (within a chunk: the pages it did not fault are faulted by
    whoever reads them) and joined."""
    early = _early_maps
    if early is not None and early.pid == os.getpid():
        _stop(early)


def _stop(early: _EarlyMappings) -> None:
    with early.lock:
        early.stopping = True
    if early.thread is not None:
        early.thread.join()


def drop_early_mappings(*, close: bool = True) -> list[mmap.mmap]:
    """The early mappings of this process given up: their thread stopped (after the file it maps) and
    joined, those not adopted closed (``close=False``: returned, for the caller to close)."""
    global _early_maps
    early, _early_maps = _early_maps, None
    if early is None or early.pid != os.getpid():
        return []
    _stop(early)
    with early.lock:
        left = list(early.maps.values())
        early.maps.clear()
    if close:
        for mm in left:
            _unmap(mm)
        return []
    return left


def _unmap(mm: mmap.mmap) -> None:
    with contextlib.suppress(BufferError):  # a view still held: unmapped when it is collected
        mm.close()

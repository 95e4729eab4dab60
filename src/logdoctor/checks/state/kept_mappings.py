"""The mappings a command keeps for its later reads of the same files: ``repair``'s planning scan, index
rebuild and scan after the apply map each big segment once instead of three times (mapping a file and
unmapping it costs more CPU than reading its bytes).

Invariants: a kept mapping is given again only for the same inode at the same size (a MAP_SHARED mapping
shows the file's bytes as they are now, so its bytes are those a new mapping would give); a file
truncated, grown or replaced since is mapped anew and its old mapping never touched again; at most
:data:`~logdoctor.checks.state.early_mappings.KEEP_MAPPED_BYTES` are kept; everything kept is unmapped on
leaving :func:`mappings_kept`; only in the process that entered it. A CRC walk noted clean over a kept
mapping spares a later reader its CRC check only while the file's stat is unchanged
(:func:`crc_walked_unchanged`).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from logdoctor.checks.state.early_mappings import (
    KEEP_MAPPED_BYTES,
    _adopt_early,
    _give_back_early,
    _stop_early,
    _unmap,
    drop_early_mappings,
)
from logdoctor.checks.state.fast_lane import in_walk_threads
from logdoctor.checks.walk_ahead import SETTLED_NS
from logdoctor.checks.walk_ahead import identity as _identity

if TYPE_CHECKING:
    from logdoctor.checks.state.segment_walk import WalkResult


class _KeptMappings:
    """The big files :func:`read_buffer` mapped while :func:`mappings_kept` is in force, by (device,
    inode, size), for the process that entered it."""

    def __init__(self, limit: int) -> None:
        self.pid = os.getpid()
        self.limit = limit
        self.bytes = 0
        self.maps: dict[tuple[int, int, int], mmap.mmap] = {}
        self.lock = threading.Lock()
        # kept mapping -> (mtime_ns, ctime_ns) of the file, stat'ed before a CRC walk over that mapping
        # found it whole v2 batches with matching CRC-32Cs to its end (:func:`crc_walked_unchanged`)
        self.crc_clean: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.behind: list[threading.Thread] = []  # unmap_ahead's threads, joined on leaving


_kept: _KeptMappings | None = None


@contextlib.contextmanager
def mappings_kept(limit: int = KEEP_MAPPED_BYTES) -> Iterator[None]:
    """Within it, a big file that :func:`read_buffer` maps (MAP_POPULATE) stays mapped, up to ``limit``
    bytes in all (the first files mapped; later ones are mapped and unmapped as outside it), and a later
    :func:`read_buffer` of the same file gets that mapping again instead of mapping it anew: for a
    command that reads the same segments several times (``repair``: its planning scan, the index
    rebuild, the scan after the apply), each is mapped once instead of three times (mapping a file and
    unmapping it costs more CPU than reading its bytes: BENCHMARKS.md, issue 35).

    The same mapping only for the same inode at the same size (a MAP_SHARED mapping shows the file's
    bytes as they are now, so its bytes are those a new mapping would give); a file truncated, grown or
    replaced since is mapped anew, its old mapping never touched again. Everything kept is unmapped on
    leaving. Only in the process that entered it (a forked pool worker maps as outside it)."""
    global _kept
    outer, _kept = _kept, _KeptMappings(limit)
    try:
        yield
    finally:
        kept, _kept = _kept, outer
        for thread in kept.behind:
            thread.join()
        # the early mappings' thread joined (it may still populate one adopted), those never adopted closed
        unadopted = drop_early_mappings(close=False)
        # unmapped on the walk threads at once (mmap.close releases the GIL; a populated mapping takes as
        # long to unmap as to read: BENCHMARKS.md, issue 35)
        for _ in in_walk_threads(_unmap, [*kept.maps.values(), *unadopted]):
            pass


def unmap_ahead() -> None:
    """Within :func:`mappings_kept`: unmap now, on a thread of its own, every kept mapping except those of
    files whose CRC walk over it was noted clean (:func:`crc_walked_unchanged`: the active segments, which
    a ``repair``'s scan after walks again), for a caller about to wait on the disk (a ``repair``'s apply:
    its writes and fsyncs), so that unmapping them (as long as mapping them, ~12-20 ms per 256 MiB)
    overlaps that wait instead of following the run. A file read after that is mapped anew."""
    kept = _keeping()
    if kept is None:
        return
    _stop_early()  # nothing unmapped while the early mappings' thread may still populate it
    with kept.lock:
        gone = [key for key in kept.maps if key not in kept.crc_clean]
        maps = [kept.maps.pop(key) for key in gone]
        kept.bytes -= sum(size for _, _, size in gone)
    if maps:
        thread = threading.Thread(
            target=lambda: [_unmap(mm) for mm in maps], name="logdoctor-unmap-ahead", daemon=True
        )
        thread.start()
        kept.behind.append(thread)


def _keeping() -> _KeptMappings | None:
    """The kept mappings when :func:`mappings_kept` is in force in this process (None: not)."""
    kept = _kept
    return kept if kept is not None and kept.pid == os.getpid() else None


def _map_kept(fd: int, st: os.stat_result) -> mmap.mmap | None:
    """The kept mapping of this file (mapped now if there is room), or None: map it as usual."""
    kept = _keeping()
    if kept is None:
        return None
    key = (st.st_dev, st.st_ino, st.st_size)
    with kept.lock:
        mm = kept.maps.get(key)
        if mm is not None or kept.bytes + st.st_size > kept.limit:
            return mm
        kept.bytes += st.st_size  # room taken before mapping outside the lock
    early = _adopt_early(key)  # mapped (and being populated) while the command's modules loaded
    try:
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mm = early if early is not None else mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
    except BaseException:
        with kept.lock:
            kept.bytes -= st.st_size
        raise
    with kept.lock:
        other = kept.maps.setdefault(key, mm)
        if other is not mm:  # another thread mapped it at the same time: one kept
            kept.bytes -= st.st_size
    if other is not mm:
        if early is not None:
            _give_back_early(key, early)  # closed with the early mappings (it may still be populated)
        else:
            mm.close()
    return other


def _note_crc_clean(before: os.stat_result, res: WalkResult) -> None:
    """A CRC walk over the kept mapping of the file stat'ed as ``before`` (before it was read) found
    whole v2 batches with matching CRCs to its end: noted for :func:`crc_walked_unchanged`, when the
    file had not changed for :data:`SETTLED_NS` then."""
    kept = _keeping()
    key = (before.st_dev, before.st_ino, before.st_size)
    if (
        kept is None
        or key not in kept.maps
        or not (res.clean and res.magics == {2} and res.valid_bytes == res.size == before.st_size)
        or time.time_ns() - before.st_ctime_ns < SETTLED_NS
    ):
        return
    with kept.lock:
        kept.crc_clean[key] = (before.st_mtime_ns, before.st_ctime_ns)


def crc_walked_unchanged(path: str | os.PathLike[str]) -> Callable[[], bool] | None:
    """For a file that :func:`mappings_kept` keeps mapped and whose every batch a CRC walk over that
    mapping found whole and matching (the active segment of a ``repair``: its planning scan walked it
    with CRCs, and its index rebuild reads the same mapping): a function telling whether the file is
    still unchanged, to be called *after* the caller has read the mapping again; None when nothing is
    known (then check the CRCs).

    Why the CRCs need not be checked again when that function answers True: it compares the file's
    stat (device, inode, size, mtime, ctime) with the one taken before the CRC walk read it. Every change
    of a file's bytes (write, truncate, fallocate, a write through a shared mapping) sets its ctime to the
    time of the change, and no call sets a ctime back; the file had not changed for :data:`SETTLED_NS`
    when it was first stat'ed, so a change after that stat has a ctime of its own. Equal stats after the
    second read therefore mean that no byte changed between the first stat and now: the bytes read
    the second time are the ones whose CRCs were checked. Not equal: the caller reads and checks
    again (``repair``'s safety does not rest on this: its scan after the apply walks the file with CRCs
    anew)."""
    kept = _keeping()
    if kept is None or not kept.crc_clean:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino, st.st_size)
    noted = kept.crc_clean.get(key)
    if noted != (st.st_mtime_ns, st.st_ctime_ns):
        return None
    first = _identity(st)

    def unchanged() -> bool:
        try:
            return _identity(os.stat(path)) == first
        except OSError:
            return False

    return unchanged

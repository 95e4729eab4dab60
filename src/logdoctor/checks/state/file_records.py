"""A segment's .log as the scan reads it, and the walk of such a file: Kafka's FileRecords, a log file
read up to the size taken when the read began (``FileRecords.slice``).

A big or sparse file is mapped (MAP_POPULATE, but never over holes: they would be faulted in), or, when
the C walk takes every batch of it, read a chunk at a time into a buffer of the walk thread's; a small one
is read whole; every read keeps the command's read discipline (:mod:`logdoctor.logdir.page_cache`,
:mod:`logdoctor.logdir.read_rate`). Invariants: nothing past ``end``, the size the segment was listed
with, is read; a buffer is given back with :func:`release`; the chunked walk and the early walk (taken
from :mod:`logdoctor.checks.walk_ahead`) give the :class:`WalkResult` the walk of the mapped file gives,
and anything they do not take whole (damage, v0/v1, a torn end, holes) is walked on the mapping, which
finds and words it; an OSError is returned, not raised, for the caller to record.
"""

from __future__ import annotations

import mmap
import os
import threading
from array import array

from logdoctor.checks.state import fast_lane
from logdoctor.checks.state.early_mappings import POPULATE
from logdoctor.checks.state.fast_lane import _crc_on_threads, in_walk_threads
from logdoctor.checks.state.kept_mappings import _keeping, _map_kept, _note_crc_clean
from logdoctor.checks.state.segment_walk import WalkResult, walk
from logdoctor.checks.undecodable import undecodable_batches
from logdoctor.checks.walk_ahead import MMAP_THRESHOLD, READ_CHUNK, RawWalk, new_chunk, read_walk
from logdoctor.checks.walk_ahead import take as _take_raw
from logdoctor.formats import native
from logdoctor.formats.lazy_numpy import import_in_background
from logdoctor.logdir import page_cache, read_rate
from logdoctor.logdir.files import open_regular, read_fd
from logdoctor.logdir.sparse import data_extents, is_sparse


def read_buffer(
    path: str | os.PathLike[str], *, numpy_ahead: bool = False, end: int | None = None
) -> tuple[memoryview, object | None, list[tuple[int, int]] | None]:
    """The whole file as a memoryview (mmap for large or sparse files), and where it holds data when it has
    holes (None: no holes, all data). With ``end`` (the size the file was listed with: the moment its
    partition is read as of, ``Segment.size``), its first ``end`` bytes at most: bytes appended since are
    not read, as Kafka's FileRecords.slice reads a segment up to the size taken when the read began.
    Release it with :func:`release` when done (which closes the returned handle; a mapping kept by
    :func:`mappings_kept` has no handle). ``numpy_ahead``: the caller's work after reading a big file wants
    numpy (the --deep walk's index cross-check without the C extension), imported meanwhile on a thread of
    its own; with the extension no reader needs it (the index checks run in C:
    ``checks.indexes.first_bad_entry``)."""
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        size = st.st_size if end is None else min(st.st_size, end)
        extents = data_extents(fd) if is_sparse(st) else None
        if extents is not None and size < st.st_size:
            extents = [(a, min(b, size)) for a, b in extents if a < size]
        if size >= MMAP_THRESHOLD or extents is not None:
            # MAP_POPULATE: fault the whole file in at once instead of page by page during the walk;
            # never for a file with holes (it would fault in the holes: issue 24's 10 GiB hole cost 10 GB)
            flags = mmap.MAP_SHARED | (getattr(mmap, "MAP_POPULATE", 0) if extents is None else 0)
            if size == 0:
                return memoryview(b""), None, extents
            if numpy_ahead:
                import_in_background()  # a big segment's walk ahead: its index cross-check wants numpy
            kept = _map_kept(fd, st) if extents is None and size == st.st_size else None
            if kept is not None:
                return memoryview(kept), None, None
            # the command's read discipline: the pages it brings in dropped once unmapped (logdir.page_cache),
            # and with a read rate, the pages faulted in a paced chunk at a time instead of all at once
            attach = page_cache.watch_mapping(fd, size)
            paced = read_rate.limited() is not None and POPULATE is not None
            if paced:
                flags &= ~getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
            if attach is not None:
                attach(mm)
            view = memoryview(mm)
            if paced:
                _populate_paced(view, extents)
            return view, mm, extents
        return memoryview(read_fd(fd, end)), None, None
    finally:
        os.close(fd)


def _populate_paced(view: memoryview, extents: list[tuple[int, int]] | None) -> None:
    """The pages of a mapped file (its data, not its holes) faulted in ``read_rate.BURST`` bytes at a time,
    each chunk paced (:func:`logdoctor.logdir.read_rate.pace`)."""
    for start, end in extents if extents is not None else [(0, len(view))]:
        for at in range(start, min(end, len(view)), read_rate.BURST):
            chunk = view[at : min(at + read_rate.BURST, end, len(view))]
            POPULATE(chunk, False)
            read_rate.pace(len(chunk))
            chunk.release()


def release(view: memoryview, handle: object | None) -> None:
    view.release()
    if handle is not None:
        handle.close()  # type: ignore[attr-defined]


_buffers = threading.local()  # the chunk of each walk thread's _walk_read


def _walk_read(
    path: str, verify_crc: bool, with_positions: bool, end: int | None = None
) -> WalkResult | OSError | None:
    """:func:`walk` of a big .log read a chunk at a time (``READ_CHUNK``, into a buffer of this thread that
    stays in the core's cache: :func:`logdoctor.checks.walk_ahead.read_walk`), for a file whose every batch
    the C walk takes: the same result as :func:`walk` of the mapped file, without mapping it (mapping a
    file from the page cache and unmapping it again costs more CPU than copying its bytes, and the CRCs
    and records are then read from the cache: BENCHMARKS.md, issue 35). None, at once, for anything else
    (a file under MMAP_THRESHOLD or with holes, a batch the C walk stops at: damage, v0/v1, a torn end, a
    batch bigger than ``walk_ahead.MAX_BATCH_READ``; with ``with_positions``, a batch whose records do not
    decode): the caller then walks the mapped file, which finds and words it as always."""
    if len(getattr(_buffers, "chunk", b"")) != READ_CHUNK:
        _buffers.chunk = new_chunk(READ_CHUNK)
    got = read_walk(path, verify_crc, with_positions, _buffers.chunk, MMAP_THRESHOLD, end)
    return _walk_result(got, with_positions) if isinstance(got, RawWalk) else got


def _walk_result(raw: RawWalk, with_positions: bool) -> WalkResult:
    """The WalkResult of a file whose every batch :func:`read_walk` took."""
    res = WalkResult(
        size=raw.size,
        batches=raw.batches,
        valid_bytes=raw.size,
        first_offset=raw.first_offset,
        first_batch_last_offset=raw.first_batch_last_offset,
        last_offset=raw.last_offset,
        valid_last_offset=raw.last_offset,
        max_timestamp=raw.max_timestamp,
        offset_of_max_timestamp=raw.offset_of_max_timestamp,
        max_timestamp_valid_prefix=raw.max_timestamp,
        records=raw.records,
        valid_records=raw.records,
        magics={2},
    )
    if with_positions:
        res.positions, res.last_offsets = array("q"), array("q")
        res.positions.frombytes(raw.positions)
        res.last_offsets.frombytes(raw.last_offsets)
    return res


def walk_file(
    path: str, verify_crc: bool, with_positions: bool, end: int | None = None
) -> WalkResult | OSError:
    """:func:`walk` of one .log, mapped and released again, up to ``end`` (its listed size: the segment as of
    the moment its partition was listed, :func:`read_buffer`; None: to its end now); an OSError
    (NotRegularFileError included) is returned, not raised: the caller records it (PartitionState._keep). Safe
    in any thread. With ``with_positions`` (the --deep walk) the records of every batch are decoded too
    (:func:`logdoctor.checks.undecodable.undecodable_batches`, while the file is mapped). A big file is read a
    chunk at a time instead (:func:`_walk_read`) when its CRCs would not be checked on every walk thread
    anyway and no :func:`mappings_kept` keeps its mapping for a later read."""
    if (
        fast_lane.FAST_WALK is not None
        and not (verify_crc and _crc_on_threads(MMAP_THRESHOLD))
        and not _keeping()
    ):
        got = _walk_read(path, verify_crc, with_positions, end)
        if got is not None:
            return got
    try:
        # stat'ed before it is read: a clean CRC walk over a kept mapping is noted (crc_walked_unchanged)
        before = os.stat(path) if verify_crc and _keeping() else None
        view, handle, extents = read_buffer(
            path, numpy_ahead=with_positions and native.speedups is None, end=end
        )
    except OSError as e:  # NotRegularFileError is one
        return e
    try:
        res = walk(view, verify_crc=verify_crc, with_positions=with_positions, data_extents=extents)
        if with_positions and res.positions is not None:  # the --deep walk: every record decoded too
            res.undecodable = undecodable_batches(view, res.positions, res.valid_bytes, path)
        if before is not None and handle is None and extents is None:
            _note_crc_clean(before, res)
        return res
    finally:
        release(view, handle)


def _take_early(path: str, verify_crc: bool, with_positions: bool, end: int | None) -> WalkResult | None:
    """The early walk of ``path`` (:func:`logdoctor.checks.walk_ahead.take`: a ``scan --deep``'s, started
    before its modules loaded) when it is the walk asked for (with CRCs and positions) and the file is
    unchanged since it was read; None otherwise: the caller walks it."""
    if not (verify_crc and with_positions):
        return None
    raw = _take_raw(path)
    return None if raw is None or (end is not None and raw.size != end) else _walk_result(raw, True)


def walk_files(
    paths: list[str], verify_crc: bool, with_positions: bool, ends: list[int] | None = None
) -> list[WalkResult | OSError]:
    """:func:`walk_file` of every path (up to its end in ``ends``: its listed size), in order, on
    :func:`walk_threads` threads: each reads (in chunks) or maps one file at a time (memory: one segment per
    thread at most) and spends its time in the C fast lane without the GIL. One file, or one core: in this
    thread."""
    items = list(zip(paths, ends if ends is not None else [None] * len(paths), strict=True))
    return list(in_walk_threads(lambda p: walk_file(p[0], verify_crc, with_positions, p[1]), items))

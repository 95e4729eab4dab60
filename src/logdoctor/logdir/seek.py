"""Index-based seeking in a segment: where to start reading to reach an offset or a timestamp.

The one place seeking lives: ``dump --offsets/--timestamps`` (over a
:class:`~logdoctor.logdir.reader.LogReader`) and the Spark data sources (over
:class:`~logdoctor.logdir.refs.SegmentRef` values, local or at a URI) both plan here, so they start
at the same position and find the same offsets.

Kafka never scans a segment from its start to serve a fetch or a ListOffsets request; it looks the
target up in the sparse indexes and walks the log only from there
(K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java):

- by offset (``translateOffset``): ``OffsetIndex.lookup(target)``, the last entry whose offset is
  <= target (:meth:`~logdoctor.formats.index_lookup.IndexEntries.floor`); the walk starts at that
  entry's position and skips batches whose last offset is below the target.
- by timestamp (``findOffsetByTimestamp``): a time-index entry, the offset index for its offset's
  position, then the first record whose timestamp is >= the target, scanning from there. We take the
  last time-index entry whose timestamp is *strictly* below the target where ``TimeIndex.lookup``
  takes the last one <= it: :mod:`logdoctor.formats.index_lookup` explains why; the answer is the same.

The indexes are only hints: a position where no plausible batch header starts (a sane size and magic,
a first offset inside the segment) or whose batch starts past the target makes the walk start at the
segment's start (``SeekPlan.fallback`` says why), so a broken index never hides data. Headers are
checked with one 17-byte read, so planning a remote segment reads almost nothing of its ``.log``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.formats.index_lookup import IndexEntries, offset_entries, time_entries
from logdoctor.formats.record_types import LOG_ENTRY_HEAD, MAGIC_POSITION
from logdoctor.formats.records import Batch
from logdoctor.logdir import read_rate
from logdoctor.logdir.reader import ByteReader, LogReader, iter_batches_from
from logdoctor.logdir.refs import SegmentRef

__all__ = [
    "HEADER_PROBE",
    "SEEK_FIRST_CHUNK",
    "SeekPlan",
    "batch_start_at",
    "iter_batches_in_offsets",
    "iter_batches_in_timestamps",
    "lookup_offset_position",
    "lookup_timestamp_offset",
    "offset_for_timestamp",
    "plan_offset_seek",
    "plan_timestamp_seek",
    "seek_offset",
    "seek_timestamp",
    "segment_batches",
    "segment_offset_entries",
    "segment_reader",
    "segment_time_entries",
]

#: Bytes read to check a batch header: offset (8), size (4), and the magic byte at 16.
HEADER_PROBE = MAGIC_POSITION + 1
_MIN_BATCH = 14  # the smallest legacy entry after the 12-byte log overhead

#: The first read when looking for a timestamp from an index position (it is usually within a few KiB).
SEEK_FIRST_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class SeekPlan:
    """Where a walk starts: ``position`` in the log, with the index entry that gave it."""

    position: int
    via: str  # "offset-index" | "time-index" | "start"
    index_offset: int | None = None  # offset of the index entry used (None from the start)
    fallback: str | None = None  # why the index could not be used, when it could not


# --- batch headers -----------------------------------------------------------------------------------


def batch_start_at(
    reader: ByteReader,
    position: int,
    *,
    base_offset: int | None = None,
    next_base_offset: int | None = None,
) -> int | None:
    """The first offset of the batch whose header starts at ``position``, or None when none plausibly does.

    Plausible: the 17 header bytes are there, magic 0..2, a size of at least 14 bytes that ends inside
    the file, and an offset in [``base_offset``, ``next_base_offset``) when those are given (a v0/v1
    wrapper may say 0: librdkafka's did). For v0/v1 the offset field is the wrapper's *last* inner
    offset, the only one known without decompressing. Reads nothing but those 17 bytes.
    """
    size = reader.size
    if position < 0 or position + HEADER_PROBE > size:
        return None
    try:
        head = reader.read_at(position, HEADER_PROBE)
    except (OSError, ValueError):  # a remote read failed: the index cannot be trusted, start over
        return None
    if len(head) < HEADER_PROBE:
        return None
    offset, length = LOG_ENTRY_HEAD.unpack_from(head, 0)
    magic = head[MAGIC_POSITION]
    if magic > 2 or length < _MIN_BATCH or position + 12 + length > size:
        return None
    if base_offset is not None and offset < base_offset and not (magic < 2 and offset == 0):
        return None
    if next_base_offset is not None and offset >= next_base_offset:
        return None
    return offset


# --- plans over a reader and index bytes ---------------------------------------------------------------

IndexInput = bytes | memoryview | IndexEntries | None


def lookup_offset_position(
    offset_index: IndexInput, base_offset: int, target: int, *, source: str | None = None
) -> tuple[int, int | None]:
    """``OffsetIndex.lookup``: (position, entry offset) of the last usable entry with offset <= target;
    (0, None) when the index is empty or every entry is above the target."""
    entries = _offsets(offset_index, base_offset, source=source)
    found = entries.floor(target)
    return (0, None) if found is None else (found[1], found[0])


def lookup_timestamp_offset(
    time_index: IndexInput, base_offset: int, target_ts: int, *, source: str | None = None
) -> int | None:
    """Offset of the last usable time-index entry whose timestamp is strictly below ``target_ts``."""
    entries = (
        time_index
        if isinstance(time_index, IndexEntries)
        else time_entries(time_index, base_offset, source=source)
    )
    found = entries.below(target_ts)
    return None if found is None else found[1]


def _offsets(
    offset_index: IndexInput,
    base_offset: int,
    *,
    log_size: int | None = None,
    next_base_offset: int | None = None,
    source: str | None = None,
) -> IndexEntries:
    if isinstance(offset_index, IndexEntries):
        return offset_index
    return offset_entries(
        offset_index, base_offset, log_size=log_size, next_base_offset=next_base_offset, source=source
    )


def plan_offset_seek(
    reader: ByteReader,
    offset_index: IndexInput,
    base_offset: int,
    target: int,
    *,
    next_base_offset: int | None = None,
    source: str | None = None,
) -> SeekPlan:
    """Where to start walking ``reader`` to reach ``target`` (an offset), checked against the log."""
    if target <= base_offset:
        return SeekPlan(0, "start")
    try:
        entries = _offsets(
            offset_index, base_offset, log_size=reader.size, next_base_offset=next_base_offset, source=source
        )
    except FormatError as e:
        return SeekPlan(0, "start", fallback=f"offset index unreadable: {e}")
    found = entries.floor(target)
    if found is None:
        return SeekPlan(0, "start")
    entry_offset, position = found
    first = batch_start_at(reader, position, base_offset=base_offset, next_base_offset=next_base_offset)
    if first is None:
        return SeekPlan(
            0,
            "start",
            fallback=f"offset index entry {entry_offset} points at {position}, where no batch starts",
        )
    if first > target:
        return SeekPlan(
            0,
            "start",
            fallback=f"offset index entry {entry_offset} points at a batch from {first}, past the target",
        )
    return SeekPlan(position, "offset-index", entry_offset)


def plan_timestamp_seek(
    reader: ByteReader,
    offset_index: IndexInput,
    time_index: IndexInput,
    base_offset: int,
    target_ts: int,
    *,
    next_base_offset: int | None = None,
    source: str | None = None,
) -> SeekPlan:
    """Where to start walking to find the first record whose timestamp is >= ``target_ts``."""
    try:
        offset = lookup_timestamp_offset(time_index, base_offset, target_ts, source=source)
    except FormatError as e:
        return SeekPlan(0, "start", fallback=f"time index unreadable: {e}")
    if offset is None:
        return SeekPlan(0, "start")
    plan = plan_offset_seek(
        reader, offset_index, base_offset, offset, next_base_offset=next_base_offset, source=source
    )
    if plan.via == "start":
        return plan
    return SeekPlan(plan.position, "time-index", plan.index_offset, plan.fallback)


def iter_batches_in_offsets(
    reader: LogReader,
    offset_index: IndexInput,
    base_offset: int,
    first: int | None,
    last: int | None,
    *,
    verify_crc: bool = False,
    plan: SeekPlan | None = None,
) -> Iterator[Batch]:
    """Batches that hold offsets in ``[first, last]`` (None = open end), seeking with the offset index."""
    if plan is None:
        plan = (
            plan_offset_seek(reader, offset_index, base_offset, first, source=reader.source)
            if first is not None
            else SeekPlan(0, "start")
        )
    for batch in iter_batches_from(reader, plan.position, verify_crc=verify_crc):
        if first is not None and batch.last_offset < first:
            continue
        if last is not None and batch.magic >= 2 and batch.base_offset > last:
            return
        yield batch
        if last is not None and batch.last_offset >= last:
            return


def iter_batches_in_timestamps(
    reader: LogReader,
    offset_index: IndexInput,
    time_index: IndexInput,
    base_offset: int,
    first_ts: int | None,
    last_ts: int | None,
    *,
    verify_crc: bool = False,
    plan: SeekPlan | None = None,
) -> Iterator[Batch]:
    """Batches from the first whose max timestamp >= ``first_ts`` (Kafka's ListOffsets answer) to
    the first whose max timestamp > ``last_ts`` (included: it can hold records up to ``last_ts``).

    Batches in between are all yielded: with CreateTime, timestamps need not grow along the log, so
    the caller filters records by timestamp.
    """
    if plan is None:
        plan = (
            plan_timestamp_seek(reader, offset_index, time_index, base_offset, first_ts, source=reader.source)
            if first_ts is not None
            else SeekPlan(0, "start")
        )
    started = first_ts is None
    for batch in iter_batches_from(reader, plan.position, verify_crc=verify_crc):
        if not started:
            if batch.max_timestamp < first_ts:
                continue
            started = True
        yield batch
        if last_ts is not None and batch.max_timestamp > last_ts:
            return


# --- the same over segment refs (local or at a URI) ------------------------------------------------------


def _index_bytes(seg: SegmentRef, kind: str) -> bytes:
    if seg.remote is not None:  # a remote-tier segment: its store's index (logdir.remote_reader)
        from logdoctor.logdir.remote_reader import remote_index_bytes

        return remote_index_bytes(seg, kind)
    try:  # local: logdir.files.read_file (no symlink, no FIFO)
        return seg.storage.read(seg.index_path if kind == "offset" else seg.time_index_path)
    except (OSError, ValueError):
        return b""


def segment_offset_entries(seg: SegmentRef) -> IndexEntries:
    """Usable entries of the segment's ``.index`` (none when it is missing or unreadable)."""
    try:
        return offset_entries(
            _index_bytes(seg, "offset"),
            seg.base_offset,
            log_size=seg.size,
            next_base_offset=seg.next_base_offset,
            source=seg.index_path,
        )
    except FormatError:
        return IndexEntries()


def segment_time_entries(seg: SegmentRef) -> IndexEntries:
    """Usable entries of the segment's ``.timeindex`` (none when it is missing or unreadable)."""
    try:
        return time_entries(_index_bytes(seg, "timestamp"), seg.base_offset, source=seg.time_index_path)
    except FormatError:
        return IndexEntries()


class _LazyRemote:
    """A remote segment opened on its first read (planning often needs no read at all)."""

    def __init__(self, seg: SegmentRef) -> None:
        self._seg = seg
        self._reader: Any = None
        self.size = seg.size

    def read_at(self, offset: int, length: int) -> bytes:
        if self._reader is None:
            self._reader = _open_ranged(self._seg)
        return self._reader.read_at(offset, length)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def _open_ranged(seg: SegmentRef) -> Any:
    """A reader by byte ranges of a file at a URI or of a remote-tier segment's original bytes."""
    if seg.remote is not None:
        from logdoctor.logdir.remote_reader import open_remote_log

        return open_remote_log(seg)
    return seg.storage.open(seg.path)


@contextmanager
def segment_reader(seg: SegmentRef) -> Iterator[ByteReader]:
    """A reader of ``seg``'s ``.log``: the local file mapped (empty when it cannot be), or the remote
    file opened on its first read, by byte ranges."""
    if not seg.ranged:
        from logdoctor.logdir.files import map_file

        try:
            data = map_file(seg.path, seg.size)  # as planned: the size listed
        except OSError:
            data = memoryview(b"")
        yield LogReader(data, source=seg.path)
        return
    remote = _LazyRemote(seg)
    try:
        yield remote
    finally:
        remote.close()


def seek_offset(seg: SegmentRef, target: int, entries: IndexEntries | None = None) -> int:
    """Byte position to start reading ``seg`` to reach ``target`` (:func:`plan_offset_seek`; 0 when the
    index cannot be used). ``entries``: the segment's offset index when already read."""
    if target <= seg.base_offset:
        return 0
    if entries is None:
        entries = segment_offset_entries(seg)
    found = entries.floor(target)
    if found is None or found[1] == 0:
        return 0  # no header to check at the start
    with segment_reader(seg) as reader:
        plan = plan_offset_seek(
            reader, entries, seg.base_offset, target, next_base_offset=seg.next_base_offset
        )
    return plan.position


def seek_timestamp(seg: SegmentRef, target_ts: int, entries: IndexEntries | None = None) -> int:
    """Byte position to start scanning ``seg`` for the first record whose timestamp is >= ``target_ts``
    (:func:`plan_timestamp_seek` over the ref; 0 when the indexes cannot be used). ``entries``: the
    segment's time index when already read."""
    if entries is None:
        entries = segment_time_entries(seg)
    found = entries.below(target_ts)
    return seek_offset(seg, found[1]) if found is not None else 0


def segment_batches(
    seg: SegmentRef,
    start: int = 0,
    *,
    verify_crc: bool = True,
    stop: int | None = None,
    hint: int | None = None,
    hint_offset: int | None = None,
    first_chunk: int | None = None,
) -> Iterator[Any]:
    """The batches of ``seg`` from byte ``start``, as :func:`logdoctor.formats.records.iter_batches`
    over the whole file yields them: a local file is mapped; a remote one is read by byte ranges
    (:func:`logdoctor.logdir.ranged.iter_ranged_batches`: ``stop``, ``hint`` and ``hint_offset`` bound
    what it reads). Raises OSError when the file cannot be opened, FormatError at its first bad batch."""
    from logdoctor.formats.records import iter_batches

    if not seg.ranged:
        from logdoctor.logdir.files import map_file

        # up to the planned size (the size listed): a running broker's appends since are not read
        data = map_file(seg.path, seg.size)
        batches = iter_batches(data, source=seg.path, start=start, verify_crc=verify_crc)
        if read_rate.limited() is None:
            yield from batches
            return
        for batch in batches:  # --max-read-rate: each batch's bytes paced as the walk reaches it
            read_rate.pace(batch.size)
            yield batch
        return
    from logdoctor.logdir.ranged import iter_ranged_batches

    with _open_ranged(seg) as reader:
        yield from iter_ranged_batches(
            reader,
            source=seg.path,
            start=start,
            stop=stop,
            verify_crc=verify_crc,
            first_chunk=first_chunk,
            hint=hint,
            hint_offset=hint_offset,
        )


def _first_offset_at_or_after_timestamp(seg: SegmentRef, ts: int, position: int) -> int | None:
    """Scan batches from ``position``: the first record offset whose timestamp is >= ts, or None
    (``FileRecords.searchForTimestamp``)."""
    try:
        for batch in segment_batches(seg, position, verify_crc=True, first_chunk=SEEK_FIRST_CHUNK):
            if batch.max_timestamp < ts:
                continue
            for record in batch.records():
                if record.timestamp >= ts:
                    return record.offset
    except FormatError:
        return None  # rows of a segment stop at its first invalid batch; so does the search
    except OSError:
        if seg.ranged:
            raise  # a remote read failed: a wrong start offset would silently drop rows
        return None  # a local file gone since listing: as an empty one
    return None


def offset_for_timestamp(segments: Sequence[SegmentRef], ts: int) -> int | None:
    """The first offset of the partition whose record timestamp is >= ts; None when there is none
    (Kafka's ListOffsets by timestamp, K:storage/.../log/UnifiedLog.java fetchOffsetByTimestamp).

    Segments whose complete time index proves their largest timestamp is below ``ts`` are skipped
    (the broker does the same with ``segment.largestTimestamp``); inside the chosen segment the time
    index then the offset index (:func:`seek_timestamp`) give the position to start the scan from.
    """
    for seg in segments:
        entries = segment_time_entries(seg)
        last = entries.last
        if last is not None and entries.complete and not seg.is_last and last[0] < ts:
            continue
        position = seek_timestamp(seg, ts, entries)
        offset = _first_offset_at_or_after_timestamp(seg, ts, position)
        if offset is None and position:
            offset = _first_offset_at_or_after_timestamp(seg, ts, 0)  # index led us wrong: rescan
        if offset is not None:
            return offset
    return None

"""Index-based seeking in a segment: start reading at the batch that holds an offset or a timestamp.

Kafka never scans a segment from its start to serve a fetch or a ListOffsets request; it looks the
target up in the sparse indexes and walks the log only from there:

- by offset (K:storage/.../log/LogSegment.java ``translateOffset``): ``OffsetIndex.lookup(target)``
  is the last entry whose offset is <= target; the walk starts at that entry's position and skips
  batches whose last offset is below the target. An entry (L, P) says "the batch at P ends at L",
  or, for indexes written by live appends before KAFKA-806, "the append chunk starting at P ends
  at L"; either way every offset >= L lives at or after P, so the walk cannot miss the target.
- by timestamp (``LogSegment.findOffsetByTimestamp``): ``TimeIndex.lookup(ts)`` gives an offset,
  the offset index gives its position, then the first batch whose max timestamp >= ts is the
  answer. We look up the last time-index entry whose timestamp is *strictly* below the target:
  entries hold the running maximum, so every batch up to that entry's offset has timestamps below
  the target. (Kafka's ``<=`` lookup can start one batch late when an earlier batch carries the
  very same timestamp.)

The indexes are only hints: a position that is out of range, not a batch boundary, or past the
target makes the walk fall back to the segment start (``SeekPlan.fallback`` says why), so a broken
index never hides data. Reads go through a :class:`LogReader`, which counts the bytes it hands out,
so callers (and tests) can see that a seek touched a small part of a large segment.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    offset_index_array,
    real_entry_count,
    time_index_array,
)
from logdoctor.formats.record_types import LOG_OVERHEAD, MAGIC_POSITION
from logdoctor.formats.records import Batch, iter_batches
from logdoctor.logdir.files import map_file

__all__ = [
    "DEFAULT_WINDOW",
    "LogReader",
    "SeekPlan",
    "iter_batches_from",
    "iter_batches_in_offsets",
    "iter_batches_in_timestamps",
    "lookup_offset_position",
    "lookup_timestamp_offset",
    "plan_offset_seek",
    "plan_timestamp_seek",
]

_OFFSET_SIZE = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_V2_HEADER = 61

#: First read window of a walk (doubles while the walk goes on, up to MAX_WINDOW).
DEFAULT_WINDOW = 16 * 1024
MAX_WINDOW = 16 * 1024 * 1024


class LogReader:
    """Byte-range reads of one ``.log`` (memory-mapped, zero copy) that count what they hand out.

    ``bytes_read`` is the sum of the lengths of every range returned by :meth:`read`: the pages a
    walk can touch. ``distinct_bytes_read`` counts each byte of the file once however often it was
    handed out (a seek and the walk after it read some ranges twice): never more than ``size``.
    Build one over a path (mmap) or over an in-memory buffer (tests, Spark tasks).
    """

    def __init__(self, data: memoryview | bytes, *, source: str | None = None) -> None:
        self._view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        self.source = source
        self.size = len(self._view)
        self.bytes_read = 0
        self.reads = 0
        self._ranges: list[list[int]] = []  # merged [start, end) of what was read, sorted

    @property
    def distinct_bytes_read(self) -> int:
        return sum(e - s for s, e in self._ranges)

    def _note(self, start: int, end: int) -> None:
        if start >= end:
            return
        rs = self._ranges
        if rs and rs[-1][0] <= start <= rs[-1][1]:  # the common case: reading on from the last range
            rs[-1][1] = max(rs[-1][1], end)
            return
        i = bisect.bisect_left(rs, [start, start])
        if i > 0 and rs[i - 1][1] >= start:
            i -= 1
            start = rs[i][0]
        j = i
        while j < len(rs) and rs[j][0] <= end:
            end = max(end, rs[j][1])
            j += 1
        rs[i:j] = [[start, end]]

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> LogReader:
        return cls(map_file(path), source=str(path))

    def read(self, position: int, length: int) -> memoryview:
        """Up to ``length`` bytes from ``position`` (fewer at the end of the file)."""
        position = max(0, min(position, self.size))
        end = min(self.size, position + max(0, length))
        self.bytes_read += end - position
        self._note(position, end)
        self.reads += 1
        return self._view[position:end]

    def release(self) -> None:
        """Drop this reader's reference to the map (views already handed out stay valid)."""
        self._view = memoryview(b"")


@dataclass(frozen=True, slots=True)
class SeekPlan:
    """Where a walk starts: ``position`` in the log, with the index entry that gave it."""

    position: int
    via: str  # "offset-index" | "time-index" | "start"
    index_offset: int | None = None  # offset of the index entry used (None from the start)
    fallback: str | None = None  # why the index could not be used, when it could not


def _int(x: np.integer) -> int:
    return int(x)


def lookup_offset_position(
    offset_index: bytes | memoryview | None, base_offset: int, target: int, *, source: str | None = None
) -> tuple[int, int | None]:
    """``OffsetIndex.lookup``: (position, entry offset) of the last real entry with offset <= target.

    (0, None) when the index is empty or every entry is above the target. Only the entries before a
    preallocated zero tail count; a partial trailing entry is ignored (as the broker rounds down).
    """
    if not offset_index:
        return 0, None
    n = real_entry_count(offset_index, OFFSET_ENTRY_SIZE)
    if n == 0:
        return 0, None
    arr = offset_index_array(offset_index, strict=False, source=source)[:n]
    rel = arr["relative_offset"].astype(np.int64)
    i = int(np.searchsorted(rel, target - base_offset, side="right")) - 1
    if i < 0:
        return 0, None
    return _int(arr["position"][i]), base_offset + _int(rel[i])


def lookup_timestamp_offset(
    time_index: bytes | memoryview | None, base_offset: int, target_ts: int, *, source: str | None = None
) -> int | None:
    """Offset of the last real time-index entry whose timestamp is strictly below ``target_ts``."""
    if not time_index:
        return None
    n = real_entry_count(time_index, TIME_ENTRY_SIZE)
    if n == 0:
        return None
    arr = time_index_array(time_index, strict=False, source=source)[:n]
    ts = arr["timestamp"].astype(np.int64)
    i = int(np.searchsorted(ts, target_ts, side="left")) - 1
    if i < 0:
        return None
    return base_offset + _int(arr["relative_offset"][i])


def _first_batch_offsets(reader: LogReader, position: int) -> tuple[int, int] | None:
    """(first offset, last offset) of the batch starting exactly at ``position``, from its header only.

    None when no plausible batch starts there. v0/v1 entries give (last, last): a wrapper's first
    offset needs decompression, and its offset field is the last inner offset anyway.
    """
    if position < 0 or position + LOG_OVERHEAD > reader.size:
        return None
    head = reader.read(position, min(_V2_HEADER, reader.size - position))
    offset, size = _OFFSET_SIZE.unpack_from(head, 0)
    if size < 14 or position + LOG_OVERHEAD + size > reader.size or len(head) <= MAGIC_POSITION:
        return None
    magic = head[MAGIC_POSITION]
    if magic > 2:
        return None
    if magic < 2:
        return offset, offset
    if len(head) < _V2_HEADER:
        return None
    (last_delta,) = _LAST_DELTA.unpack_from(head, 23)
    return offset, offset + last_delta


def plan_offset_seek(
    reader: LogReader,
    offset_index: bytes | memoryview | None,
    base_offset: int,
    target: int,
    *,
    source: str | None = None,
) -> SeekPlan:
    """Where to start walking ``reader`` to reach ``target`` (an offset), checked against the log."""
    if target <= base_offset:
        return SeekPlan(0, "start")
    try:
        position, entry_offset = lookup_offset_position(offset_index, base_offset, target, source=source)
    except FormatError as e:
        return SeekPlan(0, "start", fallback=f"offset index unreadable: {e}")
    if entry_offset is None:
        return SeekPlan(0, "start")
    found = _first_batch_offsets(reader, position)
    if found is None:
        return SeekPlan(
            0,
            "start",
            fallback=f"offset index entry {entry_offset} points at {position}, where no batch starts",
        )
    first, last = found
    if first > target:
        return SeekPlan(
            0,
            "start",
            fallback=f"offset index entry {entry_offset} points at batch {first}..{last}, past the target",
        )
    return SeekPlan(position, "offset-index", entry_offset)


def plan_timestamp_seek(
    reader: LogReader,
    offset_index: bytes | memoryview | None,
    time_index: bytes | memoryview | None,
    base_offset: int,
    target_ts: int,
    *,
    source: str | None = None,
) -> SeekPlan:
    """Where to start walking to find the first batch whose max timestamp >= ``target_ts``."""
    try:
        offset = lookup_timestamp_offset(time_index, base_offset, target_ts, source=source)
    except FormatError as e:
        return SeekPlan(0, "start", fallback=f"time index unreadable: {e}")
    if offset is None:
        return SeekPlan(0, "start")
    plan = plan_offset_seek(reader, offset_index, base_offset, offset, source=source)
    if plan.via == "start":
        return plan
    return SeekPlan(plan.position, "time-index", plan.index_offset, plan.fallback)


def iter_batches_from(
    reader: LogReader,
    position: int = 0,
    *,
    end: int | None = None,
    window: int | None = DEFAULT_WINDOW,
    verify_crc: bool = False,
) -> Iterator[Batch]:
    """Walk the batches of ``reader`` from ``position`` (a batch boundary) to ``end``.

    Reads windows of ``window`` bytes (doubling as the walk goes on) so that a walk that stops early
    reads little; ``window=None`` maps the whole rest in one read. Batch positions are file
    positions. Raises what :func:`iter_batches` raises (TruncatedError at a torn tail, ...), with
    positions in the file; a batch cut by a window edge is not an error, it is read again whole.
    """
    end = reader.size if end is None else min(end, reader.size)
    pos = position
    win = (end - pos) if window is None else window
    while pos < end:
        length = min(max(win, LOG_OVERHEAD), end - pos)
        buf = reader.read(pos, length)
        at_end = pos + length >= end
        last_end = pos
        try:
            for batch in iter_batches(buf, source=reader.source, base_position=pos, verify_crc=verify_crc):
                last_end = batch.position + batch.size
                yield batch
        except TruncatedError:
            if at_end:
                raise
            # A batch straddles the window edge: batches are contiguous, so it starts where the last
            # one yielded ended. Read again from there with a window that holds it whole.
            head = reader.read(last_end, LOG_OVERHEAD) if last_end + LOG_OVERHEAD <= end else b""
            need = LOG_OVERHEAD + int.from_bytes(head[8:12], "big", signed=True) if len(head) == 12 else 0
            if last_end == pos and need <= length:
                raise  # nothing fits even in a window this large: the error is real
            pos = last_end
            win = min(max(win * 2, need), max(MAX_WINDOW, need))
            continue
        if last_end <= pos:
            return  # an empty range
        pos = last_end
        win = min(win * 2, MAX_WINDOW)


def iter_batches_in_offsets(
    reader: LogReader,
    offset_index: bytes | memoryview | None,
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
    offset_index: bytes | memoryview | None,
    time_index: bytes | memoryview | None,
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


def positions_of(offsets: list[int], index_offsets: list[int], index_positions: list[int]) -> list[int]:
    """Seek positions for several targets at once (the Spark reader splits segments with this)."""
    out = []
    for target in offsets:
        i = bisect.bisect_right(index_offsets, target) - 1
        out.append(index_positions[i] if i >= 0 else 0)
    return out


def sibling(path: Path, suffix: str) -> Path:
    """The file of the same segment with another suffix (``.../00042.log`` -> ``.../00042.index``)."""
    stem = path.name.split(".", 1)[0]
    return path.with_name(stem + suffix)

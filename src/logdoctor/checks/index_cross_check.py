"""Every entry of a segment's .index and .timeindex checked against the batches of its walked .log:
what `scan --deep` runs on every segment, and the default depth on a segment whose tail walk found damage.

An entry must point at a batch boundary whose offsets and timestamps agree with it; the first entry
that does not is reported with the reason, as INDEX_CORRUPT.

A ``.index`` entry (offset, position) is sound when a lookup through it finds every offset from its own
on: the position is a batch start and the batch before it ends below the entry's offset (previous batch's
last offset < offset <= the segment's last offset). That holds for what every era of broker wrote:

- since 2.0 the last offset of the batch at the position (KAFKA-6264; K:core/src/main/scala/kafka/log/
  LogSegment.scala at 2.0.0, ``append`` and ``recover``), or of the last batch of a multi-batch append
  (before KAFKA-806: the entry's offset past the first batch's end, a lookup still starts early enough);
- up to 1.1 the FIRST offset of the batch, or of the first batch of the append (LogSegment.scala at
  1.1.1: ``offsetIndex.append(firstOffset, physicalPosition)`` and, in ``recover``, ``batch.baseOffset``),
  the first record's offset for a v0/v1 message set.

An entry below its batch's first offset (at or before the previous batch's last) is what breaks a lookup
(OffsetIndex.lookup takes the last entry <= the target, then the log is read forward from its position:
the records between the entry's offset and that position are skipped).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence

from logdoctor.checks.catalog.entry import CommandText, repair_hint
from logdoctor.checks.context import Depth
from logdoctor.checks.indexes import _SMALL, C_OFFSET_MAX, ENTRY_SIZE, Entries, report_corrupt
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.state.segment_walk import WalkResult
from logdoctor.formats.index import IndexKind, real_entry_count
from logdoctor.formats.lazy_numpy import np
from logdoctor.formats.native import speedups
from logdoctor.logdir.model import Segment

__all__ = ["cross_check_indexes"]


def cross_check_indexes(st: PartitionState, seg: Segment, w: WalkResult) -> None:
    """Every real index entry must point where a lookup can use it (DumpLogSegments --verify-index-only)."""
    if w.positions is None or w.last_offsets is None or w.batches == 0:
        return
    for kind, path in ((IndexKind.OFFSET, seg.index_file), (IndexKind.TIME, seg.timeindex_file)):
        if path is None or path in st.unreadable:
            continue
        data = st.read_small(path, "the broker cannot open this index")
        if data is None or len(data) % ENTRY_SIZE[kind]:
            continue
        if len(data) <= _SMALL * ENTRY_SIZE[kind]:
            found = _SMALL_MISMATCH[kind](_small_entries(kind, data), seg, w)
        else:
            found = _big_mismatch(kind, data, seg, w)
        if found is not None:
            j, why, offset = found
            problem = f"entry {j} of {path} does not match the log: {why}"
            report_corrupt(
                st, seg, path, kind, data, problem, j * ENTRY_SIZE[kind], offset, repair=_repair(st)
            )


def _repair(st: PartitionState) -> CommandText | None:
    """The ``{repair}`` of a finding of this check at ``--deep``: the repair that plans from the same depth
    (a default-depth repair walks only the segments whose tail shows damage, and would say "Nothing to
    repair" of an index whose log is sound); None (the default repair) at the default depth."""
    if st.task.options.depth < Depth.DEEP:
        return None
    return repair_hint("INDEX_CORRUPT", st.task.log_dir, "--deep")


def _big_mismatch(kind: IndexKind, data: bytes, seg: Segment, w: WalkResult) -> _Found:
    """The first entry of an index of more than _SMALL entries that does not match the walk: in C over the
    whole buffer (``_speedups.index_cross_check``: a `scan --deep` never imports numpy), else with numpy
    (:data:`_MISMATCH`, which the C twin is tested against: tests/checks/test_index_c.py)."""
    assert w.positions is not None and w.last_offsets is not None
    last_offset = w.last_offsets[-1]
    if speedups is not None and 0 <= seg.base_offset <= C_OFFSET_MAX:
        real = real_entry_count(data, ENTRY_SIZE[kind])
        got = speedups.index_cross_check(
            data, ENTRY_SIZE[kind], real, seg.base_offset, w.positions, w.last_offsets, w.max_timestamp
        )
        if got is None:
            return None
        if kind is IndexKind.OFFSET:
            j, not_start, pos, off, batch_last = got
            prev_last = _previous_last(w.positions, w.last_offsets, pos, seg.base_offset)
            why = _offset_why(bool(not_start), pos, off, prev_last, batch_last, last_offset, seg.log_name)
            return j, why, off
        j, off, ts = got
        return j, _time_why(off, ts, last_offset, w.max_timestamp), off
    entries = Entries(kind, data, seg.base_offset, log_name=seg.log_name)
    batches = np.frombuffer(w.positions, dtype=np.int64), np.frombuffer(w.last_offsets, dtype=np.int64)
    found = _MISMATCH[kind](entries, *batches, w.max_timestamp)
    return None if found is None else (*found, int(entries.offsets[found[0]]))


def _offset_why(
    not_start: bool, pos: int, off: int, prev_last: int, batch_last: int, last_offset: int, log_name: str
) -> str:
    """Why a .index entry at position ``pos`` for offset ``off`` is wrong (``prev_last``, ``batch_last``:
    the last offsets of the batch before the one at ``pos`` and of that one, when there is one)."""
    if not_start:
        return f"position {pos} is not the start of a batch in {log_name}"
    if off <= prev_last:
        return (
            f"the batch at position {pos} holds offsets {prev_last + 1} to {batch_last}, after the entry's "
            f"offset {off} (the previous batch ends at {prev_last})"
        )
    return f"offset {off} is past the segment's last offset {last_offset}"


def _offset_sound(not_start: bool, off: int, prev_last: int, last_offset: int) -> bool:
    """The rule of every era (see the module doc): at a batch start, after the previous batch's end,
    within the segment."""
    return not not_start and prev_last < off <= last_offset


def _previous_last(positions: Sequence[int], lasts: Sequence[int], pos: int, base: int) -> int:
    """The last offset of the batch before the first batch starting at or after ``pos`` (``base - 1``
    when there is none: no entry may name an offset below the segment's base)."""
    k = bisect.bisect_left(positions, pos)
    return int(lasts[k - 1]) if k > 0 else base - 1


def _time_why(off: int, ts: int, last_offset: int, max_timestamp: int) -> str:
    if off > last_offset:
        return f"offset {off} is past the segment's last offset {last_offset}"
    return f"timestamp {ts} is above every record timestamp (max {max_timestamp})"


def _offset_mismatch(
    e: Entries, positions: np.ndarray, lasts: np.ndarray, _max_timestamp: int
) -> tuple[int, str] | None:
    """The first .index entry that is not at a batch start, is at or before the previous batch's end, or
    past the log (:func:`_offset_sound`)."""
    offs, pos, last_offset = e.offsets, e.positions, int(lasts[-1])
    k = np.searchsorted(positions, pos)
    k_clip = np.minimum(k, len(positions) - 1)
    not_start = (k >= len(positions)) | (positions[k_clip] != pos)
    prev_lasts = np.where(k > 0, lasts[np.maximum(k - 1, 0)], e.base - 1)
    wrong = ~not_start & (offs <= prev_lasts)
    past = offs > last_offset
    bad = np.flatnonzero(not_start | wrong | past)
    if not bad.size:
        return None
    j = int(bad[0])
    why = _offset_why(
        bool(not_start[j]),
        int(pos[j]),
        int(offs[j]),
        int(prev_lasts[j]),
        int(lasts[k_clip[j]]),
        last_offset,
        e.log_name,
    )
    return j, why


def _time_mismatch(
    e: Entries, _positions: np.ndarray, lasts: np.ndarray, max_timestamp: int
) -> tuple[int, str] | None:
    """The first .timeindex entry past the log's last offset or above every record timestamp."""
    offs, ts, last_offset = e.offsets, e.timestamps, int(lasts[-1])
    bad = np.flatnonzero((offs > last_offset) | (ts > max(max_timestamp, -1)))
    if not bad.size or max_timestamp < 0:
        return None
    j = int(bad[0])
    return j, _time_why(int(offs[j]), int(ts[j]), last_offset, max_timestamp)


_MISMATCH = {IndexKind.OFFSET: _offset_mismatch, IndexKind.TIME: _time_mismatch}


# --- the same checks in plain Python, for indexes of up to _SMALL entries (most of a log dir's): numpy's
# per-call cost dominates there, and a scan of small partitions then never imports numpy at all


def _small_entries(kind: IndexKind, data: bytes) -> list[tuple[int, int]]:
    """The real entries of a small index as (relative offset, position or timestamp) pairs:
    :func:`logdoctor.formats.index.real_entry_count`'s rule (stop at the first slot i > 0 whose relative
    offset is 0; none when slot 0 is all zero)."""
    if kind is IndexKind.OFFSET:
        ents = [(rel, pos) for rel, pos in struct.iter_unpack(">ii", data)]
    else:
        ents = [(rel, ts) for ts, rel in struct.iter_unpack(">qi", data)]
    if not ents or ents[0] == (0, 0):
        return []
    return ents[: next((i for i in range(1, len(ents)) if ents[i][0] == 0), len(ents))]


def _small_offset_mismatch(ents: list[tuple[int, int]], seg: Segment, w: WalkResult) -> _Found:
    """:func:`_offset_mismatch` of a small .index."""
    positions, lasts = w.positions, w.last_offsets
    assert positions is not None and lasts is not None
    n, last_offset, base = len(positions), lasts[-1], seg.base_offset
    for j, (rel, pos) in enumerate(ents):
        off = base + rel
        k = bisect.bisect_left(positions, pos)
        not_start = k >= n or positions[k] != pos
        prev_last = lasts[k - 1] if k > 0 else base - 1
        if not _offset_sound(not_start, off, prev_last, last_offset):
            batch_last = lasts[min(k, n - 1)]
            return j, _offset_why(not_start, pos, off, prev_last, batch_last, last_offset, seg.log_name), off
    return None


def _small_time_mismatch(ents: list[tuple[int, int]], seg: Segment, w: WalkResult) -> _Found:
    """:func:`_time_mismatch` of a small .timeindex."""
    assert w.last_offsets is not None
    last_offset, max_timestamp, base = w.last_offsets[-1], w.max_timestamp, seg.base_offset
    if max_timestamp < 0:
        return None
    for j, (rel, ts) in enumerate(ents):
        off = base + rel
        if off > last_offset or ts > max_timestamp:
            return j, _time_why(off, ts, last_offset, max_timestamp), off
    return None


_Found = tuple[int, str, int] | None  # (entry, why, its offset)
_SMALL_MISMATCH = {IndexKind.OFFSET: _small_offset_mismatch, IndexKind.TIME: _small_time_mismatch}

"""--deep: every batch's CRC, every index entry against the log, offsets across segments.

Costs one read of every .log; the walk is :func:`logdoctor.checks.state.walk` (formats.records
batches made in C, C CRCs).
"""

from __future__ import annotations

import numpy as np

from logdoctor.checks.default import check_offsets, check_retention, log_corrupt_repair, report_damage
from logdoctor.checks.indexes import ENTRY_SIZE, Entries, report_corrupt
from logdoctor.checks.state import PartitionState, WalkResult
from logdoctor.formats.index import IndexKind
from logdoctor.logdir.model import Segment


def check_all_logs(st: PartitionState) -> None:
    # every segment walked first: a damaged segment's finding counts the records of the later ones
    # (on every core at once: PartitionState.walk_all, recorded in segment order)
    walks: list[WalkResult | None] = st.walk_all(st.segments, verify_crc=True, with_positions=True)
    for i, seg in enumerate(st.segments):
        w = walks[i]
        if w is None:
            continue
        report_damage(st, i, w)
        check_offsets(st, seg, w)
        _cross_check_indexes(st, seg, w)
    # offsets across segments: each segment must end before the next one's base offset
    for i in range(len(st.segments) - 1):
        w = walks[i]
        nxt = st.segments[i + 1]
        if w is not None and w.last_offset is not None and w.last_offset >= nxt.base_offset:
            seg = st.segments[i]
            st.make(
                "LOG_CORRUPT",
                seg.log_file,
                position=None,
                offset=w.last_offset,
                problem=(
                    f"Segments overlap: {seg.log_name} holds offsets up to {w.last_offset} but the next "
                    f"segment starts at {nxt.base_offset}"
                ),
                consequence=(
                    ". Fetches of the overlapping offsets return duplicates or the wrong records; the "
                    "broker's "
                    "segment map keys on base offsets only"
                ),
                valid_bytes=w.valid_bytes,
                repair=log_corrupt_repair(st),
                details={"kind": "overlap"},
            )
    check_retention(st, walk_all=True)


def _cross_check_indexes(st: PartitionState, seg: Segment, w: WalkResult) -> None:
    """Every real index entry must point where a lookup can use it (DumpLogSegments --verify-index-only)."""
    if w.positions is None or w.last_offsets is None or w.batches == 0:
        return
    batches = (np.frombuffer(w.positions, dtype=np.int64), np.frombuffer(w.last_offsets, dtype=np.int64))
    for kind, path in ((IndexKind.OFFSET, seg.index_file), (IndexKind.TIME, seg.timeindex_file)):
        if path is None or path in st.unreadable:
            continue
        data = st.read_small(path, "the broker cannot open this index")
        if data is None or len(data) % ENTRY_SIZE[kind]:
            continue
        entries = Entries(kind, data, seg.base_offset, log_name=seg.log_name)
        found = _MISMATCH[kind](entries, *batches, w.max_timestamp)
        if found is not None:
            j, why = found
            problem = f"entry {j} of {path} does not match the log: {why}"
            report_corrupt(st, seg, path, kind, data, problem, j * ENTRY_SIZE[kind], int(entries.offsets[j]))


def _offset_mismatch(
    e: Entries, positions: np.ndarray, lasts: np.ndarray, _max_timestamp: int
) -> tuple[int, str] | None:
    """The first .index entry that is not at a batch start, is before its batch's end, or past the log."""
    offs, pos, last_offset = e.offsets, e.positions, int(lasts[-1])
    k = np.searchsorted(positions, pos)
    k_clip = np.minimum(k, len(positions) - 1)
    not_start = (k >= len(positions)) | (positions[k_clip] != pos)
    wrong = ~not_start & (lasts[k_clip] > offs)
    past = offs > last_offset
    bad = np.flatnonzero(not_start | wrong | past)
    if not bad.size:
        return None
    j = int(bad[0])
    if not_start[j]:
        why = f"position {int(pos[j])} is not the start of a batch in {e.log_name}"
    elif wrong[j]:
        why = (
            f"the batch at position {int(pos[j])} ends at offset {int(lasts[k_clip[j]])}, after the entry's "
            f"offset {int(offs[j])}"
        )
    else:
        why = f"offset {int(offs[j])} is past the segment's last offset {last_offset}"
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
    if offs[j] > last_offset:
        why = f"offset {int(offs[j])} is past the segment's last offset {last_offset}"
    else:
        why = f"timestamp {int(ts[j])} is above every record timestamp (max {max_timestamp})"
    return j, why


_MISMATCH = {IndexKind.OFFSET: _offset_mismatch, IndexKind.TIME: _time_mismatch}

"""--deep: every batch's CRC, every index entry against the log, offsets across segments.

Costs one read of every .log; the walk is :func:`logdoctor.checks.state.walk` (formats.records
batches made in C, C CRCs).
"""

from __future__ import annotations

import numpy as np

from logdoctor.checks.default import check_offsets, check_retention, report_damage
from logdoctor.checks.indexes import _report
from logdoctor.checks.layout import SegmentFiles
from logdoctor.checks.state import PartitionState, WalkResult
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    IndexKind,
    offset_index_array,
    real_entry_count,
    time_index_array,
)


def check_all_logs(st: PartitionState) -> None:
    walks: list[WalkResult | None] = []
    for i, seg in enumerate(st.segments):
        w = st.walk(seg, verify_crc=True, with_positions=True)
        walks.append(w)
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
                seg.log_path,
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
                details={"kind": "overlap"},
            )
    check_retention(st, walk_all=True)


def _cross_check_indexes(st: PartitionState, seg: SegmentFiles, w: WalkResult) -> None:
    """Every real index entry must point where a lookup can use it (DumpLogSegments --verify-index-only)."""
    if w.positions is None or w.last_offsets is None or w.batches == 0:
        return
    positions = np.frombuffer(w.positions, dtype=np.int64)
    lasts = np.frombuffer(w.last_offsets, dtype=np.int64)
    base = seg.base_offset
    last_offset = int(lasts[-1])
    if seg.index_path is not None and seg.index_path not in st.unreadable:
        path = seg.index_path
        data = st.read_small(path, "the broker cannot open this index")
        if data is not None and len(data) % OFFSET_ENTRY_SIZE == 0:
            real = real_entry_count(data, OFFSET_ENTRY_SIZE)
            arr = offset_index_array(data[: real * OFFSET_ENTRY_SIZE])
            offs = base + arr["relative_offset"].astype(np.int64)
            pos = arr["position"].astype(np.int64)
            k = np.searchsorted(positions, pos)
            k_clip = np.minimum(k, len(positions) - 1)
            not_start = (k >= len(positions)) | (positions[k_clip] != pos)
            wrong = ~not_start & (lasts[k_clip] > offs)
            past = offs > last_offset
            bad = np.flatnonzero(not_start | wrong | past)
            if bad.size:
                j = int(bad[0])
                if not_start[j]:
                    why = f"position {int(pos[j])} is not the start of a batch in {seg.log_name}"
                elif wrong[j]:
                    why = (
                        f"the batch at position {int(pos[j])} ends at offset {int(lasts[k_clip[j]])}, after "
                        "the "
                        f"entry's offset {int(offs[j])}"
                    )
                else:
                    why = f"offset {int(offs[j])} is past the segment's last offset {last_offset}"
                _report(
                    st,
                    seg,
                    path,
                    IndexKind.OFFSET,
                    data,
                    f"entry {j} of {path} does not match the log: {why}",
                    j * OFFSET_ENTRY_SIZE,
                    int(offs[j]),
                )
    if seg.timeindex_path is not None and seg.timeindex_path not in st.unreadable:
        path = seg.timeindex_path
        data = st.read_small(path, "the broker cannot open this index")
        if data is not None and len(data) % TIME_ENTRY_SIZE == 0:
            real = real_entry_count(data, TIME_ENTRY_SIZE)
            arr = time_index_array(data[: real * TIME_ENTRY_SIZE])
            offs = base + arr["relative_offset"].astype(np.int64)
            ts = arr["timestamp"].astype(np.int64)
            bad = np.flatnonzero((offs > last_offset) | (ts > max(w.max_timestamp, -1)))
            if bad.size and w.max_timestamp >= 0:
                j = int(bad[0])
                if offs[j] > last_offset:
                    why = f"offset {int(offs[j])} is past the segment's last offset {last_offset}"
                else:
                    why = f"timestamp {int(ts[j])} is above every record timestamp (max {w.max_timestamp})"
                _report(
                    st,
                    seg,
                    path,
                    IndexKind.TIME,
                    data,
                    f"entry {j} of {path} does not match the log: {why}",
                    j * TIME_ENTRY_SIZE,
                    int(offs[j]),
                )

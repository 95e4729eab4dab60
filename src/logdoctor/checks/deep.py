"""--deep: every batch's CRC, every record decoded, every index entry against the log, offsets across
segments.

Costs one read of every .log; the walk is :func:`logdoctor.checks.state.segment_walk.walk` (formats.records
batches made in C, C CRCs).
"""

from __future__ import annotations

from logdoctor.checks.default import check_offsets, check_retention, log_corrupt_repair, report_damage
from logdoctor.checks.index_cross_check import cross_check_indexes
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.state.segment_walk import WalkResult
from logdoctor.logdir.model import Segment


def walk_every_log(st: PartitionState) -> None:
    """Every .log of the partition walked at once on every core (CRCs, batch positions, every record
    decoded), before any check asks for a walk: the active segment's walk (quick.check_active) and the
    recovered segments' (default.check_recovery) are then taken from :meth:`PartitionState.walk`'s
    cache instead of being walked alone on this thread first, and the others at the same time. What is
    recorded (results, denied reads, bytes read) is in segment order, as the walks one after another."""
    st.walk_all(st.segments, verify_crc=True, with_positions=True)


def check_all_logs(st: PartitionState) -> None:
    # every segment walked first: a damaged segment's finding counts the records of the later ones
    # (on every core at once: PartitionState.walk_all, recorded in segment order)
    walks: list[WalkResult | None] = st.walk_all(st.segments, verify_crc=True, with_positions=True)
    for i, seg in enumerate(st.segments):
        w = walks[i]
        if w is None:
            continue
        report_damage(st, i, w)
        _report_undecodable(st, seg, w)
        check_offsets(st, seg, w)
        cross_check_indexes(st, seg, w)
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


def _report_undecodable(st: PartitionState, seg: Segment, w: WalkResult) -> None:
    """LOG_RECORDS_UNDECODABLE: the batches of the segment whose CRC matches and whose records do not
    decode (:mod:`logdoctor.checks.undecodable`), one finding naming the first and how many there are."""
    if not w.undecodable:
        return
    u = w.undecodable[0]
    offsets = (
        f"offsets {u.base_offset}..{u.last_offset}"
        if u.base_offset is not None
        else f"offset {u.last_offset}"
    )
    more = len(w.undecodable) - 1
    problem = f"the records of the batch at position {u.position} ({offsets}) do not decode: {u.error}" + (
        f"; {more} more batch(es) of this segment neither" if more else ""
    )
    st.make(
        "LOG_RECORDS_UNDECODABLE",
        seg.log_file,
        position=u.position,
        offset=u.base_offset if u.base_offset is not None else u.last_offset,
        problem=problem,
        details={
            "batches": [
                {"position": x.position, "base_offset": x.base_offset, "last_offset": x.last_offset}
                for x in w.undecodable[:100]
            ],
            "count": len(w.undecodable),
        },
    )

"""Default depth: every check Kafka's startup would run, on every segment.

- every index file in full (all sanity checks of every era, plus what a lookup needs: entries in
  order, inside the segment, pointing inside the .log), K: OffsetIndex/TimeIndex/TransactionIndex;
- after an unclean shutdown, what LogLoader.recoverLog does: re-read (with CRCs) every segment from
  the one holding the recovery point to the end;
- the tail of every other inactive segment, from its offset index's last entry to its end, with CRCs
  (a few KiB: index.interval.bytes plus one batch); a torn tail is LOG_CORRUPT (consumers and followers
  reading it get CorruptRecordException), and a segment without an offset index is read whole, as the
  broker's start reads it to rebuild the index;
- the timestamp time retention would use for every inactive segment (RETENTION_RISK), reading a
  .log only when its time index looks wrong.
"""

from __future__ import annotations

from logdoctor.checks.context import SegmentInfo
from logdoctor.checks.indexes import ENTRY_SIZE, analyze_index, analyze_txn_index, first_recovered
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.state.segment_walk import WalkResult, walk
from logdoctor.checks.timestamps import RISK_TOLERANCE_MS, broker_largest_timestamp, check_retention_risk
from logdoctor.formats.index import OFFSET_ENTRY_SIZE, IndexKind
from logdoctor.logdir.model import Segment


def next_base(st: PartitionState, i: int) -> int | None:
    return st.segments[i + 1].base_offset if i + 1 < len(st.segments) else None


def check_segment_indexes(st: PartitionState, i: int) -> None:
    seg = st.segments[i]
    info = st.infos[seg.base_offset]
    nb = next_base(st, i)
    what = "the broker cannot open this index (LogLoader: 'Could not read file')"
    # the last slot of each is kept for the retention check, so that it does not read the file again
    for kind, path, consequence, last_slots in (
        (IndexKind.OFFSET, seg.index_file, what, st.last_index_slot),
        (IndexKind.TIME, seg.timeindex_file, what + "; time retention sees largestTime=0", st.last_time_slot),
    ):
        if path is None:
            continue
        data = st.read_small(path, consequence)
        if data is not None:
            analyze_index(st, seg, kind, path, data, info.size, nb)
            entry = ENTRY_SIZE[kind]
            slots = len(data) // entry
            if slots:
                last_slots[seg.base_offset] = data[(slots - 1) * entry : slots * entry]
    if seg.txnindex_file is not None:
        data = st.read_small(seg.txnindex_file, what)
        if data is not None:
            analyze_txn_index(st, seg, seg.txnindex_file, data)


def check_all_indexes(st: PartitionState) -> None:
    for i in range(len(st.segments) - 1):  # the active segment is checked by quick.check_active
        check_segment_indexes(st, i)


def report_damage(st: PartitionState, i: int, walk: WalkResult) -> None:
    """LOG_CORRUPT for the damage of one walked segment, with what the broker would do about it."""
    seg = st.segments[i]
    if seg.base_offset in st.damage_reported or walk.clean:
        return
    st.damage_reported.add(seg.base_offset)
    recovered = not st.task.clean_shutdown and i >= first_recovered(st)
    rebuilt = not recovered and seg.index_file is None and i < len(st.segments) - 1
    later = st.segments[i + 1 :]
    dropped = truncation_effects(st, i, walk)
    lost_off = _first_lost(seg, walk)
    for k, d in enumerate(walk.damage):
        if k == 0 and rebuilt:
            consequence = (
                f". At the next start the broker recovers this segment to rebuild its missing offset index "
                f"(LogLoader.loadSegmentFiles: 'Could not find offset index file'), which truncates "
                f"{seg.log_name} to {walk.valid_bytes} bytes, losing the data from offset {lost_off} on; "
                f"until then consumers and followers reading from position {d.position} get "
                "CorruptRecordException"
            )
        elif k == 0 and recovered:
            consequence = (
                f". At the next start (no clean shutdown) the broker's recovery truncates {seg.log_name} to "
                f"{walk.valid_bytes} bytes, losing the data from offset {lost_off} on"
            )
            if later:
                consequence += (
                    f", and deletes the {len(later)} later segment(s) "
                    f"({sum(st.infos[s.base_offset].size for s in later)}"
                    " bytes) (LogLoader.recoverLog)"
                )
        elif k == 0:
            consequence = (
                ". The broker does not re-validate this segment at startup (clean shutdown or below the "
                "recovery "
                f"point): consumers and followers reading from position {d.position} get "
                "CorruptRecordException"
            )
        else:
            consequence = ""
        if d.kind == "crc" and walk.crc_errors > 1:
            consequence += f" ({walk.crc_errors} batches of this segment fail their CRC)"
        st.make(
            "LOG_CORRUPT",
            seg.log_file,
            position=d.position,
            offset=None,
            problem=d.message[0].upper() + d.message[1:],
            consequence=consequence,
            valid_bytes=walk.valid_bytes,
            dropped=dropped,
            repair=log_corrupt_repair(st),
            details={"kind": d.kind, "valid_bytes": walk.valid_bytes, "crc_errors": walk.crc_errors},
        )


def _first_lost(seg: Segment, walk: WalkResult) -> int:
    """The first offset a truncation at ``walk.valid_bytes`` loses."""
    return walk.valid_last_offset + 1 if walk.valid_last_offset is not None else seg.base_offset


def log_corrupt_repair(st: PartitionState) -> str:
    """The ``{repair}`` of a LOG_CORRUPT finding: the repair that plans from the same depth as the scan that
    found it (a CRC mismatch only ``scan --deep`` reads is invisible to a default-depth repair, which would
    say "Nothing to repair")."""
    from logdoctor.checks import catalog
    from logdoctor.checks.context import Depth

    deep = ("--deep",) if st.task.options.depth >= Depth.DEEP else ()
    return catalog.repair_hint("LOG_CORRUPT", st.task.log_dir, *deep)


def truncation_effects(st: PartitionState, i: int, walk: WalkResult) -> str:
    """What the repair's truncation of segment ``i`` at ``walk.valid_bytes`` also does, for the fix text:
    the later segments it moves to the backup (LogLoader.recoverLog deletes them after a truncation), how
    many records leave the log, from which offset. Later segments are walked (headers only, no CRC) for
    their record counts."""
    seg = st.segments[i]
    later = st.segments[i + 1 :]
    cut_records = max(0, walk.records - walk.valid_records)
    first_lost = _first_lost(seg, walk)
    walks = [st.walk(s, verify_crc=False) for s in later]
    later_records = sum(w.records for w in walks if w is not None)
    last_offset = next(
        (w.last_offset for w in reversed(walks) if w is not None and w.last_offset is not None),
        walk.last_offset,
    )
    plus = "+" if any(w is None for w in walks) else ""  # a later segment not walked: its records not counted
    later_bytes = sum(st.infos[s.base_offset].size for s in later)
    text = (
        f", and moves the {len(later)} later segment(s) ({later_bytes:,} bytes, {later_records:,}{plus} "
        "records) to the backup as the broker's recovery deletes them (LogLoader.recoverLog)"
        if later
        else ""
    )
    seen = last_offset is not None and last_offset >= first_lost
    span = f" (offsets {first_lost} to {last_offset})" if seen else ""
    return text + (
        f"; {cut_records + later_records:,}{plus} record(s) leave the log{span}, the log end becomes offset "
        f"{first_lost}, and the indexes, producer snapshots and checkpoints follow it"
    )


INT32_MAX = 2**31 - 1


def check_offsets(st: PartitionState, seg: Segment, w: WalkResult) -> None:
    """SEGMENT_BASE_OFFSET_MISMATCH: records below the base offset, or too far above it (once per segment)."""
    if seg.base_offset in st.offsets_checked:
        return
    st.offsets_checked.add(seg.base_offset)
    base = seg.base_offset
    if w.first_offset is not None and w.first_offset < base:
        st.make(
            "SEGMENT_BASE_OFFSET_MISMATCH",
            seg.log_file,
            position=0,
            offset=w.first_offset,
            base=base,
        )
    if w.last_offset is not None and w.last_offset - base > INT32_MAX:
        st.make(
            "SEGMENT_BASE_OFFSET_MISMATCH",
            seg.log_file,
            position=None,
            offset=w.last_offset,
            case="offset-overflow",
            base=base,
        )


def check_recovery(st: PartitionState) -> None:
    """Without a clean-shutdown marker, walk what LogLoader.recoverLog would walk."""
    if st.task.clean_shutdown or not st.segments:
        return
    for i in range(first_recovered(st), len(st.segments)):
        w = st.walk(st.segments[i], verify_crc=True)
        if w is not None:
            check_offsets(st, st.segments[i], w)
        if w is not None and not w.clean:
            report_damage(st, i, w)
            break  # recovery stops here: it deletes every later segment


def check_tails(st: PartitionState) -> None:
    """LOG_CORRUPT in the inactive segments no walk with CRCs has read (after a clean shutdown, or below
    the recovery point): the broker never re-reads them at startup, and a consumer or follower reading a
    torn one gets CorruptRecordException. Each is walked from its offset index's last entry to its end
    (:func:`walk_tail`: index.interval.bytes plus one batch in a healthy segment, never the whole file);
    one without an offset index whole, as the broker's start recovers it to rebuild the index (LogLoader
    loadSegmentFiles). Only a segment whose tail (or earlier walk) shows damage is then walked whole with
    CRCs, for the finding's figures (the first damage, what a truncation keeps), and its indexes are
    checked against its batches (INDEX_CORRUPT, as ``--deep``: a tail that does not walk from a clean
    log's last index entry is that entry's fault)."""
    suspect: list[int] = []
    for i, seg in enumerate(st.segments[:-1]):  # the active segment: quick.check_active
        base = seg.base_offset
        info = st.infos[base]
        if info.size == 0 or base in st.damage_reported or st.walk_crc.get(base):
            continue  # empty, or read with CRCs already
        if seg.log_file in st.unreadable:
            continue
        walked = st.walks.get(base)
        if seg.index_file is None or (walked is not None and not walked.clean):
            suspect.append(i)
        else:
            tail = walk_tail(st, seg, info)
            if tail is not None and not tail.clean:
                suspect.append(i)
    if not suspect:
        return
    # walked whole at once on the walk threads (each only reads its own .log: the same results)
    walks = st.walk_all([st.segments[i] for i in suspect], verify_crc=True, with_positions=True)
    from logdoctor.checks.index_cross_check import cross_check_indexes

    for i, w in zip(suspect, walks, strict=True):
        if w is None:
            continue
        seg = st.segments[i]
        check_offsets(st, seg, w)
        report_damage(st, i, w)
        # the indexes against the batches: a tail that did not walk from the last entry of a clean log is
        # that entry's fault (not at a batch start), and a torn log leaves entries past its end
        cross_check_indexes(st, seg, w)


def tail_start(st: PartitionState, seg: Segment, size: int) -> int:
    """Where :func:`walk_tail` starts: the position of the offset index's last entry; 0 (the whole
    segment, up to :data:`TAIL_LIMIT`) for an index without one (a segment under index.interval.bytes),
    without a readable offset index, or when the entry points outside the .log (INDEX_CORRUPT says so)."""
    slots = (seg.index_size or 0) // OFFSET_ENTRY_SIZE
    if seg.index_file is None or not slots:  # an index under one entry has no last entry
        return 0
    last = st.last_index_slot.get(seg.base_offset)
    if last is None:
        last = st.read_range(seg.index_file, (slots - 1) * OFFSET_ENTRY_SIZE, OFFSET_ENTRY_SIZE, "")
    if last is None or len(last) != OFFSET_ENTRY_SIZE:
        return 0
    pos = int.from_bytes(last[4:8], "big", signed=True)
    return pos if 0 <= pos < size else 0


def walk_tail(st: PartitionState, seg: Segment, info: SegmentInfo) -> WalkResult | None:
    """The walk with CRCs of the segment's .log from :func:`tail_start` to its end, positions and valid
    bytes relative to that start (cached in ``st.tails``); None when the tail is longer than
    :data:`TAIL_LIMIT` (an index that stops early: ``--deep`` reads the rest)."""
    base = seg.base_offset
    if base in st.tails:
        return st.tails[base]
    start = tail_start(st, seg, info.size)
    tail = None
    if info.size - start <= TAIL_LIMIT:
        data = st.read_range(seg.log_file, start, info.size - start, "the broker cannot load this segment")
        if data:
            tail = walk(data, base, verify_crc=True)
    st.tails[base] = tail
    return tail


def mark_recovered(st: PartitionState) -> None:
    """Segments LogLoader.recoverLog re-reads at the next start (no clean shutdown): their indexes,
    and so their largest timestamps, are rebuilt from the log, so a bad time index there is harmless."""
    if st.task.clean_shutdown or not st.segments:
        return
    for seg in st.segments[first_recovered(st) :]:
        st.infos[seg.base_offset].recovered = True


def walk_ahead(st: PartitionState, walk_all: bool) -> None:
    """The default scan's walks started together: the active segment's with CRCs (quick.check_active) and
    those :func:`check_retention` is certain to ask for (every inactive segment with ``walk_all``, else
    those with a .log and no .timeindex: the broker falls back to the .log's mtime, their true largest
    timestamp is needed whatever else is found), at once on every core instead of the active one alone
    first. After a clean shutdown only (otherwise check_recovery walks the recovered segments with CRCs
    first, serially, stopping at the first damage). Nothing when the active segment is the only walk
    (walked alone, its CRCs are checked in slices on every core)."""
    if not st.task.clean_shutdown or len(st.segments) < 2:
        return
    later = [s for s in st.segments[:-1] if walk_all or (s.timeindex_file is None and s.size > 0)]
    if later:
        st.walk_ahead([(st.segments[-1], True), *((s, False) for s in later)])


def check_retention(st: PartitionState, walk_all: bool) -> None:
    mark_recovered(st)
    todo: list[tuple[Segment, SegmentInfo, str | None, bool]] = []
    for i, seg in enumerate(st.segments):
        info = st.infos[seg.base_offset]
        cause = broker_largest_timestamp(st, seg, info)
        active = i == len(st.segments) - 1
        if cause is None and not walk_all and not active and not info.recovered:
            cause = stale_time_index(st, seg, info)
        todo.append((seg, info, cause, active))
    # the segments whose true largest timestamp is needed, walked at once on every core (each walk only
    # reads its own .log: the same results as one after another, findings sorted by the partition)
    need = [
        seg
        for seg, info, cause, active in todo
        if cause is not None or walk_all or (active and info.recovered)
    ]
    st.walk_all(need, verify_crc=False)
    for seg, info, cause, active in todo:
        if not active and not info.recovered:
            check_retention_risk(st, seg, info, cause)


#: read at most this much of a .log's tail (:func:`walk_tail`: its offset index's last entry to its end)
TAIL_LIMIT = 8 * 1024 * 1024


def stale_time_index(st: PartitionState, seg: Segment, info: SegmentInfo) -> str | None:
    """Is the time index's last entry older than the last batches of the log? (a truncated .timeindex)

    Reads only the log's tail from the offset index's last entry (:func:`walk_tail`, with CRCs: the same
    walk :func:`check_tails` takes after it): the batches there must not be newer than the segment's
    recorded max.
    """
    if info.broker_ts_source != "timeindex" or info.broker_largest_ts is None or info.size == 0:
        return None
    tail = walk_tail(st, seg, info)
    if tail is None or not tail.batches:
        return None
    if tail.max_timestamp > info.broker_largest_ts + RISK_TOLERANCE_MS:
        return (
            f"the last entry of {seg.timeindex_file} (timestamp {info.broker_largest_ts}) is older than the "
            f"segment's last batches (up to {tail.max_timestamp}): a truncated or stale time index"
        )
    return None

"""INDEX_CORRUPT: an index file as each Kafka era's sanity check, and its lookups, would see it.

Eras (K:core/src/main/scala/kafka/log/OffsetIndex.scala at the 0.10.1.0, 1.1.0 and 2.0.0 tags;
storage/.../OffsetIndex.java today; evaluated by :func:`logdoctor.formats.index.sanity_check`):
0.8-1.0 ``require(lastOffset > baseOffset)`` ("no larger than"), 1.1 the same as a
CorruptIndexException ("no greater than", KAFKA-6324), 2.0 on ``lastOffset < baseOffset`` only
(KAFKA-7076). Up to 2.2 Log.loadSegmentFiles ran these checks on every segment at startup and, on
failure, deleted the segment's indexes and rebuilt them; since 2.3 (KAFKA-7283) startup only checks
that the .index exists, so a bad inactive index is used as is.
"""

from __future__ import annotations

import struct

import numpy as np

from logdoctor.checks.layout import SegmentFiles
from logdoctor.checks.state import PartitionState
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    TXN_ENTRY_SIZE,
    IndexKind,
    SanityEra,
    offset_index_array,
    real_entry_count,
    sanity_check,
    sanity_check_all_eras,
    time_index_array,
)

ERA_LABEL = {SanityEra.KAFKA_0_8: "0.8-1.0", SanityEra.KAFKA_1_1: "1.1", SanityEra.KAFKA_2_0: "2.0+"}
_WHAT = {IndexKind.OFFSET: ".index", IndexKind.TIME: ".timeindex", IndexKind.TXN: ".txnindex"}


def verdict_text(kind: IndexKind, data: bytes, base_offset: int, path: str) -> tuple[str, list[SanityEra]]:
    """Which Kafka versions reject the file and what they do about it."""
    if kind is IndexKind.TXN:
        v = sanity_check(kind, data, base_offset, SanityEra.KAFKA_2_0, source=path)
        if v.passed:
            return "", []
        return (
            f"Every Kafka version from 0.11 rejects it ({v.exception}: {v.message}): the broker deletes the "
            "segment's indexes and recovers the segment at startup (LogLoader)",
            list(SanityEra),
        )
    verdicts = sanity_check_all_eras(kind, data, base_offset, source=path)
    rejecting = [era for era, v in verdicts.items() if not v.passed]
    if not rejecting:
        use = (
            "time lookups (offsetsForTimes) and time retention read its last entry as the segment's largest "
            "timestamp (KAFKA-10207)"
            if kind is IndexKind.TIME
            else "offset lookups in this segment start from wrong positions or fail"
        )
        return (
            "No Kafka version's sanity check rejects it, and since 2.3 (KAFKA-7283) startup does not check "
            f"inactive indexes at all: the broker uses it as is, so {use} (DumpLogSegments "
            "--index-sanity-check / --verify-index-only show it)",
            [],
        )
    first = verdicts[rejecting[0]]
    eras = ", ".join(ERA_LABEL[e] for e in rejecting)
    text = (
        f"Kafka {eras} reject it ({first.exception}: {first.message}): brokers up to 2.2 delete the "
        "segment's .index/.timeindex and rebuild them from the .log at startup (Log.loadSegmentFiles: "
        "'Found a corrupted index file ... rebuilding index'); 2.3+ check it only during recovery "
        "and in DumpLogSegments"
    )
    accepting = [e for e in SanityEra if e not in rejecting]
    if accepting:
        text += (
            f"; Kafka {', '.join(ERA_LABEL[e] for e in accepting)} accept it (KAFKA-7076) and keep using it"
        )
    return text, rejecting


def _report(
    st: PartitionState,
    seg: SegmentFiles,
    path: str,
    kind: IndexKind,
    data: bytes,
    problem: str,
    position: int | None,
    offset: int | None = None,
) -> None:
    verdict, rejecting = verdict_text(kind, data, seg.base_offset, path)
    st.make(
        "INDEX_CORRUPT",
        path,
        position=position,
        offset=offset,
        problem=problem,
        verdict=verdict,
        segment=seg.log_path,
        details={"index": _WHAT[kind], "rejected_by": [ERA_LABEL[e] for e in rejecting]},
    )


#: indexes up to this many entries are first checked in plain Python (numpy's per-call cost dominates there)
_SMALL = 32


def _small_offset_index_ok(data: bytes, base: int, log_size: int, next_base: int | None) -> bool:
    """True when a small, trimmed .index passes every check below (the common case, without numpy)."""
    n = len(data)
    if n == 0:
        return True
    if n % OFFSET_ENTRY_SIZE or n > _SMALL * OFFSET_ENTRY_SIZE:
        return False
    ents = list(struct.iter_unpack(">ii", data))
    prev_rel, prev_pos = 0, -1
    for rel, pos in ents:
        if rel <= prev_rel or pos <= prev_pos or pos >= log_size:
            return False
        prev_rel, prev_pos = rel, pos
    return next_base is None or base + prev_rel < next_base


def _small_time_index_ok(data: bytes, base: int, next_base: int | None) -> bool:
    n = len(data)
    if n == 0:
        return True
    if n % TIME_ENTRY_SIZE or n > _SMALL * TIME_ENTRY_SIZE:
        return False
    ents = list(struct.iter_unpack(">qi", data))
    if ents[0] == (0, 0):
        return False
    prev_ts, prev_rel = ents[0]
    if prev_rel < 0:
        return False
    for ts, rel in ents[1:]:
        if rel <= 0 or ts < prev_ts or rel < prev_rel:  # rel 0 after slot 0 is a zero slot
            return False
        prev_ts, prev_rel = ts, rel
    return next_base is None or base + prev_rel < next_base


def analyze_offset_index(
    st: PartitionState, seg: SegmentFiles, path: str, data: bytes, log_size: int, next_base: int | None
) -> tuple[int, int]:
    """Full checks of one ``.index``; returns (slots, real entries)."""
    base = seg.base_offset
    n = len(data)
    if _small_offset_index_ok(data, base, log_size, next_base):
        return n // OFFSET_ENTRY_SIZE, n // OFFSET_ENTRY_SIZE
    slots = n // OFFSET_ENTRY_SIZE
    real = real_entry_count(data, OFFSET_ENTRY_SIZE)
    inactive = not st.is_active(seg)
    if n % OFFSET_ENTRY_SIZE:
        _report(
            st,
            seg,
            path,
            IndexKind.OFFSET,
            data,
            f"{path} is {n} bytes, not a multiple of the {OFFSET_ENTRY_SIZE}-byte entry size",
            n - n % OFFSET_ENTRY_SIZE,
        )
        return slots, real
    if slots > real:
        tail = np.frombuffer(data, np.uint8, offset=real * OFFSET_ENTRY_SIZE)
        if tail.any():
            _report(
                st,
                seg,
                path,
                IndexKind.OFFSET,
                data,
                f"slot {real} of {path} is a zero entry (offset = base offset {base}) but non-zero "
                "entries follow it: the entries go backwards",
                real * OFFSET_ENTRY_SIZE,
                base,
            )
            return slots, real
        if inactive:
            st.rep.untrimmed_inactive_indexes += 1
            _report(
                st,
                seg,
                path,
                IndexKind.OFFSET,
                data,
                f"{path} belongs to an inactive segment but is untrimmed: {slots - real} zero-filled slots "
                f"follow its {real} real entries (the broker trims an index when its segment rolls; this "
                f"one was left preallocated by an unclean shutdown), so the broker reads its last offset "
                f"as {base}, equal to the base offset",
                real * OFFSET_ENTRY_SIZE,
                base,
            )
            return slots, real
    if real == 0:
        return slots, real
    arr = offset_index_array(data[: real * OFFSET_ENTRY_SIZE])
    rel = arr["relative_offset"].astype(np.int64)
    pos = arr["position"].astype(np.int64)
    bad = np.flatnonzero(rel <= 0)
    if bad.size:
        i = int(bad[0])
        _report(
            st,
            seg,
            path,
            IndexKind.OFFSET,
            data,
            f"entry {i} of {path} has offset {base + int(rel[i])}, not above the base offset {base}",
            i * OFFSET_ENTRY_SIZE,
            base + int(rel[i]),
        )
        return slots, real
    back = np.flatnonzero((np.diff(rel) <= 0) | (np.diff(pos) <= 0))
    if back.size:
        i = int(back[0]) + 1
        _report(
            st,
            seg,
            path,
            IndexKind.OFFSET,
            data,
            f"entries of {path} go backwards: entry {i} (offset {base + int(rel[i])}, position "
            f"{int(pos[i])}) "
            f"does not follow entry {i - 1} (offset {base + int(rel[i - 1])}, position {int(pos[i - 1])})",
            i * OFFSET_ENTRY_SIZE,
            base + int(rel[i]),
        )
        return slots, real
    past = np.flatnonzero((pos < 0) | (pos >= log_size))
    if past.size:
        i = int(past[0])
        _report(
            st,
            seg,
            path,
            IndexKind.OFFSET,
            data,
            f"entry {i} of {path} points past the log: position {int(pos[i])} for offset "
            f"{base + int(rel[i])}, "
            f"but {seg.log_name} is {log_size} bytes",
            i * OFFSET_ENTRY_SIZE,
            base + int(rel[i]),
        )
        return slots, real
    if next_base is not None:
        beyond = np.flatnonzero(base + rel >= next_base)
        if beyond.size:
            i = int(beyond[0])
            _report(
                st,
                seg,
                path,
                IndexKind.OFFSET,
                data,
                f"entry {i} of {path} points past the log: offset {base + int(rel[i])} belongs to the next "
                f"segment (base offset {next_base})",
                i * OFFSET_ENTRY_SIZE,
                base + int(rel[i]),
            )
            return slots, real
    # every condition a sanity check of any era tests (size, last offset vs base) is covered above
    return slots, real


def analyze_time_index(
    st: PartitionState, seg: SegmentFiles, path: str, data: bytes, next_base: int | None
) -> tuple[int, int]:
    """Full checks of one ``.timeindex``; returns (slots, real entries)."""
    base = seg.base_offset
    n = len(data)
    if _small_time_index_ok(data, base, next_base):
        return n // TIME_ENTRY_SIZE, n // TIME_ENTRY_SIZE
    slots = n // TIME_ENTRY_SIZE
    real = real_entry_count(data, TIME_ENTRY_SIZE)
    inactive = not st.is_active(seg)
    if n % TIME_ENTRY_SIZE:
        _report(
            st,
            seg,
            path,
            IndexKind.TIME,
            data,
            f"{path} is {n} bytes, not a multiple of the {TIME_ENTRY_SIZE}-byte entry size",
            n - n % TIME_ENTRY_SIZE,
        )
        return slots, real
    if slots > real:
        tail = np.frombuffer(data, np.uint8, offset=real * TIME_ENTRY_SIZE)
        if tail.any():
            _report(
                st,
                seg,
                path,
                IndexKind.TIME,
                data,
                f"slot {real} of {path} is a zero entry but non-zero entries follow it: the entries go "
                "backwards",
                real * TIME_ENTRY_SIZE,
                base,
            )
            return slots, real
        if inactive:
            st.rep.untrimmed_inactive_indexes += 1
            _report(
                st,
                seg,
                path,
                IndexKind.TIME,
                data,
                f"{path} belongs to an inactive segment but is untrimmed or zeroed: {slots - real} "
                "zero-filled "
                f"slots follow its {real} real entries, so the broker reads its last entry as timestamp 0 "
                f"at offset {base}",
                real * TIME_ENTRY_SIZE,
                base,
            )
            return slots, real
    if real == 0:
        return slots, real
    arr = time_index_array(data[: real * TIME_ENTRY_SIZE])
    ts = arr["timestamp"].astype(np.int64)
    rel = arr["relative_offset"].astype(np.int64)
    bad = np.flatnonzero(rel < 0)
    if bad.size:
        i = int(bad[0])
        _report(
            st,
            seg,
            path,
            IndexKind.TIME,
            data,
            f"entry {i} of {path} has offset {base + int(rel[i])}, below the base offset {base}",
            i * TIME_ENTRY_SIZE,
            base + int(rel[i]),
        )
        return slots, real
    back = np.flatnonzero((np.diff(ts) < 0) | (np.diff(rel) < 0))
    if back.size:
        i = int(back[0]) + 1
        _report(
            st,
            seg,
            path,
            IndexKind.TIME,
            data,
            f"entries of {path} go backwards: entry {i} (timestamp {int(ts[i])}, offset "
            f"{base + int(rel[i])}) "
            f"does not follow entry {i - 1} (timestamp {int(ts[i - 1])}, offset {base + int(rel[i - 1])})",
            i * TIME_ENTRY_SIZE,
            base + int(rel[i]),
        )
        return slots, real
    if next_base is not None:
        beyond = np.flatnonzero(base + rel >= next_base)
        if beyond.size:
            i = int(beyond[0])
            _report(
                st,
                seg,
                path,
                IndexKind.TIME,
                data,
                f"entry {i} of {path} points past the log: offset {base + int(rel[i])} belongs to the next "
                f"segment (base offset {next_base})",
                i * TIME_ENTRY_SIZE,
                base + int(rel[i]),
            )
            return slots, real
    # the sanity checks (size, last timestamp vs first, last offset vs base) are covered above
    return slots, real


def analyze_txn_index(st: PartitionState, seg: SegmentFiles, path: str, data: bytes) -> None:
    n = len(data)
    if n % TXN_ENTRY_SIZE:
        _report(
            st,
            seg,
            path,
            IndexKind.TXN,
            data,
            f"{path} is {n} bytes, not a multiple of the {TXN_ENTRY_SIZE}-byte entry size (the broker "
            "ignores the partial last entry)",
            n - n % TXN_ENTRY_SIZE,
        )
        return
    _verdict, rejecting = verdict_text(IndexKind.TXN, data, seg.base_offset, path)
    if rejecting:
        _report(st, seg, path, IndexKind.TXN, data, f"{path} fails TransactionIndex.sanityCheck", None)


def tail_check(st: PartitionState, seg: SegmentFiles, kind: IndexKind, path: str, size: int) -> bool:
    """--quick: look only at an index's size and its first/last slots. True when it needs a full read.

    The time index's last slot is kept in ``st.last_time_slot`` for the retention check.
    """
    entry = OFFSET_ENTRY_SIZE if kind is IndexKind.OFFSET else TIME_ENTRY_SIZE
    if size % entry:
        return True
    slots = size // entry
    if slots == 0:
        return False
    what = "the broker cannot open this index"
    if kind is IndexKind.OFFSET:
        got = st.read_ranges(path, (((slots - 1) * entry, entry),), what)
        if got is None or len(got[0]) < entry:
            return False
        return int.from_bytes(got[0][0:4], "big", signed=True) <= 0  # <= 0: rejected by 0.8-1.1, < 0 by all
    ranges = ((0, entry), ((slots - 1) * entry, entry)) if slots > 1 else (((slots - 1) * entry, entry),)
    got = st.read_ranges(path, ranges, what)
    if got is None or any(len(b) < entry for b in got):
        return False
    first, last = got[0], got[-1]
    st.last_time_slot[seg.base_offset] = last
    last_ts = int.from_bytes(last[0:8], "big", signed=True)
    first_ts = int.from_bytes(first[0:8], "big", signed=True)
    rel = int.from_bytes(last[8:12], "big", signed=True)
    return last_ts < first_ts or rel < 0 or (last_ts == 0 and not st.is_active(seg))

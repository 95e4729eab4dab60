"""INDEX_CORRUPT: an index file as each Kafka era's sanity check, and its lookups, would see it.

Eras (K:core/src/main/scala/kafka/log/OffsetIndex.scala at the 0.10.1.0, 1.1.0 and 2.0.0 tags;
storage/.../OffsetIndex.java today; evaluated by :func:`logdoctor.formats.index.sanity_check`):
0.8-1.0 ``require(lastOffset > baseOffset)`` ("no larger than"), 1.1 the same as a
CorruptIndexException ("no greater than", KAFKA-6324), 2.0 on ``lastOffset < baseOffset`` only
(KAFKA-7076). Up to 2.2 Log.loadSegmentFiles ran these checks on every segment at startup and, on
failure, deleted the segment's indexes and rebuilt them; since 2.3 (KAFKA-7283) startup only checks
that the .index exists, so a bad inactive index is used as is, unless its segment is recovered at that start:
after an unclean shutdown LogLoader.recoverLog recovers the segment holding the recovery point and every
later one (K:storage/.../log/LogLoader.java recoverLog, LogSegments.values from the floor segment), and
LogSegment.recover resets the segment's indexes and rebuilds them from the .log whatever they held
(:func:`recovered_at_next_start`; tests/brokers/test_broker_corrupt_index.py has a 4.4 broker show both).

INDEX_PREALLOCATED_UNCLEAN: the active segment's preallocated index after an unclean shutdown, which the
brokers that check indexes at load (up to 2.2) reject and rebuild, logging field report 000's warning
(:func:`report_preallocated_unclean`; tests/brokers/test_broker_era_index.py runs 1.0.2 and 2.2.2).
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logdoctor.checks.preallocated_index import METADATA_LOG_FOLDER, Tail, classify_tail
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.timestamps import topic_config
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    TXN_ENTRY_SIZE,
    IndexKind,
    SanityEra,
    SanityVerdict,
    columns,
    offset_index_array,
    real_entry_count,
    sanity_check,
    sanity_check_all_eras,
    time_index_array,
)
from logdoctor.formats.lazy_numpy import np
from logdoctor.formats.native import speedups
from logdoctor.logdir.model import Segment
from logdoctor.logdir.names import PARTITION_METADATA_FILE

ERA_LABEL = {SanityEra.KAFKA_0_8: "0.8-1.0", SanityEra.KAFKA_1_1: "1.1", SanityEra.KAFKA_2_0: "2.0+"}
_WHAT = {IndexKind.OFFSET: ".index", IndexKind.TIME: ".timeindex", IndexKind.TXN: ".txnindex"}
ENTRY_SIZE = {
    IndexKind.OFFSET: OFFSET_ENTRY_SIZE,
    IndexKind.TIME: TIME_ENTRY_SIZE,
    IndexKind.TXN: TXN_ENTRY_SIZE,
}


def first_recovered(st: PartitionState) -> int:
    """Index of the first segment LogLoader.recoverLog re-reads: the one holding the recovery point
    (``LogSegments.values(recoveryPoint, ...)`` starts at the floor segment; no checkpoint entry is
    recovery point 0, every segment)."""
    rp = st.task.recovery_point or 0
    return max((i for i, s in enumerate(st.segments) if s.base_offset <= rp), default=0)


def recovered_at_next_start(st: PartitionState, seg: Segment) -> bool:
    """Whether the broker's next start recovers ``seg``, rebuilding its indexes from the .log whatever they
    hold: no clean-shutdown marker, and ``seg`` is the segment holding the partition's recovery point or a
    later one (:func:`first_recovered`). Not said of a running broker's dir (``live``): its next start
    follows a stop that may be clean."""
    if st.task.clean_shutdown or st.task.live or not st.segments:
        return False
    return seg.base_offset >= st.segments[first_recovered(st)].base_offset


def _recovery_clause(recovery_point: int | None, base_offset: int) -> str:
    where = (
        f"holds or follows the partition's recovery point ({recovery_point})"
        if recovery_point is not None
        else "has no recovery point entry, so recovery starts at its first segment"
    )
    return (
        f"the log dir had no clean shutdown and this segment {where}: at the next start the broker "
        f"recovers it (LogLoader.recoverLog: 'Recovering unflushed segment {base_offset}'), and "
        "LogSegment.recover rebuilds its .index and .timeindex from the .log whatever they hold: the broker "
        "does not use this file as it is"
    )


def verdict_text(
    kind: IndexKind,
    data: bytes,
    base_offset: int,
    path: str,
    *,
    recovered: bool = False,
    recovery_point: int | None = None,
) -> tuple[str, list[SanityEra]]:
    """Which Kafka versions reject the file and what they do about it; ``recovered``: the segment is
    recovered at the broker's next start (:func:`recovered_at_next_start`, ``recovery_point`` the
    partition's), which rebuilds the file whatever it holds."""
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
    first = verdicts[rejecting[0]] if rejecting else None
    eras = ", ".join(ERA_LABEL[e] for e in rejecting)
    if recovered:
        clause = _recovery_clause(recovery_point, base_offset)
        if first is None:
            return f"No Kafka version's sanity check rejects it, but {clause}", []
        return (
            f"Kafka {eras} reject it ({first.exception}: {first.message}); whatever the version, {clause}",
            rejecting,
        )
    if first is None:
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
    text = (
        f"Kafka {eras} reject it ({first.exception}: {first.message}): brokers up to 2.2 delete the "
        "segment's .index/.timeindex and rebuild them from the .log at startup (Log.loadSegmentFiles: "
        "'Found a corrupted index file ... rebuilding index'); 2.3+ do not check it at startup (KAFKA-7283) "
        "and use it as is, rebuilding it only when they recover its segment (after an unclean shutdown, "
        "from the recovery point on); DumpLogSegments --index-sanity-check "
        "rejects it"
    )
    accepting = [e for e in SanityEra if e not in rejecting]
    if accepting:
        text += (
            f"; Kafka {', '.join(ERA_LABEL[e] for e in accepting)} accept it (KAFKA-7076) and keep using it"
        )
    return text, rejecting


def report_corrupt(
    st: PartitionState,
    seg: Segment,
    path: str,
    kind: IndexKind,
    data: bytes,
    problem: str,
    position: int | None,
    offset: int | None = None,
    extra: dict[str, Any] | None = None,
    repair: Any = None,
) -> None:
    """One INDEX_CORRUPT finding, with which Kafka eras reject the file (``repair``: the ``{repair}`` of
    its fix, when the default-depth repair would not see it)."""
    verdict, rejecting = verdict_text(
        kind,
        data,
        seg.base_offset,
        path,
        recovered=recovered_at_next_start(st, seg),
        recovery_point=st.task.recovery_point,
    )
    st.make(
        "INDEX_CORRUPT",
        path,
        position=position,
        offset=offset,
        problem=problem,
        verdict=verdict,
        segment=seg.log_file,
        details={"index": _WHAT[kind], "rejected_by": [ERA_LABEL[e] for e in rejecting], **(extra or {})},
        **({} if repair is None else {"repair": repair}),
    )


#: the brokers that check every segment's indexes when they load a log, by sanity-check era: up to 2.2
#: (K:core/src/main/scala/kafka/log/Log.scala loadSegmentFiles; since 2.3, KAFKA-7283, none)
LOAD_CHECK_LABEL = {**ERA_LABEL, SanityEra.KAFKA_2_0: "2.0-2.2"}


def rejected_at_load(st: PartitionState, seg: Segment, kind: IndexKind, data: bytes) -> list[SanityVerdict]:
    """The verdicts of the eras whose load rejects this index of ``seg`` as a broker of that era logs
    them (the path absolute, as ``getAbsolutePath``). In the order a broker checks them: the ``.index``
    first, the ``.timeindex`` only when the ``.index`` passed (1.0.2 Log.loadSegmentFiles,
    LogSegment.sanityCheck 1.1-2.2), so a ``.timeindex`` is named only by the eras whose ``.index`` check
    passes (its last slot is in ``st.last_index_slot`` by then: :func:`~logdoctor.checks.default.
    check_segment_indexes` checks the ``.index`` first)."""
    path = seg.index_file if kind is IndexKind.OFFSET else seg.timeindex_file
    verdicts = sanity_check_all_eras(kind, data, seg.base_offset, source=os.path.abspath(str(path)))
    rejecting = [v for v in verdicts.values() if not v.passed]
    if kind is IndexKind.TIME and rejecting:
        last = st.last_index_slot.get(seg.base_offset)
        size = seg.index_size or 0
        if seg.index_file is None or last is None or size % OFFSET_ENTRY_SIZE:
            return []  # no .index, or one the broker cannot use: it rebuilds both without this check
        rejecting = [
            v for v in rejecting if sanity_check(IndexKind.OFFSET, last, seg.base_offset, v.era).passed
        ]
    return rejecting


def _broker_words(seg: Segment, v: SanityVerdict) -> str:
    """What a broker of ``v``'s era logs when its load rejects the index (Log.loadSegmentFiles)."""
    if v.era is SanityEra.KAFKA_0_8:
        return f"Found a corrupted index file due to {v.message}"
    log = os.path.abspath(str(seg.log_file))
    return f"Found a corrupted index file corresponding to log file {log} due to {v.message}"


def report_preallocated_unclean(
    st: PartitionState, seg: Segment, kind: IndexKind, path: str, data: bytes, real: int, slots: int
) -> None:
    """INDEX_PREALLOCATED_UNCLEAN: the active segment's preallocated index after an unclean shutdown, for
    the brokers whose load rejects it (up to 2.2); said of a log dir such a broker could have written:
    not a running broker's, not the KRaft metadata log, and no ``partition.metadata`` (topic ids, which
    brokers write from 2.8)."""
    if st.task.clean_shutdown or st.task.live or kind is IndexKind.TXN:
        return
    if st.task.name == METADATA_LOG_FOLDER or any(
        e.name == PARTITION_METADATA_FILE for e in st.partition.entries
    ):
        return
    rejecting = rejected_at_load(st, seg, kind, data)
    if not rejecting:
        return
    labels = [LOAD_CHECK_LABEL[v.era] for v in rejecting]
    said = [_broker_words(seg, v) for v in rejecting]
    st.make(
        "INDEX_PREALLOCATED_UNCLEAN",
        path,
        position=real * ENTRY_SIZE[kind],
        offset=seg.base_offset,
        index=_WHAT[kind],
        zeros=slots - real,
        real=real,
        eras=", ".join(labels),
        words="({})".format(
            "; ".join(f"{label}: '{words}'" for label, words in zip(labels, said, strict=True))
        ),
        details={"index": _WHAT[kind], "rejected_by": labels, "broker_log": said},
    )


class Entries:
    """The real entries of one ``.index`` or ``.timeindex`` as int64 columns, with what the checks
    of :data:`_SPECS` compare them with. ``offsets`` is ``base + rel`` in numpy (int64);
    :meth:`offset` is the same for one entry as a Python int (what the findings quote)."""

    __slots__ = (
        "base",
        "log_name",
        "log_size",
        "next_base",
        "offsets",
        "path",
        "positions",
        "rel",
        "timestamps",
    )

    def __init__(
        self,
        kind: IndexKind,
        data: bytes,
        base: int,
        *,
        path: str = "",
        log_name: str = "",
        log_size: int = 0,
        next_base: int | None = None,
    ) -> None:
        spec = _SPECS[kind]
        arr = spec.array(data[: real_entry_count(data, spec.entry_size) * spec.entry_size])
        self.base = base
        self.rel = arr["relative_offset"].astype(np.int64)
        self.offsets = base + self.rel
        self.positions = arr["position"].astype(np.int64) if kind is IndexKind.OFFSET else None
        self.timestamps = arr["timestamp"].astype(np.int64) if kind is IndexKind.TIME else None
        self.path = path
        self.log_name = log_name
        self.log_size = log_size
        self.next_base = next_base

    def offset(self, i: int) -> int:
        return self.base + int(self.rel[i])


def _after_previous(bad_step: np.ndarray) -> np.ndarray:
    """A mask over entries from a mask over steps (entry i to i+1): entry i+1 is bad when step i is."""
    return np.concatenate(([False], bad_step))


# One check of the real entries: (mask of the bad entries, or None when it does not apply; the
# problem for the first bad entry i). The first check that finds a bad entry is reported, alone.
_EntryCheck = tuple[Callable[[Entries], "np.ndarray | None"], Callable[[Entries, int], str]]

_NEXT_SEGMENT: _EntryCheck = (
    lambda e: None if e.next_base is None else e.offsets >= e.next_base,
    lambda e, i: (
        f"entry {i} of {e.path} points past the log: offset {e.offset(i)} belongs to the next "
        f"segment (base offset {e.next_base})"
    ),
)

_OFFSET_CHECKS: tuple[_EntryCheck, ...] = (
    (
        lambda e: e.rel <= 0,
        lambda e, i: f"entry {i} of {e.path} has offset {e.offset(i)}, not above the base offset {e.base}",
    ),
    (
        lambda e: _after_previous((np.diff(e.rel) <= 0) | (np.diff(e.positions) <= 0)),
        lambda e, i: (
            f"entries of {e.path} go backwards: entry {i} (offset {e.offset(i)}, position "
            f"{int(e.positions[i])}) does not follow entry {i - 1} (offset {e.offset(i - 1)}, position "
            f"{int(e.positions[i - 1])})"
        ),
    ),
    (
        lambda e: (e.positions < 0) | (e.positions >= e.log_size),
        lambda e, i: (
            f"entry {i} of {e.path} points past the log: position {int(e.positions[i])} for offset "
            f"{e.offset(i)}, but {e.log_name} is {e.log_size} bytes"
        ),
    ),
    _NEXT_SEGMENT,
)  # with the zero-slot checks, every condition a sanity check of any era tests (size, last offset vs base)

_TIME_CHECKS: tuple[_EntryCheck, ...] = (
    (
        lambda e: e.rel < 0,
        lambda e, i: f"entry {i} of {e.path} has offset {e.offset(i)}, below the base offset {e.base}",
    ),
    (
        # timestamps compared, not subtracted: np.diff of int64 wraps (2**63 - 1 after -2**63 is a step up)
        lambda e: _after_previous((e.timestamps[1:] < e.timestamps[:-1]) | (np.diff(e.rel) < 0)),
        lambda e, i: (
            f"entries of {e.path} go backwards: entry {i} (timestamp {int(e.timestamps[i])}, offset "
            f"{e.offset(i)}) does not follow entry {i - 1} (timestamp {int(e.timestamps[i - 1])}, offset "
            f"{e.offset(i - 1)})"
        ),
    ),
    _NEXT_SEGMENT,
)  # with the zero-slot checks: the sanity checks (size, last timestamp vs first, last offset vs base)


#: indexes up to this many entries are cross-checked in plain Python by checks.deep (numpy's per-call
#: cost dominates there)
_SMALL = 32


def _offset_entries_ok(
    cols: tuple[tuple[int, ...], ...], base: int, log_size: int, next_base: int | None
) -> bool:
    """Every check of :data:`_OFFSET_CHECKS` passes on these entries (none of them a zero slot):
    offsets above the base and rising, positions rising, inside the log, below the next segment."""
    rel, pos = cols
    return (
        rel[0] > 0
        and pos[0] >= 0
        and pos[-1] < log_size
        and all(map(operator.lt, rel, rel[1:]))
        and all(map(operator.lt, pos, pos[1:]))
        and (next_base is None or base + rel[-1] < next_base)
    )


def _time_entries_ok(
    cols: tuple[tuple[int, ...], ...], base: int, _log_size: int, next_base: int | None
) -> bool:
    """Every check of :data:`_TIME_CHECKS` passes and no slot is a zero slot: slot 0 not all zero, its
    offset not below the base, every later offset above it (0 after slot 0 is a zero slot), timestamps
    and offsets never going back, the last offset below the next segment."""
    ts, rel = cols
    return (
        (ts[0], rel[0]) != (0, 0)
        and rel[0] >= 0
        and (len(rel) == 1 or rel[1] > 0)
        and all(map(operator.le, ts, ts[1:]))
        and all(map(operator.le, rel, rel[1:]))
        and (next_base is None or base + rel[-1] < next_base)
    )


@dataclass(frozen=True, slots=True)
class _IndexSpec:
    """What differs between the checks of a ``.index`` and a ``.timeindex``."""

    entry_size: int
    array: Callable[[bytes], np.ndarray]
    fields: tuple[tuple[str, int], ...]  # each field's struct code and width, in entry order
    entries_ok: Callable[[tuple[tuple[int, ...], ...], int, int, int | None], bool]
    zero_slot: str  # problem templates ({path}, {real}, {zeros}, {base})
    untrimmed: str
    checks: tuple[_EntryCheck, ...]


_SPECS: dict[IndexKind, _IndexSpec] = {
    IndexKind.OFFSET: _IndexSpec(
        OFFSET_ENTRY_SIZE,
        offset_index_array,
        (("i", 4), ("i", 4)),
        _offset_entries_ok,
        "slot {real} of {path} is a zero entry (offset = base offset {base}) but non-zero entries follow it: "
        "the entries go backwards",
        "{path} belongs to an inactive segment but is untrimmed: {zeros} zero-filled slots follow its "
        "{real} real entries (the broker trims an index when its segment rolls; this one was left "
        "preallocated by an unclean shutdown), so the broker reads its last offset as {base}, equal to the "
        "base offset",
        _OFFSET_CHECKS,
    ),
    IndexKind.TIME: _IndexSpec(
        TIME_ENTRY_SIZE,
        time_index_array,
        (("q", 8), ("i", 4)),
        _time_entries_ok,
        "slot {real} of {path} is a zero entry but non-zero entries follow it: the entries go backwards",
        "{path} belongs to an inactive segment but is untrimmed or zeroed: {zeros} zero-filled slots follow "
        "its {real} real entries, so the broker reads its last entry as timestamp 0 at offset {base}",
        _TIME_CHECKS,
    ),
}


def whole_index_ok(kind: IndexKind, data: bytes, base: int, log_size: int, next_base: int | None) -> bool:
    """True when an index of whole entries, every slot a real one, passes every check of
    :func:`analyze_index` (the common case: a broker's or a rebuilt index), at any size and without
    numpy: its fields are split into columns of Python ints (:func:`logdoctor.formats.index.columns`)
    and compared pairwise in C loops (``map``), ~5 ms for 65,000 entries where importing numpy costs
    ~50 ms; used for small indexes, and for big ones when the C extension is absent (with it,
    :func:`first_bad_entry` checks them in C). False sends it to the full checks, which find and word what
    is wrong."""
    spec = _SPECS[kind]
    n = len(data)
    if n == 0:
        return True
    if n % spec.entry_size:
        return False
    return spec.entries_ok(columns(data, spec.fields), base, log_size, next_base)


#: entries a process checks with :func:`whole_index_ok` before the numpy checks pay for numpy's import
#: (~50 ms): ~50-80 ns an entry in plain Python, ~2-3 ns with numpy once imported; a `repair` of 1 GiB checks
#: ~100,000, a scan of a fleet of big segments many millions
PLAIN_ENTRIES = 1_000_000
#: with numpy imported already (a --deep scan), an index of more entries than this goes to it directly
PLAIN_ENTRIES_WITH_NUMPY = 4096
_plain_left = PLAIN_ENTRIES


def _plain_pays(entries: int) -> bool:
    """Whether checking an index of ``entries`` in plain Python costs less than numpy's way, counting its
    import: within the process's :data:`PLAIN_ENTRIES` (taken from as it goes), or small. Either way the
    result of :func:`analyze_index` is the same (tests/checks/test_whole_index_ok.py)."""
    global _plain_left
    if entries <= _SMALL:
        return True
    if "numpy" in sys.modules and entries > PLAIN_ENTRIES_WITH_NUMPY:
        return False
    if entries > _plain_left:
        return False
    _plain_left -= entries
    return True


def _size_problem(path: str, n: int, entry_size: int) -> str:
    return f"{path} is {n} bytes, not a multiple of the {entry_size}-byte entry size"


def analyze_index(
    st: PartitionState,
    seg: Segment,
    kind: IndexKind,
    path: str,
    data: bytes,
    log_size: int,
    next_base: int | None,
) -> tuple[int, int]:
    """Full checks of one ``.index`` or ``.timeindex``; returns (slots, real entries)."""
    spec = _SPECS[kind]
    size = spec.entry_size
    base = seg.base_offset
    n = len(data)
    # a good index passes in one pass: small ones in plain Python; big ones in C (real_entry_count and
    # first_bad_entry below), or without the extension in plain Python while that pays (_plain_pays)
    plain = n <= _SMALL * size or (speedups is None and _plain_pays(n // size))
    if plain and whole_index_ok(kind, data, base, log_size, next_base):
        return n // size, n // size
    slots = n // size
    real = real_entry_count(data, size)
    if n % size:
        report_corrupt(st, seg, path, kind, data, _size_problem(path, n, size), n - n % size)
        return slots, real
    # the zero slots after the real entries: one rule with dump's (checks.preallocated_index): the active
    # segment's preallocated working copy is judged by its entries, an inactive one's is untrimmed
    tail = classify_tail(data, size, active=st.is_active(seg), real=real)
    if tail is not Tail.NONE:
        zeros = {"path": path, "real": real, "zeros": slots - real, "base": base}
        if tail is Tail.GARBAGE:  # a non-zero byte after the real entries
            report_corrupt(st, seg, path, kind, data, spec.zero_slot.format(**zeros), real * size, base)
            return slots, real
        if tail is Tail.PREALLOCATED:
            report_preallocated_unclean(st, seg, kind, path, data, real, slots)
        if tail is Tail.UNTRIMMED:
            st.rep.untrimmed_inactive_indexes += 1
            problem = spec.untrimmed.format(**zeros)
            extra: dict[str, Any] = {"zero_tail": True, "problem": problem}
            if kind is IndexKind.TIME:
                # its main consequence, time retention deleting the segment early, is RETENTION_RISK's:
                # when that applies, timestamps.check_retention_risk reports both as one finding
                cfg = topic_config(st)
                if not cfg.time_retention:
                    problem += f" (time retention does not apply to this topic: {cfg.describe()})"
            report_corrupt(st, seg, path, kind, data, problem, real * size, base, extra)
            return slots, real
    if real == 0:
        return slots, real
    found = first_bad_entry(kind, data, real, base, log_size, next_base)
    if found is not None:
        check, i = found
        entries = Entries(
            kind, data, base, path=path, log_name=seg.log_name, log_size=log_size, next_base=next_base
        )
        problem = spec.checks[check][1](entries, i)
        report_corrupt(st, seg, path, kind, data, problem, i * size, entries.offset(i))
    return slots, real


#: the C checks (``_speedups.index_*``) take offsets up to this: base + a relative offset stays in int64
C_OFFSET_MAX = 1 << 62


def first_bad_entry(
    kind: IndexKind, data: bytes, real: int, base: int, log_size: int, next_base: int | None
) -> tuple[int, int] | None:
    """The first of the kind's entry checks (:data:`_OFFSET_CHECKS`, :data:`_TIME_CHECKS`) that finds a
    bad one among the ``real`` first entries, and that entry: (check, entry); None when all pass. In C
    over the whole buffer when the extension is there and the offsets fit (``_speedups.index_entry_checks``);
    else the numpy masks of the checks, which the C twin is tested against (tests/checks/test_index_c.py)."""
    spec = _SPECS[kind]
    if (
        speedups is not None
        and 0 <= base <= C_OFFSET_MAX
        and 0 <= log_size <= C_OFFSET_MAX
        and (next_base is None or 0 <= next_base <= C_OFFSET_MAX)
    ):
        got = speedups.index_entry_checks(
            data, spec.entry_size, real, base, log_size, next_base is not None, next_base or 0
        )
        return None if got is None else (int(got[0]), int(got[1]))
    entries = Entries(kind, data, base, log_size=log_size, next_base=next_base)
    for check, (find, _problem) in enumerate(spec.checks):
        bad = find(entries)
        if bad is not None and bad.any():
            return check, int(np.argmax(bad))
    return None


def analyze_txn_index(st: PartitionState, seg: Segment, path: str, data: bytes) -> None:
    n = len(data)
    if n % TXN_ENTRY_SIZE:
        problem = _size_problem(path, n, TXN_ENTRY_SIZE) + " (the broker ignores the partial last entry)"
        report_corrupt(st, seg, path, IndexKind.TXN, data, problem, n - n % TXN_ENTRY_SIZE)
        return
    _verdict, rejecting = verdict_text(IndexKind.TXN, data, seg.base_offset, path)
    if rejecting:
        report_corrupt(st, seg, path, IndexKind.TXN, data, f"{path} fails TransactionIndex.sanityCheck", None)


def tail_check(st: PartitionState, seg: Segment, kind: IndexKind, path: str, size: int) -> bool:
    """--quick: look only at an index's size and its first/last slots. True when it needs a full read.

    The time index's last slot is kept in ``st.last_time_slot`` for the retention check.
    """
    entry = ENTRY_SIZE[kind]
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

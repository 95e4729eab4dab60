"""Where the log cleaner stands on a compacted partition (issue 46), by Kafka's own rules.

The cleaner's choice (K:storage/.../internals/log/LogCleanerManager.java ``grabFilthiestCompactedLog``,
``cleanableOffsets``, ``calculateCleanableBytes``, ``maxCompactionDelay``; LogToClean.java):

- the first dirty offset is the ``cleaner-offset-checkpoint`` entry, or the log start offset when there is
  none, or when the entry is below the log start or past the log end (the cleaner then resets it and
  rewrites the checkpoint: ``forceUpdateCheckpoint``);
- the first uncleanable offset is the lowest of the last stable offset (the first unstable offset, capped
  by the high watermark), the active segment's base offset and, with ``min.compaction.lag.ms`` > 0, the
  first dirty segment whose largest timestamp is within that lag of now;
- the cleanable bytes are those of the segments from the one holding the first dirty offset to the one
  holding the first uncleanable offset (exclusive); the clean bytes those of the segments below the first
  dirty offset; the cleanable ratio is cleanable / (clean + cleanable);
- the log is cleaned when that ratio exceeds ``min.cleanable.dirty.ratio``, or when a dirty segment's first
  batch is older than ``max.compaction.lag.ms`` (and it has cleanable bytes).

What the cleaner meets in the segments it reads (a cleaning round reads every segment below the first
uncleanable offset: K:storage/.../internals/log/Cleaner.java ``doClean`` cleans ``logSegments(0,
endOffset)``, ``buildOffsetMap`` reads the dirty ones):

- ``COMPACTION_DAMAGE`` (every depth, from the scan's own LOG_CORRUPT / LOG_RECORDS_UNDECODABLE findings):
  bytes the cleaner cannot parse make its round throw and the partition uncleanable
  (LogCleaner.CleanerThread ``tryCleanFilthiestLog``); a CRC mismatch alone does not stop it;
- ``COMPACTION_BATCH_TOO_LARGE`` (--deep: batch sizes from the walk): a batch larger than the largest read
  buffer of Kafka before 2.0, max(max.message.bytes, message.max.bytes) (Cleaner ``growBuffersOrFail``,
  ``growBuffers``);
- ``COMPACTION_KEYLESS_RECORDS`` (--deep: record keys decoded): records without a key, which the next
  cleaning discards (Cleaner ``shouldRetainRecord``);
- ``COMPACTION_TOMBSTONES_EXPIRED`` (--deep: records decoded): tombstones below the first dirty offset past
  their delete horizon (Cleaner ``shouldRetainRecord``, ``doClean``'s legacy horizon; KIP-534).

"Now" is the partition's newest record timestamp (the last moment its log shows; a dead broker's dir is
read long after). A working cleaner takes a cleanable log within seconds (``log.cleaner.backoff.ms``,
15 s, between rounds; the filthiest log first): one that has been cleanable for over an hour of the
log's own time, ``COMPACTION_BEHIND``, is not being cleaned (a dead cleaner thread, a partition marked
uncleanable after an error, or a cleaner that cannot keep up), and its uncompacted bytes keep growing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logdoctor.checks.context import Depth
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.state.time_words import duration, iso
from logdoctor.errors import FormatError
from logdoctor.logdir.disk import human_bytes

__all__ = ["BEHIND_AFTER_MS", "COMPACTION_CODES", "CleanerState", "check_cleaner", "cleaner_state"]

#: the codes of this module's findings (the census's compaction table lists them per replica)
COMPACTION_CODES = (
    "COMPACTION_BEHIND",
    "COMPACTION_DAMAGE",
    "COMPACTION_BATCH_TOO_LARGE",
    "COMPACTION_KEYLESS_RECORDS",
    "COMPACTION_TOMBSTONES_EXPIRED",
)
#: the damage kinds the cleaner meets (Damage.kind, checks.state.segment_walk; "undecodable": a
#: LOG_RECORDS_UNDECODABLE), in COMPACTION_DAMAGE's words; the last three: bytes it cannot parse
_DAMAGE_WHAT = {
    "crc": "a batch whose CRC does not match",
    "undecodable": "a batch whose records do not decode",
    "truncated": "a batch runs past the end of the segment",
    "zero_tail": "zero bytes where a batch header belongs",
    "corrupt": "a batch header that does not parse",
}

#: how long a log may stay cleanable before COMPACTION_BEHIND (of the log's own time)
BEHIND_AFTER_MS = 3600 * 1000


@dataclass(slots=True)
class CleanerState:
    """What the cleaner sees of one compacted partition (the scan's JSON ``cleaner``)."""

    checkpoint: int | None
    first_dirty_offset: int
    checkpoint_reset: bool
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    cleanable_ratio: float
    min_cleanable_ratio: float
    max_compaction_lag_ms: int
    compaction_delay_ms: int
    cleanable_now: bool
    #: when the log last became cleanable (the log's own time; None: it is not)
    cleanable_since: int | None
    now: int
    oldest_dirty_timestamp: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint,
            "first_dirty_offset": self.first_dirty_offset,
            "checkpoint_reset": self.checkpoint_reset,
            "first_uncleanable_offset": self.first_uncleanable_offset,
            "clean_bytes": self.clean_bytes,
            "cleanable_bytes": self.cleanable_bytes,
            "cleanable_ratio": round(self.cleanable_ratio, 4),
            "min_cleanable_dirty_ratio": self.min_cleanable_ratio,
            "max_compaction_lag_ms": self.max_compaction_lag_ms,
            "compaction_delay_ms": self.compaction_delay_ms,
            "cleanable_now": self.cleanable_now,
            "cleanable_since": self.cleanable_since,
            "now": self.now,
            "oldest_dirty_timestamp": self.oldest_dirty_timestamp,
        }


def _first_batch_timestamp(seg: Any) -> int:
    """LogSegment.getFirstBatchTimestamp: the first batch's max timestamp (-1: none)."""
    try:
        for b in seg.batches():
            return int(b.max_timestamp)
    except (FormatError, OSError):
        return -1
    return -1


def _largest_timestamp(seg: Any) -> int:
    try:
        return int(seg.largest_timestamp_from_index())
    except (FormatError, OSError):
        return -1


def cleaner_state(st: PartitionState) -> CleanerState | None:
    """The cleaner's view of ``st`` by LogCleanerManager's rules (None: not a compacted partition, or its
    log cannot be judged: no segment, no log end)."""
    cfg = st.task.topic_config
    leo = st.log_end_offset
    if cfg is None or not cfg.compact or not st.segments or leo is None:
        return None
    segs = st.segments
    bases = [s.base_offset for s in segs]
    sizes = [st.infos[b].size for b in bases]
    log_start = max(bases[0], st.task.log_start_checkpoint or bases[0])
    cp = st.task.cleaner_checkpoint
    first_dirty = cp if cp is not None else log_start
    reset = cp is not None and not (log_start <= cp <= leo)
    if reset:
        first_dirty = log_start
    try:
        last = segs[-1].last_batch
        now = int(last.max_timestamp) if last is not None else -1
    except (FormatError, OSError):
        now = -1
    now = max(now, max((_largest_timestamp(s) for s in segs[-2:]), default=-1))  # an empty active one
    from logdoctor.checks.transactions import open_transactions

    txns = open_transactions(st) or []
    hw = st.task.high_watermark if st.task.high_watermark is not None else leo
    lso = min([hw, *(t.first_offset for t in txns)])
    active = len(segs) - 1

    candidates = [lso, bases[active]]
    min_lag = max(int(cfg.min_compaction_lag_ms.value), 0)
    dirty_from = st.segment_index(first_dirty)
    if min_lag > 0:
        for i in range(dirty_from, active):
            if _largest_timestamp(segs[i]) > now - min_lag:
                candidates.append(bases[i])
                break
    uncleanable = max(first_dirty, min(candidates))
    fus = st.segment_index(uncleanable) if uncleanable < bases[active] else active  # firstUncleanableSegment
    lo = st.segment_index(min(first_dirty, bases[fus]))
    cleanable = sum(sizes[lo:fus])
    clean = sum(sz for b, sz in zip(bases, sizes, strict=True) if b < first_dirty)
    total = clean + cleanable
    ratio = cleanable / total if total else 0.0
    max_lag = max(int(cfg.max_compaction_lag_ms.value), 0)
    firsts = [t for t in (_first_batch_timestamp(segs[i]) for i in range(dirty_from, active)) if t > 0]
    earliest = min(firsts) if firsts else None
    clean_until = now - max_lag
    delay = clean_until - earliest if earliest is not None and earliest < clean_until else 0
    min_ratio = float(cfg.min_cleanable_dirty_ratio.value)
    cleanable_now = total > 0 and ((delay > 0 and cleanable > 0) or ratio > min_ratio)
    since: int | None = None
    if cleanable_now:
        since = _cleanable_since(st, segs, sizes, clean, lo, fus, min_ratio)
        if delay > 0 and earliest is not None:
            due = earliest + max_lag
            since = due if since is None else min(since, due)
    return CleanerState(
        cp, first_dirty, reset, uncleanable, clean, cleanable, ratio, min_ratio, max_lag, delay,
        cleanable_now, since, now, earliest,
    )  # fmt: skip


def _cleanable_since(
    st: PartitionState, segs: Any, sizes: list[int], clean: int, lo: int, fus: int, min_ratio: float
) -> int | None:
    """When the ratio first exceeded ``min_ratio``: the moment the segment that carried it over rolled (the
    next segment's first batch; that segment's largest timestamp when unknown)."""
    acc = 0
    for i in range(lo, fus):
        acc += sizes[i]
        if acc / (clean + acc) > min_ratio:
            nxt = _first_batch_timestamp(segs[i + 1]) if i + 1 < len(segs) else -1
            return nxt if nxt > 0 else _largest_timestamp(segs[i])
    return None


def check_cleaner(st: PartitionState) -> None:
    """The cleaner's state into the report (``cleaner`` in the JSON), COMPACTION_BEHIND for a compacted
    partition cleanable for over :data:`BEHIND_AFTER_MS` of its own time, COMPACTION_DAMAGE for the scan's
    damage the cleaner reads, and at --deep what the segments below the first uncleanable offset hold."""
    state = cleaner_state(st)
    if state is None:
        return
    st.rep.cleaner = state.to_json()
    _check_behind(st, state)
    _check_damage(st, state)
    if st.task.options.depth is Depth.DEEP:
        _check_batches(st, state)


def _check_behind(st: PartitionState, state: CleanerState) -> None:
    if not state.cleanable_now or state.cleanable_since is None or state.now <= 0:
        return
    behind = state.now - state.cleanable_since
    if behind <= BEHIND_AFTER_MS:
        return
    cfg = st.task.topic_config
    assert cfg is not None
    span = state.now - state.oldest_dirty_timestamp if state.oldest_dirty_timestamp else 0
    per_day = int(state.cleanable_bytes * 86_400_000 / span) if span > 0 else None
    growth = f", growing about {human_bytes(per_day)} a day" if per_day else ""
    seg = st.segments[st.segment_index(state.first_dirty_offset)]
    if state.cleanable_ratio > state.min_cleanable_ratio:
        why = (
            f"its cleanable ratio {state.cleanable_ratio:.2f} exceeds min.cleanable.dirty.ratio "
            f"{state.min_cleanable_ratio}"
        )
    else:
        late = duration(state.compaction_delay_ms)
        why = f"a dirty segment's first record is {late} past max.compaction.lag.ms"
    st.make(
        "COMPACTION_BEHIND",
        str(seg.log_path),
        offset=state.first_dirty_offset,
        topic=st.task.topic,
        partition=st.task.partition,
        why=why,
        behind_for=duration(behind),
        cleanable_since_iso=iso(state.cleanable_since),
        newest_iso=iso(state.now),
        first_dirty_offset=state.first_dirty_offset,
        first_uncleanable_offset=state.first_uncleanable_offset,
        cleanable_size=human_bytes(state.cleanable_bytes),
        clean_size=human_bytes(state.clean_bytes),
        growth=growth,
        config=cfg.min_cleanable_dirty_ratio.describe(),
        details={"cleaner": state.to_json(), "bytes_per_day": per_day},
    )


def _read_by_cleaner(st: PartitionState, state: CleanerState) -> int:
    """How many segments (from the first) a cleaning round reads: those below the first uncleanable offset,
    the active one never (Cleaner.doClean: ``logSegments(0, endOffset)``, endOffset at most the first
    uncleanable offset)."""
    active = len(st.segments) - 1
    return sum(
        1 for i, s in enumerate(st.segments) if i < active and s.base_offset < state.first_uncleanable_offset
    )


def _check_damage(st: PartitionState, state: CleanerState) -> None:
    """COMPACTION_DAMAGE: the scan's LOG_CORRUPT / LOG_RECORDS_UNDECODABLE findings in a segment the cleaner
    reads, with what the cleaner does there (K:storage/.../internals/log/Cleaner.java growBuffersOrFail,
    cleanInto, buildOffsetMapForSegment; LogCleaner.java CleanerThread.tryCleanFilthiestLog). Any depth:
    it follows the damage the scan found at that depth."""
    read = {str(s.log_file): s for s in st.segments[: _read_by_cleaner(st, state)]}
    read.update({str(s.log_path): s for s in read.values()})
    for f in list(st.rep.findings):
        seg = read.get(f.path)
        if seg is None or f.code not in ("LOG_CORRUPT", "LOG_RECORDS_UNDECODABLE"):
            continue
        kind = "undecodable" if f.code == "LOG_RECORDS_UNDECODABLE" else str(f.details.get("kind", ""))
        what = _DAMAGE_WHAT.get(kind)
        if what is None:
            continue  # offsets out of order, overlapping segments: no cleaner rule to state
        st.make(
            "COMPACTION_DAMAGE",
            f.path,
            case="crc" if kind == "crc" else None,
            position=f.position,
            offset=f.offset,
            damage_code=f.code,
            what=what,
            where=f"position {f.position}" if f.position is not None else f"offset {f.offset}",
            topic=st.task.topic,
            partition=st.task.partition,
            first_uncleanable_offset=state.first_uncleanable_offset,
            cleanable_size=human_bytes(state.cleanable_bytes),
            repair_damage=_repair_of(f.code, st.task.log_dir),
            details={"damage": f.code, "kind": kind},
        )


def _repair_of(code: str, logdir: str) -> str:
    from logdoctor.checks.catalog import repair_hint

    if code == "LOG_CORRUPT":
        return repair_hint(code, logdir)
    return "the LOG_RECORDS_UNDECODABLE fix (the batch cannot be repaired in place)"


@dataclass(slots=True)
class _Seen:
    """What one pass over the segments a cleaning round reads found (first offset, its segment, count)."""

    large: list[tuple[int, int, int, str]]  # (offset, position, size, .log path) of oversized batches
    keyless: int = 0
    keyless_first: tuple[int, str] | None = None
    tombstones: int = 0
    tombstone_first: tuple[int, str] | None = None
    horizon: int | None = None  # the earliest delete horizon passed (v2), None: legacy only


def _check_batches(st: PartitionState, state: CleanerState) -> None:
    """--deep: every batch of the segments a cleaning round reads, every record decoded (the cost of one
    more decode of those segments; the --deep walk has read them already): COMPACTION_BATCH_TOO_LARGE,
    COMPACTION_KEYLESS_RECORDS, COMPACTION_TOMBSTONES_EXPIRED."""
    cfg = st.task.topic_config
    assert cfg is not None
    limit = max(int(cfg.max_message_bytes.value), int(cfg.broker_message_max_bytes.value))
    n = _read_by_cleaner(st, state)
    segs = st.segments[:n]
    # Cleaner.doClean's legacy horizon: the last clean segment's mtime - delete.retention.ms (v0/v1)
    clean = [s for s in segs if s.base_offset < state.first_dirty_offset]
    retention = int(cfg.delete_retention_ms.value)
    legacy_horizon = clean[-1].mtime_ms - retention if clean else None
    seen = _Seen([])
    for seg in segs:
        path = str(seg.log_file)
        in_clean = seg.base_offset < state.first_dirty_offset
        legacy_due = legacy_horizon is not None and in_clean and seg.mtime_ms <= legacy_horizon
        try:
            for b in seg.batches():
                _one_batch(b, path, limit, in_clean, legacy_due, state, seen)
        except (FormatError, OSError):
            continue  # damage: the scan's own findings (and COMPACTION_DAMAGE) name it
    _report_batches(st, state, seen, limit)


def _one_batch(
    b: Any, path: str, limit: int, in_clean: bool, legacy_due: bool, state: CleanerState, seen: _Seen
) -> None:
    if b.size > limit:
        seen.large.append((b.base_offset if b.magic >= 2 else b.last_offset, b.position, b.size, path))
    if b.is_control:
        return
    v2 = b.magic >= 2
    horizon = b.delete_horizon_ms if v2 else None
    due = in_clean and ((horizon is not None and horizon <= state.now) or (not v2 and legacy_due))
    for r in b.records():
        if r.key is None:
            seen.keyless += 1
            if seen.keyless_first is None:
                seen.keyless_first = (r.offset, path)
        elif due and r.value is None and r.offset < state.first_dirty_offset:
            seen.tombstones += 1
            if seen.tombstone_first is None:
                seen.tombstone_first = (r.offset, path)
            if horizon is not None and (seen.horizon is None or horizon < seen.horizon):
                seen.horizon = horizon


def _report_batches(st: PartitionState, state: CleanerState, seen: _Seen, limit: int) -> None:
    cfg = st.task.topic_config
    assert cfg is not None
    topic, partition = st.task.topic, st.task.partition
    if seen.large:
        offset, position, size, path = seen.large[0]
        more = len(seen.large) - 1
        st.make(
            "COMPACTION_BATCH_TOO_LARGE",
            path,
            position=position,
            offset=offset,
            size=f"{size:,}",
            size_plain=max(s for _o, _p, s, _l in seen.large),
            limit=f"{limit:,}",
            topic=topic,
            partition=partition,
            first_uncleanable_offset=state.first_uncleanable_offset,
            more=f" ({more} more such batch{'es' if more > 1 else ''} in the segments it reads)"
            if more
            else "",
            topic_max=cfg.max_message_bytes.describe(),
            broker_max=cfg.broker_message_max_bytes.describe(),
            details={
                "batches": len(seen.large),
                "limit": limit,
                "largest": max(s for *_x, s, _l in seen.large),
            },
        )
    if seen.keyless_first is not None:
        from logdoctor.checks.divergence import lost_records_out

        offset, path = seen.keyless_first
        st.make(
            "COMPACTION_KEYLESS_RECORDS",
            path,
            offset=offset,
            count=f"{seen.keyless:,}",
            topic=topic,
            partition=partition,
            folder=st.task.path,
            first_uncleanable_offset=state.first_uncleanable_offset,
            out=lost_records_out(st.task.path, offset, state.first_uncleanable_offset),
            when=" (the log is cleanable now)" if state.cleanable_now else "",
            details={"records": seen.keyless},
        )
    if seen.tombstone_first is not None:
        offset, path = seen.tombstone_first
        if seen.horizon is not None:
            since = (
                f"the earliest delete horizon, {iso(seen.horizon)}, passed "
                f"{duration(state.now - seen.horizon)} before the newest record ({iso(state.now)})"
            )
        else:
            since = (
                "their segments (v0/v1 batches) were last modified at least delete.retention.ms before the "
                "last clean segment"
            )
        st.make(
            "COMPACTION_TOMBSTONES_EXPIRED",
            path,
            offset=offset,
            count=f"{seen.tombstones:,}",
            topic=topic,
            partition=partition,
            first_dirty_offset=state.first_dirty_offset,
            since=since,
            config=cfg.delete_retention_ms.describe(),
            ratio=f"{state.cleanable_ratio:.2f}",
            min_ratio=state.min_cleanable_ratio,
            details={"tombstones": seen.tombstones, "delete_horizon_ms": seen.horizon},
        )


def compaction_row(p: Any) -> dict[str, Any] | None:
    """The census's compaction row of one replica (a scan's PartitionReport; None: not compacted): where
    the cleaner stands (:func:`cleaner_state`, run by the scan on the executor) and the codes of this
    module's findings on it. ``dirty_bytes``: LogCleanerManager's cleanable bytes."""
    c = p.cleaner
    if c is None:
        return None
    return {
        "topic": p.topic,
        "partition": p.partition,
        "path": p.path,
        "cleaner_checkpoint": c["checkpoint"],
        "first_dirty_offset": c["first_dirty_offset"],
        "first_uncleanable_offset": c["first_uncleanable_offset"],
        "clean_bytes": c["clean_bytes"],
        "dirty_bytes": c["cleanable_bytes"],
        "cleanable_ratio": c["cleanable_ratio"],
        "min_cleanable_dirty_ratio": c["min_cleanable_dirty_ratio"],
        "cleanable_now": c["cleanable_now"],
        "oldest_dirty_timestamp": c["oldest_dirty_timestamp"],
        "compaction_findings": sorted({f.code for f in p.findings if f.code in COMPACTION_CODES}),
    }

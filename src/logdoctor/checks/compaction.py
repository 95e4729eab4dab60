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

"Now" is the partition's newest record timestamp (the last moment its log shows; a dead broker's dir is
read long after). A working cleaner takes a cleanable log within seconds (``log.cleaner.backoff.ms``,
15 s, between rounds; the filthiest log first): one that has been cleanable for over an hour of the
log's own time, ``COMPACTION_BEHIND``, is not being cleaned (a dead cleaner thread, a partition marked
uncleanable after an error, or a cleaner that cannot keep up), and its uncompacted bytes keep growing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logdoctor.checks.state import PartitionState, duration, iso
from logdoctor.errors import FormatError

__all__ = ["BEHIND_AFTER_MS", "CleanerState", "check_cleaner", "cleaner_state"]

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
    """The cleaner's state into the report (``cleaner`` in the JSON), and COMPACTION_BEHIND for a compacted
    partition cleanable for over :data:`BEHIND_AFTER_MS` of its own time."""
    state = cleaner_state(st)
    if state is None:
        return
    st.rep.cleaner = state.to_json()
    if not state.cleanable_now or state.cleanable_since is None or state.now <= 0:
        return
    behind = state.now - state.cleanable_since
    if behind <= BEHIND_AFTER_MS:
        return
    cfg = st.task.topic_config
    assert cfg is not None
    span = state.now - state.oldest_dirty_timestamp if state.oldest_dirty_timestamp else 0
    per_day = int(state.cleanable_bytes * 86_400_000 / span) if span > 0 else None
    growth = f", growing about {per_day:,} bytes a day" if per_day else ""
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
        cleanable_bytes=f"{state.cleanable_bytes:,}",
        clean_bytes=f"{state.clean_bytes:,}",
        growth=growth,
        config=cfg.min_cleanable_dirty_ratio.describe(),
        details={"cleaner": state.to_json(), "bytes_per_day": per_day},
    )

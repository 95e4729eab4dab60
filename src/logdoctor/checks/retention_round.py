"""One retention round of a partition, as the broker's next retention check runs it: the rules of
`logdoctor retention` (:mod:`logdoctor.checks.retention`, which scans and runs this round on each partition)
and of the scan's RETENTION_DUE (:mod:`logdoctor.checks.retention_due`).

Follows K:core/src/main/scala/kafka/log/UnifiedLog.scala deleteOldSegments; :mod:`logdoctor.checks.retention`
says the rules and the tiered case. This module imports neither the scanner nor the remote log metadata: a
partition's check runs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport, SegmentInfo
from logdoctor.checks.findings import Finding, exit_code
from logdoctor.checks.retention_risk import RiskMoment, risk_fields, risk_moment, suspicious
from logdoctor.checks.state.time_words import iso
from logdoctor.checks.topic_config import DEFAULT_RETENTION_MS, TopicConfig

__all__ = [
    "DEFAULT_RETENTION_MS",
    "LOG_START_OFFSET_BREACH",
    "REMOTE_RETENTION",
    "RETENTION_MS_BREACH",
    "RETENTION_SIZE_BREACH",
    "WAITS_FOR_UPLOAD",
    "PartitionRetention",
    "RetentionConfig",
    "RetentionReport",
    "SegmentVerdict",
    "broker_timestamp",
    "future_timestamp_note",
    "moment_of",
    "partition_retention",
    "partition_verdicts",
    "retention_timestamp",
    "root_cause_also",
    "round_arguments",
    "simulate",
    "true_timestamp",
    "upload_holds",
]


LOG_START_OFFSET_BREACH = "log_start_offset_breach"
#: a tiered partition's segment that local retention would delete, kept until it is uploaded
WAITS_FOR_UPLOAD = "local retention waits for upload"
REMOTE_RETENTION = (
    "retention.ms/retention.bytes apply to the remote tier: RemoteLogManager deletes remote segments "
    "past them and moves the log start offset (RLMExpirationTask); not simulated here"
)
RETENTION_SIZE_BREACH = "retention_size_breach"
#: Kafka 4.4's defaults of remote.copy.lag.ms / .bytes (RemoteLogManagerConfig DEFAULT_LOG_REMOTE_COPY_LAG_*)
DEFAULT_COPY_LAG_MS = 0
DEFAULT_COPY_LAG_BYTES = -1
RETENTION_MS_BREACH = "retention_ms_breach"
#: why local time retention keeps a segment whose largest timestamp is in the future (Kafka 4.3.1 and 4.4.0
#: alike: UnifiedLog.deleteRetentionMsBreachedSegments; KAFKA-20609's file-time anchor is in neither jar)
FUTURE_TIMESTAMP = (
    "largest timestamp in the future ({ts_iso}, {ahead} ahead): time retention never deletes it "
    "(UnifiedLog.deleteRetentionMsBreachedSegments: 'contains future timestamp(s), making it ineligible "
    "to be deleted'){uploaded}, and its pass stops there, keeping every later segment too. Kafka "
    "4.3.1 and 4.4.0 alike: KAFKA-20609 (the file time as the age of an uploaded future segment) is "
    "in neither release"
)
BEHIND_FUTURE = (
    "behind segment {base}, whose largest timestamp is in the future: time retention stops there "
    "(deletableSegments takes segments oldest first, up to the first it keeps)"
)

#: RETENTION_RISK's ``{also}`` when it carries the INDEX_CORRUPT of a zeroed time index (checks.timestamps)
ROOT_CAUSE_ALSO = (
    "; the same zeroed entry also gives time lookups (offsetsForTimes, ListOffsets by timestamp) a wrong "
    "answer. One finding for both: the root cause is the damaged time index (INDEX_CORRUPT, {rejected}); "
    "rebuilding it fixes both"
)


@dataclass(frozen=True, slots=True)
class RetentionConfig:
    """The three numbers the simulation needs (resolved per topic by :mod:`logdoctor.checks.topic_config`)."""

    retention_ms: int = DEFAULT_RETENTION_MS  # -1: no time limit
    retention_bytes: int = -1  # -1: no size limit
    delete: bool = True  # cleanup.policy contains "delete"
    #: a remote log: retention_ms/bytes are then local.retention.ms/.bytes, and a segment goes only once
    #: it is uploaded (UnifiedLog.deletableSegments)
    remote: bool = False
    #: delayed upload (KIP-1241, Kafka 4.4): LogConfig.remoteCopyLagMs / remoteCopyLagBytes, -1 resolved to
    #: the local retention's; 0 in either: every rolled segment is eligible at once (no delay)
    copy_lag_ms: int = 0
    copy_lag_bytes: int = 0
    #: the settings, in words (empty: no delayed upload)
    copy_lag_source: str = ""

    @classmethod
    def of(cls, cfg: TopicConfig, remote: bool = False, delayed_upload: bool = True) -> RetentionConfig:
        """``delayed_upload``: the broker's release has remote.copy.lag.* (4.4 on); without it they are
        ignored, as a 4.3 broker has no such config."""
        if remote and cfg.local_retention_ms is not None and cfg.local_retention_bytes is not None:
            out = cls(cfg.local_retention_ms.value, cfg.local_retention_bytes.value, cfg.delete, True)
            lag_ms, lag_bytes = cfg.remote_copy_lag_ms, cfg.remote_copy_lag_bytes
            if not delayed_upload or (lag_ms is None and lag_bytes is None):
                return out
            ms = DEFAULT_COPY_LAG_MS if lag_ms is None else lag_ms.value
            size = DEFAULT_COPY_LAG_BYTES if lag_bytes is None else lag_bytes.value
            # LogConfig.remoteCopyLagMs/Bytes: -1 is the effective local retention (itself -1: unlimited)
            ms = out.retention_ms if ms == -1 else ms
            size = out.retention_bytes if size == -1 else size
            said = "; ".join(
                s.describe().join((f"{s.key}=", "")) for s in (lag_ms, lag_bytes) if s is not None
            )
            return replace(out, copy_lag_ms=ms, copy_lag_bytes=size, copy_lag_source=said)
        return cls(cfg.retention_ms.value, cfg.retention_bytes.value, cfg.delete, remote)

    @property
    def delays_upload(self) -> bool:
        """RLMCopyTask.isEligibleForUpload checks the lags only when neither is 0."""
        return self.remote and self.copy_lag_ms != 0 and self.copy_lag_bytes != 0


@dataclass(slots=True)
class SegmentVerdict:
    base_offset: int
    size: int
    broker_largest_timestamp: int | None
    broker_timestamp_source: str
    true_largest_timestamp: int | None
    reason: str | None = None  # why the broker would delete it (None: kept)
    reason_if_true_timestamps: str | None = None  # the same with the true timestamps
    active: bool = False
    #: a tiered partition's segment local retention would delete for this reason once it is uploaded
    waits_for_upload: str | None = None
    #: kept now, but deleted early later by a wrong largest timestamp (RETENTION_RISK, a warning): when
    risk_at: int | None = None
    #: its largest timestamp (the broker's) is after the round's time: time retention keeps it
    future_timestamp: bool = False
    #: why the round keeps it when that is not plain (a future timestamp, or behind one), in words
    kept_because: str | None = None
    #: a tiered segment delayed upload (remote.copy.lag.*, KIP-1241) keeps from remote storage, and until when
    upload_held_by: str | None = None

    @property
    def at_risk(self) -> bool:
        return self.reason == RETENTION_MS_BREACH and self.reason_if_true_timestamps is None

    def to_json(self) -> dict[str, Any]:
        return {
            "base_offset": self.base_offset,
            "size": self.size,
            "active": self.active,
            "broker_largest_timestamp": self.broker_largest_timestamp,
            "broker_timestamp_source": self.broker_timestamp_source,
            "true_largest_timestamp": self.true_largest_timestamp,
            "deleted": self.reason is not None,
            "reason": self.reason,
            "deleted_with_true_timestamps": self.reason_if_true_timestamps is not None,
            "retention_risk": self.at_risk,
            "waits_for_upload": self.waits_for_upload,
            "retention_risk_at": self.risk_at,
            "future_timestamp": self.future_timestamp,
            "kept_because": self.kept_because,
            "upload_held_by": self.upload_held_by,
        }


@dataclass(slots=True)
class PartitionRetention:
    topic: str
    partition: int
    log_dir: str
    path: str
    topic_config: TopicConfig
    log_start_offset: int | None
    log_end_offset: int | None
    high_watermark: int | None
    high_watermark_source: str
    new_log_start_offset: int | None
    rolls: bool
    segments: list[SegmentVerdict] = field(default_factory=list)
    #: the first local offset (UnifiedLog.localLogStartOffset); the same as the log start when not tiered
    local_log_start_offset: int | None = None
    #: the local log start after this round (a tiered partition's deletions move it, not the log start)
    new_local_log_start_offset: int | None = None
    tiered: bool = False
    tiered_evidence: str = ""
    #: UnifiedLog.highestOffsetInRemoteStorage from the remote log metadata (None: not known offline)
    highest_remote_offset: int | None = None
    #: where the upload state comes from, in words (tiered partitions only)
    upload_state: str = ""
    #: whose rules judged it: the broker release the metadata log shows, in words
    release_rule: str = ""
    #: the broker's release has delayed upload (remote.copy.lag.*, Kafka 4.4)
    delayed_upload: bool = True

    @property
    def upload_known(self) -> bool:
        return self.highest_remote_offset is not None

    @property
    def config(self) -> RetentionConfig:
        return RetentionConfig.of(self.topic_config, self.tiered, self.delayed_upload)

    @property
    def waiting(self) -> list[SegmentVerdict]:
        return [s for s in self.segments if s.waits_for_upload is not None]

    @property
    def deleted(self) -> list[SegmentVerdict]:
        return [s for s in self.segments if s.reason is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "log_dir": self.log_dir,
            "retention_ms": self.config.retention_ms,
            "retention_bytes": self.config.retention_bytes,
            "cleanup_policy_delete": self.config.delete,
            "topic_config": self.topic_config.to_json(),
            "log_start_offset": self.log_start_offset,
            "local_log_start_offset": self.local_log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "high_watermark_source": self.high_watermark_source,
            "new_log_start_offset": self.new_log_start_offset,
            "new_local_log_start_offset": self.new_local_log_start_offset,
            "tiered": self.tiered,
            "tiered_evidence": self.tiered_evidence,
            "remote_retention": REMOTE_RETENTION if self.tiered else None,
            "highest_remote_offset": self.highest_remote_offset,
            "upload_state": self.upload_state if self.tiered else None,
            "release_rule": self.release_rule,
            "remote_copy_lag": (
                {
                    "ms": self.config.copy_lag_ms,
                    "bytes": self.config.copy_lag_bytes,
                    "configs": self.config.copy_lag_source,
                }
                if self.config.delays_upload
                else None
            ),
            "waiting_for_upload_segments": len(self.waiting),
            "rolls_new_active_segment": self.rolls,
            "deleted_segments": len(self.deleted),
            "deleted_bytes": sum(s.size for s in self.deleted),
            "segments": [s.to_json() for s in self.segments],
        }


@dataclass(slots=True)
class RetentionReport:
    now_ms: int
    partitions: list[PartitionRetention]
    findings: list[Finding]
    #: the consumer groups this round moves below their partition's new log start (checks.consumer_groups;
    #: each ``OutOfRange.details()``), as a plan lists them
    consumer_groups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "now_ms": self.now_ms,
            "partitions": [p.to_json() for p in self.partitions],
            "findings": [f.to_json() for f in self.findings],
            "consumer_groups": self.consumer_groups,
            "summary": {
                "deleted_segments": sum(len(p.deleted) for p in self.partitions),
                "deleted_bytes": sum(s.size for p in self.partitions for s in p.deleted),
                "retention_risk_segments": sum(1 for p in self.partitions for s in p.segments if s.at_risk),
                "exit_code": self.exit_code,
            },
        }


# --- the simulation (pure) -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Seg:
    base: int
    size: int
    ts: int


def simulate(
    segments: list[tuple[int, int, int]],
    *,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    config: RetentionConfig,
    now_ms: int,
    highest_remote_offset: int | None = None,
    remote_log_start_offset: int | None = None,
    waiting: dict[int, str] | None = None,
) -> tuple[list[str | None], int, bool]:
    """One retention round of UnifiedLog.deleteOldSegments over ``(base offset, size, largest timestamp)``.

    Returns the reason each segment is deleted (None: kept), the new log start offset and whether the
    broker rolls a new active segment first (every segment deleted).

    ``config.remote``: a remote log; ``log_start_offset`` is then its LOCAL log start offset (what the
    log-start pass compares with, and what deletions move), ``remote_log_start_offset`` its log start
    offset, ``highest_remote_offset`` the highest offset uploaded (None: unknown, nothing counts as
    uploaded). A segment the predicate accepts but not yet uploaded stops the pass, as in the broker,
    and goes into ``waiting`` (base offset -> the reason it would be deleted for).
    """
    live = [_Seg(b, s, t) for b, s, t in segments]
    reasons: dict[int, str] = {}
    log_start = log_start_offset
    rolled = False

    def deletable(pred: Callable[[_Seg, _Seg | None], bool]) -> list[_Seg]:
        out: list[_Seg] = []
        for i, seg in enumerate(live):
            nxt = live[i + 1] if i + 1 < len(live) else None
            last_and_empty = nxt is None and seg.size == 0
            upper = nxt.base if nxt is not None else log_end_offset
            ok = high_watermark >= upper and pred(seg, nxt)
            if ok and not last_and_empty and eligible(nxt, upper):
                out.append(seg)
            else:
                if ok and not last_and_empty and waiting is not None and current:
                    waiting.setdefault(seg.base, current[0])
                break
        return out

    current: list[str] = []

    def eligible(nxt: _Seg | None, upper: int) -> bool:
        """UnifiedLog.deletableSegments isSegmentEligibleForDeletion."""
        if not config.remote:
            return True
        if nxt is not None and remote_log_start_offset is not None and remote_log_start_offset >= nxt.base:
            return True  # allowDeletionDueToLogStartOffsetIncremented
        return highest_remote_offset is not None and upper > 0 and upper - 1 <= highest_remote_offset

    def pass_(pred: Callable[[_Seg, _Seg | None], bool], reason: str) -> None:
        current[:] = [reason]
        delete(deletable(pred), reason)

    def delete(segs: list[_Seg], reason: str) -> None:
        nonlocal log_start, rolled, live
        if not segs:
            return
        if len(segs) == len(live):
            rolled = True
            live.append(_Seg(log_end_offset, 0, -1))  # roll(): a new empty active segment at the log end
        for s in segs:
            reasons[s.base] = reason
        live = live[len(segs) :]
        log_start = max(log_start, live[0].base)

    pass_(lambda seg, nxt: nxt is not None and nxt.base <= log_start, LOG_START_OFFSET_BREACH)
    if config.delete:
        if config.retention_bytes >= 0:
            total = sum(s.size for s in live)
            if total >= config.retention_bytes:
                diff = total - config.retention_bytes

                def size_pred(seg: _Seg, nxt: _Seg | None) -> bool:
                    nonlocal diff
                    if diff - seg.size >= 0:
                        diff -= seg.size
                        return True
                    return False

                pass_(size_pred, RETENTION_SIZE_BREACH)
        if config.retention_ms >= 0:
            pass_(lambda seg, nxt: now_ms - seg.ts > config.retention_ms, RETENTION_MS_BREACH)
    return [reasons.get(b) for b, _s, _t in segments], log_start, rolled


def partition_verdicts(
    segments: list[tuple[int, int, int]],
    *,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int | None,
    config: RetentionConfig,
    now_ms: int,
    remote_log_start_offset: int | None = None,
    highest_remote_offset: int | None = None,
    waiting: dict[int, str] | None = None,
) -> tuple[list[str | None], int, bool, int, str]:
    """:func:`simulate` with the partition's high watermark as the broker would have it: the checkpointed
    one kept within [log start, log end] (a missing one taken as the log end offset: a leader whose
    followers are caught up). Returns reasons, new log start offset, roll, the high watermark used and
    where it came from. `retention` and the report both judge segments here."""
    hw_source = "replication-offset-checkpoint"
    hw = high_watermark
    if hw is None:
        hw, hw_source = log_end_offset, "log end offset (not in replication-offset-checkpoint)"
    hw = min(max(hw, log_start_offset), log_end_offset)
    reasons, new_lso, rolls = simulate(
        segments,
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
        high_watermark=hw,
        config=config,
        now_ms=now_ms,
        remote_log_start_offset=remote_log_start_offset,
        highest_remote_offset=highest_remote_offset,
        waiting=waiting,
    )
    return reasons, new_lso, rolls, hw, hw_source


def retention_timestamp(broker_ts: int | None, true_ts: int | None, mtime_ms: int, recovered: bool) -> int:
    """The largest timestamp time retention compares: LogSegment.largestTimestamp (time index, else the
    .log mtime), or the log's own when recovery rebuilds the time index at the next start."""
    if recovered and true_ts is not None:
        return true_ts
    if broker_ts is not None:
        return broker_ts
    return mtime_ms


def upload_holds(
    segments: list[tuple[int, int, int]],
    *,
    from_offset: int,
    last_stable_offset: int,
    config: RetentionConfig,
    now_ms: int,
) -> dict[int, str]:
    """Delayed upload (KIP-1241, Kafka 4.4): the rolled segments RemoteLogManager's copy task does not upload
    at ``now_ms``, base offset -> why, in words.

    K:storage/.../remote/storage/RemoteLogManager.java RLMCopyTask.candidateLogSegments (4.4.0): over the
    segments from the one holding ``from_offset`` (the highest uploaded offset + 1), each rolled segment whose
    next segment starts at or below the last stable offset is eligible when ``remote.copy.lag.ms`` > 0 and its
    age (now - largest timestamp) is negative or at least the lag, or ``remote.copy.lag.bytes`` > 0 and the
    bytes after it (of those segments) are at least that lag; the first one that is not stops the list, so
    every later one waits behind it. ``segments``: (base offset, size, largest timestamp), oldest first."""
    if not config.delays_upload:
        return {}
    first = max((i for i, s in enumerate(segments) if s[0] <= from_offset), default=0)
    segs = segments[first:]
    total = sum(s[1] for s in segs)
    cumulative = 0
    held: dict[int, str] = {}
    for i in range(1, len(segs)):
        (base, size, ts), nxt = segs[i - 1], segs[i]
        if nxt[0] > last_stable_offset:
            break
        if held:
            held[base] = f"waits for upload behind segment {next(iter(held))} (the copy task stops there)"
            continue
        cumulative += size
        age, after = now_ms - ts, total - cumulative
        by_time = config.copy_lag_ms > 0 and (age < 0 or age >= config.copy_lag_ms)
        by_size = config.copy_lag_bytes > 0 and after >= config.copy_lag_bytes
        if by_time or by_size:
            continue
        why = [f"delayed upload ({config.copy_lag_source}): RemoteLogManager's copy task uploads it"]
        if config.copy_lag_ms > 0:
            why.append(
                f"once its largest timestamp is {config.copy_lag_ms} ms old "
                f"(at {iso(ts + config.copy_lag_ms)})"
            )
        if config.copy_lag_bytes > 0:
            why.append(
                f"{'or ' if config.copy_lag_ms > 0 else ''}once {config.copy_lag_bytes} bytes of newer "
                f"local data follow it ({after} now)"
            )
        held[base] = " ".join(why) + ": until then it is local only"
    return held


def future_timestamp_note(ts: int, now_ms: int, uploaded: bool | None) -> str:
    """:data:`FUTURE_TIMESTAMP` for a segment whose largest timestamp ``ts`` is after ``now_ms``."""
    ahead = ts - now_ms
    span = f"{ahead / 3_600_000:.1f} h" if ahead >= 3_600_000 else f"{ahead / 1000:.0f} s"
    said = {True: " even though it is uploaded", False: "", None: ""}[uploaded]
    return FUTURE_TIMESTAMP.format(ts_iso=iso(ts), ahead=span, uploaded=said)


# --- over log dirs ---------------------------------------------------------------------------------------


def broker_timestamp(info: SegmentInfo) -> int:
    """:func:`retention_timestamp` of a scanned segment."""
    return retention_timestamp(info.broker_largest_ts, info.true_largest_ts, info.mtime_ms, info.recovered)


def true_timestamp(info: SegmentInfo) -> int:
    """A segment's records' largest timestamp; without one (v0, or not read) the broker's own fallback is
    the truth we can know (the time index's, else the .log mtime)."""
    return info.true_largest_ts if info.true_largest_ts is not None else broker_timestamp(info)


def partition_retention(
    part: PartitionReport,
    topic_config: TopicConfig,
    now_ms: int,
    highest_remote_offset: int | None = None,
    upload_state: str = "",
    release_rule: str = "",
    delayed_upload: bool = True,
) -> tuple[PartitionRetention, list[Finding]]:
    """One partition's retention round at ``now_ms`` with its topic's settings, and its RETENTION_RISKs.

    ``highest_remote_offset``: a tiered partition's highest offset in remote storage (:func:`upload_state`;
    None: unknown, nothing counts as uploaded)."""
    tiered = part.remote_log_enabled
    if not tiered:
        highest_remote_offset, upload_state = None, ""
    infos = part.segment_infos
    leo = part.log_end_offset
    lso = part.log_start_offset
    local = part.local_log_start_offset if part.local_log_start_offset is not None else lso
    hw = part.high_watermark
    fixed = {
        "topic": part.topic,
        "partition": part.partition,
        "log_dir": part.log_dir,
        "path": part.path,
        "topic_config": topic_config,
        "log_start_offset": lso,
        "log_end_offset": leo,
        "local_log_start_offset": local,
        "tiered": tiered,
        "tiered_evidence": part.tiering_evidence,
        "highest_remote_offset": highest_remote_offset,
        "upload_state": upload_state,
        "release_rule": release_rule,
        "delayed_upload": delayed_upload,
    }
    if leo is None or lso is None or local is None or not infos:
        return PartitionRetention(
            high_watermark=hw,
            high_watermark_source="unknown",
            new_log_start_offset=lso,
            rolls=False,
            new_local_log_start_offset=local,
            **fixed,
        ), []
    segs = [(i.base_offset, i.size, broker_timestamp(i)) for i in infos]
    true_segs = [(i.base_offset, i.size, true_timestamp(i)) for i in infos]
    kw = round_arguments(lso, local, leo, hw, topic_config, tiered, highest_remote_offset, delayed_upload)
    kw["now_ms"] = now_ms
    waiting: dict[int, str] = {}
    reasons, new_start, rolls, hw, hw_source = partition_verdicts(segs, **kw, waiting=waiting)
    true_reasons, *_ = partition_verdicts(true_segs, **kw)
    # local deletions never move a remote log's log start
    out = PartitionRetention(
        high_watermark=hw,
        high_watermark_source=hw_source,
        new_log_start_offset=lso if tiered else new_start,
        rolls=rolls,
        new_local_log_start_offset=new_start,
        **fixed,
    )
    holds = upload_holds(
        segs,
        from_offset=max((highest_remote_offset if highest_remote_offset is not None else -1) + 1, local),
        last_stable_offset=hw,
        config=kw["config"],
        now_ms=now_ms,
    )
    findings: list[Finding] = []
    future_at: int | None = None
    for k, info in enumerate(infos):
        v = SegmentVerdict(
            info.base_offset,
            info.size,
            segs[k][2],
            "recovery" if info.recovered and info.true_largest_ts is not None else info.broker_ts_source,
            info.true_largest_ts,
            reasons[k],
            true_reasons[k],
            active=k == len(infos) - 1,
            waits_for_upload=waiting.get(info.base_offset),
            upload_held_by=holds.get(info.base_offset),
        )
        _name_future(v, kw["config"], now_ms, future_at, highest_remote_offset if tiered else None, k, infos)
        if v.future_timestamp and future_at is None and v.reason is None:
            future_at = v.base_offset
        out.segments.append(v)
        if k < len(infos) - 1 and not info.recovered:
            f = _risk_finding(part, topic_config, k, segs, true_segs, kw)
            if f is not None:
                findings.append(f)
                if v.reason is None:
                    v.risk_at = f.details.get("deleted_at")
    return out, findings


def _name_future(
    v: SegmentVerdict,
    config: RetentionConfig,
    now_ms: int,
    future_at: int | None,
    highest_remote_offset: int | None,
    k: int,
    infos: list[SegmentInfo],
) -> None:
    """Name the future-timestamp case on a kept segment: its own largest timestamp after ``now_ms``, or a
    segment kept behind one (time retention on, the segment not deleted by the round)."""
    if v.reason is not None or not config.delete or config.retention_ms < 0:
        return
    ts = v.broker_largest_timestamp
    if ts is not None and ts > now_ms:
        v.future_timestamp = True
        if future_at is None:
            upper = infos[k + 1].base_offset if k + 1 < len(infos) else None
            uploaded = (
                None if highest_remote_offset is None or upper is None else upper - 1 <= highest_remote_offset
            )
            v.kept_because = future_timestamp_note(ts, now_ms, uploaded)
            return
    if future_at is not None:
        v.kept_because = BEHIND_FUTURE.format(base=future_at)


_ROOT_KEYS = ("root_cause", "consequences")


def round_arguments(
    log_start_offset: int,
    local_log_start_offset: int,
    log_end_offset: int,
    high_watermark: int | None,
    topic_config: TopicConfig,
    tiered: bool,
    highest_remote_offset: int | None = None,
    delayed_upload: bool = True,
) -> dict[str, Any]:
    """:func:`partition_verdicts`' arguments but ``now_ms`` for one partition: the `retention` command's
    and the scan's RETENTION_RISK (:mod:`logdoctor.checks.retention_risk`) build them here alike."""
    return {
        # a remote log's passes work on its local log (UnifiedLog.deleteLogStartOffsetBreachedSegments)
        "log_start_offset": local_log_start_offset if tiered else log_start_offset,
        "log_end_offset": log_end_offset,
        "high_watermark": high_watermark,
        "config": RetentionConfig.of(topic_config, tiered, delayed_upload),
        "remote_log_start_offset": log_start_offset if tiered else None,
        "highest_remote_offset": highest_remote_offset,
    }


def moment_of(
    broker_segments: list[tuple[int, int, int]],
    true_segments: list[tuple[int, int, int]] | None,
    k: int,
    now_ms: int,
    round_kw: dict[str, Any],
) -> RiskMoment:
    """RETENTION_RISK's moment of ``segments[k]`` (:mod:`logdoctor.checks.retention_risk`) with this
    partition's round (``round_kw``: :func:`round_arguments`): the scan and `retention` both ask here."""
    config: RetentionConfig = round_kw["config"]

    def round_(segments: list[tuple[int, int, int]], at: int) -> list[str | None]:
        return partition_verdicts(segments, now_ms=at, **round_kw)[0]

    return risk_moment(
        broker_segments,
        true_segments,
        k,
        now_ms=now_ms,
        retention_ms=config.retention_ms,
        delete=config.delete,
        round_=round_,
    )


def _risk_finding(
    part: PartitionReport,
    topic_config: TopicConfig,
    k: int,
    segs: list[tuple[int, int, int]],
    true_segs: list[tuple[int, int, int]],
    kw: dict[str, Any],
) -> Finding | None:
    """Segment ``k``'s RETENTION_RISK by the scan's own rule (:mod:`logdoctor.checks.retention_risk`), its
    cause, permission fix and root cause taken from the scan's finding of it when there is one."""
    info = part.segment_infos[k]
    scanned = next(
        (f for f in part.findings if f.code == "RETENTION_RISK" and f.offset == info.base_offset), None
    )
    if not topic_config.time_retention or not suspicious(segs[k][2], info.true_largest_ts):
        return None  # compact-only or retention.ms=-1: time retention deletes nothing, as the scan says
    round_kw = {a: v for a, v in kw.items() if a != "now_ms"}
    moment = moment_of(segs, true_segs, k, kw["now_ms"], round_kw)
    log_path = os.path.join(part.path, f"{info.base_offset:020d}.log")
    tpath = os.path.join(part.path, f"{info.base_offset:020d}.timeindex")
    path = tpath if os.path.exists(tpath) else log_path  # the scan's: the time index, else the .log
    broker, true = segs[k][2], true_segs[k][2]
    sd = scanned.details if scanned is not None else {}
    root = {k2: v for k2, v in sd.items() if k2 in _ROOT_KEYS}
    cause = str(
        sd.get("cause")
        or f"Time retention would use the {info.broker_ts_source or 'broker'} timestamp of {log_path}"
    )
    made = catalog.make(
        "RETENTION_RISK",
        path,
        logdir=part.log_dir,
        offset=info.base_offset,
        position=scanned.position if scanned is not None else None,
        also=root_cause_also((root.get("root_cause") or {}).get("rejected_by") or []) if root else "",
        cause=cause[0].upper() + cause[1:],
        broker_ts=broker,
        broker_ts_iso=iso(broker),
        true_ts=true,
        true_ts_iso=iso(true),
        retention_ms=kw["config"].retention_ms,
        config=topic_config.describe(),
        segment=log_path,
        **risk_fields(moment),
        details={
            "segment": log_path,
            "broker_largest_timestamp": broker,
            "true_largest_timestamp": true,
            "broker_timestamp_source": info.broker_ts_source,
            "topic_config": topic_config.to_json(),
            "cause": cause,
            **moment.to_json(),
            **root,
        },
    )
    # the fix is the scan's: it names what the scan found wrong with the time index (a permission, damage)
    return made if scanned is None else replace(made, fix=scanned.fix, fix_argv=scanned.fix_argv)


def root_cause_also(rejected: list[str]) -> str:
    """RETENTION_RISK's ``{also}`` for the INDEX_CORRUPT it carries, rejected by these Kafka versions."""
    said = f"rejected by Kafka {', '.join(rejected)}" if rejected else "that no Kafka sanity check rejects"
    return ROOT_CAUSE_ALSO.format(rejected=said)

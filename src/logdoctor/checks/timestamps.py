"""RETENTION_RISK / RETENTION_BLOCKED: the largest timestamp time retention would use for a segment.

K:storage/.../log/LogSegment.java: ``largestTimestamp() = maxTimestampSoFar() >= 0 ?
maxTimestampSoFar() : lastModified()``, where after a restart maxTimestampSoFar is the time index's
last entry and an existing index file has ``length / 12`` entries (so a zero-padded or zeroed file
gives 0). A missing time index is created empty (LogLoader: timeIndexFileNewlyCreated), giving
NO_TIMESTAMP and the .log mtime. Field report 002: a time index the broker's user could not read
gave largestTime=0 and the segment was deleted at once. UnifiedLog.deleteRetentionMsBreachedSegments
deletes while ``now - largestTimestamp > retention.ms``, from the oldest segment forward: when a segment
goes, and what must go first, is :mod:`logdoctor.checks.retention_risk`'s rule (the `retention` command's).
"""

from __future__ import annotations

import os
from typing import Any

from logdoctor.checks.access import missing_access
from logdoctor.checks.context import SegmentInfo
from logdoctor.checks.retention_risk import RISK_TOLERANCE_MS, RiskMoment, suspicious
from logdoctor.checks.retention_round import (
    broker_timestamp,
    moment_of,
    root_cause_also,
    round_arguments,
    true_timestamp,
)
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.state.time_words import duration, iso
from logdoctor.checks.topic_config import TopicConfig, TopicConfigResolver
from logdoctor.formats.index import TIME_ENTRY_SIZE
from logdoctor.logdir.model import Segment
from logdoctor.logdir.names import SegmentFileType


def broker_largest_timestamp(st: PartitionState, seg: Segment, info: SegmentInfo) -> str | None:
    """Fill info.broker_largest_ts/source; return why it is suspicious (None: looks right)."""
    tpath = seg.timeindex_file
    log_nonempty = info.size > 0
    if tpath is None:
        info.broker_largest_ts = info.mtime_ms
        info.broker_ts_source = "mtime"
        return (
            "no .timeindex (the broker creates an empty one and falls back to the .log mtime)"
            if (log_nonempty)
            else None
        )
    path = str(tpath)
    try:
        # a live dir's as listed (checks.live): the broker may have renamed it .deleted since
        tst = seg.listed_stat(SegmentFileType.TIMEINDEX) if st.task.live else os.stat(path)
    except OSError:
        tst = None
    if path in st.unreadable or (tst is not None and "r" in missing_access(tst, st.task.broker_user, "r")):
        info.broker_largest_ts = 0
        info.broker_ts_source = "unreadable .timeindex"
        return f"{path} is unreadable to the broker's user {st.task.broker_user.name}"
    size = tst.st_size if tst is not None else 0
    slots = size // TIME_ENTRY_SIZE
    if slots == 0:
        info.broker_largest_ts = info.mtime_ms
        info.broker_ts_source = "mtime"
        return f"{path} is empty (the broker falls back to the .log mtime)" if log_nonempty else None
    last = st.last_time_slot.get(seg.base_offset)
    if last is None:
        last = st.read_range(
            path, (slots - 1) * TIME_ENTRY_SIZE, TIME_ENTRY_SIZE, "the broker reads largestTime=0"
        )
    if last is None:
        info.broker_largest_ts = 0
        info.broker_ts_source = "unreadable .timeindex"
        return f"{path} could not be read"
    ts = int.from_bytes(last[0:8], "big", signed=True)
    if ts < 0:
        info.broker_largest_ts = info.mtime_ms
        info.broker_ts_source = "mtime"
        return f"the last entry of {path} has no timestamp (the broker falls back to the .log mtime)"
    info.broker_largest_ts = ts
    info.broker_ts_source = "timeindex"
    if ts == 0:
        return f"the last entry of {path} is zero (untrimmed, zeroed or truncated time index)"
    return None


def topic_config(st: PartitionState) -> TopicConfig:
    """The partition's effective retention settings (resolved by the scanner; Kafka's defaults otherwise)."""
    cfg = st.task.topic_config
    return cfg if cfg is not None else TopicConfigResolver().resolve(st.task.topic)


def absorb_zeroed_time_index(st: PartitionState, path: str) -> tuple[str, dict[str, Any], int | None] | None:
    """A zeroed/untrimmed ``.timeindex`` is one problem with two consequences (time retention deletes the
    segment early; time lookups read a wrong entry): when time retention applies, the RETENTION_RISK finding
    carries it and names the INDEX_CORRUPT root cause, so remove that INDEX_CORRUPT finding and return its
    (problem, details, position) for the RETENTION_RISK. None when there is no such finding."""
    for k, f in enumerate(st.rep.findings):
        if f.code == "INDEX_CORRUPT" and f.path == path and f.details.get("zero_tail"):
            del st.rep.findings[k]
            return str(f.details.get("problem") or f.message), f.details, f.position
    return None


def root_cause_fields(
    path: str, cause: str, st: PartitionState
) -> tuple[str, str, dict[str, Any], int | None]:
    """(cause, also, details, position) for a RETENTION_RISK on ``path``, absorbing its INDEX_CORRUPT."""
    root = absorb_zeroed_time_index(st, path)
    if root is None:
        return cause, "", {}, None
    problem, details, position = root
    rejected = details.get("rejected_by") or []
    extra = {
        "root_cause": {
            "code": "INDEX_CORRUPT",
            "problem": problem,
            "position": position,
            "rejected_by": rejected,
        },
        "consequences": ["time retention deletes the segment early", "time lookups read a wrong entry"],
    }
    return f"Root cause: {problem}", root_cause_also(rejected), extra, position


def permission_fix(st: PartitionState, info: SegmentInfo, path: str) -> str:
    """RETENTION_RISK's ``{permission}`` fix field: what to do first when the broker's user cannot read
    the time index ('' when nothing of that is wrong: no placeholder to fill in)."""
    if info.broker_ts_source != "unreadable .timeindex":
        return ""
    user = st.task.broker_user.name
    return (
        f" First let the broker's user {user} read and write it: `chown {user} {path}`, `chmod u+rw {path}`."
    )


def sound_but_unreadable(st: PartitionState, info: SegmentInfo, path: str) -> bool:
    """The broker's user cannot read the time index, but its entries are sound: this process reads it, its
    size is whole entries and its last entry is the records' largest timestamp, and no INDEX_CORRUPT names
    it. Then the permission is the whole fix (a rebuild would find nothing to repair)."""
    true = info.true_largest_ts
    if info.broker_ts_source != "unreadable .timeindex" or true is None or true < 0:
        return False
    if any(f.code == "INDEX_CORRUPT" and f.path == path for f in st.rep.findings):
        return False
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0 or size % TIME_ENTRY_SIZE:
                return False
            fh.seek(size - TIME_ENTRY_SIZE)
            last = fh.read(TIME_ENTRY_SIZE)
    except OSError:
        return False
    if len(last) != TIME_ENTRY_SIZE:
        return False
    ts = int.from_bytes(last[0:8], "big", signed=True)
    return ts > 0 and abs(true - ts) <= RISK_TOLERANCE_MS


def scan_risk_moment(st: PartitionState, seg: Segment, true_known: bool) -> RiskMoment:
    """When time retention deletes ``seg`` (:mod:`logdoctor.checks.retention_risk`, the `retention` command's
    rule), from what the scan knows of the partition: every segment's largest timestamp as the broker reads
    it (the .log mtime where not read yet), the log start offset, the log end offset and high watermark."""
    from logdoctor.checks.tiered import tiering
    from logdoctor.logdir.offsets import log_start_offsets

    task = st.task
    infos = [st.infos[s.base_offset] for s in st.segments]
    broker = [(i.base_offset, i.size, broker_timestamp(i)) for i in infos]
    true = [(i.base_offset, i.size, true_timestamp(i)) for i in infos]
    first = st.segments[0].base_offset
    cp = task.log_start_checkpoint
    tier = tiering(task.topic, task.topic_config, task.remote_evidence, cp, first)
    lso, local = log_start_offsets(cp, first, tier.remote_log_enabled)
    leo = st.log_end_offset if st.log_end_offset is not None else st.segments[-1].base_offset
    kw = round_arguments(
        lso if lso is not None else first,
        local if local is not None else first,
        leo,
        task.high_watermark,
        topic_config(st),
        tier.remote_log_enabled,
    )
    k = next(n for n, s in enumerate(st.segments) if s is seg)
    return moment_of(broker, true if true_known else None, k, st.options.now_ms, kw)


def report_risk(
    st: PartitionState,
    seg: Segment,
    info: SegmentInfo,
    cause: str,
    moment: RiskMoment,
    true: int | None,
    sound: bool | None,
) -> None:
    """The RETENTION_RISK of ``seg`` (``true``: its records' largest timestamp, None: not read, as in
    --quick; ``sound``: :func:`sound_but_unreadable`, None where not judged), carrying the INDEX_CORRUPT it
    absorbs."""
    cfg = topic_config(st)
    path = seg.timeindex_file or seg.log_file
    cause, also, root, position = root_cause_fields(str(path), cause, st)
    broker = info.broker_largest_ts
    st.make(
        "RETENTION_RISK",
        path,
        case="permission-only" if sound else None,
        severity=moment.severity,
        position=position,
        offset=seg.base_offset,
        also=also,
        cause=cause[0].upper() + cause[1:],
        broker_ts=broker,
        broker_ts_iso=iso(broker),
        true_ts="unknown" if true is None else true,
        true_ts_iso="not read in --quick; run the default scan" if true is None else iso(true),
        retention_ms=cfg.retention_ms.value,
        config=cfg.describe(),
        when=moment.when(),
        segment=seg.log_file,
        permission=permission_fix(st, info, str(path)),
        user=st.task.broker_user.name,
        details={
            "segment": seg.log_file,
            "broker_largest_timestamp": broker,
            "broker_timestamp_source": info.broker_ts_source,
            "true_largest_timestamp": true,
            "topic_config": cfg.to_json(),
            "cause": cause,
            **({} if sound is None else {"time_index_sound": sound}),
            **moment.to_json(),
            **root,
        },
    )


def check_retention_risk(st: PartitionState, seg: Segment, info: SegmentInfo, cause: str | None) -> None:
    """Compare the broker's largest timestamp with the true one (which must be known by now), and say when
    time retention deletes the segment (:func:`scan_risk_moment`)."""
    broker = info.broker_largest_ts
    true = info.true_largest_ts
    cfg = topic_config(st)
    if broker is None or not cfg.time_retention:
        return  # compact-only or retention.ms=-1: time retention deletes nothing, whatever the timestamp
    now = st.options.now_ms
    path = seg.timeindex_file or seg.log_file
    if true is not None and suspicious(broker, true):
        moment = scan_risk_moment(st, seg, true_known=True)
        if cause is None:
            cause = (
                f"the last entry of {path} (timestamp {broker}) is older than the segment's records "
                "(a truncated or stale time index)"
                if info.broker_ts_source == "timeindex"
                else f"the .log mtime ({broker}) is older than the segment's records"
            )
        report_risk(st, seg, info, cause, moment, true, sound_but_unreadable(st, info, str(path)))
    elif now > 0 and broker > now + RISK_TOLERANCE_MS and (true is None or true > now + RISK_TOLERANCE_MS):
        # a producer's clock a moment ahead of the broker's is noise on a live broker, as RETENTION_RISK's
        # tolerance is the other way: only a minute and more keeps the segment from time retention
        st.make(
            "RETENTION_BLOCKED",
            path,
            offset=seg.base_offset,
            segment=seg.log_file,
            broker_ts=broker,
            broker_ts_iso=iso(broker),
            ahead=duration(broker - now),
            details={"broker_largest_timestamp": broker, "now": now},
        )

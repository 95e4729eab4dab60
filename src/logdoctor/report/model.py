"""What the HTML report shows, as plain data: normalised from a scan result or a fleet census.

The report never depends on how its input was produced. A scan result may come as the
:class:`logdoctor.checks.scanner.ScanReport` object or as its ``to_json()`` dict; a census as a
mapping or an object whose tables (``replicas``, ``log_dirs``, ``findings``, optionally
``segments``) are lists of dicts, pandas DataFrames, pyarrow Tables or anything with ``to_pylist``
/ ``to_dict("records")`` / ``toPandas()``. Column names are matched through a few aliases (see
``_ALIASES``) so that small naming differences between producers do not break the page.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from logdoctor.checks.context import DEFAULT_RETENTION_MS
from logdoctor.checks.topic_config import ConfigInputs, TopicConfig, TopicConfigResolver
from logdoctor.logdir.disk import DiskUsage, disk_usage
from logdoctor.logdir.names import format_partition_dir, parse_segment_file

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}

#: a broker as the input names it: its id (scan: meta.properties) or a label (census: "broker-1")
Broker = int | str | None

#: finding codes that mark a segment's files as damaged
CORRUPT_CODES = frozenset({"LOG_CORRUPT", "INDEX_CORRUPT", "SEGMENT_BASE_OFFSET_MISMATCH"})
RISK_CODE = "RETENTION_RISK"

# segment flags (bit mask, also used by the page's script)
FLAG_RISK = 1  # RETENTION_RISK: deleted early because of a wrong largest timestamp
FLAG_CORRUPT = 2  # LOG_CORRUPT / INDEX_CORRUPT / SEGMENT_BASE_OFFSET_MISMATCH on one of its files
FLAG_EXPIRED = 4  # deleted by the next retention round (checks.retention, the active segment included)
FLAG_ACTIVE = 8  # the partition's last (active) segment


@dataclass(slots=True)
class SegmentView:
    base_offset: int
    size: int
    last_offset: int | None = None
    min_timestamp: int | None = None  # first batch's first timestamp (cheap; min in practice)
    broker_largest_timestamp: int | None = None  # LogSegment.largestTimestamp (time index / mtime)
    broker_timestamp_source: str = ""
    true_largest_timestamp: int | None = None  # max batch timestamp in the .log
    flags: int = 0
    findings: list[int] = field(default_factory=list)  # indexes into ReportData.findings
    mtime_ms: int | None = None
    recovered: bool = False  # recovery rebuilds its time index at the next start (scan's SegmentInfo)
    retention_reason: str | None = None  # why the next retention round deletes it (checks.retention)


@dataclass(frozen=True, slots=True)
class RemoteTierView:
    """A tiered partition's remote tier, from the replay of ``__remote_log_metadata`` (the inventory's and
    census's ``remote_*`` columns): its COPY_SEGMENT_FINISHED segments, their bytes, [start, end)."""

    segments: int
    bytes: int
    start_offset: int | None
    end_offset: int | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RemoteTierView | None:
        """From a row with the ``remote_*`` columns; None when it has no remote segment."""
        n = _int(_get(row, "remote_segments"))
        if not n:
            return None
        return cls(n, _int(_get(row, "remote_bytes")) or 0, _int(_get(row, "remote_log_start_offset")),
                   _int(_get(row, "remote_log_end_offset")))


@dataclass(slots=True)
class PartitionView:
    topic: str
    partition: int
    log_dir: str
    path: str
    broker: Broker = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    recovery_point: int | None = None
    bytes: int = 0
    segment_count: int = 0
    lag: int | None = None
    findings: list[int] = field(default_factory=list)
    worst: int = -1  # SEVERITY_RANK of the worst finding, -1 none
    segments: list[SegmentView] | None = None  # None: no per-segment data
    raw_segments: list[dict[str, Any]] | None = None  # per-segment figures the input carried
    topic_config: TopicConfig | None = None  # the retention settings applied (checks.topic_config)
    partition_high_watermark: int | None = None  # the highest high watermark among its replicas (census)
    #: the first offset kept locally (UnifiedLog.localLogStartOffset); below it a tiered partition's
    #: records are in the remote tier (checks.tiered); None: the input did not say (then: the log start)
    local_log_start_offset: int | None = None
    tiered: bool = False
    remote: RemoteTierView | None = None  # a tiered partition's remote tier (None: not tiered or unknown)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(slots=True)
class DiskView:
    log_dir: str
    broker: Broker = None
    kafka_bytes: int = 0  # bytes of partition data in this log dir
    partitions: int = 0
    total_bytes: int | None = None  # the file system's size
    used_bytes: int | None = None
    free_bytes: int | None = None

    @property
    def usage(self) -> DiskUsage:
        """The file system's figures with df's definitions (logdoctor.logdir.disk: free = available)."""
        return DiskUsage(self.log_dir, self.total_bytes, self.used_bytes, self.free_bytes, "report")

    @property
    def fullness(self) -> float | None:
        """df's used / (used + available), unrounded."""
        return self.usage.used_fraction

    @property
    def used_percent(self) -> int | None:
        """df's Use% (rounded up): the number every command prints for this file system."""
        return self.usage.used_percent


@dataclass(slots=True)
class ReplicaView:
    topic: str
    partition: int
    broker: Broker
    log_dir: str
    log_start_offset: int | None
    log_end_offset: int | None
    high_watermark: int | None = None  # this replica's own replication-offset-checkpoint entry
    bytes: int = 0
    lag: int = 0  # behind the highest log end offset among the partition's replicas
    partition_high_watermark: int | None = None  # the highest checkpointed high watermark of its replicas
    local_log_start_offset: int | None = None  # UnifiedLog.localLogStartOffset (tiered: above the log start)
    tiered: bool = False
    remote: RemoteTierView | None = None  # the remote tier this replica's broker knows (tiered partitions)


@dataclass(slots=True)
class FindingView:
    code: str
    severity: str  # "error" | "warning" | "info"
    path: str
    message: str
    fix: str
    position: int | None = None
    offset: int | None = None
    broker: Broker = None
    command: str | None = None  # the census's fix_command, when it gave one
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return SEVERITY_RANK.get(self.severity, 0)


@dataclass(slots=True)
class ReportData:
    kind: str  # "scan" | "fleet"
    title: str
    now_ms: int
    retention_ms: int
    partitions: list[PartitionView]
    disks: list[DiskView]
    findings: list[FindingView]
    replicas: list[ReplicaView] = field(default_factory=list)
    brokers: list[Broker] = field(default_factory=list)
    depth: str | None = None
    #: a census's compaction table (checks.compaction.compaction_row per compacted replica); None: none given
    compaction: list[dict[str, Any]] | None = None


# --- generic row access ---------------------------------------------------------------------------

_ALIASES: dict[str, tuple[str, ...]] = {
    "broker": ("broker", "broker_id", "node_id", "node", "broker.id"),
    "log_dir": ("log_dir", "logdir", "dir", "log_dir_path"),
    "topic": ("topic",),
    "partition": ("partition", "partition_id"),
    "log_start_offset": ("log_start_offset", "start_offset", "lso"),
    "log_end_offset": ("log_end_offset", "end_offset", "leo"),
    "high_watermark": ("high_watermark", "hw"),
    "recovery_point": ("recovery_point",),
    "bytes": ("bytes", "size_bytes", "size", "log_bytes", "kafka_bytes"),
    "segments": ("segments", "segment_count"),
    "lag": ("lag", "offset_lag", "lag_offsets"),
    "total_bytes": ("total_bytes", "disk_total_bytes", "disk_total", "capacity_bytes", "capacity"),
    "used_bytes": ("used_bytes", "disk_used_bytes", "disk_used"),
    "free_bytes": ("free_bytes", "disk_free_bytes", "disk_free", "available_bytes", "disk_available_bytes"),
    "fullness": ("fullness", "disk_fullness", "used_fraction", "disk_used_fraction"),
    "path": ("path", "file"),
    "base_offset": ("base_offset",),
    "last_offset": ("last_offset",),
    "min_timestamp": ("min_timestamp", "first_timestamp", "min_ts"),
    "broker_largest_timestamp": ("broker_largest_timestamp", "broker_largest_ts", "largest_timestamp"),
    "broker_timestamp_source": ("broker_timestamp_source", "broker_ts_source"),
    "true_largest_timestamp": ("true_largest_timestamp", "true_largest_ts", "max_timestamp"),
}


def _get(row: Mapping[str, Any], key: str, default: Any = None) -> Any:
    for name in _ALIASES.get(key, (key,)):
        if name in row:
            v = row[name]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                return default
            return v
    return default


def _int(v: Any) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def rows(table: Any) -> list[dict[str, Any]]:
    """Any table-like value as a list of dicts (None: [])."""
    if table is None:
        return []
    if hasattr(table, "toPandas") and not hasattr(table, "to_dict"):  # a Spark DataFrame
        table = table.toPandas()
    if hasattr(table, "to_pylist"):  # pyarrow Table / RecordBatch
        return [dict(r) for r in table.to_pylist()]
    if hasattr(table, "to_dict") and hasattr(table, "columns"):  # pandas DataFrame
        return [dict(r) for r in table.to_dict("records")]
    out: list[dict[str, Any]] = []
    for r in table:
        if isinstance(r, Mapping):
            out.append(dict(r))
        elif hasattr(r, "to_json"):
            out.append(r.to_json())
        elif hasattr(r, "asDict"):  # a Spark Row
            out.append(r.asDict(recursive=True))
        elif hasattr(r, "__dataclass_fields__"):
            out.append({k: getattr(r, k) for k in r.__dataclass_fields__})
        else:
            out.append(dict(r))
    return out


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def _broker(v: Any) -> Broker:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, int | float):
        return int(v)
    text = str(v)
    return int(text) if text.isdigit() else text


#: a replica without a replication-offset-checkpoint entry: its high watermark is not known offline
NO_HIGH_WATERMARK = "unknown (no replication-offset-checkpoint entry)"


def high_watermark_text(hw: int | None) -> str:
    """A checkpointed high watermark as a page shows it: the offset, or why there is none."""
    return NO_HIGH_WATERMARK if hw is None else f"{hw:,}"


def broker_label(b: Broker) -> str:
    if b is None:
        return "?"
    return f"broker {b}" if isinstance(b, int) else b


def broker_key(b: Broker) -> tuple:
    """Natural order: broker 2 before broker 10, ids before labels."""
    if b is None:
        return (2,)
    if isinstance(b, int):
        return (0, b)
    return (1, *[(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", b) if t])


def _severity(v: Any) -> str:
    if hasattr(v, "label"):
        return str(v.label)
    if isinstance(v, int) and not isinstance(v, bool):
        return {0: "info", 1: "warning", 2: "error"}.get(v, "info")
    s = str(v).lower()
    return s if s in SEVERITY_RANK else "info"


def finding_view(obj: Any, broker: Broker = None) -> FindingView:
    d = obj if isinstance(obj, Mapping) else obj.to_json() if hasattr(obj, "to_json") else vars(obj)
    return FindingView(
        code=str(d.get("code", "?")),
        severity=_severity(d.get("severity", "info")),
        path=str(d.get("path") or ""),
        message=str(d.get("message") or ""),
        fix=str(d.get("fix") or ""),
        position=_int(d.get("position")),
        offset=_int(d.get("offset")),
        broker=_broker(_get(d, "broker", broker)),
        command=str(d["fix_command"]) if d.get("fix_command") else None,
        details=dict(d.get("details") or {}),
    )


def _disk(path: str) -> tuple[int | None, int | None, int | None]:
    """(total, used, available) bytes of the file system holding ``path``, as df prints them."""
    u = disk_usage(path)
    return u.total_bytes, u.used_bytes, u.available_bytes


# --- attaching findings to partitions and segments -------------------------------------------------


def sort_findings(findings: list[FindingView]) -> None:
    """Worst first, then by code and place: the order of the table and of what a size cap keeps."""
    findings.sort(key=lambda f: (-f.rank, f.code, f.path, -1 if f.position is None else f.position))


def attach_findings(partitions: list[PartitionView], findings: list[FindingView]) -> None:
    """Give each partition the indexes of its findings (by folder)."""
    by_path = {os.path.normpath(p.path): p for p in partitions}
    for i, f in enumerate(findings):
        if not f.path:
            continue
        p = os.path.normpath(f.path)
        part = by_path.get(p) or by_path.get(os.path.dirname(p))
        if part is None:
            seg = f.details.get("segment") if isinstance(f.details, dict) else None
            if isinstance(seg, str):
                part = by_path.get(os.path.dirname(os.path.normpath(seg)))
        if part is not None:
            part.findings.append(i)
            part.worst = max(part.worst, f.rank)


def finding_segment(f: FindingView) -> int | None:
    """The base offset of the segment a finding's file belongs to, if it is a segment file."""
    name = parse_segment_file(os.path.basename(f.path))
    if name is not None and not name.suffix.startswith(".snapshot"):
        return name.base_offset
    seg = f.details.get("segment") if isinstance(f.details, dict) else None
    if isinstance(seg, str):
        name = parse_segment_file(os.path.basename(seg))
        if name is not None:
            return name.base_offset
    return None


def flag_segments(part: PartitionView, findings: list[FindingView], now_ms: int) -> None:
    """Set each segment's flags from the partition's findings, and FLAG_EXPIRED on the segments the next
    retention round deletes, judged by :func:`logdoctor.checks.retention_round.partition_verdicts` with the
    partition's topic config: the same verdicts `logdoctor retention` prints."""
    if part.segments is None:
        return
    by_base = {s.base_offset: s for s in part.segments}
    for i in part.findings:
        f = findings[i]
        base = finding_segment(f)
        seg = by_base.get(base) if base is not None else None
        if seg is None:
            continue
        seg.findings.append(i)
        if f.code == RISK_CODE:
            seg.flags |= FLAG_RISK
            d = f.details
            root = d.get("root_cause")
            if isinstance(root, Mapping) and root.get("code") in CORRUPT_CODES:
                seg.flags |= FLAG_CORRUPT  # one finding for both: its root cause is a damaged index
            if seg.true_largest_timestamp is None and isinstance(d.get("true_largest_timestamp"), int):
                seg.true_largest_timestamp = d["true_largest_timestamp"]
            if isinstance(d.get("broker_largest_timestamp"), int):
                seg.broker_largest_timestamp = d["broker_largest_timestamp"]
        elif f.code in CORRUPT_CODES:
            seg.flags |= FLAG_CORRUPT
    if part.segments:
        part.segments[-1].flags |= FLAG_ACTIVE
    for seg, reason in zip(part.segments, retention_verdicts(part, now_ms), strict=True):
        seg.retention_reason = reason
        if reason is not None:
            seg.flags |= FLAG_EXPIRED


def retention_verdicts(part: PartitionView, now_ms: int) -> list[str | None]:
    """Why the next retention round deletes each segment (None: kept; all None when it cannot be judged)."""
    from logdoctor.checks.retention_round import RetentionConfig, partition_verdicts, retention_timestamp

    segs = part.segments or []
    cfg = part.topic_config
    lso, leo = part.log_start_offset, part.log_end_offset
    local = part.local_log_start_offset if part.local_log_start_offset is not None else lso
    if not segs or cfg is None or lso is None or leo is None or local is None:
        return [None] * len(segs)
    rows = []
    for s in segs:
        mtime = s.mtime_ms if s.mtime_ms is not None else s.broker_largest_timestamp
        if mtime is None:
            return [None] * len(segs)
        ts = retention_timestamp(s.broker_largest_timestamp, s.true_largest_timestamp, mtime, s.recovered)
        rows.append((s.base_offset, s.size, ts))
    # a tiered partition: local retention on the local log, and only uploaded segments go (checks.retention);
    # the highest offset in remote storage is the remote tier's end from the replay (None: nothing known)
    remote = part.remote if part.tiered else None
    highest = remote.end_offset - 1 if remote is not None and remote.end_offset is not None else None
    reasons, *_ = partition_verdicts(
        rows, log_start_offset=local if part.tiered else lso, log_end_offset=leo,
        high_watermark=part.high_watermark, config=RetentionConfig.of(cfg, part.tiered), now_ms=now_ms,
        remote_log_start_offset=lso if part.tiered else None, highest_remote_offset=highest,
    )
    return reasons


def _topic_config(value: Any, topic: str) -> TopicConfig | None:
    if isinstance(value, TopicConfig):
        return value
    if isinstance(value, Mapping):
        try:
            return TopicConfig.from_json(topic, value)
        except (KeyError, TypeError, ValueError):
            return None
    return None


def resolve_topic_configs(partitions: list[PartitionView], config_inputs: ConfigInputs | None,
                          dirs_of: Mapping[Broker, list[str]], retention: int | None = None) -> None:
    """Give every partition without one the topic config its broker applies (one resolver per broker:
    its log dirs' KRaft metadata log, ``config_inputs``; ``retention`` as --retention-ms)."""
    inputs = config_inputs or ConfigInputs()
    if retention is not None:
        inputs = dataclasses.replace(
            inputs, broker_overrides={**inputs.broker_overrides, "log.retention.ms": str(retention)}
        )
    resolvers: dict[Any, TopicConfigResolver] = {}
    for p in partitions:
        if p.topic_config is not None:
            continue
        key = p.broker if p.broker is not None else p.log_dir
        r = resolvers.get(key)
        if r is None:
            dirs = dirs_of.get(p.broker, []) if p.broker is not None else []
            r = resolvers[key] = TopicConfigResolver.for_log_dirs(dirs or [p.log_dir], inputs)
        p.topic_config = r.resolve(p.topic)


# --- scan results ---------------------------------------------------------------------------------


def _retention_ms(retention: Any) -> int:
    if retention is None:
        return DEFAULT_RETENTION_MS
    if isinstance(retention, int):
        return retention
    ms = _field(retention, "retention_ms")
    if ms is None:
        cfg = _field(retention, "config")
        ms = _field(cfg, "retention_ms") if cfg is not None else None
    if ms is None:  # a RetentionReport: its partitions carry the config
        parts = _field(retention, "partitions") or []
        for p in parts:
            ms = _field(p, "retention_ms") or _field(_field(p, "config") or {}, "retention_ms")
            if ms is not None:
                break
    return int(ms) if ms is not None else DEFAULT_RETENTION_MS


def _segment_rows(p: Any) -> list[dict[str, Any]] | None:
    infos = _field(p, "segment_infos")
    if infos is None and isinstance(p, Mapping) and isinstance(p.get("segments"), list):
        infos = p["segments"]
    if not infos:
        return None
    return rows(infos)


def from_scan(
    result: Any, *, now_ms: int | None = None, retention: Any = None, title: str | None = None,
    config_inputs: ConfigInputs | None = None,
) -> ReportData:
    """Normalise a scan result (ScanReport or its JSON dict)."""
    now = now_ms if now_ms is not None else _int(_field(result, "now_ms"))
    if now is None:
        import time

        now = int(time.time() * 1000)
    depth = _field(result, "depth")
    if depth is not None and not isinstance(depth, str):
        depth = depth.name.lower()
    dirs_in = rows(_field(result, "log_dirs") or [])
    findings = [finding_view(f) for f in (_field(result, "findings") or [])]
    node_of_dir: dict[str, Broker] = {}
    for d in dirs_in:
        node_of_dir[os.path.normpath(str(d.get("path")))] = _int(d.get("node_id"))
    remote_md = _field(result, "remote")  # the scan's replay of __remote_log_metadata (a ScanReport's)
    partitions: list[PartitionView] = []
    for p in _field(result, "partitions") or []:
        row = p if isinstance(p, Mapping) else None
        get = (lambda k, row=row: row.get(k)) if row is not None else (lambda k, p=p: getattr(p, k, None))
        kind = get("kind")
        if kind not in (None, "log"):
            continue
        log_dir = str(get("log_dir"))
        topic, number = str(get("topic")), int(get("partition"))
        path = get("path") or os.path.join(log_dir, format_partition_dir(topic, number))
        segs = get("segments")
        partitions.append(PartitionView(
            topic=topic, partition=number, log_dir=log_dir, path=str(path),
            broker=node_of_dir.get(os.path.normpath(log_dir)),
            log_start_offset=_int(get("log_start_offset")), log_end_offset=_int(get("log_end_offset")),
            high_watermark=_int(get("high_watermark")), recovery_point=_int(get("recovery_point")),
            bytes=_int(get("bytes")) or 0, segment_count=segs if isinstance(segs, int) else len(segs or []),
            raw_segments=_segment_rows(p), topic_config=_topic_config(get("topic_config"), topic),
            local_log_start_offset=_int(get("local_log_start_offset")),
            tiered=bool(get("tiered") or get("remote_log_enabled")),
            remote=_remote_of(remote_md, get, topic, number),
        ))
    for f in findings:
        if f.broker is None:
            f.broker = _broker_of_path(f.path, node_of_dir)
    dirs = [(str(d.get("path")), _int(d.get("node_id"))) for d in dirs_in]
    resolve_topic_configs(partitions, config_inputs, {None: [d for d, _n in dirs]},
                          retention if isinstance(retention, int) else None)
    disks = _disks_from_partitions(partitions, dirs)
    brokers = sorted({b for b in node_of_dir.values() if b is not None}, key=broker_key)
    title = title or "logdoctor scan: " + ", ".join(str(d.get("path")) for d in dirs_in[:3]) + (
        " ..." if len(dirs_in) > 3 else "")
    sort_findings(findings)
    attach_findings(partitions, findings)
    return ReportData("scan", title, now, _retention_ms(retention), partitions, disks, findings,
                      brokers=brokers, depth=depth)


def _remote_of(remote_md: Any, get: Any, topic: str, partition: int) -> RemoteTierView | None:
    if remote_md is None or isinstance(remote_md, Mapping):
        return None
    from logdoctor.checks.inventory import remote_columns

    return RemoteTierView.of(remote_columns(remote_md, "log", get("topic_id"), topic, partition))


def _broker_of_path(path: str, node_of_dir: Mapping[str, Broker]) -> Broker:
    p = os.path.normpath(path)
    for d, node in node_of_dir.items():
        if p == d or p.startswith(d + os.sep):
            return node
    return None


def _disks_from_partitions(parts: Iterable[PartitionView], dirs: list[tuple[str, Broker]]) -> list[DiskView]:
    out: dict[str, DiskView] = {}
    for path, node in dirs:
        out[os.path.normpath(path)] = DiskView(path, node, 0, 0, *_disk(path))
    for p in parts:
        key = os.path.normpath(p.log_dir)
        d = out.get(key)
        if d is None:
            d = out[key] = DiskView(p.log_dir, p.broker, 0, 0, *_disk(p.log_dir))
        d.kafka_bytes += p.bytes
        d.partitions += 1
    return list(out.values())


# --- fleet census ---------------------------------------------------------------------------------


def from_census(census: Any, *, now_ms: int | None = None, retention: Any = None,
                title: str | None = None, config_inputs: ConfigInputs | None = None) -> ReportData:
    """Normalise a fleet census: replicas (per broker and topic-partition), log dirs/disks, findings."""
    replicas_in = rows(_field(census, "replicas", "replica_offsets", "partitions"))
    disks_in = rows(_field(census, "log_dirs", "disks", "disk_usage"))
    findings_in = rows(_field(census, "findings"))
    segments_in = rows(_field(census, "segments"))
    now = now_ms if now_ms is not None else _int(_field(census, "now_ms"))
    if now is None:
        import time

        now = int(time.time() * 1000)
    explicit_retention = retention if isinstance(retention, int) else None
    if retention is None:
        retention = _int(_field(census, "retention_ms"))
    findings = [finding_view(f) for f in findings_in]

    replicas: list[ReplicaView] = []
    for r in replicas_in:
        log_dir = str(_get(r, "log_dir", ""))
        replicas.append(ReplicaView(
            topic=str(_get(r, "topic")), partition=int(_get(r, "partition")),
            broker=_broker(_get(r, "broker")),
            log_dir=log_dir, log_start_offset=_int(_get(r, "log_start_offset")),
            log_end_offset=_int(_get(r, "log_end_offset")), high_watermark=_int(_get(r, "high_watermark")),
            bytes=_int(_get(r, "bytes")) or 0, lag=_lag(_get(r, "lag")),
            partition_high_watermark=_int(_get(r, "partition_high_watermark")),
            local_log_start_offset=_int(_get(r, "local_log_start_offset")),
            tiered=bool(_get(r, "remote_storage_enabled") or _get(r, "tiered")),
            remote=RemoteTierView.of(r),
        ))
    # lag behind the partition's highest log end offset, when the census did not say
    # (within its cluster: the census never compares replicas of two clusters)
    best: dict[tuple[str, str, int], int] = {}
    for r, raw in zip(replicas, replicas_in, strict=True):
        if r.log_end_offset is not None:
            key = (str(_get(raw, "cluster", "") or ""), r.topic, r.partition)
            best[key] = max(best.get(key, r.log_end_offset), r.log_end_offset)
    for r, raw in zip(replicas, replicas_in, strict=True):
        if r.lag < 0:
            top = best.get((str(_get(raw, "cluster", "") or ""), r.topic, r.partition))
            r.lag = top - r.log_end_offset if top is not None and r.log_end_offset is not None else 0

    seg_rows: dict[str, list[dict[str, Any]]] = {}
    for s in segments_in:
        path = partition_path(str(_get(s, "log_dir", "")), str(_get(s, "topic")), int(_get(s, "partition")))
        seg_rows.setdefault(os.path.normpath(path), []).append(s)
    partitions: list[PartitionView] = []
    for r, raw in zip(replicas, replicas_in, strict=True):
        path = str(_get(raw, "path", "") or partition_path(r.log_dir, r.topic, r.partition))
        segs = seg_rows.get(os.path.normpath(path))
        partitions.append(PartitionView(
            topic=r.topic, partition=r.partition, log_dir=r.log_dir, path=path, broker=r.broker,
            log_start_offset=r.log_start_offset, log_end_offset=r.log_end_offset,
            high_watermark=r.high_watermark, recovery_point=_int(_get(raw, "recovery_point")), bytes=r.bytes,
            segment_count=_int(_get(raw, "segments")) or (len(segs) if segs else 0), lag=r.lag,
            raw_segments=sorted(segs, key=lambda s: int(_get(s, "base_offset", 0))) if segs else None,
            topic_config=_topic_config(_get(raw, "topic_config"), r.topic),
            partition_high_watermark=r.partition_high_watermark,
            local_log_start_offset=r.local_log_start_offset, tiered=r.tiered, remote=r.remote,
        ))

    disks: list[DiskView] = []
    seen: set[str] = set()
    for d in disks_in:
        log_dir = str(_get(d, "log_dir", _get(d, "path", "")))
        seen.add(os.path.normpath(log_dir))
        total, used = _int(_get(d, "total_bytes")), _int(_get(d, "used_bytes"))
        free = _int(_get(d, "free_bytes"))
        fullness = _get(d, "fullness")
        if total and used is None and free is not None:
            used = total - free
        if total and used is None and fullness is not None:
            used = int(total * float(fullness))
        if total and free is None and used is not None:
            free = total - used
        here = [p for p in partitions if os.path.normpath(p.log_dir) == os.path.normpath(log_dir)]
        kafka = _int(_get(d, "bytes"))
        if kafka is None:
            kafka = sum(p.bytes for p in here)
        parts = _int(_get(d, "partitions"))
        if parts is None:
            parts = len(here)
        disks.append(DiskView(log_dir, _broker(_get(d, "broker")), kafka, parts, total, used, free))
    missing = [p for p in partitions if os.path.normpath(p.log_dir) not in seen]
    if missing:
        disks.extend(_disks_from_partitions(missing, []))

    node_of_dir = {os.path.normpath(d.log_dir): d.broker for d in disks}
    for f in findings:
        if f.broker is None:
            f.broker = _broker_of_path(f.path, node_of_dir)
    brokers = sorted({r.broker for r in replicas if r.broker is not None}
                     | {d.broker for d in disks if d.broker is not None}, key=broker_key)
    dirs_of: dict[Broker, list[str]] = {}
    for d in disks:
        dirs_of.setdefault(d.broker, []).append(d.log_dir)
    resolve_topic_configs(partitions, config_inputs, dirs_of, explicit_retention)
    sort_findings(findings)
    attach_findings(partitions, findings)
    comp = _field(census, "compaction")
    return ReportData("fleet", title or f"logdoctor census: {len(brokers)} broker(s)", now,
                      _retention_ms(retention), partitions, disks, findings, replicas=replicas,
                      brokers=brokers, compaction=None if comp is None else rows(comp))


def _lag(v: Any) -> int:
    n = _int(v)
    return -1 if n is None else n


def partition_path(log_dir: str, topic: str, partition: int) -> str:
    """A replica's partition folder (the path of its findings)."""
    return os.path.join(log_dir, format_partition_dir(topic, partition))


def census_from_scans(scans: Mapping[int, Any]) -> dict[str, Any]:
    """A census in the shape :func:`from_census` reads, from one scan result per broker id.

    For fleets scanned broker by broker without Spark: replicas are the scanned partitions, disks
    the scanned log dirs (file-system figures read now), findings tagged with their broker.
    """
    replicas: list[dict[str, Any]] = []
    log_dirs: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    segments: list[dict[str, Any]] = []
    now = None
    for broker, result in sorted(scans.items()):
        now = now or _int(_field(result, "now_ms"))
        for d in rows(_field(result, "log_dirs") or []):
            total, used, free = _disk(str(d["path"]))
            log_dirs.append({"broker": broker, "log_dir": d["path"], "total_bytes": total, "used_bytes": used,
                             "free_bytes": free})
        for p in _field(result, "partitions") or []:
            j = p.to_json() if hasattr(p, "to_json") else dict(p)
            if getattr(p, "kind", "log") != "log":
                continue
            remote = _remote_of(_field(result, "remote"), lambda k, p=p: getattr(p, k, None), j["topic"],
                                j["partition"])
            tier = {} if remote is None else {
                "remote_segments": remote.segments, "remote_bytes": remote.bytes,
                "remote_log_start_offset": remote.start_offset, "remote_log_end_offset": remote.end_offset}
            path = getattr(p, "path", None) or j.get("path")
            replicas.append({"broker": broker, **j, **tier, "path": path})
            for s in _segment_rows(p) or []:
                segments.append({"broker": broker, "log_dir": j["log_dir"], "topic": j["topic"],
                                 "partition": j["partition"], **s})
        for f in _field(result, "findings") or []:
            j = f.to_json() if hasattr(f, "to_json") else dict(f)
            findings.append({**j, "broker": broker})
    for d in log_dirs:
        d["bytes"] = sum(r.get("bytes") or 0 for r in replicas if r["log_dir"] == d["log_dir"])
    return {"now_ms": now, "replicas": replicas, "log_dirs": log_dirs, "findings": findings,
            "segments": segments}

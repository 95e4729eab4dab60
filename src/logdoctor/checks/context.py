"""What one partition check gets (a picklable task) and gives back (a report)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from logdoctor.checks.access import BrokerUser
from logdoctor.checks.findings import Finding
from logdoctor.checks.tiered import BrokerRemoteEvidence
from logdoctor.checks.topic_config import DEFAULT_RETENTION_MS, ConfigInputs, TopicConfig
from logdoctor.logdir.disk import SimulatedDisk

__all__ = [
    "DEFAULT_RETENTION_MS",
    "ConfigInputs",
    "Depth",
    "PartitionReport",
    "PartitionTask",
    "ScanOptions",
    "SegmentInfo",
    "TopicConfig",
]


class Depth(enum.IntEnum):
    QUICK = 0
    DEFAULT = 1
    DEEP = 2


@dataclass(frozen=True, slots=True)
class ScanOptions:
    depth: Depth = Depth.DEFAULT
    now_ms: int = 0
    broker_user: BrokerUser | None = None  # None: the owner of each log dir
    #: --retention-ms: log.retention.ms for every topic without its own retention.ms (None: resolve it
    #: from server.properties / the KRaft metadata log / Kafka's default, checks.topic_config)
    retention_ms: int | None = None
    true_timestamps: bool = False  # walk every inactive segment for its real largest timestamp
    config_inputs: ConfigInputs | None = None  # --server-properties, --topic-config, --retention-bytes
    #: --remote-storage: the remote store (a folder or a URI pyarrow opens) the remote tier's findings list
    #: objects from (None: objects are not listed)
    remote_storage: str | None = None
    #: --remote-inventory: an S3 Inventory report's manifest.json, the store's listing for the audit
    #: (checks.remote_store; None: --remote-storage is listed directly, if given)
    remote_inventory: str | None = None
    #: disks the demo and tests simulate, keyed by a log dir's absolute path (logdir.disk: never a file
    #: or an option a user can set; None: every log dir's real file system, statvfs)
    simulated_disks: Mapping[str, SimulatedDisk] | None = field(default=None, hash=False)
    #: the command works on one broker (repair, the procedures): log dirs of several brokers given
    #: together are one LOG_DIRS_OF_DIFFERENT_BROKERS error. False (scan, the census): several brokers'
    #: dirs are how replicas are compared (REPLICA_DIVERGED), not an error.
    one_broker: bool = False
    #: keep every partition's producer state (PartitionReport.producers) though no __transaction_state
    #: partition is among the log dirs: the census and the inventory judge the coordinator's state across
    #: brokers (checks.transaction_state), so each broker's rows carry its replicas' producers
    keep_producers: bool = False


@dataclass(slots=True)
class PartitionTask:
    """Everything a worker needs for one partition folder (no shared state across processes). Never
    changed once made, though not ``frozen``: a frozen dataclass sets each of its 17 fields through
    ``object.__setattr__``, 3.8 us a task against 1.1 us, 0.14 s of CPU in a scan of 50,000 partitions
    (issue 49 goal 4; BENCHMARKS.md, "Scan", row "`scan --quick` of 50,000 empty partitions")."""

    log_dir: str
    path: str
    name: str
    topic: str
    partition: int
    kind: str  # names.DirKind value
    recovery_point: int | None
    log_start_checkpoint: int | None
    high_watermark: int | None
    clean_shutdown: bool
    broker_user: BrokerUser
    options: ScanOptions
    topic_config: TopicConfig | None = None  # the topic's effective retention settings (None: unknown)
    #: what the broker's log dirs show of remote storage (checks.tiered; None: not looked at)
    remote_evidence: BrokerRemoteEvidence | None = None
    #: transaction.max.timeout.ms and where it comes from (None: Kafka's default; checks.transactions)
    transaction_timeout: tuple[int, str] | None = None
    #: keep the loaded producer state in the report (``__transaction_state`` is among the inputs)
    keep_producers: bool = False
    #: the partition's cleaner-offset-checkpoint entry (None: none, or the file unreadable; checks.compaction)
    cleaner_checkpoint: int | None = None
    #: a broker holds the log dir's lock: what a running broker changes while the partition is read is its
    #: normal state, not a finding (checks.live)
    live: bool = False


@dataclass(slots=True)
class SegmentInfo:
    """Per-segment figures the retention simulation and the report use."""

    base_offset: int
    size: int
    mtime_ms: int
    broker_largest_ts: int | None = None  # what LogSegment.largestTimestamp would return
    broker_ts_source: str = ""  # "timeindex", "mtime", "unreadable timeindex"
    true_largest_ts: int | None = None  # max batch timestamp from the .log (None: not read)
    last_offset: int | None = None  # from the .log when read
    recovered: bool = False  # LogLoader.recoverLog rebuilds it at the next start (its indexes too)

    def to_json(self) -> dict[str, Any]:
        return {
            "base_offset": self.base_offset,
            "size": self.size,
            "mtime_ms": self.mtime_ms,
            "broker_largest_timestamp": self.broker_largest_ts,
            "broker_timestamp_source": self.broker_ts_source,
            "true_largest_timestamp": self.true_largest_ts,
            "last_offset": self.last_offset,
            "recovered_at_startup": self.recovered,
        }


@dataclass(slots=True)
class PartitionReport:
    topic: str
    partition: int
    log_dir: str
    path: str
    kind: str
    #: what the broker uses as the log start offset (with remote storage: the checkpoint entry, which
    #: may be below every local segment; logdir.offsets)
    log_start_offset: int | None = None
    #: the first offset kept locally (UnifiedLog.localLogStartOffset): max(log start, first segment)
    local_log_start_offset: int | None = None
    log_end_offset: int | None = None
    #: UnifiedLog.isRemoteLogEnabled as the evidence shows it (checks.tiered), and that evidence
    remote_log_enabled: bool = False
    tiering_evidence: str = ""
    segments: int = 0
    bytes: int = 0
    recovery_point: int | None = None
    high_watermark: int | None = None
    topic_id: str | None = None
    first_base_offset: int | None = None
    untrimmed_inactive_indexes: int = 0
    findings: list[Finding] = field(default_factory=list)
    segment_infos: list[SegmentInfo] = field(default_factory=list)
    bytes_read: int = 0
    topic_config: TopicConfig | None = None  # the retention settings the checks applied (None: none apply)
    #: the readable ``(epoch, start offset)`` entries of leader-epoch-checkpoint ([]: none; not in the JSON)
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)
    #: producer id -> (epoch, last timestamp, first offset of its open transaction or -1), as the broker
    #: loads them (checks.transactions; only with ``PartitionTask.keep_producers``; not in the JSON)
    producers: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    #: where the log cleaner stands on a compacted partition (checks.compaction; None: not compacted)
    cleaner: dict[str, Any] | None = None
    #: a live dir's partition: the size of its active segment's .log as listed, the moment it was read as of
    #: (every .log read up to its listed size: the log end offset is that moment's; checks.live). None: a
    #: stopped broker's dir
    read_as_of_bytes: int | None = None

    def to_json(self, configs: dict[int, Any] | None = None) -> dict[str, Any]:
        """``configs``: the JSON of each TopicConfig already made, by ``id`` (shared by the partitions of a
        report: one topic's partitions share its TopicConfig, whose JSON is then made once)."""
        cfg = self.topic_config
        cfg_json = None if cfg is None or configs is None else configs.get(id(cfg))
        if cfg is not None and cfg_json is None:
            cfg_json = cfg.to_json()
            if configs is not None:
                configs[id(cfg)] = cfg_json
        return {
            "topic": self.topic,
            "partition": self.partition,
            "log_dir": self.log_dir,
            "log_start_offset": self.log_start_offset,
            "local_log_start_offset": self.local_log_start_offset,
            "log_end_offset": self.log_end_offset,
            "tiered": self.remote_log_enabled,
            "tiered_evidence": self.tiering_evidence,
            "segments": self.segments,
            "bytes": self.bytes,
            "recovery_point": self.recovery_point,
            "high_watermark": self.high_watermark,
            "topic_config": cfg_json,
            "cleaner": self.cleaner,
            "read_as_of_bytes": self.read_as_of_bytes,
        }

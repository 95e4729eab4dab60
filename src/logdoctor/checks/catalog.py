"""The one catalog of scan findings: stable codes, default severity, message and fix templates.

Codes never change meaning once released; new conditions get new codes. Each template is a
``str.format`` string over the fields a check passes to :func:`make` (``path`` is always there).
Where a rule is subtle the Kafka source it follows is named (K: = path in apache/kafka).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logdoctor.checks.findings import Finding, Severity


@dataclass(frozen=True, slots=True)
class Entry:
    code: str
    severity: Severity
    title: str
    message: str  # template
    fix: str  # template
    source: str  # where in Kafka (or the field) the rule comes from


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

_ENTRIES = (
    Entry(
        "INDEX_CORRUPT",
        _E,
        "an offset/time/transaction index a broker's sanity check or lookup would reject",
        "{problem}. {verdict}",
        "Stop the broker, move {path} aside (keep a backup) and run `logdoctor repair index {segment}`; "
        "or let the broker rebuild it: delete the segment's .index and .timeindex and restart "
        "(recovery rebuilds them from the .log).",
        "K:core/.../log/OffsetIndex.scala, TimeIndex.scala (0.10-2.x), storage/.../OffsetIndex.java, "
        "TimeIndex.java, TransactionIndex.java sanityCheck; Log.loadSegmentFiles / LogLoader",
    ),
    Entry(
        "INDEX_MISSING",
        _W,
        "a .log without its .index (or .timeindex)",
        "{path} has no {missing}: {effect}",
        "Nothing is lost; to rebuild the indexes before the broker starts run `logdoctor repair index "
        "{path}`.",
        "K:storage/.../log/LogLoader.java loadSegmentFiles, LogSegment.sanityCheck",
    ),
    Entry(
        "RETENTION_RISK",
        _E,
        "time retention would use a wrong (too old) largest timestamp and delete the segment early",
        "{cause}: the broker would take largestTimestamp={broker_ts} ({broker_ts_iso}) for segment "
        "{segment}, but its records go up to {true_ts} ({true_ts_iso}); with retention.ms={retention_ms} "
        "it would delete the segment {when}",
        "Before starting the broker, rebuild the time index (`logdoctor repair index {segment}`) and fix "
        "ownership/permissions (the broker's user must read and write every file; "
        "`chown -R <kafka user> <log dir>`).",
        "K:storage/.../log/LogSegment.java largestTimestamp/maxTimestampSoFar, UnifiedLog "
        "deleteRetentionMsBreachedSegments; KAFKA-10207; field report 002 (largestTime=0)",
    ),
    Entry(
        "RETENTION_BLOCKED",
        _W,
        "records with timestamps in the future keep a segment from time retention",
        "segment {segment} has a largest timestamp {broker_ts} ({broker_ts_iso}), {ahead} in the future: "
        "time retention will not delete it (nor any later segment) until then",
        "Find the producer that writes future CreateTime timestamps, or set "
        "message.timestamp.after.max.ms / use LogAppendTime for the topic.",
        "K:UnifiedLog deletableSegments (stops at the first segment not deletable); KAFKA-18929",
    ),
    Entry(
        "CHECKPOINT_MISMATCH",
        _W,
        "a checkpoint file that disagrees with itself or with the log dir",
        "{problem}",
        "{fix}",
        "K:server-common/.../CheckpointFile.java; core/.../log/LogManager.scala loadLogs, "
        "checkpointLogRecoveryOffsets/LogStartOffsets; ReplicaManager high watermark checkpoints",
    ),
    Entry(
        "CHECKPOINT_CORRUPT",
        _E,
        "a checkpoint file the broker cannot parse",
        "{problem}; the broker rejects the whole file ({consequence})",
        "Rewrite it from the log dir: `logdoctor repair checkpoints {logdir}`, or delete it while the broker "
        "is stopped ({delete_effect}).",
        "K:server-common/.../CheckpointFile.java ('Malformed line in checkpoint file', 'Expected n entries')",
    ),
    Entry(
        "LOG_CORRUPT",
        _E,
        "a .log with bad bytes: CRC mismatch, truncated or zero-filled tail, offsets out of order",
        "{problem}{consequence}",
        "Stop the broker; if other replicas are in sync let this one re-replicate (delete the partition "
        "folder); otherwise `logdoctor repair truncate {path} --at {position}` keeps the {valid_bytes} "
        "valid bytes before the damage.",
        "K:storage/.../log/LogSegment.java recover, LogLoader.recoverLog; clients/.../record/"
        "DefaultRecordBatch.java ensureValid, FileLogInputStream",
    ),
    Entry(
        "SEGMENT_BASE_OFFSET_MISMATCH",
        _E,
        "a segment whose records do not fit its base offset",
        "{problem}",
        "Stop the broker and move the segment aside; the broker recovers by deleting or splitting it "
        "({broker_action}).",
        "K:storage/.../log/LogSegment.java ensureOffsetInRange, LocalLog.splitOverflowedSegment",
    ),
    Entry(
        "UNCLEAN_SHUTDOWN",
        _W,
        "the broker did not shut down cleanly: the next start recovers segments",
        "{logdir} has no .kafka_cleanshutdown marker{evidence}: at the next start the broker recovers every "
        "segment from each partition's recovery point (reads and re-validates them, rebuilds their indexes)",
        "Nothing to fix if the scan finds no corruption; expect a longer startup. Give the broker enough "
        "time to stop (systemd TimeoutStopSec, controlled.shutdown).",
        "K:core/.../log/LogManager.scala loadLogs (CleanShutdownFileHandler), LogLoader.recoverLog",
    ),
    Entry(
        "BROKER_RUNNING",
        _E,
        "a broker holds the log dir's lock",
        "{path} is locked{holder}: a broker is running on {logdir}; files change under the scan and "
        "nothing may be repaired",
        "Stop the broker before trusting this scan or repairing anything.",
        "K:server-common/.../util/FileLock.java (tryLock on .lock)",
    ),
    Entry(
        "ORPHAN_FILE",
        _W,
        "a leftover the broker deletes or renames at startup",
        "{problem}",
        "{fix}",
        "K:storage/.../log/LogLoader.java removeTempFilesAndCollectSwapFiles, loadSegmentFiles; "
        "core/.../log/LogManager.scala (-delete, -future, -stray folders)",
    ),
    Entry(
        "PERMISSION_DENIED",
        _E,
        "a file or folder the broker's user cannot read or write",
        "{path} is not {need} by {user} ({why}){consequence}",
        "Fix ownership and mode before starting the broker: `chown {user} {path}` and "
        "`chmod u+{mode_fix} {path}` (or `chown -R` the whole log dir).",
        "K:storage/.../log/LogLoader.java ('Could not read file'); field report 002",
    ),
    Entry(
        "META_PROPERTIES_MISMATCH",
        _E,
        "log dirs of one broker that disagree in meta.properties",
        "{problem}",
        "Every log dir of a broker must carry the same cluster.id and broker.id/node.id: restore the right "
        "meta.properties (copy it from a sibling log dir, keeping directory.id unique per dir).",
        "K:metadata/.../properties/MetaPropertiesEnsemble.java verify; core/.../KafkaServer.scala "
        "getBrokerMetadataAndOfflineDirs ('Invalid cluster.id', 'doesn't match stored broker.id')",
    ),
    Entry(
        "META_PROPERTIES_INVALID",
        _E,
        "meta.properties missing, empty or unreadable",
        "{problem}",
        "{fix}",
        "K:metadata/.../properties/MetaProperties.java, MetaPropertiesEnsemble.java",
    ),
    Entry(
        "DUPLICATE_PARTITION",
        _E,
        "the same partition in two log dirs of one broker",
        "{problem}",
        "Keep the copy with the higher log end offset (compare with `logdoctor scan --json`), move the "
        "other folder out of the log dirs, then start the broker.",
        "K:core/.../log/LogManager.scala loadLog ('Duplicate log directories for ... are found')",
    ),
    Entry(
        "INVALID_DIR_NAME",
        _E,
        "a folder in a log dir that is not a partition folder",
        "{problem}",
        "Move {path} out of the log dir (the broker treats every folder in it as a partition).",
        "K:core/.../log/LocalLog.scala parseTopicPartitionName",
    ),
    Entry(
        "PARTITION_METADATA_INVALID",
        _E,
        "partition.metadata the broker cannot read",
        "{problem}",
        "Delete {path} while the broker is stopped; the broker writes it again from the topic id it "
        "gets from the controller.",
        "K:storage/.../checkpoint/PartitionMetadataFile.java",
    ),
    Entry(
        "TOPIC_ID_MISMATCH",
        _E,
        "partition.metadata topic ids that disagree",
        "{problem}",
        "Find which topic id is current (kafka-topics --describe); a partition folder with another id "
        "belongs to a deleted topic: move it out of the log dir.",
        "K:core/.../log/UnifiedLog.scala initializeTopicId / assignTopicId ('Topic Id in memory ... does "
        "not match the topic Id ... in partition metadata file')",
    ),
    Entry(
        "LEADER_EPOCH_BEYOND_LOG_END",
        _W,
        "a leader-epoch-checkpoint entry starting beyond the log end offset",
        "{problem}",
        "The broker truncates the epoch cache at startup; if this partition's segments were removed by "
        "hand, also check the other checkpoints.",
        "K:storage/.../epoch/LeaderEpochFileCache.java truncateFromEndAsyncFlush; LogLoader.load",
    ),
    Entry(
        "PRODUCER_SNAPSHOT_AHEAD",
        _W,
        "a producer state snapshot beyond the log end offset",
        "{problem}",
        "The broker deletes it at startup and rebuilds producer state from the log (slow for large "
        "partitions); nothing to do unless segments were removed by hand.",
        "K:storage/.../log/ProducerStateManager.java truncateAndReload / removeStraySnapshots",
    ),
    Entry(
        "PRODUCER_SNAPSHOT_CORRUPT",
        _W,
        "a producer state snapshot the broker cannot read",
        "{problem}",
        "The broker deletes it and rebuilds producer state from an older snapshot and the log (slow for "
        "large partitions); nothing is lost unless idempotence state is needed before the rebuild ends.",
        "K:storage/.../log/ProducerStateManager.java loadFromSnapshot ('Failed to load producer snapshot')",
    ),
    Entry(
        "UNKNOWN_FILE",
        _I,
        "a file Kafka neither writes nor reads",
        "{path}: {problem}",
        "Harmless to the broker; remove it to keep the log dir clean.",
        "K:storage/.../log/LogLoader.java (ignores unknown files)",
    ),
)

CATALOG: dict[str, Entry] = {e.code: e for e in _ENTRIES}


class _Fields(dict):
    """Missing template fields render as '' instead of raising."""

    def __missing__(self, key: str) -> str:
        return ""


def make(
    code: str,
    path: str,
    *,
    position: int | None = None,
    offset: int | None = None,
    severity: Severity | None = None,
    details: dict[str, Any] | None = None,
    **fields: Any,
) -> Finding:
    """Build a Finding from the catalog (unknown codes are a programming error: KeyError)."""
    entry = CATALOG[code]
    values = _Fields(fields)
    values.setdefault("path", path)
    if position is not None:
        values.setdefault("position", position)
    return Finding(
        code=code,
        severity=entry.severity if severity is None else severity,
        path=path,
        message=entry.message.format_map(values),
        fix=entry.fix.format_map(values),
        position=position,
        offset=offset,
        details=dict(details or {}),
    )


def codes() -> list[str]:
    return list(CATALOG)

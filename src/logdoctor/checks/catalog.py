"""The one catalog of findings: stable codes, default severity, message and fix templates.

Every code logdoctor reports is here, in three scopes: ``scan`` (per log dir: `logdoctor scan`,
`repair`), ``fleet`` (across brokers: `logdoctor census`) and ``dump`` (the entry-level mismatches of
`logdoctor dump --verify-index`, named after what DumpLogSegments reports; the dump builds its own
messages and points to the scan codes for the fix).

Codes never change meaning once released; new conditions get new codes. Each template is a
``str.format`` string over the fields a check passes to :func:`make` (``path`` is always there;
``logdir`` is the log dir the finding belongs to; ``repair`` is filled in by :func:`make` as the
dry-run ``logdoctor repair`` command for the code). Fix texts name only real commands and options
(tests/checks/test_fix_commands.py parses every one with the CLI). Where a rule is subtle the Kafka
source it follows is named (K: = path in apache/kafka).
"""

from __future__ import annotations

import enum
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.checks.findings import Finding, Severity


@dataclass(frozen=True, slots=True)
class Case:
    """One condition of a code with its own wording: message and fix templates over named fields
    (``fix`` None: the entry's fix). A check names the case and passes the facts; the words are here."""

    message: str
    fix: str | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    code: str
    severity: Severity
    title: str
    message: str  # template
    fix: str  # template
    source: str  # where in Kafka (or the field) the rule comes from
    scope: str = "scan"  # scan | fleet | dump (see the module docstring)
    cases: Mapping[str, Case] = field(default_factory=dict)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

#: where a fix text without a log dir would put one (never in a real finding: every check passes logdir)
LOGDIR_PLACEHOLDER = "LOGDIR"


#: What each Kafka version does with an empty meta.properties (read in apache/kafka at each tag):
#: 0.9-2.7 VerifiableProperties.getIntInRange("version") requires the key and its IllegalArgumentException
#: is not the IOException that would take only the dir offline (K:core/.../server/
#: BrokerMetadataCheckpoint.scala read, KafkaServer.getBrokerMetadataAndOfflineDirs); 2.8-3.6
#: RawMetaProperties.version defaults to 0 and
#: getBrokerMetadataAndOfflineDirs compares the dirs' Properties (an empty one differs from a full one:
#: InconsistentBrokerMetadataException), then KafkaServer.startup checkpoints ZkMetaProperties; 3.7-3.9
#: MetaProperties.Builder(Properties) defaults to V0, MetaPropertiesEnsemble.verify checks only the keys
#: present and KafkaServer.startup's Copier rewrites the file; KRaft: KafkaRaftServer.initializeLogDirs
#: ("Error: node ID not found in ..."), before 3.7 MetaProperties.parse (version 1, node.id, cluster.id).
META_PROPERTIES_EMPTY_BY_VERSION = (
    "Kafka 0.9 to 2.7 fail to start ('Missing required property 'version''); in ZooKeeper mode 2.8 to 3.6 "
    "read it as version 0 without broker.id or cluster.id and rewrite it at startup when every other log "
    "dir's meta.properties is empty or absent too, but refuse to start when another log dir holds a full "
    "one ('BrokerMetadata is not consistent across log.dirs'); in ZooKeeper mode 3.7 to 3.9 rewrite it at "
    "startup with ZooKeeper's cluster.id and the configured broker.id; a KRaft broker (any version) "
    "refuses to start ('node ID not found')"
)


class CommandText(str):
    """A fix text (or a part of one) that names commands a script can run: the text as people read it,
    each command in it rendered from its argv (``shlex.join``), and the argvs themselves (``argvs``), so
    that the two never drift apart. A template field given one contributes its argvs to the finding's
    ``fix_argv`` (:func:`make`)."""

    argvs: tuple[tuple[str, ...], ...]

    def __new__(cls, text: str, argvs: Sequence[Sequence[str]] = ()) -> CommandText:
        self = super().__new__(cls, text)
        self.argvs = tuple(tuple(a) for a in argvs)
        return self


def command(argv: Sequence[str]) -> CommandText:
    """One command: its argv, quoted for the shell (``shlex.join``)."""
    return CommandText(shlex.join(argv), [argv])


def command_phrase(template: str, argv: Sequence[str]) -> CommandText:
    """``template`` with ``{command}`` the command of ``argv`` (quoted, in backticks)."""
    return CommandText(template.format(command=f"`{shlex.join(argv)}`"), [argv])


def repair_argv(code: str, logdir: str, *extra: str) -> list[str]:
    """The dry-run repair of ``code`` findings in ``logdir`` (add --apply to make the changes)."""
    return ["logdoctor", "repair", logdir, "--only", code, *extra]


def repair_command(code: str, logdir: str) -> str:
    """:func:`repair_argv`, quoted for the shell."""
    return shlex.join(repair_argv(code, logdir))


def repair_hint(code: str, logdir: str, *extra: str) -> CommandText:
    """A fix phrase around :func:`repair_argv` (the ``{repair}`` template field)."""
    argv = repair_argv(code, logdir, *extra)
    return command_phrase("{command} prints the plan, add --apply to make it", argv)


_ENTRIES = (
    Entry(
        "INDEX_CORRUPT",
        _E,
        "an offset/time/transaction index a broker's sanity check or lookup would reject",
        "{problem}. {verdict}",
        "Stop the broker, then {repair} (it moves {path} to a backup and rebuilds the segment's indexes "
        "from the .log); `logdoctor dump {segment} --verify-index` lists every bad entry. Or let the "
        "broker rebuild it: delete the segment's .index and .timeindex and restart (recovery rebuilds "
        "them from the .log).",
        "K:core/.../log/OffsetIndex.scala, TimeIndex.scala (0.10-2.x), storage/.../OffsetIndex.java, "
        "TimeIndex.java, TransactionIndex.java sanityCheck; Log.loadSegmentFiles / LogLoader",
    ),
    Entry(
        "INDEX_MISSING",
        _W,
        "a .log without its .index (or .timeindex)",
        "{path} has no {missing}: {effect}",
        "The indexes are rebuilt from the .log, which loses none of its valid records (damage in the .log "
        "is LOG_CORRUPT, said apart: the default scan reads such a segment whole, as the broker's start "
        "does); to rebuild them before the broker starts: {repair}.",
        "K:storage/.../log/LogLoader.java loadSegmentFiles, LogSegment.sanityCheck",
    ),
    Entry(
        "RETENTION_RISK",
        _E,
        "time retention would use a wrong (too old) largest timestamp and delete the segment early",
        "{cause}: the broker would take largestTimestamp={broker_ts} ({broker_ts_iso}) for segment "
        "{segment}, but its records go up to {true_ts} ({true_ts_iso}); with retention.ms={retention_ms} "
        "(topic config used: {config}) it would delete the segment {when}{also}",
        "Before starting the broker, rebuild the time index: {repair}.{permission}",
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
        "RETENTION_DUE",
        _I,
        "segments the broker's next retention check deletes",
        "{tp}: the broker's next retention check (log.retention.check.interval.ms after it starts, 5 minutes "
        "by default) deletes {segments} segment(s), {bytes} bytes holding offsets {first} to {last} "
        "({offsets} offsets): {why}. {moves}{also} (topic config used: {config})",
        "Nothing to do if this is the retention you meant: `logdoctor retention {logdir}` lists each "
        "segment and why it goes. To keep these records, copy the partition folder elsewhere before the "
        "broker starts (and raise the topic's retention.ms / retention.bytes, or correct the partition's "
        "entry in log-start-offset-checkpoint if it was moved by mistake).",
        "K:storage/.../log/UnifiedLog.java deleteOldSegments (deleteLogStartOffsetBreachedSegments, "
        "deleteRetentionSizeBreachedSegments, deleteRetentionMsBreachedSegments), LogManager "
        "log.retention.check.interval.ms. A note: deleting what retention says is Kafka working as "
        "configured, and records below the log start offset are already unreadable (OffsetOutOfRange); "
        "the report counts its offsets among the records at risk",
    ),
    Entry(
        "CHECKPOINT_MISMATCH",
        _W,
        "a checkpoint file that disagrees with itself or with the log dir",
        "{path}: {problem}",
        "Set the entry to a value within the log ({repair}), or re-replicate the partition if records "
        "are missing.",
        "K:server-common/.../CheckpointFile.java; core/.../log/LogManager.scala loadLogs, "
        "checkpointLogRecoveryOffsets/LogStartOffsets; ReplicaManager high watermark checkpoints",
        cases={
            "count-line": Case(
                "{path}: the count line disagrees with the entries ({detail}); the broker rejects the "
                "whole file: {consequence}",
                "Correct line 2 to the number of entry lines, or rewrite the file: {repair}.",
            ),
            "missing-file": Case(
                "{path} is missing but the dir holds {partitions} partition(s): the broker uses recovery "
                "point 0 for all of them (after an unclean shutdown it recovers every segment)",
                "Write it from the log end offsets: {repair}.",
            ),
            "stale-entries": Case(
                "{path} lists {count} partition(s) that are not in {logdir}: {listed} (moved or deleted by "
                "hand?); the broker ignores these entries and drops them at its next checkpoint",
                "If the folders were moved to another log dir, move their entries too (and fix both count "
                "lines); or rewrite the file from the dir: {repair}.",
            ),
            "missing-entries": Case(
                "{path} misses {count} partition(s) present in {logdir}: {listed}; {effect}",
                "{repair}; or, if the folders were copied in by hand, add their lines and fix the count "
                "line.",
            ),
            "recovery-point-beyond-log-end": Case(
                "{path}: recovery point {offset} of {partition} is beyond its log end offset "
                "{log_end_offset}: segments were removed or the log truncated after the checkpoint; the "
                "broker lowers it to the log end"
            ),
            "recovery-point-below-log-start": Case(
                "{path}: recovery point {offset} of {partition} is below its log start offset "
                "{log_start_offset} (segments were deleted after the checkpoint; the broker raises it to "
                "the log start)"
            ),
            "high-watermark-beyond-log-end": Case(
                "{path}: high watermark {offset} of {partition} is beyond its log end offset "
                "{log_end_offset}: committed records {log_end_offset}..{last_missing} are missing from "
                "this replica (the broker clamps the high watermark to the log end offset)"
            ),
            "high-watermark-below-log-start": Case(
                "{path}: high watermark {offset} of {partition} is below its log start offset "
                "{log_start_offset} (the broker raises it to the log start)"
            ),
            "log-start-beyond-log-end": Case(
                "{path}: log start offset {offset} of {partition} is beyond its log end offset "
                "{log_end_offset}: at startup the broker deletes ALL segments of the partition ('Deleting "
                "all segments because logEndOffset is smaller than logStartOffset')"
            ),
            "cleaner-offset-outside-log": Case(
                "{path}: cleaner offset {offset} of {partition} is outside its log [{log_start_offset}, "
                "{log_end_offset}]: the cleaner resets it and compacts the log from the start"
            ),
        },
    ),
    Entry(
        "CHECKPOINT_CORRUPT",
        _E,
        "a checkpoint file the broker cannot parse",
        "{problem}; the broker rejects the whole file ({consequence})",
        "Rewrite it from the log dir: {repair}; or delete it while the broker is stopped ({delete_effect}).",
        "K:server-common/.../CheckpointFile.java ('Malformed line in checkpoint file', 'Expected n entries')",
    ),
    Entry(
        "LOG_CORRUPT",
        _E,
        "a .log with bad bytes: CRC mismatch, truncated or zero-filled tail, offsets out of order",
        "{problem}{consequence}",
        "Stop the broker; if other replicas are in sync let this one re-replicate (delete the partition "
        "folder); otherwise {repair}: it truncates {path} to the {valid_bytes} valid bytes before the "
        "damage{dropped} (a backup keeps every byte it removes).",
        "K:storage/.../log/LogSegment.java recover, LogLoader.recoverLog; clients/.../record/"
        "DefaultRecordBatch.java ensureValid, FileLogInputStream; for __cluster_metadata-0: "
        "core/.../raft/KafkaMetadataLog.scala (truncateToLatestSnapshot), raft/.../KafkaRaftClient.java "
        "(Fetch, FetchSnapshot), raft/.../ReplicatedLog.java",
        cases={
            "metadata-log": Case(
                "{damage}. This is the node's KRaft metadata log, not a partition like the others "
                "({voters}): {loss}",
                "Stop the node. Another node holds this log (voters {others}): truncate it at offset {cut} "
                "({repair}; a backup keeps the rest) and, when it starts, the node fetches the records "
                "after the cut, or the latest snapshot, from the quorum's leader; do it while a majority "
                "of the voters runs. Never delete the folder while it is the only copy, and never use "
                "sync-replica on the metadata log.",
            ),
            "metadata-log-last-voter": Case(
                "{damage}. This is the node's KRaft metadata log, not a partition like the others, and no "
                "other node is known to hold it ({voters}): {loss}",
                "Stop the node and copy {folder} somewhere safe first: no other voter can give the records "
                "back. Never delete the folder (the cluster's topics, configs and ACLs would be gone) "
                "and never use sync-replica on it. A truncation loses the records above; repair refuses "
                "it without explicit consent: `{consent}` prints that plan, add --apply to make it.",
            ),
        },
    ),
    Entry(
        "LOG_RECORDS_UNDECODABLE",
        _E,
        "a batch whose CRC matches but whose records do not decode",
        "{problem}: the broker keeps such a batch (its recovery checks only CRCs) and serves it, and every "
        "consumer that fetches it fails (InvalidRecordException: 'Found invalid record structure', "
        "'Incorrect declared batch size')",
        "`logdoctor dump {path} --deep` names the first record that does not decode. The export skips "
        "such a batch alone and names it (the records around it are exported). The batch cannot be "
        "repaired in place: a replica that holds the same offsets in batches that decode (scan it with "
        "--deep) can give them back (stop this broker and let it re-replicate: delete the partition "
        "folder).",
        "K:storage/.../log/LogSegment.java recover (batch.ensureValid: the CRC only); clients/.../record/"
        "DefaultRecordBatch.java iterator, uncompressedIterator, compressedIterator; DefaultRecord.java "
        "readFrom (InvalidRecordException)",
    ),
    Entry(
        "SEGMENT_BASE_OFFSET_MISMATCH",
        _E,
        "a segment whose records do not fit its base offset",
        "the first batch of {path} starts at offset {offset}, below the segment's base offset {base} "
        "(from its file name)",
        "Stop the broker and move the segment aside; the broker recovers by deleting its data "
        "(LogSegment.recover fails ensureOffsetInRange with InvalidOffsetException; LogLoader deletes the "
        "segment's data: 'Found invalid offset during recovery. Deleting the corrupt segment').",
        "K:storage/.../log/LogSegment.java ensureOffsetInRange, LocalLog.splitOverflowedSegment",
        cases={
            "offset-overflow": Case(
                "{path} holds offset {offset}, more than 2^31-1 above its base offset {base}: index "
                "entries cannot represent it (offset overflow)",
                "Stop the broker and move the segment aside; the broker recovers by splitting it "
                "(recovery throws LogSegmentOffsetOverflowException and splits the segment: "
                "LocalLog.splitOverflowedSegment, KAFKA-7045).",
            ),
        },
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
        _I,
        "a broker holds the log dir's lock: the dir is live (information, not damage)",
        "{path} is locked{holder}: a broker is running on {logdir}. Each partition was read as of one "
        "moment, when its check began (its files listed with their sizes): each .log up to its listed "
        "size, so the log end offsets and record counts reported are that moment's (the JSON gives each "
        "partition's active .log size as listed, read_as_of_bytes); what the broker does "
        "meanwhile (appends, a roll, a deletion, its preallocated active indexes, the recovery point "
        "behind the log end) is its normal state, not a finding. The commands that write to a log dir "
        "(repair, move-partition, sync-replica, restore with --apply) refuse it while the lock is held "
        "(exit 75)",
        "Nothing to fix: reads are safe next to a running broker (docs/live-broker.md). Stop the broker "
        "before repairing anything.",
        "K:server-common/.../util/FileLock.java (tryLock on .lock)",
    ),
    Entry(
        "PARTITION_CHANGED_WHILE_READ",
        _I,
        "a running broker removed segments of a partition faster than it could be read",
        "{path}: a segment listed when the partition's check began was removed by the running broker "
        "(retention or the log cleaner) before it was read, {reads} times in a row: the partition is not "
        "checked (no damage is implied)",
        "Scan it again; a broker removes a segment file.delete.delay.ms (60 s by default) after renaming it "
        ".deleted, so this happens only when segments roll and expire within seconds.",
        "K:storage/.../log/LogSegment.java changeFileSuffixes; UnifiedLog.deleteSegmentFiles",
    ),
    Entry(
        "ORPHAN_FILE",
        _W,
        "a leftover the broker deletes or renames at startup",
        "{path}: {reason}",
        "Delete it while the broker is stopped.",
        "K:storage/.../log/LogLoader.java removeTempFilesAndCollectSwapFiles, loadSegmentFiles; "
        "core/.../log/LogManager.scala (-delete, -future, -stray folders); "
        "core/.../raft/KafkaMetadataLog.scala recoverSnapshots",
        cases={
            "delete-dir": Case(
                "{path}: a partition folder scheduled for deletion (-delete): the broker deletes it at "
                "startup",
                "Nothing to do; the broker deletes it.",
            ),
            "future-dir": Case(
                "{path}: a KIP-113 move target (-future) left by an interrupted replica move between "
                "log dirs: the broker resumes the move",
                "Let the broker finish the move, or cancel it with kafka-reassign-partitions.",
            ),
            "root-tmp-file": Case(
                "{path}: left by an interrupted atomic write of a checkpoint or meta.properties (the "
                "original is intact): the broker ignores it",
                "Delete it while the broker is stopped.",
            ),
            "deleted": Case(
                "{path} was renamed .deleted for asynchronous deletion (retention, truncation or "
                "compaction) and never removed: the broker deletes it at startup",
                "Nothing to do: the broker deletes it. To free the space now, delete it while the "
                "broker is stopped.",
            ),
            "cleaned": Case(
                "{path} is partial output of the log cleaner (a crash during compaction): the broker "
                "deletes it at startup, with any .swap at or above its offset",
                "Nothing to do: the broker deletes it and compacts again.",
            ),
            "swap": Case(
                "{path} is a compacted or split segment awaiting swap-in: at startup the broker "
                "renames it into place and deletes the segment files it replaces (or deletes it when a "
                ".cleaned file has a lower offset)",
                "Let the broker complete the swap; keep a backup of the partition first if you doubt "
                "the .swap.",
            ),
            "index-without-log": Case(
                "{path} is an index file with no .log: the broker deletes it at startup ('Found an "
                "orphaned index file ... with no corresponding log file')",
                "Nothing to do, or delete it while the broker is stopped. If its .log was deleted by "
                "hand, data is gone.",
            ),
            "partial-snapshot": Case(
                "{path} is a KRaft snapshot that was being written at a crash: it is deleted at startup",
                "Nothing to do.",
            ),
            "tmp-file": Case(
                "{path} was left by an interrupted atomic write (the file it was replacing is intact): "
                "the broker ignores it and overwrites it on the next write",
                "Delete it while the broker is stopped.",
            ),
            "deleted-snapshot": Case(
                "{path} is a KRaft snapshot marked for deletion (older than the latest snapshot or the "
                "log start): the node deletes it at startup (KafkaMetadataLog.recoverSnapshots)",
                "Nothing to do: the broker deletes it. To free the space now, delete it while the "
                "broker is stopped.",
            ),
        },
    ),
    Entry(
        "PERMISSION_DENIED",
        _E,
        "a file or folder the broker's user cannot read or write",
        "{path} is not {need} by {user} ({why}){consequence}",
        "Fix ownership and mode before starting the broker: `chown {user} {path}` and "
        "`chmod u+{mode_fix} {path}` (or `chown -R` the whole log dir); {repair} does the same.",
        "K:storage/.../log/LogLoader.java ('Could not read file'); field report 002",
    ),
    Entry(
        "META_PROPERTIES_MISMATCH",
        _E,
        "log dirs of one broker that disagree in meta.properties",
        "{field} {value} in {logdir} differs from {common} in the other log dirs ({summary}): the broker "
        "refuses to start (or takes this dir offline)",
        "Every log dir of a broker must carry the same cluster.id and broker.id/node.id: restore the right "
        "meta.properties (copy it from a sibling log dir, keeping directory.id unique per dir).",
        "K:metadata/.../properties/MetaPropertiesEnsemble.java verify; core/.../KafkaServer.scala "
        "getBrokerMetadataAndOfflineDirs ('Invalid cluster.id', 'doesn't match stored broker.id')",
    ),
    Entry(
        "LOG_DIRS_OF_DIFFERENT_BROKERS",
        _E,
        "log dirs given together whose meta.properties name different brokers",
        "the {dirs} log dirs given belong to {brokers} different brokers {of_clusters} ({listing}): the "
        "log.dirs of one broker share its cluster.id and broker.id/node.id, so these are the log dirs of "
        "several brokers scanned together, or one broker whose meta.properties disagree (it refuses to "
        "start). Partitions found in several of them are replicas, not duplicates: they were not "
        "reported as DUPLICATE_PARTITION",
        "This command works on one broker: give it the log dirs of one broker, each broker on its own "
        "({commands}); a scan (or the census) of them all compares the brokers' replicas. If these really "
        "are the log.dirs of one broker, restore the right meta.properties in the odd one (copy a "
        "sibling's, keeping its directory.id).",
        "K:metadata/.../properties/MetaPropertiesEnsemble.java verify ('Stored node id ... doesn't match');"
        " core/.../log/LogManager.scala loadLog (partition folders are unique across one broker's dirs)",
    ),
    Entry(
        "META_PROPERTIES_INVALID",
        _E,
        "meta.properties missing, empty or unreadable",
        "{path} cannot be parsed ({error}): the broker fails to start on this log dir",
        "Restore meta.properties from another log dir of the same broker.",
        "K:metadata/.../properties/MetaProperties.java, MetaPropertiesEnsemble.java",
        cases={
            "missing": Case(
                "{path} is missing: a ZooKeeper-mode broker writes a new one, a KRaft broker refuses to "
                "start ('No meta.properties found'); the dir's cluster id cannot be verified",
                "Copy meta.properties from another log dir of the same broker (or run `kafka-storage "
                "format` for a new KRaft dir).",
            ),
            "empty": Case(
                "{path} is empty (0 bytes, a torn write), and what the broker does depends on its version: "
                + META_PROPERTIES_EMPTY_BY_VERSION,
                "Restore meta.properties (version, broker.id/node.id, cluster.id) from another log dir of "
                "the same broker.",
            ),
        },
    ),
    Entry(
        "DUPLICATE_PARTITION",
        _E,
        "the same partition in two log dirs of one broker",
        "{partition} is in {count} log dirs of this broker ({where}): the broker refuses to start "
        "('Duplicate log directories for {partition} are found'). This copy: log end offset "
        "{log_end_offset}, {bytes} bytes",
        "Keep the copy with the higher log end offset (compare with `logdoctor scan {logdirs} --json`), "
        "move the other folder out of the log dirs, then start the broker.",
        "K:core/.../log/LogManager.scala loadLog ('Duplicate log directories for ... are found')",
    ),
    Entry(
        "INVALID_DIR_NAME",
        _E,
        "a folder in a log dir that is not a partition folder",
        "{path} is not a topic-partition folder: the broker fails to load the log dir ('... is not in "
        "the form of topic-partition')",
        "Move {path} out of the log dir (the broker treats every folder in it as a partition).",
        "K:core/.../log/LocalLog.scala parseTopicPartitionName",
    ),
    Entry(
        "PARTITION_METADATA_INVALID",
        _E,
        "partition.metadata the broker cannot read",
        "{path} cannot be parsed ({error}): the broker fails to read the partition's topic id "
        "(KafkaStorageException) and takes the log dir offline",
        "Stop the broker, then {repair}: it writes the topic id known from another partition of the "
        "topic or from the broker's own __cluster_metadata-0 when it is among the log dirs given, else "
        "(ZooKeeper mode only) moves {path} to the backup so that the broker writes it again from the "
        "controller's topic id; in KRaft a log without a topic id is stray, so there the id must come "
        "from `kafka-topics --describe`.",
        "K:storage/.../checkpoint/PartitionMetadataFile.java, K:core/.../log/LogManager.scala "
        "(isStrayKraftReplica)",
    ),
    Entry(
        "TOPIC_ID_SHARED",
        _E,
        "two topics whose partition.metadata hold one topic id",
        "topics {topics} all have topic id {topic_id} in partition.metadata ({where}); a topic id names one "
        "topic of a cluster, so at most one of them is right: the broker fails the partitions whose id is "
        "not their topic's (InconsistentTopicIdException), and in KRaft mode the metadata maps the id to "
        "one name only",
        "Find each topic's id (kafka-topics.sh --describe --topic {topic} prints TopicId). With the broker "
        "stopped, a partition folder whose partition.metadata holds another topic's id was written for "
        "that topic (copied or restored from elsewhere): check its records, then move it out of the log "
        "dir and let the broker fetch the partition from its leader. Nothing here can tell which topic "
        "owns the id, so repair does not change it.",
        "K:core/.../cluster/Partition.scala checkOrSetTopicId; K:core/.../log/UnifiedLog.scala "
        "initializeTopicId; storage/.../checkpoint/PartitionMetadataFile.java",
    ),
    Entry(
        "TOPIC_ID_MISMATCH",
        _E,
        "partition.metadata topic ids that disagree",
        "{partition} has topic id {topic_id} but the topic's other partitions have {common}: this folder "
        "belongs to an older incarnation of the topic (deleted and recreated); the broker fails this "
        "partition",
        "Find which topic id is current (kafka-topics --describe); a partition folder with another id "
        "belongs to a deleted topic: move it out of the log dir.",
        "K:core/.../log/UnifiedLog.scala initializeTopicId / assignTopicId ('Topic Id in memory ... does "
        "not match the topic Id ... in partition metadata file')",
        cases={
            "metadata-log": Case(
                "{partition} has topic id {topic_id} but the KRaft metadata log says {topic} is {known}: "
                "this folder belongs to a deleted incarnation of the topic; the broker treats it as a "
                "stray log (it is not served, and is deleted)"
            ),
        },
    ),
    Entry(
        "LEADER_EPOCH_BEYOND_LOG_END",
        _W,
        "a leader-epoch-checkpoint entry starting beyond the log end offset",
        "{path}: epoch {epoch} starts at offset {offset}, beyond the log end offset {log_end_offset}: the "
        "broker drops it at startup (the segments holding it are gone)",
        "The broker truncates the epoch cache at startup; {repair} does it offline. If this partition's "
        "segments were removed by hand, also check the other checkpoints.",
        "K:storage/.../epoch/LeaderEpochFileCache.java truncateFromEndAsyncFlush; LogLoader.load",
    ),
    Entry(
        "PRODUCER_SNAPSHOT_AHEAD",
        _W,
        "a producer state snapshot beyond the log end offset",
        "{path} snapshots producer state at offset {offset}, beyond the log end offset {log_end_offset}: "
        "the broker deletes it at startup and rebuilds producer state from older snapshots and the log",
        "The broker deletes it at startup and rebuilds producer state from the log (slow for large "
        "partitions); nothing to do unless segments were removed by hand ({repair} removes it offline).",
        "K:storage/.../log/ProducerStateManager.java truncateAndReload / removeStraySnapshots",
    ),
    Entry(
        "PRODUCER_SNAPSHOT_CORRUPT",
        _W,
        "a producer state snapshot the broker cannot read",
        "{path} cannot be read ({error}): the broker deletes it at startup",
        "The broker deletes it and rebuilds producer state from an older snapshot and the log (slow for "
        "large partitions); nothing is lost unless idempotence state is needed before the rebuild ends.",
        "K:storage/.../log/ProducerStateManager.java loadFromSnapshot ('Failed to load producer snapshot')",
    ),
    Entry(
        "UNKNOWN_FILE",
        _I,
        "a file Kafka neither writes nor reads",
        "{path}: not a file Kafka writes in a {where}; the broker ignores it",
        "Harmless to the broker; remove it to keep the log dir clean.",
        "K:storage/.../log/LogLoader.java (ignores unknown files)",
    ),
    Entry(
        "NOT_A_REGULAR_FILE",
        _E,
        "a FIFO, socket, device or folder where a log dir holds regular files",
        "{path} is a {kind}, not a regular file: {never}",
        "Stop the broker and move {path} out of the log dir; if a file Kafka wrote had this name, restore it "
        "from a replica or a backup (a repair never touches it).",
        "K:storage/.../log/LogLoader.java loadSegmentFiles, removeTempFilesAndCollectSwapFiles (File.isFile: "
        "regular files only); server-common/.../util/FileLock.java; CheckpointFile.java",
        cases={
            "kafka-name": Case(
                "{path} is a {kind}, not a regular file, under a name Kafka gives a regular file: the broker "
                "skips it where it lists regular files only (LogLoader) and fails where it opens the name "
                "(a segment, index, checkpoint or lock of this name is missing or unusable). {never}"
            ),
            "other-name": Case(
                "{path} is a {kind}, not a regular file, in a {where}: Kafka writes no such entry and the "
                "broker ignores it. {never}",
                "Remove it to keep the log dir clean (a repair never touches it).",
            ),
        },
    ),
    Entry(
        "SYMLINK_IN_LOG_DIR",
        _W,
        "a symlink in a log dir: logdoctor never follows it, so what it points to is not checked",
        "{path} is a symlink to {target}",
        "Replace the symlink with what it points to (copy it into the log dir while the broker is stopped), "
        "or check what it points to on its own (by its real path).",
        "K:core/.../log/LogManager.scala, storage/.../log/LogLoader.java (java.io.File follows symlinks)",
        cases={
            "outside": Case(
                "{path} is a symlink to {target}, outside the log dir {logdir}: the broker reads and writes "
                "through it, but logdoctor never follows a link out of the log dirs it was given, so {what} "
                "was not checked (and is never changed by logdoctor repair)"
            ),
            "inside": Case(
                "{path} is a symlink to {target}, inside the log dir: the broker follows it and sees the "
                "same {what} twice; logdoctor does not follow it (the target is checked under its own name)",
                "Replace the symlink with a copy of what it points to, or remove it if it is a leftover.",
            ),
            "dangling": Case(
                "{path} is a symlink to {target}, which does not exist: the broker skips it where it lists "
                "regular files and fails where it opens the name",
                "Remove the symlink, or restore what it pointed to while the broker is stopped.",
            ),
        },
    ),
    # --- KRaft log dirs: directory identity (KIP-858) and directory assignments -----------------
    Entry(
        "DIRECTORY_ID_DUPLICATE",
        _E,
        "two log dirs of one broker with the same directory.id",
        "directory.id {directory_id} is in {count} log dirs of broker {node} ({where}): the broker refuses "
        "to start ('Duplicate directory ID ... found'); {which}",
        "Delete the directory.id line from {path} while the broker is stopped (keep {directory_id} in "
        "{keeper}): a Kafka 3.7+ broker writes a new id at startup and reports the directory of every "
        "replica in that dir to the controller.",
        "K:metadata/.../properties/MetaPropertiesEnsemble.java verify ('Duplicate directory ID ... found'); "
        "core/.../server/KafkaRaftServer.scala initializeLogDirs; KIP-858",
        cases={
            "assigned-id": Case(
                "directory.id {directory_id} is in {count} log dirs of broker {node} ({where}): the broker "
                "refuses to start ('Duplicate directory ID ... found'); {which}",
                "Set `directory.id={own_id}` in {path} while the broker is stopped: the cluster metadata "
                "assigns {held} replica(s) found in {logdir} to that id, and broker {node} registered it "
                "with the controller.",
            ),
            "registered-id": Case(
                "directory.id {directory_id} is in {count} log dirs of broker {node} ({where}): the broker "
                "refuses to start ('Duplicate directory ID ... found'); {which}",
                "Set `directory.id={own_id}` in {path} while the broker is stopped: broker {node} "
                "registered that id with the controller and no scanned log dir carries it.",
            ),
        },
    ),
    Entry(
        "DIRECTORY_ID_INVALID",
        _E,
        "a directory.id the broker rejects (one of the 100 reserved ids)",
        "{path} has directory.id={directory_id}, one of the 100 ids Kafka reserves ({reserved}): the "
        "broker refuses to start ('Invalid resrved directory ID ... found')",
        "Delete the directory.id line from {path} while the broker is stopped: a Kafka 3.7+ broker writes a "
        "new random id at startup and reports its replicas' directory to the controller.",
        "K:server-common/.../common/DirectoryId.java reserved; MetaPropertiesEnsemble.java verify "
        "('Invalid resrved directory ID')",
    ),
    Entry(
        "DIRECTORY_ID_MISSING",
        _W,
        "a KRaft log dir without directory.id where the metadata version assigns replicas to directories",
        "{path} has no directory.id although {why}: at startup the broker writes a new random one into it "
        "(KafkaRaftServer.initializeLogDirs)",
        "Nothing to do if this dir is new or was formatted by a Kafka before 3.7: the broker adds an id at "
        "startup. If {path} was restored or hand-written, copy its former directory.id back from a backup.",
        "K:core/.../server/KafkaRaftServer.scala initializeLogDirs (generates a missing directory.id); "
        "server-common/.../MetadataVersion.java isDirectoryAssignmentSupported (3.7-IV2)",
        cases={
            "former-id-known": Case(
                "{path} has no directory.id although {why}: at startup the broker writes a new random one "
                "into it (KafkaRaftServer.initializeLogDirs); the replicas the metadata assigns to this "
                "dir's former id ({former_id}) are then reported to the controller under the new one",
                "Restore it before starting the broker: the cluster metadata assigns {held} replica(s) "
                "found in {logdir} to {former_id}; add `directory.id={former_id}` to {path}.",
            ),
        },
    ),
    Entry(
        "JBOD_METADATA_VERSION",
        _E,
        "a KRaft broker with several log dirs at a metadata version without directory assignment",
        "broker {node} has {count} KRaft log dirs ({log_dirs}) but the cluster's metadata.version is "
        "{metadata_version}: a broker with several log dirs needs 3.7-IV2 or later and fails when it reads "
        "this metadata.version ('Multiple log directories (aka JBOD) are not supported in the current "
        "MetadataVersion')",
        "Either give the broker one log dir (move the partitions with `logdoctor move-partition`, then "
        "remove the other dirs from log.dirs) or upgrade the cluster's metadata.version to 3.7-IV2 or "
        "later (`kafka-features.sh upgrade --metadata 3.7`) before starting it with several log dirs.",
        "K:core/.../server/KafkaConfig.scala validateWithMetadataVersion ('Multiple log directories (aka "
        "JBOD) are not supported in the current MetadataVersion')",
    ),
    Entry(
        "REPLICA_MISPLACED",
        _W,
        "a replica in a log dir other than the one the cluster metadata assigns it to",
        "{partition} is in {logdir} (directory.id {directory_id}) but the cluster metadata (offset "
        "{metadata_offset}) assigns broker {node}'s replica to {where}: at startup the broker loads the "
        "replica where it is (LogManager.loadLogs does not look at assignments) and then reports its "
        "actual directory to the controller (ReplicaManager.maybeUpdateTopicAssignment -> "
        "AssignmentsManager -> AssignReplicasToDirs), which records it in a PartitionChangeRecord: "
        "nothing is lost and nothing is moved",
        "Nothing to move: start the broker with every log dir in log.dirs and it updates the assignment "
        "itself. Keep the assigned dir online meanwhile (a broker with an offline dir does not open a "
        "replica whose assigned dir is offline).{move_back}",
        "K:core/.../server/ReplicaManager.scala applyDelta / maybeUpdateTopicAssignment, "
        "server/.../AssignmentsManager.java, core/.../cluster/Partition.scala "
        "createLogInAssignedDirectoryId, core/.../log/LogManager.scala loadLogs",
    ),
    Entry(
        "REPLICA_MISSING",
        _W,
        "a replica the cluster metadata assigns to a scanned log dir that no scanned dir holds "
        "(error when it is the only replica)",
        "the cluster metadata assigns {partition} (replicas {replicas}, leader {leader}, ISR {isr}) to "
        "{logdir} (directory.id {directory_id}) but no scanned log dir holds it: the broker creates an "
        "empty log there at startup and fetches it from the leader{only_replica}",
        "If the folder was moved out of the log dirs by hand, put it back (into {logdir}); otherwise let "
        "the broker re-fetch it from the leader.",
        "K:core/.../cluster/Partition.scala createLogInAssignedDirectoryId, core/.../log/LogManager.scala "
        "getOrCreateLog (an absent log is created empty and fetched from the leader)",
    ),
    Entry(
        "REPLICA_NOT_ASSIGNED",
        _W,
        "a replica on disk that the cluster metadata no longer assigns to this broker (a stray)",
        "{path} holds {partition} (log end offset {log_end_offset}) but {reason}: at startup a 3.5/3.6 "
        "broker deletes this replica; a 3.7+ broker renames it {partition}.<id>-stray and keeps it, never "
        "served",
        "If the other replicas hold this data (check with kafka-topics --describe), nothing to do; "
        "otherwise copy the folder out of the log dir before starting the broker.",
        "K:core/.../log/LogManager.scala isStrayKraftReplica / loadLog (3.8+), deleteStrayKRaftReplicas "
        "(3.7); BrokerMetadataPublisher findStrayPartitions (3.5-3.6); KAFKA-14616, KAFKA-16234",
    ),
    Entry(
        "KRAFT_METADATA_NOT_SCANNED",
        _I,
        "KRaft log dirs scanned without their broker's metadata log: the checks against it were skipped",
        "{broker}'s log dirs {dirs} are KRaft log dirs, but none of the log dirs given holds its "
        "__cluster_metadata-0 (the broker's metadata.log.dir): the checks against the cluster metadata "
        "were skipped for them (replicas not assigned, misplaced or missing, topic ids against the "
        "metadata); another broker's metadata log is never used for them",
        "Give the same scan the broker's metadata.log.dir too (the log dir holding __cluster_metadata-0: "
        "server.properties' metadata.log.dir, else the first entry of log.dirs) beside {dirs}.",
        "K:core/.../server/KafkaRaftServer.scala (one metadata log per node, in metadata.log.dir); "
        "core/.../server/ReplicaManager.scala applyDelta (the broker's own metadata image decides)",
    ),
    Entry(
        "STRAY_REPLICA_LEFT",
        _W,
        "a -stray partition folder: a replica Kafka moved aside and keeps, never served and never deleted",
        "{path} is a replica of {partition} ({bytes:,} bytes) that Kafka moved aside as a stray (no longer "
        "assigned to this broker){state}: Kafka keeps it forever, never serves it and never deletes it",
        "Make sure the data is held elsewhere (kafka-topics --describe; `logdoctor dump {path}/*.log` "
        "reads its segments), then delete it while the broker is stopped: `rm -r {path}`.",
        "K:core/.../log/LogManager.scala loadLog ('Loaded stray log'), asyncDelete(isStray: 'Move aside "
        "stray partitions, don't delete them'); KAFKA-14616",
    ),
    # --- the KRaft metadata log -----------------------------------------------------------------
    Entry(
        "METADATA_RECORD_UNREAD",
        _W,
        "a broker registration record newer than every definition logdoctor knows: the broker's last "
        "known registration was used",
        "{path}: the {record} v{version} at offset {offset} (broker {broker}) is newer than every "
        "definition logdoctor knows ({record} versions {known_versions}, from Kafka {known_in}) and no known "
        "layout reads it exactly, so the replay skipped it. A controller writes a record version only at a "
        "metadata.version every broker supports (metadata.version here: {metadata_version}): the cluster "
        "runs a Kafka newer than these definitions. The image kept broker {broker}'s last known "
        "registration (metadata offset {kept_offset}, log dirs {log_dirs}): the checks that compare broker "
        "{broker}'s log dirs with its registered directory ids (DIRECTORY_ID_DUPLICATE's fix, which "
        "metadata log a log dir belongs to) used those, and they may be stale",
        "Nothing on disk is wrong. Install a newer logdoctor, one whose definitions include {record} "
        "v{version}, and scan again; until then `logdoctor dump {path} --print-data --offsets {offset}` "
        "shows the record with its raw bytes.",
        "K:metadata/src/main/resources/common/metadata/RegisterBrokerRecord.json, "
        "BrokerRegistrationChangeRecord.json; metadata/.../controller/ClusterControlManager.java replay; "
        "server-common/.../common/MetadataVersion.java",
        cases={
            "no-earlier": Case(
                "{path}: the {record} v{version} at offset {offset} (broker {broker}) is newer than every "
                "definition logdoctor knows ({record} versions {known_versions}, from Kafka {known_in}) and "
                "no known layout reads it exactly, so the replay skipped it. A controller writes a record "
                "version only at a metadata.version every broker supports (metadata.version here: "
                "{metadata_version}): the cluster runs a Kafka newer than these definitions. Broker "
                "{broker} has no earlier registration in this metadata log: its registered log dirs are "
                "unknown, and the checks that compare its log dirs with them had nothing to compare",
            ),
        },
    ),
    Entry(
        "METADATA_SNAPSHOT_CORRUPT",
        _E,
        "a KRaft snapshot (*.checkpoint) that cannot be read: CRC, header, footer (warning: not the latest)",
        "{path} cannot be read as a KRaft snapshot ({error}): it is the latest snapshot, which the node "
        "loads at startup: the node fails",
        "If the other controllers are healthy, stop this node, move the bad snapshot out of "
        "__cluster_metadata-0 and let the node fetch the metadata again from the quorum leader; "
        "`logdoctor dump {path}` shows where it breaks.",
        "K:raft/.../snapshot/RecordsSnapshotReader.java, core/.../raft/KafkaMetadataLog.scala",
        cases={
            "older": Case(
                "{path} cannot be read as a KRaft snapshot ({error}): an older snapshot, which the node "
                "keeps until it deletes it; a follower fetching it would fail"
            ),
        },
    ),
    Entry(
        "METADATA_SNAPSHOT_MISSING",
        _E,
        "a metadata log that starts above 0 with no snapshot at or above its start",
        "the metadata log starts at offset {log_start_offset} but no snapshot reaches it (snapshots: "
        "{snapshots}): the node stops at startup ('Inconsistent snapshot state: there must be a snapshot "
        "at an offset larger then the current log start offset')",
        "Restore the missing snapshot from a backup, or (other controllers healthy) move "
        "__cluster_metadata-0 "
        "out of the log dir so the node fetches the metadata from the quorum leader.",
        "K:core/.../raft/KafkaMetadataLog.scala recoverSnapshots ('Inconsistent snapshot state')",
    ),
    Entry(
        "METADATA_SNAPSHOT_MISMATCH",
        _W,
        "a snapshot id whose epoch disagrees with the metadata log's leader epochs",
        "snapshot {snapshot} says offset {offset} is in leader epoch {epoch}, but the metadata log's "
        "leader-epoch-checkpoint puts it in epoch {log_epoch}: the snapshot and the log come from "
        "different histories (a snapshot or log copied in from another node?)",
        "Compare with the other controllers' __cluster_metadata-0 (`logdoctor dump {path}` shows the "
        "snapshot's records, and dump of the log's segments the log's); if this node's copy is the odd one, "
        "let it fetch the metadata again.",
        "K:raft/.../snapshot/Snapshots.java, raft/.../ReplicatedLog.java validateOffsetAndEpoch",
    ),
    Entry(
        "QUORUM_STATE_MISMATCH",
        _W,
        "a quorum-state that disagrees with the metadata log (epoch behind the log, leader not a voter)",
        "{path} has leader epoch {epoch} but the metadata log holds epoch {log_epoch}: the node overrides "
        "the file and starts unattached at epoch {log_epoch} ('Epoch from quorum store file ... is smaller "
        "than last written epoch'); the file was restored from an older copy or the log copied in from "
        "another node",
        "Nothing to do if the metadata log is right: the node corrects its election state at startup. If "
        "quorum-state was restored from a backup, check the rest of __cluster_metadata-0 came from the same "
        "moment.",
        "K:raft/.../raft/QuorumState.java initialize, raft/.../FileQuorumStateStore.java",
        cases={
            "role-not-a-voter": Case(
                "{path} names node {node} as {role} but its voters are {voters}: the file does not describe "
                "one quorum"
            ),
            "voters-not-the-logs": Case(
                "{path} lists voters {voters} but the metadata log's latest election (leader {leader}) was "
                "among voters {log_voters}: a 3.x node whose controller.quorum.voters differs from the file "
                "refuses to start ('Configured voter set ... is different from the voter set read from the "
                "state file'); the file or the log comes from another quorum"
            ),
            "role-not-in-voters-record": Case(
                "{path} names node {node} as {role} but the metadata log's latest VotersRecord lists voters "
                "{log_voters}: the file does not describe this log's quorum"
            ),
        },
    ),
    Entry(
        "QUORUM_STATE_CORRUPT",
        _E,
        "a quorum-state file the node cannot read",
        "{path} cannot be read ({error}): the node does not start (FileQuorumStateStore.readElectionState)",
        "Stop the node and delete {path}: the node starts unattached at the log's epoch and learns the "
        "leader "
        "from the quorum (keep a copy of the file first).",
        "K:raft/.../raft/FileQuorumStateStore.java readElectionState",
    ),
    Entry(
        "BOOTSTRAP_CHECKPOINT_CORRUPT",
        _E,
        "a bootstrap.checkpoint the node cannot read",
        "{path} cannot be read ({error}): the node reads it at every start (BootstrapDirectory.read) and "
        "does not start",
        "Copy bootstrap.checkpoint from another node of the cluster (it holds the initial metadata.version "
        "and SCRAM records `kafka-storage format` wrote), or write it again with `kafka-storage format "
        "--ignore-formatted` and the same cluster id.",
        "K:metadata/.../bootstrap/BootstrapDirectory.java read; core/.../server/KafkaRaftServer.scala",
    ),
    Entry(
        "REMOTE_OFFSETS_LOST",
        _E,
        "offsets of a tiered partition that are neither in the remote tier nor in the log dir",
        "{topic_partition} (topic id {topic_id}): offsets {ranges} ({count} offsets) are in no copied "
        "remote segment and not in the log dir: the log start offset is {log_start_offset} "
        "({log_start_source}), the remote tier holds {remote_ranges} ({metadata_partition}) and the first "
        "local segment starts at {local_log_start_offset}",
        "Nothing can restore offsets {ranges} offline: no segment uploaded to the remote tier holds them "
        "(the replay of {metadata_partition} has no COPY_SEGMENT_FINISHED segment with them) and the log "
        "dir starts at {local_log_start_offset}. A consumer that fetches them gets OFFSET_OUT_OF_RANGE (the "
        "broker's RemoteLogManager.read finds no remote segment) and resets as its auto.offset.reset says: "
        "earliest goes back to the log start offset {log_start_offset}{earliest_note}, latest skips to the "
        "end of the log, none fails. First look in the remote store for this partition's objects with start "
        "offsets in that range (Kafka's LocalTieredStorage: {kafka_local_dir}/<20-digit start "
        "offset>-<segment id>.log; Aiven's plugin: {aiven_dir}/<20-digit start offset>-<segment id>.log): "
        "an upload whose COPY_SEGMENT_FINISHED event was lost leaves its objects there, the only copy of "
        "those records. If there are none the records are gone; kafka-delete-records.sh --bootstrap-server "
        "BROKER --offset-json-file FILE with the file {delete_json} moves the log start offset past the gap "
        "so that consumers stop resetting{delete_note}.",
        "K:core/.../log/remote/RemoteLogManager.java read (OffsetOutOfRangeException when no remote segment "
        "holds the offset); storage/.../remote/metadata/storage/RemoteLogMetadataCache.java (only "
        "COPY_SEGMENT_FINISHED segments serve reads); storage/.../log/LogLoader.java (a tiered log start "
        "offset is the checkpoint's)",
    ),
    Entry(
        "REMOTE_UPLOAD_UNFINISHED",
        _W,
        "a remote segment upload that started and never finished (COPY_SEGMENT_STARTED only), and is not "
        "in progress",
        "{topic_partition}: remote segment {segment_id} (offsets {start_offset}-{end_offset}, {size} bytes) "
        "was started by broker {broker_id} at {started} and never finished ({dangling}); {objects}",
        "Nothing to repair in the log dir: the broker never reads a segment whose upload did not finish, "
        "and its RemoteLogManager uploads the local segment again under a new segment id ({covered}). The "
        "objects the RemoteStorageManager wrote for {segment_id} stay in the store until the leader's "
        "expiration task deletes the segment, once it is below the log start offset or breaches "
        "retention.ms/retention.bytes (RemoteLogManager RLMExpirationTask); to free the space sooner delete "
        "exactly the objects whose names carry {segment_id}{list_hint}.",
        "K:core/.../log/remote/RemoteLogManager.java (copyLogSegment, RLMExpirationTask); "
        "storage/api/.../remote/storage/RemoteLogSegmentState.java",
    ),
    Entry(
        "REMOTE_SEGMENT_BELOW_LOG_START",
        _W,
        "remote segments below a tiered partition's log start offset that are not deleted yet",
        "{topic_partition}: {count} remote segments ({bytes} bytes, offsets {ranges}) end below the log "
        "start offset {log_start_offset} and are still in the remote tier ({states})",
        "Nothing to repair in the log dir: the leader's RemoteLogManager deletes them when its expiration "
        "task next runs (remote.log.manager.task.interval.ms; RLMExpirationTask "
        "isSegmentBreachByLogStartOffset, and DELETE_SEGMENT_STARTED segments are retried first). Their "
        "records are below the log start offset, so no consumer reads them any more; copy their objects out "
        "of the store before the broker runs if you need them. If they stay across broker runs, the "
        "broker's log shows why the RemoteStorageManager's deleteLogSegmentData fails.",
        "K:core/.../log/remote/RemoteLogManager.java RLMExpirationTask (cleanupExpiredRemoteLogSegments)",
    ),
    Entry(
        "REMOTE_PARTITION_DELETED_ON_DISK",
        _W,
        "a partition the cluster deleted from the remote tier whose folder is still in the log dir",
        "{path} holds {topic_partition} of topic id {topic_id}, which the cluster deleted: "
        "{metadata_partition} has its remote partition delete event ({state} by broker {broker_id} at "
        "{when}); {segments}",
        "The topic was deleted. A broker removes a deleted topic's logs when it applies the deletion from "
        "the metadata (the folder is renamed -delete and removed), and a KRaft broker treats a log whose "
        "topic is gone as stray at startup (LogManager.findStrayReplicas); this folder was left behind. "
        "With the broker stopped, move {path} out of the log dir (keep it until you are sure its records "
        "are not needed: the remote tier no longer has them), then start the broker.",
        "K:storage/.../remote/metadata/storage/RemotePartitionMetadataStore.java "
        "handleRemotePartitionDeleteMetadata; core/.../log/remote/RemoteLogManager.java "
        "deleteRemoteLogPartition; core/.../log/LogManager.scala",
    ),
    Entry(
        "REMOTE_METADATA_INVALID",
        _W,
        "a __remote_log_metadata record the replay cannot apply (unreadable, or a state change Kafka drops)",
        "{path}: a record of {metadata_partition} the replay cannot apply",
        "`logdoctor dump {path}` shows the record; the findings about the remote tier say whether data is "
        "affected.",
        "K:storage/.../remote/metadata/storage/RemoteLogMetadataCache.java (checkStateTransition, "
        "updateRemoteLogSegmentMetadata); storage/api/.../remote/storage/RemoteLogSegmentState.java "
        "isValidTransition; storage/.../serialization/RemoteLogMetadataSerde.java",
        cases={
            "damaged": Case(
                "{path} at byte {position}: the batches of {metadata_partition} cannot be read from here "
                "({error}); the events after it are not replayed",
                "Stop the broker; the scan reports the damaged bytes of {path} themselves (LOG_CORRUPT), and "
                "{repair}: it truncates the segment before the damage and the broker fetches the rest of "
                "{metadata_partition} again from its leader. Until then the remote tier of the partitions "
                "whose events it holds is known only up to the damage, and is not checked.",
            ),
            "undecodable": Case(
                "{path} at byte {position}: the event at offset {offset} of {metadata_partition} cannot be "
                "decoded ({error})",
                "The broker's RemoteLogMetadataSerde cannot read this value either, unless it is from a "
                "Kafka newer than logdoctor's record definitions (`logdoctor dump {path}` shows it); the "
                "replay skipped it and applied the events after it, so the state of the segment it names may "
                "be behind.",
            ),
            "unreadable": Case(
                "{path} cannot be read ({error}); the events of {metadata_partition} in it are not replayed",
                "Make {path} readable to the user running logdoctor (the broker's user owns it), then scan "
                "again; until then the remote tier of the partitions whose events it holds is not checked.",
            ),
            "transition": Case(
                "{path} at byte {position}: the event at offset {offset} moves remote segment {segment_id} "
                "of {topic_partition} from {from_state} to {to_state}, a change Kafka drops",
                "Nothing to repair: the broker drops this event as the replay does (RemoteLogMetadataCache "
                "checkStateTransition, RemoteLogSegmentState.isValidTransition), so the segment keeps the "
                "state it had. It shows a RemoteLogManager or plugin that wrote events out of order (a "
                "failover during a copy or a delete); the remote tier's other findings say whether data is "
                "affected.",
            ),
            "unknown-segment": Case(
                "{path} at byte {position}: the event at offset {offset} moves remote segment {segment_id} "
                "of {topic_partition} to {to_state}, but no event added that segment",
                "Nothing to repair: the broker rejects this update too (RemoteLogMetadataCache "
                "updateRemoteLogSegmentMetadata, RemoteResourceNotFoundException). If {metadata_partition} "
                "lost its first records (retention or a truncation), the segment's first event is gone and "
                "its objects may still be in the remote store under its id.",
            ),
            "delete-order": Case(
                "{path} at byte {position}: the event at offset {offset} moves the remote partition delete "
                "state of {topic_partition} from {from_state} to {to_state}, skipping a step",
                "Nothing to repair: the broker's RemotePartitionMetadataStore keeps the latest delete state "
                "whatever the order, as the replay does; the deletion goes on from {to_state}.",
            ),
            "partition-count": Case(
                "the events of {topic_partition} (topic id {topic_id}) are in {metadata_partition}, where "
                "{num_partitions} metadata partitions ({num_source}) would put them in "
                "__remote_log_metadata-{expected}: the topic has another number of partitions "
                "(remote.log.metadata.topic.num.partitions)",
                "Nothing to repair: the scan compared the remote tier only where the events were found. Pass "
                "the log dir holding __cluster_metadata-0 to the same scan so that the number of metadata "
                "partitions (remote.log.metadata.topic.num.partitions) comes from the KRaft metadata log.",
            ),
        },
    ),
    Entry(
        "REMOTE_METADATA_NOT_HERE",
        _I,
        "tiered partitions whose __remote_log_metadata partition is not in the log dirs scanned",
        "the remote tier of {count} tiered partitions could not be checked: their events are in {needed}, "
        "which these log dirs do not hold ({num_partitions} metadata partitions, {num_source}): {partitions}",
        "Nothing wrong is known: one broker holds only the __remote_log_metadata partitions it replicates. "
        "Scan these log dirs together with those of a broker that holds {needed} (kafka-topics.sh "
        "--describe --topic __remote_log_metadata lists their replicas); the scan takes the log dirs of "
        "several brokers at once.",
        "K:storage/.../remote/metadata/storage/RemoteLogMetadataTopicPartitioner.java; "
        "TopicBasedRemoteLogMetadataManagerConfig.java (remote.log.metadata.topic.num.partitions, 50)",
    ),
    Entry(
        "REMOTE_OBJECTS_LEAKED",
        _W,
        "objects in the remote store no live remote segment names (they cost storage; nothing reads them)",
        "{topic_partition} (topic id {topic_id}): {count} remote segments in the store ({objects} objects, "
        "{bytes} bytes; from {source}) are named by no live segment of {metadata_partition}: {why}",
        "Nothing reads these objects: the broker knows a remote segment only from {metadata_partition}, and "
        "its expiration task deletes only the segments it knows (KAFKA-16511). Unless {metadata_partition} "
        "lost events (retention below the topic's: REMOTE_METADATA_RETENTION_SHORT), they are leftovers of "
        "uploads or deletions that failed half-way. The scan never deletes them; to free the space, check "
        "the list and delete exactly these objects: {delete}",
        "K:core/.../log/remote/RemoteLogManager.java (copyLogSegment, RLMExpirationTask); "
        "storage/.../remote/metadata/storage/RemoteLogMetadataCache.java; KAFKA-16511",
    ),
    Entry(
        "REMOTE_SEGMENT_MISSING",
        _E,
        "a finished remote segment whose objects are missing from the store",
        "{topic_partition} (topic id {topic_id}): remote segment {segment_id} (offsets {start_offset}-"
        "{end_offset}, records written {time_range}) is COPY_SEGMENT_FINISHED in {metadata_partition} but "
        "the store lacks {what} (from {source}); {held}",
        "A consumer fetching offsets {start_offset}-{end_offset} gets an error from the broker "
        "(RemoteLogManager.read cannot open the segment or its index) until the objects are back. Put them "
        "back from a backup or an older object version (S3 versioning), under exactly {keys}. If no copy "
        "exists and the offsets are below the local log start {local_log_start_offset}, the records are "
        "lost: kafka-delete-records.sh --bootstrap-server BROKER --offset-json-file FILE with the file "
        "{delete_json} moves the log start offset past them so that consumers stop failing.",
        "K:core/.../log/remote/RemoteLogManager.java read; storage/.../RemoteIndexCache.java; "
        "storage/src/test/.../remote/storage/RemoteLogSegmentFileset.java (LocalTieredStorage's files); "
        "Aiven tiered-storage-for-apache-kafka RemoteStorageManager (.log, .indexes, .rsm-manifest)",
    ),
    Entry(
        "REMOTE_SEGMENTS_OVERLAP",
        _W,
        "finished remote segments whose offsets overlap (a segment stored twice after a leader change)",
        "{topic_partition}: remote segments {first_id} (offsets {first_range}, epochs {first_epochs}) and "
        "{second_id} (offsets {second_range}, epochs {second_epochs}) are both COPY_SEGMENT_FINISHED in "
        "{metadata_partition} and share offsets {shared}",
        "Nothing to repair offline: the broker reads each offset from one segment of the leader-epoch "
        "lineage (RemoteLogMetadataCache keeps one segment per epoch and start offset; KAFKA-15168), and its "
        "expiration task deletes the segment that is not within the lineage. Both sets of objects stay in "
        "the store until then ({bytes} bytes of {second_id}); if both are within the lineage the second "
        "copy stays until retention deletes it.",
        "K:core/.../log/remote/RemoteLogManager.java isRemoteSegmentWithinLeaderEpochs, RLMExpirationTask; "
        "storage/.../remote/metadata/storage/RemoteLogLeaderEpochState.java; KAFKA-15168",
        cases={
            "duplicate": Case(
                "{topic_partition}: remote segment {second_id} holds the same offsets {first_range} as "
                "{first_id} (epochs {first_epochs} and {second_epochs}): the segment is stored twice, "
                "both COPY_SEGMENT_FINISHED in {metadata_partition}"
            ),
        },
    ),
    Entry(
        "REMOTE_EPOCH_LINEAGE_BROKEN",
        _W,
        "a finished remote segment whose leader epochs do not follow the partition's leader-epoch lineage",
        "{topic_partition}: remote segment {segment_id} (offsets {start_offset}-{end_offset}, epochs "
        "{epochs}) is not within the leader-epoch lineage of {lineage_source} ({lineage}): {reason}",
        "The broker never serves a remote segment outside its leader-epoch lineage "
        "(RemoteLogManager.isRemoteSegmentWithinLeaderEpochs): its offsets are readable only if another "
        "segment holds them (REMOTE_OFFSETS_LOST says when none does). It comes from an upload by a leader "
        "whose log was then truncated (KAFKA-15168); nothing to repair in the log dir. Its objects stay in "
        "the store until retention deletes them.",
        "K:core/.../log/remote/RemoteLogManager.java isRemoteSegmentWithinLeaderEpochs, "
        "buildFilteredLeaderEpochMap; KAFKA-15168",
        cases={
            "between-segments": Case(
                "{topic_partition}: remote segment {segment_id} (offsets {start_offset}-{end_offset}, epochs "
                "{epochs}) follows {previous_id} (epochs {previous_epochs}): {reason}; leader epochs never "
                "go down along a log",
                "The two segments come from different leaders' logs (an upload by a leader that was then "
                "truncated; KAFKA-15168). The broker checks each segment against its own leader-epoch "
                "lineage and reads only the ones within it; scan the log dirs of the partition's leader with "
                "the same --remote-storage to see which one it is.",
            ),
            "into-local": Case(
                "{topic_partition}: {reason} (remote segment {segment_id}, offsets {start_offset}-"
                "{end_offset}, epochs {epochs}): the local log does not continue the remote one",
                "The local log and the remote tier come from different leaders' histories: the broker "
                "truncates to its leader's lineage when it becomes a follower, and reads only the remote "
                "segments within its own lineage. Scan the leader's log dirs with the same --remote-storage "
                "before any repair.",
            ),
        },
    ),
    Entry(
        "REMOTE_UPLOAD_STALLED",
        _W,
        "local segments of a tiered partition past local retention that are not uploaded",
        "{topic_partition}: {count} local segments ({bytes} bytes, offsets {ranges}) are past local "
        "retention ({retention}) but not in the remote tier, which ends at offset {remote_end} "
        "({metadata_partition}): uploads stalled, and local retention cannot delete them; {fill}",
        "Local retention deletes only uploaded segments (UnifiedLog.deletableSegments: "
        "isSegmentEligibleForDeletion), so the log dir grows until uploads resume. Look in the broker's log "
        "for the RemoteLogManager copy task's errors (RLMCopyTask: the RemoteStorageManager's credentials, "
        "the store's reachability, remote.log.manager.copy.max.bytes.per.second quota) and fix the cause; "
        "the copy task uploads the segments in order once it runs again. Free space in {logdir} before then.",
        "K:core/src/main/scala/kafka/log/UnifiedLog.scala deletableSegments (localRetentionMs/Bytes, "
        "highestOffsetInRemoteStorage); core/.../log/remote/RemoteLogManager.java RLMCopyTask",
    ),
    Entry(
        "REMOTE_METADATA_RETENTION_SHORT",
        _W,
        "__remote_log_metadata keeps its events for less time than a tiered topic keeps its records",
        "__remote_log_metadata has retention.ms={metadata_retention}, below the retention of tiered "
        "topics {topics}: events of remote segments still in use are deleted first, and a broker that "
        "rebuilds its state from the topic forgets those segments (KAFKA-15632)",
        "Set the metadata topic's retention to unlimited, as Kafka creates it by default "
        "(remote.log.metadata.topic.retention.ms=-1): kafka-configs.sh --bootstrap-server BROKER --alter "
        "--entity-type topics --entity-name __remote_log_metadata --add-config retention.ms=-1{props_hint}. "
        "Events "
        "already deleted are gone from the topic: their segments' objects show as REMOTE_OBJECTS_LEAKED; "
        "rebuild their events from the store's objects before deleting any of them (brokers stopped: "
        "`logdoctor restore LOGDIR --remote-storage URI --remote-log-metadata`, docs/restore.md).",
        "K:storage/.../remote/metadata/storage/TopicBasedRemoteLogMetadataManagerConfig.java "
        "(remote.log.metadata.topic.retention.ms, default -1); KAFKA-15632",
    ),
    Entry(
        "REPLICA_DIVERGED",
        _E,
        "a replica whose log diverged from the leader's (an unclean leader election): the records the "
        "broker's truncation removes when it fetches from the leader",
        "{topic_partition} here (leader epoch {own_epoch}) diverged from the replica in {leader_logdir}, "
        "which leads with leader epoch {leader_epoch}: when this broker fetches from it, it truncates the "
        "log to offset {truncate_to} and loses {records_lost} records, offsets {first} to {last}{times}, "
        "written in leader epoch(s) {epochs}",
        "Before this broker starts, save what it would lose: `logdoctor export {path} --out {lost_out} "
        "--starting-offsets {lost_from} --ending-offsets {log_end_offset} --include-control "
        "--isolation-level read_uncommitted` (Parquet of exactly those offsets, aborted and open "
        "transactions included, each labelled in transaction_result). Then start the broker (it truncates "
        "and fetches the leader's records), or, "
        "while this copy still holds them, make this replica the leader instead (stop the other replicas' "
        "brokers, start this one first and elect it with kafka-leader-election.sh --election-type unclean) "
        "and let the others truncate.",
        "K:core/.../server/AbstractFetcherThread.scala getOffsetTruncationState; storage/.../epoch/"
        "LeaderEpochFileCache.java endOffsetFor; core/.../server/ReplicaManager.scala initialFetchOffset",
        cases={
            # the census knows the offsets (inventories carry no records): the export says how many records
            "census": Case(
                "{topic_partition} on {broker} (leader epoch {own_epoch}) diverged from the replica on "
                "{leader_broker} ({leader_logdir}), which leads with leader epoch {leader_epoch}: when "
                "{broker} fetches from it, it truncates the log to offset {truncate_to} and loses offsets "
                "{first} to {last} ({offsets} offsets)"
            ),
        },
    ),
    Entry(
        "COMPACTION_BEHIND",
        _W,
        "a compacted partition the log cleaner should have cleaned long ago: its uncompacted bytes keep "
        "growing until the disk fills",
        "{topic}-{partition} has been cleanable for {behind_for} of its own time (since "
        "{cleanable_since_iso}; its newest record {newest_iso}): {why}, yet the cleaner has not moved its "
        "checkpoint past offset "
        "{first_dirty_offset}; {cleanable_bytes} bytes from there to offset {first_uncleanable_offset} are "
        "uncompacted ({clean_bytes} bytes are clean){growth}; min.cleanable.dirty.ratio = {config}",
        "On the broker: the log cleaner's log (log-cleaner.log) says why it stopped (`Error due to`, `has "
        "died`, `Marking partition ... uncleanable`); the metrics kafka.log:type=LogCleanerManager,"
        "name=time-since-last-run-ms and uncleanable-partitions-count show it. A partition marked "
        "uncleanable stays so until the broker restarts; a dead cleaner thread restarts with the broker or "
        "when log.cleaner.threads is changed dynamically (kafka-configs.sh --bootstrap-server HOST:PORT "
        "--entity-type brokers --entity-default --alter --add-config log.cleaner.threads=N: LogCleaner."
        "reconfigure restarts the threads). `logdoctor scan {logdir} --deep` names what in the log stops "
        "the cleaner (COMPACTION_DAMAGE, COMPACTION_BATCH_TOO_LARGE).",
        "K:storage/.../internals/log/LogCleanerManager.java (grabFilthiestCompactedLog, cleanableOffsets, "
        "calculateCleanableBytes, maxCompactionDelay), LogToClean.java (cleanableRatio), LogCleaner.java "
        "(CleanerThread, reconfigure)",
    ),
    Entry(
        "COMPACTION_DAMAGE",
        _E,
        "damage in a segment the log cleaner reads: a cleaning round that meets it throws and the "
        "partition is compacted no more",
        "{path} holds {what} at {where} ({damage_code}): the log cleaner reads this segment whenever it "
        "cleans {topic}-{partition} (every segment below the first uncleanable offset "
        "{first_uncleanable_offset}), and there its round throws (a batch that runs past the segment's "
        "end: CorruptRecordException 'Log segment may be corrupt, batch size N > M bytes left in "
        "segment'; a header or records that do not parse: CorruptRecordException or "
        "InvalidRecordException from the batch iterator). The broker then marks the partition "
        "uncleanable ('Marking its partition ... as uncleanable'; Kafka 2.1 and later, KIP-346; before "
        "2.1 the cleaner thread dies and no compacted partition of the broker is cleaned) and compacts "
        "it no more until it restarts, while its uncompacted bytes ({cleanable_bytes} now) grow. At "
        "startup after an unclean shutdown the broker's recovery truncates damage above the recovery "
        "point first; damage below it stays",
        "Stop the broker and remove the damage: {repair_damage}. A partition marked uncleanable is cleaned "
        "again after the broker restarts.",
        "K:storage/.../internals/log/Cleaner.java (doClean, cleanInto, growBuffersOrFail, "
        "buildOffsetMapForSegment), LogCleaner.java (CleanerThread.tryCleanFilthiestLog, "
        "cleanFilthiestLog), LogCleanerManager.java (markPartitionUncleanable)",
        cases={
            "crc": Case(
                "{path} holds {what} at {where} ({damage_code}), in a segment the log cleaner reads "
                "whenever it cleans {topic}-{partition} (every segment below the first uncleanable offset "
                "{first_uncleanable_offset}): the cleaner checks no CRC, so it does not stop there; it "
                "copies the batch as it is when it keeps all its records, and when it drops some it writes "
                "the rest into a new batch with a new CRC over the damaged bytes: the damage then passes "
                "every CRC check (consumers', DumpLogSegments', the broker's recovery)",
                "Before the broker cleans this log again (stop it first): {repair_damage}.",
            ),
        },
    ),
    Entry(
        "COMPACTION_BATCH_TOO_LARGE",
        _W,
        "a batch in the segments the log cleaner reads larger than the largest buffer of a cleaner before "
        "Kafka 2.0",
        "{path}: the batch at offset {offset} (position {position}) is {size} bytes, larger than both the "
        "topic's max.message.bytes {topic_max} and the broker's message.max.bytes {broker_max}; the log "
        "cleaner reads it whenever it cleans {topic}-{partition} (every segment below the first uncleanable "
        "offset {first_uncleanable_offset}){more}. Its read and write buffers start at "
        "log.cleaner.io.buffer.size / log.cleaner.threads / 2 and double up to the larger of those two "
        "({limit} bytes); Kafka 2.0 and later (KAFKA-6834) then grow them to the batch's own size for that "
        "round (twice the batch's bytes of heap per cleaner thread) and go on; Kafka before 2.0 throws "
        "IllegalStateException ('This log contains a message larger than maximum allowable size of "
        "{limit}.') and the cleaner thread dies: no compacted partition of the broker is cleaned, and it "
        "dies at this batch again after every restart",
        "On Kafka 2.0 or later nothing needs doing. On an older broker raise the topic's max.message.bytes "
        "to at least the batch's size: kafka-configs.sh --zookeeper ZK_HOST:2181 --entity-type topics "
        "--entity-name {topic} --alter --add-config max.message.bytes={size_plain} (then restart the broker: "
        "its dead cleaner thread starts again with it).",
        "K:storage/.../internals/log/Cleaner.java (growBuffersOrFail, growBuffers, restoreBuffers), "
        "LogCleaner.java (CleanerThread: ioBufferSize / numThreads / 2, maxMessageSize); KAFKA-6834",
    ),
    Entry(
        "COMPACTION_KEYLESS_RECORDS",
        _W,
        "records without a key in a compacted topic: the next cleaning deletes them",
        "{topic}-{partition} holds {count} records without a key below its first uncleanable offset "
        "{first_uncleanable_offset} (the first at offset {offset} in {path}): the log cleaner drops every "
        "record without a key from the segments it cleans (it counts them as invalid: 'Found N invalid "
        "messages during compaction'), so its next cleaning of this log deletes them{when}. The broker "
        "rejects such records for a compacted topic at produce time (InvalidRecordException 'Compacted "
        "topic cannot accept message without key'): these were written while the topic was not compacted",
        "To keep them, save them before the broker cleans this log: `logdoctor export {folder} --out {out} "
        "--starting-offsets {offset} --ending-offsets {first_uncleanable_offset}` (every record of those "
        "offsets, the keyless ones among them).",
        "K:storage/.../internals/log/Cleaner.java (shouldRetainRecord: no key, stats.invalidMessage; "
        "buildOffsetMapForSegment), LogCleaner.java (recordStats), LogValidator.java (validateKey)",
    ),
    Entry(
        "COMPACTION_TOMBSTONES_EXPIRED",
        _I,
        "tombstones in the cleaned part of a compacted log past their delete horizon, waiting for the next "
        "cleaning",
        "{topic}-{partition} holds {count} tombstones below its first dirty offset {first_dirty_offset} "
        "(the first at offset {offset} in {path}) that the log cleaner may now remove: {since} "
        "(delete.retention.ms = {config}). It removes them only when it next cleans this log, which it "
        "does when the cleanable ratio ({ratio} now) exceeds min.cleanable.dirty.ratio ({min_ratio}) or a "
        "dirty segment passes max.compaction.lag.ms; until then consumers reading from the start still "
        "see these deletes",
        "Nothing is lost. To have them removed sooner, let the cleaner take this log sooner once new records "
        "come: kafka-configs.sh --bootstrap-server HOST:PORT --entity-type topics --entity-name {topic} "
        "--alter --add-config max.compaction.lag.ms=MS.",
        "K:storage/.../internals/log/Cleaner.java (shouldRetainRecord: the batch's deleteHorizonMs, v2; "
        "doClean's legacyDeleteHorizonMs, v0/v1), clients/.../record/MemoryRecords.java filterTo "
        "(sets the delete horizon, KIP-534)",
    ),
    Entry(
        "TRANSACTION_HANGING",
        _E,
        "a transaction still open after the transaction timeout: read_committed consumers see nothing "
        "beyond its first offset",
        "producer {producer_id} (epoch {producer_epoch}) has had a transaction open since offset "
        "{first_offset} for {open_for} (its last write {last_timestamp_iso}, the partition's newest record "
        "{newest_timestamp_iso}; timeout {timeout_ms} ms from {timeout_source}, plus the broker's 5-minute "
        "late-transaction buffer): the last stable offset is {last_stable_offset}, so {records_above} "
        "records ({offsets_above} offsets) up to the log end offset {log_end_offset} are invisible to "
        "read_committed consumers",
        "A command for the running cluster (not for this host's files): "
        "`kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic {topic} --partition {partition} "
        "--start-offset {first_offset}` (KIP-664; `kafka-transactions.sh --bootstrap-server HOST:PORT "
        "find-hanging --broker-id ID` lists them). The abort writes the ABORT marker; read_committed "
        "consumers then move on.",
        "K:storage/.../log/ProducerStateManager.java (loadFromSnapshot, hasLateTransaction, "
        "LATE_TRANSACTION_BUFFER_MS, firstUnstableOffset), storage/.../log/UnifiedLog.java "
        "rebuildProducerState; tools/.../TransactionsCommand.java (KIP-664)",
    ),
    Entry(
        "TRANSACTION_STATE_MISMATCH",
        _W,
        "the transaction coordinator's state (__transaction_state) and a partition's open transactions "
        "disagree",
        "{message}",
        "A command for the running cluster: kafka-transactions.sh --bootstrap-server HOST:PORT describe "
        "--transactional-id {transactional_id} shows what the coordinator does with it (it completes "
        "PrepareCommit and PrepareAbort by writing the markers).",
        "K:transaction-coordinator/.../TransactionState.java, core/.../coordinator/transaction/"
        "TransactionStateManager.scala loadTransactionMetadata, TransactionMarkerChannelManager.scala; "
        "storage/.../log/ProducerStateManager.java",
        cases={
            "open-in-log": Case(
                "{topic}-{partition} holds a transaction of producer {producer_id} (epoch {producer_epoch}) "
                "open since offset {first_offset}, but the transaction coordinator has none open for it "
                "({said}): no marker will come, and read_committed consumers stay at offset {first_offset} "
                "until it is aborted",
                "A command for the running cluster (not for this host's files): kafka-transactions.sh "
                "--bootstrap-server HOST:PORT abort --topic {topic} --partition {partition} --start-offset "
                "{first_offset} (KIP-664).",
            ),
            "closed-in-log": Case(
                "the transaction coordinator has transactional id {transactional_id} (producer "
                "{producer_id}, epoch {producer_epoch}) in state {state} ({source}), listing "
                "{topic}-{partition}, but that partition's producer state shows the transaction's marker "
                "already written there"
            ),
        },
    ),
    Entry(
        "CONSUMER_OFFSET_OUT_OF_RANGE",
        _W,
        "a consumer group's committed offset outside its partition's log: the group resets by "
        "auto.offset.reset when it comes back",
        "group {group} committed offset {committed_offset} for {topic}-{partition}, {where} of {path} (log "
        "start offset {log_start_offset}, log end offset {log_end_offset}): with auto.offset.reset=earliest "
        "it {earliest_effect}; with latest it {latest_effect}",
        "Before the group's consumers start, decide where it resumes: kafka-consumer-groups.sh "
        "--bootstrap-server HOST:PORT --group {group} --reset-offsets --topic {topic}:{partition} "
        "--to-offset N --execute (on the running cluster, with the group's consumers stopped); otherwise the "
        "consumers reset by their auto.offset.reset.",
        "K:group-coordinator/.../OffsetMetadataManager.java (replay of OffsetCommit records), core/.../"
        "coordinator/group/GroupMetadataManager.scala (loadGroupsAndOffsets); clients/.../consumer/internals/"
        "Fetcher (OFFSET_OUT_OF_RANGE, SubscriptionState.resetStrategy)",
    ),
    Entry(
        "SHARE_GROUP_BEHIND_LOG_START",
        _W,
        "a share group's share-partition start offset below its partition's log start: records deleted "
        "before the group delivered them",
        "share group {group} starts {topic}-{partition} at offset {start_offset} ({source}), below the log "
        "start offset {log_start_offset} of {path}: the {lost} offsets in between were deleted before the "
        "group delivered and acknowledged them; at the group's next fetch the broker moves its start to the "
        "log start and archives what it held below it",
        "Nothing to repair on disk: the records are gone. If the group must not skip records, give the topic "
        "a retention longer than the group's delivery delay (retention.ms / retention.bytes), and reprocess "
        "the skipped range from a copy if one exists.",
        "K:share-coordinator/.../ShareCoordinatorShard.java (replay, merge), core/.../server/share/"
        "ShareFetchUtils.java (OFFSET_OUT_OF_RANGE: updateCacheAndOffsets(offsetForEarliestTimestamp)), "
        "core/.../server/share/SharePartition.java updateCacheAndOffsets (KIP-932)",
    ),
    Entry(
        "REPLICA_LAG",
        _W,
        "a replica behind the most advanced copy of its partition (error: below the high watermark)",
        "{topic_partition} on {broker} ends at offset {log_end_offset}, {lag} offsets and {lag_bytes} bytes "
        "behind {leader_broker} (log end offset {leader_log_end_offset}); {state}",
        "Let the broker re-fetch from the leader; or, with both brokers stopped, replace this copy with the "
        "leader's and set the three checkpoint entries: `logdoctor sync-replica {topic_partition} --leader "
        "{leader_logdir} --follower {logdir}` prints the plan, add --apply to make it.",
        "K:core/.../cluster/Partition.scala (ISR, high watermark); ReplicaFetcherThread",
        "fleet",
    ),
    Entry(
        "LOG_DIR_NEARLY_FULL",
        _W,
        "a log dir whose disk is nearly full, as df prints it: warning from 85%, error from 95% (scan: the "
        "log dirs given; census: the fleet's)",
        "the disk of {logdir} is {used} full ({available} of {total} free, from {disk_source}); a "
        "full disk takes the log dir offline",
        "{fix}",
        "K:core/.../log/LogManager.scala handleLogDirFailure (an IOException takes the dir offline)",
        "fleet",
    ),
    Entry(
        "TOPIC_RECREATED",
        _W,
        "replicas of one topic name with different topic ids: the topic was deleted and created again",
        "topic {topic} has replicas of {ids} topic ids: {groups}; a topic deleted and created again with the "
        "same name is a different topic, so its replicas are compared only with those of the same id",
        "Find the topic id the cluster uses now (kafka-topics.sh --describe --topic {topic} prints TopicId); "
        "a replica with another id is left over from the deleted topic and the broker will not use it "
        "(InconsistentTopicIdException). With that broker stopped, `logdoctor scan {logdir}` shows the "
        "folder; move it out of the log dir and let the broker fetch the current topic's data again.",
        "K:core/.../cluster/Partition.scala checkOrSetTopicId; storage/.../PartitionMetadataFile.java",
        "fleet",
    ),
    Entry(
        "SEVERAL_CLUSTERS",
        _I,
        "the census's brokers belong to several clusters: replicas are compared only within a cluster",
        "the brokers given are those of {clusters} clusters ({listing}); a broker is its cluster id and "
        "node id, and replicas are compared (lag, high watermark, topic ids) only with replicas of the same "
        "cluster{shared}",
        "Nothing to do; to see one cluster alone, give the census only its brokers' inventories or log dirs.",
        "K:metadata/.../properties/MetaProperties.java (cluster.id, node.id); a cluster id is random per "
        "`kafka-storage format` unless given, and docker images give a fixed one",
        "fleet",
    ),
    Entry(
        "INVENTORY_UNREADABLE",
        _E,
        "an inventory file the census cannot read (truncated, corrupt, not an inventory, unknown version)",
        "{path} cannot be read as a logdoctor inventory ({error}); the census goes on without it",
        "Collect that broker's inventory again on its host (the inventory command with the broker's log "
        "dirs and --out {path}; docs/inventory.md describes the format) and run the census again.",
        "logdoctor's inventory format (docs/inventory.md)",
        "fleet",
    ),
)

#: `logdoctor dump --verify-index` (and the log dump): one entry-level mismatch each, as DumpLogSegments
#: reports them (K:core/src/main/scala/kafka/tools/DumpLogSegments.scala); (code, severity, title, scan
#: code whose repair fixes it)
_DUMP = (
    (
        "INDEX_OFFSET_MISMATCH",
        _E,
        "an offset index entry whose offset differs from the log's (DLS 'Mismatches')",
        "INDEX_CORRUPT",
    ),
    (
        "INDEX_POSITION_BEYOND_LOG",
        _E,
        "an offset index entry pointing past the end of the .log",
        "INDEX_CORRUPT",
    ),
    ("INDEX_POSITION_NOT_BATCH_START", _E, "an offset index entry pointing inside a batch", "INDEX_CORRUPT"),
    (
        "INDEX_POSITION_NEGATIVE",
        _E,
        "an offset index entry with a negative position (before the .log's first byte)",
        "INDEX_CORRUPT",
    ),
    ("INDEX_OFFSET_NOT_IN_LOG", _E, "an offset index entry whose offset no batch holds", "INDEX_CORRUPT"),
    ("INDEX_OUT_OF_ORDER", _E, "offset index entries that do not increase", "INDEX_CORRUPT"),
    (
        "TIME_INDEX_OFFSET_NOT_IN_LOG",
        _E,
        "a time index offset not found in the log (DLS 'indexed offsets are not found')",
        "INDEX_CORRUPT",
    ),
    (
        "TIME_INDEX_TIMESTAMP_MISMATCH",
        _E,
        "a time index timestamp that is not its batch's max timestamp (DLS 'timestamp mismatch')",
        "INDEX_CORRUPT",
    ),
    (
        "TIME_INDEX_OUT_OF_ORDER",
        _E,
        "time index timestamps that go backwards (DLS 'out of order timestamp')",
        "INDEX_CORRUPT",
    ),
    ("INDEX_PARTIAL_ENTRY", _E, "an index whose length is not a whole number of entries", "INDEX_CORRUPT"),
    (
        "INDEX_SANITY_CHECK_FAILED",
        _E,
        "an index the broker's sanity check rejects (DLS --index-sanity-check)",
        "INDEX_CORRUPT",
    ),
    ("INDEX_GARBAGE_AFTER_ZERO_SLOT", _W, "non-zero bytes after an index's zero slot", "INDEX_CORRUPT"),
    ("INDEX_WITHOUT_LOG", _W, "an index file with no .log beside it", "ORPHAN_FILE"),
    (
        "LOG_INVALID_BYTES",
        _E,
        "bytes at the end of a .log that are no batch (DLS 'Found N invalid bytes')",
        "LOG_CORRUPT",
    ),
    ("LOG_CRC_MISMATCH", _E, "a batch whose CRC does not match (DLS 'isvalid: false')", "LOG_CORRUPT"),
    (
        "LOG_OFFSET_BELOW_BASE",
        _E,
        "a batch whose offsets start below the segment's base offset (LogSegment.recover: "
        "InvalidOffsetException)",
        "SEGMENT_BASE_OFFSET_MISMATCH",
    ),
    (
        "LOG_PAST_REMOTE_SEGMENT",
        _E,
        "a remote segment's object holding offsets past the segment's last offset (its metadata's end, or "
        "the next segment's start): those offsets are dumped once, from the segment that holds them",
        "REMOTE_SEGMENTS_OVERLAP",
    ),
    (
        "LOG_NON_CONSECUTIVE_OFFSETS",
        _I,
        "offsets that skip (info: compaction) or go backwards (error) (DLS 'Non-consecutive offsets')",
        "LOG_CORRUPT",
    ),
)

#: scan codes that repair does not fix (the broker's own recovery, or the remote store, decides): a dump
#: finding of theirs points to the scan's fix instead of a repair command
_SCAN_ONLY = ("SEGMENT_BASE_OFFSET_MISMATCH", "REMOTE_SEGMENTS_OVERLAP")

_ENTRIES += tuple(
    Entry(
        code,
        severity,
        title,
        "{problem}",
        (
            f"The scan reports this as {scan_code}: `logdoctor scan {{logdir}} --deep` gives it with its fix."
            if scan_code in _SCAN_ONLY
            else f"Stop the broker; {{repair}} (the scan reports this as {scan_code})."
        ),
        "K:core/src/main/scala/kafka/tools/DumpLogSegments.scala (dumpIndex, dumpTimeIndex, dumpLog)",
        "dump",
    )
    for code, severity, title, scan_code in _DUMP
)
#: the scan code whose repair fixes each dump code
DUMP_FIXED_BY: dict[str, str] = {code: scan_code for code, _s, _t, scan_code in _DUMP}

CATALOG: dict[str, Entry] = {e.code: e for e in _ENTRIES}
assert len(CATALOG) == len(_ENTRIES), "duplicate catalog code"

#: the dump's codes as an enum (logdoctor.checks.verify_index re-exports it as FindingCode)
FindingCode = enum.StrEnum("FindingCode", [(e.code, e.code) for e in _ENTRIES if e.scope == "dump"])
FindingCode.__doc__ = "Stable codes of `logdoctor dump` findings (catalog scope 'dump')."


class _Fields(dict):
    """Missing template fields render as '' instead of raising."""

    def __missing__(self, key: str) -> str:
        return ""


def make(
    code: str,
    path: str,
    *,
    case: str | None = None,
    position: int | None = None,
    offset: int | None = None,
    severity: Severity | None = None,
    details: dict[str, Any] | None = None,
    **fields: Any,
) -> Finding:
    """Build a Finding from the catalog (unknown codes are a programming error: KeyError).

    ``case`` picks one of the entry's :class:`Case` templates; their fields must all be passed (a
    missing one is a KeyError, not an empty string).
    """
    entry = CATALOG[code]
    values: dict[str, Any] = dict(fields) if case is not None else _Fields(fields)
    values.setdefault("path", path)
    values.setdefault("logdir", LOGDIR_PLACEHOLDER)
    values.setdefault("repair", repair_hint(DUMP_FIXED_BY.get(code, code), values["logdir"]))
    if position is not None:
        values.setdefault("position", position)
    if offset is not None:
        values.setdefault("offset", offset)
    message, fix = entry.message, entry.fix
    if case is not None:
        chosen = entry.cases[case]
        message, fix = chosen.message, chosen.fix if chosen.fix is not None else entry.fix
    fix_text, fix_argv = render_fix(fix, values)
    return Finding(
        code=code,
        severity=entry.severity if severity is None else severity,
        path=path,
        message=message.format_map(values),
        fix=fix_text,
        position=position,
        offset=offset,
        details=dict(details or {}),
        fix_argv=fix_argv,
    )


_FIELD = re.compile(r"\{(\w+)\}")


def render_fix(template: str, values: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """A fix template's text and the argvs of the commands in it, in the order the text names them.

    A backticked ``logdoctor ...`` span of the template with fields in it is a command: each of its
    words is formatted alone (a path with a space stays one argument) and the span is the argv quoted
    (``shlex.join``). A field whose value is a :class:`CommandText` brings its argvs. Other spans (a log
    line to look for, another tool's command with placeholders such as ``HOST:PORT``, a shell glob) are
    prose."""
    text: list[str] = []
    argvs: list[tuple[str, ...]] = []
    for i, part in enumerate(template.split("`")):
        if i % 2 and part.startswith("logdoctor ") and _FIELD.search(part) and "*" not in part:
            argv = tuple(word.format_map(values) for word in part.split())
            argvs.append(argv)
            text.append(shlex.join(argv))
            continue
        for name in _FIELD.findall(part):
            value = values.get(name)
            argvs.extend(value.argvs if isinstance(value, CommandText) else ())
        text.append(part.format_map(values))
    return "`".join(text), tuple(argvs)


def codes(scope: str | None = None) -> list[str]:
    """Every catalog code, or those of one scope (scan, fleet, dump)."""
    return [c for c, e in CATALOG.items() if scope is None or e.scope == scope]

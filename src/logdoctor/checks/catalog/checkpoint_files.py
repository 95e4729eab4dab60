"""Catalog entries of the small files Kafka checkpoints beside the logs: the log dir's offset
checkpoints and meta.properties, a partition's partition.metadata (topic id) and
leader-epoch-checkpoint.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _W, Case, Entry

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


ENTRIES: tuple[Entry, ...] = (
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
        "The broker truncates the epoch cache at startup; to do it offline: {repair}. If this partition's "
        "segments were removed by hand, also check the other checkpoints.",
        "K:storage/.../epoch/LeaderEpochFileCache.java truncateFromEndAsyncFlush; LogLoader.load",
    ),
)

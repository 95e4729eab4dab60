"""Catalog entries of KRaft log dirs: directory identity (KIP-858) and the controller's directory
assignments of replicas.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _I, _W, Case, Entry

ENTRIES: tuple[Entry, ...] = (
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
        "{path} is a replica of {partition} ({size}) that Kafka moved aside as a stray (no longer "
        "assigned to this broker){state}: Kafka keeps it forever, never serves it and never deletes it",
        "Make sure the data is held elsewhere (kafka-topics --describe; `logdoctor dump {path}/*.log` "
        "reads its segments), then delete it while the broker is stopped: `rm -r {path}`.",
        "K:core/.../log/LogManager.scala loadLog ('Loaded stray log'), asyncDelete(isStray: 'Move aside "
        "stray partitions, don't delete them'); KAFKA-14616",
    ),
)

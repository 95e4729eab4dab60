"""Catalog entries that only several brokers' log dirs show: replicas that diverged (a scan of
several brokers' dirs) and the census's ``fleet`` scope (lag, disk room, recreated topics,
clusters, unreadable inventories).
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _I, _W, Case, Entry

ENTRIES: tuple[Entry, ...] = (
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
        "transactions included, each labelled in transaction_result, into {lost_out} under the directory "
        "you run it from, never on the log dir's disk; any other --out will do). Then start the broker "
        "(it truncates and fetches the leader's records), or, "
        "while this copy still holds them, make this replica the leader instead (stop the other replicas' "
        "brokers, start this one first and elect it with kafka-leader-election.sh --election-type unclean) "
        "and let the others truncate. Restart order: while unclean.leader.election.enable is true for "
        "{topic} (its topic config or the brokers' default), the controller makes the first of the "
        "partition's brokers to register its leader, in the ISR or not, so starting all brokers at once "
        "may elect this replica or another stale one: {reverse}. "
        "The safe order: start {restart_broker} (the broker of {leader_logdir}) first and wait until it "
        "leads (`kafka-topics.sh --bootstrap-server HOST:PORT --describe --topic {topic}` shows partition "
        "{partition} with Leader: {leader_node}), then start the other brokers; or first turn unclean "
        "election off (`kafka-configs.sh --bootstrap-controller HOST:PORT --alter --entity-type topics "
        "--entity-name {topic} --add-config unclean.leader.election.enable=false`, and "
        "unclean.leader.election.enable=false in every broker's server.properties), after which only a "
        "replica of the ISR leads.",
        "K:core/.../server/AbstractFetcherThread.scala getOffsetTruncationState; storage/.../epoch/"
        "LeaderEpochFileCache.java endOffsetFor; core/.../server/ReplicaManager.scala initialFetchOffset; "
        "restart order: metadata/.../controller/ReplicationControlManager.java generateLeaderAndIsrUpdates "
        "(a broker's unfencing elects it, Election.UNCLEAN when the topic allows it), "
        "PartitionChangeBuilder.java electAnyLeader",
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
        "REPLICA_LAG",
        _W,
        "a replica behind the copy that leads its partition, the newest leader epoch's (error: below the "
        "high watermark)",
        "{topic_partition} on {broker} ends at offset {log_end_offset}, {lag} offsets and {lag_size} "
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

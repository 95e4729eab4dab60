"""Catalog entries of tiered storage: the remote log metadata (__remote_log_metadata) and the
remote store's segments as they relate to the local log.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _E, _I, _W, Case, Entry

ENTRIES: tuple[Entry, ...] = (
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
        "{topic_partition}: remote segment {segment_id} (offsets {start_offset}-{end_offset}, {size}) "
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
        "{topic_partition}: {count} remote segments ({size}, offsets {ranges}) end below the log "
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
        "{size}; from {source}) are named by no live segment of {metadata_partition}: {why}",
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
        "the store until then ({size} of {second_id}); if both are within the lineage the second "
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
        "{topic_partition}: {count} local segments ({size}, offsets {ranges}) are past local "
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
)

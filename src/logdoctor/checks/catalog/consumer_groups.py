"""Catalog entries of consumer and share groups: committed offsets and share-group state
measured against the logs they read.
"""

from __future__ import annotations

from logdoctor.checks.catalog.entry import _W, Entry

ENTRIES: tuple[Entry, ...] = (
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
)

"""Kafka's internal-record message specs as Python tables.

Written from reading Kafka's JSON specs (not generated from them; field names in snake_case):

- ``group-coordinator/src/main/resources/common/message/*.json``: the ``__consumer_offsets``
  records (OffsetCommit, GroupMetadata and the KIP-848 consumer group / KIP-932 share group
  records). The record type of a key is its int16 version prefix
  (K: group-coordinator/.../GroupCoordinatorRecordSerde.java).
- ``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json``:
  the "consumer" embedded protocol inside GroupMetadataValue members.
- ``transaction-coordinator/src/main/resources/common/message/TransactionLog{Key,Value}.json``.
- ``metadata/src/main/resources/common/metadata/*.json``: every KRaft metadata record of trunk
  (2024-10), plus the two preview-era (3.0-3.4) records trunk has dropped, AccessControlRecord (6)
  and RemoveFeatureLevelRecord (16), whose api keys nothing else reuses.

KIP-848's early-access 3.7 layouts of ConsumerGroup*Value (same version 0, other fields) are not
readable with these tables; 3.8+ layouts are.
"""

from __future__ import annotations

from typing import Any

from logdoctor.formats.internal.protocol import (
    _NO_DEFAULT,
    NONE,
    ArrayOf,
    Field,
    FieldType,
    Message,
    StructType,
    Versions,
)


def V(text: str) -> Versions:
    return Versions.parse(text)


def F(
    name: str,
    type_: FieldType,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: Any = _NO_DEFAULT,
) -> Field:
    return Field(
        name=name,
        type=type_,
        versions=V(versions),
        nullable=V(nullable) if nullable else NONE,
        tagged=V(tagged) if tagged else NONE,
        tag=tag,
        default=default,
    )


def A(element: FieldType) -> ArrayOf:
    return ArrayOf(element)


def S(name: str, *fields: Field) -> StructType:
    return StructType(name, tuple(fields))


def M(name: str, valid: str, flexible: str, *fields: Field, api_key: int | None = None) -> Message:
    return Message(name, V(valid), V(flexible), tuple(fields), api_key)


# =============================================================================================
# __consumer_offsets
# =============================================================================================

OFFSET_COMMIT_KEY = M(
    "OffsetCommitKey", "0-1", "none",
    F("group", "string", "0-1"),
    F("topic", "string", "0-1"),
    F("partition", "int32", "0-1"),
)
OFFSET_COMMIT_VALUE = M(
    "OffsetCommitValue", "0-4", "4+",
    F("offset", "int64"),
    F("leader_epoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commit_timestamp", "int64"),
    F("expire_timestamp", "int64", "1", default=-1),
)
GROUP_METADATA_KEY = M("GroupMetadataKey", "2", "none", F("group", "string", "2"))
GROUP_METADATA_VALUE = M(
    "GroupMetadataValue", "0-4", "4+",
    F("protocol_type", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("current_state_timestamp", "int64", "2+", default=-1),
    F("members", A(S(
        "MemberMetadata",
        F("member_id", "string"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("client_id", "string"),
        F("client_host", "string"),
        F("rebalance_timeout", "int32", "1+", default=-1),
        F("session_timeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    ))),
)


def _group_key(name: str, record_type: int, *, member: bool = False) -> Message:
    v = str(record_type)
    fields = [F("group_id", "string", v)]
    if member:
        fields.append(F("member_id", "string", v))
    return M(name, v, "none", *fields)


_TOPIC_PARTITIONS_BY_ID = S("TopicPartitions", F("topic_id", "uuid"), F("partitions", A("int32")))
_TOPIC_METADATA = S(
    "TopicMetadata",
    F("topic_id", "uuid"),
    F("topic_name", "string"),
    F("num_partitions", "int32"),
    F("partition_metadata", A(S("PartitionMetadata", F("partition", "int32"), F("racks", A("string"))))),
)

CONSUMER_GROUP_METADATA_VALUE = M("ConsumerGroupMetadataValue", "0", "0+", F("epoch", "int32"))
CONSUMER_GROUP_PARTITION_METADATA_VALUE = M(
    "ConsumerGroupPartitionMetadataValue", "0", "0+", F("topics", A(_TOPIC_METADATA))
)
CONSUMER_GROUP_MEMBER_METADATA_VALUE = M(
    "ConsumerGroupMemberMetadataValue", "0", "0+",
    F("instance_id", "string", nullable="0+"),
    F("rack_id", "string", nullable="0+"),
    F("client_id", "string"),
    F("client_host", "string"),
    F("subscribed_topic_names", A("string")),
    F("subscribed_topic_regex", "string", nullable="0+"),
    F("rebalance_timeout_ms", "int32", default=-1),
    F("server_assignor", "string", nullable="0+"),
    F("classic_member_metadata", S(
        "ClassicMemberMetadata",
        F("session_timeout_ms", "int32"),
        F("supported_protocols", A(S("ClassicProtocol", F("name", "string"), F("metadata", "bytes")))),
    # JSON "default": null is no default to Kafka's generator (FieldSpec: the empty struct), so a null
    # value is written (presence 0) and an absent one reads as the empty struct
    ), nullable="0+", tagged="0+", tag=0),
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", F("assignment_epoch", "int32")
)
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    F("topic_partitions", A(S("TopicPartition", F("topic_id", "uuid"), F("partitions", A("int32"))))),
)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    F("member_epoch", "int32"),
    F("previous_member_epoch", "int32"),
    F("state", "int8"),
    F("assigned_partitions", A(_TOPIC_PARTITIONS_BY_ID)),
    F("partitions_pending_revocation", A(_TOPIC_PARTITIONS_BY_ID)),
)
SHARE_GROUP_PARTITION_METADATA_VALUE = M(
    "ShareGroupPartitionMetadataValue", "0", "0+", F("topics", A(_TOPIC_METADATA))
)
SHARE_GROUP_MEMBER_METADATA_VALUE = M(
    "ShareGroupMemberMetadataValue", "0", "0+",
    F("rack_id", "string", nullable="0+"),
    F("client_id", "string"),
    F("client_host", "string"),
    F("subscribed_topic_names", A("string")),
)
SHARE_GROUP_METADATA_VALUE = M("ShareGroupMetadataValue", "0", "0+", F("epoch", "int32"))
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ShareGroupTargetAssignmentMetadataValue", "0", "0+", F("assignment_epoch", "int32")
)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ShareGroupTargetAssignmentMemberValue", "0", "0+",
    F("topic_partitions", A(S("TopicPartition", F("topic_id", "uuid"), F("partitions", A("int32"))))),
)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ShareGroupCurrentMemberAssignmentValue", "0", "0+",
    F("member_epoch", "int32"),
    F("previous_member_epoch", "int32"),
    F("state", "int8"),
    F("assigned_partitions", A(_TOPIC_PARTITIONS_BY_ID)),
)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = M(
    "ShareGroupStatePartitionMetadataValue", "0", "0+",
    F("initialized_topics", A(S(
        "TopicPartitionsInfo", F("topic_id", "uuid"), F("topic_name", "string"), F("partitions", A("int32"))
    ))),
    F("deleting_topics", A(S("TopicInfo", F("topic_id", "uuid"), F("topic_name", "string")))),
)

# record type (the key's int16 version) -> (type name, key spec, value spec)
CONSUMER_OFFSETS_RECORDS: dict[int, tuple[str, Message, Message]] = {
    0: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: ("GroupMetadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: ("ConsumerGroupMetadata", _group_key("ConsumerGroupMetadataKey", 3), CONSUMER_GROUP_METADATA_VALUE),
    4: ("ConsumerGroupPartitionMetadata", _group_key("ConsumerGroupPartitionMetadataKey", 4),
        CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: ("ConsumerGroupMemberMetadata", _group_key("ConsumerGroupMemberMetadataKey", 5, member=True),
        CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: ("ConsumerGroupTargetAssignmentMetadata", _group_key("ConsumerGroupTargetAssignmentMetadataKey", 6),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: ("ConsumerGroupTargetAssignmentMember",
        _group_key("ConsumerGroupTargetAssignmentMemberKey", 7, member=True),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: ("ConsumerGroupCurrentMemberAssignment",
        _group_key("ConsumerGroupCurrentMemberAssignmentKey", 8, member=True),
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    9: ("ShareGroupPartitionMetadata", _group_key("ShareGroupPartitionMetadataKey", 9),
        SHARE_GROUP_PARTITION_METADATA_VALUE),
    10: ("ShareGroupMemberMetadata", _group_key("ShareGroupMemberMetadataKey", 10, member=True),
         SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: ("ShareGroupMetadata", _group_key("ShareGroupMetadataKey", 11), SHARE_GROUP_METADATA_VALUE),
    12: ("ShareGroupTargetAssignmentMetadata", _group_key("ShareGroupTargetAssignmentMetadataKey", 12),
         SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: ("ShareGroupTargetAssignmentMember",
         _group_key("ShareGroupTargetAssignmentMemberKey", 13, member=True),
         SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: ("ShareGroupCurrentMemberAssignment",
         _group_key("ShareGroupCurrentMemberAssignmentKey", 14, member=True),
         SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: ("ShareGroupStatePartitionMetadata", _group_key("ShareGroupStatePartitionMetadataKey", 15),
         SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
}

# The "consumer" protocol embedded in GroupMetadataValue members (and in classic members'
# supported protocols): int16 version + struct; a newer version is read as the highest known
# one (K: clients/.../consumer/internals/ConsumerProtocol.java).
_TOPIC_PARTITION_BY_NAME = S("TopicPartition", F("topic", "string"), F("partitions", A("int32")))
CONSUMER_PROTOCOL_SUBSCRIPTION = M(
    "ConsumerProtocolSubscription", "0-3", "none",
    F("topics", A("string")),
    F("user_data", "bytes", nullable="0+", default=None),
    F("owned_partitions", A(S(
        "TopicPartition", F("topic", "string", "1+"), F("partitions", A("int32"), "1+")
    )), "1+"),
    F("generation_id", "int32", "2+", default=-1),
    F("rack_id", "string", "3+", nullable="3+", default=None),
)
CONSUMER_PROTOCOL_ASSIGNMENT = M(
    "ConsumerProtocolAssignment", "0-3", "none",
    F("assigned_partitions", A(_TOPIC_PARTITION_BY_NAME)),
    F("user_data", "bytes", nullable="0+", default=None),
)

# =============================================================================================
# __transaction_state
# =============================================================================================

TRANSACTION_LOG_KEY = M("TransactionLogKey", "0", "none", F("transactional_id", "string", "0"))
TRANSACTION_LOG_VALUE = M(
    "TransactionLogValue", "0-1", "1+",
    F("producer_id", "int64"),
    F("previous_producer_id", "int64", "1+", tagged="1+", tag=0, default=-1),
    F("next_producer_id", "int64", "1+", tagged="1+", tag=1, default=-1),
    F("producer_epoch", "int16"),
    F("transaction_timeout_ms", "int32"),
    F("transaction_status", "int8"),
    F("transaction_partitions", A(S(
        "PartitionsSchema", F("topic", "string"), F("partition_ids", A("int32"))
    )), nullable="0+"),
    F("transaction_last_update_timestamp_ms", "int64"),
    F("transaction_start_timestamp_ms", "int64"),
    F("client_transaction_version", "int16", "1+", tagged="1+", tag=2, default=0),
)
TRANSACTION_LOG_RECORDS: dict[int, tuple[str, Message, Message]] = {
    0: ("TransactionLog", TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE),
}
# TransactionState ids (K: core/.../transaction/TransactionMetadata.scala, TransactionState.java).
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}

# =============================================================================================
# __cluster_metadata (KRaft metadata records: every one has flexibleVersions "0+")
# =============================================================================================


def _meta(api_key: int, name: str, valid: str, *fields: Field) -> Message:
    return M(name, valid, "0+", *fields, api_key=api_key)


def _features(name: str) -> Field:
    return F("features", A(S(
        name,
        F("name", "string"),
        F("min_supported_version", "int16"),
        F("max_supported_version", "int16"),
    )))


def _endpoints(name: str) -> Field:
    return F("end_points", A(S(
        name,
        F("name", "string"),
        F("host", "string"),
        F("port", "uint16"),
        F("security_protocol", "int16"),
    )))


METADATA_RECORDS: dict[int, Message] = {
    m.api_key: m  # type: ignore[misc]
    for m in (
        _meta(0, "RegisterBrokerRecord", "0-3",
              F("broker_id", "int32"),
              F("is_migrating_zk_broker", "bool", "2+", default=False),
              F("incarnation_id", "uuid"),
              F("broker_epoch", "int64"),
              _endpoints("BrokerEndpoint"),
              _features("BrokerFeature"),
              F("rack", "string", nullable="0+"),
              F("fenced", "bool", default=True),
              F("in_controlled_shutdown", "bool", "1+", default=False),
              F("log_dirs", A("uuid"), "3+", tagged="3+", tag=0)),
        _meta(1, "UnregisterBrokerRecord", "0",
              F("broker_id", "int32"),
              F("broker_epoch", "int64")),
        _meta(2, "TopicRecord", "0",
              F("name", "string"),
              F("topic_id", "uuid")),
        _meta(3, "PartitionRecord", "0-2",
              F("partition_id", "int32", default=-1),
              F("topic_id", "uuid"),
              F("replicas", A("int32")),
              F("isr", A("int32")),
              F("removing_replicas", A("int32")),
              F("adding_replicas", A("int32")),
              F("leader", "int32", default=-1),
              F("leader_recovery_state", "int8", tagged="0+", tag=0, default=0),
              F("leader_epoch", "int32", default=-1),
              F("partition_epoch", "int32", default=-1),
              F("directories", A("uuid"), "1+"),
              F("eligible_leader_replicas", A("int32"), "2+", nullable="2+", tagged="2+", tag=1,
                default=None),
              F("last_known_elr", A("int32"), "2+", nullable="2+", tagged="2+", tag=2, default=None)),
        _meta(4, "ConfigRecord", "0",
              F("resource_type", "int8"),
              F("resource_name", "string"),
              F("name", "string"),
              F("value", "string", nullable="0+")),
        _meta(5, "PartitionChangeRecord", "0-2",
              F("partition_id", "int32", default=-1),
              F("topic_id", "uuid"),
              F("isr", A("int32"), nullable="0+", tagged="0+", tag=0, default=None),
              F("leader", "int32", tagged="0+", tag=1, default=-2),
              F("replicas", A("int32"), nullable="0+", tagged="0+", tag=2, default=None),
              F("removing_replicas", A("int32"), nullable="0+", tagged="0+", tag=3, default=None),
              F("adding_replicas", A("int32"), nullable="0+", tagged="0+", tag=4, default=None),
              F("leader_recovery_state", "int8", tagged="0+", tag=5, default=-1),
              F("directories", A("uuid"), "1+", nullable="1+", tagged="1+", tag=8, default=None),
              F("eligible_leader_replicas", A("int32"), "2+", nullable="2+", tagged="2+", tag=6,
                default=None),
              F("last_known_elr", A("int32"), "2+", nullable="2+", tagged="2+", tag=7, default=None)),
        # Preview-era KRaft (3.0-3.4 source trees) only; trunk dropped it for AccessControlEntryRecord.
        _meta(6, "AccessControlRecord", "0",
              F("resource_type", "int8"),
              F("resource_name", "string", nullable="0+"),
              F("pattern_type", "int8"),
              F("principal", "string"),
              F("host", "string"),
              F("operation", "int8"),
              F("permission_type", "int8")),
        _meta(7, "FenceBrokerRecord", "0",
              F("id", "int32"),
              F("epoch", "int64")),
        _meta(8, "UnfenceBrokerRecord", "0",
              F("id", "int32"),
              F("epoch", "int64")),
        _meta(9, "RemoveTopicRecord", "0",
              F("topic_id", "uuid")),
        _meta(10, "DelegationTokenRecord", "0",
              F("owner", "string"),
              F("requester", "string"),
              F("renewers", A("string")),
              F("issue_timestamp", "int64"),
              F("max_timestamp", "int64"),
              F("expiration_timestamp", "int64"),
              F("token_id", "string")),
        _meta(11, "UserScramCredentialRecord", "0",
              F("name", "string"),
              F("mechanism", "int8"),
              F("salt", "bytes"),
              F("stored_key", "bytes"),
              F("server_key", "bytes"),
              F("iterations", "int32")),
        # Its version cannot go beyond 0 (FeatureLevelRecord.json).
        _meta(12, "FeatureLevelRecord", "0",
              F("name", "string"),
              F("feature_level", "int16")),
        _meta(14, "ClientQuotaRecord", "0",
              F("entity", A(S("EntityData",
                              F("entity_type", "string"),
                              F("entity_name", "string", nullable="0+")))),
              F("key", "string"),
              F("value", "float64"),
              F("remove", "bool")),
        _meta(15, "ProducerIdsRecord", "0",
              F("broker_id", "int32"),
              F("broker_epoch", "int64", default=-1),
              F("next_producer_id", "int64")),
        # Preview-era KRaft (3.0-3.2 source trees) only.
        _meta(16, "RemoveFeatureLevelRecord", "0",
              F("name", "string")),
        _meta(17, "BrokerRegistrationChangeRecord", "0-2",
              F("broker_id", "int32"),
              F("broker_epoch", "int64"),
              F("fenced", "int8", tagged="0+", tag=0),
              F("in_controlled_shutdown", "int8", "1+", tagged="1+", tag=1),
              F("log_dirs", A("uuid"), "2+", tagged="2+", tag=2)),
        _meta(18, "AccessControlEntryRecord", "0",
              F("id", "uuid"),
              F("resource_type", "int8"),
              F("resource_name", "string"),
              F("pattern_type", "int8"),
              F("principal", "string"),
              F("host", "string"),
              F("operation", "int8"),
              F("permission_type", "int8")),
        _meta(19, "RemoveAccessControlEntryRecord", "0",
              F("id", "uuid")),
        _meta(20, "NoOpRecord", "0"),
        # Values: 0 None, 1 Migration, 2 PreMigration, 3 PostMigration (3.5+ numbering).
        _meta(21, "ZkMigrationStateRecord", "0",
              F("zk_migration_state", "int8")),
        _meta(22, "RemoveUserScramCredentialRecord", "0",
              F("name", "string"),
              F("mechanism", "int8")),
        _meta(23, "BeginTransactionRecord", "0",
              F("name", "string", nullable="0+", tagged="0+", tag=0, default=None)),
        _meta(24, "EndTransactionRecord", "0"),
        _meta(25, "AbortTransactionRecord", "0",
              F("reason", "string", nullable="0+", tagged="0+", tag=0, default=None)),
        _meta(26, "RemoveDelegationTokenRecord", "0",
              F("token_id", "string")),
        _meta(27, "RegisterControllerRecord", "0",
              F("controller_id", "int32"),
              F("incarnation_id", "uuid"),
              F("zk_migration_ready", "bool"),
              _endpoints("ControllerEndpoint"),
              _features("ControllerFeature")),
    )
}
METADATA_RECORDS_BY_NAME: dict[str, Message] = {m.name: m for m in METADATA_RECORDS.values()}

# Every message spec of this module, by name (tests walk them all).
ALL_MESSAGES: dict[str, Message] = {
    **{m.name: m for _, k, v in CONSUMER_OFFSETS_RECORDS.values() for m in (k, v)},
    **{m.name: m for _, k, v in TRANSACTION_LOG_RECORDS.values() for m in (k, v)},
    CONSUMER_PROTOCOL_SUBSCRIPTION.name: CONSUMER_PROTOCOL_SUBSCRIPTION,
    CONSUMER_PROTOCOL_ASSIGNMENT.name: CONSUMER_PROTOCOL_ASSIGNMENT,
    **METADATA_RECORDS_BY_NAME,
}

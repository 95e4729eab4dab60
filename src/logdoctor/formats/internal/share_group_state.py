"""Records of ``__share_group_state`` (KIP-932 share groups: the share coordinator's state).

Key = int16 record type (0 ShareSnapshot, 1 ShareUpdate) + the key struct read at that version;
value = int16 version + the value struct of the key's record type; a null value is a tombstone
(K: share-coordinator/.../ShareCoordinatorRecordSerde.java, ShareCoordinator.java,
coordinator-common/.../runtime/CoordinatorRecordSerde.java). Specs written from Kafka's
share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json.

Decoded form (as ``__consumer_offsets``)::

    {"type": "ShareSnapshot", "key_version": 0, "key": {"group_id": ..., "topic_id": ..., "partition": ...},
     "version": 0, "value": {"snapshot_epoch": ..., "state_epoch": ..., "leader_epoch": ...,
     "start_offset": ..., "state_batches": [...]}}
"""

from __future__ import annotations

from typing import Any

from logdoctor.formats.internal._framing import decode_typed_record, encode_typed_record
from logdoctor.formats.internal.protocol import Message
from logdoctor.formats.internal.schemas import A, F, M, S

KEY = "share group state key"
VALUE = "share group state value"

_STATE_BATCH = S(
    "StateBatch",
    F("first_offset", "int64", "0"),
    F("last_offset", "int64", "0"),
    F("delivery_state", "int8", "0"),  # 0 Available, 2 Acked, 4 Archived
    F("delivery_count", "int16", "0"),
)


def _key(name: str, version: str) -> Message:
    return M(
        name,
        version,
        "none",
        F("group_id", "string", version),
        F("topic_id", "uuid", version),
        F("partition", "int32", version),
    )


SHARE_SNAPSHOT_KEY = _key("ShareSnapshotKey", "0")
SHARE_SNAPSHOT_VALUE = M(
    "ShareSnapshotValue",
    "0",
    "0+",
    F("snapshot_epoch", "uint16", "0"),
    F("state_epoch", "int32", "0+"),
    F("leader_epoch", "int32", "0+"),
    F("start_offset", "int64", "0"),
    F("state_batches", A(_STATE_BATCH), "0"),
)
SHARE_UPDATE_KEY = _key("ShareUpdateKey", "1")
SHARE_UPDATE_VALUE = M(
    "ShareUpdateValue",
    "0",
    "0+",
    F("snapshot_epoch", "uint16", "0"),
    F("leader_epoch", "int32", "0+"),
    F("start_offset", "int64", "0"),
    F("state_batches", A(_STATE_BATCH), "0"),
)
#: record type (the key's int16 version) -> (type name, key spec, value spec)
SHARE_GROUP_STATE_RECORDS: dict[int, tuple[str, Message, Message]] = {
    0: ("ShareSnapshot", SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: ("ShareUpdate", SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}
_TYPE_IDS = {name: rt for rt, (name, _k, _v) in SHARE_GROUP_STATE_RECORDS.items()}


def decode_share_group_state(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
) -> dict[str, Any]:
    """Decode one ``__share_group_state`` record; positions in errors are within the key or value."""
    return decode_typed_record(
        key, value, SHARE_GROUP_STATE_RECORDS, key_what=KEY, value_what=VALUE, known="0-1", source=source
    )


def encode_share_group_state(record: dict[str, Any]) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record in the decoded form."""
    record_type = record.get("key_version")
    if record_type is None:
        record_type = _TYPE_IDS.get(record.get("type", ""))
    return encode_typed_record(
        record, SHARE_GROUP_STATE_RECORDS, record_type, "a known share group state record type"
    )

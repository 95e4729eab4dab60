"""Records of ``__share_group_state`` (KIP-932 share groups: the share coordinator's state).

Key = int16 record type (0 ShareSnapshot, 1 ShareUpdate) + the key struct read at that version;
value = int16 version + the value struct of the key's record type; a null value is a tombstone
(K: share-coordinator/.../ShareCoordinatorRecordSerde.java, ShareCoordinator.java,
coordinator-common/.../runtime/CoordinatorRecordSerde.java). Layouts generated from Kafka's
share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}{Key,Value}.json of 4.0, 4.1.1,
4.2.0, and of the 4.3.1 and 4.4.0 jars (``kafka_layouts``): 4.1 changed the value under the same version 0
(SnapshotEpoch uint16 -> int32, CreateTimestamp, WriteTimestamp; 4.2 adds the tagged DeliveryCompleteCount,
KIP-1226), so each value is read with the one layout that decodes it exactly (``layouts.read_exact``).

Decoded form (as ``__consumer_offsets``)::

    {"type": "ShareSnapshot", "key_version": 0, "key": {"group_id": ..., "topic_id": ..., "partition": ...},
     "version": 0, "layout": "4.1.1/4.2.0/4.3.1/4.4.0", "value": {"snapshot_epoch": ..., "state_epoch": ...,
     "leader_epoch": ..., "start_offset": ..., "create_timestamp": ..., "write_timestamp": ...,
     "delivery_complete_count": ..., "state_batches": [...]}}

``layout`` names the Kafka releases whose layout read the value ("4.0-SNAPSHOT/4.0.0" for 4.0's).
"""

from __future__ import annotations

from typing import Any

from logdoctor.formats.internal._framing import decode_typed_record, encode_typed_record
from logdoctor.formats.internal.layouts import ClusterFeatures
from logdoctor.formats.internal.schemas import SHARE_GROUP_STATE_RECORDS, known_text

KEY = "share group state key"
VALUE = "share group state value"
KNOWN = known_text(SHARE_GROUP_STATE_RECORDS)
_TYPE_IDS = {rec.name: rt for rt, rec in SHARE_GROUP_STATE_RECORDS.items()}


def decode_share_group_state(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
    features: ClusterFeatures | None = None,
) -> dict[str, Any]:
    """Decode one ``__share_group_state`` record; positions in errors are within the key or value."""
    return decode_typed_record(
        key, value, SHARE_GROUP_STATE_RECORDS, key_what=KEY, value_what=VALUE, known=KNOWN, source=source,
        features=features,
    )


def encode_share_group_state(record: dict[str, Any]) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record in the decoded form."""
    record_type = record.get("key_version")
    if record_type is None:
        record_type = _TYPE_IDS.get(record.get("type", ""))
    return encode_typed_record(
        record, SHARE_GROUP_STATE_RECORDS, record_type, "a known share group state record type"
    )

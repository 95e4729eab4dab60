"""Records of ``__remote_log_metadata`` (tiered storage, KIP-405: the topic-based remote log metadata).

A value is framed as a KRaft metadata record: unsigned varint frame version (1), unsigned varint
api key, unsigned varint version, then the struct (K: storage/.../remote/metadata/storage/
serialization/RemoteLogMetadataSerde.java over server-common/.../serialization/
BytesApiMessageSerde.java, AbstractApiMessageSerde.java). Specs written from Kafka's
storage/src/main/resources/message/RemoteLogSegmentMetadata*Record.json and
RemotePartitionDeleteMetadataRecord.json. Keys are not used by the serde (they may be null).

Decoded form: {"type": "RemoteLogSegmentMetadataRecord", "api_key": 0, "version": 0,
"frame_version": 1, "data": {...}}. RemoteLogSegmentState: 0 COPY_SEGMENT_STARTED, 1
COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED;
RemotePartitionDeleteState: 0 DELETE_PARTITION_MARKED, 1 ..._STARTED, 2 ..._FINISHED.
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import CorruptRecordError, UnsupportedError
from logdoctor.formats.internal._framing import as_bytes
from logdoctor.formats.internal.cluster_metadata import _uvarint
from logdoctor.formats.internal.protocol import Message, read_message, write_message, write_uvarint
from logdoctor.formats.internal.schemas import A, F, M, S

WHAT = "remote log metadata record"
FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION (the only one it reads)

_TOPIC_ID_PARTITION = S(
    "TopicIdPartitionEntry",
    F("name", "string", "0+"),
    F("id", "uuid", "0+"),
    F("partition", "int32", "0+"),
)
_SEGMENT_ID = S(
    "RemoteLogSegmentIdEntry",
    F("topic_id_partition", _TOPIC_ID_PARTITION, "0+"),
    F("id", "uuid", "0+"),
)
_LEADER_EPOCHS = F(
    "segment_leader_epochs",
    A(
        S(
            "SegmentLeaderEpochEntry",
            F("leader_epoch", "int32", "0+"),
            F("offset", "int64", "0+"),
        )
    ),
    "0+",
)
_CUSTOM = F("custom_metadata", "bytes", "0+", nullable="0+", default=None)


def _rec(api_key: int, name: str, *fields: Any) -> Message:
    return M(name, "0", "0+", *fields, api_key=api_key)


REMOTE_LOG_METADATA_RECORDS: dict[int, Message] = {
    m.api_key: m  # type: ignore[misc]
    for m in (
        _rec(
            0,
            "RemoteLogSegmentMetadataRecord",
            F("remote_log_segment_id", _SEGMENT_ID, "0+"),
            F("start_offset", "int64", "0+"),
            F("end_offset", "int64", "0+"),
            F("broker_id", "int32", "0+"),
            F("max_timestamp_ms", "int64", "0+"),
            F("event_timestamp_ms", "int64", "0+"),
            _LEADER_EPOCHS,
            F("segment_size_in_bytes", "int32", "0+"),
            _CUSTOM,
            F("remote_log_segment_state", "int8", "0+"),
        ),
        _rec(
            1,
            "RemoteLogSegmentMetadataUpdateRecord",
            F("remote_log_segment_id", _SEGMENT_ID, "0+"),
            F("broker_id", "int32", "0+"),
            F("event_timestamp_ms", "int64", "0+"),
            _CUSTOM,
            F("remote_log_segment_state", "int8", "0+"),
        ),
        _rec(
            2,
            "RemotePartitionDeleteMetadataRecord",
            F("topic_id_partition", _TOPIC_ID_PARTITION, "0+"),
            F("broker_id", "int32", "0+"),
            F("event_timestamp_ms", "int64", "0+"),
            F("remote_partition_delete_state", "int8", "0+"),
        ),
        # the remote log metadata snapshot files' record (not written to the topic)
        _rec(
            3,
            "RemoteLogSegmentMetadataSnapshotRecord",
            F("segment_id", "uuid", "0+"),
            F("start_offset", "int64", "0+"),
            F("end_offset", "int64", "0+"),
            F("broker_id", "int32", "0+"),
            F("max_timestamp_ms", "int64", "0+"),
            F("event_timestamp_ms", "int64", "0+"),
            _LEADER_EPOCHS,
            F("segment_size_in_bytes", "int32", "0+"),
            _CUSTOM,
            F("remote_log_segment_state", "int8", "0+"),
        ),
    )
}
_BY_NAME = {m.name: m for m in REMOTE_LOG_METADATA_RECORDS.values()}


def decode_remote_log_metadata(
    key: Any, value: bytes | bytearray | memoryview | None, *, source: str | None = None
) -> dict[str, Any]:
    """Decode one ``__remote_log_metadata`` record value; positions in errors are within the value."""
    if value is None:
        raise CorruptRecordError(f"{WHAT}: a record value", source=source, position=0, found="null value")
    data = as_bytes(value)
    frame_version, pos = _uvarint(data, 0, "frame version", source)
    if frame_version != FRAME_VERSION:
        raise UnsupportedError(
            f"{WHAT}: frame version {FRAME_VERSION}", source=source, position=0, found=str(frame_version)
        )
    api_key_at = pos
    api_key, pos = _uvarint(data, pos, "record type", source)
    version_at = pos
    version, pos = _uvarint(data, pos, "record version", source)
    message = REMOTE_LOG_METADATA_RECORDS.get(api_key)
    if message is None:
        raise UnsupportedError(
            f"{WHAT}: a known record type (0-3)", source=source, position=api_key_at, found=str(api_key)
        )
    if version not in message.valid_versions:
        raise UnsupportedError(
            f"{WHAT}: a version of {message.name} in {message.valid_versions}",
            source=source,
            position=version_at,
            found=str(version),
        )
    fields, _ = read_message(
        message, data, version, start=pos, what=f"{WHAT} ({message.name})", source=source
    )
    return {
        "type": message.name,
        "api_key": api_key,
        "version": version,
        "frame_version": frame_version,
        "data": fields,
    }


def encode_remote_log_metadata(record: dict[str, Any]) -> bytes:
    """Value bytes of a record in the decoded form ("api_key" or "type", "version", "data")."""
    api_key = record.get("api_key")
    message = (
        REMOTE_LOG_METADATA_RECORDS.get(api_key)
        if api_key is not None
        else _BY_NAME.get(record.get("type", ""))
    )
    if message is None:
        raise UnsupportedError(
            "a known remote log metadata record type", found=str(api_key or record.get("type"))
        )
    out = bytearray()
    write_uvarint(out, int(record.get("frame_version", FRAME_VERSION)))
    write_uvarint(out, message.api_key)  # type: ignore[arg-type]
    write_uvarint(out, int(record["version"]))
    out += write_message(message, record.get("data") or {}, int(record["version"]))
    return bytes(out)

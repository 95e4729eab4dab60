"""Records of ``__remote_log_metadata`` (tiered storage, KIP-405: the topic-based remote log metadata).

A value is framed as a KRaft metadata record: unsigned varint frame version (1), unsigned varint
api key, unsigned varint version, then the struct (K: storage/.../remote/metadata/storage/
serialization/RemoteLogMetadataSerde.java over server-common/.../serialization/
BytesApiMessageSerde.java, AbstractApiMessageSerde.java). Layouts from Kafka's
storage/src/main/resources/message/RemoteLogSegmentMetadata*Record.json and
RemotePartitionDeleteMetadataRecord.json, generated (``kafka_layouts``: 4.0 adds the tagged TxnIndexEmpty).
Keys are not used by the serde (they may be null).

Decoded form: {"type": "RemoteLogSegmentMetadataRecord", "api_key": 0, "version": 0,
"frame_version": 1, "data": {...}}. RemoteLogSegmentState: 0 COPY_SEGMENT_STARTED, 1
COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED;
RemotePartitionDeleteState: 0 DELETE_PARTITION_MARKED, 1 ..._STARTED, 2 ..._FINISHED.
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import UnsupportedError
from logdoctor.formats.internal.cluster_metadata import read_frame, write_frame
from logdoctor.formats.internal.layouts import candidates, for_writing, known_releases, newest, read_exact
from logdoctor.formats.internal.protocol import Message, write_message
from logdoctor.formats.internal.remote_segment_records import read_plain_segment_record
from logdoctor.formats.internal.schemas import REMOTE_LOG_METADATA_RECORD_NAMES

WHAT = "remote log metadata record"
FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION (the only one it reads)

#: api key -> the newest layout (storage/src/main/resources/message/RemoteLogSegmentMetadata*Record.json,
#: RemotePartitionDeleteMetadataRecord.json; the snapshot record is the snapshot files' record)
REMOTE_LOG_METADATA_RECORDS: dict[int, Message] = {
    api_key: newest(name) for api_key, name in REMOTE_LOG_METADATA_RECORD_NAMES.items()
}
_BY_NAME = {m.name: m for m in REMOTE_LOG_METADATA_RECORDS.values()}


def decode_remote_log_metadata(
    key: Any, value: bytes | bytearray | memoryview | None, *, source: str | None = None
) -> dict[str, Any]:
    """Decode one ``__remote_log_metadata`` record value; positions in errors are within the value."""
    data, api_key, api_key_at, version, version_at, pos = read_frame(value, WHAT, source, preview=False)
    message = REMOTE_LOG_METADATA_RECORDS.get(api_key)
    if message is None:
        raise UnsupportedError(
            f"{WHAT}: a known record type (0-3)", source=source, position=api_key_at, found=str(api_key)
        )
    if not candidates(message.name, version):
        raise UnsupportedError(
            f"{WHAT}: a version of {message.name} known to Kafka {known_releases(message.name)}"
            f" ({message.valid_versions})",
            source=source,
            position=version_at,
            found=str(version),
        )
    fields = read_plain_segment_record(data, api_key, version, pos)  # the two segment records, plain
    if fields is None:
        fields, _ = read_exact(message.name, data, version, start=pos, what=f"{WHAT} ({message.name})",
                               source=source)
    return {
        "type": message.name,
        "api_key": api_key,
        "version": version,
        "frame_version": FRAME_VERSION,
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
    version = int(record["version"])
    data = write_message(for_writing(message.name, version).message, record.get("data") or {}, version)
    return bytes(write_frame(record, message, version) + data)

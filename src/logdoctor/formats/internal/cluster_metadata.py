"""KRaft metadata records (values of ``__cluster_metadata`` records and of ``.checkpoint`` snapshots).

A value is: unsigned varint frame version (1), unsigned varint api key (the record type),
unsigned varint version, then the record struct, with nothing after it
(K: server-common/.../serialization/AbstractApiMessageSerde.java, metadata/.../MetadataRecordSerde.java).
Frame version 0 was KRaft's 2.8 preview, which Kafka itself refuses.

Decoded form: {"type": "PartitionRecord", "api_key": 3, "version": 2, "frame_version": 1,
"data": {...fields...}}. Layouts generated from Kafka's metadata/src/main/resources/common/metadata/*.json
(``kafka_layouts``: 4.0-SNAPSHOT to 4.2.0, a later trunk's UnregisterControllerRecord, and the files
inside kafka-metadata-4.3.1.jar and kafka-metadata-4.4.0.jar: RegisterBrokerRecord v4 /
BrokerRegistrationChangeRecord v3 with KIP-1066's cordoned log dirs); an api key or version none of them
has is UnsupportedError (``decode_lenient``: an "unknown" record with its bytes).
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError, UnsupportedError
from logdoctor.formats.internal._framing import as_bytes
from logdoctor.formats.internal.layouts import candidates, for_writing, known_releases, read_exact
from logdoctor.formats.internal.protocol import Message, read_message, write_message, write_uvarint
from logdoctor.formats.internal.schemas import (
    METADATA_RECORD_NAMES,
    METADATA_RECORDS,
    METADATA_RECORDS_BY_NAME,
    PREVIEW_METADATA_RECORDS,
)

WHAT = "metadata record"
FRAME_VERSION = 1


def _uvarint(data: bytes, pos: int, label: str, source: str | None) -> tuple[int, int]:
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise TruncatedError(f"{WHAT}: {label} (unsigned varint)", source=source, position=start,
                                 found=f"{len(data) - start} byte(s) left")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise CorruptRecordError(f"{WHAT}: {label}: an unsigned varint of at most 5 bytes",
                                     source=source, position=start)
    if result > 0x7FFF:  # AbstractApiMessageSerde.unsignedIntToShort
        raise CorruptRecordError(f"{WHAT}: {label} <= 32767", source=source, position=start,
                                 found=str(result))
    return result, pos


def read_frame(
    value: bytes | bytearray | memoryview | None, what: str, source: str | None, *, preview: bool = True
) -> tuple[bytes, int, int, int, int, int]:
    """(bytes, api key, its position, version, its position, the struct's position) of a framed value
    (AbstractApiMessageSerde.read: unsigned varint frame version, api key and version), its frame version
    checked first (``preview``: a frame version 0 is named KRaft's 2.8 preview's)."""
    if value is None:
        raise CorruptRecordError(f"{what}: a record value", source=source, position=0, found="null value")
    data = as_bytes(value)
    frame_version, api_key_at = _uvarint(data, 0, "frame version", source)
    if frame_version != FRAME_VERSION:
        found = str(frame_version) + (" (KRaft 2.8 preview)" if preview and frame_version == 0 else "")
        raise UnsupportedError(
            f"{what}: frame version {FRAME_VERSION}", source=source, position=0, found=found
        )
    api_key, version_at = _uvarint(data, api_key_at, "record type", source)
    version, pos = _uvarint(data, version_at, "record version", source)
    return data, api_key, api_key_at, version, version_at, pos


def write_frame(record: dict[str, Any], message: Message, version: int) -> bytearray:
    """The frame of a record in the decoded form: frame version, api key and version (unsigned varints)."""
    out = bytearray()
    write_uvarint(out, int(record.get("frame_version", FRAME_VERSION)))
    write_uvarint(out, message.api_key)  # type: ignore[arg-type]
    write_uvarint(out, version)
    return out


def decode_metadata_record(
    value: bytes | bytearray | memoryview | None, *, source: str | None = None
) -> dict[str, Any]:
    """Decode one metadata record value; positions in errors are within the value."""
    data, api_key, api_key_at, version, version_at, pos = read_frame(value, WHAT, source)
    message = METADATA_RECORDS.get(api_key)
    if message is None:
        raise UnsupportedError(f"{WHAT}: a known record type ({', '.join(map(str, METADATA_RECORDS))})",
                               source=source, position=api_key_at, found=str(api_key))
    name = METADATA_RECORD_NAMES.get(api_key)
    if name is None:  # a hand-written preview-era record
        return _read_one(message, data, version, pos, version_at, api_key, source)
    if not candidates(name, version):
        raise UnsupportedError(
            f"{WHAT}: a version of {name} known to Kafka {known_releases(name)} ({message.valid_versions})",
            source=source, position=version_at, found=str(version))
    fields, _ = read_exact(name, data, version, start=pos, what=f"{WHAT} ({name})", source=source)
    return {"type": name, "api_key": api_key, "version": version, "frame_version": FRAME_VERSION,
            "data": fields}


def _read_one(message: Message, data: bytes, version: int, pos: int, version_at: int,
              api_key: int, source: str | None) -> dict[str, Any]:
    if version not in message.valid_versions:
        raise UnsupportedError(f"{WHAT}: a version of {message.name} in {message.valid_versions}",
                               source=source, position=version_at, found=str(version))
    fields, _ = read_message(message, data, version, start=pos, what=f"{WHAT} ({message.name})",
                             source=source)
    return {"type": message.name, "api_key": api_key, "version": version, "frame_version": FRAME_VERSION,
            "data": fields}


def encode_metadata_record(record: dict[str, Any]) -> bytes:
    """Bytes of a record in the decoded form ("api_key" or "type", "version", "data")."""
    api_key = record.get("api_key")
    message = METADATA_RECORDS.get(api_key) if api_key is not None else METADATA_RECORDS_BY_NAME.get(
        record.get("type", ""))
    if message is None:
        raise UnsupportedError("a known metadata record type", found=str(api_key or record.get("type")))
    version = int(record["version"])
    if message.name not in PREVIEW_METADATA_RECORDS:
        message = for_writing(message.name, version).message
    data = write_message(message, record.get("data") or {}, version)
    return bytes(write_frame(record, message, version) + data)


def decode_as_newest_known(
    value: bytes | bytearray | memoryview | None, *, source: str | None = None
) -> dict[str, Any]:
    """A record of a known type at a version *newer* than every definition here, read with the newest
    known version's layout, and only if that reads it exactly to its last byte.

    For records whose later versions add only tagged fields: a tagged field unknown to the older
    version is kept raw under ``_unknown_tagged_fields`` (flexible versions, KIP-482), so nothing is
    lost or guessed; an untagged addition makes the exact read fail (UnsupportedError, as for any
    unknown version). The result is marked ``"read_as_version"``. Used by the metadata image for broker
    registrations newer than every definition here (past RegisterBrokerRecord v4 and
    BrokerRegistrationChangeRecord v3 of Kafka 4.3).
    """
    try:
        return decode_metadata_record(value, source=source)
    except UnsupportedError:
        if value is None:
            raise
        data, api_key, _, version, version_at, pos = read_frame(value, WHAT, source)
        name = METADATA_RECORD_NAMES.get(api_key)
        message = METADATA_RECORDS.get(api_key)
        if name is None or message is None:
            raise
        known = message.valid_versions.high
        if version <= known or known not in message.flexible_versions:
            raise
        try:
            what = f"{WHAT} ({name} v{version} as v{known})"
            fields, _ = read_exact(name, data, known, start=pos, what=what, source=source)
        except FormatError as exc:
            raise UnsupportedError(
                f"{WHAT}: {name} v{version} read exactly as v{known}", source=source, position=version_at,
                found=str(exc),
            ) from None
        return {"type": name, "api_key": api_key, "version": version, "frame_version": FRAME_VERSION,
                "data": fields, "read_as_version": known}

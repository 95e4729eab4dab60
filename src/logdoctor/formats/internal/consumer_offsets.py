"""Records of ``__consumer_offsets``: offset commits, classic group metadata, KIP-848/932 group records.

Key = int16 record type (0/1 OffsetCommit, 2 GroupMetadata, 3.. newer group records) + the key
struct read at that version; value = int16 version + the value struct; a null value is a
tombstone (K: group-coordinator/.../GroupCoordinatorRecordSerde.java, CoordinatorRecordSerde.java).

Decoded form::

    {"type": "OffsetCommit", "key_version": 1, "key": {"group": ..., "topic": ..., "partition": ...},
     "version": 3, "value": {"offset": ..., "leader_epoch": ..., ...}}     # value None: tombstone

For classic groups whose protocol type is "consumer", each member's ``subscription`` and
``assignment`` (and a KIP-848 classic member's supported protocol ``metadata``) are decoded into
dicts (see ``consumer_protocol``); bytes that are not an exact consumer-protocol message stay base64.
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import UnsupportedError
from logdoctor.formats.internal import consumer_protocol
from logdoctor.formats.internal._framing import (
    as_bytes,
    read_prefixed,
    read_version_prefix,
    require_key,
    unknown_type,
    write_prefixed,
)
from logdoctor.formats.internal.schemas import CONSUMER_OFFSETS_RECORDS

KEY = "consumer offsets key"
VALUE = "consumer offsets value"
_TYPE_IDS = {name: rt for rt, (name, _, _) in sorted(CONSUMER_OFFSETS_RECORDS.items(), reverse=True)}


def decode_consumer_offsets(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
    decode_protocol: bool = True,
) -> dict[str, Any]:
    """Decode one ``__consumer_offsets`` record; positions in errors are within the key or value."""
    key_bytes = require_key(key, KEY, source)
    record_type = read_version_prefix(key_bytes, KEY, source)
    entry = CONSUMER_OFFSETS_RECORDS.get(record_type)
    if entry is None:
        raise unknown_type(KEY, record_type, "0-15", source)
    name, key_spec, value_spec = entry
    key_fields = read_prefixed(key_spec, key_bytes, record_type, KEY, source)
    out: dict[str, Any] = {"type": name, "key_version": record_type, "key": key_fields,
                           "version": None, "value": None}
    if value is None:
        return out
    value_bytes = as_bytes(value)
    version = read_version_prefix(value_bytes, VALUE, source)
    fields = read_prefixed(value_spec, value_bytes, version, f"{VALUE} ({name})", source)
    if decode_protocol:
        _decode_embedded(name, fields)
    out["version"] = version
    out["value"] = fields
    return out


def encode_consumer_offsets(record: dict[str, Any]) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record in the decoded form (decoded consumer protocol dicts allowed)."""
    record_type = record.get("key_version")
    if record_type is None:
        record_type = _TYPE_IDS.get(record.get("type", ""))
    entry = CONSUMER_OFFSETS_RECORDS.get(record_type)  # type: ignore[arg-type]
    if entry is None:
        raise UnsupportedError("a known consumer offsets record type", found=str(record_type))
    _, key_spec, value_spec = entry
    key = write_prefixed(key_spec, record.get("key") or {}, record_type)  # type: ignore[arg-type]
    value_fields = record.get("value")
    if value_fields is None:
        return key, None
    value_fields = _encode_embedded(value_fields)
    return key, write_prefixed(value_spec, value_fields, int(record["version"]))


def _decode_embedded(name: str, fields: dict[str, Any]) -> None:
    if name == "GroupMetadata" and fields.get("protocol_type") == "consumer":
        for member in fields.get("members") or ():
            for kind in ("subscription", "assignment"):
                member[kind] = consumer_protocol.try_decode(kind, member[kind])
    elif name == "ConsumerGroupMemberMetadata":
        classic = fields.get("classic_member_metadata")
        for proto in (classic or {}).get("supported_protocols") or ():
            proto["metadata"] = consumer_protocol.try_decode("subscription", proto["metadata"])


def _encode_embedded(fields: dict[str, Any]) -> dict[str, Any]:
    members = fields.get("members")
    classic = fields.get("classic_member_metadata")
    if not members and not classic:
        return fields
    fields = dict(fields)
    if members:
        fields["members"] = [
            {**m, **{k: consumer_protocol.to_bytes(k, m[k]) for k in ("subscription", "assignment")
                     if isinstance(m.get(k), dict)}}
            for m in members
        ]
    if classic and classic.get("supported_protocols"):
        fields["classic_member_metadata"] = {
            **classic,
            "supported_protocols": [
                {**p, "metadata": consumer_protocol.to_bytes("subscription", p["metadata"])}
                if isinstance(p.get("metadata"), dict) else p
                for p in classic["supported_protocols"]
            ],
        }
    return fields

"""Records of ``__consumer_offsets``: offset commits, classic group metadata, KIP-848/932 group records.

Key = int16 record type (0/1 OffsetCommit, 2 GroupMetadata, 3-15 KIP-848/932 consumer and share group
records, 16 ConsumerGroupRegularExpression, 17 and 19-23 KIP-1071 streams group records) + the key
struct read at that version; value = int16 version + the value struct; a null value is a
tombstone (K: group-coordinator/.../GroupCoordinatorRecordSerde.java, CoordinatorRecordSerde.java).

Decoded form::

    {"type": "OffsetCommit", "key_version": 1, "key": {"group": ..., "topic": ..., "partition": ...},
     "version": 3, "value": {"offset": ..., "leader_epoch": ..., ...}}     # value None: tombstone

plus ``"layout": "4.0-SNAPSHOT/4.0.0"`` (or "4.1.1/4.2.0/4.3.1/4.4.0") for the share-group records whose
layout Kafka 4.1 changed under the same version (see ``layouts``).

For classic groups whose protocol type is "consumer", each member's ``subscription`` and
``assignment`` (and a KIP-848 classic member's supported protocol ``metadata``) are decoded into
dicts (see ``consumer_protocol``); bytes that are not an exact consumer-protocol message stay base64.
"""

from __future__ import annotations

from typing import Any

from logdoctor.formats.internal import consumer_protocol
from logdoctor.formats.internal._framing import decode_typed_record, encode_typed_record
from logdoctor.formats.internal.layouts import ClusterFeatures
from logdoctor.formats.internal.schemas import CONSUMER_OFFSETS_RECORDS, known_text

KEY = "consumer offsets key"
KNOWN = known_text(CONSUMER_OFFSETS_RECORDS)
VALUE = "consumer offsets value"
_TYPE_IDS = {rec.name: rt for rt, rec in sorted(CONSUMER_OFFSETS_RECORDS.items(), reverse=True)}


def decode_consumer_offsets(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
    features: ClusterFeatures | None = None,
    decode_protocol: bool = True,
) -> dict[str, Any]:
    """Decode one ``__consumer_offsets`` record; positions in errors are within the key or value."""
    out = decode_typed_record(
        key, value, CONSUMER_OFFSETS_RECORDS, key_what=KEY, value_what=VALUE, known=KNOWN, source=source,
        features=features,
    )
    if decode_protocol and out["value"] is not None:
        _decode_embedded(out["type"], out["value"])
    return out


def encode_consumer_offsets(record: dict[str, Any]) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record in the decoded form (decoded consumer protocol dicts allowed)."""
    record_type = record.get("key_version")
    if record_type is None:
        record_type = _TYPE_IDS.get(record.get("type", ""))
    if record.get("value") is not None:
        record = {**record, "value": _encode_embedded(record["value"])}
    return encode_typed_record(
        record, CONSUMER_OFFSETS_RECORDS, record_type, "a known consumer offsets record type"
    )


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

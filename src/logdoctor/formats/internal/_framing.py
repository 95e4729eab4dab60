"""The int16 version prefix Kafka puts before coordinator record keys and values.

K: clients/.../common/protocol/MessageUtil.java (toVersionPrefixedBytes) and
coordinator-common/.../runtime/CoordinatorRecordSerde.java (deserialize).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from logdoctor.errors import CorruptRecordError, TruncatedError, UnsupportedError
from logdoctor.formats.internal.layouts import ClusterFeatures, candidates, for_writing, read_chosen
from logdoctor.formats.internal.protocol import Message, read_message, write_message

_I16 = struct.Struct(">h")


def as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    return data if isinstance(data, bytes) else bytes(data)


def read_version_prefix(data: bytes, what: str, source: str | None) -> int:
    if len(data) < 2:
        raise TruncatedError(f"{what}: int16 version", source=source, position=0,
                             found=f"{len(data)} byte(s)")
    return _I16.unpack_from(data, 0)[0]


def require_key(key: bytes | bytearray | memoryview | None, what: str, source: str | None) -> bytes:
    if key is None:
        raise CorruptRecordError(f"{what}: a record key", source=source, position=0, found="null key")
    return as_bytes(key)


def unknown_type(what: str, record_type: int, known: object, source: str | None) -> UnsupportedError:
    return UnsupportedError(f"{what}: a known record type ({known})", source=source, position=0,
                            found=str(record_type))


def read_prefixed(message: Message, data: bytes, version: int, what: str,
                  source: str | None) -> dict[str, Any]:
    fields, _ = read_message(message, data, version, start=2, what=what, source=source)
    return fields


def write_prefixed(message: Message, fields: dict[str, Any], version: int) -> bytes:
    return _I16.pack(version) + write_message(message, fields, version)


# record type (the key's version) -> (name, key message, value message name): schemas.RecordType
RecordTypes = Mapping[int, tuple[str, Message, str]]


def key_read_version(key_spec: Message, record_type: int) -> int:
    """The version a key is read at: its record type in 4.0's specs (validVersions = the type), 0 in
    4.1+'s (``apiKey`` = the type, validVersions 0); the bytes are the same
    (K: coordinator-common/.../runtime/CoordinatorRecordSerde.java)."""
    return record_type if record_type in key_spec.valid_versions else 0


def decode_typed_record(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    records: RecordTypes,
    *,
    key_what: str,
    value_what: str,
    known: str,
    source: str | None,
    name_value_errors: bool = True,
    features: ClusterFeatures | None = None,
) -> dict[str, Any]:
    """A coordinator record whose key's version prefix is its record type (``__consumer_offsets``,
    ``__transaction_state``, ``__share_group_state``): {"type", "key_version", "key", "version",
    "value"}, value None for a tombstone. ``name_value_errors`` names the record type in the value's
    decoding errors. Positions in errors are within the key or value. Where Kafka changed the value's layout
under its version, ``"layout"`` names the releases of the layout read and ``"layout_by"`` what chose it:
the cluster's ``features`` when given and decisive, else the one exact read (``layouts.read_chosen``)."""
    key_bytes = require_key(key, key_what, source)
    record_type = read_version_prefix(key_bytes, key_what, source)
    entry = records.get(record_type)
    if entry is None:
        raise unknown_type(key_what, record_type, known, source)
    name, key_spec, value_name = entry
    out: dict[str, Any] = {
        "type": name,
        "key_version": record_type,
        "key": read_prefixed(key_spec, key_bytes, key_read_version(key_spec, record_type), key_what, source),
        "version": None,
        "value": None,
    }
    if value is None:
        return out
    value_bytes = as_bytes(value)
    version = read_version_prefix(value_bytes, value_what, source)
    what = f"{value_what} ({name})" if name_value_errors else value_what
    out["version"] = version
    out["value"], layout, how = read_chosen(
        value_name, value_bytes, version, start=2, what=what, source=source, features=features
    )
    if len(candidates(value_name, version)) > 1:
        out["layout"] = layout.label  # Kafka changed this layout under the same version
        out["layout_by"] = how
    return out


def encode_typed_record(
    record: Mapping[str, Any], records: RecordTypes, record_type: int | None, what: str
) -> tuple[bytes, bytes | None]:
    """(key, value) bytes of a record in :func:`decode_typed_record`'s form, of ``record_type``; value
    None for a tombstone."""
    entry = records.get(record_type)  # type: ignore[arg-type]
    if entry is None:
        raise UnsupportedError(what, found=str(record_type))
    _name, key_spec, value_name = entry
    key = _I16.pack(record_type) + write_message(  # type: ignore[arg-type]
        key_spec, record.get("key") or {}, key_read_version(key_spec, record_type))  # type: ignore[arg-type]
    if record.get("value") is None:
        return key, None
    version = int(record["version"])
    value_spec = for_writing(value_name, version, record.get("layout")).message
    return key, write_prefixed(value_spec, record["value"], version)

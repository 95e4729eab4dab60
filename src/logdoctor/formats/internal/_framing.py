"""The int16 version prefix Kafka puts before coordinator record keys and values.

K: clients/.../common/protocol/MessageUtil.java (toVersionPrefixedBytes) and
coordinator-common/.../runtime/CoordinatorRecordSerde.java (deserialize).
"""

from __future__ import annotations

import struct
from typing import Any

from logdoctor.errors import CorruptRecordError, TruncatedError, UnsupportedError
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

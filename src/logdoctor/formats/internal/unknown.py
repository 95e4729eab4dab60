"""Records newer than our tables: "unknown type N, version V" with their raw bytes, never an error.

Kafka keeps adding record types (new metadata records, coordinator records) and versions. A dump or
a scan must go on past them: :func:`decode_lenient` calls a decoder and, when it raises
UnsupportedError (an unknown record type or version, or a metadata frame version), returns what the
framing says instead: the record type and version (the metadata-style uvarint frame of
``__cluster_metadata``/``__remote_log_metadata`` values, or the int16 key/value version prefixes of
coordinator records) and the raw key and value as base64.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from logdoctor.errors import UnsupportedError

__all__ = ["decode_lenient", "unknown_record"]

_FRAMED = ("cluster-metadata", "remote-log-metadata")


def _uvarints(data: bytes, n: int) -> list[int] | None:
    out = []
    pos = 0
    for _ in range(n):
        result = shift = 0
        while True:
            if pos >= len(data) or shift > 28:
                return None
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        out.append(result)
    return out


def _b64(data: bytes | bytearray | memoryview | None) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def unknown_record(
    framing: str, key: bytes | bytearray | memoryview | None, value: bytes | bytearray | memoryview | None
) -> dict[str, Any]:
    """The "unknown type N, version V" form of a record. ``framing``: a decoder name
    (``cluster-metadata`` and ``remote-log-metadata`` read the value's uvarint frame; the others the
    int16 version prefixes of key and value)."""
    record_type = version = None
    if framing in _FRAMED:
        nums = _uvarints(bytes(value or b""), 3)
        if nums is not None:
            record_type, version = nums[1], nums[2]
    else:
        if key is not None and len(key) >= 2:
            record_type = struct.unpack_from(">h", bytes(key[:2]))[0]
        if value is not None and len(value) >= 2:
            version = struct.unpack_from(">h", bytes(value[:2]))[0]
    return {
        "type": f"unknown type {record_type}, version {version}",
        "unknown": True,
        "record_type": record_type,
        "version": version,
        "raw_key": _b64(key),
        "raw_value": _b64(value),
        **known_of(framing, record_type),
    }


def known_of(framing: str, record_type: int | None) -> dict[str, Any]:
    """What the tables know of a topic's records: ``known_types`` ("0-17, 19-23"), and for a known
    record type ``known_versions`` of its value (``"0-4"``) and the Kafka releases (``known_in``) whose
    JSON definitions they follow (generated layouts, ``kafka_layouts``)."""
    from logdoctor.formats.internal import schemas
    from logdoctor.formats.internal.layouts import LAYOUTS

    names: dict[int, str]
    if framing == "cluster-metadata":
        names = {**{k: m.name for k, m in schemas.METADATA_RECORDS.items()}, **schemas.METADATA_RECORD_NAMES}
    elif framing == "remote-log-metadata":
        names = schemas.REMOTE_LOG_METADATA_RECORD_NAMES
    else:
        table = {"consumer-offsets": schemas.CONSUMER_OFFSETS_RECORDS,
                 "transactions": schemas.TRANSACTION_LOG_RECORDS,
                 "share-group-state": schemas.SHARE_GROUP_STATE_RECORDS}.get(framing)
        if table is None:
            return {}
        names = {t: rec.value for t, rec in table.items()}
    out: dict[str, Any] = {"known_types": schemas.known_types(names)}
    name = names.get(record_type) if record_type is not None else None
    layouts = LAYOUTS.get(name or "", ())
    if layouts:
        versions = sorted({v for lay in layouts for v in range(lay.message.valid_versions.low,
                                                               lay.message.valid_versions.high + 1)})
        out["known_versions"] = schemas.known_types(dict.fromkeys(versions))
        releases: list[str] = []
        for lay in layouts:
            releases.extend(r for r in lay.releases if r not in releases)
        out["known_in"] = ", ".join(releases)
    return out


def decode_lenient(
    decoder: Callable[..., dict[str, Any]],
    framing: str,
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
) -> dict[str, Any]:
    """``decoder(key, value)``, or :func:`unknown_record` when the type or version is not known.
    Bad bytes of a known type still raise (TruncatedError / CorruptRecordError)."""
    try:
        return decoder(key, value, source=source)
    except UnsupportedError as e:
        out = unknown_record(framing, key, value)
        out["reason"] = str(e)
        return out

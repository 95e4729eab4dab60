"""``partition.metadata``: the topic id of a partition dir (Kafka 2.8+, KIP-516).

K: storage/.../checkpoint/PartitionMetadata.java (encode: ``"version: " + version + "\\ntopic_id: "
+ topicId``, no final newline) and PartitionMetadataReadBuffer.java (each of the first two lines
split on ``:\\s+`` must give two parts; version >= 0 accepted for downgrades; the topic id is a
Kafka Uuid in URL-safe base64 without padding and must not be the zero UUID). The broker reads only
those two lines; anything after them is kept in ``trailing`` so writing back is byte-identical.

An empty file (seen after crashes) cannot be read by the broker (readLine returns null and the
read fails): :func:`parse_partition_metadata` raises TruncatedError for it.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.errors import FormatError, TruncatedError, UnsupportedError
from logdoctor.formats.checkpoint import parse_java_int, split_lines

if TYPE_CHECKING:  # imported where a UUID object is asked for: uuid imports platform (issue 35)
    import uuid

PARTITION_METADATA_VERSION = 0
_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")
_UUID_RE = re.compile(r"[A-Za-z0-9_-]{22}")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_bytes_from_kafka(text: str) -> bytes | None:
    """The 16 bytes of Kafka's Uuid.fromString (22 URL-safe base64 chars); None when it is not one."""
    if not _UUID_RE.fullmatch(text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 16 else None


def uuid_from_kafka(text: str) -> uuid.UUID | None:
    """Kafka's Uuid.fromString (22 URL-safe base64 chars, 16 bytes); None when it is not one."""
    raw = uuid_bytes_from_kafka(text)
    if raw is None:
        return None
    import uuid

    return uuid.UUID(bytes=raw)


def uuid_to_kafka(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


@dataclass(slots=True)
class PartitionMetadata:
    """``version`` and ``topic_id`` (Kafka's base64 text); ``trailing`` is whatever follows line 2."""

    version: int
    topic_id: str
    trailing: bytes = b""

    @property
    def topic_uuid(self) -> uuid.UUID:
        value = uuid_from_kafka(self.topic_id)
        if value is None:
            raise ValueError(f"not a Kafka Uuid: {self.topic_id!r}")
        return value


def parse_partition_metadata(data: bytes | memoryview, *, source: str | None = None) -> PartitionMetadata:
    """Parse ``partition.metadata``; errors name the line (position = the line's byte offset)."""
    raw = bytes(data)
    lines = split_lines(raw, source=source)
    if not lines:
        raise TruncatedError("'version: 0' on line 1", source=source, position=0, found="an empty file")
    first = lines[0]
    parts = _SEPARATOR.split(first.text)
    if len(parts) != 2 or parts[0] != "version":
        raise FormatError("'version: <n>' on line 1", source=source, position=0, found=repr(first.text))
    version = parse_java_int(parts[1])
    if version is None:
        raise FormatError("a version number on line 1", source=source, position=0, found=repr(parts[1]))
    if version < PARTITION_METADATA_VERSION:
        raise UnsupportedError(
            f"version >= {PARTITION_METADATA_VERSION}", source=source, position=0, found=str(version)
        )
    if len(lines) < 2:
        raise TruncatedError(
            "'topic_id: <uuid>' on line 2", source=source, position=len(raw), found="end of file"
        )
    second = lines[1]
    parts = _SEPARATOR.split(second.text)
    if len(parts) != 2 or parts[0] != "topic_id":
        raise FormatError(
            "'topic_id: <uuid>' on line 2", source=source, position=second.position, found=repr(second.text)
        )
    topic_id = parts[1]
    value = uuid_bytes_from_kafka(topic_id)
    if value is None:
        raise FormatError(
            "a base64 topic id (22 chars, 16 bytes) on line 2",
            source=source,
            position=second.position,
            found=repr(topic_id),
        )
    if not any(value):
        raise FormatError(
            "a non-zero topic id on line 2", source=source, position=second.position, found=topic_id
        )
    end = second.position + len(second.text.encode("utf-8"))
    return PartitionMetadata(version, topic_id, raw[end:])


def write_partition_metadata(meta: PartitionMetadata) -> bytes:
    """Kafka's bytes: ``version: 0\\ntopic_id: <id>`` (no final newline) + ``trailing``."""
    return f"version: {meta.version}\ntopic_id: {meta.topic_id}".encode() + meta.trailing


__all__ = [
    "PARTITION_METADATA_VERSION",
    "ZERO_UUID",
    "PartitionMetadata",
    "parse_partition_metadata",
    "uuid_bytes_from_kafka",
    "uuid_from_kafka",
    "uuid_to_kafka",
    "write_partition_metadata",
]

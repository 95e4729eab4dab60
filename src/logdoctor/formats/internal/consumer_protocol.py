"""The "consumer" embedded protocol: subscription and assignment bytes of classic group members.

Both are an int16 version followed by the struct; a version above the highest known is read as
the highest known one, ignoring what follows (K: clients/.../consumer/internals/ConsumerProtocol.java).
Decoding here is best effort: the caller keeps the raw bytes when the bytes are not an exact,
re-encodable consumer protocol message.
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import CorruptRecordError, FormatError, TruncatedError
from logdoctor.formats.internal._framing import _I16
from logdoctor.formats.internal.protocol import (
    Message,
    bytes_from_text,
    bytes_to_text,
    read_message,
    write_message,
)
from logdoctor.formats.internal.schemas import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION

TRAILING = "trailing_bytes"


def _decode(message: Message, raw: bytes) -> dict[str, Any]:
    if len(raw) < 2:
        raise TruncatedError(f"{message.name}: int16 version", position=0, found=f"{len(raw)} byte(s)")
    version = _I16.unpack_from(raw, 0)[0]
    if version < 0:
        raise CorruptRecordError(f"{message.name}: a version >= 0", position=0, found=str(version))
    read_version = min(version, message.valid_versions.high)
    fields, end = read_message(message, raw, read_version, start=2, allow_trailing=True)
    out: dict[str, Any] = {"version": version, **fields}
    if end != len(raw):
        out[TRAILING] = bytes_to_text(raw[end:])
    return out


def _encode(message: Message, data: dict[str, Any]) -> bytes:
    version = int(data["version"])
    body = write_message(message, data, min(version, message.valid_versions.high))
    return _I16.pack(version) + body + bytes_from_text(data.get(TRAILING) or b"")


def decode_subscription(raw: bytes) -> dict[str, Any]:
    """ConsumerProtocolSubscription bytes -> {"version", "topics", "user_data", ...}; FormatError if not."""
    return _decode(CONSUMER_PROTOCOL_SUBSCRIPTION, raw)


def decode_assignment(raw: bytes) -> dict[str, Any]:
    """ConsumerProtocolAssignment bytes -> {"version", "assigned_partitions", "user_data"}."""
    return _decode(CONSUMER_PROTOCOL_ASSIGNMENT, raw)


def encode_subscription(data: dict[str, Any]) -> bytes:
    return _encode(CONSUMER_PROTOCOL_SUBSCRIPTION, data)


def encode_assignment(data: dict[str, Any]) -> bytes:
    return _encode(CONSUMER_PROTOCOL_ASSIGNMENT, data)


def try_decode(kind: str, text: str) -> dict[str, Any] | str:
    """Base64 of embedded bytes -> the decoded dict when it re-encodes to the same bytes, else the text."""
    raw = bytes_from_text(text)
    if not raw:
        return text
    try:
        decoded = decode_subscription(raw) if kind == "subscription" else decode_assignment(raw)
        again = encode_subscription(decoded) if kind == "subscription" else encode_assignment(decoded)
    except (FormatError, ValueError):
        return text
    return decoded if again == raw else text


def to_bytes(kind: str, value: dict[str, Any] | str | bytes) -> bytes:
    """The embedded bytes of a member field, whether it is still base64/bytes or a decoded dict."""
    if isinstance(value, dict):
        return encode_subscription(value) if kind == "subscription" else encode_assignment(value)
    return bytes_from_text(value)

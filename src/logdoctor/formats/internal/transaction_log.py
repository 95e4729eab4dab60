"""Records of ``__transaction_state``: key = int16 version (0) + TransactionLogKey, value = int16
version + TransactionLogValue, null value = tombstone (K: core/.../transaction/TransactionLog.scala).

Decoded form: {"type": "TransactionLog", "key_version", "key": {"transactional_id"}, "version",
"value": {...fields..., "transaction_status_name"}} (value None for a tombstone).
"""

from __future__ import annotations

from typing import Any

from logdoctor.errors import UnsupportedError
from logdoctor.formats.internal._framing import (
    as_bytes,
    read_prefixed,
    read_version_prefix,
    require_key,
    unknown_type,
    write_prefixed,
)
from logdoctor.formats.internal.schemas import TRANSACTION_LOG_RECORDS, TRANSACTION_STATES

KEY = "transaction log key"
VALUE = "transaction log value"
STATUS_NAME = "transaction_status_name"


def decode_transaction_log(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
) -> dict[str, Any]:
    key_bytes = require_key(key, KEY, source)
    key_version = read_version_prefix(key_bytes, KEY, source)
    entry = TRANSACTION_LOG_RECORDS.get(key_version)
    if entry is None:
        raise unknown_type(KEY, key_version, "0", source)
    name, key_spec, value_spec = entry
    out: dict[str, Any] = {
        "type": name,
        "key_version": key_version,
        "key": read_prefixed(key_spec, key_bytes, key_version, KEY, source),
        "version": None,
        "value": None,
    }
    if value is None:
        return out
    value_bytes = as_bytes(value)
    version = read_version_prefix(value_bytes, VALUE, source)
    fields = read_prefixed(value_spec, value_bytes, version, VALUE, source)
    fields[STATUS_NAME] = TRANSACTION_STATES.get(fields["transaction_status"], "Unknown")
    out["version"] = version
    out["value"] = fields
    return out


def encode_transaction_log(record: dict[str, Any]) -> tuple[bytes, bytes | None]:
    key_version = int(record.get("key_version", 0))
    entry = TRANSACTION_LOG_RECORDS.get(key_version)
    if entry is None:
        raise UnsupportedError("a known transaction log key version", found=str(key_version))
    _, key_spec, value_spec = entry
    key = write_prefixed(key_spec, record.get("key") or {}, key_version)
    if record.get("value") is None:
        return key, None
    return key, write_prefixed(value_spec, record["value"], int(record["version"]))

"""Records of ``__transaction_state``: key = int16 version (0) + TransactionLogKey, value = int16
version + TransactionLogValue, null value = tombstone (K: core/.../transaction/TransactionLog.scala).

Decoded form: {"type": "TransactionLog", "key_version", "key": {"transactional_id"}, "version",
"value": {...fields..., "transaction_status_name"}} (value None for a tombstone).
"""

from __future__ import annotations

from typing import Any

from logdoctor.formats.internal._framing import decode_typed_record, encode_typed_record
from logdoctor.formats.internal.schemas import TRANSACTION_LOG_RECORDS, TRANSACTION_STATES, known_text

KEY = "transaction log key"
VALUE = "transaction log value"
STATUS_NAME = "transaction_status_name"


def decode_transaction_log(
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    source: str | None = None,
) -> dict[str, Any]:
    out = decode_typed_record(
        key,
        value,
        TRANSACTION_LOG_RECORDS,
        key_what=KEY,
        value_what=VALUE,
        known=known_text(TRANSACTION_LOG_RECORDS),
        source=source,
        name_value_errors=False,
    )
    if out["value"] is not None:
        fields = out["value"]
        fields[STATUS_NAME] = TRANSACTION_STATES.get(fields["transaction_status"], "Unknown")
    return out


def encode_transaction_log(record: dict[str, Any]) -> tuple[bytes, bytes | None]:
    key_version = int(record.get("key_version", 0))
    return encode_typed_record(
        record, TRANSACTION_LOG_RECORDS, key_version, "a known transaction log key version"
    )

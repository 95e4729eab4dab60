"""Writing record batches (magic 2) and, via the legacy module, message sets (magic 0/1).

build_record_batch lays bytes out as Kafka's MemoryRecordsBuilder + DefaultRecord.writeTo +
DefaultRecordBatch.writeHeader do (K:clients/src/main/java/org/apache/kafka/common/record/):
- baseTimestamp = the delete horizon when one is given, else the first record's timestamp;
- maxTimestamp = the largest record timestamp (-1 if none), or the log-append time with
  LogAppendTime; records keep their own deltas against baseTimestamp in both cases;
- record attributes are 0; offsetDelta = record offset - base offset;
- the CRC-32C covers attributes..end and is written last.
For an uncompressed batch the bytes equal what the Java client writes for the same inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

from logdoctor.formats.batch_v2 import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    HEADER,
    MAGIC_VALUE_V2,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from logdoctor.formats.crc import crc32c
from logdoctor.formats.record_types import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    Compression,
    RecordSpec,
    TimestampType,
)
from logdoctor.formats.varint import encode_varint, encode_varlong

__all__ = ["build_message_set", "build_record_batch", "encode_record"]

_NULL = encode_varint(-1)


def encode_record(offset_delta: int, timestamp_delta: int, key, value, headers) -> bytes:
    """One DefaultRecord: varint length, then attributes (0), deltas, key, value, headers."""
    body = bytearray(b"\x00")
    body += encode_varlong(timestamp_delta)
    body += encode_varint(offset_delta)
    body += _sized(key)
    body += _sized(value)
    body += encode_varint(len(headers))
    for header in headers:
        body += _sized(header.key.encode("utf-8"))
        body += _sized(header.value)
    return encode_varint(len(body)) + bytes(body)


def _sized(data: bytes | None) -> bytes:
    """A varint length and the bytes; length -1 for null."""
    return _NULL if data is None else encode_varint(len(data)) + data


def build_record_batch(
    records: Sequence[RecordSpec],
    *,
    base_offset: int,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
    log_append_time: int | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """The bytes of one v2 record batch (offset field to end).

    Record i gets offset delta ``records[i].offset_delta`` when set, else i (so compacted batches
    with gaps can be built). ``log_append_time`` is the max timestamp of a LogAppendTime batch
    (default: the largest record timestamp). ``last_offset_delta`` defaults to the last record's
    offset delta (give it for an empty batch, which has only a header, as compaction leaves).
    """
    if timestamp_type is TimestampType.NO_TIMESTAMP:
        raise ValueError("a v2 batch needs CREATE_TIME or LOG_APPEND_TIME")
    if delete_horizon_ms is not None and delete_horizon_ms < 0:
        raise ValueError(f"invalid delete horizon {delete_horizon_ms}")
    base_timestamp: int | None = delete_horizon_ms
    max_timestamp = NO_TIMESTAMP
    parts: list[bytes] = []
    delta = -1
    for i, spec in enumerate(records):
        ts = spec.timestamp
        if ts < 0 and ts != NO_TIMESTAMP:
            raise ValueError(f"invalid negative timestamp {ts}")
        if base_timestamp is None:
            base_timestamp = ts
        new_delta = i if spec.offset_delta is None else spec.offset_delta
        if new_delta <= delta:
            raise ValueError(f"offset deltas must increase ({new_delta} after {delta})")
        delta = new_delta
        if ts > max_timestamp:
            max_timestamp = ts
        parts.append(encode_record(delta, ts - base_timestamp, spec.key, spec.value, spec.headers))
    if base_timestamp is None:
        base_timestamp = NO_TIMESTAMP
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        max_timestamp = max_timestamp if log_append_time is None else log_append_time
    if last_offset_delta is None:
        last_offset_delta = max(delta, 0)
    elif last_offset_delta < delta:
        raise ValueError(f"last offset delta {last_offset_delta} < the last record's {delta}")
    payload = b"".join(parts)
    if compression is not Compression.NONE and records:
        from logdoctor.formats import codecs

        payload = codecs.compress(compression, payload, magic=MAGIC_VALUE_V2)

    attributes = int(compression) & COMPRESSION_CODEC_MASK
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK

    size = RECORD_BATCH_OVERHEAD + len(payload)
    out = bytearray(size)
    HEADER.pack_into(
        out,
        0,
        base_offset,
        size - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_VALUE_V2,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    out[RECORD_BATCH_OVERHEAD:] = payload
    crc = crc32c(memoryview(out)[21:])
    out[17:21] = crc.to_bytes(4, "big")
    return bytes(out)


def build_message_set(records, *, magic: int, base_offset: int, **kwargs) -> bytes:
    """Magic 0/1 message sets: see logdoctor.formats.legacy.build_message_set."""
    from logdoctor.formats import legacy

    return legacy.build_message_set(records, magic=magic, base_offset=base_offset, **kwargs)

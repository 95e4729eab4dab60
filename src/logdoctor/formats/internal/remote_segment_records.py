"""A direct reader of the two segment records of ``__remote_log_metadata`` in their plain form.

RemoteLogSegmentMetadataRecord v0 and RemoteLogSegmentMetadataUpdateRecord v0 (K: storage/src/main/
resources/message/RemoteLogSegmentMetadata*Record.json) are nearly every event of the topic: two to four
per remote segment. The schema-driven reader (``protocol.read_message``) spends most of a replay's time
interpreting their layouts field by field; this module reads the same bytes with fixed offsets, in the
plain case only: every unsigned varint one byte (names and custom metadata under 127 bytes, fewer
than 127 leader epochs) and no tagged field in any struct. Anything else (a tagged field such as
TxnIndexEmpty, a longer varint, damaged or truncated bytes) returns None, and the caller reads the
value with the schema-driven reader, which gives the fields or the exact error. When it returns
fields they are the schema-driven reader's, key for key and in the same order
(tests/formats/test_remote_segment_records.py checks both readers on Kafka's own bytes and on
generated ones).
"""

from __future__ import annotations

import struct
from typing import Any

from logdoctor.formats.internal.protocol import bytes_to_text, uuid_to_text

_UUID_I32 = struct.Struct(">16si")  # TopicIdPartitionEntry: id (uuid), partition (int32)
_SEGMENT_FIXED = struct.Struct(">qqiqq")  # start_offset, end_offset, broker_id, max_timestamp_ms, event_ts
_EPOCH = struct.Struct(">iq")  # SegmentLeaderEpochEntry: leader_epoch, offset
_SIZE = struct.Struct(">i")  # segment_size_in_bytes
_UPDATE_FIXED = struct.Struct(">iq")  # broker_id, event_timestamp_ms
_STATE = struct.Struct(">b")  # remote_log_segment_state (int8)


def _segment_id(data: bytes, pos: int) -> tuple[dict[str, Any], int] | None:
    """RemoteLogSegmentIdEntry {TopicIdPartitionEntry {name, id, partition}, id} at ``pos``."""
    n = data[pos] - 1  # compact string: length + 1, one byte
    if n < 0 or n >= 0x7F:
        return None
    pos += 1
    name = data[pos : pos + n].decode("utf-8")
    pos += n
    topic_id, partition = _UUID_I32.unpack_from(data, pos)
    pos += 20
    if data[pos] != 0:  # TopicIdPartitionEntry's tagged fields
        return None
    seg_id = data[pos + 1 : pos + 17]
    if len(seg_id) != 16 or data[pos + 17] != 0:  # RemoteLogSegmentIdEntry's tagged fields
        return None
    tip = {"name": name, "id": uuid_to_text(topic_id), "partition": partition}
    return {"topic_id_partition": tip, "id": uuid_to_text(seg_id)}, pos + 18


def _custom_metadata(data: bytes, pos: int) -> tuple[str | None, int] | None:
    n = data[pos] - 1  # compact nullable bytes, one byte: 0 is null
    if n >= 0x7F:
        return None
    if n < 0:
        return None, pos + 1
    raw = data[pos + 1 : pos + 1 + n]
    if len(raw) != n:
        return None
    return bytes_to_text(raw), pos + 1 + n


def _segment(data: bytes, pos: int) -> dict[str, Any] | None:
    got = _segment_id(data, pos)
    if got is None:
        return None
    sid, pos = got
    start, end, broker, max_ts, event_ts = _SEGMENT_FIXED.unpack_from(data, pos)
    pos += _SEGMENT_FIXED.size
    count = data[pos] - 1  # compact array, one byte (not nullable)
    if count < 0 or count >= 0x7F:
        return None
    pos += 1
    epochs = []
    for _ in range(count):
        epoch, offset = _EPOCH.unpack_from(data, pos)
        pos += 12
        if data[pos] != 0:  # SegmentLeaderEpochEntry's tagged fields
            return None
        pos += 1
        epochs.append({"leader_epoch": epoch, "offset": offset})
    (size,) = _SIZE.unpack_from(data, pos)
    got_custom = _custom_metadata(data, pos + 4)
    if got_custom is None:
        return None
    custom, pos = got_custom
    (state,) = _STATE.unpack_from(data, pos)
    if data[pos + 1] != 0 or pos + 2 != len(data):  # no tagged field (TxnIndexEmpty), nothing after
        return None
    return {
        "remote_log_segment_id": sid,
        "start_offset": start,
        "end_offset": end,
        "broker_id": broker,
        "max_timestamp_ms": max_ts,
        "event_timestamp_ms": event_ts,
        "segment_leader_epochs": epochs,
        "segment_size_in_bytes": size,
        "custom_metadata": custom,
        "remote_log_segment_state": state,
        "txn_index_empty": False,  # the tagged field's default
    }


def _update(data: bytes, pos: int) -> dict[str, Any] | None:
    got = _segment_id(data, pos)
    if got is None:
        return None
    sid, pos = got
    broker, event_ts = _UPDATE_FIXED.unpack_from(data, pos)
    got_custom = _custom_metadata(data, pos + _UPDATE_FIXED.size)
    if got_custom is None:
        return None
    custom, pos = got_custom
    (state,) = _STATE.unpack_from(data, pos)
    if data[pos + 1] != 0 or pos + 2 != len(data):
        return None
    return {
        "remote_log_segment_id": sid,
        "broker_id": broker,
        "event_timestamp_ms": event_ts,
        "custom_metadata": custom,
        "remote_log_segment_state": state,
    }


_READERS = {0: _segment, 1: _update}  # api key -> reader of version 0


def read_plain_segment_record(data: bytes, api_key: int, version: int, pos: int) -> dict[str, Any] | None:
    """The fields of a plain RemoteLogSegmentMetadata(Update)Record v0 starting at ``data[pos]`` (after the
    frame version, api key and version), or None when the schema-driven reader must read it."""
    reader = _READERS.get(api_key)
    if reader is None or version != 0:
        return None
    try:
        return reader(data, pos)
    except (IndexError, struct.error, UnicodeDecodeError):
        return None

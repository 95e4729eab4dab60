"""The direct reader of the plain segment records (formats.internal.remote_segment_records) against the
schema-driven reader: the same fields, key for key and in order, whenever it answers; it answers for
every plain record (Kafka's own bytes in ../shared/tiered and generated ones) and leaves every other
value (tagged fields, long varints, truncated or damaged bytes) to the schema-driven reader."""

from __future__ import annotations

from typing import Any

import pytest

import realworld
from logdoctor.errors import FormatError
from logdoctor.formats.internal import decode_remote_log_metadata, encode_remote_log_metadata
from logdoctor.formats.internal.layouts import read_exact
from logdoctor.formats.internal.remote_log_metadata import REMOTE_LOG_METADATA_RECORDS
from logdoctor.formats.internal.remote_segment_records import read_plain_segment_record
from logdoctor.formats.records import iter_batches

PREFIX = 3  # frame version, api key, version: one byte each


def _schema_read(value: bytes) -> dict[str, Any]:
    api_key, version = value[1], value[2]
    fields, _ = read_exact(REMOTE_LOG_METADATA_RECORDS[api_key].name, value, version, start=PREFIX, what="t")
    return fields


def _same(value: bytes) -> bool:
    """The direct reader's answer equals the schema-driven one (or it declines); True when it answered."""
    fast = read_plain_segment_record(value, value[1], value[2], PREFIX)
    try:
        slow = _schema_read(value)
    except FormatError:
        assert fast is None, value
        return False
    if fast is None:
        return False
    assert list(fast.items()) == list(slow.items()), value
    assert list(fast["remote_log_segment_id"].items()) == list(slow["remote_log_segment_id"].items())
    assert decode_remote_log_metadata(None, value)["data"] == slow
    return True


def _sid(name: str = "orders", partition: int = 3) -> dict[str, Any]:
    return {
        "topic_id_partition": {"name": name, "id": "0MDckNVuOwOdQYFlTnMIZQ", "partition": partition},
        "id": "xjEtpbBN-e9T-UIVFTK2SA",
    }


def _segment(**kw: Any) -> bytes:
    data = {
        "remote_log_segment_id": kw.pop("sid", _sid()),
        "start_offset": 100,
        "end_offset": 199,
        "broker_id": 2,
        "max_timestamp_ms": 1_790_000_000_999,
        "event_timestamp_ms": 1_790_000_001_000,
        "segment_leader_epochs": [{"leader_epoch": 4, "offset": 100}],
        "segment_size_in_bytes": 1_048_576,
        "custom_metadata": None,
        "remote_log_segment_state": 0,
    }
    data.update(kw)
    return encode_remote_log_metadata({"api_key": 0, "version": 0, "data": data})


def _update(**kw: Any) -> bytes:
    data = {
        "remote_log_segment_id": kw.pop("sid", _sid()),
        "broker_id": 2,
        "event_timestamp_ms": 1_790_000_002_000,
        "custom_metadata": None,
        "remote_log_segment_state": 1,
    }
    data.update(kw)
    return encode_remote_log_metadata({"api_key": 1, "version": 0, "data": data})


def test_kafkas_own_records_read_directly() -> None:
    tiered = realworld.require_tiered()
    answered = declined = 0
    for path in sorted(tiered.glob("**/kafka-logs/__remote_log_metadata-*/*.log")):
        for batch in iter_batches(path.read_bytes(), source=str(path)):
            for rec in batch.records():
                value = bytes(rec.value)
                if value[1] not in (0, 1):  # the partition delete record: schema-driven only
                    continue
                if _same(value):
                    answered += 1
                else:
                    declined += 1
    assert answered > 0
    assert declined == 0  # Kafka's segment events are all plain


PLAIN = [
    _segment(),
    _segment(segment_leader_epochs=[]),
    _segment(segment_leader_epochs=[{"leader_epoch": e, "offset": e * 10} for e in range(126)]),
    _segment(custom_metadata="", remote_log_segment_state=3, broker_id=-1, start_offset=-5),
    _segment(custom_metadata="AAEC/w==", sid=_sid("t\u00e9st-\u00fc", 2**31 - 1)),
    _segment(custom_metadata="A" * 168, sid=_sid("x" * 126, 0)),  # 126 bytes of each: one-byte lengths
    _update(),
    _update(custom_metadata="AAEC/w==", remote_log_segment_state=-1, broker_id=2**31 - 1),
    _update(sid=_sid("", 0)),
]

DECLINED = [
    _segment(txn_index_empty=True),  # a tagged field
    _segment(segment_leader_epochs=[{"leader_epoch": e, "offset": e} for e in range(127)]),  # 2-byte count
    _segment(sid=_sid("y" * 127)),  # a two-byte length
    _segment(custom_metadata="A" * 172),  # 129 bytes
    _update(custom_metadata="A" * 172),
    _segment(_unknown_tagged_fields=[{"tag": 7, "data": "AQ=="}]),
]


@pytest.mark.parametrize("value", PLAIN, ids=range(len(PLAIN)))
def test_plain_records_read_directly(value: bytes) -> None:
    assert _same(value)


@pytest.mark.parametrize("value", DECLINED, ids=range(len(DECLINED)))
def test_other_records_left_to_the_schema_reader(value: bytes) -> None:
    assert read_plain_segment_record(value, value[1], value[2], PREFIX) is None
    assert not _same(value)
    assert decode_remote_log_metadata(None, value)["data"] == _schema_read(value)


@pytest.mark.parametrize("value", PLAIN, ids=range(len(PLAIN)))
def test_cut_or_damaged_bytes_never_read_differently(value: bytes) -> None:
    for n in range(PREFIX, len(value)):
        _same(value[:n])  # every prefix: both fail, or both read the same fields
    _same(value + b"\x00")  # a byte left over
    for i in range(PREFIX, len(value)):
        for b in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            _same(value[:i] + bytes([b]) + value[i + 1 :])


def test_other_versions_and_types_not_read() -> None:
    value = _segment()
    assert read_plain_segment_record(value, 0, 1, PREFIX) is None
    assert read_plain_segment_record(value, 2, 0, PREFIX) is None

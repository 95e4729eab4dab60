"""RecordBatchV2: header fields, attribute bits, the C decoder against the pure-Python one,
columns against records, and typed errors for bad record sections."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch

from logdoctor.errors import (
    CorruptRecordError,
    CrcMismatchError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from logdoctor.formats import batch_v2
from logdoctor.formats.batch_v2 import RecordBatchV2
from logdoctor.formats.crc import crc32c
from logdoctor.formats.records import Compression, Header, RecordSpec, TimestampType, iter_batches
from logdoctor.formats.varint import encode_varint, encode_varlong
from logdoctor.formats.writer import build_record_batch

blobs = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(
    st.builds(Header, st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=10))), max_size=3
).map(tuple)
specs = st.lists(
    st.builds(RecordSpec, value=blobs, key=blobs, timestamp=st.integers(0, 2**42), headers=headers),
    max_size=10,
)
options = st.fixed_dictionaries(
    {
        "base_offset": st.integers(0, 2**62),
        "compression": st.sampled_from(list(Compression)),
        "timestamp_type": st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]),
        "producer_id": st.integers(-1, 2**62),
        "producer_epoch": st.integers(-1, 2**15 - 1),
        "base_sequence": st.integers(-1, 2**31 - 1),
        "partition_leader_epoch": st.integers(-1, 2**31 - 1),
        "is_transactional": st.booleans(),
        "is_control": st.booleans(),
        "delete_horizon_ms": st.one_of(st.none(), st.integers(0, 2**42)),
    }
)


def _fix(data: bytes) -> bytes:
    """Recompute the CRC after editing a batch."""
    out = bytearray(data)
    out[17:21] = crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def _rows(records) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp_type, r.sequence) for r in records]


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150, deadline=None)
@given(specs, options)
def test_round_trip_every_attribute(records, opts) -> None:
    data = build_record_batch(records, **opts)
    (batch,) = list(iter_batches(data, verify_crc=True, base_position=1000))
    assert batch.position == 1000 and batch.size == len(data) and batch.magic == 2
    assert batch.base_offset == opts["base_offset"]
    assert batch.record_count == len(records)
    assert batch.compression is opts["compression"]
    assert batch.timestamp_type is opts["timestamp_type"]
    assert batch.is_transactional is opts["is_transactional"]
    assert batch.is_control is opts["is_control"]
    assert batch.has_delete_horizon is (opts["delete_horizon_ms"] is not None)
    assert batch.delete_horizon_ms == opts["delete_horizon_ms"]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        opts["producer_id"],
        opts["producer_epoch"],
        opts["base_sequence"],
    )
    assert batch.partition_leader_epoch == opts["partition_leader_epoch"]
    assert bytes(batch.raw()) == data and batch.crc_valid()
    got = batch.record_list()
    assert _rows(got) == _rows(batch.record_list(pure_python=True))
    lat = opts["timestamp_type"] is TimestampType.LOG_APPEND_TIME
    for i, (spec, rec) in enumerate(zip(records, got, strict=True)):
        assert rec.offset == opts["base_offset"] + i
        assert rec.timestamp == (batch.max_timestamp if lat else spec.timestamp)
        assert (rec.key, rec.value, rec.headers) == (spec.key, spec.value, spec.headers)
        assert rec.timestamp_type is opts["timestamp_type"]
        seq = opts["base_sequence"]
        assert rec.sequence == (-1 if seq < 0 else batch_v2.increment_sequence(seq, i))
    if records and not lat:
        assert batch.max_timestamp == max(s.timestamp for s in records)
    # kafka-python reads the same records (it knows nothing of the delete horizon bit, and its
    # control records need a 4-byte key: control batches are compared in test_control.py)
    # (an empty batch with a codec bit has no payload: Java never decompresses it, kafka-python tries)
    if opts["delete_horizon_ms"] is None and not opts["is_control"] and records:
        kp = KpBatch(data)
        assert kp.validate_crc()
        assert [(r.offset, r.timestamp, r.key, r.value) for r in kp] == [
            (r.offset, r.timestamp, r.key, r.value) for r in got
        ]
    cols = batch.decode_columns()
    assert cols.offsets.tolist() == [r.offset for r in got]
    assert cols.timestamps.tolist() == [r.timestamp for r in got]
    assert cols.keys.to_pylist() == [r.key for r in got]
    assert cols.values.to_pylist() == [r.value for r in got]
    assert cols.headers.to_pylist() == [[{"key": h.key, "value": h.value} for h in r.headers] for r in got]
    assert cols.timestamp_types.tolist() == [int(opts["timestamp_type"])] * len(got)
    pure = batch.decode_columns(pure_python=True)
    assert (
        pure.keys.equals(cols.keys) and pure.values.equals(cols.values) and pure.headers.equals(cols.headers)
    )
    assert np.array_equal(pure.offsets, cols.offsets) and np.array_equal(pure.timestamps, cols.timestamps)


def test_speedups_built() -> None:
    # the C extension is built in the dev environment; LOGDOCTOR_PURE_PYTHON=1 turns it off
    assert batch_v2.HAVE_SPEEDUPS is not bool(os.environ.get("LOGDOCTOR_PURE_PYTHON"))


def test_sequence_wraps_like_java() -> None:
    assert batch_v2.increment_sequence(2**31 - 1, 1) == 0
    assert batch_v2.increment_sequence(2**31 - 2, 5) == 3
    assert batch_v2.increment_sequence(10, 5) == 15


def _batch(records_section: bytes, count: int, **header) -> bytes:
    """A hand-made uncompressed batch around raw record bytes."""
    fields = dict(
        base_offset=0, plep=0, attributes=0, lod=max(count - 1, 0), bts=0, mts=0, pid=-1, pe=-1, bs=-1
    )
    fields.update(header)
    head = batch_v2.HEADER.pack(
        fields["base_offset"],
        61 - 12 + len(records_section),
        fields["plep"],
        2,
        0,
        fields["attributes"],
        fields["lod"],
        fields["bts"],
        fields["mts"],
        fields["pid"],
        fields["pe"],
        fields["bs"],
        count,
    )
    return _fix(head + records_section)


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


GOOD_BODY = (
    b"\x00" + encode_varlong(0) + encode_varint(0) + encode_varint(-1) + encode_varint(1) + b"v" + b"\x00"
)

BAD_SECTIONS = {
    "count too high": (_record(GOOD_BODY), 2),
    "trailing bytes": (_record(GOOD_BODY) + b"\x00", 1),
    "negative length": (encode_varint(-3) + GOOD_BODY, 1),
    "length past end": (encode_varint(50) + GOOD_BODY, 1),
    "overlong varint": (_record(b"\x00" + b"\xff" * 9 + b"\x81" + GOOD_BODY[2:]), 1),
    "value past record": (_record(b"\x00\x00\x00\x01" + encode_varint(9) + b"v\x00"), 1),
    "negative header count": (_record(GOOD_BODY[:-1] + encode_varint(-1)), 1),
    "negative header key": (_record(GOOD_BODY[:-1] + encode_varint(1) + encode_varint(-2) + b"\x01"), 1),
    "unread bytes": (_record(GOOD_BODY + b"\x00\x00"), 1),
    "negative count": (_record(GOOD_BODY), -1),
    "length varint cut": (b"\x80", 1),
}


@pytest.mark.parametrize("name", sorted(BAD_SECTIONS))
@pytest.mark.parametrize("pure", [False, True])
def test_bad_record_sections_raise_corrupt(name: str, pure: bool) -> None:
    section, count = BAD_SECTIONS[name]
    data = b"\x00" * 7 + _batch(section, count)
    (batch,) = iter_batches(data, start=7, verify_crc=True, source="seg.log")
    with pytest.raises(CorruptRecordError) as err:
        batch.record_list(pure_python=pure)
    assert err.value.source == "seg.log"
    assert 7 + 61 <= err.value.position <= len(data) or name == "negative count"
    other = pytest.raises(CorruptRecordError)
    with other as err2:
        batch.record_list(pure_python=not pure)
    assert (err.value.position, str(err.value)) == (err2.value.position, str(err2.value))
    with pytest.raises(CorruptRecordError):
        batch.decode_columns(pure_python=pure)
    with pytest.raises(CorruptRecordError):
        batch.ensure_valid(deep=True)
    batch.ensure_valid()  # the CRC is fine: Kafka's ensureValid passes


def test_crc_mismatch() -> None:
    data = bytearray(build_record_batch([RecordSpec(value=b"hello")], base_offset=3))
    data[-1] ^= 0x01
    (batch,) = iter_batches(bytes(data), source="a.log")
    assert not batch.crc_valid()
    with pytest.raises(CrcMismatchError) as err:
        batch.ensure_valid()
    assert err.value.stored == batch.stored_crc and err.value.computed == batch.compute_crc()
    assert err.value.position == 0 and err.value.source == "a.log"
    # the partition leader epoch is outside the CRC
    data2 = bytearray(build_record_batch([RecordSpec(value=b"hello")], base_offset=3))
    data2[12:16] = struct.pack(">i", 77)
    (batch2,) = iter_batches(bytes(data2), verify_crc=True)
    assert batch2.partition_leader_epoch == 77


def test_unknown_codec_is_unsupported() -> None:
    data = _batch(_record(GOOD_BODY), 1, attributes=6)
    (batch,) = iter_batches(data, verify_crc=True)
    with pytest.raises(UnsupportedError):
        list(batch.records())


def test_corrupt_compressed_payload_is_typed() -> None:
    data = build_record_batch([RecordSpec(value=b"x" * 500)] * 3, base_offset=0, compression=Compression.GZIP)
    broken = bytearray(data)
    broken[70:80] = b"\x00" * 10
    (batch,) = iter_batches(_fix(bytes(broken)), verify_crc=True)
    with pytest.raises(FormatError):
        list(batch.records())


def test_deep_checks_header_consistency() -> None:
    data = _batch(_record(GOOD_BODY) * 2, 2, lod=0)  # 2 records but last offset delta 0
    (batch,) = iter_batches(data)
    batch.ensure_valid()
    with pytest.raises(CorruptRecordError):
        batch.ensure_valid(deep=True)


def test_parse_classmethod() -> None:
    data = build_record_batch([RecordSpec(value=b"a")], base_offset=9)
    assert RecordBatchV2.parse(data).base_offset == 9
    with pytest.raises(TruncatedError):
        RecordBatchV2.parse(data[:-1])
    with pytest.raises(CorruptRecordError):
        RecordBatchV2.parse(data[:16] + b"\x01" + data[17:])


def test_invalid_utf8_header_key_is_replaced_like_java() -> None:
    body = b"\x00\x00\x00" + encode_varint(-1) + encode_varint(-1) + encode_varint(1)
    body += encode_varint(2) + b"\xff\xfe" + encode_varint(-1)
    (batch,) = iter_batches(_batch(_record(body), 1))
    (rec,) = batch.records()
    assert rec.headers == (Header("\ufffd\ufffd", None),)
    assert batch.decode_columns().headers.to_pylist() == [[{"key": "\ufffd\ufffd", "value": None}]]

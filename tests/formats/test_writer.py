"""build_record_batch: byte equality with kafka-python's DefaultRecordBatchBuilder (which mirrors
Java's MemoryRecordsBuilder layout), and cross-decoding in both directions for every codec."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder

import tiers
from logdoctor.formats.records import Compression, Header, RecordSpec, TimestampType, iter_batches
from logdoctor.formats.writer import build_record_batch

CODECS = list(Compression)
blobs = st.one_of(st.none(), st.binary(max_size=64))
headers = st.lists(
    st.builds(Header, st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
).map(tuple)
specs = st.lists(
    st.builds(RecordSpec, value=blobs, key=blobs, timestamp=st.integers(0, 2**45), headers=headers),
    min_size=1,
    max_size=12,
)


def _kp_build(records: list[RecordSpec], codec: int, pid: int = -1, epoch: int = -1, seq: int = -1) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=2**30,
    )
    for i, r in enumerate(records):
        builder.append(i, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers])
    return bytes(builder.build())


def _kp_records(data: bytes) -> list[tuple]:
    batch = KpBatch(data)
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


@given(specs, st.integers(-1, 2**40), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1))
def test_uncompressed_bytes_equal_kafka_python(records, pid, epoch, seq) -> None:
    # kafka-python (like a Java producer) writes base offset 0 and leader epoch 0 on produce.
    ours = build_record_batch(
        records,
        base_offset=0,
        partition_leader_epoch=0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    assert ours == _kp_build(records, 0, pid, epoch, seq)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=tiers.examples(60), deadline=None)
@given(specs, st.sampled_from(CODECS), st.integers(0, 2**40))
def test_kafka_python_decodes_ours(records, codec, base_offset) -> None:
    data = build_record_batch(records, base_offset=base_offset, compression=codec)
    got = _kp_records(data)
    assert got == [
        (base_offset + i, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers])
        for i, r in enumerate(records)
    ]


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=tiers.examples(60), deadline=None)
@given(specs, st.sampled_from(CODECS))
def test_we_decode_kafka_python(records, codec) -> None:
    data = _kp_build(records, int(codec))
    (batch,) = list(iter_batches(data, verify_crc=True))
    assert batch.compression in (codec, Compression.NONE)  # kafka-python skips codecs that do not shrink
    ours = [
        (r.offset, r.timestamp, r.key, r.value, [(h.key, h.value) for h in r.headers])
        for r in batch.records()
    ]
    assert ours == _kp_records(data)


def test_java_layout_of_a_known_batch() -> None:
    # One record, key b"k", value b"v", timestamp 1000, base offset 5, producer 7/1/3, epoch 2:
    # the 61-byte header (DefaultRecordBatch.writeHeader) then the record (DefaultRecord.writeTo).
    data = build_record_batch(
        [RecordSpec(value=b"v", key=b"k", timestamp=1000)],
        base_offset=5,
        producer_id=7,
        producer_epoch=1,
        base_sequence=3,
        partition_leader_epoch=2,
    )
    record = bytes([0x10, 0, 0, 0, 2]) + b"k" + bytes([2]) + b"v" + bytes([0])  # length 8 (zigzag 16)
    assert data[61:] == record
    assert data[:8] == (5).to_bytes(8, "big")
    assert int.from_bytes(data[8:12], "big") == len(data) - 12
    assert int.from_bytes(data[12:16], "big") == 2 and data[16] == 2
    assert data[21:23] == b"\x00\x00"  # attributes
    assert data[23:27] == b"\x00\x00\x00\x00"  # last offset delta
    assert int.from_bytes(data[27:35], "big") == 1000 == int.from_bytes(data[35:43], "big")
    assert int.from_bytes(data[43:51], "big") == 7
    assert (
        data[51:53] == b"\x00\x01"
        and data[53:57] == b"\x00\x00\x00\x03"
        and data[57:61] == b"\x00\x00\x00\x01"
    )


def test_attributes_and_log_append_time() -> None:
    records = [RecordSpec(value=b"a", timestamp=10), RecordSpec(value=b"b", timestamp=30)]
    data = build_record_batch(
        records,
        base_offset=0,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        is_transactional=True,
        producer_id=1,
        producer_epoch=0,
        base_sequence=0,
        log_append_time=999,
    )
    assert int.from_bytes(data[21:23], "big") == 0x18
    (batch,) = iter_batches(data, verify_crc=True)
    assert batch.max_timestamp == 999
    assert [r.timestamp for r in batch.records()] == [999, 999]
    assert _kp_records(data)[0][1] == 999  # kafka-python agrees: LogAppendTime -> max timestamp


def test_delete_horizon_and_gaps() -> None:
    records = [RecordSpec(value=None, key=b"x", timestamp=500, offset_delta=3)]
    data = build_record_batch(records, base_offset=100, delete_horizon_ms=2000, last_offset_delta=9)
    (batch,) = iter_batches(data, verify_crc=True)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 2000 and batch.base_timestamp == 2000
    (rec,) = batch.records()
    assert (rec.offset, rec.timestamp, rec.key, rec.value) == (103, 500, b"x", None)
    assert batch.first_timestamp == 500 and batch.last_offset == 109


def test_empty_batch_header_only() -> None:
    data = build_record_batch([], base_offset=42, last_offset_delta=4, producer_id=3, producer_epoch=0)
    assert len(data) == 61
    (batch,) = iter_batches(data, verify_crc=True)
    assert batch.record_count == 0 and batch.last_offset == 46 and list(batch.records()) == []
    assert batch.base_timestamp == -1 == batch.max_timestamp


def test_writer_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        build_record_batch([RecordSpec(value=b"", timestamp=-5)], base_offset=0)
    with pytest.raises(ValueError):
        build_record_batch(
            [RecordSpec(value=b"", offset_delta=2), RecordSpec(value=b"", offset_delta=2)], base_offset=0
        )
    with pytest.raises(ValueError):
        build_record_batch([RecordSpec(value=b"")], base_offset=0, timestamp_type=TimestampType.NO_TIMESTAMP)

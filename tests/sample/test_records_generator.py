"""The record data generator, read back by kafka-python (an independent decoder) and by our walker."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords

from logdoctor.formats.record_types import Compression, TimestampType
from logdoctor.formats.records import iter_batches
from logdoctor.sample.records import RecordDataSpec, generate_segment, iter_segment, write_segment

C = Compression


def kp_batches(data: bytes) -> list:
    mr = MemoryRecords(data)
    out = []
    while (b := mr.next_batch()) is not None:
        out.append(b)
    return out


@pytest.mark.parametrize(
    "spec",
    [
        RecordDataSpec(record_count=2000),
        RecordDataSpec(record_count=2000, compression=C.LZ4, value_kind="text"),
        RecordDataSpec(record_count=1500, compression=C.ZSTD, headers_per_record=3, null_key_ratio=0.3),
        RecordDataSpec(record_count=1500, compression=C.GZIP, timestamp_type=TimestampType.LOG_APPEND_TIME),
        RecordDataSpec(record_count=1500, compression=C.SNAPPY, value_kind="random", tombstone_ratio=0.1,
                       value_size_distribution="lognormal", value_size=300),
        RecordDataSpec(record_count=1200, transactional=True, producers=3, abort_ratio=0.4, seed=5),
        RecordDataSpec(record_count=800, magic=1, compression=C.LZ4, seed=2),
        RecordDataSpec(record_count=300, magic=1, timestamp_type=TimestampType.LOG_APPEND_TIME),
        RecordDataSpec(record_count=300, magic=0, compression=C.SNAPPY),
    ],
    ids=lambda s: f"m{s.magic}-{s.compression.label}-{s.timestamp_type.label}-tx{int(s.transactional)}",
)
def test_kafka_python_reads_what_we_generate(spec: RecordDataSpec) -> None:
    data, info = generate_segment(spec)
    theirs = kp_batches(data)
    assert len(theirs) == info.batch_count == len(info.batches)
    pos = 0
    data_records = 0
    for kb, meta in zip(theirs, info.batches, strict=True):
        assert meta.position == pos
        pos += meta.size
        assert kb.validate_crc() if isinstance(kb, DefaultRecordBatch) else True
        recs = list(kb)
        if isinstance(kb, DefaultRecordBatch):
            assert kb.base_offset == meta.base_offset
            assert kb.last_offset_delta == meta.last_offset - meta.base_offset
            assert kb.max_timestamp == meta.max_timestamp
            assert kb.producer_id == meta.producer_id and kb.base_sequence == meta.base_sequence
            assert kb.is_transactional == meta.is_transactional
            assert kb.is_control_batch == meta.is_control
        else:
            assert isinstance(kb, LegacyRecordBatch)
            assert all(r.validate_crc() for r in recs)
        if not meta.is_control:
            assert [r.offset for r in recs] == list(range(meta.base_offset, meta.last_offset + 1))
            data_records += len(recs)
            assert all(len(r.headers) == spec.headers_per_record for r in recs)
    assert pos == len(data) == info.size
    assert data_records == info.record_count == spec.record_count
    # and our own walker, CRCs verified, sees the same entries
    ours = list(iter_batches(data, verify_crc=True))
    assert [(b.position, b.size, b.base_offset, b.last_offset) for b in ours] == [
        (m.position, m.size, m.base_offset, m.last_offset) for m in info.batches
    ]


def test_deterministic_by_seed() -> None:
    spec = RecordDataSpec(record_count=500, compression=C.LZ4, transactional=True, producers=2, seed=11)
    assert generate_segment(spec)[0] == generate_segment(spec)[0]
    other = RecordDataSpec(record_count=500, compression=C.LZ4, transactional=True, producers=2, seed=12)
    assert generate_segment(other)[0] != generate_segment(spec)[0]


def test_streaming_write_equals_in_memory(tmp_path: Path) -> None:
    spec = RecordDataSpec(record_count=None, target_bytes=300_000, seed=3)
    data, info = generate_segment(spec)
    path = tmp_path / "00000000000000000000.log"
    written = write_segment(path, spec, keep_batches=False)
    assert path.read_bytes() == data
    assert written.batches == [] and written.size == info.size == len(data) >= 300_000
    buf = io.BytesIO()
    write_segment(buf, spec)
    assert buf.getvalue() == data


def test_batches_fill_like_the_java_producer() -> None:
    _, info = generate_segment(RecordDataSpec(record_count=3000, value_size=1000))
    sizes = [b.size for b in info.batches]
    # 16384-byte batches of ~1 KB records: 15 records, never more than batch.size
    assert max(sizes) <= 16_384
    assert min(sizes[:-1]) > 16_384 - 1100
    big = RecordDataSpec(record_count=5, value_size=40_000)
    assert [b.record_count for b in generate_segment(big)[1].batches] == [1] * 5  # one record each


def test_linger_closes_batches_when_records_are_slow() -> None:
    _, fast = generate_segment(RecordDataSpec(record_count=600, value_size=100, mean_interval_ms=0.01))
    _, slow = generate_segment(RecordDataSpec(record_count=600, value_size=100, mean_interval_ms=2.0))
    assert fast.batch_count < slow.batch_count
    assert max(b.max_timestamp - b.first_timestamp for b in slow.batches) < 5 + 1


def test_compression_estimator_packs_more_records_per_batch() -> None:
    _, plain = generate_segment(RecordDataSpec(record_count=4000))
    _, lz4 = generate_segment(RecordDataSpec(record_count=4000, compression=C.LZ4))
    assert lz4.batch_count < plain.batch_count


def test_keys_values_and_headers() -> None:
    spec = RecordDataSpec(record_count=2000, key_cardinality=50, null_key_ratio=0.25, headers_per_record=2,
                          value_size=200, value_size_distribution="uniform", value_size_spread=0.5)
    data, _ = generate_segment(spec)
    recs = [r for b in kp_batches(data) for r in b]
    keys = [r.key for r in recs]
    assert 0.15 < keys.count(None) / len(keys) < 0.35
    assert len({k for k in keys if k is not None}) <= 50
    sizes = [len(r.value) for r in recs]
    assert 100 <= min(sizes) < 130 and 270 < max(sizes) <= 300
    assert all([h[0] for h in r.headers] == ["trace-id", "content-type"] for r in recs)
    import json

    assert json.loads(recs[0].value)["id"] == 1  # "json" values parse as JSON


def test_timestamps_monotonic_create_time() -> None:
    data, _ = generate_segment(RecordDataSpec(record_count=1000, mean_interval_ms=0.5))
    ts = [r.timestamp for b in kp_batches(data) for r in b]
    assert ts == sorted(ts) and ts[-1] - ts[0] > 100


def test_log_append_time_batches() -> None:
    spec = RecordDataSpec(record_count=500, timestamp_type=TimestampType.LOG_APPEND_TIME, mean_interval_ms=1)
    data, info = generate_segment(spec)
    for kb, meta in zip(kp_batches(data), info.batches, strict=True):
        assert kb.timestamp_type == 1
        assert {r.timestamp for r in kb} == {meta.max_timestamp}  # consumers see the append time
        assert meta.max_timestamp >= meta.first_timestamp


def test_transactions_markers_and_aborted_list() -> None:
    spec = RecordDataSpec(record_count=3000, transactional=True, producers=3, abort_ratio=0.5, seed=9,
                          value_size=200)
    data, info = generate_segment(spec)
    open_txn: dict[int, int] = {}
    aborted = []
    sequences: dict[int, int] = {}
    for kb in kp_batches(data):
        pid = kb.producer_id
        assert pid >= 1000 and kb.is_transactional
        if kb.is_control_batch:
            (rec,) = list(kb)
            key_type = int.from_bytes(rec.key[2:4], "big")  # int16 version, int16 type
            first = open_txn.pop(pid)
            if key_type == 0:  # ABORT
                aborted.append((pid, first, kb.base_offset))
        else:
            open_txn.setdefault(pid, kb.base_offset)
            assert kb.base_sequence == sequences.get(pid, 0)
            sequences[pid] = kb.base_sequence + len(list(kb))
    assert open_txn == {}  # every transaction is decided
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in info.aborted_transactions] == aborted
    assert len(aborted) > 3
    assert len(sequences) == 3


def test_iter_segment_streams() -> None:
    it = iter_segment(RecordDataSpec(record_count=None, target_bytes=10**12))
    first = [next(it) for _ in range(3)]  # a "1 TB" spec yields batches lazily
    assert [m.position for _, m in first] == [0, first[0][1].size, first[0][1].size + first[1][1].size]


def test_invalid_specs() -> None:
    with pytest.raises(ValueError):
        RecordDataSpec(magic=1, transactional=True)
    with pytest.raises(ValueError):
        RecordDataSpec(magic=0, compression=C.ZSTD)
    with pytest.raises(ValueError):
        RecordDataSpec(record_count=None, target_bytes=None)

"""RecordBatchV2: header fields, attribute bits, the C decoder against the pure-Python one,
columns against records, and typed errors for bad record sections."""

from __future__ import annotations

import dataclasses
import os
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords

import tiers
import twins
from logdoctor.errors import (
    CorruptRecordError,
    CrcMismatchError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from logdoctor.formats import batch_v2, native
from logdoctor.formats.batch_v2 import RecordBatchV2
from logdoctor.formats.columns import decode_columns
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


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=tiers.examples(150), deadline=None)
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
    assert _rows(got) == _rows(twins.pure(batch.record_list))
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
    cols = decode_columns([batch])
    assert cols.offsets.tolist() == [r.offset for r in got]
    assert cols.timestamps.tolist() == [r.timestamp for r in got]
    assert cols.keys.to_pylist() == [r.key for r in got]
    assert cols.values.to_pylist() == [r.value for r in got]
    assert cols.headers.to_pylist() == [[{"key": h.key, "value": h.value} for h in r.headers] for r in got]
    assert cols.timestamp_types.tolist() == [int(opts["timestamp_type"])] * len(got)
    pure = twins.pure(decode_columns, [batch])
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
        twins.run(pure, batch.record_list)
    assert err.value.source == "seg.log"
    # every fault lies in the records section (after the 7 junk bytes and the 61-byte header), including
    # a negative count: reported where the records would start
    assert 7 + 61 <= err.value.position <= len(data)
    other = pytest.raises(CorruptRecordError)
    with other as err2:
        twins.run(not pure, batch.record_list)
    assert (err.value.position, str(err.value)) == (err2.value.position, str(err2.value))
    with pytest.raises(CorruptRecordError):
        twins.run(pure, decode_columns, [batch])
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
    assert decode_columns([batch]).headers.to_pylist() == [[{"key": "\ufffd\ufffd", "value": None}]]


# ---------------------------------------------------------------------------------------------
# Many batches at once: the C walker (walk_v2), the one-call columnar decoder
# (decode_batch_columns) and the lz4 frames decompressed inside C, against kafka-python and
# against the pure-Python twins.

batch_lists = st.lists(st.tuples(specs, options), min_size=1, max_size=5)


def _segment(batches) -> bytes:
    """Batches one after the other, with increasing base offsets, as a segment holds them."""
    out, base = [], 0
    for records, opts in batches:
        opts = dict(opts, base_offset=base)
        out.append(build_record_batch(records, **opts))
        base += max(len(records), 1)
    return b"".join(out)


def _kp_comparable(records, opts) -> bool:
    # kafka-python knows nothing of the delete horizon, its control records need a 4-byte key, and
    # it decompresses the (absent) payload of an empty compressed batch, which Java never does
    return (
        opts["delete_horizon_ms"] is None
        and not opts["is_control"]
        and (records or opts["compression"] is Compression.NONE)
    )


def _col_rows(cols) -> list[tuple]:
    return list(
        zip(
            cols.offsets.tolist(),
            cols.timestamps.tolist(),
            cols.timestamp_types.tolist(),
            cols.keys.to_pylist(),
            cols.values.to_pylist(),
            [[(h["key"], h["value"]) for h in hs] for hs in cols.headers.to_pylist()],
            strict=True,
        )
    )


def _rec_rows(records) -> list[tuple]:
    return [
        (r.offset, r.timestamp, int(r.timestamp_type), r.key, r.value, [(h.key, h.value) for h in r.headers])
        for r in records
    ]


def _buffers_equal(a: tuple, b: tuple) -> None:
    assert len(a) == len(b) == 20
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert type(x) is type(y), i
        assert x == y, i


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=tiers.examples(120), deadline=None)
@given(batch_lists)
def test_columns_of_many_batches_equal_records_twin_and_kafka_python(batches) -> None:
    data = _segment(batches)
    ours = list(iter_batches(data, verify_crc=True, base_position=77))
    assert len(ours) == len(batches)
    cols = decode_columns(ours)
    records = [r for b in ours for r in b.record_list()]
    assert _col_rows(cols) == _rec_rows(records)
    assert _rec_rows(records) == _rec_rows(r for b in ours for r in twins.pure(b.record_list))
    # one C call over the whole run, and its pure-Python twin, give the same buffers
    _buffers_equal(
        batch_v2.decode_v2_run(ours), twins.pure(batch_v2.decode_v2_run, ours)
    )
    assert cols.to_arrow().num_rows == len(records)
    # kafka-python decodes the same bytes to the same records
    if all(_kp_comparable(records, opts) for records, opts in batches):
        kp = [
            (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, [tuple(h) for h in r.headers])
            for b in MemoryRecords(data)
            for r in b
        ]
        assert _col_rows(cols) == kp
    # the C walker makes the same batch objects as the Python constructor
    for b in ours:
        twin = RecordBatchV2.parse(data, b.position - 77, base_position=77)
        assert [getattr(b, s) for s in RecordBatchV2.__slots__ if s != "_buf"] == [
            getattr(twin, s) for s in RecordBatchV2.__slots__ if s != "_buf"
        ]


KP_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
kp_records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=30)),
        st.one_of(st.none(), st.binary(max_size=3000)),
        st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))), max_size=2),
    ),
    min_size=1,
    max_size=12,
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=tiers.examples(80), deadline=None)
@given(st.lists(st.tuples(kp_records, st.sampled_from(sorted(KP_CODECS))), min_size=1, max_size=4))
def test_batches_written_by_kafka_python_decode_alike(batches) -> None:
    """kafka-python as the producer (its own lz4 frames carry a content size), we as the reader."""
    parts, expected, base = [], [], 0
    for records, codec in batches:
        builder = KpBuilder(
            magic=2,
            compression_type=KP_CODECS[codec],
            is_transactional=0,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            batch_size=1 << 20,
        )
        for i, (key, value, headers) in enumerate(records):
            builder.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=headers)
        raw = bytearray(builder.build())
        raw[0:8] = base.to_bytes(8, "big")  # the base offset is outside the CRC
        parts.append(bytes(raw))
        expected += [
            (base + i, 1_700_000_000_000 + i, 0, key, value, [(k, v) for k, v in headers])
            for i, (key, value, headers) in enumerate(records)
        ]
        base += len(records)
    data = b"".join(parts)
    ours = list(iter_batches(data, verify_crc=True))
    assert _rec_rows(r for b in ours for r in b.records()) == expected
    assert _col_rows(decode_columns(ours)) == expected
    assert _col_rows(twins.pure(decode_columns, ours)) == expected
    if native.HAVE_C_LZ4:  # kafka-python's lz4 frames are decompressed in C, not left to codecs.py
        for b in ours:
            if b.compression is Compression.LZ4:
                assert native.speedups.batch_records(b._buf, b._start) is not None


def _lz4_batch(records_section: bytes, count: int, **frame_options) -> bytes:
    import lz4.frame

    frame = lz4.frame.compress(records_section, block_linked=False, **frame_options)
    return _batch(frame, count, attributes=int(Compression.LZ4))


def _plain_section(n: int, size: int = 700) -> bytes:
    data = build_record_batch(
        [RecordSpec(value=bytes([i]) * size, key=b"k%d" % i) for i in range(n)], base_offset=0
    )
    return data[61:]


def test_lz4_frames_left_to_codecs_decode_alike(monkeypatch) -> None:
    """Frames with block checksums go through codecs.py (the C walker declines them), in any mix."""
    plain = _plain_section(6)
    parts = [
        _lz4_batch(plain, 6),
        _lz4_batch(plain, 6, block_checksum=True),
        _lz4_batch(plain, 6, content_checksum=True, store_size=True),
        _batch(plain, 6),
        _lz4_batch(plain, 6, block_checksum=True, block_size=lz4_frame_block_size()),
    ]
    data = b"".join(parts)
    ours = list(iter_batches(data, verify_crc=True))
    want = _rec_rows(next(iter(iter_batches(_batch(plain, 6)))).records())
    if native.HAVE_C_LZ4:
        assert native.speedups.batch_records(ours[0]._buf, ours[0]._start) is not None
        assert native.speedups.batch_records(ours[1]._buf, ours[1]._start) is None
    for b in ours:
        assert _rec_rows(b.records()) == want
    cols = decode_columns(ours)
    assert _col_rows(cols) == want * 5
    # the same without the C lz4 decoder: every lz4 frame through codecs.py
    monkeypatch.setattr(batch_v2, "DECODERS", dataclasses.replace(batch_v2.DECODERS, lz4_in_c=False))
    if batch_v2.HAVE_SPEEDUPS:
        native.speedups.configure_lz4(None)
    try:
        assert _col_rows(decode_columns(ours)) == want * 5
        assert _rec_rows(r for b in ours for r in b.records()) == want * 5
    finally:
        if batch_v2.HAVE_SPEEDUPS:
            native.speedups.configure_lz4(native._lz4_decompress_safe_address())


def lz4_frame_block_size() -> int:
    import lz4.frame

    return lz4.frame.BLOCKSIZE_MAX64KB


def _outcome(fn):
    try:
        return ("ok", fn())
    except FormatError as exc:
        return (type(exc).__name__, exc.position, str(exc))


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=tiers.examples(250), deadline=None)
@given(
    st.sampled_from([Compression.LZ4, Compression.NONE]),
    st.lists(
        # the first bytes hold the lz4 frame descriptor and the first block size: hit them often
        st.tuples(st.one_of(st.integers(0, 12), st.integers(0, 10_000)), st.integers(0, 255)),
        min_size=1,
        max_size=4,
    ),
)
def test_damaged_records_sections_fail_alike_in_c_and_python(codec, edits) -> None:
    """Damage inside a (CRC-fixed) records section: the C path (lz4 in C) and the pure-Python path
    (codecs.py + the Python decoder) give the same records or the same typed error."""
    good = build_record_batch(
        [RecordSpec(value=b"value %d " % i * 20, key=b"k%d" % i) for i in range(8)],
        base_offset=0,
        compression=codec,
    )
    bad = bytearray(good)
    for pos, value in edits:
        bad[61 + pos % (len(bad) - 61)] = value
    data = _fix(bytes(bad))
    (batch,) = iter_batches(data, source="d.log")
    c_records = _outcome(lambda: _rec_rows(batch.record_list()))
    assert c_records == _outcome(lambda: _rec_rows(twins.pure(batch.record_list)))
    c_cols = _outcome(lambda: _col_rows(decode_columns([batch])))
    assert c_cols == _outcome(lambda: _col_rows(twins.pure(decode_columns, [batch])))
    assert (c_records[0] == "ok") == (c_cols[0] == "ok")
    if c_records[0] == "ok":
        assert c_records[1] == c_cols[1]
    else:
        assert c_records[1:] == c_cols[1:]


def test_first_bad_batch_is_reported_first() -> None:
    """A run with bad records in batch 1 and a corrupt gzip payload in batch 2 reports batch 1."""
    ok = build_record_batch([RecordSpec(value=b"a")], base_offset=0)
    bad_records = _batch(_record(GOOD_BODY), 2)  # count too high
    gz = bytearray(
        build_record_batch([RecordSpec(value=b"x" * 500)] * 3, base_offset=5, compression=Compression.GZIP)
    )
    gz[70:80] = b"\x00" * 10
    data = ok + bad_records + _fix(bytes(gz))
    batches = list(iter_batches(data, source="s.log"))
    with pytest.raises(CorruptRecordError) as err:
        decode_columns(batches)
    with pytest.raises(CorruptRecordError) as one:
        batches[1].record_list()
    assert (err.value.position, str(err.value)) == (one.value.position, str(one.value))
    with pytest.raises(FormatError):
        decode_columns(batches[2:])


def test_columns_across_buffers_and_legacy_entries() -> None:
    from logdoctor.formats.writer import build_message_set

    v2a = build_record_batch([RecordSpec(value=b"a" * 10, key=None)], base_offset=0)
    v2b = build_record_batch(
        [RecordSpec(value=None, key=b"k", headers=(Header("h", b"1"),))],
        base_offset=1,
        compression=Compression.LZ4,
    )
    legacy = build_message_set([RecordSpec(value=b"old", key=b"o", timestamp=5)], magic=1, base_offset=2)
    first = list(iter_batches(v2a + v2b))
    second = list(iter_batches(legacy + v2a))
    batches = first + second
    cols = decode_columns(batches)
    records = [r for b in batches for r in b.records()]
    assert _col_rows(cols) == _rec_rows(records)
    assert cols.keys.type == pa.binary() and cols.values.type == pa.binary()
    assert cols.timestamp_types.tolist() == [0, 0, 0, 0]
    assert len(decode_columns([])) == 0


def test_columns_to_arrow_and_buffers() -> None:
    data = _segment([([RecordSpec(value=b"v" * 100, key=b"key")] * 5, {**_DEFAULT_OPTS})] * 3)
    cols = decode_columns(iter_batches(data))
    rb = cols.to_arrow()
    assert rb.schema.names == ["key", "value", "offset", "timestamp", "timestampType", "headers"]
    assert rb.num_rows == 15 and rb.column("offset").to_pylist() == list(range(15))
    # one data buffer per column, exactly the payload (no null bitmap when nothing is null)
    validity, _, payload = cols.values.buffers()
    assert validity is None and payload.size == 15 * 100
    assert cols.offsets.flags.writeable


_DEFAULT_OPTS = {
    "base_offset": 0,
    "compression": Compression.NONE,
    "timestamp_type": TimestampType.CREATE_TIME,
    "producer_id": -1,
    "producer_epoch": -1,
    "base_sequence": -1,
    "partition_leader_epoch": -1,
    "is_transactional": False,
    "is_control": False,
    "delete_horizon_ms": None,
}

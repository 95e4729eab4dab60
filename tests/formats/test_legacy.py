"""Message sets v0/v1: round trips, kafka-python as an oracle both ways, Kafka's deep-iteration rules."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

import realworld
import tiers
from logdoctor.errors import (
    CorruptRecordError,
    CrcMismatchError,
    FormatError,
    TruncatedError,
    UnsupportedError,
)
from logdoctor.formats.codecs import compress, xxh32
from logdoctor.formats.legacy import LegacyBatch, build_message_set, parse_legacy_entry
from logdoctor.formats.record_types import Compression, RecordSpec, TimestampType

C = Compression
LEGACY_CODECS = [C.NONE, C.GZIP, C.SNAPPY, C.LZ4]


def entries(buf: bytes, *, source: str | None = None) -> list[LegacyBatch]:
    mv = memoryview(buf)
    out, pos = [], 0
    while pos < len(buf):
        b = parse_legacy_entry(mv, pos, source=source)
        out.append(b)
        pos += b.size
    return out


def kp_records(entry: LegacyBatch) -> list:
    return list(LegacyRecordBatch(bytes(entry.raw()), entry.magic))


record_specs = st.lists(
    st.builds(
        RecordSpec,
        value=st.none() | st.binary(max_size=300),
        key=st.none() | st.binary(max_size=40),
        timestamp=st.integers(0, 2**41) | st.just(-1),
    ),
    min_size=1,
    max_size=30,
)


# --- round trips and kafka-python ---------------------------------------------------------


@settings(max_examples=tiers.examples(150), deadline=None)
@given(
    records=record_specs,
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(LEGACY_CODECS),
    ts_type=st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]),
    base_offset=st.integers(0, 2**40),
)
def test_round_trip_and_kafka_python_reads_ours(
    records: list[RecordSpec], magic: int, codec: Compression, ts_type: TimestampType, base_offset: int
) -> None:
    buf = build_message_set(records, magic=magic, base_offset=base_offset, compression=codec,
                            timestamp_type=ts_type, log_append_time=1_700_000_000_000)
    es = entries(buf, source="x.log")
    assert len(es) == (len(records) if codec == C.NONE else 1)
    ours = []
    for e in es:
        e.ensure_valid()
        assert e.magic == magic and e.compression == codec
        recs = list(e.records(verify_crc=True))
        assert e.record_count == len(recs)
        assert e.base_offset == recs[0].offset and e.last_offset == recs[-1].offset
        theirs = kp_records(e)
        assert LegacyRecordBatch(bytes(e.raw()), magic).validate_crc()
        assert [(r.offset, r.key, r.value) for r in recs] == [(t.offset, t.key, t.value) for t in theirs]
        assert [r.timestamp for r in recs] == [-1 if t.timestamp is None else t.timestamp for t in theirs]
        ours += recs
    assert [r.offset for r in ours] == list(range(base_offset, base_offset + len(records)))
    assert [(r.key, r.value) for r in ours] == [(s.key, s.value) for s in records]
    if magic == 0:
        assert all(r.timestamp == -1 and r.timestamp_type == TimestampType.NO_TIMESTAMP for r in ours)
    elif ts_type == TimestampType.LOG_APPEND_TIME:
        assert all(r.timestamp == 1_700_000_000_000 for r in ours)
        assert all(r.timestamp_type == TimestampType.LOG_APPEND_TIME for r in ours)
    else:
        assert [r.timestamp for r in ours] == [s.timestamp for s in records]
        assert all(r.timestamp_type == TimestampType.CREATE_TIME for r in ours)


@settings(max_examples=tiers.examples(100), deadline=None)
@given(records=record_specs, magic=st.sampled_from([0, 1]), base_offset=st.integers(0, 2**40))
def test_uncompressed_bytes_equal_kafka_python_builder(records: list[RecordSpec], magic: int,
                                                       base_offset: int) -> None:
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 30)
    for i, r in enumerate(records):
        ts = r.timestamp if r.timestamp >= 0 else None
        builder.append(base_offset + i, ts, r.key, r.value)
    theirs = bytes(builder.build())
    if magic == 1 and any(r.timestamp < 0 for r in records):
        return  # kafka-python stamps "now" for a missing timestamp: no byte equality then
    assert build_message_set(records, magic=magic, base_offset=base_offset) == theirs


@settings(max_examples=tiers.examples(100), deadline=None)
@given(records=record_specs, magic=st.sampled_from([0, 1]), codec=st.sampled_from(LEGACY_CODECS[1:]))
def test_we_read_kafka_python_compressed_wrappers(records: list[RecordSpec], magic: int,
                                                  codec: Compression) -> None:
    if codec == C.LZ4 and magic == 0:
        pytest.importorskip("xxhash", reason="kafka-python's old-kafka lz4 codec needs xxhash")
    builder = LegacyRecordBatchBuilder(magic, int(codec), 1 << 30)
    for i, r in enumerate(records):
        builder.append(i, max(r.timestamp, 0), r.key, r.value)
    buf = bytes(builder.build())
    (e,) = entries(buf)
    e.ensure_valid()
    recs = list(e.records(verify_crc=True))
    # kafka-python writes wrapper offset 0 (as librdkafka did): Kafka takes the inner
    # offsets as they are (AbstractLegacyRecordBatch.DeepRecordsIterator).
    assert e.last_offset == 0
    assert [r.offset for r in recs] == list(range(len(records)))
    assert [(r.key, r.value) for r in recs] == [(s.key, s.value) for s in records]
    if magic == 1:
        assert [r.timestamp for r in recs] == [max(s.timestamp, 0) for s in records]


# --- Kafka's deep iteration rules ---------------------------------------------------------


def _wrap(magic: int, offset: int, codec: Compression, inner: bytes, *, attrs_extra: int = 0,
          timestamp: int = 0) -> bytes:
    """A wrapper entry around an already built inner message set."""
    value = compress(codec, inner, magic=magic) if codec != C.ZSTD else inner
    if magic == 0:
        body = struct.pack(">bBi", 0, int(codec) | attrs_extra, -1)
    else:
        body = struct.pack(">bBqi", 1, int(codec) | attrs_extra, timestamp, -1)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def _specs(n: int) -> list[RecordSpec]:
    return [RecordSpec(value=b"value-%d" % i, key=b"k%d" % i, timestamp=1000 + i) for i in range(n)]


def test_v1_inner_offsets_are_relative_to_the_wrapper() -> None:
    inner = build_message_set(_specs(3), magic=1, base_offset=0)  # inner offsets 0, 1, 2
    (e,) = entries(_wrap(1, 52, C.GZIP, inner, timestamp=1002))
    assert [r.offset for r in e.records()] == [50, 51, 52]
    assert (e.base_offset, e.last_offset, e.record_count) == (50, 52, 3)


def test_v1_wrapper_offset_below_last_inner_is_corrupt() -> None:
    inner = build_message_set(_specs(3), magic=1, base_offset=10)
    (e,) = entries(_wrap(1, 5, C.GZIP, inner), source="s.log")
    with pytest.raises(CorruptRecordError) as info:
        list(e.records())
    assert info.value.source == "s.log" and info.value.position == 0


def test_v0_inner_offsets_are_absolute() -> None:
    inner = build_message_set(_specs(3), magic=0, base_offset=70)
    (e,) = entries(_wrap(0, 72, C.SNAPPY, inner))
    assert [r.offset for r in e.records()] == [70, 71, 72]


def test_log_append_time_wrapper_stamps_inner_messages() -> None:
    inner = build_message_set(_specs(3), magic=1, base_offset=0)
    (e,) = entries(_wrap(1, 2, C.LZ4, inner, attrs_extra=0x08, timestamp=99_000))
    recs = list(e.records())
    assert [r.timestamp for r in recs] == [99_000] * 3
    assert {r.timestamp_type for r in recs} == {TimestampType.LOG_APPEND_TIME}
    assert [t.timestamp for t in kp_records(e)] == [99_000] * 3  # kafka-python agrees


def test_nested_compression_is_corrupt() -> None:
    inner = build_message_set(_specs(2), magic=1, base_offset=0, compression=C.GZIP)
    (e,) = entries(_wrap(1, 1, C.GZIP, inner))
    with pytest.raises(CorruptRecordError, match="nested"):
        list(e.records())


def test_empty_and_null_wrapper_values_are_corrupt() -> None:
    (e,) = entries(_wrap(1, 0, C.GZIP, b""))
    with pytest.raises(CorruptRecordError, match="inner messages"):
        e.record_count  # noqa: B018
    body = struct.pack(">bBqii", 1, 1, 0, -1, -1)
    (e,) = entries(struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body)
    with pytest.raises(CorruptRecordError, match="null"):
        list(e.records())


def test_zstd_wrapper_is_unsupported_below_magic_2() -> None:
    with pytest.raises(UnsupportedError):
        build_message_set(_specs(2), magic=1, base_offset=0, compression=C.ZSTD)
    inner = build_message_set(_specs(2), magic=1, base_offset=0)
    (e,) = entries(_wrap(1, 1, C.ZSTD, compress(C.ZSTD, inner)))
    with pytest.raises(UnsupportedError):
        list(e.records())


def test_inner_crc_checked_on_request() -> None:
    inner = bytearray(build_message_set(_specs(2), magic=1, base_offset=0))
    inner[-1] ^= 0xFF  # last byte of the second message's value
    (e,) = entries(_wrap(1, 1, C.GZIP, bytes(inner)))
    e.ensure_valid()  # the wrapper itself is fine
    assert [r.value for r in e.records()][1] != b"value-1"
    with pytest.raises(CrcMismatchError, match="inner message"):
        list(e.records(verify_crc=True))


def test_partial_trailing_inner_entry_is_ignored_like_java() -> None:
    inner = build_message_set(_specs(3), magic=1, base_offset=0)
    (e,) = entries(_wrap(1, 2, C.GZIP, inner[:-5]))
    # inner 0 and 1 are complete: the last one (1) is taken as the wrapper offset 2
    assert [r.offset for r in e.records()] == [1, 2]
    assert e.inner_trailing_bytes == len(inner[:-5]) - 2 * (len(inner) // 3)


def test_header_fields_without_decompressing() -> None:
    buf = build_message_set(_specs(4), magic=1, base_offset=10, compression=C.GZIP)
    bad = bytearray(buf)
    bad[-10] ^= 0xFF  # inside the compressed value
    (e,) = entries(bytes(bad))
    assert (e.last_offset, e.max_timestamp, e.magic, e.compression) == (13, 1003, 1, C.GZIP)
    assert (e.producer_id, e.producer_epoch, e.base_sequence, e.partition_leader_epoch) == (-1, -1, -1, -1)
    assert not (e.is_transactional or e.is_control or e.has_delete_horizon)
    assert not e.crc_valid()


# --- the lz4 magic-0 header checksum ------------------------------------------------------


def test_lz4_magic0_wrapper_has_broken_checksum_and_both_readers_agree() -> None:
    buf = build_message_set(_specs(5), magic=0, base_offset=7, compression=C.LZ4)
    (e,) = entries(buf)
    frame = e.value
    assert frame is not None and frame[:4] == b"\x04\x22\x4d\x18"
    assert frame[6] == (xxh32(frame[:6]) >> 8) & 0xFF  # KIP-57: hashed the magic bytes too
    assert frame[6] != (xxh32(frame[4:6]) >> 8) & 0xFF
    assert [r.offset for r in e.records()] == [7, 8, 9, 10, 11]
    pytest.importorskip("xxhash", reason="kafka-python's old-kafka lz4 codec needs the xxhash package")
    assert [(t.offset, t.value) for t in kp_records(e)] == [(r.offset, r.value) for r in e.records()]


def test_lz4_magic1_wrapper_with_broken_checksum_is_corrupt() -> None:
    inner = build_message_set(_specs(2), magic=1, base_offset=0)
    value = compress(C.LZ4, inner, magic=0)  # broken HC inside a v1 wrapper
    body = struct.pack(">bBqi", 1, 3, 0, -1) + struct.pack(">i", len(value)) + value
    (e,) = entries(struct.pack(">qiI", 1, len(body) + 4, zlib.crc32(body)) + body)
    with pytest.raises(CorruptRecordError, match="lz4"):
        list(e.records())


# --- malformed entries --------------------------------------------------------------------


def test_crc_mismatch() -> None:
    buf = bytearray(build_message_set(_specs(1), magic=1, base_offset=0))
    buf[-1] ^= 1
    (e,) = entries(bytes(buf), source="a.log")
    with pytest.raises(CrcMismatchError) as info:
        e.ensure_valid()
    assert info.value.source == "a.log" and info.value.position == 0


def test_truncated_entry() -> None:
    buf = build_message_set(_specs(2), magic=1, base_offset=0)
    with pytest.raises(TruncatedError) as info:
        entries(buf[:-3], source="t.log")
    assert info.value.position == len(buf) // 2


def test_base_position_shifts_positions() -> None:
    buf = build_message_set(_specs(1), magic=0, base_offset=0)
    e = parse_legacy_entry(memoryview(buf), 0, base_position=4096)
    assert e.position == 4096


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (struct.pack(">bBi", 0, 0, 5) + b"\0\0\0\0", "key length"),  # key overruns the entry
        (struct.pack(">bBii", 0, 0, -1, 50), "value length"),  # value overruns
        (struct.pack(">bBii", 0, 0, -2, -1), "key length"),
        (struct.pack(">bBqi", 1, 0, 0, -1), "v1 message size"),  # 18 bytes < 22
        (struct.pack(">bBii", 3, 0, -1, -1), "magic"),
    ],
)
def test_malformed_messages_are_corrupt(body: bytes, match: str) -> None:
    buf = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordError, match=match):
        entries(buf)


def test_size_below_minimum_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        entries(struct.pack(">qi", 0, 13) + b"\0" * 13)


def test_unknown_codec_is_unsupported_unless_the_crc_is_wrong() -> None:
    body = struct.pack(">bBqii", 1, 6, 0, -1, 0)
    good = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(UnsupportedError):
        entries(good)
    bad = struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body) ^ 1) + body
    with pytest.raises(CrcMismatchError):
        entries(bad)


@settings(max_examples=tiers.examples(300), deadline=None)
@given(data=st.data(), codec=st.sampled_from(LEGACY_CODECS), magic=st.sampled_from([0, 1]))
def test_mutations_only_raise_typed_errors(data: st.DataObject, codec: Compression, magic: int) -> None:
    buf = bytearray(build_message_set(_specs(6), magic=magic, base_offset=3, compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(buf)))
    try:
        for e in entries(bytes(buf[:cut]), source="fz"):
            list(e.records(verify_crc=True))
            e.ensure_valid()
    except FormatError as err:
        assert err.source == "fz"


def test_writer_rejects_headers_and_bad_magic() -> None:
    from logdoctor.formats.record_types import Header

    with pytest.raises(ValueError):
        build_message_set([RecordSpec(b"v", headers=(Header("h", b"x"),))], magic=1, base_offset=0)
    with pytest.raises(ValueError):
        build_message_set(_specs(1), magic=2, base_offset=0)
    assert build_message_set([], magic=1, base_offset=0) == b""


# --- real data ----------------------------------------------------------------------------


def _legacy_entries_of(path: Path) -> tuple[bytes, list[int]]:
    """Positions of the magic 0/1 entries of a real .log file (framing read independently)."""
    data = path.read_bytes()
    positions, pos = [], 0
    while len(data) - pos >= 17:
        _, size = struct.unpack_from(">qi", data, pos)
        if size <= 0 or pos + 12 + size > len(data):
            break
        if data[pos + 16] < 2:
            positions.append(pos)
        pos += 12 + size
    return data, positions


@pytest.mark.realworld
def test_every_realworld_legacy_entry_matches_kafka_python(realworld_dir: Path) -> None:
    total = 0
    for path in realworld.files(suffix=".log"):
        data, positions = _legacy_entries_of(path)
        mv = memoryview(data)
        for pos in positions:
            e = parse_legacy_entry(mv, pos, source=str(path))
            e.ensure_valid()
            theirs = LegacyRecordBatch(bytes(e.raw()), e.magic)
            assert theirs.validate_crc()
            ours = list(e.records(verify_crc=True))
            assert [(r.offset, r.timestamp, r.key, r.value) for r in ours] == [
                (t.offset, -1 if t.timestamp is None else t.timestamp, t.key, t.value) for t in theirs
            ], f"{path}@{pos}"
            total += len(ours)
    # MANIFEST.json: zk-0.10.1-xpxwo100 alone holds 22280 v1 messages
    expected = sum(int(e.get("magic_versions", {}).get(m, 0)) for e in realworld.manifest()["entries"]
                   for m in ("0", "1"))
    assert total == expected > 0

"""Codecs: round trips, the Java client's framings, and kafka-python's codec as an independent oracle."""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kcodec

import tiers
from logdoctor.errors import CorruptRecordError, FormatError, UnsupportedError
from logdoctor.formats.codecs import XERIAL_HEADER, compress, decompress, lz4_frame, snappy_xerial, xxh32
from logdoctor.formats.record_types import Compression

C = Compression
TEXT = b"".join(b'{"user":"u-%d","event":"click","page":"/p/%d"}\n' % (i % 97, i % 13) for i in range(4000))
NOISE = bytes(range(256)) * 2 + os.urandom(500)
MIXED = TEXT + os.urandom(70_000) + TEXT[:5000]

CODEC_MAGIC = [(c, m) for c in C if c != C.NONE for m in (0, 1, 2) if not (c == C.ZSTD and m < 2)]


# --- xxhash32 -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "digest"),
    [(b"", 0x02CC5D05), (b"a", 0x550D7456), (b"abc", 0x32D153FF), (b"Nobody inspects the spammish repetition",
                                                                    0xE2293B2F)],
)
def test_xxh32_known_vectors(data: bytes, digest: int) -> None:
    assert xxh32(data) == digest


def test_xxh32_matches_the_lz4_library_header_checksum() -> None:
    # The lz4 C library writes the correct HC = (xxh32(descriptor) >> 8) & 0xFF: an oracle of ours.
    for kwargs in ({}, {"block_checksum": True}, {"content_checksum": True}, {"store_size": False},
                   {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "block_linked": False}):
        frame = lz4.frame.compress(b"x" * 1000, **kwargs)
        flg = frame[4]
        end = 6 + (8 if flg & 0x08 else 0)
        assert frame[end] == (xxh32(frame[4:end]) >> 8) & 0xFF


def test_xxh32_matches_xxhash_package() -> None:
    xxhash = pytest.importorskip("xxhash")
    for n in range(0, 70):
        data = os.urandom(n)
        assert xxh32(data) == xxhash.xxh32_intdigest(data)


# --- round trips --------------------------------------------------------------------------


@settings(max_examples=tiers.examples(60), deadline=None)
@given(data=st.binary(max_size=200_000) | st.builds(lambda n, k: TEXT[k : k + n], st.integers(0, 150_000),
                                                    st.integers(0, 1000)),
       codec_magic=st.sampled_from(CODEC_MAGIC))
def test_round_trip(data: bytes, codec_magic: tuple[Compression, int]) -> None:
    codec, magic = codec_magic
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


def test_none_is_identity() -> None:
    assert compress(C.NONE, b"abc") == b"abc"
    assert decompress(C.NONE, memoryview(b"abc")) == b"abc"


def test_compression_actually_compresses_text() -> None:
    for codec, magic in CODEC_MAGIC:
        assert len(compress(codec, TEXT, magic=magic)) < len(TEXT) // 3, codec


# --- kafka-python's codecs, both directions -----------------------------------------------


def test_gzip_against_kafka_python() -> None:
    assert kcodec.gzip_decode(compress(C.GZIP, MIXED)) == MIXED
    assert decompress(C.GZIP, kcodec.gzip_encode(MIXED)) == MIXED
    assert gzip.decompress(compress(C.GZIP, MIXED)) == MIXED


def test_gzip_header_is_java_gzipoutputstream() -> None:
    z = compress(C.GZIP, b"hello")
    assert z[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    assert struct.unpack("<II", z[-8:]) == (zlib.crc32(b"hello"), 5)


def test_gzip_concatenated_members_and_trailing_bytes() -> None:
    two = gzip.compress(b"first,") + gzip.compress(b"second")
    assert decompress(C.GZIP, two) == b"first,second"
    # GZIPInputStream ignores bytes after a member that do not start another member
    assert decompress(C.GZIP, gzip.compress(b"abc") + b"\x00\x00junk") == b"abc"


def test_snappy_xerial_against_kafka_python() -> None:
    ours = compress(C.SNAPPY, MIXED)
    assert kcodec.snappy_decode(ours) == MIXED
    assert decompress(C.SNAPPY, kcodec.snappy_encode(MIXED)) == MIXED


def test_snappy_raw_is_detected() -> None:
    raw = kcodec.snappy_encode(MIXED, xerial_compatible=False)
    assert raw[:8] != XERIAL_HEADER
    assert decompress(C.SNAPPY, raw) == MIXED
    assert decompress(C.SNAPPY, bytes(cramjam.snappy.compress_raw(b"tiny"))) == b"tiny"


def test_snappy_writes_xerial_framing_like_the_java_client() -> None:
    data = os.urandom(100_000)
    z = compress(C.SNAPPY, data)
    assert z[:16] == XERIAL_HEADER + struct.pack(">ii", 1, 1)
    # SnappyOutputStream: one chunk per 32 KiB of input
    pos, chunks = 16, []
    while pos < len(z):
        (n,) = struct.unpack_from(">i", z, pos)
        chunks.append(bytes(cramjam.snappy.decompress_raw(z[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert [len(c) for c in chunks] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(chunks) == data


def test_snappy_concatenated_xerial_streams() -> None:
    assert decompress(C.SNAPPY, snappy_xerial(b"abc") + snappy_xerial(b"def")) == b"abcdef"


def test_lz4_v1_against_kafka_python() -> None:
    assert kcodec.lz4_decode(compress(C.LZ4, MIXED, magic=1)) == MIXED
    assert decompress(C.LZ4, kcodec.lz4_encode(MIXED), magic=1) == MIXED
    assert lz4.frame.decompress(compress(C.LZ4, MIXED, magic=2)) == MIXED


def test_lz4_frame_header_is_kafkas() -> None:
    z = lz4_frame(b"abc", magic=1)
    # magic, FLG (version 1, independent blocks), BD (64 KiB), and the correct HC 0x82
    assert z[:7] == b"\x04\x22\x4d\x18\x60\x40\x82"
    assert z[-4:] == b"\x00\x00\x00\x00"
    broken = lz4_frame(b"abc", magic=0)
    assert broken[:6] == z[:6]
    assert broken[6] == (xxh32(b"\x04\x22\x4d\x18\x60\x40") >> 8) & 0xFF != 0x82


def test_lz4_magic0_broken_checksum() -> None:
    z = compress(C.LZ4, MIXED, magic=0)
    assert decompress(C.LZ4, z, magic=0) == MIXED
    # the same frame is rejected where the HC is checked (magic >= 1), as Lz4BlockInputStream does
    with pytest.raises(CorruptRecordError, match="descriptor checksum"):
        decompress(C.LZ4, z, magic=1)
    # and a correct HC is fine for magic 0 too (the byte is ignored)
    assert decompress(C.LZ4, compress(C.LZ4, MIXED, magic=1), magic=0) == MIXED


def test_lz4_magic0_against_kafka_python() -> None:
    pytest.importorskip("xxhash", reason="kafka-python's old-kafka lz4 codec needs the xxhash package")
    z = compress(C.LZ4, MIXED, magic=0)
    assert kcodec.lz4_decode_old_kafka(z) == MIXED
    assert decompress(C.LZ4, kcodec.lz4_encode_old_kafka(MIXED), magic=0) == MIXED


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_lz4_standard_frames_with_checksums_and_content_size(magic: int) -> None:
    for kwargs in ({"block_checksum": True}, {"content_checksum": True}, {"store_size": True},
                   {"block_size": lz4.frame.BLOCKSIZE_MAX4MB}):
        z = lz4.frame.compress(MIXED, block_linked=False, **kwargs)
        assert decompress(C.LZ4, z, magic=magic) == MIXED


def test_lz4_block_checksum_is_verified() -> None:
    z = bytearray(lz4.frame.compress(MIXED, block_linked=False, block_checksum=True, store_size=False))
    z[200] ^= 0x01
    with pytest.raises(CorruptRecordError):
        decompress(C.LZ4, bytes(z))


def test_lz4_content_checksum_is_skipped_like_java() -> None:
    z = bytearray(lz4.frame.compress(b"hello" * 100, block_linked=False, content_checksum=True))
    z[-1] ^= 0xFF  # the content checksum: Lz4BlockInputStream reads it without checking
    assert decompress(C.LZ4, bytes(z)) == b"hello" * 100


def test_lz4_dependent_blocks_rejected_like_java() -> None:
    z = lz4.frame.compress(MIXED, block_linked=True)
    with pytest.raises(CorruptRecordError, match="dependent"):
        decompress(C.LZ4, z)


def test_zstd_against_kafka_python_and_frame_without_content_size() -> None:
    z = compress(C.ZSTD, MIXED)
    assert zstandard.get_frame_parameters(z).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert kcodec.zstd_decode(z) == MIXED
    assert decompress(C.ZSTD, kcodec.zstd_encode(MIXED)) == MIXED
    assert decompress(C.ZSTD, z + kcodec.zstd_encode(b"tail")) == MIXED + b"tail"


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_rejected_below_magic_2(magic: int) -> None:
    with pytest.raises(UnsupportedError):
        compress(C.ZSTD, b"x", magic=magic)
    with pytest.raises(UnsupportedError):
        decompress(C.ZSTD, compress(C.ZSTD, b"x"), magic=magic, source="f.log", position=7)


# --- corrupt and truncated payloads -------------------------------------------------------


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGIC)
def test_truncated_payload_is_a_typed_error(codec: Compression, magic: int) -> None:
    z = compress(codec, MIXED, magic=magic)
    for cut in (0, 1, 5, 17, len(z) // 2, len(z) - 1):
        with pytest.raises(CorruptRecordError) as info:
            decompress(codec, z[:cut], magic=magic, source="seg.log", position=1234)
        assert info.value.source == "seg.log"
        assert info.value.position == 1234
        assert "seg.log@1234" in str(info.value)


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGIC)
def test_garbage_is_a_typed_error(codec: Compression, magic: int) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, b"\xff" * 64, magic=magic, source="x", position=0)


@settings(max_examples=tiers.examples(200), deadline=None)
@given(codec_magic=st.sampled_from(CODEC_MAGIC), data=st.data())
def test_mutated_payload_never_escapes_untyped(
    codec_magic: tuple[Compression, int], data: st.DataObject
) -> None:
    codec, magic = codec_magic
    z = bytearray(compress(codec, TEXT[:3000] + NOISE, magic=magic))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(z) - 1))
        z[i] = data.draw(st.integers(0, 255))
    try:
        decompress(codec, bytes(z), magic=magic, source="m", position=0)
    except FormatError as e:
        assert e.source == "m"


def test_snappy_absurd_claimed_length_is_corrupt_not_an_allocation() -> None:
    bomb = b"\xff\xff\xff\xff\x0f" + b"\x00" * 10  # claims 4 GiB from 15 bytes
    with pytest.raises(CorruptRecordError):
        decompress(C.SNAPPY, bomb)


def test_zstd_decodes_on_several_threads_at_once() -> None:
    """A scan decodes on threads (its early walks) beside its main thread: each thread's zstd context is its
    own. One shared ZstdDecompressor turned good frames into "zstd decompressor error" / "a truncated zstd
    frame" (tens of 800 here) and could crash the process."""
    import threading

    payload = bytes(range(256)) * 200 + b"k" * 300_000
    frame = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(payload)
    failures: list[str] = []

    def decode() -> None:
        for _ in range(200):
            try:
                if decompress(Compression.ZSTD, frame) != payload:
                    failures.append("other bytes")
            except Exception as e:  # every failure is counted, none is expected
                failures.append(str(e))

    threads = [threading.Thread(target=decode) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []

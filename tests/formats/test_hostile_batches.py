"""Hostile batches (issue 15): what a crafted or changing segment must not do to the decoders.

- a decompression bomb: a small compressed records section that decompresses past
  ``codecs.MAX_DECOMPRESSED`` is refused with UnsupportedError, by the C walker's lz4 (which stops
  at the limit and leaves the frame to codecs.py) and by codecs.py for every codec;
- a batch length near INT32_MAX: the records section's size is computed without int32 overflow
  (undefined behaviour that UBSan reports: ``make asan-check`` runs this file);
- a key or header key length past the end of the record: a typed error, never a read past the buffer;
- bytes that change between the decoders' two passes over a record's headers (a live broker's
  segment, mmapped): each length is checked again in the second pass.

Batches are built by kafka-python (an independent encoder), then given the hostile field values.
"""

from __future__ import annotations

import mmap
import struct
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path

import cramjam
import lz4.frame
import pytest
import zstandard
from kafka.record.default_records import DefaultRecordBatchBuilder

import twins
from logdoctor.errors import CorruptRecordError, FormatError, UnsupportedError
from logdoctor.formats import codecs, native
from logdoctor.formats.columns import decode_columns
from logdoctor.formats.crc import crc32c
from logdoctor.formats.record_types import Compression
from logdoctor.formats.records import iter_batches
from patience import patience

C = Compression
INT32_MAX = 2**31 - 1
LIMIT = 1 << 20  # the decompression limit the bomb tests set (the real one is 2 GiB)
needs_c = pytest.mark.skipif(not native.HAVE_SPEEDUPS, reason="the C extension is not built")


def _kp_batch(codec: int, records: list[tuple[bytes | None, bytes | None, list]]) -> bytes:
    """A v2 batch written by kafka-python: records are (key, value, headers)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=2**30)  # fmt: skip
    for i, (key, value, headers) in enumerate(records):
        b.append(i, 1_700_000_000_000 + i, key, value, headers)
    return bytes(b.build())


def _fix_crc(data: bytearray, start: int = 0) -> bytes:
    data[start + 17 : start + 21] = crc32c(bytes(data[start + 21 :])).to_bytes(4, "big")
    return bytes(data)


# --- decompression bombs ----------------------------------------------------------------------


@pytest.fixture
def small_limit() -> Iterator[int]:
    previous = codecs.set_max_decompressed(LIMIT)
    try:
        yield LIMIT
    finally:
        codecs.set_max_decompressed(previous)


def test_the_limit_is_one_uncompressed_batch_and_the_same_in_c() -> None:
    # the records section of the largest uncompressed v2 batch: its size is an int32
    assert codecs.MAX_DECOMPRESSED == INT32_MAX - 61
    if native.HAVE_SPEEDUPS:
        previous = native.speedups.configure_limits(123)
        assert native.speedups.configure_limits(previous) == 123
        assert previous == codecs.MAX_DECOMPRESSED


BOMB_CODECS = [C.GZIP, C.SNAPPY, C.LZ4, C.ZSTD]


@pytest.mark.parametrize("codec", BOMB_CODECS, ids=lambda c: c.label)
@pytest.mark.parametrize("pure", [False, True], ids=["c", "pure"])
def test_a_bomb_batch_is_refused(codec: Compression, pure: bool, small_limit: int) -> None:
    data = _kp_batch(int(codec), [(b"k", bytes(2 * small_limit), [("h", b"v")])])
    assert len(data) < small_limit // 10  # a small batch ...
    (batch,) = iter_batches(b"\x00" * 5 + data, start=5, verify_crc=True, source="bomb.log")
    with pytest.raises(UnsupportedError) as err:  # ... whose records would be twice the limit
        twins.run(pure, batch.record_list)
    assert err.value.source == "bomb.log" and err.value.position == 5 + 61
    assert f"at most {small_limit} bytes" in str(err.value)
    with pytest.raises(UnsupportedError):
        twins.run(pure, decode_columns, [batch])
    # a batch of kafka-python's before it is decoded, and the bomb still refused after it
    good = _kp_batch(int(codec), [(b"a", b"b", [])])
    batches = list(iter_batches(good + data))
    with pytest.raises(UnsupportedError):
        twins.run(pure, decode_columns, batches)


@pytest.mark.parametrize("codec", BOMB_CODECS, ids=lambda c: c.label)
def test_records_up_to_the_limit_decode(codec: Compression, small_limit: int) -> None:
    value = bytes(range(256)) * (small_limit // 2 // 256)
    data = _kp_batch(int(codec), [(b"k", value, [("h", b"v")])])
    (batch,) = iter_batches(data, verify_crc=True)
    (rec,) = batch.record_list()
    assert rec.value == value
    assert decode_columns([batch]).values.to_pylist() == [value]


@needs_c
def test_the_c_walker_stops_an_lz4_bomb_at_the_limit(small_limit: int) -> None:
    data = _kp_batch(int(C.LZ4), [(None, bytes(2 * small_limit), [])])
    # the C call leaves the frame to codecs.py (None) rather than decompress it whole
    assert native.speedups.batch_records(data, 0) is None
    codecs.set_max_decompressed(4 * small_limit)
    assert len(native.speedups.batch_records(data, 0)[0].value) == 2 * small_limit


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _zstd(data: bytes) -> bytes:  # a streaming frame: no content size in its header (as zstd-jni)
    c = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return c.compress(data) + c.flush()


COMPRESSORS = {
    C.GZIP: _gzip,
    C.SNAPPY: codecs.snappy_xerial,
    C.LZ4: codecs.lz4_frame,
    C.ZSTD: _zstd,
}


@pytest.mark.parametrize("codec", BOMB_CODECS, ids=lambda c: c.label)
def test_decompress_stops_one_byte_past_the_limit(codec: Compression, small_limit: int) -> None:
    squeeze = COMPRESSORS[codec]
    assert codecs.decompress(codec, squeeze(bytes(small_limit))) == bytes(small_limit)
    with pytest.raises(UnsupportedError) as err:
        codecs.decompress(codec, squeeze(bytes(small_limit + 1)), source="x.log", position=7)
    assert (err.value.source, err.value.position) == ("x.log", 7)
    if codec != C.LZ4:  # concatenated gzip members, xerial streams, zstd frames count together
        half = squeeze(bytes(small_limit // 2 + 1))
        assert len(codecs.decompress(codec, half)) == small_limit // 2 + 1
        with pytest.raises(UnsupportedError):
            codecs.decompress(codec, half + half)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [C.GZIP, C.SNAPPY, C.LZ4], ids=lambda c: c.label)
def test_legacy_wrappers_have_the_same_limit(codec: Compression, magic: int, small_limit: int) -> None:
    squeezed = codecs.compress(codec, bytes(small_limit + 1), magic=magic)
    with pytest.raises(UnsupportedError):
        codecs.decompress(codec, squeezed, magic=magic)


def test_raw_snappy_and_foreign_frames_are_bounded_too(small_limit: int) -> None:
    raw = bytes(cramjam.snappy.compress_raw(bytes(small_limit + 1)))
    with pytest.raises(UnsupportedError):
        codecs.decompress(C.SNAPPY, raw)
    # a zstd frame that declares its content size, and an lz4 frame of the lz4 library's own writer
    with pytest.raises(UnsupportedError):
        codecs.decompress(C.ZSTD, zstandard.ZstdCompressor().compress(bytes(small_limit + 1)))
    frame = lz4.frame.compress(bytes(small_limit + 1), block_linked=False)
    with pytest.raises(UnsupportedError):
        codecs.decompress(C.LZ4, frame)


@pytest.mark.parametrize("codec", BOMB_CODECS, ids=lambda c: c.label)
def test_a_bomb_is_cut_short_not_decompressed_whole(codec: Compression, small_limit: int) -> None:
    # 64 MiB of zeros in a few KiB (snappy: 3 MiB): refused after a few MiB are made, not 64
    bomb = COMPRESSORS[codec](bytes(64 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(UnsupportedError):
            codecs.decompress(codec, bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < small_limit + (8 << 20), peak


# --- a batch length near INT32_MAX ------------------------------------------------------------
# The records section's size was computed as ``h.length + 12 - 61`` in int32: formally an overflow
# near INT32_MAX. gcc folds it to ``h.length - 49`` (whose value fits), and Python builds extensions
# with -fwrapv, so no build of the old code went wrong or made UBSan report; it is Py_ssize_t now, and
# these batches check the decoders at that size (under UBSan with -fno-wrapv in make asan-check).


def _huge_batch(codec: int, count: int) -> mmap.mmap:
    """A kafka-python batch whose length field is INT32_MAX - 3, in a buffer that holds it (2 GiB of
    anonymous memory, untouched pages cost nothing): its records, then zeros."""
    data = bytearray(_kp_batch(codec, [(b"k", b"v" * 1000, [("h", b"x")])]))
    assert data[22] & 7 == codec  # (kafka-python compresses only what gets smaller)
    length = INT32_MAX - 3
    buf = mmap.mmap(-1, length + 12)
    struct.pack_into(">i", data, 8, length)
    struct.pack_into(">i", data, 57, count)
    struct.pack_into(">i", data, 23, count - 1)  # an offset range that fits the count (issue 48's check)
    buf[: len(data)] = bytes(data)
    return buf


@needs_c
@pytest.mark.parametrize(
    ("codec", "count", "found"),
    [(0, 1, "bytes after record 1"), (int(C.LZ4), 2, "the records end at record 1")],
    ids=["none", "lz4"],
)
def test_a_length_near_int32_max_is_a_typed_error(codec: int, count: int, found: str) -> None:
    # (the mapping goes when the last view of it does: errors' tracebacks hold views too)
    (batch,) = iter_batches(memoryview(_huge_batch(codec, count)), source="huge.log")
    assert batch.size == INT32_MAX + 9
    with pytest.raises(CorruptRecordError) as err:
        batch.record_list()
    assert found in str(err.value)
    with pytest.raises(CorruptRecordError) as err2:
        decode_columns([batch])
    assert str(err2.value) == str(err.value)


# --- lengths past the end ---------------------------------------------------------------------


@pytest.mark.parametrize("pure", [False, True], ids=["c", "pure"])
@pytest.mark.parametrize("field", ["key", "header key", "header value"])
def test_a_length_past_the_end_of_the_buffer(field: str, pure: bool) -> None:
    data = bytearray(_kp_batch(0, [(b"K", b"V", [("H", b"X")])]))
    # kafka-python writes each length as a 1-byte zigzag varint (2 for 1) just before its bytes
    at = {"key": data.index(b"K", 61), "header key": data.index(b"H", 61), "header value": data.rindex(b"X")}
    pos = at[field] - 1
    assert data[pos] == 2
    data[pos] = 0x7E  # 63 bytes: past the record and past the buffer
    assert pos + 63 > len(data)
    (batch,) = iter_batches(_fix_crc(data), verify_crc=True, source="k.log")
    with pytest.raises(CorruptRecordError) as err:
        twins.run(pure, batch.record_list)
    assert err.value.position == pos and "runs past it" in str(err.value)
    with pytest.raises(CorruptRecordError) as err2:
        twins.run(pure, decode_columns, [batch])
    assert str(err2.value) == str(err.value)


# --- bytes that change between the two passes ---------------------------------------------------

_WRITER = """
import os
import sys
import numpy as np
a = np.memmap(sys.argv[1], dtype=np.uint8, mode="r+")
idx = np.array([int(x) for x in sys.argv[2].split(",")])
parent = os.getppid()
print("go", flush=True)
while os.getppid() == parent:  # (ends with the test's process, even one a sanitizer aborts)
    for _ in range(1000):  # as fast as numpy writes: each header key length 8192 or ~1 MiB
        a[idx] = 0x7F
        a[idx] = 0x01
"""


@needs_c
@pytest.mark.parametrize("how", ["record_list", "decode_columns"])
def test_header_lengths_that_change_between_the_passes(how: str, tmp_path: Path) -> None:
    """The C decoders walk a record's headers twice: parse_record checks them, then build_headers /
    decode_batch_columns copy them. Nothing between the two calls back into Python (and the GIL is
    held), so no test in this process can change the bytes there; a second process can, as a live
    broker can change a segment we mmap. It flips the third byte of every header key length varint
    (8192 bytes, a 3-byte varint) to make it about 1 MiB, past the record and past the segment.

    Every decode must give the true records or the typed error; before each length was checked
    again in the second pass, the copies read past the record (garbage header keys, or worse).
    """
    key = "k" * 8192
    n = 48
    data = _kp_batch(0, [(None, b"v%d" % i, [(key, b"h")]) for i in range(n)])
    marker = b"\x80\x80\x01" + key.encode()[:64]
    flips = []
    at = data.find(marker)
    while at >= 0:
        flips.append(at + 2)
        at = data.find(marker, at + 1)
    assert len(flips) == n
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(data)
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(seg), ",".join(map(str, flips))], stdout=subprocess.PIPE
    )
    ok = typed = 0
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"go\n"
        with seg.open("rb") as f:  # (the mapping goes with the last view of it)
            mv = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
            # 1.5 s of decodes, and on until the writer was seen at work (a typed error): under load the
            # writer may get no CPU in the first 1.5 s; the deadline guards a writer that never runs
            soon, deadline = time.monotonic() + 1.5, time.monotonic() + patience(60)
            while time.monotonic() < soon or (typed == 0 and time.monotonic() < deadline):
                (batch,) = iter_batches(mv, source=str(seg))
                try:
                    if how == "record_list":
                        keys = [r.headers[0].key for r in batch.record_list()]
                    else:
                        keys = [h[0]["key"] for h in decode_columns([batch]).headers.to_pylist()]
                except FormatError as e:
                    assert isinstance(e, CorruptRecordError) and "runs past it" in str(e)
                    typed += 1
                    continue
                assert keys == [key] * n
                ok += 1
    finally:
        writer.kill()
        writer.wait()
    assert typed > 0  # the writer was at work

"""Issue 24, from the audit: a decompression bomb (a small gzip or zstd batch whose records decompress to
gigabytes) cost ``dump --print-data`` twice its decompressed size (2.2 GB for 1 GiB). Its records are now
decompressed and decoded a window at a time (``codecs.WINDOW``) as they are iterated: memory stays near
the batch's compressed size plus a fixed budget. The records are the ones kafka-python decodes."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import crc32c
import pytest
import zstandard
from kafka.record import MemoryRecords

from logdoctor.errors import CorruptRecordError
from logdoctor.formats import codecs
from logdoctor.formats.records import scan_batches

SRC = Path(__file__).resolve().parents[2] / "src"


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _record(i: int, value: bytes) -> bytes:
    body = b"\x00" + _varint(i) + _varint(i) + _varint(1) + b"k" + _varint(len(value)) + value + _varint(0)
    return _varint(len(body)) + body


def bomb(codec: str, count: int, value_size: int, *, bad_at: int | None = None) -> bytes:
    """A CRC-valid v2 batch of ``count`` records (values of ``value_size`` bytes, compressed as they are
    made: never whole in memory here); record ``bad_at`` gets a length varint past the section's end."""
    if codec == "gzip":
        comp = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        feed, flush, attributes = comp.compress, comp.flush, 1
    elif codec in ("snappy", "lz4"):  # Kafka's framing (xerial, lz4 frame) as the Java client writes it
        raw: list[bytes] = []
        attributes = 2 if codec == "snappy" else 3

        def feed(d: bytes) -> bytes:
            raw.append(d)
            return b""

        def flush() -> bytes:
            return codecs.compress(codecs.Compression(attributes), b"".join(raw))

    else:
        chunker = zstandard.ZstdCompressor(level=1).chunker(chunk_size=1 << 20)
        feed, attributes = (lambda d: b"".join(chunker.compress(d))), 4

        def flush() -> bytes:
            return b"".join(chunker.finish())

    parts = []
    for i in range(count):
        rec = _record(i, bytes([i % 251]) * value_size)
        if i == bad_at:
            rec = _varint(1 << 28) + rec[len(_varint(len(rec) - 1)) :]
        parts.append(feed(rec))
    parts.append(flush())
    ts = 1_700_000_000_000
    header = struct.pack(">hiqqqhii", attributes, count - 1, ts, ts + count, -1, -1, -1, count)
    tail = header + b"".join(parts)
    return struct.pack(">qiibI", 100, 4 + 1 + 4 + len(tail), 0, 2, crc32c.crc32c(tail)) + tail


@pytest.mark.parametrize("codec", ["gzip", "zstd", "snappy", "lz4"])
def test_a_batch_of_several_windows_decodes_as_kafka_python_decodes_it(codec):
    data = bomb(codec, count=600, value_size=40_000)  # ~24 MB of records: three windows
    (batch,) = scan_batches(data, verify_crc=True).batches
    ours = [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()]
    (theirs_batch,) = [MemoryRecords(data).next_batch()]
    theirs = [(r.offset, r.timestamp, bytes(r.key), bytes(r.value)) for r in theirs_batch]
    assert len(ours) == 600 and ours == theirs


@pytest.mark.parametrize("codec", ["gzip", "zstd", "snappy", "lz4"])
def test_a_bomb_is_never_whole_in_memory(codec):
    data = bomb(codec, count=1100, value_size=64 * 1024)  # 72 MB of records from a few hundred KB
    assert len(data) < (4 << 20 if codec == "snappy" else 2 << 20)  # snappy expands at most ~21 times
    (batch,) = scan_batches(data, verify_crc=True).batches
    tracemalloc.start()
    try:
        n = sum(1 for _ in batch.records())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 1100
    # the whole section was 72 MB, and the record list as much again (~150 MB); a window is 8 MiB
    assert peak < 6 * codecs.WINDOW, peak


@pytest.mark.parametrize("codec", ["gzip", "zstd", "snappy", "lz4"])
def test_a_bad_record_in_a_later_window_raises_when_it_is_reached(codec):
    data = bomb(codec, count=600, value_size=40_000, bad_at=450)
    (batch,) = scan_batches(data, verify_crc=True).batches
    got = []
    with pytest.raises(CorruptRecordError) as e:
        for r in batch.records():
            got.append(r.offset)
    assert got == list(range(100, 100 + 450))
    assert "decompressed records" in str(e.value) and "record 450" in str(e.value), e.value


@pytest.mark.skipif(
    "asan" in os.environ.get("LD_PRELOAD", ""),
    reason="peak RSS is not a measure under ASan (shadow memory, quarantined frees): make asan-check",
)
def test_dump_print_data_of_a_bomb_stays_near_its_compressed_size(tmp_path):
    """The command line, as the audit ran it: peak memory of `dump --print-data` (getrusage of the
    child). 256 MB of records cost the whole section and the records again before."""
    log = tmp_path / "bomb-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(bomb("gzip", count=4000, value_size=64 * 1024))
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'logdoctor', 'dump', '--print-data', sys.argv[1]],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024\n"
        "print(p.returncode, rss, p.stderr[-300:])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code, str(log)], env=env, capture_output=True, text=True,
                         timeout=600).stdout.split(maxsplit=2)  # fmt: skip
    rc, rss_mb = int(out[0]), int(out[1])
    assert rc == 0, out
    assert rss_mb < 200, json.dumps({"rss_mb": rss_mb})  # 256 MB of records; ~90 MB now

"""Issue 35: a big .log walked by a walk thread is read a chunk at a time into a buffer of the thread's
(``file_records._walk_read``) instead of being mapped. Its results are those of the walk of the mapped file
(``walk_file`` as before: ``read_buffer`` + ``walk`` + the records check) on real segments (Kafka's bytes:
compressed batches, v0/v1 messages, transactions) and generated ones, clean and damaged (bit flips in
batch headers, cut tails, zero tails, a batch whose records do not decode), with chunks so small that
every batch boundary falls somewhere: anything the C fast lane does not take whole sends it back to the
mapped walk, which finds and words it as always."""

from __future__ import annotations

import os
import random
import sys
import threading
from array import array
from pathlib import Path

import pytest

import realworld

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "repair"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage
from state_reads import mapped_walk
from test_scan_undecodable import _segment, fix_crc, shorten_first_record

from logdoctor.checks import walk_ahead
from logdoctor.checks.state import early_mappings, file_records
from logdoctor.formats import native
from logdoctor.formats.record_types import Compression
from logdoctor.sample.records import RecordDataSpec, write_segment

pytestmark = pytest.mark.skipif(native.scan_v2 is None, reason="needs the C extension and crc32c")


def _in_a_thread(fn, *args):
    out = []
    t = threading.Thread(target=lambda: out.append(fn(*args)), name="logdoctor-walk_test")
    t.start()
    t.join()
    return out[0]


def _compare(paths: list[Path], monkeypatch: pytest.MonkeyPatch, chunk: int) -> tuple[int, int]:
    """Every path walked both ways, with and without CRCs and positions; (read whole in chunks, sent back)."""
    monkeypatch.setattr(early_mappings, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(file_records, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(file_records, "READ_CHUNK", chunk)
    read = back = 0
    for p in paths:
        for crc, pos in ((True, True), (True, False), (False, False)):
            expected = mapped_walk(str(p), crc, pos)
            got = _in_a_thread(file_records._walk_read, str(p), crc, pos)
            if got is None:
                back += 1
            else:
                read += 1
                assert got == expected, (p, crc, pos)
            assert _in_a_thread(file_records.walk_file, str(p), crc, pos) == expected, (p, crc, pos)
    return read, back


def _real_logs() -> list[Path]:
    realworld.require()
    logs = sorted(realworld.files(".log"), key=lambda p: -p.stat().st_size)
    return [p for p in logs if 0 < p.stat().st_size <= 1 << 20 and p.parent.name != "_broker_logs"][:12]


@pytest.mark.parametrize("chunk", [4096, 65_536 + 13])
def test_chunked_read_of_real_segments_equals_the_mapped_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    rng = random.Random(35)
    paths: list[Path] = []
    for i, log in enumerate(_real_logs()):
        data = log.read_bytes()
        starts = [pos for pos, _size, _base in damage.batch_positions(log)] or [0]
        cases = [data, data[: len(data) - 5], data + bytes(100)]
        for _ in range(6):
            m = bytearray(data)
            at = rng.choice(starts) + rng.choice([0, 8, 11, 16, 17, 23, 35, 57, 61, 70])
            if at < len(m):
                m[at] ^= 1 << rng.randrange(8)
            cases.append(bytes(m))
        for j, case in enumerate(cases):
            p = tmp_path / f"{i}-{j}.log"
            p.write_bytes(case)
            paths.append(p)
    read, back = _compare(paths, monkeypatch, chunk)
    assert read > 50 and back > 50  # both ways were taken


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP, Compression.LZ4])
def test_chunked_read_of_generated_segments_equals_the_mapped_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: Compression
) -> None:
    """Many chunks (a batch across most chunk ends), batches bigger than a chunk (up to MAX_BATCH_READ), a
    zero tail, a cut tail, and a batch whose records do not decode (CRC recomputed)."""
    clean = tmp_path / "clean.log"
    spec = RecordDataSpec(seed=35, record_count=20_000, value_size=30, compression=compression)
    write_segment(clean, spec, keep_batches=False)
    data = clean.read_bytes()
    starts = [pos for pos, _size, _base in damage.batch_positions(clean)]
    assert len(starts) > 20
    variants = {
        "zero-tail": data + bytes(5000),
        "cut": data[:-7],
        "crc": data[: starts[10] + 40] + bytes([data[starts[10] + 40] ^ 1]) + data[starts[10] + 41 :],
    }
    if compression is Compression.NONE:
        buf = bytearray(data)
        shorten_first_record(buf, starts[12])
        fix_crc(buf, starts[12])
        variants["undecodable"] = bytes(buf)
    paths = [clean]
    for name, v in variants.items():
        p = tmp_path / f"{name}.log"
        p.write_bytes(v)
        paths.append(p)
    read, back = _compare(paths, monkeypatch, 65_536 + 5)
    assert read >= 3 and back >= 2 * len(variants)  # damage the walk without CRCs or records still takes
    # a chunk smaller than the batches: each read into a buffer of its own, up to MAX_BATCH_READ
    sizes = [b - a for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]
    assert min(sizes) > 61
    read, _ = _compare([clean], monkeypatch, 61)
    assert read == 3
    monkeypatch.setattr(walk_ahead, "MAX_BATCH_READ", max(sizes) - 1)  # the biggest batch is bigger
    _, back = _compare([clean], monkeypatch, 61)
    assert back == 3
    monkeypatch.setattr(walk_ahead, "MAX_BATCH_READ", max(sizes))
    read, _ = _compare([clean], monkeypatch, 61)
    assert read == 3


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZSTD])
def test_compressed_batch_whose_records_do_not_decode_is_sent_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compression: Compression
) -> None:
    """The C walk leaves the records of compressed batches to the Python decoder: with positions, a clean
    segment is taken whole, one whose compressed batch's records do not decode (CRC recomputed) is sent
    back to the mapped walk, which words it; without positions (no records decoded) both are taken."""
    clean, bad = tmp_path / "clean.log", tmp_path / "bad.log"
    clean.write_bytes(_segment(compression, damaged=False))
    bad.write_bytes(_segment(compression, damaged=True))
    read, back = _compare([clean, bad], monkeypatch, 4096)
    assert (read, back) == (5, 1)
    assert _in_a_thread(file_records._walk_read, str(bad), True, True) is None
    assert len(mapped_walk(str(bad), True, True).undecodable) == 1


def _damaged_v2_copy(tmp_path: Path) -> Path:
    """A real log dir of v2 batches whose biggest partition is split into four segments, the second with
    a flipped byte in a batch (CRC mismatch), the last with a torn final batch."""
    root = realworld.require()  # skips with the realworld reason where ../shared is absent
    for name in realworld.log_dir_names():
        src = root / name
        part = damage.biggest_partition(src, min_batches=16)
        if part is None:
            continue
        first = next(iter(sorted(part.glob("*.log"))), None)
        if first is None or first.read_bytes()[16:17] != b"\x02":
            continue
        log_dir = damage.copy_log_dir(src, tmp_path / "logs")
        damage.split_flip_and_cut(log_dir / part.name)
        return log_dir
    raise AssertionError("no real log dir of v2 batches")


def test_deep_scan_reading_in_chunks_reports_what_the_serial_walk_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real partition of v2 batches split into four segments, damaged in two (a CRC mismatch, a torn
    final batch), scanned --deep with every .log read in chunks on the walk threads: the serial Python
    walk's JSON."""
    from test_deep_parallel import _scan_json

    log_dir = _damaged_v2_copy(tmp_path)
    serial = _scan_json(log_dir, parallel=False, monkeypatch=monkeypatch)
    read: list[bool] = []
    walk_read = file_records._walk_read

    def recorded(*args):
        got = walk_read(*args)
        read.append(got is not None)
        return got

    monkeypatch.setattr(early_mappings, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(file_records, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(file_records, "READ_CHUNK", 16384)
    monkeypatch.setattr(file_records, "_walk_read", recorded)
    assert _scan_json(log_dir, parallel=True, monkeypatch=monkeypatch) == serial
    assert True in read and False in read  # the clean segment read in chunks, the damaged ones mapped


@pytest.mark.parametrize("length", [-(2**31), -12, 0, 48])
def test_a_batch_left_aside_that_changed_since_the_walk_sends_the_file_back(
    tmp_path: Path, length: int
) -> None:
    """The records of a compressed batch are checked after the C walk, read again from the file: when the
    bytes there no longer frame a batch (the file changed meanwhile: a length below a batch header's), the
    file is walked again, never a negative read or an error."""
    path = tmp_path / "changed.log"
    path.write_bytes(bytes(8) + length.to_bytes(4, "big", signed=True) + bytes(200))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert walk_ahead._aside_undecodable(fd, array("q", [0]).tobytes(), str(path)) is True
    finally:
        os.close(fd)

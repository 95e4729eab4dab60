"""Issue 48, item 8: an Aiven chunk that declares 1 GiB (a ~100 KB zstd frame, the manifest agreeing) took
``dump --deep --remote-storage`` to 2.1 GiB, ``restore`` to 1.1 GiB before it refused and ``export`` to
2.9 GiB over its process tree (the audit: 3.1, 1.07 and 4.5 GiB): the size check held, then the chunk was
detransformed whole, cached, copied and joined. A chunk of more than ``aiven_rsm.STREAM_ABOVE`` original
bytes is now read as a :class:`~logdoctor.formats.aiven_rsm.ChunkStream` (zstd's streaming decompressor) a
window at a time, by ``read_at`` and ``for_each_span`` alike, and ``dump`` reads a remote segment by byte
ranges (``RangedLogReader``), never whole. The bomb is built on a copy of ../shared/tiered
(tests/aiven_bomb.py)."""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import pytest

import aiven_bomb
import realworld
from logdoctor.errors import CorruptRecordError
from logdoctor.formats import aiven_rsm
from logdoctor.formats.aiven_rsm import ChunkStream, build_manifest, detransform_chunk, parse_manifest
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.remote_aiven import AivenLogReader
from logdoctor.logdir.remote_attach import attach_remote
from logdoctor.logdir.remote_store import RemoteOptions

_ASAN = "asan" in os.environ.get("LD_PRELOAD", "")
#: what the bomb chunk declares: 1 GiB; under ASan (make asan-check, where memory is no measure and every
#: byte walked costs many times over) 64 MiB, still above aiven_rsm.STREAM_ABOVE: the same streamed path
SIZE = (64 << 20) if _ASAN else (1 << 30)


def _manifest(size: int):
    return parse_manifest(build_manifest(original_chunk_size=size, original_file_size=size,
        transformed_sizes=[1], indexes={}, compression=True, topic="t", topic_id="A" * 22, partition=0,
        segment_id="A" * 22, start_offset=0, end_offset=0))  # fmt: skip


def test_a_chunk_stream_gives_the_chunks_bytes_in_pieces() -> None:
    head = os.urandom(100_000)
    frame = aiven_bomb.zstd_frame(head, 3 << 20, 7)
    manifest = _manifest(3 << 20)
    whole = detransform_chunk(frame, manifest, None, expected_size=3 << 20)
    stream = ChunkStream(frame, manifest, None, expected_size=3 << 20, source="x.log")
    got = bytearray()
    buf = memoryview(bytearray(333_333))
    while n := stream.readinto(buf):
        got += buf[:n]
    assert (
        bytes(got) == whole
        and whole[:100_000] == head
        and whole[100_000:] == bytes([7]) * (len(whole) - 100_000)
    )


def test_a_chunk_stream_checks_the_declared_size_and_the_frame() -> None:
    frame = aiven_bomb.zstd_frame(b"", 1 << 20, 0)
    with pytest.raises(CorruptRecordError, match="a chunk of 2097152 original bytes"):
        ChunkStream(frame, _manifest(2 << 20), None, expected_size=2 << 20, source="x.log")
    broken = frame[: len(frame) - 3]  # the frame cut short: found when the stream reaches the cut
    stream = ChunkStream(broken, _manifest(1 << 20), None, expected_size=1 << 20, source="x.log")
    with pytest.raises(CorruptRecordError, match=r"x\.log"):
        buf = memoryview(bytearray(1 << 16))
        while stream.readinto(buf):
            pass


def test_the_remote_reader_reads_a_large_chunk_as_a_stream(tmp_path: Path) -> None:
    """64 MiB (four times STREAM_ABOVE): ``read_at`` forward, backward and across, and ``for_each_span``,
    give the segment's real bytes then the fill; never a buffer of the chunk's size."""
    size = 4 * aiven_rsm.STREAM_ABOVE
    logs, store, log = aiven_bomb.build(tmp_path, size, 0x5A)
    tiered = realworld.require_tiered()
    head = (tiered / "original/kafka-logs/payments-0" / f"{aiven_bomb.SEGMENT:020d}.log").read_bytes()
    seg = _segment_ref(logs, store, log)
    with AivenLogReader(seg) as reader:
        assert reader.size == size
        assert reader.read_at(0, len(head)) == head
        assert reader.read_at(size - 10, 100) == b"\x5a" * 10
        assert reader.read_at(len(head) - 5, 10) == head[-5:] + b"\x5a" * 5  # behind the last read: reopened
        crc = {"crc": 0, "end": 0}

        def done(pos: int, length: int, c: int) -> None:
            assert pos == crc["end"]
            crc["crc"] = zlib.crc32(c.to_bytes(4, "big"), crc["crc"])
            crc["end"] = pos + length

        pieces: list[int] = []
        reader.for_each_span(
            lambda pos, view: pieces.append(len(view)) or zlib.crc32(view), done, span=8 << 20
        )
        assert crc["end"] == size and max(pieces) == 8 << 20 and len(pieces) == 8


def _segment_ref(logs: Path, store: Path, log: Path):
    """The bomb's segment as the reads find it (the log dir's refs with the store attached)."""
    refs = attach_remote(discover([str(logs)]), RemoteOptions(str(store), None, None))
    (ref,) = [r for r in refs if (r.topic, r.partition) == ("payments", 0)]
    (seg,) = [s for s in ref.segments if s.path == str(log)]
    return seg


@pytest.mark.slow
def test_dump_and_restore_of_a_chunk_declaring_1_gib_hold_a_window(tmp_path: Path) -> None:
    """Each command in a process of its own (the process tree's peak: tests/aiven_bomb.run_measured).
    Measured: dump 2,112 MiB before, 104 after; restore 1,139 before, 215 after (55 for a bomb of 0xAB,
    whose first header is refused at once)."""
    _, store, log = aiven_bomb.build(tmp_path, SIZE, 0)
    assert log.stat().st_size < 200_000
    rc, out, peak = aiven_bomb.run_measured(
        ["dump", "--deep", "--remote-storage", str(store), str(log)], tmp_path
    )
    assert rc == 2, out[-3000:]
    assert f"LOG_INVALID_BYTES: Found {SIZE - 63727} invalid bytes" in out, out[-3000:]
    assert f"zero-filled bytes (offset 0, size 0): the first 1048576 of the {SIZE - 63727} bytes" in out
    assert "324 records, offsets 324..647" in out  # the real records before the fill, every one
    if not _ASAN:  # under ASan (make asan-check) peak RSS is no measure
        assert peak < 300, peak
    target = tmp_path / "logs"
    target.mkdir()
    rc, out, peak = aiven_bomb.run_measured(
        [
            "restore",
            str(target),
            "--remote-storage",
            str(store),
            "--apply",
            "--backup-dir",
            str(tmp_path / "b"),
        ],
        tmp_path,
    )
    assert rc == 2, out[-3000:]
    text = " ".join(out.split())
    assert "restore-remote-object" in text and f"found a zero-filled tail of {SIZE - 63727} bytes" in text
    assert not (target / "payments-0" / f"{aiven_bomb.SEGMENT:020d}.log").exists()
    if not _ASAN:
        assert peak < 300, peak


@pytest.mark.slow
def test_export_of_a_chunk_declaring_1_gib_stays_under_1_gib(tmp_path: Path) -> None:
    """Over the process tree (the driver, Spark's JVM and its Python workers). Measured with --writer
    arrow: 2,886 MiB before, 941 after (801 for the same store without the bomb: mostly the JVM)."""
    if _ASAN:  # not a realworld or required skip: CI runs this test in make test, outside ASan
        pytest.skip(
            "under ASan (make asan-check) Spark's launcher script hangs in `ps` with libasan preloaded; the "
            "streamed chunk path runs under ASan in the dump and restore test"
        )
    logs, store, log = aiven_bomb.build(tmp_path, SIZE, 0)
    args = ["export", str(logs), "--out", str(tmp_path / "out"), "--remote-storage", str(store),
            "--topics", "payments", "--master", "local[2]", "--writer", "arrow", "--json"]  # fmt: skip
    rc, out, peak = aiven_bomb.run_measured(args, tmp_path)
    assert rc == 1, out[-3000:]
    summary = json.loads(out[out.index("{\n") :])
    assert summary["rows"] == 6500  # the segment's real records are read before the fill, each once
    (skipped,) = summary["skipped"]
    assert skipped["path"] == str(log) and f"a zero-filled tail of {SIZE - 63727} bytes" in skipped["error"]
    if not _ASAN:
        assert peak < 1024, peak

"""Index-vs-log verification on real indexes: nothing on healthy ones, each mismatch on corrupted copies."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

import realworld
from logdoctor.checks.verify_index import (
    FindingCode,
    scan_log_layout,
    verify_offset_index,
    verify_time_index,
)
from logdoctor.formats.index import OffsetEntry, write_offset_index
from logdoctor.logdir.reader import LogReader

SEGMENT = "kraft-4.2-nomanazeem/__cluster_metadata-0/00000000000000000000"


def _with_log(suffix: str) -> list[Path]:
    return [
        p
        for p in realworld.files(suffix=suffix)
        if p.stat().st_size > 0
        and p.with_suffix(".log").exists()
        and p.with_suffix(".log").stat().st_size > 0
    ]


def _kafka_python_batches(log: Path) -> list[tuple[int, int]]:
    """(position, last offset) of each batch, by an independent decoder."""
    mr = MemoryRecords(log.read_bytes())
    out, pos = [], 0
    while (b := mr.next_batch()) is not None:
        out.append((pos, b.last_offset if hasattr(b, "last_offset") else b.base_offset))
        pos += b.size_in_bytes
    return out


def _verify(index: Path, kind: str) -> list:
    layout = scan_log_layout(LogReader.open(index.with_suffix(".log")))
    base = int(index.name.split(".")[0])
    fn = verify_offset_index if kind == "offset" else verify_time_index
    return fn(index.read_bytes(), base, layout, file=str(index))


@pytest.mark.parametrize("index", realworld.params(_with_log(".index")))
def test_healthy_real_offset_indexes_have_no_findings(index):
    assert _verify(index, "offset") == []
    # and the entries really are (last offset, position) pairs of batches kafka-python sees
    batches = dict(_kafka_python_batches(index.with_suffix(".log")))
    data = index.read_bytes()
    base = int(index.name.split(".")[0])
    for i in range(len(data) // 8):
        rel, pos = struct.unpack_from(">ii", data, 8 * i)
        assert batches[pos] == base + rel


@pytest.mark.parametrize("index", realworld.params(_with_log(".timeindex")))
def test_healthy_real_time_indexes_have_no_findings(index):
    assert _verify(index, "time") == []


@pytest.fixture
def segment(tmp_path, realworld_dir) -> Path:
    """A copy of a real segment (log, index, time index) to corrupt; returns the path stem."""
    src = realworld_dir / SEGMENT
    for suffix in (".log", ".index", ".timeindex"):
        realworld.writable_copy(src.with_suffix(suffix), tmp_path / (src.name + suffix))
    return tmp_path / src.name


def _patch(path: Path, fmt: str, at: int, *values) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, at, *values)
    path.write_bytes(bytes(data))


def _entry(path: Path, i: int, fmt: str, size: int) -> tuple:
    return struct.unpack_from(fmt, path.read_bytes(), i * size)


def _codes(findings) -> list[str]:
    return [f.code.value for f in findings]


def test_offset_mismatch(segment):
    idx = segment.with_suffix(".index")
    rel, pos = _entry(idx, 5, ">ii", 8)
    _patch(idx, ">i", 5 * 8, rel - 1)  # now the offset before the batch's last offset
    findings = _verify(idx, "offset")
    assert _codes(findings) == ["INDEX_OFFSET_MISMATCH"]
    f = findings[0]
    assert f.slot == 5 and f.entry == {"offset": rel - 1, "position": pos}
    assert f.log["last_offset"] == rel and f.log["position"] == pos  # what the log holds (base offset 0)


def test_position_inside_a_batch(segment):
    idx = segment.with_suffix(".index")
    _rel, pos = _entry(idx, 3, ">ii", 8)
    _patch(idx, ">i", 3 * 8 + 4, pos + 5)
    findings = _verify(idx, "offset")
    assert _codes(findings) == ["INDEX_POSITION_NOT_BATCH_START"]
    assert findings[0].log["position"] == pos


def test_position_past_the_log(segment):
    idx = segment.with_suffix(".index")
    size = segment.with_suffix(".log").stat().st_size
    n = idx.stat().st_size // 8
    _patch(idx, ">i", (n - 1) * 8 + 4, size + 100)
    assert _codes(_verify(idx, "offset")) == ["INDEX_POSITION_BEYOND_LOG"]


def test_offset_not_in_log(segment):
    idx = segment.with_suffix(".index")
    n = idx.stat().st_size // 8
    _patch(idx, ">i", (n - 1) * 8, 10_000_000)
    findings = _verify(idx, "offset")
    assert _codes(findings) == ["INDEX_OFFSET_NOT_IN_LOG"]


def test_entries_out_of_order(segment):
    idx = segment.with_suffix(".index")
    data = bytearray(idx.read_bytes())
    data[16:24], data[24:32] = data[24:32], data[16:24]
    idx.write_bytes(bytes(data))
    codes = _codes(_verify(idx, "offset"))
    assert "INDEX_OUT_OF_ORDER" in codes
    assert "INDEX_SANITY_CHECK_FAILED" not in codes


def test_partial_trailing_entry(segment):
    idx = segment.with_suffix(".index")
    idx.write_bytes(idx.read_bytes() + b"\x00\x00\x01")
    assert _codes(_verify(idx, "offset")) == ["INDEX_PARTIAL_ENTRY", "INDEX_SANITY_CHECK_FAILED"]


def test_garbage_after_the_zero_tail(segment):
    idx = segment.with_suffix(".index")
    idx.write_bytes(idx.read_bytes() + bytes(8 * 4) + b"\x00\x00\x00\x00\x00\x00\x00\x07")
    assert _codes(_verify(idx, "offset")) == ["INDEX_GARBAGE_AFTER_ZERO_SLOT"]


def test_time_index_timestamp_mismatch(segment):
    tix = segment.with_suffix(".timeindex")
    ts, rel = _entry(tix, 4, ">qi", 12)
    _patch(tix, ">q", 4 * 12, ts + 1)  # still between its neighbours, but not the batch's max
    findings = _verify(tix, "time")
    assert _codes(findings) == ["TIME_INDEX_TIMESTAMP_MISMATCH"]
    assert findings[0].entry == {"timestamp": ts + 1, "offset": rel}
    assert findings[0].log["max_timestamp"] == ts


def test_time_index_offset_not_in_log(segment):
    tix = segment.with_suffix(".timeindex")
    n = tix.stat().st_size // 12
    _patch(tix, ">i", (n - 1) * 12 + 8, 10_000_000)
    assert _codes(_verify(tix, "time")) == ["TIME_INDEX_OFFSET_NOT_IN_LOG"]


def test_time_index_out_of_order(segment):
    tix = segment.with_suffix(".timeindex")
    ts_prev, _ = _entry(tix, 6, ">qi", 12)
    _ts, _rel = _entry(tix, 7, ">qi", 12)
    _patch(tix, ">q", 7 * 12, ts_prev)  # equal to the previous one: maybeAppend never writes that
    codes = _codes(_verify(tix, "time"))
    assert codes[0] == "TIME_INDEX_OUT_OF_ORDER"
    assert "TIME_INDEX_TIMESTAMP_MISMATCH" in codes  # and the log's max timestamp differs too


def test_truncated_log_moves_entries_past_the_valid_bytes(segment):
    log = segment.with_suffix(".log")
    idx = segment.with_suffix(".index")
    n = idx.stat().st_size // 8
    _, last_pos = _entry(idx, n - 1, ">ii", 8)
    with open(log, "r+b") as f:
        f.truncate(last_pos + 30)  # the last indexed batch is now torn
    layout = scan_log_layout(LogReader.open(log))
    assert layout.error is not None and layout.valid_bytes == last_pos
    assert _codes(_verify(idx, "offset")) == ["INDEX_POSITION_BEYOND_LOG"]


def test_pre_kafka_806_append_chunk_is_not_a_mismatch(segment):
    """One entry for a multi-batch append: last offset of the chunk at the position of its first batch."""
    batches = _kafka_python_batches(segment.with_suffix(".log"))
    # entries for chunks of 3 batches: (last offset of batch i+2, position of batch i), every 40 batches
    entries = [OffsetEntry(batches[i + 2][1], batches[i][0]) for i in range(1, len(batches) - 3, 40)]
    idx = segment.with_suffix(".index")
    idx.write_bytes(write_offset_index(entries, 0))
    layout = scan_log_layout(LogReader.open(segment.with_suffix(".log")))
    notes: dict = {}
    assert verify_offset_index(idx.read_bytes(), 0, layout, file=str(idx), annotations=notes) == []
    assert set(notes) == set(range(len(entries)))
    assert all(v["append_chunk_batches"] == 3 for v in notes.values())


def test_chunk_crossing_the_next_entry_is_a_mismatch(segment):
    batches = _kafka_python_batches(segment.with_suffix(".log"))
    # entry 0 claims a chunk ending at batch 12, but entry 1 starts at batch 5: no append did that
    entries = [OffsetEntry(batches[12][1], batches[1][0]), OffsetEntry(batches[20][1], batches[5][0])]
    idx = segment.with_suffix(".index")
    idx.write_bytes(write_offset_index(entries, 0))
    layout = scan_log_layout(LogReader.open(segment.with_suffix(".log")))
    findings = verify_offset_index(idx.read_bytes(), 0, layout, file=str(idx))
    # entry 1 (the last one) may be a 16-batch chunk: nothing bounds it but the log's end
    assert [(f.code, f.slot) for f in findings] == [(FindingCode.INDEX_OFFSET_MISMATCH, 0)]
    assert findings[0].log["last_offset"] == batches[1][1]  # DumpLogSegments' "log offset"


def test_time_index_record_offset_inside_a_batch_is_accepted(realworld_dir):
    """2.x brokers indexed the offset of the record with the max timestamp (inside the batch)."""
    tix = realworld_dir / "zk-pre2.8-volodymyrzee/__consumer_offsets-12/00000000000000000000.timeindex"
    layout = scan_log_layout(LogReader.open(tix.with_suffix(".log")))
    offsets = [
        struct.unpack_from(">qi", tix.read_bytes(), 12 * i)[1] for i in range(tix.stat().st_size // 12)
    ]
    assert any(o not in layout.last_offsets for o in offsets)  # DumpLogSegments would report these
    assert _verify(tix, "time") == []


def test_negative_position(segment):
    """A negative position is its own finding, with or without valid batches in the log (issue 24: an
    IndexError beside a log with no valid batch, a wrong 'inside the batch at' with one)."""
    idx = segment.with_suffix(".index")
    _patch(idx, ">i", 2 * 8 + 4, -(2**31))
    assert "INDEX_POSITION_NEGATIVE" in _codes(_verify(idx, "offset"))
    segment.with_suffix(".log").write_bytes(b"\x00" * 7)
    layout = scan_log_layout(LogReader.open(segment.with_suffix(".log")))
    findings = verify_offset_index(idx.read_bytes(), 0, layout)
    assert "INDEX_POSITION_NEGATIVE" in _codes(findings)

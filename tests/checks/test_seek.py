"""Index-based seeking: the right batches, and only a small part of a large segment read."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

import realworld
from logdoctor.formats.index import OffsetEntry, TimeEntry, write_offset_index, write_time_index
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.reader import DEFAULT_WINDOW, LogReader, iter_batches_from
from logdoctor.logdir.seek import (
    iter_batches_in_offsets,
    iter_batches_in_timestamps,
    lookup_offset_position,
    lookup_timestamp_offset,
    plan_offset_seek,
)

BASE = 1_000_000
RECORDS_PER_BATCH = 8
T0 = 1_700_000_000_000


def _segment(tmp: Path, batches: int, value_size: int, *, interval: int = 4096) -> dict:
    """A segment of ``batches`` batches written like a broker: index entry (last offset, position) each
    time more than ``interval`` bytes were appended since the last entry; the first batch never indexed."""
    value = b"v" * value_size
    log = tmp / f"{BASE:020d}.log"
    offsets, times = [], []
    layout = []  # (position, base, last, max_ts)
    pos = since = 0
    max_ts_so_far = -1
    with open(log, "wb") as f:
        for i in range(batches):
            base = BASE + i * RECORDS_PER_BATCH
            ts = T0 + i * 1000
            specs = [
                RecordSpec(value, key=b"k%d" % j, timestamp=ts - (RECORDS_PER_BATCH - 1 - j))
                for j in range(RECORDS_PER_BATCH)
            ]
            raw = build_record_batch(specs, base_offset=base)
            if since > interval:
                offsets.append(OffsetEntry(base + RECORDS_PER_BATCH - 1, pos))
                if ts > max_ts_so_far:
                    times.append(TimeEntry(ts, base + RECORDS_PER_BATCH - 1))
                since = 0
            max_ts_so_far = max(max_ts_so_far, ts)
            f.write(raw)
            layout.append((pos, base, base + RECORDS_PER_BATCH - 1, ts))
            pos += len(raw)
            since += len(raw)
    (tmp / f"{BASE:020d}.index").write_bytes(write_offset_index(offsets, BASE))
    (tmp / f"{BASE:020d}.timeindex").write_bytes(write_time_index(times, BASE))
    return {"log": log, "layout": layout, "size": pos}


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory) -> dict:
    """~256 MiB: 2048 batches of 8 records of 16 KiB."""
    return _segment(tmp_path_factory.mktemp("big"), 2048, 16 * 1024)


def _index(seg: dict, suffix: str) -> bytes:
    return seg["log"].with_suffix(suffix).read_bytes()


def test_big_segment_is_large(big_segment):
    assert big_segment["size"] > 200 * 1024 * 1024


@pytest.mark.parametrize("target_batch", [1, 700, 1500, 2047])
def test_offset_seek_reads_a_small_fraction(big_segment, target_batch):
    _pos, base, _last, _ = big_segment["layout"][target_batch]
    first = base + 3
    reader = LogReader.open(big_segment["log"])
    got = list(iter_batches_in_offsets(reader, _index(big_segment, ".index"), BASE, first, first + 10))
    want = [b for b in big_segment["layout"] if b[2] >= first and b[1] <= first + 10]
    assert [(b.position, b.base_offset, b.last_offset) for b in got] == [(w[0], w[1], w[2]) for w in want]
    assert reader.bytes_read < big_segment["size"] / 100, reader.bytes_read


def test_timestamp_seek_reads_a_small_fraction(big_segment):
    _pos, base, _last, ts = big_segment["layout"][1234]
    reader = LogReader.open(big_segment["log"])
    got = list(
        iter_batches_in_timestamps(
            reader, _index(big_segment, ".index"), _index(big_segment, ".timeindex"), BASE, ts - 3, ts + 1500
        )
    )
    # first batch with max ts >= ts-3 is batch 1234; the walk ends with the first batch whose max ts > ts+1500
    assert [b.base_offset for b in got] == [base, base + 8, base + 16]
    assert reader.bytes_read < big_segment["size"] / 100


def test_full_walk_reads_everything_and_matches_the_writer(big_segment):
    reader = LogReader.open(big_segment["log"])
    got = [(b.position, b.base_offset, b.last_offset, b.max_timestamp) for b in iter_batches_from(reader, 0)]
    assert got == big_segment["layout"]
    assert reader.bytes_read >= big_segment["size"]


def test_windowed_walk_equals_one_read(tmp_path):
    seg = _segment(tmp_path, 40, 3000)
    whole = [b.position for b in iter_batches_from(LogReader.open(seg["log"]), 0, window=None)]
    for window in (12, 100, 4096, 30000):
        r = LogReader.open(seg["log"])
        assert [b.position for b in iter_batches_from(r, 0, window=window)] == whole


def test_lookup_is_kafkas_floor_lookup(tmp_path):
    entries = [OffsetEntry(BASE + 9, 100), OffsetEntry(BASE + 19, 200), OffsetEntry(BASE + 29, 300)]
    data = write_offset_index(entries, BASE, size=80)  # with a preallocated zero tail
    assert lookup_offset_position(data, BASE, BASE + 5) == (0, None)
    assert lookup_offset_position(data, BASE, BASE + 9) == (100, BASE + 9)
    assert lookup_offset_position(data, BASE, BASE + 25) == (200, BASE + 19)
    assert lookup_offset_position(data, BASE, BASE + 10**6) == (300, BASE + 29)
    assert lookup_offset_position(b"", BASE, BASE + 5) == (0, None)


def test_timestamp_lookup_is_strictly_below(tmp_path):
    data = write_time_index([TimeEntry(1000, BASE + 5), TimeEntry(2000, BASE + 9)], BASE)
    assert lookup_timestamp_offset(data, BASE, 1000) is None  # an earlier batch may hold ts 1000 too
    assert lookup_timestamp_offset(data, BASE, 1001) == BASE + 5
    assert lookup_timestamp_offset(data, BASE, 2000) == BASE + 5
    assert lookup_timestamp_offset(data, BASE, 2001) == BASE + 9


def test_broken_index_falls_back_to_the_start(tmp_path):
    seg = _segment(tmp_path, 30, 2000)
    idx = seg["log"].with_suffix(".index")
    data = bytearray(idx.read_bytes())
    for i in range(len(data) // 8):  # every entry now points 7 bytes into its batch
        struct.pack_into(">i", data, 8 * i + 4, struct.unpack_from(">i", data, 8 * i + 4)[0] + 7)
    reader = LogReader.open(seg["log"])
    target = seg["layout"][8][1]
    plan = plan_offset_seek(reader, bytes(data), BASE, target)
    assert plan.via == "start" and plan.fallback and "no batch starts" in plan.fallback
    got = list(iter_batches_in_offsets(reader, bytes(data), BASE, target, target))
    assert [b.base_offset for b in got] == [target]


def test_index_past_the_target_falls_back(tmp_path):
    seg = _segment(tmp_path, 30, 2000)
    layout = seg["layout"]
    # entry claims offset of batch 3 but points at batch 20: walking from there would miss batch 3..19
    bad = write_offset_index([OffsetEntry(layout[3][2], layout[20][0])], BASE)
    reader = LogReader.open(seg["log"])
    target = layout[10][1]
    assert [b.base_offset for b in iter_batches_in_offsets(reader, bad, BASE, target, target)] == [target]


@pytest.mark.parametrize(
    "log",
    realworld.params(
        p
        for p in realworld.files(suffix=".log")
        if p.stat().st_size > 100_000 and p.with_suffix(".index").exists()
    ),
)
def test_real_segments_seek_to_every_batch_like_kafka_python(log):
    """Every batch of a real segment is found by seeking to its last offset (kafka-python lists them)."""
    data = log.read_bytes()
    mr = MemoryRecords(data)
    expected = []
    pos = 0
    while (b := mr.next_batch()) is not None:
        expected.append((pos, b.base_offset, b.last_offset))
        pos += b.size_in_bytes
    index = log.with_suffix(".index").read_bytes()
    base = int(log.name.split(".")[0])
    reader = LogReader.open(log)
    for pos, first, last in expected[:: max(1, len(expected) // 200)]:
        got = next(iter_batches_in_offsets(reader, index, base, last, last))
        assert (got.position, got.base_offset, got.last_offset) == (pos, first, last)
    # each seek read little: about one read window, whatever the segment size
    assert reader.bytes_read / len(expected[:: max(1, len(expected) // 200)]) < 2 * DEFAULT_WINDOW

"""A CRC-bad batch costs itself, broken framing stops a segment's rows (never the job); splits of large
segments change nothing."""

from __future__ import annotations

import shutil
import struct

import oracle
import pytest

from logdoctor.formats.record_types import Compression
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.slices import parse_read_options, plan_slices
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("corrupt")
    path, _fleet = generate_log_dir(
        root / "fleet",
        [
            TopicSpec(
                "big",
                partitions=1,
                records_per_partition=3000,
                records_per_batch=5,
                value_size=100,
                segment_bytes=4 * 1024 * 1024,
            ),
            TopicSpec(
                "zipped",
                partitions=2,
                records_per_partition=800,
                records_per_batch=20,
                compression=Compression.LZ4,
                segment_bytes=32 * 1024,
            ),
        ],
    )
    return path


def _batch_starts(log):
    data = log.read_bytes()
    pos, starts = 0, []
    while pos + 12 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0]
        starts.append(pos)
        pos += 12 + size
    return starts


def test_split_segments_read_the_same_records(spark, logdir):
    seg = logdir / "big-0" / "00000000000000000000.log"
    assert seg.stat().st_size > 200_000
    slices = plan_slices(discover(str(seg)), parse_read_options({"maxPartitionBytes": "64k"}))
    assert len(slices) > 3 and all(s.emit_from > 0 for s in slices[1:])  # split at index positions
    whole = spark.read.format("kafka-log").load(str(logdir))
    split = spark.read.format("kafka-log").option("maxPartitionBytes", "64k").load(str(logdir))
    expected = oracle.digest(
        (t, p, o, k, v) for log in logdir.glob("*/*.log") for t, p, o, _, k, v in oracle.records_of(log)
    )
    cols = ("topic", "partition", "offset", "key", "value")
    assert oracle.digest(tuple(r) for r in whole.select(*cols).collect()) == expected
    assert oracle.digest(tuple(r) for r in split.select(*cols).collect()) == expected


@pytest.mark.parametrize("split", ["no-split", "split"])
def test_a_crc_mismatch_costs_its_batch_only(spark, logdir, tmp_path, split):
    """Issue 31: one byte flipped inside a batch (the framing intact) leaves out that batch alone; the rows
    go on at the next batch, and kafka-log-segments names the batch (position, offsets, both CRCs)."""
    from kafka.record import MemoryRecords

    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    log = copy / "big-0" / "00000000000000000000.log"
    starts = _batch_starts(log)
    bad = starts[len(starts) // 2]
    data = bytearray(log.read_bytes())
    data[bad + 70] ^= 0xFF  # inside the records: the batch CRC no longer matches
    log.write_bytes(bytes(data))
    good, lost, records = [], [], MemoryRecords(bytes(data))  # kafka-python: the batches whose CRC is valid
    while (batch := records.next_batch()) is not None:
        (good if batch.validate_crc() else lost).append([r.offset for r in batch])
    (lost,) = lost
    good = sorted(o for offsets in good for o in offsets)
    assert len(good) == 3000 - 5 and good[-1] == 2999
    reader = spark.read.format("kafka-log")
    if split == "split":
        reader = reader.option("maxPartitionBytes", "32k")
    df = reader.load(str(copy))
    got = sorted(r["offset"] for r in df.where("topic = 'big'").select("offset").collect())
    assert got == good
    assert df.where("topic = 'zipped'").count() == 1600  # other segments are not affected
    seg = spark.read.format("kafka-log-segments").load(str(log)).collect()
    assert len(seg) == 1
    row = seg[0]
    assert row["error"] is None and row["valid_bytes"] == len(data) == row["size_bytes"]
    (crc,) = row["crc_mismatches"]
    assert (crc["position"], crc["base_offset"], crc["last_offset"]) == (bad, lost[0], lost[-1])
    assert crc["stored_crc"] == struct.unpack_from(">I", data, bad + 17)[0] != crc["computed_crc"]
    assert "LOG_CORRUPT" in [f["code"] for f in row["findings"]]  # the scan's view: recovery truncates here
    assert row["last_offset"] == 2999


def test_broken_framing_after_a_crc_mismatch_stops_the_segment_there(spark, logdir, tmp_path):
    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    log = copy / "big-0" / "00000000000000000000.log"
    starts = _batch_starts(log)
    i = len(starts) // 2
    bad = starts[i]
    data = bytearray(log.read_bytes())
    data[bad + 70] ^= 0xFF
    struct.pack_into(">i", data, starts[i + 1] + 8, 3)  # the next entry's size: no batch is that small
    log.write_bytes(bytes(data))
    got = sorted(
        r["offset"] for r in spark.read.format("kafka-log").load(str(log)).select("offset").collect()
    )
    assert got == list(range(i * 5))
    row = spark.read.format("kafka-log-segments").load(str(log)).collect()[0]
    assert row["valid_bytes"] == bad and "crc" in row["error"].lower() and row["crc_mismatches"] == []


def test_a_torn_tail_is_reported_and_skipped(spark, logdir, tmp_path):
    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    log = copy / "zipped-1" / "00000000000000000000.log"
    starts = _batch_starts(log)
    data = log.read_bytes()
    log.write_bytes(data[: starts[-1] + 30])  # the last batch is cut short
    expected = sorted(r[2] for r in oracle.records_of(log))  # kafka-python stops at the partial batch too
    got = sorted(
        r["offset"] for r in spark.read.format("kafka-log").load(str(log)).select("offset").collect()
    )
    assert got == expected and len(got) > 0
    row = spark.read.format("kafka-log-segments").load(str(log)).collect()[0]
    assert row["valid_bytes"] == starts[-1] and row["size_bytes"] == starts[-1] + 30
    assert row["error"] is not None and "LOG_CORRUPT" in [f["code"] for f in row["findings"]]

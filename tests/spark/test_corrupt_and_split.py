"""Corrupt batches stop a segment's rows (never the job); splits of large segments change nothing."""

from __future__ import annotations

import shutil
import struct

import oracle
import pytest

from logdoctor.formats.record_types import Compression
from logdoctor.logdir.discovery import discover
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.planning import parse_read_options, plan_slices

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
def test_a_crc_mismatch_stops_the_segment_at_the_last_valid_batch(spark, logdir, tmp_path, split):
    copy = tmp_path / "kafka-logs"
    shutil.copytree(logdir, copy)
    log = copy / "big-0" / "00000000000000000000.log"
    starts = _batch_starts(log)
    bad = starts[len(starts) // 2]
    data = bytearray(log.read_bytes())
    data[bad + 70] ^= 0xFF  # inside the records: the batch CRC no longer matches
    log.write_bytes(bytes(data))
    # what kafka-python decodes before the damaged batch
    clean = bytes(data[:bad])
    (tmp_path / "prefix-0").mkdir()
    (tmp_path / "prefix-0" / "00000000000000000000.log").write_bytes(clean)
    good = [r[2] for r in oracle.records_of(tmp_path / "prefix-0" / "00000000000000000000.log")]
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
    assert row["valid_bytes"] == bad
    assert "crc" in row["error"].lower()
    assert "LOG_CORRUPT" in [f["code"] for f in row["findings"]]
    assert row["last_offset"] == good[-1]


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

"""kafka-log on the real log dirs: exactly the records kafka-python finds, and exact offset/time slices."""

from __future__ import annotations

import json

import oracle
import pytest

import realworld

pytestmark = [pytest.mark.spark, pytest.mark.realworld, pytest.mark.slow]

SEEK_LOG_DIR = (
    "kraft-3.5-greenlemont-n1"  # __cluster_metadata-0: a 2 MB segment with a real offset/time index
)
SEEK_PARTITION = "__cluster_metadata-0"


def _spark_digest(df):
    rows = df.select("topic", "partition", "offset", "key", "value").collect()
    return oracle.digest((r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in rows)


def test_every_record_matches_kafka_python(spark, realworld_dir):
    expected = oracle.digest(
        (t, p, o, k, v)
        for log in realworld.files(suffix=".log")
        for t, p, o, _ts, k, v in oracle.records_of(log)
    )
    assert expected[0] > 100_000  # the whole realworld set, not a subset
    # every record: the internal topics too (left out by default, as Kafka's consumers do)
    df = spark.read.format("kafka-log").option("includeInternal", "true").load(str(realworld_dir))
    assert _spark_digest(df) == expected


def test_schema_starts_with_the_spark_kafka_source_columns(spark, realworld_dir):
    df = spark.read.format("kafka-log").load(str(realworld_dir / "zk-2.8-seanorth"))
    kafka = [(f.name, f.dataType.simpleString()) for f in df.schema.fields[:8]]
    assert kafka == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]


def _seek_records(realworld_dir):
    folder = realworld_dir / SEEK_LOG_DIR / SEEK_PARTITION
    recs = [r for log in sorted(folder.glob("*.log")) for r in oracle.records_of(log)]
    assert len(recs) > 1000
    return folder, recs


def test_offset_range_is_exact(spark, realworld_dir):
    folder, recs = _seek_records(realworld_dir)
    offsets = [r[2] for r in recs]
    start, end = offsets[len(offsets) // 3], offsets[2 * len(offsets) // 3]
    df = (
        spark.read.format("kafka-log")
        .option("startingOffsets", json.dumps({"__cluster_metadata": {"0": start}}))
        .option("endingOffsets", str(end))
        .load(str(folder))
    )
    got = sorted(r["offset"] for r in df.select("offset").collect())
    assert got == [o for o in offsets if start <= o < end]


def test_timestamp_range_is_exact(spark, realworld_dir):
    folder, recs = _seek_records(realworld_dir)
    stamps = sorted({r[3] for r in recs})
    t_start, t_end = stamps[len(stamps) // 4], stamps[3 * len(stamps) // 4]
    # Kafka's ListOffsets by timestamp: the first offset whose timestamp >= T
    first = min(r[2] for r in recs if r[3] >= t_start)
    last = min(r[2] for r in recs if r[3] >= t_end)
    df = (
        spark.read.format("kafka-log")
        .option("startingTimestamp", str(t_start))
        .option("endingTimestamp", str(t_end))
        .load(str(folder))
    )
    got = sorted(r["offset"] for r in df.select("offset").collect())
    assert got == [r[2] for r in recs if first <= r[2] < last]


def test_topics_option_takes_a_list_or_a_regex(spark, realworld_dir):
    base = realworld_dir / "zk-2.8-seanorth"
    listed = spark.read.format("kafka-log").option("topics", "__consumer_offsets").load(str(base))
    regex = spark.read.format("kafka-log").option("topics", "__consumer_.*").load(str(base))
    everything = spark.read.format("kafka-log").option("includeInternal", "true").load(str(base))
    expected = sum(1 for log in base.glob("__consumer_offsets-*/*.log") for _ in oracle.records_of(log))
    assert listed.count() == regex.count() == expected
    assert everything.count() > expected  # the other topics were filtered out, not lost
    # no topic named: the internal topics are left out (Kafka's exclude.internal.topics), the rest kept
    users = spark.read.format("kafka-log").load(str(base))
    assert users.count() == everything.count() - expected
    assert users.where("topic like '\\_\\_%'").count() == 0


def test_several_paths_by_list_or_commas(spark, realworld_dir):
    a, b = realworld_dir / "zk-2.8-seanorth", realworld_dir / "zk-3.6-saikrupa82-a"
    expected = sum(1 for d in (a, b) for log in d.glob("*/*.log") for _ in oracle.records_of(log))
    every = spark.read.format("kafka-log").option("includeInternal", "true")
    assert every.load([str(a), str(b)]).count() == expected
    assert every.load(f"{a},{b}").count() == expected


def test_segments_source_agrees_with_the_records(spark, realworld_dir):
    base = realworld_dir / "kraft-4.2-nomanazeem"
    segs = spark.read.format("kafka-log-segments").option("includeInternal", "true").load(str(base))
    rows = segs.collect()
    assert len(rows) == len(list(base.glob("*/*.log")))
    assert all(r["error"] is None and r["valid_bytes"] == r["size_bytes"] for r in rows)
    with_control = sum(
        1 for log in base.glob("*/*.log") for _ in oracle.records_of(log, include_control=True)
    )
    assert sum(r["record_count"] for r in rows) == with_control
    n = (
        spark.read.format("kafka-log")
        .options(includeControl="true", includeInternal="true")
        .load(str(base))
        .count()
    )
    assert n == with_control

"""The fleet census finds every planted fault of the demo fleet, and writes readable Parquet tables."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def census(spark, demo_fleet, tmp_path_factory):
    root = tmp_path_factory.mktemp("census")
    demo = demo_fleet  # read only (tests/conftest.py)
    result = run_census(spark, [str(demo.root)], root / "out", simulated_disks=demo.simulated_disks)
    return demo, result, root / "out"


def test_every_replica_is_counted_with_its_offsets(census):
    demo, result, _ = census
    assert result.brokers == 4  # three ZooKeeper-era brokers and the KRaft one
    got = {(r["broker"], r["topic"], r["partition"]): r for r in result.replicas}
    # (the KRaft broker's __cluster_metadata-0 is a row too)
    assert len(got) == len(demo.fleet.replicas) + len(demo.kraft.replicas) + 1
    for rep in demo.fleet.replicas + demo.kraft.replicas:
        row = got[(f"broker-{rep.broker_id}", rep.topic, rep.partition)]
        assert (row["log_start_offset"], row["log_end_offset"]) == (rep.log_start_offset, rep.log_end_offset)
        assert row["high_watermark"] == rep.high_watermark
        assert row["recovery_point"] == rep.recovery_point


def test_the_lagging_replica_is_found_with_its_lag(census):
    demo, result, _ = census
    lagging = [r for r in result.replicas if r["lag_offsets"] > 0]
    assert [(r["broker"], r["topic"], r["partition"]) for r in lagging] == [("broker-3", "orders", 1)]
    behind = demo.fleet.replica(3, "orders", 1)
    leader = max(
        (r for r in demo.fleet.replicas if (r.topic, r.partition) == ("orders", 1)),
        key=lambda r: r.log_end_offset,
    )
    assert lagging[0]["lag_offsets"] == leader.log_end_offset - behind.log_end_offset == 600
    assert lagging[0]["below_high_watermark"] is True
    assert lagging[0]["lag_bytes"] > 0
    part = next(p for p in result.partitions if (p["topic"], p["partition"]) == ("orders", 1))
    assert part["lagging_broker"] == "broker-3" and part["max_lag_offsets"] == 600


def test_planted_faults_are_findings_with_fix_commands(census):
    _demo, result, _ = census
    codes = {(f["code"], f["broker"]) for f in result.findings}
    assert ("REPLICA_LAG", "broker-3") in codes
    assert ("INDEX_CORRUPT", "broker-1") in codes  # the offset index that goes backwards
    assert ("RETENTION_RISK", "broker-2") in codes  # the zeroed time index
    assert ("LOG_DIR_NEARLY_FULL", "broker-2") in codes
    full = next(f for f in result.findings if f["code"] == "LOG_DIR_NEARLY_FULL")
    assert full["log_dir"].endswith("broker-2/kafka-logs-1")
    for f in result.findings:
        # broker-4's one-voter quorum (true of the data, not planted): Kafka's own tools add controllers
        assert f["fix_command"].startswith("logdoctor ") or f["code"] == "CONTROLLER_QUORUM_TOO_SMALL", f
    lag = next(f for f in result.findings if f["code"] == "REPLICA_LAG")
    assert lag["fix_command"].startswith("logdoctor sync-replica orders-1 --leader ")
    assert lag["fix_command"].endswith("--follower " + lag["log_dir"])
    # the demo's disks are simulated, its log dirs on one real file system: a move would free nothing
    # there (issue 32), so the fix is retention, not move-partition
    move = next(f for f in result.findings if f["code"] == "LOG_DIR_NEARLY_FULL")
    assert move["fix_command"] == f"logdoctor retention {move['log_dir']}"
    assert "move-partition" not in move["fix"]
    # the KRaft broker's replica moved by hand to the dir the metadata does not assign it to
    misplaced = [f for f in result.findings if f["code"] == "REPLICA_MISPLACED"]
    assert [(f["broker"], f["path"].rsplit("/", 2)[-2:]) for f in misplaced] == [
        ("broker-4", ["kafka-logs-1", "events-0"])
    ]
    assert misplaced[0]["fix_command"] == (
        f"logdoctor move-partition events-0 --from {misplaced[0]['log_dir']} --to "
        f"{misplaced[0]['log_dir'][: -len('1')]}0"
    )
    risk = next(f for f in result.findings if f["code"] == "RETENTION_RISK")
    assert (
        risk["fix_command"].startswith("logdoctor repair") and "--only RETENTION_RISK" in risk["fix_command"]
    )


def test_tables_are_written_as_parquet(census):
    demo, _result, out = census
    for name in ("partitions", "replicas", "log_dirs", "findings"):
        table = pq.read_table(out / name)
        assert table.num_rows > 0, name
    # the KRaft broker (broker-4): 4 replicas of `events`, its __cluster_metadata-0, two log dirs
    assert pq.read_table(out / "replicas").num_rows == len(demo.fleet.replicas) + len(demo.kraft.replicas) + 1
    # from the fleet specs: every topic's partitions, plus the KRaft broker's metadata log partition
    specs = (demo.fleet.spec, demo.kraft.spec)
    partitions = sum(t.partitions for spec in specs for t in spec.topics) + 1
    # and the __remote_log_metadata partition that holds the tiered partition's events (sample.remote_tier)
    tiered_meta = {(r.topic, r.partition) for r in demo.fleet.replicas if r.topic == "__remote_log_metadata"}
    partitions += len(tiered_meta)
    assert pq.read_table(out / "partitions").num_rows == partitions
    dirs = pq.read_table(out / "log_dirs").to_pylist()
    assert len(dirs) == sum(b.log_dirs for spec in specs for b in spec.brokers)
    assert all(d["disk_total_bytes"] for d in dirs)
    summary = (out / "summary.txt").read_text()
    assert "orders-1: broker-3 is 600 offsets" in summary


def test_segments_source_shows_the_retention_risk(spark, census):
    demo, _result, _ = census
    rep = demo.fleet.replica(2, "payments", 1)
    seg = rep.segments[0]
    row = spark.read.format("kafka-log-segments").load(str(seg.path)).collect()[0]
    assert "RETENTION_RISK" in [f["code"] for f in row["findings"]]
    assert row["time_index_max_timestamp"].timestamp() == 0  # what the broker would use: epoch 0
    assert int(row["max_timestamp"].timestamp() * 1000) == seg.max_timestamp
    assert row["error"] is None and row["valid_bytes"] == row["size_bytes"] == seg.size


def test_a_big_fleet_keeps_the_lagging_rows_first(spark, census, tmp_path, monkeypatch):
    """Past COLLECT_LIMIT rows the driver keeps the most lagging replicas and partitions (one sorted
    query after the count), and the totals are the written tables' row counts."""
    from logdoctor.spark import census_sql

    demo, _, _ = census
    monkeypatch.setattr(census_sql, "COLLECT_LIMIT", 3)
    result = run_census(spark, [str(demo.root)], tmp_path / "out")
    replicas = pq.read_table(tmp_path / "out" / "replicas").to_pylist()
    partitions = pq.read_table(tmp_path / "out" / "partitions").to_pylist()
    assert result.totals is not None
    assert result.totals["replicas"] == len(replicas) > 3
    assert result.totals["partitions"] == len(partitions) > 3
    assert len(result.replicas) == len(result.partitions) == 3

    # Spark's order: lag descending with nulls last, then the keys ascending with nulls first
    def by_lag(rows, lag, keys):
        def key(r):
            ranks = ((r[k] is not None, r[k] if r[k] is not None else "") for k in keys)
            return (r[lag] is None, -(r[lag] or 0), *ranks)

        return sorted(rows, key=key)

    want = by_lag(replicas, "lag_offsets", ("topic", "partition", "broker", "log_dir"))[:3]
    assert result.replicas == want
    assert (result.replicas[0]["broker"], result.replicas[0]["topic"], result.replicas[0]["partition"]) == (
        "broker-3",
        "orders",
        1,
    )
    assert result.partitions == by_lag(partitions, "max_lag_offsets", ("topic", "partition", "topic_id"))[:3]


def test_a_small_census_is_the_census_of_the_executors(spark, census, tmp_path, monkeypatch):
    """The demo fleet is a small census (scanned on the driver, one task per query: issue 35); made as a
    big fleet's (scans and findings on the executors, adaptive execution), every table and the summary
    are the same."""
    from logdoctor.spark import census as census_module
    from logdoctor.spark.census_inputs import classify

    demo, small, out = census
    assert census_module.is_small_fleet(spark, classify([str(demo.root)]))
    monkeypatch.setattr(census_module, "SMALL_FLEET_BROKERS", 0)
    big = run_census(
        spark, [str(demo.root)], tmp_path / "out", now_ms=small.now_ms, simulated_disks=demo.simulated_disks
    )
    _assert_same_census(tmp_path / "out", big, out, small)


def _fixed(row):  # the real file system's free space (statvfs) moves between two censuses
    live = ("disk_available_bytes", "disk_used_bytes", "disk_used_fraction", "disk_used_percent")
    return {k: v for k, v in row.items() if row.get("disk_source") != "statvfs" or k not in live}


def _rows(folder):  # the rows of a table, in any order: its files are as many as its Spark partitions
    table = pq.read_table(folder).to_pylist()
    return sorted(json.dumps(_fixed(r), sort_keys=True, default=str) for r in table)


def _assert_same_census(got_out, got_result, want_out, want_result):
    """Two censuses of one fleet wrote the same tables and summary."""
    for name in ("partitions", "replicas", "log_dirs", "findings", "consumer_groups"):
        assert _rows(got_out / name) == _rows(want_out / name), name
    want, got = want_result.to_json(), got_result.to_json()
    for json_out in (want, got):
        json_out.pop("out_dir"), json_out.pop("tables"), json_out["summary"].pop("elapsed_s")
        json_out["log_dirs"] = [_fixed(d) for d in json_out["log_dirs"]]
    assert got == want


def test_the_scans_started_before_spark_are_the_census_scans(spark, census, tmp_path):
    """`logdoctor census` of a small fleet starts its brokers' scans in a thread before Spark
    (census.scan_ahead): the census made with them writes the same tables and summary as the one that
    scans its brokers itself."""
    from logdoctor.spark.census import scan_ahead, small_inputs
    from logdoctor.spark.census_inputs import classify

    demo, small, out = census
    inputs = classify([str(demo.root)])
    assert small_inputs(inputs)
    scans = scan_ahead(inputs, small.now_ms, simulated_disks=demo.simulated_disks)
    ahead = run_census(
        spark, inputs, tmp_path / "out", now_ms=small.now_ms, simulated_disks=demo.simulated_disks,
        driver_scans=scans,
    )  # fmt: skip
    _assert_same_census(tmp_path / "out", ahead, out, small)

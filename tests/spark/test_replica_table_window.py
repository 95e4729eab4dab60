"""The census's replicas window (census_sql.replica_table) judged on rows made for it against the Python lag
rule (census_rules.replica_lag, checks.replica_lag) and the reference order (logdir.divergence.reference_key):
ties of epoch and log end broken by broker then log dir, the newest epoch over the longest log, replicas
without a log end or leader epochs, and paths of every form a row can carry (not only
``{log_dir}/{topic}-{partition}``: a log dir with a trailing slash, another mount, a lookalike) kept as they
are. A change that narrows the window's rows (dropping or rebuilding columns before its shuffle, a numeric
reference key) must keep these (BENCHMARKS.md, Census: one was measured and dropped)."""

from __future__ import annotations

from typing import Any

import pytest

from logdoctor.checks.replica_lag import partition_lag
from logdoctor.spark.census_inputs import REPLICA_DDL, ddl_names
from logdoctor.spark.census_rules import _lag_replica, replica_lag
from logdoctor.spark.census_sql import consumer_ranges, replica_table

pytestmark = pytest.mark.spark

LAG_COLUMNS = (
    "max_log_end_offset",
    "replica_count",
    "lag_offsets",
    "lag_bytes",
    "partition_high_watermark",
    "below_high_watermark",
)


def _row(broker: str, log_dir: str, topic: str, partition: int, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ddl_names(REPLICA_DDL))
    row.update(
        broker=broker,
        broker_id=int(broker.rsplit("-", 1)[-1]),
        log_dir=log_dir,
        topic=topic,
        partition=partition,
        kind="log",
        path=f"{log_dir}/{topic}-{partition}",
        cluster="c1",
        topic_id="AAAAAAAAAAAAAAAAAAAAAA",
        log_start_offset=0,
        segments=1,
    )
    row.update(kw)
    return row


def _epochs(*epochs: int) -> list[dict[str, int]]:
    return [{"epoch": e, "start_offset": 10 * i} for i, e in enumerate(epochs)]


ROWS = [
    # t-0: a tie of epoch and log end between broker-2 and broker-1 (two log dirs): broker-1's first dir leads
    _row(
        "broker-2",
        "/d/a",
        "t",
        0,
        log_end_offset=50,
        bytes=500,
        high_watermark=50,
        leader_epochs=_epochs(0, 3),
    ),
    _row(
        "broker-1", "/d/b", "t", 0, log_end_offset=50, bytes=400, high_watermark=40, leader_epochs=_epochs(3)
    ),
    _row(
        "broker-1",
        "/d/a",
        "t",
        0,
        log_end_offset=50,
        bytes=300,
        high_watermark=None,
        leader_epochs=_epochs(3),
    ),
    _row(
        "broker-3", "/d/a", "t", 0, log_end_offset=20, bytes=100, high_watermark=20, leader_epochs=_epochs(3)
    ),
    # t-1: the newest epoch leads over the longest log; paths not of the folder form are kept as they are
    _row(
        "broker-1", "/d/a/", "t", 1, log_end_offset=90, bytes=900, leader_epochs=_epochs(1), path="/d/a//t-1"
    ),
    _row(
        "broker-2",
        "/d/a",
        "t",
        1,
        log_end_offset=60,
        bytes=600,
        leader_epochs=_epochs(1, 2),
        path="/mnt/elsewhere/t-1",
    ),
    _row("broker-3", "/d/a", "t", 1, log_end_offset=None, bytes=None, leader_epochs=_epochs(2), path=None),
    # t-2: no epochs at all (a v0/v1 log): the longest log leads; a path that only looks alike
    _row("broker-1", "/d/a", "t", 2, log_end_offset=7, bytes=70, leader_epochs=[], path="/d/a/t-2.bak"),
    _row("broker-2", "/d/a", "t", 2, log_end_offset=9, bytes=90, leader_epochs=None),
    # t-4: a checkpoint whose last entry is not its largest epoch: the broker loads only the last (formats.
    # checkpoint.latest_epoch, tests/formats/test_checkpoint.py against Kafka's class), so broker-2 leads
    _row("broker-1", "/d/b", "t", 4, log_end_offset=90, bytes=900, leader_epochs=_epochs(5, 3)),
    _row("broker-2", "/d/a", "t", 4, log_end_offset=60, bytes=600, leader_epochs=_epochs(4)),
    # a replica that is not live: not in the table
    _row("broker-2", "/d/a", "t", 3, log_end_offset=9, kind="future", path="/d/a/t-3.0123-future"),
]


def test_the_window_keeps_every_path_and_the_lag_rules_reference(spark) -> None:
    frame = spark.createDataFrame([tuple(r[c] for c in ddl_names(REPLICA_DDL)) for r in ROWS], REPLICA_DDL)
    got = {(r["broker"], r["log_dir"], r["partition"]): r for r in replica_table(frame).toArrow().to_pylist()}
    live = [r for r in ROWS if r["kind"] == "log"]
    assert sorted(got) == sorted((r["broker"], r["log_dir"], r["partition"]) for r in live)
    want = {(r["broker"], r["log_dir"], r["partition"]): r for r in replica_lag([dict(r) for r in ROWS])}
    for key, row in got.items():
        assert row["path"] == want[key]["path"] and row["kind"] == "log", key
        assert {c: row[c] for c in LAG_COLUMNS} == {c: want[key][c] for c in LAG_COLUMNS}, key
    # the reference replica (leader_*) of each partition: the lag rule's own (reference_key's smallest)
    for partition in (0, 1, 2, 4):
        ref = partition_lag([_lag_replica(r) for r in live if r["partition"] == partition])[0].leader
        assert ref is not None
        for key, row in got.items():
            if key[2] == partition:
                assert (row["leader_broker"], row["leader_log_dir"], row["leader_log_end_offset"]) == (
                    ref.broker, ref.log_dir, ref.log_end_offset
                ), key  # fmt: skip
    assert got[("broker-1", "/d/a", 0)]["leader_log_dir"] == "/d/a"  # the tie: broker-1's first log dir
    assert {k: r["latest_epoch"] for k, r in got.items() if k[2] == 1} == {
        ("broker-1", "/d/a/", 1): 1, ("broker-2", "/d/a", 1): 2, ("broker-3", "/d/a", 1): 2
    }  # fmt: skip
    assert {k: (r["latest_epoch"], r["leader_broker"]) for k, r in got.items() if k[2] == 4} == {
        ("broker-1", "/d/b", 4): (3, "broker-2"), ("broker-2", "/d/a", 4): (4, "broker-2")
    }  # fmt: skip


def test_consumer_ranges_choose_the_reference_replica(spark) -> None:
    """The replica census_sql.consumer_ranges judges a partition's commits against (checks.consumer_groups
    choice_key's: the newest latest epoch, the longest log, the path) of the replicas with a log range."""
    frame = spark.createDataFrame([tuple(r[c] for c in ddl_names(REPLICA_DDL)) for r in ROWS], REPLICA_DDL)
    got = {r["partition"]: r["path"] for r in consumer_ranges(frame).toArrow().to_pylist()}
    assert got == {0: "/d/a/t-0", 1: "/mnt/elsewhere/t-1", 2: "/d/a/t-2", 4: "/d/a/t-4"}

"""TOPIC_ID_SHARED in the census (issue 32, item 13): two topics of one cluster whose partition.metadata
hold one topic id, found across brokers (each broker's scan sees one topic only), once per topic after
the first, and not a second time from the scans of a broker that holds both."""

from __future__ import annotations

import pytest

from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet
from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark
NOW = 1_790_000_000_000
ID = "AAAAAAAAAAAAAAAAAAAAAQ"
SMALL = {"records_per_partition": 20}


def test_census_finds_one_topic_id_on_two_topics_across_brokers(spark, tmp_path):
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=[
                TopicSpec("orders", partitions=1, replication_factor=1, topic_id=ID, **SMALL),
                TopicSpec("payments", partitions=2, replication_factor=1, topic_id=ID, **SMALL),
                TopicSpec("events", partitions=1, replication_factor=2, **SMALL),
            ],
            brokers=(BrokerSpec(0), BrokerSpec(1)),
        ),
    )
    orders = [d for ds in fleet.log_dirs.values() for d in ds if (d / "orders-0").is_dir()]
    payments = [d for ds in fleet.log_dirs.values() for d in ds if (d / "payments-0").is_dir()]
    assert orders and payments
    result = run_census(spark, [str(tmp_path / "fleet")], tmp_path / "out", now_ms=NOW)
    shared = [f for f in result.findings if f["code"] == "TOPIC_ID_SHARED"]
    assert len(shared) == 1, shared
    f = shared[0]
    assert f["severity"] == "error" and ID in f["message"]
    assert "topics orders, payments" in f["message"] and f["path"].endswith("payments-0/partition.metadata")
    assert not [f for f in result.findings if f["code"] == "TOPIC_RECREATED"]
    # the same rule at fleet scale as the scan's (checks.cross_dir): the scan of every log dir together
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    dirs = [str(d) for b in sorted(fleet.log_dirs) for d in fleet.log_dirs[b]]
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    scanned = [g for g in report.findings if g.code == "TOPIC_ID_SHARED"]
    assert [(g.code, g.path, g.message, g.fix) for g in scanned] == [
        (s["code"], s["path"], s["message"], s["fix"]) for s in shared
    ]

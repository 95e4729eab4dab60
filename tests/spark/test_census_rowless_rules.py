"""A small census runs no query for a cross-broker rule whose input rows its driver's scans know to be none
(issue 49: a census of three small brokers near Spark's floor): a fleet of one user topic has no
``__consumer_offsets``, ``__transaction_state`` or share-group rows, so CONSUMER_OFFSET_OUT_OF_RANGE,
TRANSACTION_STATE_MISMATCH and SHARE_GROUP_BEHIND_LOG_START are not asked for, and its tables are still
those the executors' census of the same fleet writes. A fleet with commits asks the consumer-offset rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet
from logdoctor.spark import census as census_module
from logdoctor.spark import census_sql
from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark

NOW = 1_790_000_000_000
RULES = ("consumer_offset_findings", "transaction_state_findings", "share_group_findings")


def _fleet(root: Path) -> Path:
    spec = FleetSpec(
        topics=[TopicSpec("orders", partitions=4, replication_factor=3, records_per_partition=50)],
        brokers=[BrokerSpec(i) for i in range(3)],
    )
    generate_fleet(root, spec)
    return root


def _asked(monkeypatch) -> list[str]:
    asked: list[str] = []
    for name in RULES:
        real = getattr(census_sql, name)

        def counted(*a, _real=real, _name=name, **k):
            asked.append(_name)
            return _real(*a, **k)

        monkeypatch.setattr(census_sql, name, counted)
    return asked


def test_rules_without_rows_run_no_query(spark, tmp_path: Path, monkeypatch) -> None:
    from test_census import _assert_same_census

    from logdoctor.spark.census_inputs import classify

    fleet = _fleet(tmp_path / "fleet")
    assert census_module.is_small_fleet(spark, classify([str(fleet)]))
    asked = _asked(monkeypatch)
    small = run_census(spark, [str(fleet)], tmp_path / "small", now_ms=NOW)
    assert asked == []
    monkeypatch.setattr(census_module, "SMALL_FLEET_BROKERS", 0)
    big = run_census(spark, [str(fleet)], tmp_path / "big", now_ms=NOW)
    assert sorted(asked) == sorted(RULES)  # the executors' census knows no row count: it asks each rule
    _assert_same_census(tmp_path / "big", big, tmp_path / "small", small)


def test_a_fleet_with_commits_asks_the_consumer_offset_rule(spark, tmp_path: Path, monkeypatch) -> None:
    from test_census_consumer_offsets_fleet import _brokers

    dirs = _brokers(tmp_path)  # ../shared/forensics' brokers, with their groups' commits
    asked = _asked(monkeypatch)
    run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    assert "consumer_offset_findings" in asked

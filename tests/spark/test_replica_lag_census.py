"""Issue 59 item 3: the census and the scan of several brokers' log dirs run one lag rule
(checks.replica_lag): the same REPLICA_LAG (code, path, offset, message, fix) and the same command; and a
census whose only replicas behind their leader diverged names them as diverged in its HTML report, never
"No replica is behind" and "0 lagging replicas" alone (../shared/forensics: wallet-0 on brokers 1 and 2)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.spark.census import run_census
from logdoctor.spark.census_rules import command_in_fix

pytestmark = pytest.mark.spark

NOW = 1_790_000_000_000


def test_the_census_and_the_scan_make_one_replica_lag(spark, tmp_path: Path) -> None:
    demo = generate_demo_fleet(tmp_path / "fleet", now_ms=NOW)
    dirs = [str(d) for b in (1, 2, 3) for d in demo.fleet.log_dirs[b]]
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW, simulated_disks=demo.simulated_disks), jobs=1)
    lags = [f for f in report.findings if f.code == "REPLICA_LAG"]
    scanned = [(f.code, f.path, f.offset, f.message, f.fix) for f in lags]
    result = run_census(spark, dirs, tmp_path / "census", now_ms=NOW, simulated_disks=demo.simulated_disks)
    rows = [f for f in pq.read_table(result.tables["findings"]).to_pylist() if f["code"] == "REPLICA_LAG"]
    assert [(f["code"], f["path"], f["offset"], f["message"], f["fix"]) for f in rows] == scanned != []
    assert [f["fix_command"] for f in rows] == [command_in_fix(c, fix) for c, *_, fix in scanned]


@pytest.mark.realworld
def test_the_census_report_names_the_diverged_replicas(spark, tmp_path: Path) -> None:
    from logdoctor.report import write_census_report

    root = realworld.require_forensics()
    dirs = [str(root / f"broker-{n}" / "kafka-logs") for n in (1, 2, 3)]
    result = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    diverged = sorted(f["path"] for f in result.findings if f["code"] == "REPLICA_DIVERGED")
    assert len(diverged) == 2
    page = write_census_report(result, tmp_path / "fleet.html", now_ms=NOW).read_text()
    assert "No replica is behind" not in page
    assert "2 diverged replica(s), not lagging" in page and all(p in page for p in diverged)
    assert "diverged replicas (REPLICA_DIVERGED)" in page  # the card beside "0 lagging replicas"

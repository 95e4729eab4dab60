"""Issue 59 item 3: one lag rule (checks.replica_lag) for the scan of several brokers' log dirs and the
census. The demo fleet's planted out-of-ISR replica (orders-1 on broker 3, 600 offsets behind, below the
high watermark) is a REPLICA_LAG of the scan of the three brokers' dirs together, as of the census
(tests/spark/test_replica_lag_census.py), and its fix command runs as printed; a scan of one broker
compares nothing."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.spark.census_rules import command_in_fix


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    return generate_demo_fleet(tmp_path_factory.mktemp("lag") / "fleet", now_ms=1_790_000_000_000)


def _dirs(demo, brokers=(1, 2, 3)) -> list[str]:
    return [str(d) for b in brokers for d in demo.fleet.log_dirs[b]]


def _scan(demo, dirs: list[str]):
    return scan(dirs, ScanOptions(Depth.DEFAULT, demo.now_ms, simulated_disks=demo.simulated_disks), jobs=1)


def test_the_scan_of_several_brokers_finds_the_lagging_replica(demo) -> None:
    report = _scan(demo, _dirs(demo))
    (lag,) = [f for f in report.findings if f.code == "REPLICA_LAG"]
    behind = demo.fleet.replica(3, "orders", 1)
    assert lag.path == str(Path(behind.log_dir) / "orders-1")
    assert lag.severity.label == "error" and lag.offset == behind.log_end_offset == 1400
    assert "orders-1 on broker-3 ends at offset 1400, 600 offsets" in lag.message
    assert "behind broker-1 (log end offset 2000); below the partition's high watermark 2000" in lag.message
    assert command_in_fix(lag.code, lag.fix).startswith("logdoctor sync-replica orders-1 --leader ")


def test_a_scan_of_one_broker_compares_no_replica(demo) -> None:
    assert not [f for f in _scan(demo, _dirs(demo, (3,))).findings if f.code == "REPLICA_LAG"]


def test_the_scans_lag_fix_runs_as_printed(demo) -> None:
    """The command the scan's REPLICA_LAG fix prints, run exactly as printed: the dry run's plan, exit 0."""
    report = _scan(demo, _dirs(demo))
    (lag,) = [f for f in report.findings if f.code == "REPLICA_LAG"]
    line = command_in_fix(lag.code, lag.fix)
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *shlex.split(line)[1:]]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (line, proc.stdout[-2000:], proc.stderr[-2000:])
    assert "dry run" in (proc.stdout + proc.stderr).lower()


def test_the_reference_replica_is_the_newest_leader_epochs_not_the_longest() -> None:
    """After an unclean election the longest log is the diverged one (broker 1: 1500 offsets in epoch 0);
    the replica that leads with the newest leader epoch (broker 2: epoch 2, 1300 offsets) is the reference
    (logdir.divergence.reference_key): broker 3 lags 300 behind broker 2, broker 2 lags behind nobody, and
    the high watermark the diverged copy checkpointed (1500) is not the partition's. The real incident:
    tests/brokers/test_broker_unclean_election.py."""
    from logdoctor.checks.replica_lag import LagReplica, lagging, partition_lag

    def rep(broker: str, leo: int, hw: int, epoch: int) -> LagReplica:
        return LagReplica(broker, f"/{broker}", f"/{broker}/t-0", "t", 0, leo, leo * 10, hw, epoch)

    lags = partition_lag(
        [rep("broker-1", 1500, 1500, 0), rep("broker-2", 1300, 1300, 2), rep("broker-3", 1000, 1000, 0)]
    )
    assert {x.replica.broker: x.leader.broker for x in lags if x.leader} == dict.fromkeys(
        ("broker-1", "broker-2", "broker-3"), "broker-2"
    )
    assert [x.lag_offsets for x in lags] == [0, 0, 300]
    assert lags[2].partition_high_watermark == 1300
    findings = lagging(lags, diverged={"/broker-1/t-0"})
    assert [f.path for f in findings] == ["/broker-3/t-0"]
    assert findings[0].fix_argv[0][-4:] == ("--leader", "/broker-2", "--follower", "/broker-3")

"""Issue 47, item 2: brokers of one cluster scanned together are not an error. ``scan`` of several brokers'
log dirs compares their replicas (REPLICA_DIVERGED) and says nothing else about them; a command that works
on one broker (``repair``) still refuses them with LOG_DIRS_OF_DIFFERENT_BROKERS."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import realworld
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

runner = CliRunner()


def _fleet(tmp_path: Path) -> list[str]:
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=(TopicSpec("orders", partitions=2, records_per_partition=20, replication_factor=3),),
            brokers=(BrokerSpec(1), BrokerSpec(2), BrokerSpec(3)),
        ),
    )
    return [str(d) for b in sorted(fleet.log_dirs) for d in fleet.log_dirs[b]]


def test_healthy_brokers_scanned_together_exit_0(tmp_path: Path) -> None:
    dirs = _fleet(tmp_path)
    res = runner.invoke(app, ["scan", "--jobs", "1", "--json", *dirs])
    codes = [f["code"] for f in json.loads(res.stdout)["findings"]]
    assert "LOG_DIRS_OF_DIFFERENT_BROKERS" not in codes
    assert res.exit_code in (0, 1), (res.exit_code, codes)
    assert not [c for c in codes if c.startswith("REPLICA_")]


def test_repair_of_several_brokers_still_says_so(tmp_path: Path) -> None:
    from logdoctor.repair.planner import plan_repair

    dirs = _fleet(tmp_path)
    _plan, report = plan_repair(dirs, backup_dir=str(tmp_path / "backup"), jobs=1)
    assert [f.code for f in report.findings].count("LOG_DIRS_OF_DIFFERENT_BROKERS") == 1


def test_forensics_scanned_together_find_the_divergence_and_no_broker_error() -> None:
    root = realworld.require_forensics()
    dirs = [str(root / f"broker-{n}" / "kafka-logs") for n in (1, 2, 3)]
    # a day after the data was written (2024-03-09), within retention: no RETENTION_DUE note
    res = runner.invoke(app, ["scan", "--jobs", "1", "--json", "--now", "2024-03-10T00:00:00Z", *dirs])
    codes = sorted(f["code"] for f in json.loads(res.stdout)["findings"])
    assert codes == ["REPLICA_DIVERGED", "REPLICA_DIVERGED", "TRANSACTION_HANGING"]
    assert res.exit_code == 2  # the divergence and the hanging transaction are errors; the brokers are not


def test_scan_help_says_several_brokers_find_divergence() -> None:
    res = runner.invoke(app, ["scan", "--help"], terminal_width=200)
    text = " ".join(res.stdout.split())
    assert "several brokers" in text and "divergence is found" in text


def test_a_plan_with_nothing_to_do_names_no_backup_dir(tmp_path: Path) -> None:
    """Issue 47: a repair whose findings it cannot change (a hanging transaction) printed "0 action(s), 0
    step(s); backup dir: ...": it says there is nothing to do."""
    root = realworld.require_forensics()
    copy = realworld.writable_copy(root / "broker-1", tmp_path / "broker-1")
    res = runner.invoke(app, ["repair", str(copy / "kafka-logs")], terminal_width=250)
    assert "TRANSACTION_HANGING" in res.stdout
    assert "0 action(s)" not in res.stdout and "backup dir" not in res.stdout
    assert "Nothing to do: no action, no backup." in res.stdout

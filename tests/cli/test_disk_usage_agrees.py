"""Every command says the same "used %" for one file system, and it is the number `df` prints:
census, the report, move-partition and sync-replica all go through logdoctor.logdir.disk.disk_usage."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from typer.testing import CliRunner

from logdoctor.checks import inventory
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.logdir import disk
from logdoctor.repair.procedures import common as procedures_common
from logdoctor.report import model
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet
from logdoctor.spark import census

runner = CliRunner()
T = TypeVar("T")


def _df_percent(path: Path) -> int:
    """What `df` prints in its Use% column for the file system holding ``path``."""
    if shutil.which("df") is None:
        pytest.skip("no df on this machine")
    out = subprocess.run(["df", "--output=pcent", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.splitlines()[1].strip().rstrip("%"))


def _df_around(path: Path, read: Callable[[], T]) -> tuple[T, range]:
    """``read()`` and the Use% values `df` printed just before and just after it. The file system is the
    machine's own, which a second suite beside this one fills and empties: what ``read`` saw lies between
    the two (one value on a quiet machine, so the check is exact there)."""
    before = _df_percent(path)
    got = read()
    after = _df_percent(path)
    return got, range(min(before, after), max(before, after) + 1)


def _broker(tmp_path: Path) -> tuple[Path, Path]:
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=2, records_per_partition=20, segment_bytes=4000)],
            brokers=(BrokerSpec(0, log_dirs=2),),
        ),
    )
    return fleet.log_dirs[0][0], fleet.log_dirs[0][1]


def test_the_old_definitions_are_gone() -> None:
    assert not hasattr(procedures_common, "disk_usage") and not hasattr(procedures_common, "DiskUsage")
    assert not hasattr(census, "DiskUsage") and inventory.disk_usage is disk.disk_usage  # census's rows
    assert model.disk_usage is disk.disk_usage


def _move_plan(src: Path, dst: Path) -> dict:
    part = next(p.name for p in sorted(src.iterdir()) if p.name.startswith("orders-"))
    r = runner.invoke(app, ["move-partition", part, "--from", str(src), "--to", str(dst), "--copy", "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_every_command_prints_df_use_percent_on_a_real_file_system(tmp_path: Path) -> None:
    src, dst = _broker(tmp_path)
    # move-partition: JSON and text
    plan, want = _df_around(src, lambda: _move_plan(src, dst))
    used = [u["used_percent"] for u in plan["summary"]["disk_usage_before"]]
    assert len(used) == 2 and used[0] == used[1] in want
    r, want = _df_around(
        src, lambda: runner.invoke(app, ["move-partition", "orders-0", "--from", str(src), "--to", str(dst)])
    )
    assert r.exit_code == 0, r.output
    shown = {int(x) for x in re.findall(r"bytes used \((\d+)%, as df prints it\)", r.stdout)}
    assert len(shown) == 1 and shown <= set(want)
    # census (the executor side, no Spark needed) and the report built from its rows
    rows, want = _df_around(
        src, lambda: census.scan_broker(census.discover_brokers([str(src.parent)])[0], now_ms=0)["log_dirs"]
    )
    percents = {d["disk_used_percent"] for d in rows}
    assert len(percents) == 1 and percents <= set(want)
    assert {census.used_pct(d) for d in rows} == {f"{p}%" for p in percents}
    data = model.from_census({"replicas": [], "log_dirs": rows}, now_ms=0)
    assert {d.used_percent for d in data.disks} == percents


def test_every_command_agrees_on_the_sample_fleets_simulated_disks(tmp_path: Path) -> None:
    """The demo fleet's nearly full disk is simulated only where it is passed explicitly (the census and
    the report agree on it); a command run on the same log dirs reads the real file system."""
    demo = generate_demo_fleet(tmp_path / "fleet")
    assert not list((tmp_path / "fleet").rglob("df.json"))  # nothing on disk carries the simulation
    table = demo.simulated_disks
    broker_dir = next(Path(p).parent for p in table)
    brokers = census.discover_brokers([str(broker_dir)])
    rows = census.scan_broker(brokers[0], now_ms=0, simulated_disks=table)["log_dirs"]
    assert demo.fleet.log_dirs
    for d in rows:
        entry = table[d["log_dir"]]
        used = entry.total_bytes - entry.available_bytes
        want = -(-100 * used // (used + entry.available_bytes))  # df: ceil(100 * used / (used + avail))
        assert d["disk_used_percent"] == want and d["disk_source"] == "simulated"
        view = model.from_census({"replicas": [], "log_dirs": [d]}, now_ms=0).disks[0]
        assert view.used_percent == want
    full = [d for d in rows if d["disk_used_percent"] >= 90]
    assert len(rows) == 2 and len(full) == 1  # the demo's nearly full log dir (97%)
    assert full[0]["disk_used_percent"] == 97
    src = Path(full[0]["log_dir"])
    dst = next(Path(d["log_dir"]) for d in rows if d["log_dir"] != full[0]["log_dir"])
    plan, want = _df_around(src, lambda: _move_plan(src, dst))
    by_path = {u["path"]: u["used_percent"] for u in plan["summary"]["disk_usage_before"]}
    assert by_path[str(src)] in want  # the real disk, as df prints it

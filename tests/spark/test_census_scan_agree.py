"""Issue 47: one judge for a broker and a fleet. The census of a set of brokers gives every finding the
scan of their log dirs together gives, with the same code, path, offset, message (its numbers) and fix;
it adds only fleet-wide findings (catalog scope "fleet"). On ../shared/forensics (diverged replicas and a
hanging transaction) and on every realworld multi-broker set of one cluster. The census's fix command of
each is the command the scan's fix gives (never `logdoctor scan`), and a diverged replica gets no
REPLICA_LAG and no sync-replica advice."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks import catalog
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark

NOW = 1_790_000_000_000
FLEET = set(catalog.codes("fleet"))

SETS = {
    "forensics": None,
    "tuyen-nnt": ("zk-3.0-tuyen-nnt-b0", "zk-3.0-tuyen-nnt-b1", "zk-3.0-tuyen-nnt-b2"),
    "greenlemont": ("kraft-3.5-greenlemont-n1", "kraft-3.5-greenlemont-n2", "kraft-3.5-greenlemont-n3"),
    "nikhildighe": ("zk-3.7-nikhildighe-b0", "zk-3.7-nikhildighe-b1"),
}


def _dirs(name: str) -> list[str]:
    if SETS[name] is None:
        root = realworld.require_forensics()
        return [str(root / f"broker-{n}" / "kafka-logs") for n in (1, 2, 3)]
    rw = realworld.require()
    return [str(rw / n) for n in SETS[name]]


def _key(code: str, path: str, offset: int | None, message: str, fix: str) -> tuple:
    return (code, path, offset, message, fix)


def _census_keys(result, scanned: Counter) -> Counter:
    """The census's findings of the scan's rules: every code but those only the fleet view makes (a code
    of scope "fleet" the scan makes too, LOG_DIR_NEARLY_FULL, is compared)."""
    rows = pq.read_table(result.tables["findings"]).to_pylist()
    keys = (_key(f["code"], f["path"], f["offset"], f["message"], f["fix"]) for f in rows)
    by_scan = {k[0] for k in scanned}
    return Counter(k for k in keys if k[0] not in FLEET or k[0] in by_scan)


@pytest.mark.realworld
@pytest.mark.parametrize("name", sorted(SETS))
def test_census_gives_the_scans_findings(spark, tmp_path: Path, name: str) -> None:
    dirs = _dirs(name)
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    scanned = Counter(_key(f.code, f.path, f.offset, f.message, f.fix) for f in report.findings)
    result = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    rows = pq.read_table(result.tables["findings"]).to_pylist()
    assert _census_keys(result, scanned) == scanned
    assert "LOG_DIRS_OF_DIFFERENT_BROKERS" not in {f["code"] for f in rows}
    # census only (catalog scope "fleet", left out of the comparison above): once per cluster of fewer than
    # 3 voters, as the dirs' quorum-state JSON names them (greenlemont: 3, none; the others: ZooKeeper)
    states = [Path(d) / "__cluster_metadata-0" / "quorum-state" for d in dirs]
    voters = {len(json.loads(s.read_text())["currentVoters"]) for s in states if s.exists()}
    assert "CONTROLLER_QUORUM_TOO_SMALL" not in {f.code for f in report.findings}
    small = [f for f in rows if f["code"] == "CONTROLLER_QUORUM_TOO_SMALL"]
    assert len(small) == (1 if voters & {1, 2} else 0) and (voters == {3}) == (name == "greenlemont")
    for f in rows:
        assert not (f["fix_command"] or "").startswith("logdoctor scan"), f
    diverged = {f["path"] for f in rows if f["code"] == "REPLICA_DIVERGED"}
    lag = [f for f in rows if f["code"] == "REPLICA_LAG" and f["path"] in diverged]
    assert lag == []
    assert not [f for f in rows if f["path"] in diverged and "sync-replica" in (f["fix_command"] or "")]
    if name == "forensics":
        assert len(diverged) == 2
        hanging = [f for f in rows if f["code"] == "TRANSACTION_HANGING"]
        (d,) = [f.details for f in report.findings if f.code == "TRANSACTION_HANGING"]
        assert [f["fix_command"] for f in hanging] == [d["command_for_running_cluster"]]
        # nor is a diverged replica called lagging in the summary or the command's table: it is named as
        # diverged, never as "every replica at its log end offset" (issue 59 item 3)
        summary = (Path(result.out_dir) / "summary.txt").read_text()
        assert "Lagging replicas: 0" in summary
        assert "Diverged replicas (REPLICA_DIVERGED: they lose records on fetching): 2" in summary
        assert all(f"  {p}" in summary for p in diverged)
        from rich.console import Console

        from logdoctor.cli.census import render_census

        console = Console(record=True, width=400)
        render_census(console, result)
        text = console.export_text()
        assert "Every replica is at its partition's log end offset." not in text
        assert "2 diverged replica(s), not lagging" in text and all(p in text for p in diverged)
        for f in rows:
            if f["code"] == "REPLICA_DIVERGED":
                assert (
                    f["fix_command"].startswith("logdoctor export ") and f"`{f['fix_command']}`" in f["fix"]
                )


def _run(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``line`` as printed, from ``cwd`` (a salvage export writes under the directory it is run from)."""
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *shlex.split(line)[1:]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, cwd=cwd)


@pytest.mark.realworld
@pytest.mark.parametrize("name", ["forensics", "tuyen-nnt"])
def test_every_census_fix_runs_as_printed(spark, tmp_path: Path, name: str) -> None:
    """Each fix command of the census, run as printed on a copy of the brokers: no usage error (64), no
    refusal (78), no missing input (66), no tool failure (70). A command for the running cluster
    (kafka-transactions.sh) is the scan's, word for word."""
    dirs = []
    for i, d in enumerate(_dirs(name)):
        dirs.append(str(realworld.writable_copy(d, tmp_path / f"b{i}" / Path(d).name)))
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    for_cluster = {f.details.get("command_for_running_cluster") for f in report.findings} - {None}
    result = run_census(spark, dirs, tmp_path / "census", now_ms=NOW)
    ran: Counter[str] = Counter()
    for f in pq.read_table(result.tables["findings"]).to_pylist():
        line = f["fix_command"] or ""
        if line.startswith("kafka-"):
            assert line in for_cluster, line
            continue
        if not line:
            continue
        assert line.startswith("logdoctor "), line
        proc = _run(line, tmp_path)
        assert proc.returncode not in (64, 66, 70, 78), (line, proc.stdout[-1500:], proc.stderr[-1500:])
        ran[f["code"]] += 1
    if name == "forensics":
        # the two diverged replicas' salvage exports, and `logdoctor retention` of each RETENTION_DUE (the
        # data is past retention at NOW)
        assert ran["REPLICA_DIVERGED"] == 2 and for_cluster
        assert set(ran) <= {"REPLICA_DIVERGED", "RETENTION_DUE"}, ran


def test_census_of_the_demo_fleet_gives_the_scans_findings(spark, demo_fleet, tmp_path: Path) -> None:
    """The demo fleet (three brokers of one cluster and a KRaft broker of its own cluster, planted faults,
    simulated disks): the census's findings of scope scan are the scan's of every log dir together."""
    demo = demo_fleet  # read only (tests/conftest.py)
    dirs = [str(d) for f in (demo.fleet, demo.kraft) if f for b in sorted(f.log_dirs) for d in f.log_dirs[b]]
    now = demo.now_ms
    options = ScanOptions(Depth.DEFAULT, now, simulated_disks=demo.simulated_disks)
    report = scan(dirs, options, jobs=1)
    scanned = Counter(_key(f.code, f.path, f.offset, f.message, f.fix) for f in report.findings)
    disks = demo.simulated_disks
    out = tmp_path / "census"
    result = run_census(spark, [str(demo.root)], out, now_ms=now, simulated_disks=disks)
    assert _census_keys(result, scanned) == scanned


def test_every_census_fix_of_the_demo_fleet_runs_as_printed(spark, tmp_path: Path) -> None:
    """The demo fleet's planted faults (a lagging replica, a nearly full disk, corrupt indexes, ...): every
    fix command the census prints runs as printed (their dry runs: nothing is changed)."""
    from logdoctor.sample.fleet import generate_demo_fleet

    demo = generate_demo_fleet(tmp_path / "fleet")
    result = run_census(
        spark,
        [str(tmp_path / "fleet")],
        tmp_path / "census",
        now_ms=demo.now_ms,
        simulated_disks=demo.simulated_disks,
    )
    lines = sorted(
        {f["fix_command"] for f in result.findings if (f["fix_command"] or "").startswith("logdoctor ")}
    )
    assert any(" sync-replica " in line for line in lines), lines
    for line in lines:
        proc = _run(line, tmp_path)
        assert proc.returncode not in (64, 66, 70, 78), (line, proc.stdout[-1500:], proc.stderr[-1500:])

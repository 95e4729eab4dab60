"""kill -9 the repair at every step (and at every phase of each kind of step): --resume ends repaired,
--rollback ends byte-identical. A held broker lock, too little space and a dry run write nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage
from test_repair_realworld import REPAIRED, damage_log_dir
from typer.testing import CliRunner

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401
from logdoctor.cli.main import app
from logdoctor.repair import apply_plan, plan_repair, resume, rollback
from logdoctor.repair import backup as bk
from logdoctor.repair.apply import RefusedError

NAME = "kraft-3.5-greenlemont-single"
SRC = Path(__file__).resolve().parents[2] / "src"


def _clone(src: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


@pytest.fixture(scope="module")
def damaged(tmp_path_factory, realworld_dir) -> Path:
    root = tmp_path_factory.mktemp("template") / "logs"
    damage.copy_log_dir(realworld_dir / NAME, root)
    damage_log_dir(root, 2)  # with an unreadable .timeindex (owner and mode too)
    return root


@pytest.fixture(scope="module")
def reference(damaged, tmp_path_factory) -> tuple[dict, int]:
    """The tree an uninterrupted repair leaves, and its number of steps."""
    work = tmp_path_factory.mktemp("reference")
    root = _clone(damaged, work / "logs")
    plan, _ = plan_repair([root], backup_dir=str(work / "backup"), jobs=1)
    assert apply_plan(plan).status == "applied"
    return damage.tree(root), len(plan.steps)


def _crash_run(root: Path, backup: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    e = {**os.environ, "PYTHONPATH": str(SRC), **env}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom logdoctor.cli.main import main\nsys.argv[0] = 'logdoctor'\nmain()",
            "repair",
            str(root),
            "--apply",
            "--backup-dir",
            str(backup),
            "--jobs",
            "1",
        ],
        env=e,
        capture_output=True,
        timeout=300,
    )


def _check_crashed_then(
    tmp_path: Path, damaged: Path, reference: tuple[dict, int], env: dict[str, str]
) -> None:
    """One crashed run (the crash points are deterministic), then --resume from a copy of what it left
    (cp -a: contents, modes, owners, times) and --rollback from the very files, moved back to the paths
    its journal names."""
    original = damage.tree(damaged)
    root = _clone(damaged, tmp_path / "logs")
    backup = tmp_path / "backup"
    proc = _crash_run(root, backup, env)
    assert proc.returncode == -9, (env, proc.returncode, proc.stderr.decode()[-2000:])
    journal = backup / "journal.jsonl"
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for p in (root, backup):
        p.rename(crashed / p.name)
        _clone(crashed / p.name, p)
    res = resume(journal, crash=None)
    assert res.status == "applied", (env, res.error)
    assert damage.tree(root) == reference[0], env
    left = [
        f.code for f in scan([root], ScanOptions(depth=Depth.DEFAULT), jobs=1).findings if f.code in REPAIRED
    ]
    assert not left, (env, left)
    for p in (root, backup):
        shutil.rmtree(p)
        (crashed / p.name).rename(p)
    res = rollback(journal)
    assert res.status == "rolled-back", (env, res.error)
    assert damage.tree(root) == original, env


@pytest.mark.slow
def test_crash_after_every_step(tmp_path, damaged, reference):
    steps = reference[1]
    assert steps >= 10
    for n in range(1, steps):  # after the last step there is nothing left to crash
        d = tmp_path / f"n{n}"
        d.mkdir()
        _check_crashed_then(d, damaged, reference, {"LOGDOCTOR_CRASH_AFTER_STEP": str(n)})


@pytest.mark.slow
def test_crash_at_every_phase_of_each_kind_of_step(tmp_path, damaged, reference):
    plan, _ = plan_repair([damaged], backup_dir=str(tmp_path / "unused"), jobs=1)
    firsts: dict[str, int] = {}
    for s in plan.steps:
        firsts.setdefault(s.op, s.number)
    assert {"write", "truncate", "move", "rename", "chmod"} <= set(firsts)
    for op, n in sorted(firsts.items()):
        phases = ["begin", "applied", "verified"]
        if op in ("write", "truncate"):
            phases.append("backed-up")
        if op == "write":
            phases.append("temp-written")
        if op == "chmod":
            phases.append("owner-set")  # new owner, old mode (a SIGKILL between chown and chmod)
        for phase in phases:
            d = tmp_path / f"{op}-{phase}"
            d.mkdir()
            _check_crashed_then(d, damaged, reference, {"LOGDOCTOR_CRASH_AT": f"{n}:{phase}"})


def test_held_lock_refuses_without_writing(tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / NAME, tmp_path / "logs")
    damage_log_dir(root, 0)
    before = damage.tree(root, with_mtime=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom logdoctor.logdir.lock import hold_lock\n"
            # held until the test is done with it (its stdin closed, or killed), not for a fixed time a
            # loaded machine can outlast
            f"with hold_lock({str(root)!r}):\n    print('held', flush=True)\n    sys.stdin.read()\n",
        ],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        before = damage.tree(root, with_mtime=True)
        listing = sorted(os.listdir(tmp_path))
        result = CliRunner().invoke(app, ["repair", str(root), "--apply", "--jobs", "1"])
        assert result.exit_code == 75, result.output
        assert damage.tree(root, with_mtime=True) == before
        assert sorted(os.listdir(tmp_path)) == listing  # no backup dir either
    finally:
        holder.kill()
        holder.wait()


def test_dry_run_writes_nothing_and_shows_the_plan(tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / NAME, tmp_path / "logs")
    damage_log_dir(root, 0)
    time.sleep(0.01)
    before = damage.tree(root, with_mtime=True)
    listing = sorted(os.listdir(tmp_path))
    result = CliRunner().invoke(app, ["repair", str(root), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "truncate-log" in result.output and "rebuild-indexes" in result.output
    # the checkpoint diffs, against what the damage planted and what kafka-python reads of the log:
    # the stale count line corrected to the entries, the high watermark beyond the log end lowered to it
    rp = (root / "recovery-point-offset-checkpoint").read_text().splitlines()
    count, entries = int(rp[1]), len([ln for ln in rp[2:] if ln.strip()])
    assert count == entries + 1
    out = result.output
    assert f"\n      -{count}\n" in out and f"\n      +{entries}\n" in out
    hw = next(
        ln
        for ln in (root / "replication-offset-checkpoint").read_text().splitlines()
        if ln.endswith(" 1000000000")
    )
    topic, num, _ = hw.split()
    leo = max(damage.read_records(root)[f"{topic}-{num}"]) + 1
    assert f"\n      -{topic} {num} 1000000000\n" in out and f"\n      +{topic} {num} {leo}\n" in out
    assert damage.tree(root, with_mtime=True) == before
    assert sorted(os.listdir(tmp_path)) == listing
    js = CliRunner().invoke(app, ["repair", str(root), "--json", "--jobs", "1"])
    plan = json.loads(js.output)["plan"]
    kinds = {a["kind"] for a in plan["actions"]}
    assert {
        "truncate-log",
        "rebuild-indexes",
        "rewrite-checkpoint",
        "resolve-orphans",
        "fix-permissions",
    } <= kinds
    assert damage.tree(root, with_mtime=True) == before


def test_no_space_refuses_without_writing(tmp_path, realworld_dir, monkeypatch):
    root = damage.copy_log_dir(realworld_dir / NAME, tmp_path / "logs")
    damage_log_dir(root, 0)
    plan, _ = plan_repair([root], backup_dir=str(tmp_path / "backup"), jobs=1)
    before = damage.tree(root, with_mtime=True)

    class Tiny:
        f_bavail = 10
        f_frsize = 4096

    monkeypatch.setattr(bk.os, "statvfs", lambda p: Tiny())
    with pytest.raises(bk.NoSpaceError):
        apply_plan(plan)
    assert damage.tree(root, with_mtime=True) == before
    assert not (tmp_path / "backup").exists()


def test_changed_target_refuses_without_writing(tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / NAME, tmp_path / "logs")
    damage_log_dir(root, 0)
    plan, _ = plan_repair([root], backup_dir=str(tmp_path / "backup"), jobs=1)
    target = next(Path(s.path) for s in plan.steps if s.op == "truncate")
    with open(target, "ab") as f:
        f.write(b"more")  # the broker (or someone) wrote after the plan was made
    before = damage.tree(root, with_mtime=True)
    with pytest.raises(RefusedError):
        apply_plan(plan)
    assert damage.tree(root, with_mtime=True) == before
    assert not (tmp_path / "backup").exists()

"""SIGKILL from outside: `repair --apply`, `move-partition --apply` and `sync-replica --apply` run as
subprocesses (the real command line) on generated log dirs and are killed at seeded random moments
within the measured duration of an uninterrupted run; then `--resume JOURNAL` or `--rollback JOURNAL`
(seeded; nothing when no journal was written yet). After a resume every record (kafka-python) and
every checkpoint entry equals what the uninterrupted run left; after a rollback, or when the kill
came before the journal's plan record, the tree is byte-identical to the original (contents, modes,
owners).

Unlike the crash hooks (LOGDOCTOR_CRASH_AT), nothing in the process cooperates: the kill lands
wherever the run happens to be (planning, staging, inside a copy, an fsync, the post-scan).

50 trials per command in the slow set (LOGDOCTOR_KILL_TRIALS overrides), 3 in the fast set. The
outcome counts are printed (``pytest -s``) and, when LOGDOCTOR_KILL_REPORT names a file, appended
to it as one JSON line per command (the README's reliability section quotes them)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage
from test_repair_realworld import damage_log_dir

import cli_runs
from logdoctor.formats.checkpoint import parse_offset_checkpoint
from logdoctor.sample.logdir import (
    BrokerSpec,
    FleetSpec,
    LaggingReplica,
    TopicSpec,
    generate_fleet,
    generate_log_dir,
)

SRC = Path(__file__).resolve().parents[2] / "src"
CLI = [sys.executable, "-m", "logdoctor"]
CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
SLOW_TRIALS = int(os.environ.get("LOGDOCTOR_KILL_TRIALS", "50"))
FAST_TRIALS = 3


def _run(args: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    for var in ("LOGDOCTOR_CRASH_AT", "LOGDOCTOR_CRASH_AFTER_STEP"):
        env.pop(var, None)  # nothing cooperates here
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=300, **kw)


@dataclass
class Scenario:
    """One command on a template tree: ``apply_args(root, backup)`` is the `--apply` command line for a
    copy of the template at ``root``; ``log_dirs`` are the log dirs relative to ``root``."""

    command: str  # the subcommand that resumes / rolls back its own journal
    template: Path
    log_dirs: list[str]
    apply_args: Callable[[Path, Path], list[str]]
    original: dict | None = None
    reference: dict | None = None  # the tree an uninterrupted run leaves
    reference_records: dict | None = None
    reference_checkpoints: dict | None = None
    duration: float = 0.0  # wall time of the uninterrupted run (the kill window)
    apply_start: float = 0.0  # when its journal's plan record appeared (the writes begin)


def _clone(template: Path, root: Path) -> Path:
    subprocess.run(["cp", "-a", str(template), str(root)], check=True)
    return root


def _records(root: Path, log_dirs: list[str]) -> dict:
    return {d: damage.read_records(root / d) for d in log_dirs}


def _checkpoints(root: Path, log_dirs: list[str]) -> dict:
    """Every entry of every offset checkpoint, parsed strictly (the count line must match, as the
    broker reads it)."""
    out = {}
    for d in log_dirs:
        for name in CHECKPOINTS:
            p = root / d / name
            if p.exists():
                out[(d, name)] = parse_offset_checkpoint(p.read_bytes(), source=str(p)).offsets()
    return out


def _prepare(s: Scenario, work: Path) -> Scenario:
    """Measure an uninterrupted run on a copy; record the original and the reference results."""
    s.original = damage.tree(s.template)
    root = _clone(s.template, work / "reference")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("LOGDOCTOR_CRASH_AT", None)
    env.pop("LOGDOCTOR_CRASH_AFTER_STEP", None)
    journal = work / "reference-backup" / "journal.jsonl"
    t0 = time.monotonic()
    proc = subprocess.Popen([*CLI, *s.apply_args(root, work / "reference-backup")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    while proc.poll() is None:  # when the journal's plan record (the commit point) is written
        if not s.apply_start and _committed(journal):
            s.apply_start = time.monotonic() - t0
        time.sleep(0.002)
    s.duration = time.monotonic() - t0
    out_text, err_text = proc.communicate()
    assert proc.returncode in (0, 1), out_text[-2000:] + err_text[-2000:]
    s.apply_start = s.apply_start or 0.0
    assert damage.tree(root) != s.original
    s.reference = damage.tree(root)
    s.reference_records = _records(root, s.log_dirs)
    assert sum(len(r) for parts in s.reference_records.values() for r in parts.values()) > 0
    s.reference_checkpoints = _checkpoints(root, s.log_dirs)
    shutil.rmtree(root)
    shutil.rmtree(work / "reference-backup")
    return s


def _committed(journal: Path) -> bool:
    """The journal's first line (the plan record, the commit point) is complete."""
    try:
        return journal.read_bytes().split(b"\n", 1)[0].endswith(b"}")
    except OSError:
        return False


def _trial(s: Scenario, work: Path, seed: int, finish_in_process: bool) -> str:
    """One kill; returns the outcome: finished (before the kill), untouched (no journal yet),
    resumed or rolled-back. The killed run is always a process of its own; the --resume or --rollback
    after it too, or (``finish_in_process``: the same command line, its output, exit code and writes)
    run in this process (tests/cli_runs.py), which saves an interpreter's start and imports a trial."""
    rng = random.Random(f"{s.command}:{seed}")
    # a third of the kills at any moment of the run (start-up, planning, the post-scan); the rest
    # while it writes: after this run's own journal plan record appears, within the time the
    # uninterrupted run spent writing (where the risk is)
    anywhere = rng.random() < 1 / 3
    # (skewed to the start of the writes: under load a run's tail is mostly its final verification)
    delay = rng.uniform(0.0, s.duration) if anywhere else (s.duration - s.apply_start) * rng.random() ** 2
    finish = "resume" if seed % 2 else "rollback"
    root = _clone(s.template, work / "root")
    backup = work / "backup"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("LOGDOCTOR_CRASH_AT", None)
    env.pop("LOGDOCTOR_CRASH_AFTER_STEP", None)
    proc = subprocess.Popen(
        [*CLI, *s.apply_args(root, backup)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    if not anywhere:
        journal = backup / "journal.jsonl"
        while proc.poll() is None and not _committed(journal):
            time.sleep(0.001)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)  # a no-op when it already exited (not yet reaped: no pid reuse)
    _, err = proc.communicate(timeout=300)
    what = (s.command, seed, f"{delay:.3f}s", finish)
    if proc.returncode != -signal.SIGKILL:
        assert proc.returncode in (0, 1), (*what, proc.returncode, err[-2000:])
        assert damage.tree(root) == s.reference, what
        outcome = "finished"
    else:
        journal = backup / "journal.jsonl"
        if not _committed(journal):
            # killed before the journal's plan record (the commit point): nothing was written
            assert damage.tree(root) == s.original, what
            outcome = "untouched"
        else:
            args = [s.command, f"--{finish}", str(journal), "--apply", "--json"]
            out = cli_runs.logdoctor(*args) if finish_in_process else _run(args)
            doc = json.loads(out.stdout)
            if finish == "resume":
                assert doc["result"]["status"] == "applied", (*what, doc["result"])
                assert out.returncode in (0, 1), (*what, out.returncode, out.stderr[-2000:])
                assert _records(root, s.log_dirs) == s.reference_records, what
                assert _checkpoints(root, s.log_dirs) == s.reference_checkpoints, what
                assert damage.tree(root) == s.reference, what
                outcome = "resumed"
            else:
                assert doc["result"]["status"] == "rolled-back", (*what, doc["result"])
                assert damage.tree(root) == s.original, what
                outcome = "rolled back"
    shutil.rmtree(root)
    shutil.rmtree(backup, ignore_errors=True)
    return outcome


def _trials(s: Scenario, work: Path, n: int, first_seed: int, finish_in_process: bool = False) -> Counter:
    counts: Counter = Counter()
    t0 = time.monotonic()
    for seed in range(first_seed, first_seed + n):
        counts[_trial(s, work, seed, finish_in_process)] += 1
    took = time.monotonic() - t0
    line = {
        "command": s.command,
        "trials": n,
        "seeds": [first_seed, first_seed + n - 1],
        "kill_window_s": round(s.duration, 3),
        "writes_from_s": round(s.apply_start, 3),
        "outcomes": dict(sorted(counts.items())),
        "seconds": round(took, 1),
    }
    print(f"\nexternal kill: {json.dumps(line)}")
    report = os.environ.get("LOGDOCTOR_KILL_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(json.dumps(line) + "\n")
    assert sum(counts.values()) == n
    return counts


# --- the three commands on generated data -------------------------------------------------------


def _repair_scenario(work: Path) -> Scenario:
    """One broker's log dir (damage as test_crash_and_refusals plants it: torn tail, padded and
    unreadable indexes, bad checkpoints, orphans, owners and modes; the copies are chowned)."""
    gen, _ = generate_log_dir(
        work / "gen",
        [
            TopicSpec("orders", partitions=4, records_per_partition=3000, records_per_batch=5,
                      value_size=400, segment_bytes=1_000_000),
            TopicSpec("events", partitions=2, records_per_partition=600, segment_bytes=100_000),
        ],
        seed=15,
    )
    template = work / "template"
    root = damage.copy_log_dir(gen, template / "logs")
    damage_log_dir(root, 2)
    return Scenario(
        "repair",
        template,
        ["logs"],
        lambda r, b: ["repair", str(r / "logs"), "--apply", "--backup-dir", str(b), "--jobs", "1"],
    )


def _move_scenario(work: Path) -> Scenario:
    """Two log dirs of one broker; the partitions of the first dir copied (`--copy`: copy, verify,
    delete) to the other dir with their checkpoint entries."""
    fleet = generate_fleet(
        work / "template",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=4, records_per_partition=6000, records_per_batch=5,
                              value_size=400, segment_bytes=1_000_000)],
            brokers=(BrokerSpec(0, log_dirs=2),),
            seed=15,
        ),
    )
    src, dst = (p.relative_to(fleet.root) for p in fleet.log_dirs[0])
    # the fleet spreads partitions over the broker's dirs: move every orders partition of the first
    moved = sorted(p.name for p in (fleet.root / src).iterdir() if p.name.startswith("orders-"))
    assert len(moved) >= 2, moved
    return Scenario(
        "move-partition",
        fleet.root,
        [str(src), str(dst)],
        lambda r, b: ["move-partition", *moved, "--from", str(r / src),
                      "--to", str(r / dst), "--copy", "--apply", "--backup-dir", str(b)],
    )


def _sync_scenario(work: Path) -> Scenario:
    """A follower 2,000 of 6,000 records behind; its copy replaced by the leader's, checkpoints synced."""
    fleet = generate_fleet(
        work / "template",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=2, replication_factor=2, records_per_partition=6000,
                              records_per_batch=5, value_size=400, segment_bytes=1_000_000,
                              leader_epochs=3)],
            brokers=(BrokerSpec(0), BrokerSpec(1)),
            faults=[LaggingReplica(1, "orders", 0, 2000)],
            seed=15,
        ),
    )
    leader, follower = (fleet.log_dirs[b][0].relative_to(fleet.root) for b in (0, 1))
    return Scenario(
        "sync-replica",
        fleet.root,
        [str(leader), str(follower)],
        lambda r, b: ["sync-replica", "orders-0", "--leader", str(r / leader), "--follower",
                      str(r / follower), "--apply", "--backup-dir", str(b)],
    )


@pytest.fixture(scope="module")
def repair_scenario(tmp_path_factory) -> Scenario:
    work = tmp_path_factory.mktemp("kill-repair")
    return _prepare(_repair_scenario(work), work)


@pytest.fixture(scope="module")
def move_scenario(tmp_path_factory) -> Scenario:
    work = tmp_path_factory.mktemp("kill-move")
    return _prepare(_move_scenario(work), work)


@pytest.fixture(scope="module")
def sync_scenario(tmp_path_factory) -> Scenario:
    work = tmp_path_factory.mktemp("kill-sync")
    return _prepare(_sync_scenario(work), work)


def _slow(s: Scenario, tmp_path: Path) -> None:
    # the fast set finishes each command in a process of its own; these in this process
    counts = _trials(s, tmp_path, SLOW_TRIALS, 1000, finish_in_process=True)
    # the kills land in the apply, not only before or after it (else the test would prove little)
    if SLOW_TRIALS >= 50:
        assert counts["resumed"] >= 8 and counts["rolled back"] >= 8, counts


@pytest.mark.needs_root
def test_repair_killed_from_outside(tmp_path, repair_scenario):
    _trials(repair_scenario, tmp_path, FAST_TRIALS, 1)


def test_move_partition_killed_from_outside(tmp_path, move_scenario):
    _trials(move_scenario, tmp_path, FAST_TRIALS, 1)


def test_sync_replica_killed_from_outside(tmp_path, sync_scenario):
    _trials(sync_scenario, tmp_path, FAST_TRIALS, 1)


@pytest.mark.slow
@pytest.mark.needs_root
def test_repair_killed_from_outside_50(tmp_path, repair_scenario):
    _slow(repair_scenario, tmp_path)


@pytest.mark.slow
def test_move_partition_killed_from_outside_50(tmp_path, move_scenario):
    _slow(move_scenario, tmp_path)


@pytest.mark.slow
def test_sync_replica_killed_from_outside_50(tmp_path, sync_scenario):
    _slow(sync_scenario, tmp_path)

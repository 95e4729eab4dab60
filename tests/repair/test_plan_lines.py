"""What repair, move-partition and sync-replica print for people is the same written without rich (off a
terminal: cli.lines.PlainLines) as through rich (``COLUMNS=10000``, the width rich is given off a
terminal: cli.lines.RichLines): every line of the plan, the dry run, the run's status and paths, what is
left after it, the journal's dry run and its rollback, on damaged generated log dirs, a two-broker fleet
and a copy of a real log dir. The backup dir's name holds rich markup, an emoji code and a non-ASCII
letter, so its lines go both ways (written as they are, or through rich's escapes)."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import damage
import pytest
from test_repair_realworld import damage_log_dir

import realworld
from logdoctor.sample.logdir import (
    BrokerSpec,
    FleetSpec,
    LaggingReplica,
    TopicSpec,
    generate_fleet,
    generate_log_dir,
)

CLI = "import sys\nfrom logdoctor.cli.main import main\nsys.argv[0] = 'logdoctor'\nmain()"
PLAIN = {"PATH": "/usr/bin:/bin"}
RICH = {**PLAIN, "COLUMNS": "10000"}
BACKUP = "backup [bold]x[/bold] :thumbs_up: é"


# a file system's use as df prints it (cli.procedure): the disk is shared, its figures move between runs
_DF = re.compile(r"[\d,]+ of ([\d,]+) bytes used \(\d+%, as df prints it\), [\d,]+ available")


def _cli(env: dict[str, str], *args: object) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", CLI, *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    return (
        done.returncode,
        _DF.sub(r"U of \1 bytes used (P%, as df prints it), A available", done.stdout),
        done.stderr,
    )


def _both(template: Path, work: Path, runs: Callable[[Path, Path], list[list[object]]]) -> list[tuple]:
    """Each of ``runs(root, backup)``'s calls in turn on a fresh copy of ``template`` at ``work``, once
    written without rich and once through it; their (exit code, stdout, stderr) compared."""
    seen = {}
    for name, env in (("plain", PLAIN), ("rich", RICH)):
        shutil.rmtree(work, ignore_errors=True)
        root = work / "logs"
        work.mkdir(parents=True)
        subprocess.run(["cp", "-a", str(template), str(root)], check=True)
        seen[name] = [_cli(env, *args) for args in runs(root, work / BACKUP)]
    for i, (plain, rich) in enumerate(zip(seen["plain"], seen["rich"], strict=True)):
        if plain != rich:
            diff = difflib.unified_diff(
                rich[1].splitlines(), plain[1].splitlines(), "rich", "plain", lineterm=""
            )
            raise AssertionError(f"run {i}, exit codes {rich[0]} {plain[0]}:\n" + "\n".join(list(diff)[:40]))
    return seen["plain"]


def _repair_runs(root: Path, backup: Path) -> list[list[object]]:
    journal = backup / "journal.jsonl"
    return [
        ["repair", root, "--backup-dir", backup],
        ["repair", root, "--verbose", "--deep", "--backup-dir", backup],
        ["repair", root, "--apply", "--backup-dir", backup],
        ["repair", root, "--backup-dir", backup],  # after it: nothing to repair, or what is left
        ["repair", "--rollback", journal],
        ["repair", "--rollback", journal, "--apply"],
        ["repair", "--resume", journal],
    ]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("plan-lines")
    gen, _ = generate_log_dir(
        work / "gen",
        [
            TopicSpec(
                "orders", partitions=2, records_per_partition=600, records_per_batch=5, segment_bytes=50_000
            )
        ],
        seed=44,
    )
    root = damage.copy_log_dir(gen, work / "template" / "logs")
    damage_log_dir(root, 1)
    return root


def test_repair_of_a_damaged_log_dir(tmp_path: Path, damaged: Path) -> None:
    out = _both(damaged, tmp_path / "w", _repair_runs)
    plan, _deep, applied, _after, preview, rolled_back, _resume = out
    assert plan[0] == 0 and "Dry run: nothing was written." in plan[1]
    assert "[1] " in plan[1] and "    why: " in plan[1]
    assert applied[1].count("applied: ") == 1 and f"backup dir: {tmp_path / 'w' / BACKUP}" in applied[1]
    assert "--rollback " in preview[1] and "would undo" in preview[1]
    assert "rolled-back: " in rolled_back[1]


@pytest.mark.realworld
def test_repair_of_a_copy_of_a_real_log_dir(tmp_path: Path) -> None:
    template = tmp_path / "template"
    realworld.writable_copy(realworld.require() / "zk-corrupt-znsio", template)
    out = _both(template, tmp_path / "w", _repair_runs)
    assert out[0][1].strip()


def test_move_partition_and_sync_replica(tmp_path: Path) -> None:
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=[
                TopicSpec(
                    "orders",
                    partitions=2,
                    replication_factor=2,
                    records_per_partition=240,
                    segment_bytes=5000,
                    records_per_batch=2,
                    leader_epochs=3,
                )
            ],
            brokers=(BrokerSpec(0, log_dirs=2), BrokerSpec(1)),
            faults=[LaggingReplica(1, "orders", 0, 70)],
        ),
    )
    for d in (p for dirs in fleet.log_dirs.values() for p in dirs):
        (d / ".lock").unlink(missing_ok=True)
    template = fleet.log_dirs[0][0].parent.parent

    def runs(root: Path, backup: Path) -> list[list[object]]:
        rel = {b: [root / p.relative_to(template) for p in dirs] for b, dirs in fleet.log_dirs.items()}
        (src, dst), (follower,) = rel[0], rel[1]
        moved = sorted(p.name for p in src.iterdir() if p.name.startswith("orders-"))
        leader = next(d for d in (src, dst) if (d / "orders-0").is_dir())
        journal = backup / "journal.jsonl"
        sync_backup = backup.with_name(backup.name + " sync")
        return [
            ["move-partition", *moved, "--from", src, "--to", dst, "--backup-dir", backup],
            ["move-partition", *moved, "--from", src, "--to", dst, "--apply", "--backup-dir", backup],
            ["move-partition", "--rollback", journal],
            ["move-partition", "--rollback", journal, "--apply"],
            [
                "sync-replica",
                "orders-0",
                "--leader",
                leader,
                "--follower",
                follower,
                "--backup-dir",
                sync_backup,
            ],
            [
                "sync-replica",
                "orders-0",
                "--leader",
                leader,
                "--follower",
                follower,
                "--apply",
                "--backup-dir",
                sync_backup,
            ],
        ]

    out = _both(template, tmp_path / "w", runs)
    assert [code for code, _out, _err in out] == [0] * len(out), [err for _c, _o, err in out]
    assert "verified: every file at the destination matches the source" in out[1][1]
    assert "disk usage now:" in out[5][1]

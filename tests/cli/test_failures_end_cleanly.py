"""Failures that end cleanly (issue 24): the exit code of each failure is the README table's (sysexits.h
for what went wrong with the call or the tool), with one line saying what happened and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import realworld
from logdoctor.cli.common import ExitCode

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "procedures"))
import helpers  # noqa: E402

ENTRY = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"


def logdoctor(*args: object, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
    """The `logdoctor` command as an operator runs it (its own process, the real entry point)."""
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        **kw,
    )


def clean_log_dir(root: Path) -> Path:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(root / "fleet", [TopicSpec("orders", records_per_partition=5)])
    return log_dir


# --- exit codes ---------------------------------------------------------------------------------------


def test_an_unknown_command_is_a_usage_error_64() -> None:
    out = logdoctor("no-such-command")
    assert out.returncode == ExitCode.USAGE, out.stderr  # click says 2: "errors in the data" here
    assert "No such command" in out.stderr and out.stdout == ""


def test_logdoctor_alone_prints_the_commands_on_stderr_and_exits_64() -> None:
    out = logdoctor()
    assert out.returncode == ExitCode.USAGE
    assert out.stdout == ""  # the README: "prints the list of commands on stderr"
    assert "Usage: logdoctor" in out.stderr and "repair" in out.stderr


@pytest.mark.parametrize("command", ["scan", "retention", "inventory"])
def test_a_missing_server_properties_file_is_no_input_66(tmp_path: Path, command: str) -> None:
    log_dir = clean_log_dir(tmp_path)
    missing = tmp_path / "server.properties"
    extra = ["--out", tmp_path / "inv.parquet"] if command == "inventory" else []
    out = logdoctor(command, log_dir, "--server-properties", missing, *extra)
    assert out.returncode == ExitCode.NO_INPUT, out.stderr
    assert out.stderr.strip() == f"error: --server-properties {missing}: No such file or directory"


def test_a_held_lock_with_nothing_to_repair_is_locked_75(tmp_path: Path) -> None:
    log_dir = clean_log_dir(tmp_path)
    assert logdoctor("repair", log_dir).returncode == ExitCode.OK  # nothing to repair
    with helpers.broker_holding_lock(log_dir) as pid:
        out = logdoctor("repair", "--apply", log_dir)
    assert out.returncode == ExitCode.LOCKED, out.stdout + out.stderr
    assert out.stderr.startswith("refused (nothing written): ") and f"locked by pid {pid}" in out.stderr
    assert out.stdout == ""  # refused before planning: no plan printed for a run that cannot happen


@pytest.mark.realworld
def test_a_resumed_repair_exits_as_the_same_repair_run_straight_through(tmp_path: Path) -> None:
    """A real ZooKeeper-era log dir (unclean shutdown: a warning repair leaves; missing indexes: repaired)
    repaired straight through exits 1; the same repair killed after step 2 and resumed exits 1 too, with
    the same warning left (it exited 0, the warning unsaid)."""
    src = realworld.require() / "zk-3.0-tuyen-nnt-b1"
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    realworld.writable_copy(src, straight)
    realworld.writable_copy(src, killed)
    ref = logdoctor("repair", "--apply", straight, "--backup-dir", tmp_path / "b1")
    assert ref.returncode == ExitCode.WARNINGS, ref.stdout + ref.stderr
    crashed = logdoctor(
        "repair", "--apply", killed, "--backup-dir", tmp_path / "b2", env={"LOGDOCTOR_CRASH_AFTER_STEP": "2"}
    )
    assert crashed.returncode == -9
    resumed = logdoctor("repair", "--resume", tmp_path / "b2" / "journal.jsonl", "--apply")
    assert resumed.returncode == ref.returncode, resumed.stdout + resumed.stderr
    assert "still found: WARNING UNCLEAN_SHUTDOWN" in " ".join(resumed.stdout.split())

"""What repair, move-partition and sync-replica print for people is the same written without rich (off a
terminal: cli.lines.PlainLines) as through rich (``COLUMNS=10000``, the width rich is given off a
terminal: cli.lines.RichLines): every line of the plan, the dry run, the run's status and paths, what is
left after it, the journal's dry run and its rollback, on the writing commands' cases of write_runs.py
(a damaged generated log dir, two log dirs of a broker, a lagging follower) and a copy of a real log dir.
The backup dir's name holds rich markup, an emoji code and a non-ASCII letter, so its lines go both ways
(written as they are, or through rich's escapes)."""

from __future__ import annotations

import difflib
import re
import subprocess
from pathlib import Path

import pytest
from write_runs import Case, cli_argv, clone, move_case, repair_case, sync_case

import realworld
import tiers

PLAIN = {"PATH": "/usr/bin:/bin"}
RICH = {**PLAIN, "COLUMNS": "10000"}
BACKUP = "backup [bold]x[/bold] :thumbs_up: é"
# a file system's use as df prints it (cli.procedure): the disk is shared, its figures move between runs
_DF = re.compile(r"[\d,]+ of ([\d,]+) bytes used \(\d+%, as df prints it\), [\d,]+ available")


def _cli(env: dict[str, str], args: list[str]) -> tuple[int, str, str]:
    done = subprocess.run(cli_argv(*args), capture_output=True, text=True, env=env, timeout=300)
    out = _DF.sub(r"U of \1 bytes used (P%, as df prints it), A available", done.stdout)
    return done.returncode, out, done.stderr


def _runs(case: Case, root: Path, backup: Path) -> list[list[str]]:
    """The case's dry run, --apply, the journal's dry runs and its rollback; for repair also --deep
    --verbose and the dry run after the apply."""
    apply = case.args(root, backup)
    dry = [a for a in apply if a != "--apply"]
    journal = str(backup / "journal.jsonl")
    runs = [dry, apply]
    if case.command == "repair":
        runs = [dry, [*dry, "--deep", "--verbose"], apply, dry]
    return [
        *runs,
        [case.command, "--rollback", journal],
        [case.command, "--rollback", journal, "--apply"],
        [case.command, "--resume", journal],
    ]


def _both(case: Case, work: Path) -> list[tuple[int, str, str]]:
    """The case's runs in turn on a fresh copy of its template at ``work``, once written without rich and
    once through it; their (exit code, stdout, stderr) compared."""
    seen = {}
    for name, env in (("plain", PLAIN), ("rich", RICH)):
        work.mkdir()
        root = clone(case.template, work / "t")
        seen[name] = [_cli(env, args) for args in _runs(case, root, work / BACKUP)]
        subprocess.run(["rm", "-rf", str(work)], check=True)
    for i, (plain, rich) in enumerate(zip(seen["plain"], seen["rich"], strict=True)):
        if plain != rich:
            diff = difflib.unified_diff(
                rich[1].splitlines(), plain[1].splitlines(), "rich", "plain", lineterm=""
            )
            raise AssertionError(f"run {i}, exit codes {rich[0]} {plain[0]}:\n" + "\n".join(list(diff)[:40]))
    return seen["plain"]


# test-fast runs repair's case (and the real log dir's below); the lines themselves, plain against rich, are
# tests/cli/test_lines.py's property tests: move-partition's and sync-replica's whole runs only in make test
@pytest.mark.parametrize(
    "make_case",
    [
        pytest.param(f, id=f.__name__, marks=tiers.marks(f is repair_case))
        for f in (repair_case, move_case, sync_case)
    ],
)
def test_the_writing_commands_print_the_same_lines_without_rich(tmp_path: Path, make_case) -> None:
    case = make_case(tmp_path / "case")
    out = _both(case, tmp_path / "w")
    dry, applied = out[0], out[2 if case.command == "repair" else 1]
    preview, rolled_back = out[-3], out[-2]
    assert "Dry run: nothing was written." in dry[1] and "[1] " in dry[1]
    assert applied[1].count("applied: ") == 1 and f"backup dir: {tmp_path / 'w' / BACKUP}" in applied[1]
    assert "--rollback " in preview[1] and "would undo" in preview[1]
    assert "rolled-back: " in rolled_back[1]
    if case.command != "repair":
        assert applied[0] == 0 and "verified: every file at the destination matches the source" in applied[1]
        assert "disk usage now:" in applied[1]


@pytest.mark.realworld
def test_repair_of_a_copy_of_a_real_log_dir(tmp_path: Path) -> None:
    template = tmp_path / "template"
    realworld.writable_copy(realworld.require() / "zk-corrupt-znsio", template / "logs")
    case = Case(
        "repair",
        template,
        ["logs"],
        lambda r, b: ["repair", str(r / "logs"), "--apply", "--backup-dir", str(b)],
    )
    out = _both(case, tmp_path / "w")
    assert out[0][1].strip()

"""One table of exit codes (docs/exit-codes.md) = one enum (ExitCode); each command's error paths exit
with it; and help that reads like kafka-dump-log's: metavars, never Python types, required options said so."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import logdoctor
import realworld
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.common import ExitCode
from logdoctor.cli.main import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
COMMANDS = [info.name for info in app.registered_commands]


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args], terminal_width=200)


# --- the table ---------------------------------------------------------------------------------------


def _docs_table() -> dict[int, tuple[str, str]]:
    text = (REPO / "docs" / "exit-codes.md").read_text()
    section = text.split("# Exit codes", 1)[1]
    rows = re.findall(r"^\| (\d+) \| `([A-Z_]+)` \| (.+?) \|$", section, re.MULTILINE)
    return {int(code): (name, meaning) for code, name, meaning in rows}


def test_the_docs_table_is_the_enum() -> None:
    table = _docs_table()
    assert table == {int(c): (c.name, c.meaning) for c in ExitCode}


def test_the_codes_follow_fsck_and_sysexits() -> None:
    # fsck: 0 clean, 1 corrected/warnings, 2+ errors; sysexits.h (BSD): the values of the names
    sysexits = {"USAGE": 64, "NO_INPUT": 66, "UNAVAILABLE": 69, "SOFTWARE": 70, "CANT_CREATE": 73}
    sysexits |= {"IO_ERROR": 74, "LOCKED": 75, "NO_PERMISSION": 77, "REFUSED": 78, "CHANGED": 65}
    assert {n: ExitCode[n].value for n in sysexits} == sysexits
    assert (ExitCode.OK, ExitCode.WARNINGS, ExitCode.ERRORS) == (0, 1, 2)
    assert len({c.value for c in ExitCode}) == len(ExitCode)


# --- error paths of every command -------------------------------------------------------------------


def test_no_command_is_a_usage_error_with_the_help() -> None:
    code = "from logdoctor.cli.main import main; main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == ExitCode.USAGE
    assert "Usage: " in out.stdout + out.stderr and "scan" in out.stdout + out.stderr
    assert invoke("--help").exit_code == ExitCode.OK


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_a_usage_error(command: str) -> None:
    r = invoke(command, "--no-such-option", "x")
    assert r.exit_code == ExitCode.USAGE, r.output


@pytest.mark.parametrize("command", ["dump", "scan", "retention", "schemas", "export", "census", "repair"])
def test_no_argument_is_a_usage_error(command: str) -> None:
    r = invoke(command)
    assert r.exit_code == ExitCode.USAGE, r.output


@pytest.mark.parametrize(
    "args",
    [
        lambda m: ["dump", m / "00000000000000000000.log"],
        lambda m: ["scan", m],
        lambda m: ["retention", m],
        lambda m: ["schemas", m],
        lambda m: ["schemas", m.parent, "--schemas", m],
        lambda m: ["repair", m],
        lambda m: ["repair", "--resume", m / "journal.jsonl"],
        lambda m: ["repair", "--rollback", m / "journal.jsonl"],
        lambda m: ["move-partition", "t-0", "--from", m, "--to", m.parent],
        lambda m: ["move-partition", "--resume", m / "journal.jsonl"],
        lambda m: ["sync-replica", "t-0", "--leader", m, "--follower", m.parent],
        lambda m: ["sync-replica", "--rollback", m / "journal.jsonl"],
        lambda m: ["census", m, "--out", m.parent / "census"],
        lambda m: ["export", m, "--out", m.parent / "export"],
    ],
)
def test_a_missing_input_is_no_input(tmp_path: Path, args) -> None:
    missing = tmp_path / "missing"
    r = invoke(*args(missing))
    assert r.exit_code == ExitCode.NO_INPUT, r.output
    assert "no such file" in r.stderr


@pytest.mark.realworld
def test_repair_of_a_log_dir_a_broker_holds_is_locked(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "procedures"))
    import helpers

    d = tmp_path / "b"
    realworld.writable_copy(realworld.require() / "zk-3.0-tuyen-nnt-b1", d)
    (d / "00000000000000000000.stray").write_bytes(b"x")  # something to repair
    with helpers.broker_holding_lock(d):
        r = invoke("repair", "--apply", d)
    assert r.exit_code == ExitCode.LOCKED, r.output


@pytest.mark.realworld
def test_sync_between_clusters_is_refused_for_the_state(tmp_path: Path) -> None:
    rw = realworld.require()
    a, b = tmp_path / "a", tmp_path / "b"
    realworld.writable_copy(rw / "zk-3.0-tuyen-nnt-b0", a)
    realworld.writable_copy(rw / "zk-2.8-seanorth", b)
    part = next(p.name for p in sorted(a.iterdir()) if p.name.startswith("__consumer_offsets-"))
    r = invoke("sync-replica", part, "--leader", a, "--follower", b)
    assert r.exit_code == ExitCode.REFUSED, r.output
    assert r.stderr.startswith("refused (nothing written):")


# --- help ----------------------------------------------------------------------------------------------

_PYTHON_TYPES = re.compile(
    r"<[a-z][a-z _\[\]|]*>|list\[|\{[a-z_]+\}|\b(bool|int|str|float|Path|NoneType)\b|int range|x>=|x<="
)


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_shows_metavars_never_python_types(command: str | None) -> None:
    r = invoke(*([command] if command else []), "--help")
    assert r.exit_code == 0, r.output
    hits = [m.group(0) for m in _PYTHON_TYPES.finditer(r.stdout)]
    assert hits == [], r.stdout


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("dump", "logdoctor dump [OPTIONS] FILE..."),
        ("scan", "logdoctor scan [OPTIONS] LOGDIR..."),
        ("retention", "logdoctor retention [OPTIONS] LOGDIR..."),
        ("schemas", "logdoctor schemas [OPTIONS] PATH..."),
        ("repair", "logdoctor repair [OPTIONS] [LOGDIR]..."),
        ("move-partition", "logdoctor move-partition --from LOGDIR --to LOGDIR [OPTIONS]"),
        ("sync-replica", "logdoctor sync-replica --leader LOGDIR --follower LOGDIR [OPTIONS]"),
        ("census", "logdoctor census [OPTIONS] PATH..."),
        ("demo", "logdoctor demo [OPTIONS] [DIR]"),
    ],
)
def test_usage_lines_name_what_to_give(command: str, usage: str) -> None:
    r = invoke(command, "--help")
    assert usage in " ".join(r.stdout.split()), r.stdout


@pytest.mark.parametrize(
    ("command", "options"),
    [("move-partition", ("--from", "--to")), ("sync-replica", ("--leader", "--follower"))],
)
def test_options_required_to_plan_say_so(command: str, options: tuple[str, ...]) -> None:
    text = " ".join(invoke(command, "--help").stdout.replace("│", " ").split())
    for opt in options:
        assert re.search(rf"{opt} LOGDIR [^│]*?Required, except with --resume/--rollback\.", text), text


def test_required_options_are_marked() -> None:
    text = invoke("census", "--help").stdout
    out_line = next(ln for ln in text.splitlines() if "--out" in ln)
    assert out_line.lstrip("│ ").startswith("*") and "DIR" in out_line


@pytest.mark.skipif(
    os.geteuid() != 0,
    reason="needs root to run the command as the unprivileged user 'nobody' (setpriv)",
)
@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "{d}"],
        ["retention", "{d}"],
        ["repair", "{d}"],
        ["move-partition", "orders-0", "--from", "{d}", "--to", "{d}"],
        ["sync-replica", "orders-0", "--leader", "{d}", "--follower", "{d}"],
    ],
    ids=lambda a: a[0],
)
def test_a_log_dir_this_user_cannot_list_exits_77_not_usage(argv: list[str]) -> None:
    """An unreadable log dir is a permission problem (77, NO_PERMISSION), not a usage error
    (64, what the CLI framework's own readable check said) and not a tool failure (70)."""
    import tempfile

    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    # not under pytest's tmp_path: its parent is root's 0700, so nobody could not reach the log dir at all
    top = Path(tempfile.mkdtemp(prefix="logdoctor-noperm-"))
    try:
        log_dir, _ = generate_log_dir(top / "fleet", [TopicSpec("orders", records_per_partition=5)])
        for folder in (top, top / "fleet", log_dir.parent):
            folder.chmod(0o755)
        log_dir.chmod(0o700)  # root's; nobody can't list it
        _run_as_nobody_expecting_77(argv, log_dir)
    finally:
        shutil.rmtree(top)


_AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
_MAIN = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"


@functools.cache
def _nobody_cannot_import() -> str | None:
    """Why the user 'nobody' cannot import this checkout's logdoctor, or None: a clone below a folder closed
    to other users (`mktemp -d` makes 0700 ones) is out of its reach, the code and the venv alike."""
    done = subprocess.run([*_AS_NOBODY, "import logdoctor.cli.main"], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["no message"])[-1]
    checkout = Path(logdoctor.__file__).parents[2]
    return (  # "required:": in CI (a clone others can reach) this skip fails the run (tests/conftest.py)
        f"required: the user 'nobody' (uid 65534) imports logdoctor; it cannot from {checkout} ({last}): "
        "a folder above the checkout is closed to other users; clone it where others can reach it"
    )


def _run_as_nobody_expecting_77(argv: list[str], log_dir: Path) -> None:
    reason = _nobody_cannot_import()
    if reason is not None:
        pytest.skip(reason)
    args = [a.format(d=log_dir) for a in argv]
    done = subprocess.run(
        [*_AS_NOBODY, _MAIN, *args],
        capture_output=True,
        text=True,
    )
    assert done.returncode == ExitCode.NO_PERMISSION, done.stderr
    assert done.stderr.strip() == (
        f"error: {log_dir}: permission denied: this user cannot list the log dir "
        "(run logdoctor as the broker's user or as root)"
    )

"""``logdoctor repair LOGDIR... [FLAGS] [--backup-dir DIR] [--only CODES]`` runs without the CLI framework
(:mod:`logdoctor.cli.fast`, :func:`logdoctor.cli.repair_fast.run_fast`): the same stdout, stderr, exit
code and written files as the typer command, on every real log dir (the plan) and on copies of real log
dirs repaired (--apply), any other call still parsed by typer, and the fast call importing no typer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import cli_in_process
import pytest

import realworld
import tiers
from logdoctor.cli.repair_fast import COUNTS, FLAGS, VALUES, run_fast

# The typer command, reached as main() reaches it for any call the fast path declines.
_THROUGH_TYPER = (
    "import sys\n"
    "from logdoctor.cli import registry\n"
    "from logdoctor.cli.app import app\n"
    "registry.load(registry.find('repair'))\n"
    "sys.argv = ['logdoctor', 'repair', *sys.argv[1:]]\n"
    "app()\n"
)
_THROUGH_MAIN = (
    "import sys\n"
    "from logdoctor.cli.main import main\n"
    "sys.argv = ['logdoctor', 'repair', *sys.argv[1:]]\n"
    "main()\n"
)
# the plan's time of making, and the default backup dir's name made of it: not compared
_CREATED = re.compile(r'"created_ms": \d+|logdoctor-backup-\d{8}T\d{6}\.\d{9}Z-\d+')


_ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "120"}


def _run(program: str, args: list[str], here: Path | None = None) -> tuple[int, str, str]:
    """Exit code, stdout, stderr; ``here`` (a copy's folder) written as HERE, so that two copies compare."""
    done = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, env=_ENV)
    return _comparable(done.returncode, done.stdout, done.stderr, here)


def _comparable(code: int, out: str, err: str, here: Path | None) -> tuple[int, str, str]:
    if here is not None:
        out, err = out.replace(str(here), "HERE"), err.replace(str(here), "HERE")
    return code, _CREATED.sub("TIME", out), err


def _typer_in_process(args: list[str], here: Path | None = None) -> tuple[int, str, str]:
    """What ``_run(_THROUGH_TYPER, args, here)`` gives, run in this process (tests/cli/cli_in_process.py):
    the reference side of the comparisons, without a second interpreter's start and imports per call."""
    from logdoctor.cli import registry
    from logdoctor.cli.app import app

    def command() -> None:
        registry.load(registry.find("repair"))
        app()

    return _comparable(*cli_in_process.run(command, ["logdoctor", "repair", *args], _ENV), here)


def _same(args: list[str]) -> tuple[int, str, str]:
    """The fast path in a process of its own (the call under test), the typer command in this one."""
    fast = _run(_THROUGH_MAIN, args)
    assert fast == _typer_in_process(args), f"repair {' '.join(args)} differs"
    return fast


def test_the_typer_command_in_process_is_the_typer_command_in_a_process(tmp_path: Path) -> None:
    """_same's reference, run in this process, gives what the typer command's own process gives: a real log
    dir's plan as text and as JSON at --deep, the repair of a copy (--apply: output and files), and a
    missing log dir (an error line, exit 66)."""
    log_dir = realworld.require() / "zk-2.8-seanorth"
    for args in ([str(log_dir)], ["--json", "--deep", str(log_dir)], [str(tmp_path / "missing")]):
        assert _typer_in_process(args) == _run(_THROUGH_TYPER, args), args
    got = []
    for name in ("in-process", "subprocess"):  # one length: the output wraps before HERE replaces the folder
        here = tmp_path / name
        copy = realworld.writable_copy(log_dir, here / "logs")
        for p in copy.rglob("*.timeindex"):
            p.unlink()
        args = ["--apply", "--backup-dir", str(here / "backup"), str(copy)]
        out = _typer_in_process(args, here) if name == "in-process" else _run(_THROUGH_TYPER, args, here)
        got.append((out, _files(copy)))
    assert got[0] == got[1]
    assert "applied:" in got[0][0][1]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.realworld
@pytest.mark.parametrize("log_dir", realworld.params(realworld.log_dirs()))
def test_same_plan_as_the_typer_command_on_every_real_log_dir(log_dir: Path) -> None:
    """The dry run (nothing written) of every real log dir, as text and as JSON."""
    _same([str(log_dir)])
    _same(["--json", "--deep", str(log_dir)])


@pytest.mark.realworld
@pytest.mark.parametrize(
    "flags",
    tiers.one_in_test_fast(
        [
            ["--apply"],
            ["--apply", "--json"],
            ["--apply", "-v", "--only", "INDEX_MISSING"],
            ["--apply", "--deep"],
            ["--apply", "-j", "2"],
        ],
        fast=["--apply"],
    ),
    ids=" ".join,
)
def test_same_repair_as_the_typer_command_on_copies(flags: list[str], tmp_path: Path) -> None:
    """Two copies of a real log dir with their indexes removed, one repaired through each path: the same
    output, exit code and files (log dir and backup dir, the journal's times apart)."""
    src = realworld.require() / "zk-2.8-seanorth"
    got = []
    # the fast path in a process of its own, the typer command in this one; names of one length: the output
    # wraps at COLUMNS before the folder is written as HERE, so folders of two lengths wrapped apart
    for name in ("fast-path", "typer-cmd"):
        here = tmp_path / name
        log_dir = realworld.writable_copy(src, here / "logs")
        for p in log_dir.rglob("*"):
            if p.suffix in (".index", ".timeindex"):
                p.unlink()
        args = [*flags, "--backup-dir", str(here / "backup"), str(log_dir)]
        out = _run(_THROUGH_MAIN, args, here) if name == "fast-path" else _typer_in_process(args, here)
        got.append((out, _files(log_dir)))
        assert (here / "backup" / "journal.jsonl").is_file()
    assert got[0] == got[1]
    assert got[0][0][0] in (0, 1, 2), got[0][0]
    assert any(name.endswith(".timeindex") for name in got[0][1])  # the indexes were rebuilt


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [],
        ["--apply"],
        ["-j", "0", "DIR"],
        ["--jobs", "01", "DIR"],
        ["--jobs", "+1", "DIR"],
        ["-j", " 1", "DIR"],
        ["--jobs", "1_0", "DIR"],
        ["--jobs", "x", "DIR"],
        ["-j", "-1", "DIR"],
        ["--jobs=1", "DIR"],
        ["-j1", "DIR"],
        ["--backup-dir=OUT", "DIR"],
        ["DIR", "--backup-dir"],
        ["--backup-dir", "--apply", "DIR"],
        ["-v", "--only", "-x", "DIR"],
        ["--index-interval-bytes", "0", "DIR"],
        ["--resume", "OUT"],
        ["-va", "DIR"],
        ["--", "DIR"],
        ["--aply", "DIR"],
    ],
)
def test_any_other_call_is_left_to_the_typer_command(args: list[str], tmp_path: Path) -> None:
    args = [str(tmp_path) if a == "DIR" else str(tmp_path / "out") if a == "OUT" else a for a in args]
    args = [a.replace("=OUT", f"={tmp_path / 'out'}") for a in args]
    assert run_fast(args) is None
    # ...and main() then gives exactly what the typer command gives
    assert _run(_THROUGH_MAIN, args) == _typer_in_process(args)


def test_errors_end_as_the_typer_command_ends_them(tmp_path: Path) -> None:
    """A missing log dir (66), a file given as one (64), an unknown --only code (64), a backup dir inside
    the log dir (64): the same line and exit code."""
    (tmp_path / "a-file").write_text("")
    (tmp_path / "empty").mkdir()
    for args in (
        [str(tmp_path / "missing")],
        ["--apply", "--json", str(tmp_path / "a-file")],
        ["--only", "NO_SUCH_CODE", str(tmp_path / "empty")],
        ["--apply", "--backup-dir", str(tmp_path / "empty" / "b"), str(tmp_path / "empty")],
    ):
        fast = _run(_THROUGH_MAIN, args)
        assert fast == _typer_in_process(args)
        assert fast[0] in (64, 66) and fast[2].startswith("error: "), fast


def test_every_flag_and_value_is_an_option_of_the_typer_command() -> None:
    command = cli_in_process.typer_command("repair")
    booleans = {opt: p.name for p in command.params if getattr(p, "is_flag", False) for opt in p.opts}
    assert booleans == FLAGS
    by_opt = {opt: p for p in command.params for opt in p.opts}
    for opt, name in VALUES.items():  # one plain value each: a str or a Path, no check of its own
        p = by_opt[opt]
        assert p.name == name and not p.multiple and p.nargs == 1
        assert p.bare_type() in ("str", "Path") and p.callback is None and p.min is None and p.max is None
    for opt, name in COUNTS.items():  # a whole number from 1, no upper bound, no check of its own
        p = by_opt[opt]
        assert p.name == name and not p.multiple and p.nargs == 1 and p.callback is None
        assert p.bare_type() == "int" and (p.min, p.max) == (1, None)


def test_the_fast_call_imports_no_typer(tmp_path: Path) -> None:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(tmp_path / "fleet", [TopicSpec("orders", partitions=2)])
    for p in log_dir.rglob("*.timeindex"):
        p.unlink()
    code = (
        "import json, sys\n"
        f"sys.argv = ['logdoctor', 'repair', '--apply', '--jobs', '1', '--backup-dir', "
        f"{str(tmp_path / 'b')!r}, {str(log_dir)!r}]\n"
        "from logdoctor.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('exit', e.code, file=sys.stderr)\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = done.stderr.strip().splitlines()
    modules = {m.split(".")[0] for m in json.loads(lines[-1])}
    assert not modules & {"typer", "click", "pydantic", "numpy"}
    assert lines[-2] == "exit 0", done.stderr
    assert "applied:" in done.stdout
    assert len(list(log_dir.rglob("*.timeindex"))) == 2

"""``logdoctor dump FILE... [FLAGS]`` runs without the CLI framework (:mod:`logdoctor.cli.dump.fast`):
the same stdout, stderr and exit code as the typer command on every real file, any other call still
parsed by typer, and the fast call importing neither typer nor (for ``--json``) rich."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cli_in_process
import pytest

import realworld
from logdoctor.cli.dump.fast import FLAGS, run_fast
from logdoctor.formats.checkpoint import OffsetCheckpoint, write_offset_checkpoint

# The typer command, reached as main() reaches it for any call the fast path declines.
_THROUGH_TYPER = (
    "import sys\n"
    "from logdoctor.cli import registry\n"
    "from logdoctor.cli.app import app\n"
    "registry.load(registry.find('dump'))\n"
    "sys.argv = ['logdoctor', 'dump', *sys.argv[1:]]\n"
    "app()\n"
)
_THROUGH_MAIN = (
    "import sys\n"
    "from logdoctor.cli.main import main\n"
    "sys.argv = ['logdoctor', 'dump', *sys.argv[1:]]\n"
    "main()\n"
)


_ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "120"}


def _run(program: str, args: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    argv = [sys.executable, "-c", program, *args]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=_ENV)
    return done.returncode, done.stdout, done.stderr


def _typer_in_process(args: list[str], cwd: Path | None) -> tuple[int, str, str]:
    """What ``_run(_THROUGH_TYPER, args, cwd)`` gives, run in this process (tests/cli/cli_in_process.py)."""
    from logdoctor.cli import registry
    from logdoctor.cli.app import app

    def command() -> None:
        registry.load(registry.find("dump"))
        app()

    return cli_in_process.run(command, ["logdoctor", "dump", *args], _ENV, cwd)


FLAG_SETS = [
    [],
    ["--json"],
    ["--deep", "--json"],
    ["--verify-index", "--no-crc"],
    ["-d", "--verify-index-only"],
]


def _files(log_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(log_dir)) for p in log_dir.rglob("*") if p.is_file())


def _same(args: list[str], cwd: Path) -> None:
    """The fast path in a process of its own (the call under test), the typer command in this one."""
    fast = _run(_THROUGH_MAIN, args, cwd=cwd)
    assert fast == _typer_in_process(args, cwd), f"dump {' '.join(args[:3])} ... differs in {cwd}"


def test_the_typer_command_in_process_is_the_typer_command_in_a_process() -> None:
    """_same's reference, run in this process, gives what the typer command's own process gives: on a log
    dir's every file (text, every record's data), with --json, and on a file of no kind it knows (an
    error line, exit 64)."""
    log_dir = realworld.require() / "zk-2.8-seanorth"
    files = _files(log_dir)
    for args in (["-p", *files], ["--json", *files], ["missing-file"]):
        assert _typer_in_process(args, log_dir) == _run(_THROUGH_TYPER, args, cwd=log_dir), args


@pytest.mark.realworld
@pytest.mark.parametrize("log_dir", realworld.params(realworld.log_dirs()))
def test_same_output_as_the_typer_command_on_every_real_file(log_dir: Path) -> None:
    """Every file of every real log dir, with every record's data (the most the dump prints)."""
    files = _files(log_dir)
    assert files
    _same(["-p", *files], log_dir)


@pytest.mark.realworld
@pytest.mark.parametrize("flags", FLAG_SETS, ids=lambda f: " ".join(f) or "none")
def test_same_output_as_the_typer_command_with_each_flag(flags: list[str]) -> None:
    log_dir = realworld.require() / "zk-2.8-seanorth"
    _same([*flags, *_files(log_dir)], log_dir)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [],
        ["--offsets", "0:3", "FILE"],
        ["--offsets=0:3", "FILE"],
        ["-dp", "FILE"],
        ["--", "FILE"],
        ["-", "FILE"],
        ["--jsn", "FILE"],
        ["--decoder", "none", "FILE"],
        ["--max-bytes", "10", "FILE"],
    ],
)
def test_any_other_call_is_left_to_the_typer_command(args: list[str], tmp_path: Path) -> None:
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint.write_bytes(write_offset_checkpoint(OffsetCheckpoint(0, [("orders", 3, 42)])))
    args = [str(checkpoint) if a == "FILE" else a for a in args]
    assert run_fast(args) is None
    # ...and main() then gives exactly what the typer command gives
    assert _run(_THROUGH_MAIN, args) == _typer_in_process(args, None)


def test_every_flag_is_a_boolean_option_of_the_typer_command() -> None:
    from logdoctor.cli.dump.command import dump  # noqa: F401 - registers the command

    command = cli_in_process.typer_command("dump")
    booleans = {
        opt: p.name
        for p in command.params
        if getattr(p, "is_flag", False)
        for opt in p.opts
    }
    renamed = {"json_out": "json_out"}
    assert {f: renamed.get(n, n) for f, n in booleans.items()} == FLAGS


def test_the_fast_call_imports_neither_typer_nor_rich_with_json(tmp_path: Path) -> None:
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint.write_bytes(write_offset_checkpoint(OffsetCheckpoint(0, [("orders", 3, 42)])))
    code = (
        "import json, sys\n"
        f"sys.argv = ['logdoctor', 'dump', '--json', {str(checkpoint)!r}]\n"
        "from logdoctor.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = {m.split(".")[0] for m in json.loads(done.stderr.strip().splitlines()[-1])}
    assert not modules & {"typer", "click", "rich", "pydantic"}
    assert json.loads(done.stdout.splitlines()[1])["topic"] == "orders"

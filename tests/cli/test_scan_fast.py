"""``logdoctor scan LOGDIR... [FLAGS]`` runs without the CLI framework (:mod:`logdoctor.cli.fast`,
:func:`logdoctor.cli.scan_fast.run_fast`): the same stdout, stderr and exit code as the typer command on
every real log dir, any other call still parsed by typer, and the fast ``--json`` call importing neither
typer nor rich."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import cli_in_process
import pytest

import realworld
from logdoctor.cli.scan_fast import FLAGS, run_fast

# Both paths see the same clock: the default --now (the current time) and the scan's elapsed seconds
# are fixed, so that what the runs print can be compared byte for byte.
_SAME_CLOCK = (
    "import sys, time\n"
    "class _Clock:\n"
    "    def __getattr__(self, name):\n"
    "        return getattr(time, name)\n"
    "    def time(self):\n"
    "        return 1_800_000_000.0\n"
    "    def perf_counter(self):\n"
    "        return 0.0\n"
    "import logdoctor.cli.timeparse, logdoctor.checks.scanner\n"
    "logdoctor.cli.timeparse.time = logdoctor.checks.scanner.time = _Clock()\n"
)
# The typer command, reached as main() reaches it for any call the fast path declines.
_THROUGH_TYPER = _SAME_CLOCK + (
    "from logdoctor.cli import registry\n"
    "from logdoctor.cli.app import app\n"
    "registry.load(registry.find('scan'))\n"
    "sys.argv = ['logdoctor', 'scan', *sys.argv[1:]]\n"
    "app()\n"
)
_THROUGH_MAIN = _SAME_CLOCK + (
    "from logdoctor.cli.main import main\nsys.argv = ['logdoctor', 'scan', *sys.argv[1:]]\nmain()\n"
)
# the log dir's file system may change between two runs (other processes write): its use is not compared
_DISK_CELL = re.compile(r"\d+% of \d+\.\d \w+")


_ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "120"}


def _run(program: str, args: list[str]) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True, env=_ENV)
    return _comparable(args, done.returncode, done.stdout, done.stderr)


def _typer_in_process(args: list[str]) -> tuple[int, str, str]:
    """What ``_run(_THROUGH_TYPER, args)`` gives, run in this process (tests/cli/cli_in_process.py), on
    _SAME_CLOCK's clock (set by running its own text here; the modules' clocks put back after)."""
    from logdoctor.cli import registry
    from logdoctor.cli.app import app

    modules = [(name, m) for name, m in list(sys.modules.items()) if name.startswith("logdoctor.")]
    clocks = {name: m.time for name, m in modules if hasattr(m, "time")}
    exec(_SAME_CLOCK, {})

    def command() -> None:
        registry.load(registry.find("scan"))
        app()

    try:
        status, out, err = cli_in_process.run(command, ["logdoctor", "scan", *args], _ENV)
    finally:
        for name, clock in clocks.items():
            sys.modules[name].time = clock
    return _comparable(args, status, out, err)


def _comparable(args: list[str], code: int, out: str, err: str) -> tuple[int, str, str]:
    if "--json" in args and code in (0, 1, 2):
        report = json.loads(out)
        for d in report["log_dirs"]:
            d.pop("disk")
        out = json.dumps(report)
    return code, _DISK_CELL.sub("N% of SIZE", out), err


def _same(args: list[str]) -> None:
    """The fast path in a process of its own (the call under test), the typer command in this one."""
    fast = _run(_THROUGH_MAIN, args)
    assert fast == _typer_in_process(args), f"scan {' '.join(args)} differs"


def test_the_typer_command_in_process_is_the_typer_command_in_a_process(tmp_path: Path) -> None:
    """_same's reference, run in this process, gives what the typer command's own process gives: a real log
    dir at --deep with --json and as text, and a missing log dir (an error line, exit 66)."""
    log_dir = realworld.require() / "zk-2.8-seanorth"
    for args in (["--deep", "--json", str(log_dir)], [str(log_dir)], [str(tmp_path / "missing")]):
        assert _typer_in_process(args) == _run(_THROUGH_TYPER, args), args


@pytest.mark.realworld
@pytest.mark.parametrize("log_dir", realworld.params(realworld.log_dirs()))
def test_same_output_as_the_typer_command_on_every_real_log_dir(log_dir: Path) -> None:
    """Every real log dir at --deep with --json (every record read) and at the default depth as text."""
    _same(["--deep", "--json", str(log_dir)])
    _same([str(log_dir)])


@pytest.mark.realworld
@pytest.mark.parametrize(
    "flags",
    [["--quick"], ["--quick", "--json"], ["--deep", "-v"], ["--verbose", "--json"], ["--quick", "--deep"]],
    ids=" ".join,
)
def test_same_output_as_the_typer_command_with_each_flag(flags: list[str]) -> None:
    log_dir = realworld.require() / "zk-2.8-seanorth"
    _same([*flags, str(log_dir)])


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [],
        ["--json"],
        ["-j", "1", "DIR"],
        ["--jobs=1", "DIR"],
        ["-vq", "DIR"],
        ["--", "DIR"],
        ["-", "DIR"],
        ["--jsn", "DIR"],
        ["--now", "0", "DIR"],
        ["--html", "OUT", "DIR"],
    ],
)
def test_any_other_call_is_left_to_the_typer_command(args: list[str], tmp_path: Path) -> None:
    args = [str(tmp_path) if a == "DIR" else str(tmp_path / "out.html") if a == "OUT" else a for a in args]
    assert run_fast(args) is None
    # ...and main() then gives exactly what the typer command gives
    assert _run(_THROUGH_MAIN, args) == _typer_in_process(args)


def test_errors_end_as_the_typer_command_ends_them(tmp_path: Path) -> None:
    """A missing log dir (66), a file given as one (64), --quick with --deep (64): the same line and exit
    code."""
    (tmp_path / "a-file").write_text("")
    for args in (
        [str(tmp_path / "missing")],
        ["--json", str(tmp_path / "a-file")],
        ["--quick", "--deep", str(tmp_path)],
    ):
        fast = _run(_THROUGH_MAIN, args)
        assert fast == _typer_in_process(args)
        assert fast[0] in (64, 66) and fast[2].startswith("error: "), fast


def test_every_flag_is_a_boolean_option_of_the_typer_command() -> None:
    command = cli_in_process.typer_command("scan")
    booleans = {opt: p.name for p in command.params if getattr(p, "is_flag", False) for opt in p.opts}
    assert booleans == FLAGS


def test_the_fast_call_imports_neither_typer_nor_rich_with_json(tmp_path: Path) -> None:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    log_dir, _ = generate_log_dir(tmp_path / "fleet", [TopicSpec("orders", partitions=2)])
    code = (
        "import json, sys\n"
        f"sys.argv = ['logdoctor', 'scan', '--deep', '--json', {str(log_dir)!r}]\n"
        "from logdoctor.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    print('exit', e.code, file=sys.stderr)\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = done.stderr.strip().splitlines()
    modules = {m.split(".")[0] for m in json.loads(lines[-1])}
    assert not modules & {"typer", "click", "rich", "pydantic"}
    assert lines[-2] == "exit 0", done.stderr
    assert '"topic": "orders"' in done.stdout

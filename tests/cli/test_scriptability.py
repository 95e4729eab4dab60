"""Issue 59 item 10: what a script (or an on-call engineer) needs of every command: `--version`, one
``error:`` line for a missing input, option names whole in an 80-column help, and each finding's fix
commands as argv lists (``fix_argv``) that are exactly the commands the fix text prints."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import cli_runs
import realworld

LOGDOCTOR = [sys.executable, "-m", "logdoctor"]


def _process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOGDOCTOR, *args], capture_output=True, text=True, env=env, timeout=300)


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command in this process (tests/cli_runs.py), ``env`` over ``os.environ`` (each test's ``env`` is
    ``os.environ`` and more); a printed command run as printed has a process of its own (:func:`_process`)."""
    return cli_runs.logdoctor(*args, env=env)


def test_version_is_the_package_metadata() -> None:
    run = _run("--version")
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"logdoctor {importlib.metadata.version('kafka-logdoctor')}\n"


@pytest.mark.parametrize("name", ["nothing-here", "00000000000000000000.log"])
def test_dump_of_a_missing_path_is_one_error_line(tmp_path: Path, name: str) -> None:
    """As every command says it: ``error: PATH: ...`` and 66 (a name of no known kind was "unknown file
    kind", exit 64, without the prefix)."""
    missing = tmp_path / name
    run = _run("dump", str(missing))
    assert run.returncode == 66, run.stderr
    assert run.stderr == f"error: {missing}: no such file\n"


def _commands() -> dict[str, list[str]]:
    from logdoctor.cli.main import _register, app

    _register()
    import typer.main

    group = typer.main.get_command(app)
    return {
        name: [o for p in cmd.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
        for name, cmd in group.commands.items()  # type: ignore[attr-defined]
    }


def test_help_never_splits_an_option_name() -> None:
    """At 80 columns rich wrapped ``--max-partition-bytes`` as ``--max-partition-byte`` / ``s``: every
    option of every command is printed whole."""
    env = {**os.environ, "COLUMNS": "80", "LOGDOCTOR_HELP_CACHE": "0", "TERM": "dumb"}
    for command, options in _commands().items():
        run = _run(command, "--help", env=env)
        assert run.returncode == 0, run.stderr
        words = set(re.findall(r"--[\w-]+", run.stdout))
        missing = [o for o in options if o not in words and o != "--help"]
        assert not missing, (command, missing)


def _spans(fix: str) -> list[str]:
    return fix.split("`")[1::2]


def _scan_json(*dirs: str) -> dict:
    run = _run("scan", *dirs, "--json")
    assert run.returncode in (0, 1, 2), run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("names", realworld.log_dir_tiers())
def test_fix_argv_is_the_printed_command_on_real_dirs(names: list[str]) -> None:
    """Every argv of ``fix_argv`` is a command the fix text prints (``shlex.split`` of a backticked span,
    in order), and every ``logdoctor`` command the text prints with this finding's log dir or file in it
    is one of them. test-fast scans the log dirs of realworld.FAST_LOG_DIRS, make test every one."""
    seen = 0
    for d in (realworld.require() / n for n in names):
        for f in _scan_json(str(d))["findings"]:
            spans = [shlex.split(s) for s in _spans(f["fix"]) if s.startswith("logdoctor ") and "*" not in s]
            printed = [argv for argv in spans if argv in f["fix_argv"]]
            assert printed == f["fix_argv"], (f["code"], f["fix"], f["fix_argv"])
            for argv in spans:
                if str(d) in argv or f["path"] in argv:
                    assert argv in f["fix_argv"], (f["code"], f["fix"])
            seen += len(f["fix_argv"])
    assert seen > 100


def test_a_fix_argv_runs_as_printed_on_a_path_with_a_space(tmp_path: Path) -> None:
    """The argv runs as it is (no shell) and the text's command, pasted, is the same argv: a log dir
    whose path has a space and a quote was split in two by the unquoted text."""
    d = realworld.writable_copy(realworld.require() / "zk-3.0-tuyen-nnt-b1", tmp_path / "kafka logs 'b1'")
    (f, *_) = [f for f in _scan_json(str(d))["findings"] if f["fix_argv"]]
    argv = f["fix_argv"][0]
    assert argv[:2] == ["logdoctor", "repair"] and str(d) in argv
    assert shlex.split(_spans(f["fix"])[0]) == argv
    before = sorted(p.name for p in d.rglob("*"))
    run = _process(*argv[1:])
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Dry run" in run.stdout
    assert sorted(p.name for p in d.rglob("*")) == before


def test_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    """ "1 log dirs", "1 findings": the inventory's line says each count with its noun agreeing."""
    d = realworld.require() / "zk-3.0-tuyen-nnt-b1"
    run = _run("inventory", str(d), "--out", str(tmp_path / "b1.parquet"))
    assert run.returncode == 0, run.stderr
    line = " ".join(run.stderr.split())
    assert ": 1 log dir, " in line, line
    for n, noun in re.findall(r"(\d[\d,]*) (log dirs?|replicas?|findings?)\b", line):
        assert (n == "1") == (not noun.endswith("s")), line


_RAW_BYTES = re.compile(r"\d[\d,]* bytes\b")


@pytest.mark.realworld
def test_text_output_gives_sizes_in_binary_units_json_exact_bytes() -> None:
    """ "134460 bytes", "246,425 bytes would be deleted", "71,905 bytes of log": the text of scan, retention
    and the findings (RETENTION_DUE on ../shared/forensics broker-1, whose 9 segments retention deletes)
    says sizes as people read them (logdir.disk.human_bytes); --json keeps the exact byte counts."""
    from logdoctor.logdir.disk import human_bytes

    d = str(realworld.require_forensics() / "broker-1" / "kafka-logs")
    env = {**os.environ, "COLUMNS": "200"}
    texts = {cmd: _run(cmd, d, env=env) for cmd in ("scan", "retention")}
    for cmd, run in texts.items():
        assert run.returncode in (0, 1, 2), run.stderr
        assert not _RAW_BYTES.findall(run.stdout), (cmd, _RAW_BYTES.findall(run.stdout))
    due = [f for f in _scan_json(d)["findings"] if f["code"] == "RETENTION_DUE"]
    assert due and all(isinstance(f["details"]["bytes"], int) for f in due)
    assert all(human_bytes(f["details"]["bytes"]) in f["message"] for f in due)
    total = sum(f["details"]["bytes"] for f in due)
    assert f"{human_bytes(total)} would be deleted" in " ".join(texts["retention"].stdout.split())


def test_replica_lag_says_its_lag_in_binary_units() -> None:
    """REPLICA_LAG's text said "134460 bytes" (the scan of several brokers and the census run this rule):
    the lag in binary units in the text, exact in details."""
    from logdoctor.checks.replica_lag import lag_finding

    f = lag_finding(
        broker="broker-3", log_dir="/data/kafka-logs", path="/data/kafka-logs/orders-1", topic="orders",
        partition=1, log_end_offset=900, lag=600, lag_bytes=134460, below_high_watermark=False,
        partition_high_watermark=None, leader_broker="broker-1", leader_log_dir="/data/b1",
        leader_log_end_offset=1500,
    )  # fmt: skip
    assert "600 offsets and 131.3 KiB behind broker-1" in f.message, f.message
    assert not _RAW_BYTES.findall(f.message)
    assert f.details == {"lag_offsets": 600, "lag_bytes": 134460}

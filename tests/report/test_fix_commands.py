"""Every `logdoctor ...` command a finding tells the user to run is a real command with real options.

The commands come from three places: the catalog's fix templates (every code, every scope), the fix
texts of the findings a scan of the generated demo fleet really makes (templates filled in by the
checks, including the texts the checks write themselves), and the census's ``fix_command`` of those
findings plus its fleet findings (the Spark census job's, as report_demo runs it). Each command is
parsed by the Typer app itself (click's ``make_context`` on the sub-command), so a fix naming a
command or an option the CLI does not have fails here.
"""

from __future__ import annotations

import re
import shlex
import string
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from logdoctor.checks import catalog
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app

_COMMAND = re.compile(r"`(logdoctor\b[^`]*)`")
# typer 0.29 vendors click; its UsageError (unknown command/option, missing or bad argument) is the base of
# the public typer.BadParameter
UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


@pytest.fixture(scope="module")
def cli() -> Any:
    return typer.main.get_command(app)


def parse(cli: Any, line: str) -> Any:
    """Parse ``logdoctor SUB ARGS...`` as the CLI would (raises UsageError when it cannot)."""
    words = shlex.split(line)
    assert words[0] == "logdoctor" and len(words) >= 2, line
    root = cli.make_context("logdoctor", [words[1]], resilient_parsing=True)
    sub = cli.get_command(root, words[1])
    if sub is None:
        raise UsageError(f"no such command: {words[1]!r}")
    return sub.make_context(words[1], words[2:], parent=root)


_DIR_PARAMS = ("log_dirs", "leader", "follower", "source", "destination")
_SAMPLE_DIRS = {"/data/kafka-logs", "/data/kafka-logs-2", "/data/other-logs"}


def check(cli: Any, line: str, log_dirs: set[str]) -> Any:
    """Parse ``line`` and check that every log dir it names is one of ``log_dirs`` (so that a word such
    as ``index`` or ``checkpoints`` cannot pass as a log dir of `logdoctor repair LOGDIR...`)."""
    ctx = parse(cli, line)
    for key in _DIR_PARAMS:
        value = ctx.params.get(key)
        for p in value if isinstance(value, list | tuple) else [value]:
            if p is not None:
                assert str(p) in log_dirs, f"{line!r}: {key}={p} is not a log dir"
    return ctx


def commands_in(fix: str) -> list[str]:
    """The backticked logdoctor commands of a fix text; any other mention of logdoctor is an error."""
    found = _COMMAND.findall(fix)
    outside = _COMMAND.sub("", fix)
    assert "logdoctor " not in outside, f"a logdoctor command outside backticks: {fix!r}"
    return found


def _sample_fields(template: str) -> dict[str, Any]:
    fields = {name for _t, name, _f, _c in string.Formatter().parse(template) if name}
    values: dict[str, Any] = {name: f"/data/kafka-logs/x-{name}" for name in fields}
    values.update(logdir="/data/kafka-logs", leader_logdir="/data/other-logs", topic_partition="orders-1",
                  logdirs="/data/kafka-logs /data/kafka-logs-2", position=123, valid_bytes=100)
    return values


def test_the_check_rejects_made_up_commands_options_and_log_dirs(cli: Any) -> None:
    # the checks below must be able to fail: commands and options the CLI does not have are refused ...
    for bad in (
        "logdoctor repair checkpoints /data/kafka-logs --at 3",
        "logdoctor repair truncate /x.log --at 12",
        "logdoctor sync-replica orders-1 --from /a --to /b",
        "logdoctor scan",
        "logdoctor fix /data/kafka-logs",
    ):
        with pytest.raises(UsageError):
            check(cli, bad, _SAMPLE_DIRS)
    # ... and so are sub-command words the CLI would take for a log dir
    with pytest.raises(AssertionError, match="is not a log dir"):
        check(cli, "logdoctor repair index /data/kafka-logs/t-0/00000000000000000000.log", _SAMPLE_DIRS)
    ctx = check(cli, "logdoctor repair /data/kafka-logs --only INDEX_CORRUPT", _SAMPLE_DIRS)
    assert ctx.params["only"] == "INDEX_CORRUPT" and ctx.params["log_dirs"] == [Path("/data/kafka-logs")]


def test_every_catalog_fix_names_only_real_commands(cli: Any) -> None:
    seen = 0
    for entry in catalog.CATALOG.values():
        fix = entry.fix.format_map(_sample_fields(entry.fix) | {"repair": catalog.repair_hint(entry.code,
                                                                                               "/data/kafka-logs")})
        for line in commands_in(fix):
            check(cli, line, _SAMPLE_DIRS)
            seen += 1
    # the repairable scan codes and every dump code point to `logdoctor repair ... --only CODE`
    assert seen >= len(catalog.codes("dump")) + 8
    assert set(catalog.codes("fleet")) == {
        "REPLICA_LAG",
        "LOG_DIR_NEARLY_FULL",
        "TOPIC_RECREATED",
        "INVENTORY_UNREADABLE",
        "SEVERAL_CLUSTERS",
        "CONTROLLER_QUORUM_TOO_SMALL",
    }


def test_repair_hints_name_codes_the_repair_command_accepts(cli: Any) -> None:
    from logdoctor.repair.planner import REPAIRABLE, parse_only

    for entry in catalog.CATALOG.values():
        if "{repair}" not in entry.fix:
            continue
        target = catalog.DUMP_FIXED_BY.get(entry.code, entry.code)
        assert target in REPAIRABLE, (entry.code, target)
        ctx = check(cli, catalog.repair_command(target, "/data/kafka-logs"), _SAMPLE_DIRS)
        assert parse_only(ctx.params["only"]) == {target}


def test_fixes_of_a_real_scan_and_the_census_commands_parse(cli: Any, demo) -> None:
    # every broker of the demo: the fleet's and the KRaft broker beside it (broker-4)
    brokers = {b: sorted(b.glob("kafka-logs-*")) for b in sorted(demo.root.glob("broker-*"))}
    fleet_dirs = {str(d) for dirs in brokers.values() for d in dirs}
    assert {str(d) for dirs in demo.fleet.log_dirs.values() for d in dirs} < fleet_dirs
    texts: list[tuple[str, str]] = []
    for dirs in brokers.values():
        options = ScanOptions(depth=Depth.DEEP, now_ms=demo.now_ms)
        report = scan(dirs, options, jobs=1)
        texts.extend((f.code, f.fix) for f in report.findings)
    assert demo.census.total("findings") == len(demo.census.findings)  # every row, none left out
    for f in demo.census.findings:
        texts.append((f["code"], f["fix"]))
        texts.append((f["code"], f"`{f['fix_command']}`"))
    codes = {code for code, _fix in texts}
    planted = {"INDEX_CORRUPT", "RETENTION_RISK", "REPLICA_LAG", "LOG_DIR_NEARLY_FULL", "REPLICA_MISPLACED"}
    assert planted <= codes
    parsed = 0
    for code, fix in texts:
        assert catalog.LOGDIR_PLACEHOLDER not in fix.split(), (code, fix)
        for line in commands_in(fix):
            check(cli, line, fleet_dirs)  # the log dirs a real finding names are the fleet's own
            parsed += 1
    assert parsed >= len(texts) // 2

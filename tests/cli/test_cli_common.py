"""What every command shares: the order and groups of `logdoctor --help`, usage errors exit 64 with one
`error:` line, and the refusal/failure mapping of the repair-style commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from logdoctor.cli import commands
from logdoctor.cli.common import (
    EX_CANTCREAT,
    EX_DATAERR,
    EX_REFUSED,
    EX_SOFTWARE,
    EX_TEMPFAIL,
    EX_USAGE,
    parse_epoch_ms,
    run_errors,
)
from logdoctor.cli.main import app
from logdoctor.errors import BrokerRunningError
from logdoctor.repair.apply import PlanChangedError
from logdoctor.repair.backup import NoSpaceError

runner = CliRunner()

OPERATOR_ORDER = [
    "dump",
    "scan",
    "retention",
    "schemas",
    "repair",
    "move-partition",
    "sync-replica",
    "restore",
    "rebuild-quorum",
    "export",
    "replay",
    "inventory",
    "census",
    "demo",
]


def _help_text() -> str:
    result = runner.invoke(app, ["--help"], terminal_width=120)
    assert result.exit_code == 0, result.output
    return result.output


def test_help_lists_commands_in_operator_order() -> None:
    text = _help_text()
    listed = [m.group(1) for m in re.finditer(r"^│ ([a-z][a-z-]+) {2,}", text, re.MULTILINE)]
    assert listed == OPERATOR_ORDER


def test_help_groups_commands_in_panels() -> None:
    text = _help_text()
    panels = re.findall(r"^╭─ (.+?) ─", text, re.MULTILINE)
    assert panels == ["Options", "Inspect", "Fix (broker stopped)", "Extract with Spark"]
    # each command sits under its own panel: find the panel title preceding each command line
    current, seen = None, {}
    for line in text.splitlines():
        m = re.match(r"^╭─ (.+?) ─", line)
        if m:
            current = m.group(1)
            continue
        c = re.match(r"^│ ([a-z][a-z-]+) {2,}", line)
        if c:
            seen[c.group(1)] = current
    assert seen == {name: title for title, names in commands.HELP_ORDER for name in names}


def test_every_registered_command_has_a_place_in_the_help() -> None:
    registered = {info.name for info in app.registered_commands}
    placed = {name for _, names in commands.HELP_ORDER for name in names}
    assert registered == placed


@pytest.mark.parametrize("command", ["scan", "retention"])
def test_bad_now_is_a_usage_error(command: str, tmp_path: Path) -> None:
    result = runner.invoke(app, [command, "--now", "next tuesday", str(tmp_path)])
    assert result.exit_code == EX_USAGE
    assert result.stderr.strip() == "error: --now wants epoch ms or ISO-8601, got 'next tuesday'"


def test_parse_epoch_ms() -> None:
    assert parse_epoch_ms("1700000000123") == 1_700_000_000_123
    assert parse_epoch_ms(" -5 ") == -5
    assert parse_epoch_ms("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_epoch_ms("2023-11-14T22:13:20") == 1_700_000_000_000  # no zone: UTC
    assert parse_epoch_ms("2023-11-15T00:13:20+02:00") == 1_700_000_000_000
    with pytest.raises(ValueError):
        parse_epoch_ms("yesterday")


class _Usage(Exception):
    pass


class _Refused(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (_Usage("bad journal"), EX_USAGE, "error: bad journal"),
        (BrokerRunningError("pid 42 holds the lock"), EX_TEMPFAIL, "refused (nothing written): pid 42 holds"),
        (NoSpaceError("3 bytes free"), EX_CANTCREAT, "refused (nothing written): 3 bytes free"),
        (_Refused("cluster differs"), EX_REFUSED, "refused (nothing written): cluster differs"),
        (PlanChangedError("x.index is not as planned"), EX_DATAERR, "refused (nothing written): x.index"),
        (KeyError("x"), EX_SOFTWARE, "logdoctor repair failed: KeyError: 'x'"),
    ],
)
def test_run_errors_map_to_exit_codes(
    exc: Exception, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    refusals = (_Refused, PlanChangedError)
    with pytest.raises(typer.Exit) as info, run_errors("repair", usage=(_Usage,), refusals=refusals):
        raise exc
    assert info.value.exit_code == code
    assert capsys.readouterr().err.startswith(line)


def test_run_errors_let_exit_through() -> None:
    with pytest.raises(typer.Exit) as info, run_errors("repair", usage=(), refusals=()):
        raise typer.Exit(2)
    assert info.value.exit_code == 2

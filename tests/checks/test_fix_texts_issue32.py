"""Fix texts of issue 32 (items 10 and 13): each says what to do without placeholders or garbled
parentheses, and the command it prints runs as printed on a copy and leaves the finding gone."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.sample.fleet import generate_demo_fleet

NOW = 1_790_000_000_000
_COMMAND = re.compile(r"`(logdoctor\b[^`]*)`")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fixtexts") / "fleet"
    generate_demo_fleet(root, now_ms=NOW)
    return root


def _findings(log_dir: Path, code: str):
    report = scan([str(log_dir)], ScanOptions(Depth.DEFAULT, NOW))
    return [f for f in report.findings if f.code == code]


def _nesting(text: str) -> int:
    depth = deepest = 0
    for ch in re.sub(r"`[^`]*`", "", text):  # what a command says in its own words is not counted
        depth += ch == "("
        depth -= ch == ")"
        deepest = max(deepest, depth)
        assert depth >= 0, text
    assert depth == 0, text
    return deepest


def _run_printed(fix: str) -> None:
    (command,) = _COMMAND.findall(fix)
    words = shlex.split(command)
    assert "prints the plan, add --apply to make it" in fix
    result = CliRunner().invoke(app, [*words[1:], "--apply"], terminal_width=250)
    assert result.exit_code in (0, 1), result.output


def test_retention_risk_fix_has_no_placeholder_and_runs_as_printed(fleet, tmp_path):
    copy = tmp_path / "kafka-logs-1"
    shutil.copytree(fleet / "broker-2" / "kafka-logs-1", copy)
    risks = _findings(copy, "RETENTION_RISK")
    assert risks
    for f in risks:
        assert "<" not in f.fix and "chown" not in f.fix, f.fix  # nothing about permissions is wrong
        assert _nesting(f.fix) <= 1, f.fix
    _run_printed(risks[0].fix)
    assert _findings(copy, "RETENTION_RISK") == []


@pytest.mark.parametrize("state", ["missing", "empty", "unparsable"])
def test_meta_properties_missing_is_not_told_as_empty(fleet, tmp_path, state):
    """repair's reason for leaving META_PROPERTIES_INVALID: a missing file got the "empty one" text."""
    copy = tmp_path / "kafka-logs-0"
    shutil.copytree(fleet / "broker-3" / "kafka-logs-0", copy)
    meta = copy / "meta.properties"
    if state == "missing":
        meta.unlink()
    elif state == "empty":
        meta.write_bytes(b"")
    else:
        meta.write_text("version=banana\n")
    result = CliRunner().invoke(app, ["repair", str(copy)], terminal_width=250)
    text = " ".join(result.output.split())
    start = text.index("META_PROPERTIES_INVALID")
    why = text[start : start + 700]
    assert ("for an empty one" in why) == (state == "empty"), why
    assert ("it is missing" in why) == (state == "missing"), why
    assert ("cannot be parsed" in why) == (state == "unparsable"), why

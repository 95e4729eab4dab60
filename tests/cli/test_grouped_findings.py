"""Text output at fleet scale: a code found hundreds of times is one group (count, partitions, first
examples), lines fit the terminal, --verbose lists every finding, JSON keeps every one."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

import realworld
from logdoctor.checks import catalog
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.census import render_census
from logdoctor.cli.lines import PlainLines, RichLines
from logdoctor.cli.main import app
from logdoctor.cli.plain import WIDE
from logdoctor.cli.render import EXAMPLES, render_findings

runner = CliRunner()
WIDTH = 100


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=WIDTH, color_system=None, markup=False, highlight=False), buf


def _index_missing(n_partitions: int, per_partition: int, logdir: str = "/data/kafka-logs") -> list:
    out = []
    for p in range(n_partitions):
        for s in range(per_partition):
            log = f"{logdir}/orders-{p}/{s * 1000:020d}.log"
            out.append(
                catalog.make(
                    "INDEX_MISSING",
                    log,
                    logdir=logdir,
                    problem=f"{log} has no .index and .timeindex: at startup the broker recovers the segment",
                    missing=".index and .timeindex",
                )
            )
    return out


def _long_lines(text: str) -> list[str]:
    """Lines wider than the terminal that are not a single path (paths are never cut, to be copied)."""
    return [ln for ln in text.splitlines() if len(ln) > WIDTH and " " in ln.strip()]


def test_539_identical_warnings_are_one_group() -> None:
    findings = _index_missing(77, 7)  # 539 findings in 77 partitions
    assert len(findings) == 539
    console, buf = _console()
    render_findings(console, findings)
    text = buf.getvalue()
    assert "WARNING INDEX_MISSING: 539 findings in 77 partition(s)" in text
    assert "most in: orders-0 (7), orders-1 (7)" in text
    assert f"... and {539 - EXAMPLES} more" in text and "--verbose" in text
    assert sum(1 for f in findings if f.path in text) == EXAMPLES
    assert len(text.splitlines()) < 20
    assert _long_lines(text) == []


def test_verbose_lists_every_finding() -> None:
    findings = _index_missing(77, 7)
    console, buf = _console()
    render_findings(console, findings, verbose=True)
    text = buf.getvalue()
    assert all(f.path in text for f in findings)
    assert _long_lines(text) == []


def test_a_few_findings_are_shown_in_full_worst_first() -> None:
    few = _index_missing(2, 1)
    lock, logdir = "/data/kafka-logs/.lock", "/data/kafka-logs"
    err = catalog.make("BROKER_RUNNING", lock, holder="", logdir=logdir, severity=catalog.Severity.ERROR)
    console, buf = _console()
    render_findings(console, [*few, err])
    text = buf.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith("ERROR   BROKER_RUNNING /data/kafka-logs/.lock")
    assert all(f.path in text for f in few) and "more" not in text


@pytest.mark.realworld
def test_scan_text_groups_and_json_keeps_all() -> None:
    d = realworld.require() / "zk-3.0-tuyen-nnt-b0"  # 59 INDEX_MISSING, one per partition
    r = runner.invoke(app, ["scan", "-j", "1", str(d)], terminal_width=WIDTH)
    assert r.exit_code == 1, r.output
    assert "WARNING INDEX_MISSING: 59 findings in 59 partition(s)" in r.stdout
    assert len(re.findall(r"^  /\S+\.log$", r.stdout, re.MULTILINE)) == EXAMPLES
    v = runner.invoke(app, ["scan", "-j", "1", "--verbose", str(d)], terminal_width=WIDTH)
    assert len(re.findall(r"^WARNING INDEX_MISSING ", v.stdout, re.MULTILINE)) == 59
    j = runner.invoke(app, ["scan", "-j", "1", "--json", str(d)])
    assert sum(f["code"] == "INDEX_MISSING" for f in json.loads(j.stdout)["findings"]) == 59


@pytest.mark.realworld
def test_repair_plan_text_counts_repeated_actions() -> None:
    d = realworld.require() / "zk-3.0-tuyen-nnt-b0"
    r = runner.invoke(app, ["repair", "-j", "1", str(d)], terminal_width=WIDTH)
    assert r.exit_code == 0, r.output
    assert f"... and {59 - EXAMPLES} more rebuild-indexes action(s) like these" in r.stdout
    assert "[59]" not in r.stdout and "59 action(s)" in r.stdout
    v = runner.invoke(app, ["repair", "-j", "1", "--verbose", str(d)], terminal_width=WIDTH)
    assert "[59] rebuild-indexes" in v.stdout
    j = runner.invoke(app, ["repair", "-j", "1", "--json", str(d)])
    assert len(json.loads(j.stdout)["plan"]["actions"]) == 59


@pytest.mark.realworld
def test_repair_groups_its_repeated_actions() -> None:
    d = realworld.require() / "zk-corrupt-znsio"  # 51 empty partition.metadata files, each one action
    n = sum(1 for p in d.glob("*/partition.metadata") if p.stat().st_size == 0)
    r = runner.invoke(app, ["repair", "-j", "1", str(d)], terminal_width=WIDTH)
    assert f"... and {n - EXAMPLES} more fix-partition-metadata action(s)" in r.stdout
    # every shown action names its file a few times; the rest are counted, not listed
    assert r.stdout.count("partition.metadata:") == EXAMPLES


def test_census_findings_are_grouped() -> None:
    findings = [
        {
            **f.to_json(),
            "broker": "broker-1",
            "log_dir": "/data/kafka-logs",
            "fix_command": "logdoctor scan x",
        }
        for f in _index_missing(40, 3)
    ]
    result = SimpleNamespace(
        brokers=1,
        log_dirs=[],
        partitions=[],
        replicas=[],
        findings=findings,
        out_dir=Path("/tmp/census"),
        counts=lambda: {"error": 0, "warning": len(findings), "info": 0},
    )
    console, buf = _console()
    render_census(console, result)
    text = buf.getvalue()
    assert "WARNING INDEX_MISSING: 120 findings in 40 partition(s)" in text
    assert "fix: logdoctor scan x" in text
    assert len(text.splitlines()) < 25


def test_repair_groups_what_is_still_found_after_applying() -> None:
    from logdoctor.cli.repair import _finish

    remaining = [{**f.to_json(), "why": f.fix} for f in _index_missing(30, 2)]
    result = SimpleNamespace(
        ok=True, status="applied", steps_run=1, steps_total=1, error=None, journal=None, backup_dir=None
    )
    console, buf = _console()
    assert _finish(RichLines(console), result, False, {"remaining": remaining}, 1, "default") == 1
    text = buf.getvalue()
    assert "still found (60):" in text and "INDEX_MISSING: 60 files" in text
    assert sum(1 for f in remaining if f["path"] in text) <= EXAMPLES + 1
    console, buf = _console()
    _finish(RichLines(console), result, False, {"remaining": remaining}, 1, "default", verbose=True)
    assert all(f["path"] in buf.getvalue() for f in remaining)
    plain = io.StringIO()  # off a terminal, without rich: the same lines at the full width
    _finish(PlainLines(plain), result, False, {"remaining": remaining}, 1, "default", verbose=True)
    console, buf = _console()
    console.width = WIDE
    _finish(RichLines(console), result, False, {"remaining": remaining}, 1, "default", verbose=True)
    assert plain.getvalue() == buf.getvalue()

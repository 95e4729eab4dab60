"""The report in a real browser: headless Chromium (Debian's package) over the DevTools protocol.

Opens the demo fleet's census report and one broker's scan report from file://, with every
network request and console message recorded, and checks that the page runs without an error,
fetches nothing, and shows the planted faults: the RETENTION_RISK segment, the corrupt index and
the lagging replica. Chromium comes from scripts/ensure-chromium.sh (installed when missing and
we are root); without it the test skips outside CI and fails in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium_cdp import CHROMIUM, Chromium, Page, console_errors, load_report, requested_urls
from report_demo import DemoFleet

from logdoctor.report import write_census_report, write_scan_report

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _ensure_chromium() -> None:
    if os.access(CHROMIUM, os.X_OK):
        return
    why = "chromium: /usr/bin/chromium is missing"
    if os.geteuid() == 0:
        script = str(REPO / "scripts" / "ensure-chromium.sh")
        r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=1200)
        if r.returncode == 0 and os.access(CHROMIUM, os.X_OK):
            return
        why += f" and scripts/ensure-chromium.sh failed: {r.stdout[-500:]} {r.stderr[-500:]}"
    if IN_CI:
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    _ensure_chromium()
    with Chromium(width=1400, height=1000) as b:
        yield b


def js(page: Page, expr: str) -> Any:
    return page.evaluate(f"(function(){{ {expr} }})()")


def assert_clean_offline_load(page: Page, report: Path) -> None:
    assert console_errors(page) == []
    urls = requested_urls(page)
    assert urls[0] == report.resolve().as_uri()
    # the document itself, and data: URLs plotly makes from strings in the page; nothing else
    assert [u for u in urls if u != report.resolve().as_uri() and not u.startswith("data:")] == []


def select_partition(page: Page, name: str, broker: str) -> None:
    label = f"{name} · {broker} ·"
    found = js(page, f"""
        var sel = document.getElementById('part-select');
        for (var i = 0; i < sel.options.length; i++) {{
          if (sel.options[i].textContent.indexOf({json.dumps(label)}) >= 0) {{
            sel.selectedIndex = i; sel.dispatchEvent(new Event('change')); return true; }}
        }}
        return false;""")
    assert found, label


def segment_row(page: Page, base_offset: int) -> dict[str, Any] | None:
    return js(page, f"""
        var tr = document.querySelector('#segments-body tr[data-base-offset="{base_offset}"]');
        if (!tr) {{ return null; }}
        return {{ text: tr.innerText, cls: tr.className,
                  badges: Array.from(tr.querySelectorAll('.badge'))
                            .map(function (b) {{ return b.textContent; }}) }};""")


def finding_rows(page: Page) -> list[str]:
    return js(page, "return Array.from(document.querySelectorAll('#findings-body tr'))"
                    ".map(function(r){return r.getAttribute('data-code') + ' ' + r.innerText;});")


def set_filter(page: Page, element: str, value: str) -> None:
    js(page, f"var s = document.getElementById('{element}'); s.value = {json.dumps(value)};"
             "s.dispatchEvent(new Event('change'));")


def test_census_report_in_chromium(browser: Chromium, demo: DemoFleet, tmp_path: Path) -> None:
    report = write_census_report(demo.census, tmp_path / "fleet.html", now_ms=demo.now_ms)
    page = load_report(browser, report)
    assert_clean_offline_load(page, report)

    # headline
    broker, topic, number, lag = demo.lagging
    verdict = page.evaluate("document.getElementById('verdict').innerText")
    assert "Action needed" in verdict and "RETENTION_RISK" in verdict and f"{lag} offsets behind" in verdict
    # every chart drew (plotly made its SVG)
    for fig in ("fig-findings", "fig-disks", "fig-replicas", "fig-topics", "timeline-plot"):
        assert js(page, f"return !!document.querySelector('#{fig} svg.main-svg')"), fig

    # the lagging replica: its table row and its heatmap cell
    row = js(page, f"""var r = document.querySelector('#lagging-table tr[data-partition="{topic}-{number}"]');
                       return r ? r.innerText : null;""")
    assert row is not None and f"{lag} behind" in row and f"\tbroker-{broker}\t" in row
    cells = js(page, "return Array.from(document.querySelectorAll('#fig-replicas text')).map(function(t){"
                     "return t.textContent;});")
    leo = demo.fleet.replica(broker, topic, number).log_end_offset
    assert f"{leo:,} (−{lag})" in cells

    # the RETENTION_RISK segment: flagged in the timeline table and annotated on the chart
    broker, topic, number, log = demo.risk
    select_partition(page, f"{topic}-{number}", f"broker-{broker}")
    seg = segment_row(page, int(log.stem))
    # one finding for the zeroed time index: RETENTION_RISK, whose root cause is the corrupt index
    assert seg is not None and "RETENTION_RISK" in seg["badges"] and "INDEX_CORRUPT" not in seg["badges"]
    assert "1970-01-01T00:00:00Z" in seg["text"]  # the broker-visible largest timestamp
    notes = js(page, "return Array.from(document.querySelectorAll('#timeline-plot .annotation-text'))"
                     ".map(function(a){return a.textContent;});")
    assert any("RETENTION_RISK: broker sees 1970-01-01" in n for n in notes), notes
    assert any(n.startswith("retention cut-off") for n in notes), notes

    # the corrupt offset index: its segment in the timeline, its finding in the table
    broker, topic, number, index = demo.corrupt
    select_partition(page, f"{topic}-{number}", f"broker-{broker}")
    seg = segment_row(page, int(index.stem))
    assert seg is not None and seg["badges"][:1] == ["INDEX_CORRUPT"] and "flag-corrupt" in seg["cls"]
    assert "RETENTION_RISK" not in seg["badges"]

    # findings table: filter by code and severity; fix commands have copy buttons
    total = len(demo.census.findings)
    assert len(finding_rows(page)) == total
    set_filter(page, "filter-code", "INDEX_CORRUPT")
    got = finding_rows(page)
    # the corrupt offset index only: the zeroed time index is the root cause inside its RETENTION_RISK
    assert len(got) == 1 and all(r.startswith("INDEX_CORRUPT ") for r in got)
    assert any(str(index) in r for r in got)
    set_filter(page, "filter-severity", "warning")
    assert finding_rows(page) == []
    assert js(page, "return getComputedStyle(document.getElementById('findings-empty')).display") == "block"
    set_filter(page, "filter-severity", "")
    set_filter(page, "filter-code", "RETENTION_RISK")
    assert len(finding_rows(page)) == 1
    commands = js(page, "return Array.from(document.querySelectorAll('#findings-body code.fix-command'))"
                        ".map(function(c){return c.textContent;});")
    assert any(c.startswith("logdoctor repair ") and c.endswith(" --only RETENTION_RISK") for c in commands)
    copied = page.evaluate("""new Promise(function (done) {
        var b = document.querySelector('#findings-body button.copy'); b.click();
        setTimeout(function () { done(b.textContent); }, 300); })""")
    assert copied == "copied"
    set_filter(page, "filter-code", "REPLICA_LAG")
    commands = js(page, "return Array.from(document.querySelectorAll('#findings-body code.fix-command'))"
                        ".map(function(c){return c.textContent;});")
    assert len(commands) == 1 and commands[0].startswith("logdoctor sync-replica ")
    assert " --leader " in commands[0] and " --follower " in commands[0]
    assert console_errors(page) == []
    assert [u for u in requested_urls(page) if not u.startswith(("data:", "file:"))] == []


def test_scan_report_in_chromium(browser: Chromium, demo: DemoFleet, tmp_path: Path) -> None:
    broker, topic, number, log = demo.risk
    report = write_scan_report(demo.scan(broker).to_json(), tmp_path / "scan.html")
    page = load_report(browser, report)
    assert_clean_offline_load(page, report)
    # the worst partition is shown first: the one with the RETENTION_RISK segment
    assert f"{topic}-{number}" in page.evaluate("document.getElementById('part-info').innerText")
    seg = segment_row(page, int(log.stem))
    assert seg is not None and "RETENTION_RISK" in seg["badges"] and "flag-risk" in seg["cls"]
    assert js(page, "return document.getElementById('fig-replicas')") is None  # no fleet section for a scan
    assert console_errors(page) == []


def _label_boxes(page: Page) -> dict[str, dict[str, float]]:
    return js(page, """
        var out = {};
        document.querySelectorAll('#timeline-plot .annotation').forEach(function (a) {
          var t = a.textContent;
          var key = t.indexOf('retention cut-off') >= 0 ? 'cutoff' : (/(^|◀ )now /.test(t) ? 'now' : null);
          if (key) { var r = a.getBoundingClientRect();
                     out[key] = { l: r.left, r: r.right, t: r.top, b: r.bottom, text: t }; }
        });
        return out;""")


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


@pytest.mark.parametrize("days_later", [0, 30])
def test_time_chart_labels_never_overlap(browser: Chromium, demo: DemoFleet, tmp_path: Path,
                                         days_later: int) -> None:
    """The "retention cut-off" and "now" labels on the time chart (issue 17): at the demo's now (cut-off on
    the chart, now off it) and a month later (both off the chart on the same side, the 2023-data case)."""
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    broker = demo.risk[0]
    now = demo.now_ms + days_later * 86_400_000
    result = scan(demo.fleet.log_dirs[broker], ScanOptions(Depth.DEFAULT, now), jobs=1)
    report = write_scan_report(result, tmp_path / "scan.html")
    page = load_report(browser, report)
    checked = 0
    for name in sorted({f"{r.topic}-{r.partition}" for r in demo.fleet.replicas if r.broker_id == broker}):
        select_partition(page, name, f"broker {broker}")
        boxes = _label_boxes(page)
        if name.startswith("__remote_log_metadata-"):
            # no time retention, so no cut-off to draw: the broker creates the topic with retention.ms =
            # remote.log.metadata.topic.retention.ms, default -1 (TopicBasedRemoteLogMetadataManager)
            assert set(boxes) == {"now"}, (name, boxes)
            continue
        assert set(boxes) == {"cutoff", "now"}, (name, boxes)
        assert not _overlap(boxes["cutoff"], boxes["now"]), (name, boxes)
        checked += 1
    assert checked >= 3 and console_errors(page) == []


def test_who_loses_what_cells_in_the_browser(browser: Chromium, tmp_path: Path) -> None:
    """../shared/forensics scanned together: the "Who loses what" tables as the browser lays them out, a
    number per cell (README A and B), and the headline's records at risk."""
    import realworld
    from logdoctor.checks.context import ScanOptions
    from logdoctor.checks.scanner import scan

    root = realworld.require_forensics()
    dirs = [root / f"broker-{b}" / "kafka-logs" for b in (1, 2, 3)]
    # a day after the data (within retention): the headline counts the README's losses alone
    # (tests/report/test_who_loses.py counts what retention deletes besides)
    within_retention = 1_710_028_800_000  # 2024-03-10T00:00:00Z
    report = write_scan_report(
        scan(dirs, ScanOptions(now_ms=within_retention), jobs=1), tmp_path / "forensics.html"
    )
    page = load_report(browser, report)
    assert_clean_offline_load(page, report)
    rows = js(page, """
        return Array.from(document.querySelectorAll('#who-loses-what table[data-table] tbody tr')).map(
          function (tr) {
            var row = {table: tr.closest('table').getAttribute('data-table')};
            tr.querySelectorAll('td').forEach(function (td) {
              row[td.getAttribute('data-col')] = td.innerText; });
            row.visible = tr.getBoundingClientRect().height > 0;
            return row; });""")
    diverged = sorted((r for r in rows if r["table"] == "diverged"), key=lambda r: r["broker"])
    assert [(r["broker"], r["truncate to"], r["records lost"], r["first offset"], r["last offset"],
             r["first timestamp"], r["last timestamp"], r["epochs"]) for r in diverged] == [
        ("broker 11", "800", "250", "800", "1049", "2024-03-09T16:00:00.800Z", "2024-03-09T16:00:01.049Z",
         "1"),
        ("broker 12", "800", "120", "800", "919", "2024-03-09T16:00:00.800Z", "2024-03-09T16:00:00.919Z",
         "1"),
    ]
    assert all(r["visible"] and r["salvage command"].startswith("logdoctor export ") for r in diverged)
    (hanging,) = [r for r in rows if r["table"] == "hanging"]
    assert (hanging["producer"], hanging["epoch"], hanging["first offset"], hanging["last stable offset"],
            hanging["records above"]) == ("7002", "5", "341", "341", "540")
    assert hanging["abort (cluster)"].startswith("kafka-transactions.sh --bootstrap-server HOST:PORT abort")
    verdict = page.evaluate("document.getElementById('verdict').innerText")
    assert "910 record(s) at risk" in verdict

"""Issue 77 item 4, in a real browser (headless Chromium, tests/report/chromium_cdp.py): the HTML report's
headline counts only the records lost against the operator's intent, routine retention is shown apart,
no cell of the "Who loses what" and findings tables runs past its card at 1400 or 1000 px, and the page
stays a small multiple of the log it shows.

The input is ../shared/forensics (three brokers scanned together, 557 KiB of log), copied under a deep
folder whose name has no break opportunity, so the salvage commands carry a long unbroken path as on a
real host, and scanned long after its data: every partition is past retention (RETENTION_DUE, routine)
beside the README's diverged replicas and hanging transaction (the losses). Screenshots of both widths
are left in the test's tmp_path.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium_cdp import Chromium, Page, console_errors, load_report
from test_report_browser import _ensure_chromium, assert_clean_offline_load, js

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.report import write_scan_report

pytestmark = pytest.mark.slow

LONG_AFTER = 1_800_000_000_000  # 2027-01-15: every partition of the 2024 data is past its 7 days
#: a folder name as long as a real host's mount paths get, with no character a browser breaks a line at (no
#: hyphen, no space)
DEEP = "mnt_kafka_salvage_copy_of_the_broker_data_volume_taken_at_the_incident" * 2
WIDTHS = (1400, 1000)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, int]:
    """The report, the scan's findings, and the bytes of log the page shows."""
    root = realworld.require_forensics()
    tmp = tmp_path_factory.mktemp("headline")
    dirs = []
    for b in (1, 2, 3):
        d = tmp / DEEP / f"broker-{b}" / "kafka-logs"
        shutil.copytree(root / f"broker-{b}" / "kafka-logs", d)
        dirs.append(d)
    result = scan(dirs, ScanOptions(now_ms=LONG_AFTER), jobs=1)
    page = write_scan_report(result, tmp / "forensics.html")
    logs = sum(f.stat().st_size for d in dirs for f in d.rglob("*.log"))
    return page, result.findings, logs


@pytest.fixture(scope="module")
def pages(report: tuple[Path, Any, int]) -> Iterator[dict[int, Page]]:
    """The report opened in one browser per width (laid out at that width from the start)."""
    _ensure_chromium()
    path = report[0]
    with Chromium(width=WIDTHS[0], height=1000) as wide, Chromium(width=WIDTHS[1], height=1000) as narrow:
        yield {WIDTHS[0]: load_report(wide, path), WIDTHS[1]: load_report(narrow, path)}


def _loss(findings: Any) -> int:
    """The records the findings say are lost against intent, from their details (no report code)."""
    n = 0
    for f in findings:
        d = f.details
        if f.code == "REPLICA_DIVERGED":
            n += d["records_lost"]
        elif f.code == "TRANSACTION_HANGING":
            n += d["records_above"]
        elif f.code == "CONSUMER_OFFSET_OUT_OF_RANGE":
            n += d["latest_skips"]
        elif f.code in ("LOG_CORRUPT", "RETENTION_RISK"):
            raise AssertionError(f"unexpected in this input: {f.code}")
    return n


def test_the_headline_counts_loss_and_shows_routine_retention_apart(
    report: tuple[Path, Any, int], pages: dict[int, Page]
) -> None:
    _path, findings, _logs = report
    loss = _loss(findings)
    routine = sum(f.details["offsets"] for f in findings if f.code == "RETENTION_DUE")
    assert (loss, routine) == (250 + 120 + 540, 5_852)  # the figures: 6,762 = 910 + 5,852
    for width, page in pages.items():
        assert_clean_offline_load(page, report[0])
        verdict = page.evaluate("document.getElementById('verdict').innerText")
        assert f"{loss:,} record(s) at risk" in verdict, (width, verdict)
        assert "RETENTION_DUE" not in verdict and f"{loss + routine:,}" not in verdict
        card = js(page, "return document.querySelector('#card-at-risk .n').textContent")
        assert card == f"{loss:,}"
        apart = js(
            page,
            "var p = document.getElementById('routine-retention');"
            "return p ? {text: p.innerText, top: p.getBoundingClientRect().top,"
            " verdict: document.getElementById('verdict').getBoundingClientRect().bottom} : null",
        )
        assert apart is not None and apart["top"] >= apart["verdict"]  # outside the banner, below it
        assert (
            f"{routine:,} record(s)" in apart["text"]
            and "as the topics' retention is configured" in apart["text"]
        )
        assert js(page, "return document.querySelector('#card-routine-retention .n').textContent") == (
            f"{routine:,}"
        )
        at_risk = js(
            page, "return document.querySelector('#who-loses-what p.at-risk').getAttribute('data-records')"
        )
        assert at_risk == str(loss)
        # every chart drew from the one unpacked plotly.js
        for fig in ("fig-findings", "fig-disks", "fig-topics", "timeline-plot"):
            assert js(page, f"return !!document.querySelector('#{fig} svg.main-svg')"), (width, fig)
        assert console_errors(page) == []


_OVERFLOW = """
    var out = [];
    function past(card, r, b, what, text) {
      if (b.width > 0 && (b.right > r.right + 0.5 || b.left < r.left - 0.5)) {
        out.push({card: card, what: what, right: b.right, card_right: r.right, text: text.slice(0, 80)});
      }
    }
    ['who-loses-what', 'findings'].forEach(function (id) {
      var card = document.getElementById(id), r = card.getBoundingClientRect();
      card.querySelectorAll('*').forEach(function (e) {
        past(id, r, e.getBoundingClientRect(), e.tagName + ' ' + e.getAttribute('data-col'),
             e.textContent || '');
      });
      // a text's own box: an unbroken word overflows its element without widening it
      var walk = document.createTreeWalker(card, NodeFilter.SHOW_TEXT), n;
      while ((n = walk.nextNode())) {
        var range = document.createRange();
        range.selectNodeContents(n);
        past(id, r, range.getBoundingClientRect(), 'text in ' + n.parentElement.tagName, n.textContent);
      }
    });
    return out;"""


@pytest.mark.parametrize("width", WIDTHS)
def test_no_salvage_command_runs_past_its_card(pages: dict[int, Page], width: int, tmp_path: Path) -> None:
    page = pages[width]
    salvage = js(
        page,
        "return Array.from(document.querySelectorAll("
        "'#who-loses-what td[data-col=\"salvage command\"]')).map(function (td) {"
        " return td.innerText; })",
    )
    assert len(salvage) == 2 and all(DEEP in s.replace("\n", "") for s in salvage)
    overflow = js(page, _OVERFLOW)
    assert overflow == [], json.dumps(overflow[:12])
    assert js(page, "return document.documentElement.scrollWidth") <= width  # no sideways scrolling
    height = page.evaluate("document.documentElement.scrollHeight")
    shot = page.call(
        "Page.captureScreenshot",
        format="png",
        captureBeyondViewport=True,
        clip={"x": 0, "y": 0, "width": width, "height": min(height, 3000), "scale": 1},
    )
    png = tmp_path / f"report-{width}.png"
    png.write_bytes(base64.b64decode(shot["data"]))
    assert png.stat().st_size > 10_000


def test_the_page_is_a_small_multiple_of_the_log_it_shows(report: tuple[Path, Any, int]) -> None:
    """4.9 MB for 557 KiB of log before (plotly.js as it ships, 4.8 MB); plotly.js is one gzip-compressed
    copy now, and the page stays within 4 times the log's bytes."""
    path, _findings, logs = report
    size = path.stat().st_size
    assert 500_000 < logs < 700_000
    assert size < 4 * logs, (size, logs)

"""The report's "who loses what" section on ../shared/forensics (three brokers scanned together): above
the per-broker details, the README's diverged replicas and hanging transaction, read back from the HTML
with the standard library's parser."""

from __future__ import annotations

from html.parser import HTMLParser

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.report.html import render_scan_report


class _Tables(HTMLParser):
    """Every section id in page order, and the rows of each ``data-table`` table."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.empty: set[str] = set()
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("id"):
            self.sections.append(str(a["id"]))
        if tag == "table" and a.get("data-table"):
            self._table = str(a["data-table"])
            self.tables[self._table] = []
        if tag == "p" and a.get("data-table"):
            self.empty.add(str(a["data-table"]))
        if tag == "tr" and self._table is not None and a.get("data-code"):
            self._row = []
        if tag == "td" and self._row is not None:
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None


def test_forensics_report_says_who_loses_what_above_the_details() -> None:
    root = realworld.require_forensics()
    dirs = [root / f"broker-{b}" / "kafka-logs" for b in (1, 2, 3)]
    rep = scan(dirs, ScanOptions(), jobs=1)
    page = render_scan_report(rep, read_budget=0)
    p = _Tables()
    p.feed(page)
    assert "who-loses-what" in p.sections
    # above the per-broker details (the timeline and the findings table)
    first = p.sections.index("who-loses-what")
    assert all(first < p.sections.index(s) for s in p.sections if s != "who-loses-what")
    # README A: broker-1 and broker-2 truncate to 800 and lose 250 and 120 records
    assert {tuple(r[:5]) for r in p.tables["diverged"]} == {
        ("wallet-0", str(dirs[2]), "800", "250", "800-1049"),
        ("wallet-0", str(dirs[2]), "800", "120", "800-919"),
    }
    assert len(p.tables["diverged"]) == 2
    # README B: producer 7002, epoch 5, first offset 341, LSO 341, 540 records above it
    (hanging,) = p.tables["hanging"]
    assert hanging[:5] == ["billing-0", "7002 (epoch 5)", "341", "341", "540"]
    assert hanging[5].startswith("kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic billing")
    # no __consumer_offsets among the inputs: no group
    assert "groups" in p.empty

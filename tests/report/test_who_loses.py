"""The report's "who loses what" section on ../shared/forensics (three brokers scanned together): above
the per-broker details, the README's diverged replicas and hanging transaction, read back from the HTML
with the standard library's parser."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.findings import Severity
from logdoctor.checks.scanner import scan
from logdoctor.report.html import render_scan_report


class _Tables(HTMLParser):
    """Every section id in page order, and the rows of each ``data-table`` table."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.cells: dict[str, list[dict[str, str]]] = {}  # data-col -> text, per row
        self.at_risk: str | None = None
        self.routine: str | None = None
        self._col: str | None = None
        self._risk: list[str] | None = None
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
            self.cells[self._table] = []
        if tag == "p" and a.get("data-table"):
            self.empty.add(str(a["data-table"]))
        if tag == "tr" and self._table is not None and a.get("data-code"):
            self._row = []
            self._cols: list[str] = []
        if tag == "td" and self._row is not None:
            self._cell = []
            self._col = a.get("data-col")
        if tag == "p" and a.get("class") == "at-risk":
            self.at_risk = a.get("data-records")
        if tag == "p" and a.get("id") == "routine-retention":
            self.routine = a.get("data-records")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cols.append(self._col or "")
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self.cells[self._table].append(dict(zip(self._cols, self._row, strict=True)))
            self._row = None
            self._cols = []
        elif tag == "table":
            self._table = None


#: README A and B, a cell each (broker: the scan's node id, the census's broker name); the record
#: timestamps as UTC dates (issue 59 item 10: the table showed the epoch milliseconds 1710000000800)
DIVERGED = {
    "broker-1": {
        "replica": "wallet-0", "truncate to": "800", "records lost": "250", "first offset": "800",
        "last offset": "1049", "first timestamp": "2024-03-09T16:00:00.800Z",
        "last timestamp": "2024-03-09T16:00:01.049Z",
        "epochs": "1",
    },
    "broker-2": {
        "replica": "wallet-0", "truncate to": "800", "records lost": "120", "first offset": "800",
        "last offset": "919", "first timestamp": "2024-03-09T16:00:00.800Z",
        "last timestamp": "2024-03-09T16:00:00.919Z",
        "epochs": "1",
    },
}  # fmt: skip
HANGING = {
    "partition": "billing-0", "producer": "7002", "epoch": "5", "first offset": "341",
    "last stable offset": "341", "records above": "540",
    "abort (cluster)": "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic billing "
    "--partition 0 --start-offset 341",
}  # fmt: skip


#: a day after the forensics data was written (2024-03-09): within the default 7-day retention, so the next
#: retention check deletes nothing and the headline counts only the README's losses (RETENTION_DUE below)
WITHIN_RETENTION = 1_710_028_800_000  # 2024-03-10T00:00:00Z
#: half a year after: the default retention.ms (7 days) has passed for every segment
PAST_RETENTION = 1_725_000_000_000  # 2024-08-30


def _check_forensics_page(page: str, dirs: list, brokers: dict[str, str]) -> None:
    p = _Tables()
    p.feed(page)
    assert "who-loses-what" in p.sections
    # above the per-broker details (the timeline and the findings table)
    first = p.sections.index("who-loses-what")
    assert all(first < p.sections.index(s) for s in p.sections if s != "who-loses-what")
    rows = {r["broker"]: r for r in p.cells["diverged"]}
    assert len(p.cells["diverged"]) == 2
    assert set(rows) == {brokers["broker-1"], brokers["broker-2"]}
    for name in ("broker-1", "broker-2"):
        row = rows[brokers[name]]
        assert {k: row[k] for k in DIVERGED[name]} == DIVERGED[name]
        assert str(dirs[2]) in row["leader"]  # broker-3 leads
        out = f"wallet-0-800-{DIVERGED[name]['last offset']}"
        assert row["salvage command"].startswith(
            f"logdoctor export {dirs[int(name[-1]) - 1]}/wallet-0 --out "
        )
        assert out in row["salvage command"] and "--include-control" in row["salvage command"]
        assert row["salvage command"].endswith("--isolation-level read_uncommitted")  # every record (#45)
    (hanging,) = p.cells["hanging"]
    assert {k: hanging[k] for k in HANGING} == HANGING
    assert hanging["broker"] == brokers["broker-1"]
    # no __consumer_offsets among the inputs: no group
    assert "groups" in p.empty
    # the headline counts records at risk: 250 + 120 lost, 540 invisible; no routine retention here
    assert p.at_risk == str(250 + 120 + 540)
    assert 'id="routine-retention"' not in page
    assert 'id="card-at-risk"' in page and "910 record(s) at risk" in page


def test_forensics_scan_report_says_who_loses_what_a_cell_each() -> None:
    root = realworld.require_forensics()
    dirs = [root / f"broker-{b}" / "kafka-logs" for b in (1, 2, 3)]
    rep = scan(dirs, ScanOptions(now_ms=WITHIN_RETENTION), jobs=1)
    page = render_scan_report(rep, read_budget=0)
    _check_forensics_page(page, dirs, {"broker-1": "broker 11", "broker-2": "broker 12"})


@pytest.mark.spark
def test_forensics_census_report_says_who_loses_what_a_cell_each(spark, tmp_path) -> None:
    from logdoctor.report.html import render_census_report
    from logdoctor.spark.census import run_census

    root = realworld.require_forensics()
    dirs = [root / f"broker-{b}" / "kafka-logs" for b in (1, 2, 3)]
    census = run_census(spark, [str(d) for d in dirs], tmp_path / "census", now_ms=WITHIN_RETENTION)
    names = {f["broker"] for f in census.findings if f["code"] == "REPLICA_DIVERGED"}
    assert len(names) == 2
    page = render_census_report(census)
    by_dir = {f["log_dir"]: f["broker"] for f in census.findings if f["broker"]}
    brokers = {"broker-1": by_dir[str(dirs[0])], "broker-2": by_dir[str(dirs[1])]}
    _check_forensics_page(page, dirs, brokers)
    # no lag for a diverged replica: the headline does not call them lagging
    assert "replica(s) of 1 partition(s) lagging" not in page


def test_census_words_read_back_as_the_scans_details() -> None:
    """A census's findings carry no details: their message and fix give the same cells."""
    from logdoctor.report.model import finding_view
    from logdoctor.report.who_loses import facts

    root = realworld.require_forensics()
    dirs = [root / f"broker-{b}" / "kafka-logs" for b in (1, 2, 3)]
    for f in scan(dirs, ScanOptions(), jobs=1).findings:
        view = finding_view(f)
        words = finding_view({"code": f.code, "path": f.path, "message": f.message, "fix": f.fix})
        want, got = facts(view), facts(words)
        assert want is not None and got is not None
        assert {k: got[k] for k in got} == {k: want[k] for k in got}, f.code


def test_an_inventorys_diverged_replica_reads_back_its_offsets() -> None:
    """A census of inventories cannot read the records (the folder is on the broker's host): its words give
    the offsets, and the records at risk count them."""
    from logdoctor.checks import catalog
    from logdoctor.report.model import finding_view
    from logdoctor.report.who_loses import facts, records_at_risk

    f = catalog.make(
        "REPLICA_DIVERGED", "/d1/wallet-0", case="census", logdir="/d1", offset=800,
        topic_partition="wallet-0", broker="broker-1", leader_broker="broker-3", leader_logdir="/d3",
        leader_epoch=2, own_epoch=1,
        truncate_to=800, first=800, last=1049, offsets=250, lost_out="/d1.lost-records/wallet-0-800-1049",
        lost_from=800, log_end_offset=1050, topic="wallet", partition=0, restart_broker="broker 3",
        leader_node="3", reverse="if this replica is elected, the replica in /d3 loses offsets 800 to 999",
    )  # fmt: skip
    row = {"code": f.code, "path": f.path, "message": f.message, "fix": f.fix, "broker": "broker-1"}
    view = finding_view(row)
    d = facts(view)
    assert d is not None
    assert (d["topic"], d["partition"], d["truncate_to"], d["lost_offsets"], d["records_lost"]) == (
        "wallet",
        0,
        800,
        [800, 1049],
        None,
    )
    assert d["leader"] == "broker-3 (/d3)"
    assert d["salvage_command"].startswith("logdoctor export /d1/wallet-0 ")
    assert records_at_risk([view]).lost == 250


def test_the_records_retention_deletes_are_at_risk(tmp_path) -> None:
    """Issue 59 item 4: `logdoctor retention` says all 9 segments (246,425 bytes) of broker-1 go at the
    broker's next check; the scan states it (RETENTION_DUE, a note per partition) and its report's headline
    counts their offsets among the records at risk (it said 0 beside them). A log start offset raised
    into the log (wallet 900: the 3 segments below it go) is stated too, at a time within retention."""
    import json
    import shutil

    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401
    from logdoctor.cli.main import app

    root = realworld.require_forensics()
    d = root / "broker-1" / "kafka-logs"
    now = str(PAST_RETENTION)
    r = CliRunner().invoke(app, ["retention", "--json", "--now", now, str(d)])
    told = json.loads(r.stdout)
    assert (told["summary"]["deleted_segments"], told["summary"]["deleted_bytes"]) == (9, 246_425)
    rep = scan([d], ScanOptions(now_ms=PAST_RETENTION), jobs=1)
    due = [f for f in rep.findings if f.code == "RETENTION_DUE"]
    assert sum(len(f.details["segments"]) for f in due) == 9
    assert sum(f.details["bytes"] for f in due) == 246_425
    # every offset of the three partitions goes: their log ends (as `retention` reads them) are the count
    ends = {f"{p['topic']}-{p['partition']}": p["log_end_offset"] for p in told["partitions"]}
    assert ends == {"billing-0": 882, "stable-0": 600, "wallet-0": 1050}
    assert {f.path.split("/")[-2]: f.details["offsets"] for f in due} == ends
    assert {f.severity for f in due} == {Severity.INFO}  # retention as configured: a note, same exit code
    page = render_scan_report(rep, read_budget=0)
    p = _Tables()
    p.feed(page)
    hanging = 540  # billing-0's open transaction (README), this broker's headline: routine retention apart
    assert p.at_risk == str(hanging)
    assert p.routine == str(sum(ends.values()))
    assert f"deletes {sum(ends.values()):,} record(s) of 3 partition(s) as the topics' retention" in page
    # the fix it prints, run as printed
    (cmd,) = {f.fix.split("`")[1] for f in due}
    assert cmd == f"logdoctor retention {d}"
    assert CliRunner().invoke(app, cmd.split()[1:]).exit_code in (0, 1)

    # a log-start-offset-checkpoint raised to 900 in wallet-0, seen within retention: 3 segments go
    copy = tmp_path / "kafka-logs"
    shutil.copytree(d, copy)
    (copy / "log-start-offset-checkpoint").write_text("0\n1\nwallet 0 900\n")
    assert not [f for f in scan([d], ScanOptions(now_ms=WITHIN_RETENTION), jobs=1).findings
                if f.code == "RETENTION_DUE"]  # fmt: skip
    rep = scan([copy], ScanOptions(now_ms=WITHIN_RETENTION), jobs=1)
    (f,) = [f for f in rep.findings if f.code == "RETENTION_DUE"]
    assert f.path == str(copy / "wallet-0" / "00000000000000000000.log")
    assert f.details["segments"] == [0, 300, 600] and f.details["offsets"] == 900
    assert "3 wholly below the log start offset 900 (log-start-offset-checkpoint)" in f.message
    r = CliRunner().invoke(app, ["retention", "--json", "--now", str(WITHIN_RETENTION), str(copy)])
    assert json.loads(r.stdout)["summary"]["deleted_segments"] == 3

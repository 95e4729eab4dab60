"""The HTML report shows a tiered partition's log start offset and local log start offset apart, from a
scan of ../shared/tiered's LocalTieredStorage log dir (payments-0: log start 0, local log start 1296;
its README.md) and from census rows carrying the inventory's version-2 columns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.report import write_census_report, write_scan_report
from logdoctor.report.model import FLAG_EXPIRED, from_census

PAYLOAD = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)
NOW = 1_710_000_000_000 + 30 * 24 * 3_600_000


def _payload(page: str) -> dict[str, Any]:
    m = PAYLOAD.search(page)
    assert m is not None
    return json.loads(m.group(1))


def _part(data: dict[str, Any], name: str) -> dict[str, Any]:
    (hit,) = [p for p in data["parts"] if p["n"] == name]
    return hit


def test_scan_report_shows_log_start_and_local_log_start(tmp_path: Path) -> None:
    d = realworld.require_tiered() / "kafka-local" / "kafka-logs"
    report = scan([d], ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=1)
    for source, name in ((report, "scan.html"), (report.to_json(), "scan-json.html")):
        page = write_scan_report(source, tmp_path / name).read_text()
        data = _payload(page)
        p0, p1 = _part(data, "payments-0"), _part(data, "payments-1")
        assert (p0["lso"], p0["llso"], p0["tier"]) == (0, 1296, True)
        assert (p1["lso"], p1["llso"], p1["tier"]) == (0, 2289, True)
        audit = _part(data, "audit-0")
        assert (audit["lso"], audit["llso"], audit["tier"]) == (0, None, False)
        assert "local log start" in page  # the partition panel and the timeline's marker
        # local retention waits for upload: no local segment of payments counts as expired
        assert len(p0["s"]["fl"]) == 3 and not any(f & FLAG_EXPIRED for f in p0["s"]["fl"])
        assert any(f & FLAG_EXPIRED for f in audit["s"]["fl"])  # the untiered topic's are


def test_census_rows_carry_the_tiered_columns(tmp_path: Path) -> None:
    replicas = [
        {"broker": "broker-1", "log_dir": "/d1", "topic": "payments", "partition": 0, "log_start_offset": 0,
         "local_log_start_offset": 1296, "remote_storage_enabled": True, "log_end_offset": 2000, "bytes": 10},
        {"broker": "broker-2", "log_dir": "/d2", "topic": "payments", "partition": 0, "log_start_offset": 0,
         "local_log_start_offset": 1620, "remote_storage_enabled": True, "log_end_offset": 2000, "bytes": 9},
    ]
    data = from_census({"replicas": replicas, "log_dirs": [], "findings": []}, now_ms=NOW)
    assert [(p.log_start_offset, p.local_log_start_offset, p.tiered) for p in data.partitions] == [
        (0, 1296, True),
        (0, 1620, True),
    ]
    page = write_census_report(
        {"replicas": replicas, "log_dirs": [], "findings": []}, tmp_path / "c.html", now_ms=NOW
    ).read_text()
    assert "local log start offset 1296 (tiered" in page  # the replica heatmap's hover

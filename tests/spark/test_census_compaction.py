"""The census's ``compaction`` table and findings (issue 46 item 4) against each broker's own scan: one row
per compacted replica with where its cleaner stands, computed by checks.compaction on the executors, and the
compaction findings exactly as the scan gives them (code, path, offset, fix); the bytes checked against the
segment files' sizes; the HTML report's Compaction section lists every row."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks.compaction import COMPACTION_CODES, compaction_row
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.report.html import render_census_report
from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark

NOW = 1_790_000_000_000
DIRS = ("kraft-3.5-greenlemont-n1", "zk-2.8-seanorth")


def test_compaction_table_is_the_scans_cleaner_state(spark, tmp_path: Path) -> None:
    rw = realworld.require()
    sem = realworld.require_semantics()
    inputs = ConfigInputs(topic_overrides={"kv": {"cleanup.policy": "compact"}})
    dirs = [sem / "kafka-logs", *(rw / n for n in DIRS)]
    result = run_census(spark, [str(d) for d in dirs], tmp_path / "census", now_ms=NOW, config_inputs=inputs)
    table = pq.read_table(result.tables["compaction"]).to_pylist()
    got = {r["path"]: r for r in table}
    assert len(got) == len(table)
    expected: dict[str, dict] = {}
    scan_findings = set()
    for d in dirs:
        report = scan([d], ScanOptions(now_ms=NOW, config_inputs=inputs), jobs=1)
        for p in report.partitions:
            row = compaction_row(p)
            if row is not None:
                expected[p.path] = row
        scan_findings |= {
            (f.code, f.path, f.offset, f.fix) for f in report.findings if f.code in COMPACTION_CODES
        }
    assert set(got) == set(expected) and any(p.endswith("/kv-0") for p in got)
    assert any("__consumer_offsets-" in p for p in got)
    for path, row in expected.items():
        assert {k: got[path][k] for k in row} == row, path
        # independent: the bytes the cleaner state counts are segment files of the folder
        logs = sum(f.stat().st_size for f in Path(path).glob("*.log"))
        assert got[path]["clean_bytes"] + got[path]["dirty_bytes"] <= logs
    census_findings = {
        (f["code"], f["path"], f["offset"], f["fix"])
        for f in pq.read_table(result.tables["findings"]).to_pylist()
        if f["code"] in COMPACTION_CODES
    }
    assert census_findings == scan_findings
    page = render_census_report(result, now_ms=NOW)
    assert '<section id="compaction"><h2>Compaction</h2>' in page
    assert page.count('class="compacted-replica"') == len(table)

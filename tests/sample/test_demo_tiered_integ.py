"""`make demo`'s fleet: its tiered partition orders-2 as scan, retention, the census tables and the HTML
report show it (log start, local log start, remote segments and bytes), and `repair` of the demo's other
findings leaving orders-2's log start entry byte for byte.

The expected figures come from the fleet's own description of what it planted (TieredPartition: the remote
end, the segment ids) and from the replicas' segments on disk, not from the code under test; the remote tier's
objects are checked against the metadata with kafka-python in test_demo_tiered_partition.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.retention import retention
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.report.html import write_census_report, write_scan_report
from logdoctor.report.model import census_from_scans
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.sample.remote_tier import TieredPartition

NOW = 1_790_000_000_000
PAYLOAD = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo-tiered-integ") / "fleet"
    return generate_demo_fleet(root, now_ms=NOW)


def _fault(demo) -> TieredPartition:
    return next(f for f in demo.fleet.spec.faults if isinstance(f, TieredPartition))


def _replicas(demo):
    return [r for r in demo.fleet.replicas if (r.topic, r.partition) == ("orders", 2)]


def _dirs(demo, broker_id: int) -> list[str]:
    return [str(d) for d in demo.fleet.log_dirs[broker_id]]


def test_scan_and_retention_show_both_offsets_and_the_upload_state(demo) -> None:
    fault = _fault(demo)
    for rep in _replicas(demo):
        report = scan(_dirs(demo, rep.broker_id), ScanOptions(now_ms=NOW), jobs=1)
        part = next(p for p in report.partitions if (p.topic, p.partition) == ("orders", 2))
        assert part.remote_log_enabled is True
        assert (part.log_start_offset, part.local_log_start_offset) == (0, rep.segments[0].base_offset)
        assert rep.segments[0].base_offset == fault.remote_end
        j = part.to_json()
        got = (j["tiered"], j["log_start_offset"], j["local_log_start_offset"])
        assert got == (True, 0, fault.remote_end)

        ret = retention(_dirs(demo, rep.broker_id), now_ms=NOW, jobs=1)
        pr = next(p for p in ret.partitions if (p.topic, p.partition) == ("orders", 2))
        assert pr.tiered and pr.log_start_offset == 0 and pr.local_log_start_offset == fault.remote_end
        assert pr.highest_remote_offset == fault.remote_end - 1
        assert f"__remote_log_metadata-{fault.metadata_partition}" in pr.upload_state
        assert pr.new_log_start_offset == 0  # local retention never moves a remote log's log start


def test_census_tables_and_the_html_report_show_the_remote_part(demo, tmp_path: Path) -> None:
    fault = _fault(demo)
    scans = {
        b: scan(_dirs(demo, b), ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=1)
        for b in sorted({r.broker_id for r in _replicas(demo)})
    }
    census = census_from_scans(scans)
    rows = [r for r in census["replicas"] if (r["topic"], r["partition"]) == ("orders", 2)]
    assert len(rows) == len(_replicas(demo))
    for r in rows:
        got = (r["log_start_offset"], r["local_log_start_offset"], r["tiered"])
        assert got == (0, fault.remote_end, True)
        assert r["remote_segments"] == len(fault.segment_ids)
        assert (r["remote_log_start_offset"], r["remote_log_end_offset"]) == (0, fault.remote_end)
        assert r["remote_bytes"] > 0
    page = write_census_report(census, tmp_path / "census.html", now_ms=NOW).read_text()
    data = json.loads(PAYLOAD.search(page).group(1))
    parts = [p for p in data["parts"] if p["n"] == "orders-2"]
    assert parts and all((p["lso"], p["llso"], p["tier"]) == (0, fault.remote_end, True) for p in parts)
    assert all(p["rt"]["n"] == len(fault.segment_ids) and p["rt"]["e"] == fault.remote_end for p in parts)
    assert all(p["rt"]["b"] == rows[0]["remote_bytes"] for p in parts)

    one = next(iter(scans.values()))
    page = write_scan_report(one, tmp_path / "scan.html").read_text()
    (p,) = [p for p in json.loads(PAYLOAD.search(page).group(1))["parts"] if p["n"] == "orders-2"]
    got = (p["lso"], p["llso"], p["tier"], p["rt"]["n"])
    assert got == (0, fault.remote_end, True, len(fault.segment_ids))


def test_repair_of_the_other_findings_leaves_the_tiered_log_start_entry(demo, tmp_path: Path) -> None:
    """Broker 1 holds orders-2 and the demo's corrupt offset index; an entry beyond the log end of the
    untiered payments-0 is planted so that the repair rewrites log-start-offset-checkpoint. The repair, run
    as an operator would (dry run, then --apply), fixes both and leaves `orders 2 0` byte for byte."""
    rep = next(r for r in _replicas(demo) if r.broker_id == 1)
    src = Path(_dirs(demo, 1)[0])
    assert src == rep.log_dir
    d = tmp_path / "kafka-logs-0"
    shutil.copytree(src, d)
    lso = d / "log-start-offset-checkpoint"
    before = lso.read_bytes()
    entry = b"\norders 2 0\n"
    assert entry in before
    lines = before.decode().split("\n")[2:-1]
    lso.write_bytes(f"0\n{len(lines) + 1}\n".encode() + "".join(f"{x}\n" for x in lines).encode()
                    + b"payments 0 99999999\n")
    scanned = scan([d], ScanOptions(now_ms=NOW), jobs=1)
    assert {"INDEX_CORRUPT"} <= {f.code for f in scanned.findings}
    assert any(f.path == str(lso) for f in scanned.findings)

    args = ["repair", str(d), "--topic-config", "payments:remote.storage.enable=false", "--jobs", "1"]
    dry = CliRunner().invoke(app, args, terminal_width=200)
    assert dry.exit_code in (0, 1, 2) and "Traceback" not in dry.output, dry.output
    assert lso.read_text().endswith("payments 0 99999999\n")  # the dry run writes nothing
    res = CliRunner().invoke(app, [*args, "--apply"], terminal_width=200)
    assert res.exit_code in (0, 1, 2) and "Traceback" not in res.output, res.output
    after = lso.read_bytes()
    assert after != before and b"payments 0 99999999" not in after  # the file was rewritten
    assert after.split(b"\n").count(b"orders 2 0") == 1  # the tiered entry, byte for byte
    assert {f.code for f in scan([d], ScanOptions(now_ms=NOW), jobs=1).findings}.isdisjoint(
        {"INDEX_CORRUPT"}
    )

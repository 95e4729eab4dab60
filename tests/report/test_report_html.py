"""The HTML report without a browser: what it embeds, what it marks, how big it gets.

The fleet comes from logdoctor.sample (tests/report/report_demo.py) with planted faults, and its
census from the real Spark job (one local session for the module, tests/report/conftest.py); per-segment
figures read back from disk are compared with what the generator says it wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from report_demo import RETENTION_MS, DemoFleet

from logdoctor.report import (
    census_from_scans,
    from_census,
    render_census_report,
    write_census_report,
    write_scan_report,
)
from logdoctor.report.html import plotly_js_gzip_base64
from logdoctor.report.model import FLAG_ACTIVE, FLAG_CORRUPT, FLAG_EXPIRED, FLAG_RISK
from logdoctor.report.segments import segment_views
from logdoctor.report.templates import JS
from logdoctor.spark.census import CensusResult

PAYLOAD = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def payload(page: str) -> dict[str, Any]:
    m = PAYLOAD.search(page)
    assert m is not None
    return json.loads(m.group(1))


def static_part(page: str) -> str:
    """The page without the inlined scripts (plotly.js mentions URLs in its code; it fetches none)."""
    return re.sub(r"<script\b[^>]*>.*?</script>", "", page, flags=re.S)


def part(data: dict[str, Any], name: str, broker: str | None) -> dict[str, Any]:
    hits = [p for p in data["parts"] if p["n"] == name and p["br"] == broker]
    assert len(hits) == 1, [(p["n"], p["br"]) for p in data["parts"]]
    return hits[0]


def test_scan_report_marks_the_planted_segments(demo: DemoFleet, tmp_path: Path) -> None:
    broker, topic, number, log = demo.risk
    out = write_scan_report(demo.scan(broker), tmp_path / "scan.html", retention=RETENTION_MS)
    page = out.read_text()
    data = payload(page)
    assert data["now"] == demo.now_ms and data["cutoff"] == demo.now_ms - RETENTION_MS
    assert data["parts"][0]["n"] == f"{topic}-{number}"  # the worst partition comes first
    s = part(data, f"{topic}-{number}", f"broker {broker}")["s"]
    k = s["b"].index(int(log.stem))
    assert s["fl"][k] & FLAG_RISK and s["fl"][k] & FLAG_CORRUPT
    assert s["tb"][k] == 0  # the zeroed time index: the broker's largest timestamp is 0
    gen = demo.fleet.replica(broker, topic, number).segments[0]
    assert s["tt"][k] == gen.max_timestamp  # the true one, from the log
    codes = [data["findings"]["codes"][data["findings"]["c"][i]] for i in s["f"][k]]
    # RETENTION_RISK names the zeroed time index as its root cause; RETENTION_DUE (a note) says what the
    # broker's next retention check deletes: this segment, early
    assert sorted(codes) == ["RETENTION_DUE", "RETENTION_RISK"]
    assert "Root cause: " in data["findings"]["m"][s["f"][k][codes.index("RETENTION_RISK")]]
    assert s["fl"][-1] & FLAG_ACTIVE
    assert sum(1 for f in s["fl"] if f & FLAG_RISK) == 1
    # the headline says it without any script
    assert 'data-level="critical"' in page
    assert "1 segment(s) would be deleted early by time retention" in static_part(page)


def test_scan_json_dict_reads_segments_from_disk(demo: DemoFleet, tmp_path: Path) -> None:
    """The scan's JSON carries no per-segment data: the report reads it through logdir.model."""
    broker, topic, number, _log = demo.corrupt
    as_json = demo.scan(broker).to_json()
    assert "segment_infos" not in as_json["partitions"][0]
    data = payload(write_scan_report(as_json, tmp_path / "scan.html").read_text())
    spec = demo.fleet.spec
    for rep in [r for r in demo.fleet.replicas if r.broker_id == broker][:4]:
        s = part(data, f"{rep.topic}-{rep.partition}", f"broker {broker}")["s"]
        assert s["b"] == [g.base_offset for g in rep.segments]
        assert s["z"] == [g.size for g in rep.segments]
        assert s["l"] == [g.next_offset - 1 for g in rep.segments]
        assert s["tt"] == [g.max_timestamp for g in rep.segments]
        step = spec.timestamp_step_ms
        assert s["t0"] == [spec.base_timestamp_ms + g.base_offset * step for g in rep.segments]
    s = part(data, f"{topic}-{number}", f"broker {broker}")["s"]
    assert s["fl"][0] & FLAG_CORRUPT and not s["fl"][0] & FLAG_RISK


def test_segment_views_match_the_generator(demo: DemoFleet) -> None:
    for rep in demo.fleet.replicas[:6]:
        views = segment_views(str(rep.path), None, rep.log_end_offset)
        assert views is not None
        assert [(v.base_offset, v.last_offset, v.size) for v in views] == [
            (g.base_offset, g.next_offset - 1, g.size) for g in rep.segments]
    assert segment_views("/nonexistent/orders-0", None, 10) is None


def test_expired_segments_are_the_ones_past_the_cutoff(demo: DemoFleet, tmp_path: Path) -> None:
    data = payload(write_census_report(demo.census, tmp_path / "fleet.html", now_ms=demo.now_ms).read_text())
    cutoff = data["cutoff"]
    seen = 0
    for p in data["parts"]:
        s = p["s"]
        for k in range(len(s["b"]) - 1):  # the active segment is never deleted by time
            expired = bool(s["fl"][k] & FLAG_EXPIRED)
            assert expired == (s["tb"][k] < cutoff), (p["n"], s["b"][k])
            seen += expired
    assert seen > 0  # the zeroed time index at least


def test_census_report_shows_the_planted_faults(demo: DemoFleet, tmp_path: Path) -> None:
    page = write_census_report(demo.census, tmp_path / "fleet.html", now_ms=demo.now_ms).read_text()
    static = static_part(page)
    broker, topic, number, lag = demo.lagging
    head = f'<tr class="lagging-replica" data-partition="{topic}-{number}" data-broker="broker-{broker}">'
    row = re.search(re.escape(head) + "(.*?)</tr>", static)
    assert row is not None
    assert f"{lag:,} behind" in row.group(1)
    assert static.count('class="lagging-replica"') == 1  # no other replica lags
    assert f"1 replica(s) of 1 partition(s) lagging, up to {lag} offsets behind" in static
    _broker, full_dir, used = demo.full_disk
    assert f"fullest disk {used:.0%} full ({full_dir})" in static
    data = payload(page)
    assert data["kind"] == "fleet"
    broker, topic, number, index = demo.corrupt
    p = part(data, f"{topic}-{number}", f"broker-{broker}")
    k = p["s"]["b"].index(int(index.stem))
    assert p["s"]["fl"][k] & FLAG_CORRUPT and not p["s"]["fl"][k] & FLAG_RISK
    broker, topic, number, log = demo.risk
    p = part(data, f"{topic}-{number}", f"broker-{broker}")
    k = p["s"]["b"].index(int(log.stem))
    assert p["s"]["fl"][k] & FLAG_RISK
    f = data["findings"]
    assert str(index) in f["p"] and str(log.with_suffix(".timeindex")) in f["p"]
    codes = [f["codes"][c] for c in f["c"]]
    assert {"REPLICA_LAG", "LOG_DIR_NEARLY_FULL", "RETENTION_RISK", "INDEX_CORRUPT"} <= set(codes)
    # the census's own fix commands travel with the findings
    lag_i = codes.index("REPLICA_LAG")
    assert f["fc"][lag_i].startswith("logdoctor sync-replica orders-") and " --leader " in f["fc"][lag_i]
    # every finding about a partition links to its timeline (a log dir's and a cluster's quorum's are not)
    cluster_wide = ("LOG_DIR_NEARLY_FULL", "CONTROLLER_QUORUM_TOO_SMALL")
    assert all(f["part"][i] >= 0 for i, c in enumerate(codes) if c not in cluster_wide)
    # the census's tables as plain dicts (keys, not attributes: `census --json`) give the same page data
    assert isinstance(demo.census, CensusResult)
    tables = {name: getattr(demo.census, name) for name in ("log_dirs", "replicas", "findings")}
    again = payload(write_census_report(tables, tmp_path / "again.html", now_ms=demo.now_ms).read_text())
    assert again == data


def test_census_from_scans(demo: DemoFleet, tmp_path: Path) -> None:
    """The fleet report from per-broker scans (no census job): same planted lag."""
    census = census_from_scans({b: demo.scan(b) for b in demo.fleet.log_dirs})
    data = from_census(census)
    broker, topic, number, lag = demo.lagging
    lagging = [(r.broker, r.topic, r.partition, r.lag) for r in data.replicas if r.lag > 0]
    assert lagging == [(broker, topic, number, lag)]
    assert data.now_ms == demo.now_ms


def test_self_contained(demo: DemoFleet, tmp_path: Path) -> None:
    page = write_census_report(demo.census, tmp_path / "fleet.html").read_text()
    static = static_part(page)
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert not re.search(r"<link[^>]*href=\"(?!data:)", static)
    assert not re.search(r"(src|href)=\"(https?:)?//", static)
    assert '<link rel="icon" href="data:,">' in page  # no favicon request either
    # plotly.js inlined once, gzip-compressed (the page unpacks it), never per figure
    assert page.count(plotly_js_gzip_base64()[:2000]) == 1
    assert "Plotly.newPlot" not in page.replace(JS, "")


def test_untrusted_text_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    census = {
        "replicas": [{"broker": 0, "log_dir": "/d", "topic": "t", "partition": 0, "log_start_offset": 0,
                      "log_end_offset": 5}],
        "findings": [{"code": "LOG_CORRUPT", "severity": "error", "path": "/d/t-0/</script><b>x",
                      "message": "</script><script>alert(1)</script>\u2028", "fix": "`rm -rf </script>`"}],
    }
    page = render_census_report(census, now_ms=0)
    assert "<script>alert(1)" not in page
    data = payload(page)
    assert data["findings"]["m"] == ["</script><script>alert(1)</script>\u2028"]
    assert "<b>x" not in static_part(page)


def test_census_tables_in_any_shape_with_aliases() -> None:
    rows = [
        {"broker_id": b, "log_dir": f"/data/b{b}", "topic": "t", "partition": p, "start_offset": 0,
         "leo": 1000 - (b == 2 and p == 3) * 400, "size_bytes": 10}
        for b in range(3) for p in range(5)
    ]
    disks = [{"node_id": b, "log_dir": f"/data/b{b}", "disk_total_bytes": 1000,
              "disk_free_bytes": 50 + 400 * b} for b in range(3)]
    for table in (rows, pd.DataFrame(rows), pa.Table.from_pylist(rows)):
        dtable = disks if isinstance(table, list) else pd.DataFrame(disks)
        data = from_census({"replicas": table, "log_dirs": dtable}, now_ms=0)
        lags = {(r.broker, r.partition): r.lag for r in data.replicas}
        assert lags[(2, 3)] == 400 and sum(lags.values()) == 400
        assert [round(d.fullness or 0, 2) for d in data.disks] == [0.95, 0.55, 0.15]
        assert {d.kafka_bytes for d in data.disks} == {50}
    page = render_census_report({"replicas": rows, "log_dirs": disks}, now_ms=0)
    assert 'data-level="critical"' in page  # a disk 95% full
    assert "fullest disk 95% full (/data/b0)" in page


def test_healthy_fleet_says_so() -> None:
    rows = [{"broker": b, "log_dir": f"/data/b{b}", "topic": "t", "partition": 0, "log_start_offset": 0,
             "log_end_offset": 7} for b in range(2)]
    disks = [{"broker": b, "log_dir": f"/data/b{b}", "total_bytes": 100, "used_bytes": 10} for b in range(2)]
    page = render_census_report({"replicas": rows, "log_dirs": disks}, now_ms=0)
    assert 'data-level="ok"' in page and "Healthy" in page
    assert "No replica is behind" in page


def _big_scan(n: int, findings: int) -> dict[str, Any]:
    parts, out = [], []
    for i in range(n):
        topic, number, log_dir = f"topic-{i % 100:03d}", i // 100, f"/nonexistent/kafka-logs-{i % 4}"
        segs = [{"base_offset": 10_000 * k, "size": 1 << 20, "mtime_ms": 1_700_000_000_000 + k,
                 "broker_largest_timestamp": 1_700_000_000_000 + 60_000 * k,
                 "broker_timestamp_source": "timeindex",
                 "true_largest_timestamp": None, "last_offset": None, "recovered_at_startup": False}
                for k in range(5)]
        parts.append({"topic": topic, "partition": number, "log_dir": log_dir, "log_start_offset": 0,
                      "log_end_offset": 50_000, "segments": 5, "bytes": 5 << 20, "recovery_point": 50_000,
                      "high_watermark": 50_000, "segment_infos": segs})
    for j in range(findings):
        i = (j * 7) % n
        p = parts[i]
        seg = f"{p['log_dir']}/{p['topic']}-{p['partition']}/{10_000 * (j % 5):020d}"
        out.append({"code": ("INDEX_CORRUPT", "RETENTION_RISK", "CHECKPOINT_MISMATCH")[j % 3],
                    "severity": ("error", "error", "warning")[j % 3], "path": seg + ".timeindex",
                    "position": 0, "offset": None, "message": "x" * 300,
                    "fix": f"Run `logdoctor repair {p['log_dir']} --only INDEX_CORRUPT` " + "y" * 150})
    return {"depth": "default", "now_ms": 1_700_000_000_000 + 7 * 86_400_000,
            "log_dirs": [{"path": f"/nonexistent/kafka-logs-{k}", "node_id": 1} for k in range(4)],
            "partitions": parts, "findings": out}


def test_size_stays_bounded_for_10000_partitions(tmp_path: Path) -> None:
    js = len(plotly_js_gzip_base64())
    scan = _big_scan(10_000, 6_000)
    out = write_scan_report(scan, tmp_path / "big.html")
    size = out.stat().st_size
    data = payload(out.read_text())
    assert len(data["parts"]) == 200
    assert len(data["findings"]["c"]) == 2000
    assert size - js < 2_000_000, size - js  # everything but plotly.js
    assert size < 7_000_000
    # the census of the same fleet, three replicas each, as a DataFrame
    replicas = pd.DataFrame([
        {"broker": b, **{k: v for k, v in p.items() if k != "segment_infos"},
         "log_end_offset": p["log_end_offset"] - (b == 2) * (i % 50)}
        for i, p in enumerate(scan["partitions"]) for b in range(3)
    ])
    out = write_census_report({"replicas": replicas, "findings": scan["findings"]}, tmp_path / "fleet.html")
    size = out.stat().st_size
    data = payload(out.read_text())
    assert len(data["parts"]) == 0  # no segment data in this census and no files on disk
    assert size - js < 2_000_000, size - js
    page = out.read_text()
    assert page.count('class="lagging-replica"') == 50
    assert "more lagging replica(s) not listed" in page


def test_the_census_tables_hold_the_generated_faults(demo: DemoFleet, tmp_path: Path) -> None:
    """The Spark census's own rows (not the page) against the generator's spec: one lagging replica,
    by the planted lag; the full disk; the corrupt index and the zeroed time index as findings."""
    census = demo.census
    assert census.brokers == len(demo.fleet.log_dirs) + 1  # the fleet's brokers and the KRaft one beside
    for table in ("replicas", "log_dirs", "findings"):
        assert census.total(table) == len(getattr(census, table))  # small fleet: every row collected
    broker, topic, number, lag = demo.lagging
    lagging = [(r["broker_id"], r["topic"], r["partition"], r["lag_offsets"]) for r in census.replicas
               if r["lag_offsets"]]
    assert lagging == [(broker, topic, number, lag)]
    rows = {(r["broker_id"], r["topic"], r["partition"]): r for r in census.replicas}
    for g in demo.fleet.replicas:  # every generated replica, with the offsets the generator wrote
        row = rows[(g.broker_id, g.topic, g.partition)]
        assert (row["log_start_offset"], row["log_end_offset"]) == (g.log_start_offset, g.log_end_offset)
    _broker, full_dir, used = demo.full_disk
    row = next(d for d in census.log_dirs if d["log_dir"] == str(full_dir))
    assert row["disk_used_fraction"] == pytest.approx(used, abs=0.01)
    by_code = {}
    for f in census.findings:
        by_code.setdefault(f["code"], []).append(f["path"])
    broker, topic, number, index = demo.corrupt
    assert str(index) in by_code["INDEX_CORRUPT"]
    broker, topic, number, log = demo.risk
    assert str(log.with_suffix(".timeindex")) in by_code["RETENTION_RISK"]
    assert by_code["REPLICA_LAG"] and by_code["LOG_DIR_NEARLY_FULL"]
    data = payload(write_census_report(census, tmp_path / "fleet.html", now_ms=demo.now_ms).read_text())
    broker, topic, number, lag = demo.lagging
    assert [(r["n"], r["lag"]) for r in data["parts"] if r["lag"]] == [(f"{topic}-{number}", lag)]


def test_lag_table_says_whose_high_watermark_each_number_is(demo: DemoFleet, tmp_path: Path) -> None:
    """The follower's own checkpointed high watermark is not the partition's (issue 17): both, labelled."""
    out = write_census_report(demo.census, tmp_path / "fleet.html", now_ms=demo.now_ms)
    page = static_part(out.read_text())
    head = re.search(r'<table id="lagging-table"><thead><tr>(.*?)</tr></thead>', page)
    assert head is not None
    columns = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<th\b.*?</th>", head.group(1))]
    assert columns[-2:] == ["partition's high watermark", "this replica's checkpointed high watermark"]
    broker, topic, number, _lag = demo.lagging
    head_tr = f'<tr class="lagging-replica" data-partition="{topic}-{number}" data-broker="broker-{broker}">'
    row = re.search(re.escape(head_tr) + "(.*?)</tr>", page)
    assert row is not None
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td\b.*?</td>", row.group(1))]
    follower = demo.fleet.replica(broker, topic, number)
    others = [r for r in demo.fleet.replicas if (r.topic, r.partition) == (topic, number)]
    others = [r for r in others if r is not follower]
    # the leader and the in-sync follower checkpointed the full log end (OutOfIsrReplica); the lagging one
    # its own, which is its log end offset
    assert cells[-2:] == [f"{max(r.log_end_offset for r in others):,}", f"{follower.log_end_offset:,}"]
    assert cells[-2] != cells[-1]


def test_the_tiered_partition_shows_its_remote_part(demo: DemoFleet, tmp_path: Path) -> None:
    """The demo's tiered partition: the census report, the scan report and the report from scans carry its
    remote tier as the store holds it (the .log objects LocalTieredStorage wrote beside the fleet)."""
    from logdoctor.sample.remote_tier import REMOTE_STORE_DIR, TieredPartition

    fault = next(f for f in demo.fleet.spec.faults if isinstance(f, TieredPartition))
    reps = [r for r in demo.fleet.replicas if (r.topic, r.partition) == (fault.topic, fault.partition)]
    folder = f"{fault.topic}-{fault.partition}-{reps[0].topic_id}"
    store = demo.root / REMOTE_STORE_DIR / "kafka-tiered-storage" / folder
    logs = sorted(store.glob("*.log"))
    want = {"n": len(logs), "b": sum(p.stat().st_size for p in logs), "s": 0, "e": fault.remote_end}
    assert want["n"] == len(fault.segment_ids) >= 2
    name = f"{fault.topic}-{fault.partition}"
    page = write_census_report(demo.census, tmp_path / "fleet.html", now_ms=demo.now_ms).read_text()
    data = payload(page)
    for rep in reps:
        p = part(data, name, f"broker-{rep.broker_id}")
        assert p["rt"] == want
        assert p["lso"] == 0 and p["s"]["b"][0] == fault.remote_end  # log start below the local segments
    assert "'remote tier'" in page  # the partition panel and the timeline say it
    census_row = next(
        r for r in demo.census.partitions if (r["topic"], r["partition"]) == (fault.topic, fault.partition)
    )
    assert (census_row["remote_segments"], census_row["remote_bytes"]) == (want["n"], want["b"])
    offsets = (census_row["remote_log_start_offset"], census_row["remote_log_end_offset"])
    assert offsets == (0, fault.remote_end)
    rep = reps[0]
    scan_data = payload(write_scan_report(demo.scan(rep.broker_id), tmp_path / "scan.html").read_text())
    [scan_part] = [p for p in scan_data["parts"] if p["n"] == name]  # one broker's scan: one replica
    assert scan_part["rt"] == want
    from_scans = from_census(census_from_scans({b: demo.scan(b) for b in (rep.broker_id,)}))
    [view] = [v for v in from_scans.partitions if (v.topic, v.partition) == (fault.topic, fault.partition)]
    assert view.remote is not None
    assert (view.remote.segments, view.remote.end_offset) == (want["n"], want["e"])
    # an untiered partition shows none
    assert part(data, "orders-0", "broker-1")["rt"] is None

"""The demo tells one story: its data is dated relative to its "now", and `retention`, the scan's
findings and the report's timeline say the same about the same segments (issue 17, part B item 2).

The expectations are Kafka's (UnifiedLog.deleteOldSegments / deletableSegments): with records two hours
old and 7-day retention, only the planted segment whose time index was zeroed goes (largestTimestamp 0,
RETENTION_RISK); a month later every segment goes, the non-empty active one too (after a roll), since the
high watermark is at the log end, except those of the demo's tiered topic, which local retention keeps
until they are uploaded, and those of ``__remote_log_metadata``, which the broker creates with no time
retention (TopicBasedRemoteLogMetadataManager.createRemoteLogMetadataTopicRequest: retention.ms is
remote.log.metadata.topic.retention.ms, default -1).
"""

from __future__ import annotations

import json
import re

import pytest

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.retention import retention
from logdoctor.checks.retention_round import RETENTION_MS_BREACH
from logdoctor.checks.scanner import scan
from logdoctor.report.html import render_scan_report
from logdoctor.report.model import FLAG_ACTIVE, FLAG_EXPIRED, FLAG_RISK
from logdoctor.sample.fleet import DEMO_DATA_AGE_MS, demo_fleet_spec, generate_demo_fleet
from logdoctor.sample.logdir import ZeroedTimeIndex
from logdoctor.sample.remote_tier import TieredPartition

NOW = 1_893_456_000_000  # 2030-01-01: the demo is generated for any "now", not for 2023
DAY = 86_400_000


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    return generate_demo_fleet(tmp_path_factory.mktemp("demo") / "fleet", now_ms=NOW)


def _payload(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))


def _stories(demo, broker: int, now: int) -> tuple[dict, dict, list]:
    """{partition: [(base, reason)]} from `retention` and from the report page, and the scan findings."""
    dirs = demo.fleet.log_dirs[broker]
    rep = retention(dirs, now_ms=now, jobs=1)
    said = {
        f"{p.topic}-{p.partition}": [(s.base_offset, s.reason) for s in p.segments] for p in rep.partitions
    }
    report = scan(dirs, ScanOptions(Depth.DEFAULT, now), jobs=1)
    page = _payload(render_scan_report(report, max_timeline_partitions=1000))
    shown = {}
    for p in page["parts"]:
        s = p["s"]
        flags = s["fl"]
        assert all(
            (f & FLAG_EXPIRED) == (FLAG_EXPIRED if r else 0) for f, r in zip(flags, s["rs"], strict=True)
        )
        assert flags[-1] & FLAG_ACTIVE
        shown[p["n"]] = list(zip(s["b"], s["rs"], strict=True))
        for k, f in enumerate(flags):
            if f & FLAG_RISK:
                assert (
                    s["rs"][k] == RETENTION_MS_BREACH
                )  # the risk segment is shown deleted, as retention says
    return said, shown, report.findings


def test_demo_data_is_dated_relative_to_now(demo) -> None:
    assert demo.now_ms == NOW
    newest = max(seg.max_timestamp for r in demo.fleet.replicas for seg in r.segments)
    oldest = demo.fleet.spec.base_timestamp_ms
    assert newest == NOW - DEMO_DATA_AGE_MS
    assert NOW - 3 * 3600_000 < oldest < newest


def test_retention_report_and_scan_agree_at_the_demo_now(demo) -> None:
    zt = next(f for f in demo.fleet.spec.faults if isinstance(f, ZeroedTimeIndex))
    risk_seg = demo.fleet.replica(zt.broker_id, zt.topic, zt.partition).segments[zt.segment]
    deleted = []
    for broker in sorted(demo.fleet.log_dirs):
        said, shown, findings = _stories(demo, broker, NOW)
        assert shown == said  # the same segments, the same verdicts
        deleted += [(broker, name, base, why) for name, segs in said.items() for base, why in segs if why]
        risks = [f for f in findings if f.code == "RETENTION_RISK"]
        if broker == zt.broker_id:
            assert [f.details["segment"] for f in risks] == [str(risk_seg.path)]
        else:
            assert risks == []
    # the headline's one RETENTION_RISK segment is the one segment retention deletes
    name = f"{zt.topic}-{zt.partition}"
    assert deleted == [(zt.broker_id, name, risk_seg.base_offset, RETENTION_MS_BREACH)]


def test_the_segment_deleted_early_is_counted_at_risk(demo) -> None:
    """Issue 59 item 4: the demo's report said "0 records at risk" beside "1 segment(s) would be deleted
    early". The planted segment goes at the next retention check (RETENTION_DUE, its RETENTION_RISK told
    as the cause): its offsets, up to the next segment's base, are records at risk in the headline."""
    zt = next(f for f in demo.fleet.spec.faults if isinstance(f, ZeroedTimeIndex))
    replica = demo.fleet.replica(zt.broker_id, zt.topic, zt.partition)
    seg, nxt = replica.segments[zt.segment], replica.segments[zt.segment + 1]
    report = scan(demo.fleet.log_dirs[zt.broker_id], ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    (due,) = [f for f in report.findings if f.code == "RETENTION_DUE"]
    assert due.details["segments"] == [seg.base_offset] and due.details["early"] == 1
    assert "only because of a wrong largest timestamp (RETENTION_RISK)" in due.message
    offsets = nxt.base_offset - seg.base_offset
    page = render_scan_report(report)
    assert f"{offsets:,} record(s) at risk" in page and offsets > 0
    assert "1 segment(s) would be deleted early" in page


def test_a_month_later_the_active_segment_goes_too_in_both(demo) -> None:
    later = NOW + 30 * DAY
    said, shown, _findings = _stories(demo, 1, later)
    assert shown == said
    tiered = {f"{t.topic}-" for t in demo_fleet_spec(now_ms=NOW).faults if isinstance(t, TieredPartition)}
    assert tiered == {"orders-"}
    report = scan(demo.fleet.log_dirs[1], ScanOptions(Depth.DEFAULT, later), jobs=1)
    data = _payload(render_scan_report(report, max_timeline_partitions=1000))
    cuts = {p["n"]: p["cut"] for p in data["parts"]}
    assert "__remote_log_metadata-0" in said
    for name, segs in said.items():
        if name.startswith("__remote_log_metadata-"):
            # TopicBasedRemoteLogMetadataManager.createRemoteLogMetadataTopicRequest creates the topic with
            # retention.ms = remote.log.metadata.topic.retention.ms (default -1): no time retention, no
            # cut-off in the report, and no segment of it deleted however old
            assert [why for _b, why in segs] == [None] * len(segs), name
            assert cuts[name] is None, name
            continue
        if name.startswith(tuple(tiered)):
            # a tiered topic (remote.storage.enable is a topic config: the demo's orders-2 makes orders
            # tiered): local retention deletes a segment only once it is uploaded (UnifiedLog
            # deletableSegments), and none of these local segments is: each is kept, waiting for upload
            assert [why for _b, why in segs] == [None] * len(segs), name
            continue
        # high watermark at the log end: every segment is deleted, the non-empty active one after a roll
        assert [why for _b, why in segs] == [RETENTION_MS_BREACH] * len(segs), name


def test_report_header_gives_the_retention_the_topics_get(demo, tmp_path) -> None:
    from logdoctor.checks.topic_config import config_inputs

    dirs = demo.fleet.log_dirs[1]
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW), jobs=1)
    page = render_scan_report(report)
    assert "retention.ms 604,800,000 (7 days)" in page  # every topic: Kafka's default
    inputs = config_inputs(topic_config=["clicks:retention.ms=3600000", "payments:cleanup.policy=compact"])
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW, config_inputs=inputs), jobs=1)
    page = render_scan_report(report)
    assert "retention.ms per topic (2 values, 1.0 hours to 7 days); 3 compacted partition(s)" in page
    data = _payload(render_scan_report(report, max_timeline_partitions=1000))
    cuts = {p["n"].rsplit("-", 1)[0]: p["cut"] for p in data["parts"]}
    assert cuts["clicks"] == NOW - 3_600_000 and cuts["orders"] == NOW - 7 * DAY and cuts["payments"] is None

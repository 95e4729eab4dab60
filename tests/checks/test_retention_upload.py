"""Local retention of a tiered partition knows the upload state from the remote log metadata.

K:core/src/main/scala/kafka/log/UnifiedLog.scala deletableSegments (isSegmentEligibleForDeletion): a local
segment goes only when its last offset is at or below highestOffsetInRemoteStorage, which RemoteLogManager
sets from the COPY_SEGMENT_FINISHED segments (findHighestRemoteOffset). Checked on copies of ../shared/tiered
(Kafka's classes + LocalTieredStorage; README: payments-0 local [1296, 2000) in segments 1296, 1620, 1944,
remote [0, 1296); payments-1 remote [0, 2289)); one more upload is planted with the encoder that
tests/sample/test_remote_metadata_encoder.py checks against Kafka's own bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from typer.testing import CliRunner

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.retention import retention
from logdoctor.checks.retention_round import RETENTION_MS_BREACH
from logdoctor.checks.scanner import scan
from logdoctor.checks.topic_config import config_inputs
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.formats.records import iter_batches
from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition
from logdoctor.report.html import write_scan_report
from logdoctor.report.model import FLAG_EXPIRED
from logdoctor.sample.remote_tier import MetadataEvent, metadata_batches, segment_metadata, segment_update

NOW = 1_710_000_000_000 + 30 * 24 * 3_600_000  # a month after the records: 7-day retention breached
P0 = TopicIdPartition("cGF5bWVudHMtdG9waWMwMQ", "payments", 0)
SEG = "AAAAAAAAAAAAAAAAAAAAAA"


def _copy(tmp_path: Path) -> Path:
    src = realworld.require_tiered() / "kafka-local" / "kafka-logs"
    dst = tmp_path / "kafka-logs"
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst


def _upload_1296(log_dir: Path) -> None:
    """RemoteLogManager's copy of payments-0's local segment [1296, 1619]: STARTED then FINISHED, appended
    to __remote_log_metadata-21 (where payments-0's events are)."""
    path = log_dir / "__remote_log_metadata-21" / "00000000000000000000.log"
    data = path.read_bytes()
    last = list(iter_batches(data))[-1]
    ts = 1795454800000
    records = [
        segment_metadata(
            P0, SEG, 1296, 1619, broker_id=0, event_timestamp_ms=ts, max_timestamp_ms=1710000001619,
            leader_epochs=[(0, 1296)], size=63000,
        ),
        segment_update(P0, SEG, SegmentState.COPY_SEGMENT_FINISHED, broker_id=0, event_timestamp_ms=ts + 1),
    ]
    more = metadata_batches(
        [MetadataEvent(r, ts + i) for i, r in enumerate(records)],
        base_offset=last.last_offset + 1,
        leader_epoch=last.partition_leader_epoch,
    )
    path.write_bytes(data + more)


def _parts(rep):
    return {(p.topic, p.partition): p for p in rep.partitions}


def test_real_metadata_gives_the_highest_offset_in_remote_storage() -> None:
    """The real metadata: payments-0 uploaded up to 1295, payments-1 up to 2288 (README); no local segment is
    uploaded, so each first local segment still waits, now known rather than assumed."""
    rep = retention([realworld.require_tiered() / "kafka-local" / "kafka-logs"], now_ms=NOW, jobs=1)
    parts = _parts(rep)
    p0, p1 = parts[("payments", 0)], parts[("payments", 1)]
    assert (p0.highest_remote_offset, p1.highest_remote_offset) == (1295, 2288)
    assert "__remote_log_metadata-21" in p0.upload_state and "1295" in p0.upload_state
    assert [s.base_offset for s in p0.waiting] == [1296] and p0.deleted == []
    assert parts[("audit", 0)].highest_remote_offset is None
    assert p0.to_json()["highest_remote_offset"] == 1295


def test_local_retention_deletes_a_segment_once_the_metadata_shows_it_uploaded(tmp_path: Path) -> None:
    """Segment 1296 is uploaded ([1296, 1619] COPY_SEGMENT_FINISHED): local retention deletes it, the local
    log start moves to 1620 and the log start stays 0; 1620 (not uploaded) waits. Before the replay's upload
    state reached the simulation, 1296 was shown waiting and nothing deleted."""
    log_dir = _copy(tmp_path)
    _upload_1296(log_dir)
    p0 = _parts(retention([log_dir], now_ms=NOW, jobs=1))[("payments", 0)]
    assert p0.highest_remote_offset == 1619
    assert [(s.base_offset, s.reason) for s in p0.deleted] == [(1296, RETENTION_MS_BREACH)]
    assert [s.base_offset for s in p0.waiting] == [1620]
    assert (p0.new_log_start_offset, p0.new_local_log_start_offset) == (0, 1620)

    out = CliRunner().invoke(app, ["retention", str(log_dir), "--now", str(NOW), "--jobs", "1"],
                             terminal_width=400)
    text = " ".join(out.output.split())
    assert "local log start 1296 -> 1620" in text, out.output
    assert "highest offset in remote storage 1619" in text
    assert "not in remote storage yet (highest uploaded offset 1619)" in text
    j = json.loads(CliRunner().invoke(
        app, ["retention", str(log_dir), "--now", str(NOW), "--jobs", "1", "--json"]
    ).output)
    (jp,) = [p for p in j["partitions"] if (p["topic"], p["partition"]) == ("payments", 0)]
    assert jp["deleted_segments"] == 1 and jp["highest_remote_offset"] == 1619


def test_the_report_marks_the_uploaded_segment_expired(tmp_path: Path) -> None:
    """The HTML report judges segments with the same rule (report.model.retention_verdicts)."""
    log_dir = _copy(tmp_path)
    _upload_1296(log_dir)
    report = scan([log_dir], ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=1)
    page = write_scan_report(report, tmp_path / "scan.html").read_text()
    marker = '<script type="application/json" id="report-data">'
    data = json.loads(page[page.index(marker) + len(marker):].split("</script>", 1)[0])
    (p0,) = [p for p in data["parts"] if p["n"] == "payments-0"]
    assert [bool(f & FLAG_EXPIRED) for f in p0["s"]["fl"]] == [True, False, False]


def test_without_the_metadata_local_retention_waits_for_upload(tmp_path: Path) -> None:
    """No __remote_log_metadata among the inputs (tiered by config): the upload state is unknown, nothing
    counts as uploaded, and the text says so."""
    log_dir = _copy(tmp_path)
    _upload_1296(log_dir)
    for n in (16, 21):
        shutil.rmtree(log_dir / f"__remote_log_metadata-{n}")
    inputs = config_inputs(topic_config=["payments:remote.storage.enable=true"])
    p0 = _parts(retention([log_dir], now_ms=NOW, jobs=1, config_inputs=inputs))[("payments", 0)]
    assert p0.tiered and p0.highest_remote_offset is None and p0.upload_state.startswith("unknown")
    assert p0.deleted == [] and [s.base_offset for s in p0.waiting] == [1296]
    out = CliRunner().invoke(
        app,
        ["retention", str(log_dir), "--now", str(NOW), "--jobs", "1", "--topic-config",
         "payments:remote.storage.enable=true"],
        terminal_width=400,
    )
    text = " ".join(out.output.split())
    assert "local retention waits for upload" in text and "not among the inputs" in text, out.output

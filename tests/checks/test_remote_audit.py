"""The remote tier audit (scan --remote-storage): faults planted in copies of ../shared/tiered's log dirs
AND stores (written by Kafka's classes + LocalTieredStorage, and by Aiven's plugin), each finding named
exactly, its offsets checked against the store's real objects and the README's offsets (payments-0 remote
[0, 1296) in 4 segments of 324 offsets, local from 1296; payments-1 local from 2289 in kafka-local).

The real data gives no audit finding (its tiers are whole): scanning every variant with its store is the
check that nothing is reported falsely.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.topic_config import config_inputs
from logdoctor.formats.records import iter_batches
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition
from logdoctor.sample.remote_tier import (
    append_metadata_events,
    segment_metadata,
    segment_update,
)

PAYMENTS_ID = "cGF5bWVudHMtdG9waWMwMQ"
P0 = TopicIdPartition(PAYMENTS_ID, "payments", 0)
AUDIT = {
    "REMOTE_OBJECTS_LEAKED",
    "REMOTE_SEGMENT_MISSING",
    "REMOTE_SEGMENTS_OVERLAP",
    "REMOTE_EPOCH_LINEAGE_BROKEN",
    "REMOTE_UPLOAD_STALLED",
    "REMOTE_METADATA_RETENTION_SHORT",
    "REMOTE_OFFSETS_LOST",
    "REMOTE_UPLOAD_UNFINISHED",
}
VARIANTS = {
    "kafka-local": ("kafka-local/remote", "kafka-tiered-storage/payments-0-" + PAYMENTS_ID),
    "aiven/plain": ("aiven/plain/storage", f"payments-{PAYMENTS_ID}/0"),
    "aiven/compressed": ("aiven/compressed/storage", f"payments-{PAYMENTS_ID}/0"),
    "aiven/encrypted": ("aiven/encrypted/storage", f"payments-{PAYMENTS_ID}/0"),
}


def _writable(root: Path) -> None:
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(root, os.stat(root).st_mode | stat.S_IWUSR)


def _copy(variant: str, tmp_path: Path) -> tuple[Path, Path, Path]:
    """(log dir, store root, payments-0's folder in the store), copies."""
    tiered = realworld.require_tiered()
    store_rel, p0 = VARIANTS[variant]
    log_dir = tmp_path / "kafka-logs"
    store = tmp_path / "store"
    shutil.copytree(tiered / variant / "kafka-logs", log_dir)
    shutil.copytree(tiered / store_rel, store)
    _writable(log_dir)
    _writable(store)
    return log_dir, store, store / p0


def _audit(log_dir: Path, store: Path, **kw) -> list:
    kw.setdefault("now_ms", 1710000100000)  # when the data was written (README: ts = 1710000000000 + offset)
    report = scan([log_dir], ScanOptions(remote_storage=str(store), **kw), jobs=1)
    return [f for f in report.findings if f.code in AUDIT]


def _segments(folder: Path) -> dict[int, str]:
    """start offset -> segment id, from the store's own object names."""
    return {int(p.name[:20]): p.name[21:43] for p in folder.iterdir() if p.name.endswith(".log")}


def _append(path: Path, *records: dict, ts: int = 1795454800000) -> None:
    append_metadata_events(path, *records, ts=ts)


def _p0_metadata(log_dir: Path) -> Path:
    return log_dir / "__remote_log_metadata-21" / "00000000000000000000.log"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_real_stores_match_their_metadata(variant: str, tmp_path: Path) -> None:
    tiered = realworld.require_tiered()
    store_rel, _p0 = VARIANTS[variant]
    # at the time the data was written (records at 1710000000000 + offset): nothing is past local retention
    options = ScanOptions(remote_storage=str(tiered / store_rel), now_ms=1710000100000)
    report = scan([tiered / variant / "kafka-logs"], options, jobs=1)
    assert [f.code for f in report.findings if f.code in AUDIT] == []


def test_a_kafka_layout_log_object_shorter_than_its_metadata_is_named(tmp_path: Path) -> None:
    """Issue 48, item 6: a .log object 1,000 bytes shorter than the size __remote_log_metadata records
    (RemoteLogManager: segment.log().sizeInBytes()) was flagged by neither scan nor census: the listing
    alone shows it. A read of the segment stops at the object's end: its last offsets are not there."""
    log_dir, store, p0 = _copy("kafka-local", tmp_path)
    seg_id = _segments(p0)[324]
    obj = p0 / f"00000000000000000324-{seg_id}.log"
    size = obj.stat().st_size
    with open(obj, "r+b") as fh:
        fh.truncate(size - 1000)
    [f] = _audit(log_dir, store)
    assert f.code == "REMOTE_SEGMENT_MISSING" and f.severity.name == "ERROR" and f.offset == 324
    [entry] = f.details["missing"]
    assert f"{size - 1000:,} bytes listed where the remote log metadata records {size:,}" in entry
    assert f"the store lacks {entry}" in f.message and str(obj) in f.fix
    # a .log object longer than the metadata's size is not this finding (the read ends at the segment's end)


@pytest.mark.parametrize("variant", ["kafka-local", "aiven/plain"])
def test_a_deleted_object_is_a_missing_segment_with_its_offsets(variant: str, tmp_path: Path) -> None:
    log_dir, store, p0 = _copy(variant, tmp_path)
    seg_id = _segments(p0)[324]
    (p0 / f"00000000000000000324-{seg_id}.log").unlink()
    [f] = _audit(log_dir, store)
    assert f.code == "REMOTE_SEGMENT_MISSING" and f.severity.name == "ERROR"
    assert f.path == str(log_dir / "payments-0") and f.offset == 324
    assert f.details["segment_id"] == seg_id and f.details["missing"] == ["log"]
    assert (f.details["start_offset"], f.details["end_offset"]) == (324, 647)
    # record timestamps are 1710000000000 + offset (README): the segment's and the one before it
    assert (
        f.details["max_timestamp_ms"] == 1710000000647
        and f.details["min_timestamp_after_ms"] == 1710000000323
    )
    assert "offsets 324-647" in f.message and "they are lost" in f.message
    # every object of it gone: said as such
    for p in p0.glob(f"*{seg_id}*"):
        p.unlink()
    [f] = _audit(log_dir, store)
    assert f.code == "REMOTE_SEGMENT_MISSING" and f.details["missing"] == ["all"]


@pytest.mark.parametrize("variant", ["kafka-local", "aiven/plain"])
def test_a_stray_segment_is_leaked_and_its_printed_fix_deletes_exactly_it(
    variant: str, tmp_path: Path
) -> None:
    log_dir, store, p0 = _copy(variant, tmp_path)
    seg_id = _segments(p0)[0]
    stray = "c3RyYXktc2VnbWVudC0wMQ"
    made = []
    for p in sorted(p0.glob(f"*{seg_id}*")):
        q = p0 / p.name.replace(seg_id, stray).replace("00000000000000000000-", "00000000000000005000-")
        shutil.copyfile(p, q)
        made.append(q)
    before = sorted(str(p) for p in store.rglob("*") if p.is_file())
    [f] = _audit(log_dir, store)
    assert f.code == "REMOTE_OBJECTS_LEAKED"
    assert sorted(f.details["objects"]) == sorted(str(p) for p in made)
    assert f.details["bytes"] == sum(p.stat().st_size for p in made)
    assert f"1 remote segments in the store ({len(made)} objects" in f.message
    assert "no event of the remote log metadata names it" in f.message
    assert before == sorted(str(p) for p in store.rglob("*") if p.is_file())  # the scan deleted nothing
    command = f.fix.split("delete exactly these objects: ", 1)[1]
    subprocess.run(["bash", "-c", command], check=True)
    assert sorted(str(p) for p in store.rglob("*") if p.is_file()) == sorted(
        set(before) - {str(p) for p in made}
    )
    assert _audit(log_dir, store) == []


def test_a_segment_stored_twice_under_another_id_is_an_overlap(tmp_path: Path) -> None:
    log_dir, store, p0 = _copy("kafka-local", tmp_path)
    seg_id = _segments(p0)[648]
    twin = "dHdpbi1zZWdtZW50LTAwMQ"
    for p in sorted(p0.glob(f"*{seg_id}*")):
        shutil.copyfile(p, p0 / p.name.replace(seg_id, twin))
    size = (p0 / f"00000000000000000648-{twin}.log").stat().st_size
    kw = dict(broker_id=1, event_timestamp_ms=1795454800000)
    _append(
        _p0_metadata(log_dir),
        segment_metadata(
            P0, twin, 648, 971, max_timestamp_ms=1710000000971, leader_epochs=[(0, 648)], size=size, **kw
        ),
        segment_update(P0, twin, SegmentState.COPY_SEGMENT_FINISHED, **kw),
    )
    [f] = _audit(log_dir, store)
    assert f.code == "REMOTE_SEGMENTS_OVERLAP" and f.details["duplicate"] is True
    assert f.details["segment_ids"] == sorted([seg_id, twin], key=lambda s: s != seg_id) or set(
        f.details["segment_ids"]
    ) == {seg_id, twin}
    assert f.details["shared"] == [648, 971] and "stored twice" in f.message


def test_a_segment_outside_the_leader_epoch_lineage(tmp_path: Path) -> None:
    """A leader of epoch 1 (not in this replica's lineage: leader-epoch-checkpoint holds only 0@0)
    uploaded [972, 1400]: it overlaps the finished [972, 1295] and is not within the lineage."""
    log_dir, store, p0 = _copy("kafka-local", tmp_path)
    seg_id = _segments(p0)[972]
    other = "ZXBvY2gxLXNlZ21lbnQwMQ"
    for p in sorted(p0.glob(f"*{seg_id}*")):
        shutil.copyfile(p, p0 / p.name.replace(seg_id, other))
    kw = dict(broker_id=2, event_timestamp_ms=1795454800000)
    _append(
        _p0_metadata(log_dir),
        segment_metadata(
            P0, other, 972, 1400, max_timestamp_ms=1710000001400, leader_epochs=[(1, 972)], size=1, **kw
        ),
        segment_update(P0, other, SegmentState.COPY_SEGMENT_FINISHED, **kw),
    )
    found = _audit(log_dir, store)
    assert sorted(f.code for f in found) == ["REMOTE_EPOCH_LINEAGE_BROKEN", "REMOTE_SEGMENTS_OVERLAP"]
    br = next(f for f in found if f.code == "REMOTE_EPOCH_LINEAGE_BROKEN")
    assert br.details["segment_id"] == other and br.details["case"] == "outside-lineage"
    assert "last epoch 1 is outside the lineage's epochs 0-0" in br.message


def test_a_dropped_finished_event_leaves_no_leak_but_a_dropped_upload_does(tmp_path: Path) -> None:
    log_dir, store, p0 = _copy("kafka-local", tmp_path)
    path = _p0_metadata(log_dir)
    batches = list(iter_batches(path.read_bytes()))
    with open(path, "r+b") as fh:  # the last event: payments-0 [972, 1295] COPY_SEGMENT_FINISHED
        fh.truncate(batches[-1].position)
    # its COPY_SEGMENT_STARTED is the newest event: the upload may be in progress
    assert sorted(f.code for f in _audit(log_dir, store)) == ["REMOTE_OFFSETS_LOST"]
    _append(  # payments-1 starts an upload two hours later: the one of payments-0 is dangling
        log_dir / "__remote_log_metadata-16" / "00000000000000000000.log",
        segment_metadata(
            TopicIdPartition(PAYMENTS_ID, "payments", 1), "cGF5bWVudHMxLXVwbG9hZA", 2289, 2600,
            broker_id=0, event_timestamp_ms=1795454733031 + 2 * 3_600_000, max_timestamp_ms=1710000002600,
            leader_epochs=[(0, 2289)], size=1,
        ),
    )  # fmt: skip
    found = _audit(log_dir, store)
    assert sorted(f.code for f in found) == ["REMOTE_OFFSETS_LOST", "REMOTE_UPLOAD_UNFINISHED"]
    with open(path, "r+b") as fh:  # and its COPY_SEGMENT_STARTED: the objects are named by nothing
        fh.truncate(batches[-2].position)
    found = _audit(log_dir, store)
    assert sorted(f.code for f in found) == ["REMOTE_OBJECTS_LEAKED", "REMOTE_OFFSETS_LOST"]
    leak = next(f for f in found if f.code == "REMOTE_OBJECTS_LEAKED")
    seg_id = _segments(p0)[972]
    assert sorted(leak.details["objects"]) == sorted(str(p) for p in p0.glob(f"*{seg_id}*"))
    gap = next(f for f in found if f.code == "REMOTE_OFFSETS_LOST")
    assert gap.details["gaps"] == [[972, 1296]]


def test_stalled_uploads_past_local_retention(tmp_path: Path) -> None:
    """payments-0: local segments 1296, 1620 (inactive) and 1944 (active); the remote tier ends at 1295.
    With local.retention.ms=1000 at a time past their records, both inactive ones are stalled."""
    log_dir, store, _p0 = _copy("kafka-local", tmp_path)
    inputs = config_inputs(topic_config=["payments:local.retention.ms=1000"])
    found = _audit(log_dir, store, now_ms=1710000100000, config_inputs=inputs)
    stalled = [f for f in found if f.code == "REMOTE_UPLOAD_STALLED"]
    p0 = next(f for f in stalled if f.path == str(log_dir / "payments-0"))
    assert [s["base_offset"] for s in p0.details["segments"]] == [1296, 1620]
    assert [s["last_offset"] for s in p0.details["segments"]] == [1619, 1943]
    assert p0.details["highest_uploaded_offset"] == 1295
    sizes = [(log_dir / "payments-0" / f"{b:020d}.log").stat().st_size for b in (1296, 1620)]
    assert f"({human_bytes(sum(sizes))}, offsets" in p0.message  # the exact count in details
    assert sum(s["size"] for s in p0.details["segments"]) == sum(sizes)
    # its records are 1 ms apart: no write rate, no date the disk is full (issue 47: "full in 4.4 days")
    assert "bytes_per_day" not in p0.details and "full_in_ms" not in p0.details
    assert "the write rate is unknown (the segments' timestamps span" in p0.message
    # the records are newer than local.retention.ms at that time: nothing is stalled
    found = _audit(log_dir, store, now_ms=1710000000000, config_inputs=inputs)
    assert [f for f in found if f.code == "REMOTE_UPLOAD_STALLED"] == []


def test_metadata_retention_below_a_tiered_topics(tmp_path: Path) -> None:
    log_dir, store, _p0 = _copy("kafka-local", tmp_path)
    assert _audit(log_dir, store) == []  # Kafka creates the topic with retention.ms=-1
    inputs = config_inputs(topic_config=["__remote_log_metadata:retention.ms=86400000"])
    [f] = _audit(log_dir, store, config_inputs=inputs)
    assert f.code == "REMOTE_METADATA_RETENTION_SHORT"
    assert f.details == {
        "metadata_retention_ms": 86400000,
        "metadata_retention_source": "--topic-config",
        "topics": ["payments"],
    }
    inputs = config_inputs(
        topic_config=["__remote_log_metadata:retention.ms=86400000", "payments:retention.ms=3600000"]
    )
    assert _audit(log_dir, store, config_inputs=inputs) == []


def test_scan_cli_audits_and_refuses_an_unreadable_inventory(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
    from logdoctor.cli.exit_codes import ExitCode
    from logdoctor.cli.main import app

    log_dir, store, p0 = _copy("kafka-local", tmp_path)
    seg_id = _segments(p0)[324]
    (p0 / f"00000000000000000324-{seg_id}.index").unlink()
    now = ["--now", "1710000100000"]
    res = CliRunner().invoke(app, ["scan", str(log_dir), "--remote-storage", str(store), "--json", *now])
    assert res.exit_code == ExitCode.ERRORS, res.output
    found = [f for f in json.loads(res.output)["findings"] if f["code"] in AUDIT]
    assert [(f["code"], f["details"]["missing"]) for f in found] == [("REMOTE_SEGMENT_MISSING", ["index"])]
    missing = tmp_path / "nowhere" / "manifest.json"
    res = CliRunner().invoke(app, ["scan", str(log_dir), "--remote-inventory", str(missing), *now])
    assert res.exit_code == ExitCode.USAGE and "manifest.json" in res.output


def test_the_metadata_topic_keeps_kafkas_unlimited_retention_by_default(tmp_path: Path) -> None:
    """TopicBasedRemoteLogMetadataManager creates __remote_log_metadata with retention.ms=-1
    (remote.log.metadata.topic.retention.ms default): not the broker's log.retention.hours."""
    from logdoctor.checks.topic_config import TopicConfigResolver

    log_dir, store, _p0 = _copy("kafka-local", tmp_path)
    cfg = TopicConfigResolver.for_log_dirs([log_dir]).resolve("__remote_log_metadata")
    assert (
        cfg.retention_ms.value == -1 and "remote.log.metadata.topic.retention.ms" in cfg.retention_ms.source
    )
    # a tiered topic kept forever, the metadata topic given the broker's 7 days: its events expire first
    inputs = config_inputs(
        topic_config=["__remote_log_metadata:retention.ms=604800000", "payments:retention.ms=-1"]
    )
    [f] = _audit(log_dir, store, config_inputs=inputs)
    assert f.code == "REMOTE_METADATA_RETENTION_SHORT" and f.details["topics"] == ["payments"]


def test_objects_of_a_deleted_segment_left_in_the_store_are_leaked(tmp_path: Path) -> None:
    """KAFKA-16511: the expiration task finished deleting [0, 323] (DELETE_SEGMENT_STARTED, then
    FINISHED, the log start moved to 324) but the RemoteStorageManager left its objects."""
    from logdoctor.formats.checkpoint import new_offset_checkpoint, write_offset_checkpoint

    log_dir, store, p0 = _copy("kafka-local", tmp_path)
    seg_id = _segments(p0)[0]
    kw = dict(broker_id=0, event_timestamp_ms=1795454800000)
    _append(
        _p0_metadata(log_dir),
        segment_update(P0, seg_id, SegmentState.DELETE_SEGMENT_STARTED, **kw),
        segment_update(P0, seg_id, SegmentState.DELETE_SEGMENT_FINISHED, **kw),
    )
    cp = new_offset_checkpoint([("payments", 0, 324), ("payments", 1, 0)])
    (log_dir / "log-start-offset-checkpoint").write_bytes(write_offset_checkpoint(cp))
    [f] = _audit(log_dir, store)
    assert (
        f.code == "REMOTE_OBJECTS_LEAKED" and "its deletion finished (DELETE_SEGMENT_FINISHED)" in f.message
    )
    assert sorted(f.details["objects"]) == sorted(str(p) for p in p0.glob(f"*{seg_id}*"))


# --- __remote_log_metadata's retention as the brokers' RLMM and the KRaft metadata give it -------------


def _config_record_log(log_dir: Path, *configs: tuple[str, str, str]) -> None:
    """``__cluster_metadata-0`` holding topic ConfigRecords (topic, key, value), each encoded from Kafka's
    JSON schema (../shared/kafka-schemas metadata/ConfigRecord.json) with the test's own writer."""
    import kafka_schemas as ks
    from logdoctor.formats.record_types import RecordSpec
    from logdoctor.formats.writer import build_record_batch

    ks.require()
    spec = ks.Spec(ks.load("metadata/ConfigRecord.json"))
    folder = log_dir / "__cluster_metadata-0"
    folder.mkdir(exist_ok=True)
    batches = []
    for i, (topic, key, value) in enumerate(configs):
        body = ks.write(spec, {"resource_type": 2, "resource_name": topic, "name": key, "value": value}, 0)
        frame = bytes([1, spec.raw["apiKey"], 0]) + body  # frame version 1, api key, version 0 (uvarints)
        batches.append(
            build_record_batch([RecordSpec(frame, timestamp=1_700_000_000_000)], base_offset=i,
                               partition_leader_epoch=1)
        )  # fmt: skip
    (folder / "00000000000000000000.log").write_bytes(b"".join(batches))


def _props(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "server.properties"
    p.write_text(text)
    return p


def _retention_findings(log_dir: Path, store: Path, props: Path | None = None) -> list:
    inputs = config_inputs(server_properties=props) if props is not None else None
    found = _audit(log_dir, store, config_inputs=inputs)
    return [f for f in found if f.code == "REMOTE_METADATA_RETENTION_SHORT"]


def test_metadata_retention_from_the_brokers_rlmm_config(tmp_path: Path) -> None:
    """TopicBasedRemoteLogMetadataManager creates the topic with retention.ms =
    remote.log.metadata.topic.retention.ms (default -1, TopicBasedRemoteLogMetadataManagerConfig
    DEFAULT_REMOTE_LOG_METADATA_TOPIC_RETENTION_MS), which the broker hands it from the keys under
    remote.log.metadata.manager.impl.prefix (default rlmm.config.)."""
    from logdoctor.checks.topic_config import DEFAULT_RLMM_RETENTION_MS, remote_log_metadata_retention_ms

    assert DEFAULT_RLMM_RETENTION_MS == -1
    log_dir, store, _p0 = _copy("kafka-local", tmp_path)
    assert _retention_findings(log_dir, store, _props(tmp_path, "log.retention.hours=1\n")) == []
    day = _props(tmp_path, "rlmm.config.remote.log.metadata.topic.retention.ms=86400000\n")
    [f] = _retention_findings(log_dir, store, day)
    assert f.details["metadata_retention_ms"] == 86400000 and f.details["topics"] == ["payments"]
    assert "rlmm.config.remote.log.metadata.topic.retention.ms" in f.message and str(day) in f.message
    assert "set rlmm.config.remote.log.metadata.topic.retention.ms=-1 in each broker's server.properties" in (
        f.fix
    )
    # another prefix: the rlmm.config. key no longer reaches the RLMM, the prefixed one does
    other = "remote.log.metadata.manager.impl.prefix=meta.\n"
    unprefixed = _props(tmp_path, other + "rlmm.config.remote.log.metadata.topic.retention.ms=86400000\n")
    assert _retention_findings(log_dir, store, unprefixed) == []
    [f] = _retention_findings(
        log_dir, store, _props(tmp_path, other + "meta.remote.log.metadata.topic.retention.ms=86400000\n")
    )
    assert "meta.remote.log.metadata.topic.retention.ms" in f.message
    # what the RLMM refuses (its config's constructor) is refused here, naming the key
    for bad in ("0", "-5", "soon"):
        with pytest.raises(ValueError, match=r"meta\.remote\.log\.metadata\.topic\.retention\.ms"):
            remote_log_metadata_retention_ms(
                {"remote.log.metadata.manager.impl.prefix": "meta.",
                 "meta.remote.log.metadata.topic.retention.ms": bad}
            )  # fmt: skip


def test_the_topics_own_config_in_the_kraft_metadata_wins_and_the_printed_fix_clears_it(
    tmp_path: Path,
) -> None:
    """The topic exists: its ConfigRecord is its retention, whatever the RLMM would create it with. The
    fix's kafka-configs.sh --alter --add-config is applied as the ConfigRecord the controller writes
    for it (no broker runs here), and the audit is clean after it."""
    import shlex

    log_dir, store, _p0 = _copy("kafka-local", tmp_path)
    unlimited = _props(tmp_path, "rlmm.config.remote.log.metadata.topic.retention.ms=-1\n")
    _config_record_log(log_dir, ("__remote_log_metadata", "retention.ms", "3600000"))
    [f] = _retention_findings(log_dir, store, unlimited)
    assert f.details["metadata_retention_ms"] == 3600000
    assert "topic ConfigRecord in __cluster_metadata-0 offset 0" in f.message
    _config_record_log(log_dir, ("__remote_log_metadata", "retention.ms", "-1"))
    day = _props(tmp_path, "rlmm.config.remote.log.metadata.topic.retention.ms=86400000\n")
    assert _retention_findings(log_dir, store, day) == []
    # the printed fix, as printed
    _config_record_log(log_dir, ("__remote_log_metadata", "retention.ms", "3600000"))
    [f] = _retention_findings(log_dir, store)
    words = shlex.split(f.fix.split(": ", 1)[1].split(". ", 1)[0])
    assert words[0] == "kafka-configs.sh" and words[words.index("--entity-type") + 1] == "topics"
    assert "--alter" in words
    entity = words[words.index("--entity-name") + 1]
    key, value = words[words.index("--add-config") + 1].split("=", 1)
    _config_record_log(
        log_dir, ("__remote_log_metadata", "retention.ms", "3600000"), (entity, key, value)
    )
    assert _retention_findings(log_dir, store) == []


def test_a_disk_full_date_needs_a_real_time_span(tmp_path: Path) -> None:
    """REMOTE_UPLOAD_STALLED's projection: segments an hour or more apart give a rate and a date; records
    a few ms apart give none (issue 47: "full in 4.4 days" from records 1 ms apart)."""
    from types import SimpleNamespace

    from logdoctor.checks.remote_store import MIN_RATE_SPAN_MS, _fill

    def segs(step_ms: int) -> list:
        return [
            SimpleNamespace(true_largest_ts=1_700_000_000_000 + i * step_ms, size=1_000_000) for i in range(3)
        ]

    text, facts = _fill(str(tmp_path), segs(MIN_RATE_SPAN_MS), 1_800_000_000_000)
    assert facts["bytes_per_day"] == 2_000_000 * 86_400_000 // (2 * MIN_RATE_SPAN_MS)
    assert "full_in_ms" in facts
    assert "days (until" in text
    text, facts = _fill(str(tmp_path), segs(1), 1_800_000_000_000)
    assert set(facts) == {"free"} and "the write rate is unknown" in text and "days" not in text

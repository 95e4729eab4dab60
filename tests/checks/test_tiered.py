"""Tiered partitions (KIP-405): recognized, and their log start offset and local log start offset shown as
the broker computes them, on the tiered log dirs of ../shared/tiered (written by Kafka's own storage
classes, Kafka's LocalTieredStorage and Aiven's plugin; its README.md gives the offsets).

The expectations come from the data's README and independent reads: the checkpoint file parsed here by
hand, the first local offset read by kafka-python from the first local segment, and the never-tiered copy
(``original/``) holding the records below it. The rules are Kafka's (LogLoader.load,
UnifiedLog.localLogStartOffset, LogManager.checkpointLogStartOffsetsInDir; cited in logdoctor.checks.tiered
and logdoctor.logdir.offsets).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka.record import MemoryRecords
from typer.testing import CliRunner

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.retention import retention
from logdoctor.checks.retention_round import RETENTION_MS_BREACH
from logdoctor.checks.scanner import scan
from logdoctor.checks.tiered import BrokerRemoteEvidence, tiering
from logdoctor.checks.topic_config import ConfigInputs, MetadataConfigs, TopicConfigResolver, config_inputs
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.logdir.offsets import log_start_offsets

#: (variant, payments-0 local log start, payments-1 local log start): ../shared/tiered/README.md
VARIANTS = [
    ("kafka-local", 1296, 2289),
    ("aiven/plain", 1296, 1962),
    ("aiven/compressed", 1296, 1962),
    ("aiven/encrypted", 1296, 1962),
]
NOW = 1_710_000_000_000 + 30 * 24 * 3_600_000  # a month after the records: 7-day retention breached


def _log_dir(variant: str) -> Path:
    return realworld.require_tiered() / variant / "kafka-logs"


def _checkpoint_by_hand(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {(t, int(p)): int(o) for t, p, o in (ln.split(" ") for ln in lines[2:])}


def _first_offset_kafka_python(part: Path) -> int:
    first = sorted(part.glob("*.log"))[0]
    batch = MemoryRecords(first.read_bytes()).next_batch()
    return next(iter(batch)).offset


@pytest.mark.parametrize(("variant", "local0", "local1"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_scan_shows_log_start_and_local_log_start(variant, local0, local1):
    d = _log_dir(variant)
    by_hand = _checkpoint_by_hand(d / "log-start-offset-checkpoint")
    report = scan([d], ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=1)
    parts = {(p.topic, p.partition): p for p in report.partitions}
    for partition, local in ((0, local0), (1, local1)):
        p = parts[("payments", partition)]
        assert p.remote_log_enabled, p.tiering_evidence
        assert "__remote_log_metadata" in p.tiering_evidence
        # the log start is the checkpoint itself (0), the local log start the first local offset
        assert p.log_start_offset == by_hand[("payments", partition)] == 0
        assert p.local_log_start_offset == local == _first_offset_kafka_python(Path(p.path))
        # and the records below it exist: the never-tiered copy holds [0, local)
        original = realworld.TIERED / "original" / "kafka-logs" / f"payments-{partition}"
        assert _first_offset_kafka_python(original) == 0
        j = p.to_json()
        assert (j["log_start_offset"], j["local_log_start_offset"], j["tiered"]) == (0, local, True)
    for (topic, _p), p in parts.items():
        if topic != "payments":  # the internal metadata topic and the untiered audit topic
            assert not p.remote_log_enabled and p.log_start_offset == p.local_log_start_offset
    # a tiered log start below the local segments is not a checkpoint problem
    assert not [f for f in report.findings if f.code == "CHECKPOINT_MISMATCH"]


def test_scan_text_and_json_show_both_offsets():
    d = _log_dir("kafka-local")
    out = CliRunner().invoke(app, ["scan", str(d), "--jobs", "1"], terminal_width=400)
    assert "tiered partitions" in out.output, out.output
    row = next(ln for ln in out.output.splitlines() if "payments-0" in ln)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    assert cells[:1] == ["payments-0"] and cells[2:5] == ["0", "1296", "2000"], cells
    js = json.loads(CliRunner().invoke(app, ["scan", str(d), "--json", "--jobs", "1"]).output)
    p1 = next(p for p in js["partitions"] if (p["topic"], p["partition"]) == ("payments", 1))
    assert (p1["log_start_offset"], p1["local_log_start_offset"], p1["tiered"]) == (0, 2289, True)


def test_untiered_dir_has_no_tiered_table():
    d = realworld.require_tiered() / "original" / "kafka-logs"
    out = CliRunner().invoke(app, ["scan", str(d), "--jobs", "1"], terminal_width=400)
    assert "tiered partitions" not in out.output
    report = scan([d], ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=1)
    assert all(not p.remote_log_enabled and p.log_start_offset == 0 for p in report.partitions)


@pytest.mark.parametrize(("variant", "local0", "local1"), VARIANTS[:2], ids=[v[0] for v in VARIANTS[:2]])
def test_retention_of_a_tiered_partition_waits_for_upload(variant, local0, local1):
    """Local retention deletes a tiered segment only once uploaded (UnifiedLog.deletableSegments); the
    upload state is not in the log dir, so nothing of payments is deleted, the first segment waits, and
    the log start offset stays the checkpoint's. The untiered audit topic is deleted as before."""
    d = _log_dir(variant)
    rep = retention([d], now_ms=NOW, jobs=1)
    parts = {(p.topic, p.partition): p for p in rep.partitions}
    for partition, local in ((0, local0), (1, local1)):
        p = parts[("payments", partition)]
        assert p.tiered and p.log_start_offset == 0 and p.local_log_start_offset == local
        assert p.deleted == [] and p.new_log_start_offset == 0 and p.new_local_log_start_offset == local
        assert [s.base_offset for s in p.waiting] == [local]
        assert p.segments[0].waits_for_upload == RETENTION_MS_BREACH
        j = p.to_json()
        assert j["tiered"] and "remote tier" in j["remote_retention"]
    if variant == "kafka-local":
        audit = parts[("audit", 0)]
        assert not audit.tiered and audit.deleted and audit.new_log_start_offset > 0


def test_retention_text_says_local_retention_waits_for_upload():
    d = _log_dir("kafka-local")
    out = CliRunner().invoke(
        app, ["retention", str(d), "--now", str(NOW), "--jobs", "1"], terminal_width=400
    )
    text = " ".join(out.output.split())  # wrapped at the console's width
    assert "TIERED" in text and "local log start 1296 -> 1296" in text, out.output
    assert "kept: local" in text  # the table's verdict (wrapped in its cell)
    # tiered-integ: the log dir holds the remote log metadata, so the upload state is known (uploaded up to
    # 1295 / 2288), no longer "waits for upload" (that is said only without the metadata:
    # tests/checks/test_retention_upload.py::test_without_the_metadata_local_retention_waits_for_upload)
    assert "2 segment(s) of tiered partitions are not in remote storage yet (the remote log metadata says " \
        "so) and would be deleted locally once uploaded" in text
    assert "not in remote storage yet (highest uploaded offset 1295)" in text
    assert "retention.ms/retention.bytes apply to the remote tier" in text


def test_local_retention_config_is_applied_to_a_tiered_partition():
    """local.retention.ms=-1 (no local limit): nothing would be deleted locally, nothing waits; -2 (the
    default) is retention.ms."""
    d = _log_dir("kafka-local")
    rep = retention(
        [d], now_ms=NOW, jobs=1, config_inputs=config_inputs(topic_config=["payments:local.retention.ms=-1"])
    )
    p = next(p for p in rep.partitions if (p.topic, p.partition) == ("payments", 0))
    assert p.waiting == [] and p.deleted == []
    assert p.topic_config.local_retention_ms.value == -1
    assert p.topic_config.local_retention_ms.source == "--topic-config"


def test_inventory_rows_carry_both_offsets(tmp_path):
    d = _log_dir("aiven/plain")
    out = tmp_path / "inv.parquet"
    res = CliRunner().invoke(app, ["inventory", str(d), "--out", str(out)])
    assert res.exit_code in (0, 1), res.output
    table = pq.read_table(out)
    assert table.schema.metadata[b"logdoctor.inventory.schema_version"] == b"3"  # 2 added these columns
    assert str(table.schema.field("local_log_start_offset").type) == "int64"
    assert str(table.schema.field("remote_storage_enabled").type) == "bool"
    rows = {
        (r["topic"], r["partition"]): r for r in table.to_pylist() if r["record"] == "replica"
    }
    assert {k: (r["log_start_offset"], r["local_log_start_offset"], r["remote_storage_enabled"])
            for k, r in rows.items() if k[0] == "payments"} == {
        ("payments", 0): (0, 1296, True),
        ("payments", 1): (0, 1962, True),
    }
    assert rows[("__remote_log_metadata", 16)]["remote_storage_enabled"] is False


# --- the rules, one by one -------------------------------------------------------------------------


def test_offsets_follow_log_loader():
    # remote storage: the checkpoint itself, 0 without an entry (LogManager.loadLog getOrDefault 0)
    assert log_start_offsets(0, 1296, True) == (0, 1296)
    assert log_start_offsets(None, 1296, True) == (0, 1296)
    assert log_start_offsets(1500, 1296, True) == (1500, 1500)
    # without: max(checkpoint, first segment) for both
    assert log_start_offsets(0, 1296, False) == (1296, 1296)
    assert log_start_offsets(None, 7, False) == (7, 7)
    assert log_start_offsets(999999, 0, False) == (999999, 999999)
    assert log_start_offsets(5, None, False) == (5, 5)


def _md(*entries: tuple[int, str, str, str]) -> MetadataConfigs:
    m = MetadataConfigs()
    for i, (rtype, rname, key, value) in enumerate(entries):
        m.resources.setdefault((rtype, rname), {})[key] = (value, f"__cluster_metadata-0 offset {i}")
    return m


def test_topic_config_resolves_the_tiered_keys():
    r = TopicConfigResolver(
        ConfigInputs(
            {"remote.log.storage.system.enable": "true", "log.retention.hours": "24"},
            "server.properties",
            {},
            {"orders": {"local.retention.bytes": "1000"}},
        ),
        _md((2, "payments", "remote.storage.enable", "true"), (2, "payments", "local.retention.ms", "-2")),
        1,
    )
    c = r.resolve("payments")
    assert c.remote_storage_enable.value is True and "ConfigRecord" in c.remote_storage_enable.source
    assert c.remote_storage_system_enable.value is True
    assert c.remote_storage_system_enable.source == "--server-properties server.properties"
    # -2: as retention.ms (LogConfig.localRetentionMs), which is log.retention.hours here
    assert c.local_retention_ms.value == 24 * 3_600_000 and "-2" in c.local_retention_ms.key
    assert c.local_retention_bytes.value == -1  # broker default -2 -> retention.bytes -1
    o = r.resolve("orders")
    assert o.remote_storage_enable.value is False and o.local_retention_bytes.value == 1000
    assert TopicConfigResolver().resolve("x").remote_storage_system_enable.value is False
    with pytest.raises(ValueError):
        config_inputs(topic_config=["t:remote.storage.enable=yes"])


def test_tiering_evidence_in_the_brokers_order():
    disk = BrokerRemoteEvidence(("/d/__remote_log_metadata-3",))

    def cfg(server: dict[str, str] | None = None, topic: dict[str, str] | None = None, name: str = "t"):
        return TopicConfigResolver(ConfigInputs(server or {}, "s.p", {}, {name: topic or {}})).resolve(name)

    # the log dir's own evidence: below the first segment in a broker showing remote storage
    assert tiering("t", cfg(), disk, 0, 100).remote_log_enabled
    assert not tiering("t", cfg(), BrokerRemoteEvidence(), 0, 100).remote_log_enabled
    assert not tiering("t", cfg(), disk, None, 100).remote_log_enabled
    assert not tiering("t", cfg(), disk, 100, 100).remote_log_enabled
    assert tiering("t", cfg({"remote.log.storage.system.enable": "true"}), None, 0, 100).remote_log_enabled
    # configs first: the topic's own flag, then what the broker's rule excludes
    assert tiering("t", cfg(topic={"remote.storage.enable": "true"}), None, None, 0).remote_log_enabled
    assert not tiering("t", cfg(topic={"remote.storage.enable": "false"}), disk, 0, 100).remote_log_enabled
    off = cfg({"remote.log.storage.system.enable": "false"}, {"remote.storage.enable": "true"})
    assert not tiering("t", off, disk, 0, 100).remote_log_enabled
    compact = cfg(topic={"remote.storage.enable": "true", "cleanup.policy": "compact"})
    assert not tiering("t", compact, disk, 0, 100).remote_log_enabled
    internal = cfg(topic={"remote.storage.enable": "true"}, name="__consumer_offsets")
    assert not tiering("__consumer_offsets", internal, disk, 0, 100).remote_log_enabled


def test_kraft_config_record_makes_a_topic_tiered(tmp_path):
    """remote.storage.enable=true in a topic ConfigRecord of the broker's own metadata log (encoded from
    Kafka's JSON schemas by test_topic_config's encoder): tiered without any other evidence; the segments
    below the local ones gone (uploaded, then deleted by local retention) and no checkpoint entry: the log
    start is 0 (LogManager.loadLog getOrDefault 0), the local log start the first local segment."""
    from test_topic_config import TOPIC, encode, write_metadata_log

    from logdoctor.sample.logdir import BrokerSpec, TopicSpec, generate_log_dir

    topic_id = "AAAAAAAAAAAAAAAAAAAAAQ"
    spec = TopicSpec("events", records_per_partition=400, records_per_batch=4, segment_bytes=8 * 1024,
                     topic_id=topic_id)
    log_dir, _ = generate_log_dir(tmp_path / "b1", [spec], broker=BrokerSpec(1, kraft=True))
    write_metadata_log(log_dir, [
        encode("TopicRecord", name="events", topic_id=topic_id),
        encode("ConfigRecord", resource_type=TOPIC, resource_name="events", name="remote.storage.enable",
               value="true"),
    ])
    logs = sorted((log_dir / "events-0").glob("*.log"))
    first_kept = int(logs[2].stem)
    for log in logs[:2]:
        for suffix in (".log", ".index", ".timeindex", ".snapshot"):
            log.with_suffix(suffix).unlink(missing_ok=True)
    report = scan([log_dir], ScanOptions(depth=Depth.DEFAULT, now_ms=NOW), jobs=1)
    p = next(p for p in report.partitions if p.topic == "events")
    assert p.remote_log_enabled
    assert "topic ConfigRecord in __cluster_metadata-0 offset 1" in p.tiering_evidence
    assert (p.log_start_offset, p.local_log_start_offset) == (0, first_kept)
    # the same dir with --topic-config saying otherwise: not tiered, log start = first segment
    off = scan(
        [log_dir],
        ScanOptions(depth=Depth.DEFAULT, now_ms=NOW,
                    config_inputs=config_inputs(topic_config=["events:remote.storage.enable=false"])),
        jobs=1,
    )
    p = next(p for p in off.partitions if p.topic == "events")
    assert not p.remote_log_enabled and (p.log_start_offset, p.local_log_start_offset) == (first_kept,) * 2

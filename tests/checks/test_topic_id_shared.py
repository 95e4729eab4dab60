"""TOPIC_ID_SHARED (issue 32, item 13): two topics whose partition.metadata hold one topic id. Planted
in a copy of a real log dir (one topic's partition.metadata rewritten with another topic's id, in the
bytes Kafka's PartitionMetadataFile writes) and in generated ones; the demo fleet's topics no longer
share one id (its ZooKeeper brokers' `orders` and its KRaft broker's `events` did)."""

from __future__ import annotations

from pathlib import Path

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.partition_metadata import parse_partition_metadata
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

NOW = 1_790_000_000_000


def _shared(dirs: list[Path]):
    report = scan([str(d) for d in dirs], ScanOptions(Depth.QUICK, NOW), jobs=1)
    return [f for f in report.findings if f.code == "TOPIC_ID_SHARED"]


def test_demo_fleet_topics_have_ids_of_their_own(tmp_path):
    root = tmp_path / "fleet"
    generate_demo_fleet(root, now_ms=NOW)
    dirs = sorted(root.glob("broker-*/kafka-logs-*"))
    ids: dict[str, set[str]] = {}
    for pm in root.glob("broker-*/kafka-logs-*/*/partition.metadata"):
        topic = pm.parent.name.rpartition("-")[0]
        ids.setdefault(parse_partition_metadata(pm.read_bytes()).topic_id, set()).add(topic)
    assert all(len(topics) == 1 for topics in ids.values()), ids
    assert _shared([d for d in dirs if d.parent.name in ("broker-1", "broker-4")]) == []


def test_planted_in_a_real_log_dir(tmp_path):
    copy = realworld.writable_copy(realworld.require() / "zk-3.7-nikhildighe-b0", tmp_path / "logs")
    metas = sorted(copy.glob("*/partition.metadata"))
    by_topic: dict[str, list[Path]] = {}
    for pm in metas:
        if not pm.parent.name.startswith("__"):
            by_topic.setdefault(pm.parent.name.rpartition("-")[0], []).append(pm)
    assert _shared([copy]) == []  # as Kafka wrote it: every topic its own id
    (a, a_files), (b, b_files) = sorted(by_topic.items())[:2]
    a_id = parse_partition_metadata(a_files[0].read_bytes()).topic_id
    for pm in b_files:
        pm.write_bytes(f"version: 0\ntopic_id: {a_id}".encode())
    found = _shared([copy])
    assert len(found) == 1
    f = found[0]
    assert f.details == {"topic_id": a_id, "topics": sorted([a, b])}
    assert f.severity.label == "error" and a_id in f.message and "kafka-topics.sh --describe" in f.fix


def test_planted_in_generated_log_dirs_of_two_brokers(tmp_path):
    same = "AAAAAAAAAAAAAAAAAAAAAQ"
    topics = [
        TopicSpec("orders", records_per_partition=5, topic_id=same),
        TopicSpec("events", records_per_partition=5),
    ]
    d, _ = generate_log_dir(tmp_path / "a", topics)
    d2, _ = generate_log_dir(tmp_path / "b", [TopicSpec("payments", records_per_partition=5, topic_id=same)])
    assert _shared([d]) == []
    found = _shared([d, d2])
    assert [f.details["topics"] for f in found] == [["orders", "payments"]]

"""Streams groups (KIP-1071, ``group.protocol=streams``) as a real Kafka 4.4.0 broker writes them in
``__consumer_offsets`` (issue 74), decoded field for field as Kafka's own ``kafka-dump-log.sh
--offsets-decoder`` decodes them.

The application is Kafka Streams itself: the examples' ``WordCountDemo`` (kafka-streams-examples 4.3.1,
the newest Maven Central serves, on Kafka Streams 4.4.0: streams/pom.xml, installed and checked against
streams/jars.lock by scripts/ensure-kafka-streams.sh), run with ``group.protocol=streams`` and two stream
threads (two members) against one 4.4.0 broker. 4.4's formatter finalizes ``streams.version`` 1 by default
(its zero checkpoint's FeatureLevelRecord, checked here), and the broker's default
``group.coordinator.rebalance.protocols`` includes ``streams``: no config is needed. Its topology has two
subtopologies joined by a repartition topic, with a changelog: the group coordinator names both internal
topics missing (K:group-coordinator/.../streams/topics/InternalTopicManager.java) and the broker creates
them. It runs until it has counted every word, then closes (SIGTERM: ``KafkaStreams.close`` commits
every task's offsets, the input's end, and the members leave: their tombstones).

``logdoctor dump --print-data --json`` of every ``__consumer_offsets`` segment gives every field of every
record Kafka's decoder prints, with the same value: StreamsGroupMetadataValue (``last_assignment_configs``,
the topology epochs), the topology, member metadata, target assignment and its metadata
(``assignment_timestamp``, KAFKA-20266), the current member assignment (``assignment_epochs`` of each task,
KIP-1251), the offset commits and the members' tombstones. ``kafka-streams-groups.sh --describe`` of the
running group names the members the records hold. ``scan --deep`` of the log dir names nothing.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dump_agreement import agrees
from kafka_cluster import ROOT, KafkaCluster, kafka_libs, logdoctor, spawn, wait_until

pytestmark = pytest.mark.kafka

VERSION = "4.4.0"
STREAMS_LIBS = ROOT / ".tools" / "kafka-streams" / VERSION / "lib"
APP = "wordcount"
INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"  # WordCountDemo's topics
LINES = [b"all streams lead to kafka", b"hello kafka streams", b"join kafka summit"] * 4
_LINE = re.compile(r"\| offset: (\d+) .*?(?: key: (\{.*\}))? payload: (\{.*\}|<DELETE>)$")
JAVA = ["java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
STREAMS_TYPES = {
    "StreamsGroupMetadata",
    "StreamsGroupTopology",
    "StreamsGroupMemberMetadata",
    "StreamsGroupTargetAssignmentMember",
    "StreamsGroupTargetAssignmentMetadata",
    "StreamsGroupCurrentMemberAssignment",
}


def _groups_tool(cluster: KafkaCluster, *args: str) -> subprocess.CompletedProcess:
    """``kafka-streams-groups.sh ARGS`` (StreamsGroupCommand of the installed 4.4.0 tools)."""
    return subprocess.run(
        [
            *JAVA,
            "-cp",
            f"{kafka_libs(VERSION)}/*",
            "org.apache.kafka.tools.streams.StreamsGroupCommand",
            *("--bootstrap-server", cluster.bootstrap, "--group", APP, *args),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _counted(cluster: KafkaCluster) -> int:
    """How many counts WordCountDemo has written (one per word read: its cache is off; at least once)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watch"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(OUTPUT, 0), 10)[1])
    finally:
        consumer.close()


@dataclass
class Written:
    cluster: KafkaCluster
    log_dir: Path
    ends: dict[int, int]  # the input's end offsets, which the group commits
    described: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    if not (STREAMS_LIBS / f"kafka-streams-{VERSION}.jar").is_file():
        pytest.skip(
            f"required: Kafka Streams {VERSION} in {STREAMS_LIBS} (bash scripts/ensure-kafka-streams.sh)"
        )
    root = tmp_path_factory.mktemp("streams-groups")
    cluster = KafkaCluster(root, version=VERSION)
    with cluster:
        cluster.create_topic(INPUT, partitions=2)
        cluster.create_topic(OUTPUT)
        ends = {p: cluster.produce(INPUT, [(None, x) for x in LINES], partition=p)[-1] + 1 for p in (0, 1)}
        config = root / "streams.properties"
        config.write_text(
            f"application.id={APP}\nbootstrap.servers={cluster.bootstrap}\ngroup.protocol=streams\n"
            f"num.stream.threads=2\ncommit.interval.ms=500\nstate.dir={root / 'state'}\n"
        )
        app = spawn(
            [
                *JAVA,
                "-cp",
                f"{STREAMS_LIBS}/*",
                "org.apache.kafka.streams.examples.wordcount.WordCountDemo",
                str(config),
            ],
            log=root / "wordcount.log",
        )
        try:
            words = 2 * sum(len(x.split()) for x in LINES)
            wait_until(f"{APP} to count {words} words", lambda: _counted(cluster) >= words, 90, every=0.5)
            described = _groups_tool(cluster, "--describe", "--members", "--verbose")
        finally:  # KafkaStreams.close: every task's offsets committed, then the members leave
            app.send_signal(signal.SIGTERM)
            try:
                app.wait(60)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
    return Written(cluster, cluster.broker(1).log_dirs[0], ends, described)  # stopped cleanly


def _records(cluster: KafkaCluster, log_dir: Path) -> list[dict[str, Any]]:
    """Every decoded record of ``__consumer_offsets``, each checked against Kafka's decoder."""
    out: list[dict[str, Any]] = []
    for log in sorted(log_dir.glob("__consumer_offsets-*/*.log")):
        if not log.stat().st_size:
            continue
        text = cluster.tool("kafka-dump-log.sh", "--offsets-decoder", "--files", str(log)).stdout
        done = logdoctor("dump", "--print-data", "--json", str(log))
        assert done.returncode == 0, done.stderr
        rows = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
        ours = {r["offset"]: r["decoded"] for r in rows if r["type"] == "record" and "decoded" in r}
        for line in text.splitlines():
            found = _LINE.search(line)
            if not found or not found[2]:
                continue  # a batch line, or a marker
            offset, key = int(found[1]), json.loads(found[2])
            mine = ours[offset]
            where = f"{log.parent.name} offset {offset} ({mine.get('type')})"
            assert "unknown" not in mine, (where, mine)
            assert mine["key_version"] == int(key["type"]), where
            agrees(mine["key"], key["data"], f"{where} key")
            if found[3] == "<DELETE>":
                assert mine["value"] is None, where
            else:
                payload = json.loads(found[3])
                assert mine["version"] == int(payload["version"]), where
                agrees(mine["value"], payload["data"], f"{where} value")
            out.append(mine)
    return out


@pytest.fixture(scope="module")
def records(written: Written) -> list[dict[str, Any]]:
    return _records(written.cluster, written.log_dir)


def test_streams_group_records_equal_kafkas_decoder(written: Written, records: list[dict[str, Any]]) -> None:
    log_dir = written.log_dir
    values: dict[str, list[dict[str, Any]]] = {}
    tombstones: set[str] = set()
    for r in records:
        if r["value"] is None:
            tombstones.add(r["type"])
        else:
            values.setdefault(r["type"], []).append(r["value"])
    assert set(values) >= STREAMS_TYPES, sorted(values)
    # the members left: their metadata and assignments deleted
    assert {
        "StreamsGroupMemberMetadata",
        "StreamsGroupTargetAssignmentMember",
        "StreamsGroupCurrentMemberAssignment",
    } <= tombstones
    # the assignment configs of StreamsGroupMetadataValue and the target assignment's timestamp
    assert all(
        {"key": "num.standby.replicas", "value": "0"} in v["last_assignment_configs"]
        for v in values["StreamsGroupMetadata"]
    )
    assert any(v["assignment_timestamp"] > 0 for v in values["StreamsGroupTargetAssignmentMetadata"])
    # the topology: two subtopologies, the repartition and changelog topics the broker created
    topology = values["StreamsGroupTopology"][-1]["subtopologies"]
    assert len(topology) == 2
    internal = {
        t["name"] for s in topology for t in s["repartition_source_topics"] + s["state_changelog_topics"]
    }
    assert {
        f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-{x}" for x in ("repartition", "changelog")
    } == internal
    assert all((log_dir / f"{t}-0").is_dir() for t in internal)
    # every task of both subtopologies active on a member, with the epoch it was assigned at
    tasks = {
        (t["subtopology_id"], p, e)
        for v in values["StreamsGroupCurrentMemberAssignment"]
        for t in v["active_tasks"]
        for p, e in zip(t["partitions"], t["assignment_epochs"], strict=True)
    }
    assert {(s, p) for s, p, _e in tasks} == {(s, p) for s in ("0", "1") for p in (0, 1)}
    assert not any("_unknown_tagged_fields" in json.dumps(r) for r in records)
    # the input's end committed (KafkaStreams.close) by the streams group
    commits = {
        r["key"]["partition"]: r["value"]["offset"]
        for r in records
        if r["type"] == "OffsetCommit" and r["key"]["group"] == APP and r["key"]["topic"] == INPUT
    }
    assert commits == written.ends


def test_members_are_the_ones_kafka_describes(written: Written, records: list[dict[str, Any]]) -> None:
    """``kafka-streams-groups.sh --describe --members --verbose`` of the running group lists the two
    members (stream threads) whose metadata records the dump holds, with their process id and client id."""
    assert written.described.returncode == 0, written.described.stdout + written.described.stderr
    described = written.described.stdout
    members = {
        r["key"]["member_id"]: r["value"]
        for r in records
        if r["type"] == "StreamsGroupMemberMetadata" and r["value"] is not None
    }
    assert len(members) == 2
    for member_id, value in members.items():
        assert re.search(rf"\b{re.escape(member_id)}\b", described), (member_id, described)
        assert value["process_id"] in described and value["client_id"] in described


def test_scan_deep_names_nothing(written: Written) -> None:
    done = logdoctor("scan", "--deep", str(written.log_dir), "--json")
    report = json.loads(done.stdout)
    assert report["findings"] == [], report["findings"]
    assert done.returncode == 0


def test_streams_version_is_finalized_by_the_formatter(written: Written) -> None:
    """``streams.version`` 1 among the bootstrap FeatureLevelRecords of the zero checkpoint, as Kafka's
    decoder and ours read it: what lets the broker take ``group.protocol=streams``."""
    zero = written.log_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    theirs = written.cluster.tool(
        "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", str(zero)
    ).stdout
    assert '"name":"streams.version","featureLevel":1' in theirs
    done = logdoctor("dump", "--print-data", "--json", str(zero))
    rows = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
    levels = {
        r["decoded"]["data"]["name"]: r["decoded"]["data"]["feature_level"]
        for r in rows
        if r["type"] == "record" and (r.get("decoded") or {}).get("type") == "FeatureLevelRecord"
    }
    assert levels["streams.version"] == 1

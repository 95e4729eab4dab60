"""What a real Kafka 4.4.0 broker writes in its internal topics is decoded field for field as Kafka's own
``kafka-dump-log.sh`` decodes it, with the fields 4.3 and 4.4 added (issue 74):

- ``__consumer_offsets`` of a KIP-848 group (``group.protocol=consumer``) and a share group: the
  per-partition ``AssignmentEpochs`` of ConsumerGroupCurrentMemberAssignmentValue (KIP-1251) and the
  ``AssignmentTimestamp`` of the consumer and share target-assignment metadata (KAFKA-20266), which a
  decoder built from 4.2's definitions kept only as unknown tagged bytes;
- ``__share_group_state``: ``DeliveryCompleteCount`` (KIP-1226) of ShareUpdateValue;
- ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``: the bootstrap metadata records the
  4.4 formatter writes there (KAFKA-19648; no ``bootstrap.checkpoint``), and the share-group layout chosen
  by the feature levels they finalize.

``logdoctor dump --print-data --json`` of each file against ``kafka-dump-log.sh --offsets-decoder`` /
``--share-group-state-decoder`` / ``--cluster-metadata-decoder`` of the same file: every field Kafka prints
is ours with the same value (Kafka's JSON leaves out a tagged field at its default; ours shows it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kafka_cluster import KafkaCluster, logdoctor, wait_until

pytestmark = pytest.mark.kafka

VERSION = "4.4.0"
_LINE = re.compile(r"\| offset: (\d+) .*?(?: key: (\{.*\}))? payload: (\{.*\}|<DELETE>)$")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _agrees(ours: Any, theirs: Any, where: str) -> None:
    """Every field Kafka printed is ours with the same value; a field only ours holds must be at a default
    (Kafka's JSON converter leaves out tagged fields at their defaults)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        mine = {_camel(k): v for k, v in ours.items()}
        for k, v in theirs.items():
            assert k in mine, f"{where}.{k}: not decoded (ours: {sorted(mine)})"
            _agrees(mine[k], v, f"{where}.{k}")
        for k in set(mine) - set(theirs):
            assert mine[k] in (0, -1, None, [], ""), f"{where}.{k}: {mine[k]!r}, and Kafka prints nothing"
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), (where, ours, theirs)
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _agrees(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, (where, ours, theirs)


def _kafka(cluster: KafkaCluster, decoder: str, file: Path) -> dict[int, tuple[Any, Any]]:
    """offset -> (key, payload) as kafka-dump-log.sh ``decoder`` prints them."""
    done = cluster.tool("kafka-dump-log.sh", decoder, "--files", str(file))
    out: dict[int, tuple[Any, Any]] = {}
    for line in done.stdout.splitlines():
        found = _LINE.search(line)
        if found:
            key = json.loads(found[2]) if found[2] else None
            out[int(found[1])] = (key, None if found[3] == "<DELETE>" else json.loads(found[3]))
    return out


def _ours(file: Path) -> dict[int, dict[str, Any]]:
    done = logdoctor("dump", "--print-data", "--json", str(file))
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in done.stdout.splitlines() if x.strip()]
    return {r["offset"]: r for r in rows if r.get("type") == "record" and "decoded" in r}


def _compare(cluster: KafkaCluster, decoder: str, file: Path) -> list[dict[str, Any]]:
    """Our decoded records of ``file``, each checked against Kafka's; the ones Kafka decoded."""
    theirs, ours = _kafka(cluster, decoder, file), _ours(file)
    assert theirs and set(theirs) <= set(ours), (file, sorted(theirs), sorted(ours))
    out = []
    for offset, (key, payload) in sorted(theirs.items()):
        mine = ours[offset]["decoded"]
        where = f"{file.parent.name} offset {offset}"
        assert "unknown" not in mine, (where, mine)
        if key is not None:  # a coordinator record: {"type": record type, "data": key}, {"version", "data"}
            assert mine["key_version"] == int(key["type"]), where
            _agrees(mine["key"], key["data"], f"{where} key")
            if payload is None:
                assert mine["value"] is None, where
            else:
                assert mine["version"] == int(payload["version"]), where
                _agrees(mine["value"], payload["data"], f"{where} value")
        else:  # a metadata record: {"type": "FEATURE_LEVEL_RECORD", "version", "data"}
            assert re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", mine["type"]).upper() == payload["type"], where
            assert mine["version"] == payload["version"], where
            _agrees(mine["data"], payload["data"], f"{where} data")
        out.append(mine)
    return out


def _consumer_group(cluster: KafkaCluster, group: str, records: int) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["t"])
        got = [0]

        def read() -> bool:
            msg = consumer.poll(0.5)
            got[0] += msg is not None and msg.error() is None
            return got[0] >= records

        wait_until(f"{group} to read {records} records", read, 60, every=0)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def _share_group(cluster: KafkaCluster, group: str, records: int) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        consumer.subscribe(["t"])
        got = [0]

        def read() -> bool:  # a share group starts at the end: records written while it polls
            cluster.produce("t", [(b"s", b"s")] * 3, partition=0)
            got[0] += sum(1 for m in consumer.poll(0.5) or [] if m.error() is None)
            return got[0] >= records

        wait_until(f"share group {group} to read {records} records", read, 60, every=0)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[KafkaCluster, Path]:
    cluster = KafkaCluster(tmp_path_factory.mktemp("layouts44"), version=VERSION)
    with cluster:  # started
        cluster.create_topic("t", partitions=2)
        for p in (0, 1):
            cluster.produce("t", [(b"k%d" % i, b"v") for i in range(10)], partition=p)
        _consumer_group(cluster, "g848", 20)
        _share_group(cluster, "gshare", 5)
    return cluster, cluster.broker(1).log_dirs[0]  # stopped cleanly: its files are final


def _decoded(cluster: KafkaCluster, log_dir: Path, topic: str, decoder: str) -> list[dict[str, Any]]:
    out = []
    for folder in sorted(log_dir.glob(f"{topic}-*")):
        for log in sorted(folder.glob("*.log")):
            if log.stat().st_size:
                out += _compare(cluster, decoder, log)
    return out


def test_consumer_offsets_assignment_epochs_and_timestamps(written: tuple[KafkaCluster, Path]) -> None:
    cluster, log_dir = written
    records = _decoded(cluster, log_dir, "__consumer_offsets", "--offsets-decoder")
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r["value"] is not None:
            by_type.setdefault(r["type"], []).append(r["value"])
    # KIP-1251: the epoch each partition was assigned at, one per partition
    assigned = [
        tp for v in by_type["ConsumerGroupCurrentMemberAssignment"] for tp in v["assigned_partitions"]
    ]
    assert any(tp["assignment_epochs"] for tp in assigned)
    assert all(len(tp["assignment_epochs"]) in (0, len(tp["partitions"])) for tp in assigned)
    # KAFKA-20266: when the target assignment was computed, consumer and share groups
    for name in ("ConsumerGroupTargetAssignmentMetadata", "ShareGroupTargetAssignmentMetadata"):
        assert any(v["assignment_timestamp"] > 0 for v in by_type[name]), name
    assert not any("_unknown_tagged_fields" in json.dumps(r) for r in records)


def test_share_group_state_delivery_complete_count(written: tuple[KafkaCluster, Path]) -> None:
    cluster, log_dir = written
    records = _decoded(cluster, log_dir, "__share_group_state", "--share-group-state-decoder")
    updates = [r for r in records if r["type"] == "ShareUpdate" and r["value"] is not None]
    assert updates and any(r["value"]["delivery_complete_count"] >= 0 for r in updates)  # KIP-1226
    # the layout chosen by the feature levels the zero checkpoint's bootstrap records finalize
    assert all(r["layout_by"].startswith("feature levels: ") for r in records if r["value"] is not None)


def test_bootstrap_records_in_the_zero_checkpoint(written: tuple[KafkaCluster, Path]) -> None:
    """KAFKA-19648: the formatter writes the bootstrap metadata records into the zero checkpoint."""
    cluster, log_dir = written
    zero = log_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    assert not (log_dir / "bootstrap.checkpoint").exists()
    records = _compare(cluster, "--cluster-metadata-decoder", zero)
    features = {
        r["data"]["name"]: r["data"]["feature_level"] for r in records if r["type"] == "FeatureLevelRecord"
    }
    assert {"metadata.version", "share.version", "group.version", "transaction.version"} <= set(features)

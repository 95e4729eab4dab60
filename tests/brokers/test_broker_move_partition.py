"""``logdoctor move-partition`` (a full disk: field reports 000 and 004) judged by the real broker.

One JBOD broker (two log dirs) in each era: Kafka 4.4.0 in KRaft mode, beside a controller of its own,
where each log dir carries a ``directory.id`` and the controller records each replica's directory
(KIP-858), and Kafka 3.9.1 in ZooKeeper mode, the field reports' era. A topic of four partitions is
spread over both dirs by the broker; one partition takes records of several segments (acks=all, the
acknowledged offsets kept). The broker is stopped cleanly, the move is planned and then applied, both
run exactly as an operator types them (``kafka_cluster.run_printed``), and the broker is started on the
same dirs. The broker's verdict:

- it starts with both dirs online: no offline dir, no stray replica (KRaft: LogManager.isStrayKraftReplica);
- it loads the replica from the new dir with the high watermark of the moved replication-offset-checkpoint
  entry ("Log loaded for partition ... with initial high watermark N", K:core/src/main/scala/kafka/cluster/
  Partition.scala createLog: the entry is read from the checkpoint of the dir the log is in), and with
  no segment recovered (a clean shutdown: K:core/src/main/scala/kafka/log/LogManager.scala loadLogs skips
  recovery where it finds the clean shutdown file);
- ``kafka-log-dirs.sh --describe`` lists the partition under the new dir, and a consumer reads every
  acknowledged record at its offset;
- nothing is recreated in the old dir and no byte of the moved segments changed;
- KRaft: the controller's metadata log records the new directory. The broker finds the log in another dir
  than the metadata assigns, and reports where it is (K:core/src/main/scala/kafka/server/ReplicaManager.scala
  maybeUpdateTopicAssignment -> AssignmentsManager -> AssignReplicasToDirs); the controller writes a
  PartitionChangeRecord with the new ``directories``, read here with Kafka's own ``kafka-dump-log.sh
  --cluster-metadata-decoder``. After a second restart the replica stays in the new dir, and an offline
  ``logdoctor scan`` of the stopped broker finds it where the metadata says (no ``REPLICA_MISPLACED``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster

pytestmark = pytest.mark.kafka

TOPIC = "orders"
PARTITIONS = 4
SEGMENT_BYTES = 1048576  # the least segment.bytes Kafka 4.x takes for a topic
VALUE_BYTES = 100_000  # 26 such records: three segments of the moved partition
MOVED_RECORDS = 26
OTHER_RECORDS = 5

ERAS = [
    pytest.param(kafka_cluster.NEWEST, id="kraft-4.4.0"),
    pytest.param(kafka_cluster.ZOOKEEPER_ERA, id="zookeeper-3.9.1"),
]


@dataclass
class Moved:
    """The broker after the move and its restart, and what the test recorded before."""

    cluster: KafkaCluster
    kraft: bool
    name: str  # TOPIC-P of the moved partition
    partition: int
    source: Path
    destination: Path
    acked: dict[int, list[tuple[int, bytes, bytes]]]  # partition -> (offset, key, value) acknowledged
    files_before: dict[str, tuple[int, str]]  # the moved folder's files: name -> (size, sha256)
    plan_output: str
    apply_output: str
    directory_ids: dict[Path, str] = field(default_factory=dict)
    start_log: str = ""

    @property
    def broker(self) -> kafka_cluster.Node:
        return self.cluster.broker(1)


# -- helpers (candidates for the harness: placement, log-dirs, metadata directories) ----------


def _placement(log_dirs: list[Path], topic: str) -> dict[int, Path]:
    """Where each partition folder of ``topic`` is on disk: partition -> log dir."""
    found: dict[int, Path] = {}
    for d in log_dirs:
        for folder in d.glob(f"{topic}-*"):
            suffix = folder.name[len(topic) + 1 :]
            if folder.is_dir() and suffix.isdigit():
                assert int(suffix) not in found, f"{folder} and {found[int(suffix)]} both hold it"
                found[int(suffix)] = d
    return found


def _meta_properties(log_dir: Path) -> dict[str, str]:
    lines = (log_dir / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def _files(folder: Path) -> dict[str, tuple[int, str]]:
    return {
        p.name: (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _log_dirs_described(cluster: KafkaCluster, topic: str) -> dict[str, str]:
    """``kafka-log-dirs.sh --describe``: partition name -> the log dir the broker serves it from."""
    done = cluster.tool(
        "kafka-log-dirs.sh",
        "--describe",
        "--bootstrap-server",
        cluster.bootstrap,
        "--broker-list",
        "1",
        "--topic-list",
        topic,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("{"))
    out: dict[str, str] = {}
    for broker in json.loads(line)["brokers"]:
        for log_dir in broker["logDirs"]:
            assert log_dir["error"] is None, log_dir
            for p in log_dir["partitions"]:
                assert not p["isFuture"], p
                out[p["partition"]] = log_dir["logDir"]
    return out


def _metadata_directories(cluster: KafkaCluster, topic_id: str) -> dict[int, list[list[str]]]:
    """Every ``directories`` the controller's metadata log recorded for each partition of a topic, oldest
    first, as Kafka's ``kafka-dump-log.sh --cluster-metadata-decoder`` prints the PartitionRecord and
    PartitionChangeRecord payloads."""
    controller = cluster.controller
    assert controller is not None
    segments = kafka_cluster.segments(controller.log_dirs[0] / "__cluster_metadata-0")
    done = cluster.tool(
        "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", ",".join(str(s) for s in segments)
    )
    seen: dict[int, list[list[str]]] = {}
    for match in re.finditer(r"payload: (\{.*\})\s*$", done.stdout, re.M):
        record = json.loads(match.group(1))
        if record.get("type") not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            continue
        data = record["data"]
        if data.get("topicId") == topic_id and "directories" in data:
            seen.setdefault(data["partitionId"], []).append(data["directories"])
    return seen


def _lines(log: str, pattern: str) -> str:
    """The lines of a broker log that match ``pattern`` (what an assertion shows)."""
    return "\n".join(line for line in log.splitlines() if re.search(pattern, line))


@pytest.fixture(scope="module", params=ERAS)
def moved(request, tmp_path_factory) -> Moved:
    version = request.param
    root = tmp_path_factory.mktemp(f"move-{version}")
    kraft = not version.startswith("3.")
    cluster = KafkaCluster(
        root / "cluster",
        version=version,
        brokers=1,
        log_dirs=2,
        combined=False if kraft else None,
    )
    cluster.start()
    try:
        yield _move(cluster, kraft, version)
    except BaseException:
        cluster.kill()
        raise
    cluster.stop()


def _move(cluster: KafkaCluster, kraft: bool, version: str) -> Moved:
    broker = cluster.broker(1)
    cluster.create_topic(TOPIC, PARTITIONS, 1, {"segment.bytes": SEGMENT_BYTES})

    def every_folder() -> dict[int, Path] | None:
        found = _placement(broker.log_dirs, TOPIC)
        return found if len(found) == PARTITIONS else None

    placed = kafka_cluster.wait_until("every partition's folder", every_folder, 60)
    assert set(placed.values()) == set(broker.log_dirs), f"the broker used one dir only: {placed}"
    partition = min(p for p, d in placed.items() if d == broker.log_dirs[0])
    source, destination = broker.log_dirs[0], broker.log_dirs[1]
    name = f"{TOPIC}-{partition}"

    acked: dict[int, list[tuple[int, bytes, bytes]]] = {}
    for p in range(PARTITIONS):
        count = MOVED_RECORDS if p == partition else OTHER_RECORDS
        records = [(f"k{p}-{i}".encode(), bytes([i % 256]) * VALUE_BYTES) for i in range(count)]
        offsets = cluster.produce(TOPIC, records, partition=p)
        acked[p] = [(o, k, v) for o, (k, v) in zip(offsets, records, strict=True)]
    broker.stop()

    folder = source / name
    assert len(kafka_cluster.segments(folder)) >= 3, "the moved partition should have several segments"
    files_before = _files(folder)
    directory_ids = {d: _meta_properties(d).get("directory.id", "") for d in broker.log_dirs}

    command = shlex.join(
        ["logdoctor", "move-partition", name, "--from", str(source), "--to", str(destination)]
    )
    plan = kafka_cluster.run_printed(command, version=version)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "Dry run: nothing was written. Add --apply to make these changes." in plan.stdout
    assert (source / name).is_dir() and not (destination / name).exists()
    applied = kafka_cluster.run_printed(f"{command} --apply", version=version)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    broker.start()
    # the broker opens each replica once it leads it (ZooKeeper mode: after "started", at the controller's
    # LeaderAndIsr): its log is read from then on
    for p in range(PARTITIONS):
        broker.wait_for_log(rf"Log loaded for partition {TOPIC}-{p} with initial high watermark")
    return Moved(
        cluster,
        kraft,
        name,
        partition,
        source,
        destination,
        acked,
        files_before,
        plan.stdout,
        applied.stdout,
        directory_ids,
        broker.log(),
    )


# -- the tests ----------


def test_plan_says_what_the_broker_will_do(moved: Moved) -> None:
    """The dry run names the move (a rename: both dirs are on one file system) and the checkpoint entries
    that travel with the folder, and, on KRaft, the directory the metadata assigns the replica to now and
    that the broker reports the destination's directory id to the controller (checked against the broker
    below); --apply ran every step."""
    text = " ".join(moved.plan_output.split())
    assert f"move {moved.name} from {moved.source} to {moved.destination}: rename" in text
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        assert f"{name} of the destination takes the moved partitions' entries" in text
        assert f"{name} of the source no longer lists the moved partitions" in text
    assert re.search(r"^applied: (\d+) of \1 step\(s\) run$", moved.apply_output, re.M), moved.apply_output
    if moved.kraft:
        src_id, dst_id = moved.directory_ids[moved.source], moved.directory_ids[moved.destination]
        assert src_id and dst_id, "a 4.x log dir carries a directory.id"
        assert f"assigns {moved.name} to directory {src_id} ({moved.source})" in text
        assert f"reports directory {dst_id} to the controller" in text
        assert f"keep {moved.source} in log.dirs for the broker's first start" in text
    else:
        assert "controller" not in text


def test_the_broker_loads_the_moved_replica_from_the_new_dir(moved: Moved) -> None:
    """The broker started with both dirs online, loaded the moved log from the destination with the high
    watermark of the moved replication-offset-checkpoint entry, recovered no segment, found no stray replica
    and took no dir offline."""
    log = moved.start_log
    end = moved.acked[moved.partition][-1][0] + 1
    loaded = _lines(
        log, rf"Completed load of Log\(dir=.*/{moved.name},|Log loaded for partition {moved.name} "
    )
    assert f"Completed load of Log(dir={moved.destination / moved.name}," in loaded, loaded
    assert f"Log loaded for partition {moved.name} with initial high watermark {end} " in loaded, loaded
    bad = _lines(log, rf"(?i)stray|offline log dir|Recovering unflushed segment .* for {moved.name}\.")
    assert not bad, bad
    assert not _lines(log, r"\b(ERROR|FATAL)\b"), _lines(log, r"\b(ERROR|FATAL)\b")


def test_the_broker_serves_every_acknowledged_record_from_the_new_dir(moved: Moved) -> None:
    """``kafka-log-dirs.sh --describe`` (DescribeLogDirs, answered from the broker's LogManager) lists the
    moved partition under the destination and every other partition where it was; a consumer reads every
    acknowledged record of every partition at its offset."""
    described = _log_dirs_described(moved.cluster, TOPIC)
    assert described[moved.name] == str(moved.destination)
    assert set(described) == {f"{TOPIC}-{p}" for p in range(PARTITIONS)}
    for p, records in moved.acked.items():
        assert moved.cluster.consume(TOPIC, p) == records, f"{TOPIC}-{p}"


def test_nothing_is_recreated_in_the_old_dir_nor_changed(moved: Moved) -> None:
    """The old dir holds no folder of the moved partition (no new replica, no ``-delete``/``-future``/
    ``-stray`` copy); the moved segments are the very bytes the broker wrote before the move (the active
    segment may have grown: none here, as nothing was produced since)."""
    assert not list(moved.source.glob(f"{moved.name}*")), list(moved.source.iterdir())
    assert [p.name for p in moved.destination.glob(f"{moved.name}*")] == [moved.name]
    after = _files(moved.destination / moved.name)
    for file_name, (size, digest) in moved.files_before.items():
        if file_name.endswith((".log", ".snapshot")) or file_name == "partition.metadata":
            assert after.get(file_name) == (size, digest), file_name


def test_kraft_the_controller_records_the_new_dir_and_it_stays_there(moved: Moved) -> None:
    """KRaft: the broker reported the replica's new directory (AssignReplicasToDirs) and the controller's
    metadata log records it; after a clean stop an offline ``logdoctor scan`` finds the replica where the
    metadata says, and after a second start the broker serves it from the new dir still."""
    if not moved.kraft:
        pytest.skip("ZooKeeper mode: replicas are not assigned to directories")
    src_id, dst_id = moved.directory_ids[moved.source], moved.directory_ids[moved.destination]
    topic_id = _meta_properties_topic_id(moved.destination / moved.name)

    def recorded() -> list[list[str]]:
        seen = _metadata_directories(moved.cluster, topic_id).get(moved.partition, [])
        return seen if seen and seen[-1] == [dst_id] else []

    seen = kafka_cluster.wait_until("the controller to record the new directory", recorded, 60, every=1)
    assert [src_id] in seen, f"the replica was first assigned to {src_id}: {seen}"
    # the broker sent the one assignment it found changed (K:server/src/main/java/org/apache/kafka/server/
    # AssignmentsManager.java maybeSendAssignments)
    sent = _lines(moved.broker.log(), r"AssignmentsManager id=1\] maybeSendAssignments: sending \d+ ")
    assert "sending 1 assignments" in sent, sent

    broker = moved.broker
    broker.stop()
    found = kafka_cluster.logdoctor_json("scan", *map(str, broker.log_dirs))
    codes = [(f["code"], f.get("path")) for f in found["findings"] if f["code"].startswith("REPLICA_")]
    assert codes == []
    broker.start()
    log = broker.log()
    assert f"Log loaded for partition {moved.name}" in log
    assert not re.search(r"(?i)stray|offline log dir", log), log
    assert _log_dirs_described(moved.cluster, TOPIC)[moved.name] == str(moved.destination)
    assert not list(moved.source.glob(f"{moved.name}*"))
    assert moved.cluster.consume(TOPIC, moved.partition) == moved.acked[moved.partition]


def _meta_properties_topic_id(partition_dir: Path) -> str:
    """The topic id of a partition folder's ``partition.metadata`` (``topic_id: ...``)."""
    text = (partition_dir / "partition.metadata").read_text()
    return re.search(r"topic_id: (\S+)", text).group(1)


def test_kraft_the_old_dir_stays_in_log_dirs_for_the_first_start(moved: Moved) -> None:
    """KRaft, the plan's advice to keep the source dir in ``log.dirs`` for the first start after the move,
    and what the broker does without it. Every partition of the other dir is moved (run as printed) and the
    broker started without that dir: it registers without its directory id, and the controller accepts a
    leader only in an online dir of the broker's registration (K:metadata/src/main/java/org/apache/kafka/
    controller/ReplicationControlManager.java LeaderAcceptor). The broker's AssignReplicasToDirs records the
    new dir (handleAssignReplicasToDirs) but elects no leader, as it judges by the assignment the partition
    had before: when the broker is unfenced (handleBrokerUnfenced elects it) before its report is recorded,
    the moved partitions stay without a leader; after it, they are led at once. A race, seen both ways with
    4.4.0 here, so either is accepted; the next restart elects the broker in the dir it has online in any
    case, and every acknowledged record is then served from the remaining dir."""
    if not moved.kraft:
        pytest.skip("ZooKeeper mode: replicas are not assigned to directories")
    cluster, broker = moved.cluster, moved.broker
    keep, leave = moved.destination, moved.source
    if not (keep / "__cluster_metadata-0").is_dir():
        keep, leave = leave, keep
    broker.stop()
    folders = sorted(p.name for p in leave.iterdir() if p.is_dir())
    topics = sorted({f.rsplit("-", 1)[0] for f in folders})
    assert TOPIC in topics
    by_topic = [a for t in topics for a in ("--topic", t)]
    command = shlex.join(["logdoctor", "move-partition", *by_topic, "--from", str(leave), "--to", str(keep)])
    done = kafka_cluster.run_printed(f"{command} --apply", version=kafka_cluster.NEWEST)
    assert done.returncode == 0, done.stdout + done.stderr
    # the plan --apply prints before it runs says what follows
    assert f"keep {leave} in log.dirs for the broker's first start" in " ".join(done.stdout.split())
    assert not [p for p in leave.iterdir() if p.is_dir()]

    broker.config["log.dirs"] = str(keep)
    broker.start()
    keep_id = _meta_properties(keep)["directory.id"]
    topic_id = _meta_properties_topic_id(keep / moved.name)
    moved_here = [int(f.rsplit("-", 1)[1]) for f in folders if f.rsplit("-", 1)[0] == TOPIC]
    kafka_cluster.wait_until(
        "the controller to record the new directory of the moved partitions",
        lambda: all(
            d[p][-1] == [keep_id] for d in [_metadata_directories(cluster, topic_id)] for p in moved_here
        ),
        60,
        every=1,
    )
    leaders = {p: d["leader"] for p, d in cluster.describe(TOPIC).items()}
    # the partition that was in the remaining dir all along is led; the moved ones at once or not yet
    assert all(leaders[p] == 1 for p in range(PARTITIONS) if p not in moved_here), leaders

    broker.stop()
    broker.start()
    kafka_cluster.wait_until(
        "every partition to have a leader",
        lambda: all(d["leader"] == 1 for d in cluster.describe(TOPIC).values()),
        60,
    )
    assert _log_dirs_described(cluster, TOPIC) == {f"{TOPIC}-{p}": str(keep) for p in range(PARTITIONS)}
    for p, records in moved.acked.items():
        assert cluster.consume(TOPIC, p) == records, f"{TOPIC}-{p}"

"""KIP-1066 cordoned log dirs and ``-stray`` replicas, as a real Kafka 4.4.0 broker writes them (issue 74).

One KRaft cluster: a controller of its own (node 3000) and two brokers with two log dirs each (JBOD). What
the operator and the cluster do, in order:

1. topic ``orders`` (4 partitions, broker 1 only) is spread by broker 1 over both its dirs; topic ``gone``
   (1 partition, broker 1) takes records of its first incarnation;
2. broker 1's second dir is cordoned as an operator does it: ``kafka-configs.sh --alter --entity-type
   brokers --entity-name 1 --add-config cordoned.log.dirs=DIR`` (a dynamic config:
   K:server-common/.../config/ServerLogConfigs.java ``cordoned.log.dirs``). The broker applies it
   (DynamicLogConfig -> LogManager.updateCordonedLogDirs) and sends the cordoned directory ids in its
   heartbeat; the controller writes a BrokerRegistrationChangeRecord v3 with ``CordonedLogDirs``
   (ReplicationControlManager.handleDirectoriesCordoned; metadata.version 4.3-IV0+,
   MetadataVersion.isCordonedLogDirsSupported);
3. the broker as the judge of the cordon: a new topic's replicas all go to the other dir (LogManager
   nextLogDirs leaves cordoned dirs out), and AlterReplicaLogDirs into the cordoned dir is refused
   (ReplicaManager.alterReplicaLogDirs: InvalidReplicaAssignmentException "Log directory ... is cordoned");
4. broker 1 is stopped and topic ``gone`` deleted through broker 2; at its next start broker 1 finds a log
   whose topic id the metadata does not have and renames it ``gone-0.<uuid>-stray``
   (K:storage/.../log/LogManager.java isStrayReplica, "Log for partition ... is marked as stray and renamed
   to ..."). ``gone`` is created again, replicas [2, 1], with records of its second incarnation: broker 1
   holds a live copy and the stray of the old one, side by side;
5. both brokers are stopped cleanly: the offline state every ``logdoctor`` check below reads;
6. the operator moves an ``orders`` partition into the cordoned dir by hand anyway and starts broker 1:
   what the broker does then is recorded (``move-partition``'s refusal says it).
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster

pytestmark = pytest.mark.kafka

VERSION = kafka_cluster.NEWEST
ORDERS = "orders"
ORDERS_PARTITIONS = 4
PLACED = "placed"  # created after the cordon: the broker places none of it in the cordoned dir
GONE = "gone"
OLD_RECORDS = [(f"old-{i}".encode(), f"first incarnation {i}".encode()) for i in range(7)]
NEW_RECORDS = [(f"new-{i}".encode(), f"second incarnation {i}".encode()) for i in range(3)]


@dataclass
class Broker1:
    """The cluster after the scenario, and what was recorded on the way."""

    cluster: KafkaCluster
    root: Path
    open_dir: Path  # broker 1's dir that stays open
    cordoned_dir: Path  # broker 1's cordoned dir
    broker2_dirs: list[Path]
    directory_ids: dict[Path, str]
    cordon_record: dict  # kafka-dump-log.sh's decoding of the BrokerRegistrationChangeRecord that cordons
    cordon_offset: int
    cordon_file: Path
    placed: dict[str, Path]  # PLACED's partition folders -> the dir the broker put each in
    alter_refused: str  # kafka-reassign-partitions.sh's output asking for a cordoned dir
    alter_refused_log: str  # the broker's log line of the refusal
    stray: Path  # the -stray folder the broker left
    stray_log: str  # the broker's log lines of the rename
    old_topic_id: str
    new_topic_id: str
    orders_moved: str  # the orders partition the operator moved by hand
    orders_acked: dict[int, list[tuple[int, bytes, bytes]]]
    gone_acked: list[tuple[int, bytes, bytes]]
    outputs: dict[str, object] = field(default_factory=dict)  # logdoctor's outputs on the offline state
    restart_log: str = ""  # broker 1's log of its start after the manual move
    moved_directories: list[list[str]] = field(default_factory=list)


def _meta(log_dir: Path) -> dict[str, str]:
    lines = (log_dir / "meta.properties").read_text().splitlines()
    return dict(x.split("=", 1) for x in lines if "=" in x and not x.startswith("#"))


def _topic_id(folder: Path) -> str:
    return re.search(r"topic_id: (\S+)", (folder / "partition.metadata").read_text()).group(1)


def _metadata_records(cluster: KafkaCluster, metadata_dir: Path) -> list[tuple[Path, int, dict]]:
    """Every record of a ``__cluster_metadata-0`` folder's segments as Kafka's ``kafka-dump-log.sh
    --cluster-metadata-decoder`` prints it: (segment, offset, payload)."""
    out: list[tuple[Path, int, dict]] = []
    for segment in kafka_cluster.segments(metadata_dir):
        done = cluster.tool("kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", str(segment))
        for m in re.finditer(r"^\| offset: (\d+) .* payload: (\{.*\})\s*$", done.stdout, re.M):
            out.append((segment, int(m.group(1)), json.loads(m.group(2))))
    return out


def _cordons(records: list[tuple[Path, int, dict]], broker: int) -> list[tuple[Path, int, dict]]:
    return [
        r
        for r in records
        if r[2]["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
        and r[2]["data"]["brokerId"] == broker
        and r[2]["data"].get("cordonedLogDirs")
    ]


def _lines(log: str, pattern: str) -> str:
    return "\n".join(x for x in log.splitlines() if re.search(pattern, x))


def _run(*args: str) -> dict[str, object]:
    done = kafka_cluster.logdoctor(*args)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Broker1:
    root = tmp_path_factory.mktemp("kip1066")
    cluster = KafkaCluster(root / "cluster", version=VERSION, brokers=2, log_dirs=2, combined=False)
    cluster.start()
    try:
        yield _scenario(cluster, root)
    except BaseException:
        cluster.kill()
        raise
    cluster.stop()


def _scenario(cluster: KafkaCluster, root: Path) -> Broker1:
    b1, b2 = cluster.broker(1), cluster.broker(2)
    meta_dir = next(d for d in b1.log_dirs if (d / "__cluster_metadata-0").is_dir())
    open_dir = meta_dir
    cordoned = next(d for d in b1.log_dirs if d != open_dir)
    ids = {d: _meta(d)["directory.id"] for d in (*b1.log_dirs, *b2.log_dirs)}

    # 1. data in both dirs, and the first incarnation of `gone`
    cluster.create_topic(ORDERS, assignment=[[1]] * ORDERS_PARTITIONS)
    orders_acked: dict[int, list[tuple[int, bytes, bytes]]] = {}
    for p in range(ORDERS_PARTITIONS):
        recs = [(f"o{p}-{i}".encode(), f"order {p}/{i}".encode()) for i in range(3)]
        offsets = cluster.produce(ORDERS, recs, partition=p)
        orders_acked[p] = [(o, k, v) for o, (k, v) in zip(offsets, recs, strict=True)]
    in_cordoned = sorted(f.name for f in cordoned.glob(f"{ORDERS}-*"))
    assert in_cordoned and len(in_cordoned) < ORDERS_PARTITIONS, "the broker should use both dirs"
    cluster.create_topic(GONE, assignment=[[1]])
    cluster.produce(GONE, OLD_RECORDS)
    old_folder = next(d / f"{GONE}-0" for d in b1.log_dirs if (d / f"{GONE}-0").is_dir())
    old_topic_id = _topic_id(old_folder)

    # 2. the operator cordons the second dir; the controller records it
    cluster.tool(
        "kafka-configs.sh", "--bootstrap-server", cluster.bootstrap, "--entity-type", "brokers",
        "--entity-name", "1", "--alter", "--add-config", f"cordoned.log.dirs={cordoned}",
    )  # fmt: skip
    b1_meta = meta_dir / "__cluster_metadata-0"

    def cordon_in_broker_log() -> list:
        return [r for r in _cordons(_metadata_records(cluster, b1_meta), 1) if r[2]["version"] >= 3]

    kafka_cluster.wait_until(
        "broker 1's metadata log to record the cordon", cordon_in_broker_log, 60, every=1
    )

    # 3. the broker as the judge: a new topic goes to the open dir only; a move into the cordoned one fails
    cluster.create_topic(PLACED, assignment=[[1]] * 4)

    def placed_folders() -> dict[str, Path]:  # the broker makes them as it applies the metadata: waited for
        found = {f.name: d for d in b1.log_dirs for f in d.glob(f"{PLACED}-*")}
        return found if len(found) == 4 else {}

    placed = kafka_cluster.wait_until(f"broker 1 to make {PLACED}'s 4 folders", placed_folders, 60)
    move = {"version": 1, "partitions": [{"topic": PLACED, "partition": 0, "replicas": [1],
                                          "log_dirs": [str(cordoned)]}]}  # fmt: skip
    request = root / "to-cordoned.json"
    request.write_text(json.dumps(move))
    refused = cluster.tool(
        "kafka-reassign-partitions.sh", "--bootstrap-server", cluster.bootstrap,
        "--reassignment-json-file", str(request), "--execute", check=False,
    )  # fmt: skip
    refusal = rf"InvalidReplicaAssignmentException: Log directory {re.escape(str(cordoned))} is cordoned"
    refused_log = b1.wait_for_log(refusal).group(0)

    # 4. the stray: `gone` deleted while broker 1 is down, then created again
    b1.stop()
    admin = cluster.admin(cluster.bootstrap_of([b2]))  # kept while its future is pending
    admin.delete_topics([GONE], operation_timeout=30)[GONE].result(60)
    b1.start()
    b1.wait_for_log(rf"Log in \S*/{GONE}-0 marked stray and renamed to")
    strays = [f for d in b1.log_dirs for f in d.glob(f"{GONE}-0.*-stray")]
    assert len(strays) == 1, [sorted(p.name for p in d.iterdir()) for d in b1.log_dirs]
    stray_log = _lines(b1.log(), r"Found stray log dir|marked stray and renamed")
    cluster.create_topic(GONE, assignment=[[2, 1]])
    offsets = cluster.produce(GONE, NEW_RECORDS)
    gone_acked = [(o, k, v) for o, (k, v) in zip(offsets, NEW_RECORDS, strict=True)]

    def both_caught_up() -> bool:
        return sorted(cluster.describe(GONE)[0]["isr"]) == [1, 2]

    kafka_cluster.wait_until("both replicas of gone-0 in the ISR", both_caught_up, 60)
    live = next(d / f"{GONE}-0" for d in b1.log_dirs if (d / f"{GONE}-0").is_dir())
    new_topic_id = _topic_id(live)

    # 5. the offline state
    b1.stop()
    b2.stop()
    records = _metadata_records(cluster, b1_meta)
    segment, offset, record = _cordons(records, 1)[-1]
    orders_moved = next(f.name for f in open_dir.glob(f"{ORDERS}-*"))
    state = Broker1(
        cluster, root, open_dir, cordoned, list(b2.log_dirs), ids, record, offset, segment, placed,
        refused.stdout + refused.stderr, refused_log, strays[0], stray_log, old_topic_id, new_topic_id,
        orders_moved, orders_acked, gone_acked,
    )  # fmt: skip
    dirs = [str(d) for d in b1.log_dirs]
    state.outputs["move"] = _run(
        "move-partition", orders_moved, "--from", str(open_dir), "--to", str(cordoned)
    )
    state.outputs["move_json"] = _run(
        "move-partition", orders_moved, "--from", str(open_dir), "--to", str(cordoned), "--json"
    )
    state.outputs["scan"] = json.loads(str(_run("scan", "--deep", "--json", *dirs)["stdout"]))
    state.outputs["scan_both"] = json.loads(
        str(_run("scan", "--deep", "--json", *dirs, *map(str, b2.log_dirs))["stdout"])
    )
    state.outputs["dump_meta"] = _run("dump", "-p", "--json", str(segment))
    state.outputs["dump_stray"] = _run("dump", "-p", "--json", *map(str, kafka_cluster.segments(strays[0])))

    # 6. moved into the cordoned dir by hand anyway (the folder alone, as `mv` does), and started
    shutil.move(str(open_dir / orders_moved), str(cordoned / orders_moved))
    b1.start()
    b1.wait_for_log(rf"Log loaded for partition {orders_moved} with initial high watermark")
    state.restart_log = b1.log()
    topic_id = _topic_id(cordoned / orders_moved)
    part = int(orders_moved.rsplit("-", 1)[1])

    def recorded() -> list[list[str]]:
        seen = [
            r[2]["data"]["directories"]
            for r in _metadata_records(cluster, b1_meta)
            if r[2]["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
            and r[2]["data"].get("topicId") == topic_id
            and r[2]["data"]["partitionId"] == part
            and "directories" in r[2]["data"]
        ]
        return seen if seen and seen[-1] == [ids[cordoned]] else []

    state.moved_directories = kafka_cluster.wait_until(
        "the controller to record the move", recorded, 60, every=1
    )
    state.outputs["consumed"] = cluster.consume(ORDERS, part)
    b1.stop()
    return state


# -- KIP-1066: the cordon ----------


def test_the_broker_records_the_cordon_and_places_nothing_there(scenario: Broker1) -> None:
    """The controller's BrokerRegistrationChangeRecord v3 names the cordoned dir's id, the dynamic config is
    a ConfigRecord before it; a topic created after the cordon has every replica in the open dir; an
    AlterReplicaLogDirs into the cordoned dir is refused by the broker."""
    s = scenario
    assert s.cordon_record["version"] == 3
    assert s.cordon_record["data"]["cordonedLogDirs"] == [s.directory_ids[s.cordoned_dir]]
    assert set(s.placed.values()) == {s.open_dir}, s.placed
    assert "Failed to alter dir for placed-0" in s.alter_refused, s.alter_refused
    assert "InvalidReplicaAssignmentException" in s.alter_refused
    assert not (s.cordoned_dir / f"{PLACED}-0").exists()
    assert not list(s.cordoned_dir.glob(f"{PLACED}-0.*-future"))


def test_move_partition_refuses_the_cordoned_dir_naming_the_record(scenario: Broker1) -> None:
    """``move-partition`` into the cordoned dir: refused (78, nothing written), naming the record that cordons
    it (type, offset, file) as kafka-dump-log.sh prints it, and what the broker does with a replica put
    there anyway (observed below)."""
    s = scenario
    out = s.outputs["move"]
    assert out["rc"] == 78, out
    text = " ".join(str(out["stderr"]).split())
    assert f"{s.cordoned_dir} (directory {s.directory_ids[s.cordoned_dir]}) is cordoned" in text, text
    assert f"BrokerRegistrationChangeRecord v3 at offset {s.cordon_offset} of {s.cordon_file}" in text, text
    assert "ConfigRecord" in text and "cordoned.log.dirs" in text, text
    assert "Dry run" not in str(out["stdout"])
    js = s.outputs["move_json"]
    assert js["rc"] == 78, js


def test_dump_shows_the_cordon_as_kafka_dump_log_does(scenario: Broker1) -> None:
    """``dump -p`` of the metadata segment decodes the cordoning record with the values Kafka's own decoder
    prints."""
    s = scenario
    out = s.outputs["dump_meta"]
    assert out["rc"] == 0, out
    rows = [json.loads(x) for x in str(out["stdout"]).splitlines() if x.startswith("{")]
    mine = next(r for r in rows if r.get("type") == "record" and r.get("offset") == s.cordon_offset)
    decoded = mine["decoded"]
    assert (decoded["type"], decoded["version"]) == ("BrokerRegistrationChangeRecord", 3)
    data = decoded["data"]
    theirs = s.cordon_record["data"]
    assert (data["broker_id"], data["broker_epoch"], data["cordoned_log_dirs"]) == (
        theirs["brokerId"],
        theirs["brokerEpoch"],
        theirs["cordonedLogDirs"],
    )


def test_scan_shows_the_cordoned_dir_with_no_false_finding(scenario: Broker1) -> None:
    """``scan --deep`` of broker 1's dirs: the metadata summary names the cordoned dir, and the only finding
    is the stray's (the cordon itself is no fault)."""
    s = scenario
    scan = s.outputs["scan"]
    assert scan["metadata"]["cordoned_log_dirs"] == {"1": [s.directory_ids[s.cordoned_dir]]}
    codes = sorted({f["code"] for f in scan["findings"]})
    assert codes == ["STRAY_REPLICA_LEFT"], [(f["code"], f.get("message")) for f in scan["findings"]]


def test_a_replica_moved_into_the_cordoned_dir_anyway(scenario: Broker1) -> None:
    """Moved by hand into the cordoned dir, the replica is loaded from there at the next start, and the
    controller records the cordoned dir as its directory (the cordon governs new placements only): what
    ``move-partition``'s refusal says."""
    s = scenario
    loaded = _lines(s.restart_log, rf"Completed load of Log\(dir=.*/{s.orders_moved},")
    assert str(s.cordoned_dir / s.orders_moved) in loaded, loaded
    assert s.moved_directories[-1] == [s.directory_ids[s.cordoned_dir]]
    part = int(s.orders_moved.rsplit("-", 1)[1])
    assert s.outputs["consumed"] == s.orders_acked[part]
    text = " ".join(str(s.outputs["move"]["stderr"]).split())
    assert "loads it from there at its next start and reports that directory to the controller" in text


# -- stray replicas ----------


def test_the_broker_left_a_stray(scenario: Broker1) -> None:
    s = scenario
    assert re.fullmatch(rf"{GONE}-0\.[0-9a-f]{{32}}-stray", s.stray.name), s.stray.name
    assert _topic_id(s.stray) == s.old_topic_id != s.new_topic_id
    assert f"the topicId {s.old_topic_id} does not exist in the metadata image" in s.stray_log, s.stray_log
    assert f"marked stray and renamed to {s.stray}" in s.stray_log, s.stray_log


def test_scan_names_the_stray_and_reads_the_live_copy(scenario: Broker1) -> None:
    """``scan --deep``: one STRAY_REPLICA_LEFT for the stray folder (an older incarnation), and the partition
    gone-0 read once, from the live folder, with the second incarnation's end offset; over both brokers no
    REPLICA_DIVERGED (the stray is never compared with the live replicas) and nothing else."""
    s = scenario
    for key in ("scan", "scan_both"):
        scan = s.outputs[key]
        strays = [f for f in scan["findings"] if f["code"] == "STRAY_REPLICA_LEFT"]
        assert [f["path"] for f in strays] == [str(s.stray)], strays
        assert f"older incarnation of {GONE} (topic id {s.old_topic_id}" in strays[0]["message"]
        assert [f["code"] for f in scan["findings"] if f["code"] != "STRAY_REPLICA_LEFT"] == [], key
        gone = [(p["log_dir"], p["log_end_offset"]) for p in scan["partitions"] if p["topic"] == GONE]
        live = [
            (str(d), len(NEW_RECORDS)) for d in (s.open_dir, s.cordoned_dir) if (d / f"{GONE}-0").is_dir()
        ]
        if key == "scan_both":
            live += [(str(d), len(NEW_RECORDS)) for d in s.broker2_dirs if (d / f"{GONE}-0").is_dir()]
        assert sorted(gone) == sorted(live), gone


def test_dump_of_the_stray_reads_the_old_incarnation(scenario: Broker1) -> None:
    """``dump`` of the stray's segment reads the first incarnation's records and says the folder is a stray,
    not the live copy (a note, no finding, exit 0)."""
    s = scenario
    out = s.outputs["dump_stray"]
    assert out["rc"] == 0, out
    rows = [json.loads(x) for x in str(out["stdout"]).splitlines() if x.startswith("{")]
    read = [
        (base64.b64decode(r["key"]), base64.b64decode(r["value"])) for r in rows if r.get("type") == "record"
    ]
    assert read == OLD_RECORDS
    notes = [r.get("note", "") for r in rows if r.get("type") == "summary"]
    assert notes and all(f"{s.stray.name} is a -stray folder" in n for n in notes), notes
    assert all("not the live copy" in n for n in notes)


def test_read_plans_and_sync_replica_take_the_live_copy(scenario: Broker1) -> None:
    """The export's read plan (``discover``: the partitions a census or an export reads) lists gone-0 once,
    the live folder; ``sync-replica`` of gone-0 from broker 2 (the other replica) to broker 1 replaces the
    live folder, and no step touches the stray."""
    from logdoctor.logdir.discovery import discover
    from logdoctor.repair.procedures.sync_replica import plan_sync

    s = scenario
    dirs = [s.open_dir, s.cordoned_dir]
    live = next(d / f"{GONE}-0" for d in dirs if (d / f"{GONE}-0").is_dir())
    refs = [r for r in discover([str(d) for d in dirs]) if r.topic == GONE]
    assert [(r.path, r.kind) for r in refs] == [(str(live), "log")]
    leader_dir = next(d for d in s.broker2_dirs if (d / f"{GONE}-0").is_dir())
    planned = plan_sync((GONE, 0), leader_dir, live.parent)
    paths = {str(step.path) for a in planned.plan.actions for step in a.steps}
    assert str(live) in paths, paths
    assert not [p for p in paths if p.startswith(str(s.stray)) or Path(p).name.endswith("-stray")], paths
    assert str(s.stray) not in json.dumps(planned.summary, default=str)

"""Issue 88 with real brokers: the controller's metadata disk is lost, and ``logdoctor rebuild-quorum``
rebuilds it from a broker's copy of ``__cluster_metadata-0``; Kafka 4.4.0 (KRaft, a static quorum: one
controller, node 3000, beside brokers 1 and 2) then serves as before.

1. Topics with configs (``orders``: 3 partitions on both brokers, ``retention.ms`` and
   ``max.message.bytes``; ``audit``: one partition moved from broker 1 to broker 2 with
   ``kafka-reassign-partitions.sh``), a SCRAM user and a client quota; records produced without
   idempotence, so that no producer id is handed out yet.
2. Broker 2 stops cleanly: its copy of the metadata log stays where it was. Broker 1 alone serves a
   transactional producer (``ledger``, one partition on broker 1): its coordinator asks the controller for
   the first block of producer ids, and the controller's ProducerIdsRecord is past broker 2's copy.
3. The brokers stop: the plan is refused (78) while the old controller still runs (it answers at the
   endpoint its RegisterControllerRecord registered: a rebuilt quorum beside a live one splits the
   cluster; with ``--not-a-voter HOST:PORT``, the way on it prints, the plan is made). Everything
   stops; the controller's metadata dir is deleted, and so is broker 1's copy of the metadata log (a
   metadata.log.dir on the controllers' volume class): broker 2's copy, the one left, is behind.
   Broker 2's quorum-state is set 5 epochs past its log, as a broker's is that heard of elections whose
   records it never fetched: it fetches from no leader of an earlier epoch (without the rebuild's
   quorum-state at that epoch it never registers).
4. ``logdoctor rebuild-quorum`` of both brokers' log dirs, for a new controller (node 3001, a new port,
   an empty folder): the plan chooses broker 2's copy and names the producer id broker 1's dir shows in
   use; ``--apply`` writes the controller's dir; the controller starts with the configuration the plan
   printed, the brokers with its ``controller.quorum.voters``.
5. Every topic is back with the same topic id, partitions, replicas and configs; the SCRAM user and the
   quota too; every record produced before is read back (``ledger``'s transaction read_committed); a new
   topic is created; a new transactional producer gets a producer id no earlier producer had (without the
   ProducerIdsRecord the rebuild appends, the controller hands out the first block again: the same id).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

import kafka_cluster as kc
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import build_inventory
from logdoctor.repair.procedures.rebuild_quorum import controller_answers

pytestmark = pytest.mark.kafka

CONFIGS = {"retention.ms": "7777777", "max.message.bytes": "123456"}
NEW_ID = 3001


def _topics(cluster: kc.KafkaCluster, names: list[str]) -> dict[str, dict]:
    """Each topic's id, partitions' replicas and non-default configs, as the cluster answers."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import ConfigResource

    admin = cluster.admin()
    described = admin.describe_topics(TopicCollection(names), request_timeout=30)
    out: dict[str, dict] = {}
    for name, future in described.items():
        d = future.result(timeout=60)
        res = ConfigResource(ConfigResource.Type.TOPIC, name)
        configs = admin.describe_configs([res])[res].result(timeout=60)
        out[name] = {
            "topic_id": str(d.topic_id),
            "replicas": {p.id: sorted(r.id for r in p.replicas) for p in d.partitions},
            "configs": {k: c.value for k, c in configs.items() if not c.is_default},
        }
    return out


def _scram_users(cluster: kc.KafkaCluster) -> dict[str, list[tuple[str, int]]]:
    admin = cluster.admin()  # kept while its future is pending
    got = admin.describe_user_scram_credentials(request_timeout=30).result(timeout=60)
    return {
        u: sorted((str(i.mechanism), i.iterations) for i in d.scram_credential_infos) for u, d in got.items()
    }


def _quota(cluster: kc.KafkaCluster) -> str:
    done = cluster.tool(
        "kafka-configs.sh",
        "--bootstrap-server",
        cluster.bootstrap,
        "--describe",
        "--entity-type",
        "clients",
        "--entity-name",
        "app-1",
    )
    return done.stdout.strip()


def _transaction(cluster: kc.KafkaCluster, txn_id: str, records: list[tuple[bytes, bytes]]) -> int:
    """``records`` to ledger-0 in one committed transaction; the producer id Kafka's tool says it has."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id, "acks": "all"})
    p.init_transactions(60)
    p.begin_transaction()
    for k, v in records:
        p.produce("ledger", value=v, key=k, partition=0)
    p.commit_transaction(60)
    done = cluster.tool(
        "kafka-transactions.sh",
        "--bootstrap-server",
        cluster.bootstrap,
        "describe",
        "--transactional-id",
        txn_id,
    )
    header, row = done.stdout.strip().splitlines()[:2]
    return int(dict(zip(header.split(), row.split(), strict=False))["ProducerId"])


def _reassign(cluster: kc.KafkaCluster, tmp_path) -> None:
    plan = tmp_path / "reassign.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "audit", "partition": 0, "replicas": [2]}]})
    )
    cluster.tool(
        "kafka-reassign-partitions.sh",
        "--bootstrap-server",
        cluster.bootstrap,
        "--reassignment-json-file",
        str(plan),
        "--execute",
    )
    kc.wait_until("audit-0 moved to broker 2", lambda: cluster.describe("audit")[0]["replicas"] == [2], 60)


def _seed(cluster: kc.KafkaCluster, tmp_path, ledger: list[int], user: str, mechanism: str, iterations: int):
    """What the static tests hold before the loss: ``orders`` (3 partitions on both brokers, CONFIGS),
    ``audit`` moved from broker 1 to 2, ``ledger`` on ``ledger``'s brokers, a SCRAM user and a client
    quota. The admin client it used (kept while futures made of it are pending)."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    cluster.create_topic("orders", 3, 2, CONFIGS)
    cluster.create_topic("audit", assignment=[[1]])
    cluster.create_topic("ledger", assignment=[ledger])
    _reassign(cluster, tmp_path)
    admin = cluster.admin()
    info = ScramCredentialInfo(getattr(ScramMechanism, mechanism), iterations)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(user, info, b"secret")])[user].result(60)
    cluster.tool(
        "kafka-configs.sh", "--bootstrap-server", cluster.bootstrap, "--alter",
        "--add-config", "producer_byte_rate=1048576", "--entity-type", "clients", "--entity-name", "app-1",
    )  # fmt: skip
    return admin


def _config_line(notes: list[str], node: int) -> dict[str, str]:
    line = next(n for n in notes if n.startswith(f"controller {node}: "))
    return dict(kv.split("=", 1) for kv in line.split(": ", 1)[1].split())


def test_a_lost_controller_is_rebuilt_from_a_brokers_copy(tmp_path):
    cluster = kc.KafkaCluster(tmp_path / "cluster", version=kc.NEWEST, brokers=2)
    try:
        cluster.start()
        _seed(cluster, tmp_path, [1], "alice", "SCRAM_SHA_256", 8192)
        orders = {p: [(f"o{p}-{i}".encode(), b"v" * 100) for i in range(50)] for p in range(3)}
        for p, recs in orders.items():
            cluster.produce("orders", recs, partition=p, enable_idempotence=False)
        audit = [(f"a{i}".encode(), b"x") for i in range(20)]
        cluster.produce("audit", audit, enable_idempotence=False)
        topics_before = _topics(cluster, ["orders", "audit", "ledger"])
        assert CONFIGS.items() <= topics_before["orders"]["configs"].items()
        assert topics_before["audit"]["replicas"] == {0: [2]}
        assert all(t["topic_id"] not in ("", "None") for t in topics_before.values())
        scram_before, quota_before = _scram_users(cluster), _quota(cluster)
        assert "producer_byte_rate=1048576" in quota_before and scram_before["alice"]

        cluster.broker(2).stop()  # its copy of the metadata log stops here
        ledger = [(f"l{i}".encode(), b"y") for i in range(30)]
        earlier_pid = _transaction(cluster, "tx-before", ledger)
        controller = cluster.controller
        # a broker's listener answers ApiVersions without Vote: not a controller
        assert not controller_answers("127.0.0.1", cluster.broker(1).port)
        assert controller_answers("127.0.0.1", controller.controller_port)
        cluster.broker(1).stop()
        dirs = [str(d) for b in cluster.broker_nodes for d in b.log_dirs]
        spare = f"{NEW_ID}={tmp_path / 'spare'}"
        live = kc.logdoctor("rebuild-quorum", *dirs, "--controller", spare)  # the old controller runs
        assert live.returncode == 78, live.stdout + live.stderr
        old_endpoint = f"127.0.0.1:{controller.controller_port}"
        assert f"controller answers at {old_endpoint} (controller 3000" in live.stderr
        # the way on it prints, for a controller that is not this cluster's voter: the plan (nothing written)
        assert f"add --not-a-voter {old_endpoint} if" in live.stderr
        told = kc.logdoctor("rebuild-quorum", *dirs, "--controller", spare, "--not-a-voter", old_endpoint)
        assert told.returncode == 0 and "--not-a-voter says" in told.stdout, told.stdout + told.stderr
        assert not (tmp_path / "spare").exists()
        cluster.stop()

        shutil.rmtree(controller.log_dirs[0])
        shutil.rmtree(cluster.broker(1).log_dirs[0] / "__cluster_metadata-0")
        # broker 2 heard of elections whose records it never fetched: quorum-state 5 epochs past its log
        state_file = cluster.broker(2).log_dirs[0] / "__cluster_metadata-0" / "quorum-state"
        state = json.loads(state_file.read_text())
        heard = state["leaderEpoch"] + 5
        state_file.write_text(re.sub(r'"leaderEpoch":\d+', f'"leaderEpoch":{heard}', state_file.read_text()))
        new_dir = tmp_path / "controller-3001" / "metadata"
        port = kc.free_port()
        args = ["rebuild-quorum", *dirs, "--controller", f"{NEW_ID}@127.0.0.1:{port}={new_dir}"]
        plan = kc.logdoctor_json(*args)
        assert plan["applied"] is False and not new_dir.exists()
        summary = plan["summary"]
        assert summary["chosen"] == str(cluster.broker(2).log_dirs[0])
        assert summary["producer_id_in_use"] >= earlier_pid
        assert summary["new_producer_id_block"] > earlier_pid
        assert summary["quorum_epoch"] == heard
        tried = f"127.0.0.1:{controller.controller_port}, 127.0.0.1:{port}"
        assert f"no Kafka controller answers at {tried} (ApiVersions)" in plan["notes"]
        done = kc.logdoctor(*args, "--apply")
        assert done.returncode == 0, done.stdout + done.stderr
        # another run for the same endpoint, cut short after its first step: resumed below, once the
        # rebuilt controller answers there
        cut = [*args[:-1], f"{NEW_ID}@127.0.0.1:{port}={tmp_path / 'cut'}", "--backup-dir", f"{tmp_path}/cb"]
        killed = subprocess.run(
            [sys.executable, "-m", "logdoctor", *cut, "--apply"],
            capture_output=True,
            env={**os.environ, "LOGDOCTOR_CRASH_AFTER_STEP": "1"},
            timeout=300,
        )
        assert killed.returncode == -signal.SIGKILL, killed
        cut_files = sorted(p.name for p in (tmp_path / "cut").rglob("*"))
        again = kc.logdoctor(*args)
        assert again.returncode == 78 and "meta.properties" in again.stderr, again.stdout + again.stderr

        printed = _config_line(plan["notes"], NEW_ID)
        voters = printed["controller.quorum.voters"]
        new = kc.Node(
            NEW_ID,
            "controller",
            new_dir.parent,
            [new_dir],
            {**controller.config, **printed},
            cluster.libs,
            controller_port=port,
        )
        cluster.nodes = [new if n is controller else n for n in cluster.nodes]
        for b in cluster.broker_nodes:
            b.config["controller.quorum.voters"] = voters
        cluster.start()

        assert _topics(cluster, ["orders", "audit", "ledger"]) == topics_before
        # --resume probes again before it writes: the rebuilt controller answers at the cut run's endpoint
        resumed = kc.logdoctor("rebuild-quorum", "--resume", f"{tmp_path}/cb/journal.jsonl", "--apply")
        assert resumed.returncode == 78, resumed.stdout + resumed.stderr
        assert f"controller answers at 127.0.0.1:{port} (tried when the run was planned)" in resumed.stderr
        assert sorted(p.name for p in (tmp_path / "cut").rglob("*")) == cut_files
        assert _scram_users(cluster) == scram_before and _quota(cluster) == quota_before
        for p, recs in orders.items():
            assert [(k, v) for _o, k, v in cluster.consume("orders", p)] == recs
        assert [(k, v) for _o, k, v in cluster.consume("audit")] == audit
        assert [(k, v) for _o, k, v in cluster.consume("ledger")] == ledger
        cluster.create_topic("after", 2, 2)
        later_pid = _transaction(cluster, "tx-after", [(b"k", b"v")])
        assert later_pid != earlier_pid and later_pid >= summary["new_producer_id_block"]
        described = _quorum_status(cluster)
        assert re.search(rf"CurrentVoters:\s+\[{{\"id\": {NEW_ID}\b", described), described
        cluster.stop()
    finally:
        cluster.kill()


def test_a_lost_dynamic_quorum_is_rebuilt_with_the_new_voters(tmp_path):
    """A dynamic quorum (KIP-853) of three voters: controller 3000 formatted ``--standalone`` (kraft.version
    1, its voter set in the metadata log), 3001 and 3002 formatted ``--no-initial-controllers``, started as
    observers and made voters by ``kafka-metadata-quorum.sh add-controller`` (Kafka's way to grow the
    quorum); brokers 1 and 2 find it by controller.quorum.bootstrap.servers. The three metadata dirs are
    lost; the rebuild from the brokers' copies, as three new controllers (3010-3012), appends a VotersRecord
    of them (ids, the directory ids of their new meta.properties, endpoints): without it none is a voter of
    the copy's set (3000-3002) and no leader is ever elected. Broker 2's copy, behind a transaction's
    producer id block, is the one left: a ProducerIdsRecord is appended beside the VotersRecord. ``scan``
    with the three disks formatted again as new controllers names the rebuild, whose plan runs as printed.
    The new controllers start with the printed configuration and elect a leader, the brokers register, the
    topics are back with their ids and records, a record is produced and read, a new transactional producer
    gets a new producer id; ``describe --status`` names the three new voters with their directory ids (none
    of the lost ones), and its
    ``remove-controller`` (a voter change the new quorum commits) leaves the leader alone, and its
    ``add-controller`` makes the removed one (running on as an observer) a voter again."""
    cluster = kc.KafkaCluster(tmp_path / "cluster", version=kc.NEWEST, brokers=2, dynamic=True, controllers=3)

    def quorum(*command: str, at: tuple[str, ...] = ("--bootstrap-server", cluster.bootstrap)) -> str:
        main = "org.apache.kafka.tools.MetadataQuorumCommand"
        done = kc.run_java(kc.java_tool(cluster.version, main, *at, *command), timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def current_voters() -> str:
        return re.search(r"CurrentVoters:.*", quorum("describe", "--status")).group(0)

    def directory_id(metadata_dir) -> str:
        return (metadata_dir / "meta.properties").read_text().split("directory.id=")[1].split()[0]

    def add_controller(node: kc.Node, leader_port: int) -> None:
        """``add-controller`` of the observer ``node`` (its config): it returns once the VotersRecord naming
        ``node`` is committed (K:raft/.../raft/internals/AddVoterHandler.java)"""
        quorum(
            "--command-config",
            str(node.properties),
            "add-controller",
            at=("--bootstrap-controller", f"127.0.0.1:{leader_port}"),
        )

    try:
        cluster.start()
        controllers = [n for n in cluster.nodes if n.roles == "controller"]
        controller = controllers[0]
        for node in controllers[1:]:
            add_controller(node, controller.controller_port)
        voters = current_voters()
        for node in controllers:
            assert f'{{"id": {node.node_id}, "directoryId": "{directory_id(node.log_dirs[0])}"' in voters
        cluster.create_topic("orders", 2, 2, CONFIGS)
        cluster.create_topic("ledger", assignment=[[1]])
        orders = [(f"o{i}".encode(), b"v" * 10) for i in range(20)]
        cluster.produce("orders", orders, partition=0, enable_idempotence=False)
        topics_before = _topics(cluster, ["orders"])
        cluster.broker(2).stop()  # its copy stops before the ProducerIdsRecord of broker 1's transaction
        earlier_pid = _transaction(cluster, "tx-before", [(b"l", b"y")])
        cluster.stop(kill_controllers=True)  # the controllers' dirs are lost below
        for node in controllers:
            shutil.rmtree(node.log_dirs[0])
        shutil.rmtree(cluster.broker(1).log_dirs[0] / "__cluster_metadata-0")  # broker 2's copy is chosen

        dirs = [str(d) for b in cluster.broker_nodes for d in b.log_dirs]
        # new disks in their places, formatted as new controllers (kafka-storage.sh format
        # --no-initial-controllers): scan names the rebuild of the three, whose plan runs
        cluster.format(controllers, initial=False)
        scan = json.loads(
            kc.logdoctor("scan", "--json", *dirs, *(str(n.log_dirs[0]) for n in controllers)).stdout
        )
        lost = [f for f in scan["findings"] if f["code"] == "CONTROLLER_METADATA_LOST"]
        assert sorted(f["details"]["node_id"] for f in lost) == [3000, 3001, 3002], scan["findings"]
        printed = re.search(r"`(logdoctor rebuild-quorum [^`]*)`", lost[0]["fix"]).group(1)
        for node in controllers:
            assert f"--controller {node.node_id}@127.0.0.1:{node.controller_port}=" in printed, printed
        ran = kc.run_printed(printed)
        assert ran.returncode == 0 and "VotersRecord of controller(s) 3000, 3001, 3002" in ran.stdout, (
            ran.stdout + ran.stderr
        )
        for node in controllers:
            shutil.rmtree(node.log_dirs[0])
        controller.log_dirs[0].mkdir()  # a new disk, not formatted: nothing in it says whose it is
        # a copy that ends before node 3000's RegisterControllerRecord (broker 2's real log cut at that
        # record's batch, as kafka-dump-log.sh finds it; the leader epochs past it dropped, as a broker's
        # truncation does): only the VotersRecord names the endpoint, and the printed fix runs
        early = tmp_path / "early" / "broker-2"
        shutil.copytree(cluster.broker(2).log_dirs[0], early)
        # the inventory's broker row, the census's CONTROLLER_QUORUM_TOO_SMALL input (issue 88 item 4): the
        # voters of the copy's latest VotersRecord as Kafka's own decoder prints them (three, grown from one)
        files = sorted(
            str(f) for f in (early / "__cluster_metadata-0").iterdir() if f.suffix in (".log", ".checkpoint")
        )
        mdir = early / "__cluster_metadata-0"
        segment = mdir / "00000000000000000000.log"
        assert str(segment) in files
        decoded = cluster.tool(
            "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", ",".join(files)
        ).stdout
        # the segment's part of the same run (one JVM): from its "Dumping FILE" line to the next file's
        dump = decoded.split(f"Dumping {segment}\n", 1)[1].split("\nDumping ", 1)[0]
        voters = {
            tuple(sorted(v["voterId"] for v in json.loads(m)["voters"]))
            for m in re.findall(r" KRaftVoters (\{.*\})", decoded)
        }
        (row,) = [r for r in build_inventory([str(early)], Depth.QUICK).rows if r["record"] == "broker"]
        assert voters == {(3000,), (3000, 3001), (3000, 3001, 3002)}, decoded
        assert (tuple(row["quorum_voters"]), row["quorum_kind"]) == ((3000, 3001, 3002), "dynamic")
        assert row["quorum_source"] == "the metadata log's latest VotersRecord", decoded
        batches = re.findall(
            r"^baseOffset: (\d+) .*? position: (\d+) |(REGISTER_CONTROLLER_RECORD)", dump, re.M
        )
        at = next(i for i, b in enumerate(batches) if b[2])  # the batch line is the one before
        cut_offset, cut_position = int(batches[at - 1][0]), int(batches[at - 1][1])
        with open(segment, "r+b") as f:
            f.truncate(cut_position)
        for f in mdir.iterdir():
            if f.suffix in (".index", ".timeindex", ".snapshot", ".checkpoint", ".log") and f != segment:
                f.unlink()
        epochs = (mdir / "leader-epoch-checkpoint").read_text().splitlines()
        kept = [e for e in epochs[2:] if int(e.split()[1]) < cut_offset]
        (mdir / "leader-epoch-checkpoint").write_text("\n".join(["0", str(len(kept)), *kept, ""]))
        scanned = [dirs[0], str(early), str(controller.log_dirs[0])]  # broker 1: no metadata log left
        scan = json.loads(kc.logdoctor("scan", "--json", *scanned).stdout)
        lost = [f for f in scan["findings"] if f["code"] == "CONTROLLER_METADATA_LOST"]
        assert "as the quorum's VotersRecord names it" in lost[0]["fix"], lost
        printed = re.search(r"`(logdoctor rebuild-quorum [^`]*)`", lost[0]["fix"]).group(1)
        assert f"--controller 3000@127.0.0.1:{controller.controller_port}=" in printed, printed
        ran = kc.run_printed(printed)
        assert ran.returncode == 0 and "VotersRecord of controller(s) 3000" in ran.stdout, (
            ran.stdout + ran.stderr
        )
        new_ids = [3010, 3011, 3012]
        new_dirs = {n: tmp_path / f"controller-{n}" / "metadata" for n in new_ids}
        ports = {n: kc.free_port() for n in new_dirs}
        no_endpoint = kc.logdoctor("rebuild-quorum", *dirs, "--controller", f"3010={new_dirs[3010]}")
        assert no_endpoint.returncode == 64 and "names each controller's endpoint" in no_endpoint.stderr
        args = ["rebuild-quorum", *dirs]
        for n, d in new_dirs.items():
            args += ["--controller", f"{n}@127.0.0.1:{ports[n]}={d}"]
        plan = kc.logdoctor_json(*args)
        summary = plan["summary"]
        assert summary["kraft_version"] == 1 and summary["new_producer_id_block"] > earlier_pid, plan
        assert "copy each folder to its controller's machine" in " ".join(plan["notes"])
        bootstrap = "controller.quorum.bootstrap.servers=" + ",".join(
            f"127.0.0.1:{ports[n]}" for n in new_ids
        )
        assert f"every broker: {bootstrap} in place of controller.quorum.voters" in " ".join(plan["notes"])
        done = kc.logdoctor(*args, "--apply")
        assert done.returncode == 0, done.stdout + done.stderr
        directory_ids = {n: directory_id(d) for n, d in new_dirs.items()}
        new = []
        for n, d in new_dirs.items():
            printed = _config_line(plan["notes"], n)
            assert "controller.quorum.voters" not in printed
            config = {**controller.config, **printed}
            new.append(
                kc.Node(n, "controller", d.parent, [d], config, cluster.libs, controller_port=ports[n])
            )
        cluster.nodes = [n for n in cluster.nodes if n.roles != "controller"] + new
        for b in cluster.broker_nodes:
            b.config["controller.quorum.bootstrap.servers"] = bootstrap.split("=", 1)[1]
        cluster.start()

        assert _topics(cluster, ["orders"]) == topics_before
        assert [(k, v) for _o, k, v in cluster.consume("orders", 0)] == orders
        cluster.produce("orders", [(b"after", b"x")], partition=1, enable_idempotence=False)
        assert [(k, v) for _o, k, v in cluster.consume("orders", 1)] == [(b"after", b"x")]
        assert [(k, v) for _o, k, v in cluster.consume("ledger")] == [(b"l", b"y")]
        # the VotersRecord and a ProducerIdsRecord, appended in one segment: no producer id handed out twice
        assert _transaction(cluster, "tx-after", [(b"k", b"v")]) >= summary["new_producer_id_block"]
        status = quorum("describe", "--status")
        voters = re.search(r"CurrentVoters:.*", status).group(0)
        for n, did in directory_ids.items():
            assert f'{{"id": {n}, "directoryId": "{did}"' in voters, voters
        assert sorted(map(int, re.findall(r'"id": (\d+)', voters))) == new_ids, voters  # none of 3000-3002
        leader = int(re.search(r"LeaderId:\s+(\d+)", status).group(1))
        other = next(n for n in new_dirs if n != leader)
        quorum(
            "remove-controller",
            "--controller-id",
            str(other),
            "--controller-directory-id",
            directory_ids[other],
        )

        def removed() -> str | None:
            voters = current_voters()
            return voters if f'"id": {other},' not in voters else None

        voters = kc.wait_until(f"{other} removed", removed, 60)
        assert f'"id": {leader},' in voters  # the voters once it was removed
        # the removed controller runs on as an observer: add-controller (its config) makes it a voter again
        add_controller(next(c for c in new if c.node_id == other), ports[leader])
        assert f'{{"id": {other}, "directoryId": "{directory_ids[other]}"' in current_voters()
        cluster.stop(kill_controllers=True)
    finally:
        cluster.kill()


#: every node of the ACL test: StandardAuthorizer (the controllers keep the ACLs; the nodes'
#: principal on PLAINTEXT, User:ANONYMOUS, a super user); a snapshot a second past new records
#: (metadata.log.max.snapshot.interval.ms, K:metadata/.../image/publisher/SnapshotGenerator.java)
ACL_NODES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "metadata.log.max.snapshot.interval.ms": "1000",
}
#: what a rebuild legitimately changes in a record of the image (the rest must be equal): a broker's
#: registration is its new incarnation's (incarnationId, brokerEpoch); a partition's leader is elected
#: again in the new quorum's epochs (leader, leaderEpoch, partitionEpoch), its replicas and ISR the same
VOLATILE = {
    "REGISTER_BROKER_RECORD": {"incarnationId", "brokerEpoch"},
    "PARTITION_RECORD": {"leader", "leaderEpoch", "partitionEpoch"},
}


def _acls(cluster: kc.KafkaCluster) -> list[str]:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    admin = cluster.admin()
    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    return sorted(str(b) for b in admin.describe_acls(every, request_timeout=30).result(timeout=60))


def _quorum_status(cluster: kc.KafkaCluster) -> str:
    argv = kc.java_tool(
        cluster.version,
        "org.apache.kafka.tools.MetadataQuorumCommand",
        "--bootstrap-server",
        cluster.bootstrap,
        "describe",
        "--status",
    )
    done = kc.run_java(argv, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _in_sync(cluster: kc.KafkaCluster) -> None:
    kc.wait_until(
        "every ISR full",
        lambda: all(
            sorted(p["isr"]) == sorted(p["replicas"])
            for t in ("orders", "audit", "ledger", "__transaction_state")
            for p in cluster.describe(t).values()
        ),
        60,
    )


def _image(cluster: kc.KafkaCluster) -> tuple[dict[str, list[dict]], str]:
    """The metadata image past everything committed now: the first snapshot a controller writes past the
    quorum's high watermark, decoded by Kafka's DumpLogSegments (``--cluster-metadata-decoder``), its
    records by type; and ``kafka-metadata-quorum.sh describe --status``."""
    status = _quorum_status(cluster)
    hw = int(re.search(r"HighWatermark:\s+(\d+)", status).group(1))
    dirs = [n.log_dirs[0] / "__cluster_metadata-0" for n in cluster.nodes if n.roles == "controller"]

    def snapshot():
        done = [f for d in dirs for f in d.glob("*.checkpoint") if int(f.name[:20]) >= hw]
        return min(done, key=lambda f: int(f.name[:20])) if done else None

    path = kc.wait_until(f"a controller's snapshot past offset {hw}", snapshot, 60)
    out = cluster.tool("kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", str(path)).stdout
    image: dict[str, list[dict]] = {}
    for payload in re.findall(r" payload: (\{.*\})$", out, re.M):
        record = json.loads(payload)
        if "data" in record:
            image.setdefault(record["type"], []).append(record)
    assert "TOPIC_RECORD" in image, out[-3000:]
    return image, status


def _comparable(image: dict[str, list[dict]]) -> dict[str, list[str]]:
    """``image`` without what a rebuild changes (VOLATILE; the controllers' registrations, compared apart),
    each record as sorted JSON with its ISR as a set."""
    out: dict[str, list[str]] = {}
    for kind, records in image.items():
        if kind == "REGISTER_CONTROLLER_RECORD":
            continue
        rows = []
        for r in records:
            data = {k: v for k, v in r["data"].items() if k not in VOLATILE.get(kind, ())}
            if "isr" in data:
                data["isr"] = sorted(data["isr"])
            rows.append(json.dumps({**r, "data": data}, sort_keys=True))
        out[kind] = sorted(rows)
    return out


def test_three_lost_static_controllers_on_3_9_are_rebuilt_with_acls_and_the_same_image(tmp_path):
    """Kafka 3.9.1, a static quorum of three controllers (3000-3002, ``controller.quorum.voters``) beside
    brokers 1 and 2, StandardAuthorizer on every node: topics with configs and a reassignment, a SCRAM user,
    a client quota, ACLs (a literal topic ALLOW, a prefixed group ALLOW, a DENY) and a transaction; the
    controllers' snapshot past all of it is the image before. All three metadata dirs are lost; the rebuild
    from both brokers' copies writes three new controllers (3010-3012, new ports); they elect a leader with
    the printed configuration, the brokers register with its ``controller.quorum.voters``. A new controller's
    snapshot, decoded by the same DumpLogSegments, equals the one before but for VOLATILE and the
    controllers' registrations (the old ones stay, the new ones join: ClusterControlManager drops no
    controller's); ACLs, SCRAM and topics answer as before, records produced before are read, a new
    topic is created and a new transactional producer gets a producer id no earlier producer had."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    cluster = kc.KafkaCluster(
        tmp_path / "cluster", version=kc.ZOOKEEPER_ERA, kraft=True, brokers=2, controllers=3
    )
    for node in cluster.nodes:
        node.config.update(ACL_NODES)
    try:
        cluster.start()
        admin = _seed(cluster, tmp_path, [1, 2], "bob", "SCRAM_SHA_512", 4096)
        acls = [
            AclBinding(
                ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:bob", "*",
                AclOperation.READ, AclPermissionType.ALLOW,
            ),
            AclBinding(
                ResourceType.GROUP, "app-", ResourcePatternType.PREFIXED, "User:bob", "*",
                AclOperation.ALL, AclPermissionType.ALLOW,
            ),
            AclBinding(
                ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL, "User:eve", "10.0.0.1",
                AclOperation.WRITE, AclPermissionType.DENY,
            ),
        ]  # fmt: skip
        for future in admin.create_acls(acls, request_timeout=30).values():
            future.result(60)
        acls_before = kc.wait_until(
            "the ACLs at the brokers", lambda: len(_acls(cluster)) == 3 and _acls(cluster), 60
        )
        orders = {p: [(f"o{p}-{i}".encode(), b"v" * 100) for i in range(20)] for p in range(3)}
        for p, recs in orders.items():
            cluster.produce("orders", recs, partition=p, enable_idempotence=False)
        ledger = [(f"l{i}".encode(), b"y") for i in range(10)]
        earlier_pid = _transaction(cluster, "tx-before", ledger)
        topics_before = _topics(cluster, ["orders", "audit", "ledger"])
        scram_before = _scram_users(cluster)
        _in_sync(cluster)  # the snapshot before: every replica in sync, as after
        before, _ = _image(cluster)
        kinds = {"TOPIC_RECORD", "PARTITION_RECORD", "CONFIG_RECORD", "USER_SCRAM_CREDENTIAL_RECORD"}
        kinds |= {"CLIENT_QUOTA_RECORD", "PRODUCER_IDS_RECORD", "REGISTER_BROKER_RECORD"}
        assert kinds <= before.keys() and len(before["ACCESS_CONTROL_ENTRY_RECORD"]) == 3, before
        old = [n for n in cluster.nodes if n.roles == "controller"]
        cluster.stop(kill_controllers=True)  # the controllers' dirs are lost below
        for node in old:
            shutil.rmtree(node.log_dirs[0])

        dirs = [str(d) for b in cluster.broker_nodes for d in b.log_dirs]
        new_ids = [3010, 3011, 3012]
        ports = {n: kc.free_port() for n in new_ids}
        new_dirs = {n: tmp_path / f"controller-{n}" / "metadata" for n in new_ids}
        args = ["rebuild-quorum", *dirs]
        for n in new_ids:
            args += ["--controller", f"{n}@127.0.0.1:{ports[n]}={new_dirs[n]}"]
        plan = kc.logdoctor_json(*args)
        summary = plan["summary"]
        assert summary["kraft_version"] == 0 and summary["new_producer_id_block"] is None, summary
        # the lost controllers' registrations stay (the image after shows them): the plan says so
        assert any(
            n.startswith("controller(s) 3000, 3001, 3002 registered in the copy") for n in plan["notes"]
        )
        done = kc.logdoctor(*args, "--apply")
        assert done.returncode == 0, done.stdout + done.stderr
        new = []
        for n in new_ids:
            printed = _config_line(plan["notes"], n)
            config = {**old[0].config, **printed}
            new.append(
                kc.Node(n, "controller", new_dirs[n].parent, [new_dirs[n]], config, cluster.libs,
                        controller_port=ports[n])
            )  # fmt: skip
        voters = printed["controller.quorum.voters"]
        assert voters == ",".join(f"{n}@127.0.0.1:{ports[n]}" for n in new_ids)
        cluster.nodes = [n for n in cluster.nodes if n.roles != "controller"] + new
        for b in cluster.broker_nodes:
            b.config["controller.quorum.voters"] = voters
        cluster.start()
        _in_sync(cluster)
        after, status = _image(cluster)
        voters_now = re.search(r"CurrentVoters:.*", status).group(0)
        assert sorted(map(int, re.findall(r'"id": (\d+)', voters_now))) == new_ids, status
        assert _comparable(after) == _comparable(before)
        controllers = {r["data"]["controllerId"]: r for r in after["REGISTER_CONTROLLER_RECORD"]}
        assert [
            controllers[r["data"]["controllerId"]] for r in before["REGISTER_CONTROLLER_RECORD"]
        ] == before["REGISTER_CONTROLLER_RECORD"]
        assert sorted(controllers) == [*range(3000, 3003), *new_ids]  # the plan's note
        for n in new_ids:
            assert [e["port"] for e in controllers[n]["data"]["endPoints"]] == [ports[n]]

        assert _acls(cluster) == acls_before
        assert _topics(cluster, ["orders", "audit", "ledger"]) == topics_before
        assert _scram_users(cluster) == scram_before
        for p, recs in orders.items():
            assert [(k, v) for _o, k, v in cluster.consume("orders", p)] == recs
        assert [(k, v) for _o, k, v in cluster.consume("ledger")] == ledger
        cluster.create_topic("after", 2, 2)
        assert _transaction(cluster, "tx-after", [(b"k", b"v")]) > earlier_pid
        cluster.stop(kill_controllers=True)
    finally:
        cluster.kill()

"""A real unclean leader election (Kafka 4.4.0, KRaft, three brokers and a controller of their own): what
``scan`` of the three log dirs says was lost, which replica it takes as the reference, and whether the
restart order it gives produces what it predicts.

The story, once per module (``incident``): topic ``unclean`` (one partition, replicas 1, 2, 3 with broker 1
the preferred leader, ``min.insync.replicas=1``, ``unclean.leader.election.enable=true``) takes 1000
records on all three; brokers 2 and 3 stop (the ISR shrinks to [1]); broker 1 alone acknowledges 500 more
(offsets 1000-1499, acks=all) and is killed; broker 2 starts and, not being in the ISR, is elected only
because the topic allows an unclean election (the controller elects a broker when it unfences it:
K:metadata/.../controller/ReplicationControlManager.java generateLeaderAndIsrUpdates with
PartitionChangeBuilder Election.UNCLEAN, ``electAnyLeader``; the controller logs "using an unclean
election"); broker 2 acknowledges 300 records of its own (offsets 1000-1299 again, in a new leader epoch)
and stops. Then every log dir is offline, as an operator finds them.

What the broker's own behaviour then checks:

- ``REPLICA_DIVERGED`` names exactly broker 1's 500 records (offsets 1000-1499) against broker 2's copy
  (the newest leader epoch), and its printed salvage export, run as printed, holds exactly those records;
- no finding names the diverged copy as the one to sync from: ``REPLICA_LAG`` measures broker 3 against
  broker 2 (300 offsets), not against broker 1's longer log, and its printed ``sync-replica`` plan runs;
- the restart order the finding gives (broker 2 first, until it leads, then the others) produces what it
  predicts: broker 2 leads, broker 1 truncates to the offset the finding named
  (K:core/.../server/AbstractFetcherThread.scala truncation on OffsetsForLeaderEpoch / diverging epoch)
  and every record broker 2 acknowledged is served; the printed ``kafka-configs.sh --bootstrap-controller``
  that turns unclean election off is accepted by the controller;
- the finding's warning about the other orders (unclean election still on, the first broker to register
  leads) holds for each unsafe order, run at once on copies of every node's folder (the controller's
  metadata too) taken right after the incident: broker 1 first, broker 2 truncates to the offset the
  warning names and its 300 records are gone; broker 3 first, both brokers' records are gone.
"""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_cluster import KafkaCluster, Node, free_port, logdoctor_json, run_printed, wait_until

pytestmark = pytest.mark.kafka

TOPIC = "unclean"
BEFORE, ALONE, NEW = 1000, 500, 300  # on all three; on broker 1 alone; on broker 2 after its election


@dataclass
class Incident:
    cluster: KafkaCluster
    dirs: dict[int, str]  # broker id -> its log dir
    acked: dict[str, list[int]]  # "before", "alone" (broker 1), "new" (broker 2): acknowledged offsets
    records: dict[str, list[tuple[bytes, bytes]]]
    scan: dict
    copies: dict[int, Path] = field(default_factory=dict)  # first broker of an unsafe order -> its copy


def _records(tag: str, count: int) -> list[tuple[bytes, bytes]]:
    return [(f"{tag}-key-{i}".encode(), f"{tag}-value-{i}".encode()) for i in range(count)]


def _describe_from(cluster: KafkaCluster, broker: int) -> dict:
    return cluster.describe(TOPIC, bootstrap=cluster.bootstrap_of([cluster.broker(broker)]))[0]


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory):
    cluster = KafkaCluster(tmp_path_factory.mktemp("unclean-election"), brokers=3)
    cluster.start()
    try:
        incident = _make_incident(cluster)
        incident.copies = _copy_stopped(
            cluster,
            {first: tmp_path_factory.mktemp(f"unclean-first-{first}") / "cluster" for first in (1, 3)},
        )
        yield incident
    finally:
        cluster.kill()


def _make_incident(cluster: KafkaCluster) -> Incident:
    one, two, three = (cluster.broker(i) for i in (1, 2, 3))
    # kafka-topics.sh: the harness's create_topic(assignment=...) is refused by confluent-kafka 2.16
    # ("a default partition count and a replica assignment are mutually exclusive")
    cluster.tool(
        "kafka-topics.sh", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC,
        "--replica-assignment", "1:2:3", "--config", "min.insync.replicas=1",
        "--config", "unclean.leader.election.enable=true",
    )  # fmt: skip
    wait_until("broker 1 to lead with the ISR [1, 2, 3]", lambda: _in_sync(cluster, 1, [1, 2, 3]), 90)
    records = {
        "before": _records("before", BEFORE),
        "alone": _records("alone", ALONE),
        "new": _records("new", NEW),
    }
    acked = {"before": cluster.produce(TOPIC, records["before"])}
    wait_until("all three in sync", lambda: _in_sync(cluster, 1, [1, 2, 3]), 90)
    two.stop()
    three.stop()
    wait_until("the ISR to shrink to [1]", lambda: _describe_from(cluster, 1)["isr"] == [1], 90)
    acked["alone"] = cluster.produce(TOPIC, records["alone"], bootstrap_servers=cluster.bootstrap_of([one]))
    one.kill()
    two.start()
    wait_until("broker 2 to lead", lambda: _describe_from(cluster, 2)["leader"] == 2, 120)
    controller = cluster.controller
    assert controller is not None
    elected = re.search(r"Setting new leader for topicId \S+, partition 0 to 2 using an unclean election",
                        controller.log(since_start=False))  # fmt: skip
    assert elected, "broker 2 was not elected uncleanly (the controller logged no unclean election)"
    acked["new"] = cluster.produce(TOPIC, records["new"], bootstrap_servers=cluster.bootstrap_of([two]))
    two.stop()
    dirs = {i: str(cluster.broker(i).log_dirs[0]) for i in (1, 2, 3)}
    scan = logdoctor_json("scan", dirs[1], dirs[2], dirs[3])
    return Incident(cluster, dirs, acked, records, scan)


def _copy_stopped(cluster: KafkaCluster, to: dict[int, Path]) -> dict[int, Path]:
    """Copies of every node's folder as the incident left them (every broker down): the controller, whose
    metadata holds the partition's leader and ISR, is stopped for the copy and started again (not waited
    for: the next broker to start waits for it)."""
    controller = cluster.controller
    assert controller is not None and not any(n.running for n in cluster.broker_nodes)
    controller.stop()
    for root in to.values():
        shutil.copytree(cluster.root, root, symlinks=True)
    controller.start(wait=False)
    return to


def _cluster_on(cluster: KafkaCluster, root: Path) -> KafkaCluster:
    """``cluster`` as it runs from its copy in ``root``: every node's folder, log dirs and configs moved
    there, on ports of its own (so that it runs beside the original and the other copies)."""
    copy = KafkaCluster.__new__(KafkaCluster)
    copy.__dict__.update(cluster.__dict__)
    copy.root = root
    ports = {p: free_port() for n in cluster.nodes for p in (n.port, n.controller_port) if p}
    copy.nodes = []
    for node in cluster.nodes:
        moved = Node(**{**node.__dict__, "proc": None, "_log_mark": 0})
        moved.folder = root / node.folder.relative_to(cluster.root)
        moved.log_dirs = [root / d.relative_to(cluster.root) for d in node.log_dirs]
        moved.port, moved.controller_port = ports.get(node.port, 0), ports.get(node.controller_port, 0)
        moved.config = {
            k: re.sub(r"127\.0\.0\.1:(\d+)\b", lambda m: f"127.0.0.1:{ports[int(m[1])]}", v)
            for k, v in ((k, v.replace(str(cluster.root), str(root))) for k, v in node.config.items())
        }
        copy.nodes.append(moved)
    return copy


@dataclass
class Restart:
    """What the brokers did after an unsafe restart order, read from them."""

    leader: int
    unclean: bool  # the controller logged the first broker's election as unclean
    truncated: dict[int, list[int]]  # broker -> the offsets its log says it truncated to since its start
    served: list[tuple[int, bytes | None, bytes | None]]  # what a read_committed consumer reads back


def _restart_first(incident: Incident, first: int) -> Restart:
    """On the copy for ``first``: the controller, broker ``first`` alone until it leads, then the others
    until the ISR is whole; what the brokers then say and serve."""
    cluster = _cluster_on(incident.cluster, incident.copies[first])
    controller = cluster.controller
    assert controller is not None
    try:
        controller.start(wait=False)  # the broker's start waits for it
        leader = cluster.broker(first)
        leader.start()
        wait_until(f"broker {first} to lead", lambda: _describe_from(cluster, first)["leader"] == first, 120)
        others = [n for n in cluster.broker_nodes if n is not leader]
        for node in others:
            node.start(wait=False)
        for node in others:
            node.wait_started()
        wait_until(
            f"the ISR [1, 2, 3] under broker {first}", lambda: _in_sync(cluster, first, [1, 2, 3]), 120
        )
        unclean = re.search(
            rf"Setting new leader for topicId \S+, partition 0 to {first} using an unclean election",
            controller.log(),
        )
        truncated = {
            n.node_id: [
                int(m)
                for m in re.findall(
                    rf"Truncating partition {TOPIC}-0 with TruncationState\(offset=(\d+)", n.log()
                )
            ]
            for n in others
        }
        served = cluster.consume(TOPIC, 0, bootstrap=cluster.bootstrap_of([leader]))
        return Restart(_describe_from(cluster, first)["leader"], unclean is not None, truncated, served)
    finally:
        cluster.kill()


@pytest.fixture(scope="module")
def unsafe_restarts(incident: Incident) -> dict[int, Restart]:
    """Both unsafe orders at once, each on its own copy: broker 1 (the diverged replica) first, broker 3
    (the stale one) first."""
    with ThreadPoolExecutor(len(incident.copies)) as pool:
        futures = {first: pool.submit(_restart_first, incident, first) for first in incident.copies}
        return {first: f.result() for first, f in futures.items()}


def _in_sync(cluster: KafkaCluster, leader: int, isr: list[int]) -> bool:
    d = _describe_from(cluster, leader)
    return d["leader"] == leader and sorted(d["isr"]) == isr


def _findings(incident: Incident, code: str) -> list[dict]:
    return [f for f in incident.scan["findings"] if f["code"] == code and f"/{TOPIC}-0" in f["path"]]


def _printed(fix: str, start: str) -> str:
    """The backticked command of a finding's fix text that starts with ``start``."""
    spans = [s for i, s in enumerate(fix.split("`")) if i % 2 and s.startswith(start)]
    assert len(spans) == 1, f"one `{start} ...` in the fix, got {spans}: {fix}"
    return spans[0]


def test_the_broker_acknowledged_what_the_story_needs(incident: Incident) -> None:
    """The incident as Kafka acknowledged it: 1000 on all three, broker 1 alone 1000-1499, broker 2 after
    its unclean election 1000-1299 (the same offsets again: broker 2 never had broker 1's 500)."""
    assert incident.acked["before"] == list(range(BEFORE))
    assert incident.acked["alone"] == list(range(BEFORE, BEFORE + ALONE))
    assert incident.acked["new"] == list(range(BEFORE, BEFORE + NEW))


def test_scan_names_exactly_what_the_diverged_replica_loses(incident: Incident) -> None:
    """One REPLICA_DIVERGED, broker 1's copy against broker 2's (which leads with the newest leader epoch):
    it truncates to 1000 and loses the 500 records only it acknowledged; broker 3 only lags and broker 2
    leads, so neither diverged. (The truncation itself is checked against the broker in
    test_restart_in_the_printed_safe_order.)"""
    diverged = _findings(incident, "REPLICA_DIVERGED")
    assert [f["path"] for f in diverged] == [f"{incident.dirs[1]}/{TOPIC}-0"]
    d = diverged[0]["details"]
    assert d["leader"] == incident.dirs[2]
    assert d["truncate_to"] == BEFORE
    assert d["lost_offsets"] == [incident.acked["alone"][0], incident.acked["alone"][-1]]
    assert d["records_lost"] == ALONE
    assert d["leader_log_end_offset"] == BEFORE + NEW


def test_the_printed_salvage_export_holds_exactly_the_lost_records(
    incident: Incident, tmp_path: Path
) -> None:
    """REPLICA_DIVERGED's export, run as printed: the Parquet holds broker 1's 500 acknowledged records,
    offset for offset, key and value, and nothing else, under the directory it is run from."""
    import pyarrow.parquet as pq

    f = _findings(incident, "REPLICA_DIVERGED")[0]
    command = _printed(f["fix"], "logdoctor export ")
    done = run_printed(command, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / command.split(" --out ")[1].split()[0]
    table = pq.read_table(out).to_pylist()
    got = sorted((r["offset"], r["key"], r["value"]) for r in table)
    want = [(o, k, v) for o, (k, v) in zip(incident.acked["alone"], incident.records["alone"], strict=True)]
    assert got == want


def test_no_finding_syncs_from_the_diverged_replica(incident: Incident) -> None:
    """The reference replica of every finding is broker 2's (the newest leader epoch), never broker 1's
    longer, diverged log: REPLICA_LAG for broker 3 only, 300 offsets behind broker 2, none for broker 2;
    every printed sync-replica copies from broker 2's dir, and the one for broker 3 plans as printed (a
    dry run: it would refuse a copy that loses records)."""
    lag = _findings(incident, "REPLICA_LAG")
    assert [f["path"] for f in lag] == [f"{incident.dirs[3]}/{TOPIC}-0"]
    assert lag[0]["details"]["lag_offsets"] == NEW
    for f in incident.scan["findings"]:
        for argv in f.get("fix_argv") or ():
            if "--leader" in argv:
                assert argv[argv.index("--leader") + 1] == incident.dirs[2], f
    done = run_printed(_printed(lag[0]["fix"], "logdoctor sync-replica "))
    assert done.returncode == 0, done.stdout + done.stderr


def test_restart_in_the_printed_safe_order(incident: Incident) -> None:
    """The finding's restart order (unclean election still on): the broker it names first, until the
    printed kafka-topics.sh shows it leading, then the others. Kafka then does what the finding predicted:
    broker 2 leads, broker 1 truncates to the finding's offset (its log says so) and fetches broker 2's
    records, every record broker 2 acknowledged is served, and the ISR is whole again. Then the printed
    kafka-configs.sh turns unclean election off through the controller."""
    cluster = incident.cluster
    f = _findings(incident, "REPLICA_DIVERGED")[0]
    fix = f["fix"]
    assert "unclean.leader.election.enable is true" in fix
    first = re.search(r"start broker (\d+) \(the broker of ([^)]+)\) first", fix)
    assert first and first.group(2) == incident.dirs[2], fix
    leader = cluster.broker(int(first.group(1)))
    leader.start()
    describe = _printed(fix, "kafka-topics.sh ").replace("HOST:PORT", f"127.0.0.1:{leader.port}")

    def leads() -> bool:
        done = run_printed(describe)
        return done.returncode == 0 and re.search(r"Partition: 0\s+Leader: 2\b", done.stdout) is not None

    wait_until("the printed kafka-topics.sh to show broker 2 leading", leads, 120, every=1.0)
    one, three = cluster.broker(1), cluster.broker(3)
    one.start()
    three.start()
    truncated = one.wait_for_log(rf"Truncating partition {TOPIC}-0 with TruncationState\(offset=(\d+)", 120)
    assert int(truncated.group(1)) == f["details"]["truncate_to"] == BEFORE
    wait_until("the ISR [1, 2, 3] under broker 2", lambda: _in_sync(cluster, 2, [1, 2, 3]), 120)
    served = cluster.consume(TOPIC, 0, bootstrap=cluster.bootstrap_of([leader]))
    want_new = list(zip(incident.acked["new"], incident.records["new"], strict=True))
    assert [(o, k, v) for o, k, v in served] == [
        *((o, k, v) for o, (k, v) in zip(incident.acked["before"], incident.records["before"], strict=True)),
        *((o, k, v) for o, (k, v) in want_new),
    ]
    controller = cluster.controller
    assert controller is not None
    off = _printed(fix, "kafka-configs.sh ").replace("HOST:PORT", f"127.0.0.1:{controller.controller_port}")
    done = run_printed(off)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = cluster.tool(
        "kafka-configs.sh", "--bootstrap-server", cluster.bootstrap_of([leader]), "--describe",
        "--entity-type", "topics", "--entity-name", TOPIC,
    ).stdout  # fmt: skip
    assert "unclean.leader.election.enable=false" in shown


def _warning(incident: Incident) -> tuple[dict, dict[str, int]]:
    """REPLICA_DIVERGED's details and what its restart-order warning says electing this replica (broker 1)
    costs the reference replica (broker 2's): it truncates to ``to`` and loses offsets ``first`` to
    ``last``; and that electing another stale replica costs both theirs."""
    f = _findings(incident, "REPLICA_DIVERGED")[0]
    said = re.search(
        r"if this replica is elected, the replica in (\S+) truncates to (\d+) and loses offsets (\d+) to "
        r"(\d+) \((\d+) offsets, written while it led\), "
        r"and if another stale replica is elected both lose theirs",
        f["fix"],
    )
    assert said, f["fix"]
    assert said.group(1) == incident.dirs[2], f["fix"]
    to, first, last, count = map(int, said.groups()[1:])
    assert count == last - first + 1
    return f["details"], {"to": to, "first": first, "last": last}


def _acked(incident: Incident, *tags: str, lost: range = range(0)) -> list[tuple[int, bytes, bytes]]:
    """The records acknowledged as ``tags``, offset, key and value, but for the offsets of ``lost``."""
    return [
        (o, k, v)
        for tag in tags
        for o, (k, v) in zip(incident.acked[tag], incident.records[tag], strict=True)
        if o not in lost
    ]


def test_restart_with_the_diverged_replica_first(
    incident: Incident, unsafe_restarts: dict[int, Restart]
) -> None:
    """Broker 1 (the diverged replica) first, alone, until it leads, then the others, unclean election still
    on: as the warning says, the controller elects it uncleanly, broker 2 truncates to the offset the warning
    names and the records broker 2 acknowledged there (offsets 1000-1299) are gone; broker 1's 500 are
    served instead."""
    details, lose = _warning(incident)
    got = unsafe_restarts[1]
    assert got.leader == 1 and got.unclean
    assert min(got.truncated[2], default=None) == lose["to"] == BEFORE
    lost = range(lose["first"], lose["last"] + 1)
    assert lost == range(BEFORE, BEFORE + NEW)
    assert got.served == _acked(incident, "before", "new", lost=lost) + _acked(incident, "alone")
    assert [o for o, _k, _v in got.served][-1] == details["lost_offsets"][1]


def test_restart_with_a_stale_replica_first(incident: Incident, unsafe_restarts: dict[int, Restart]) -> None:
    """Broker 3 (stale: stopped before broker 1 took its 500 records) first, alone, until it leads, then the
    others: as the warning says, both lose theirs: broker 1 truncates to the finding's offset (its 500,
    offsets 1000-1499, gone) and broker 2 to the warning's (its 300, offsets 1000-1299, gone); only the 1000
    records all three held are served."""
    details, lose = _warning(incident)
    got = unsafe_restarts[3]
    assert got.leader == 3 and got.unclean
    assert min(got.truncated[1], default=None) == details["truncate_to"] == BEFORE
    assert min(got.truncated[2], default=None) == lose["to"] == BEFORE
    lost_a = range(details["lost_offsets"][0], details["lost_offsets"][1] + 1)
    lost_b = range(lose["first"], lose["last"] + 1)
    assert got.served == _acked(incident, "before", "alone", lost=lost_a) + _acked(
        incident, "new", lost=lost_b
    )
    assert got.served == _acked(incident, "before")

"""Field report 001 with real brokers: a follower pushed out of the ISR and brought back offline with the
fix ``logdoctor scan`` prints for it (``logdoctor sync-replica``), judged by the brokers themselves.

The report's procedure (3 brokers, the follower stopped while the producer goes on, its folder replaced
by the leader's and its three checkpoint entries set to the leader's, the follower back in the ISR, then
leading alone and serving every record) is played on a cluster of three brokers of Kafka 4.4.0 (KRaft,
with a controller of its own) and of 3.9.1 (ZooKeeper mode, the report's era):

1. ``test_isr``, one partition on brokers [1, 2, 3] (1 the preferred leader), replication factor 3,
   ``min.insync.replicas=2``, ``segment.bytes`` 1 MiB (the least a 4.x topic takes): 40 records acked
   (acks=all) by all three, broker 3 stopped cleanly (controlled shutdown takes it out of the ISR at
   once), 360 more records of 10 KB (3.4 MiB, four segments) acked by [1, 2], then broker 2 and broker 1
   stopped cleanly.
2. ``logdoctor scan`` of the three log dirs reports REPLICA_LAG for broker 3's copy (ends at 40, 360
   behind, below the high watermark 400) with a ``logdoctor sync-replica`` fix; the fix is run as printed
   (a dry run that writes nothing), then with ``--apply`` as the dry run says. On 4.4 the dry run reads
   the cluster metadata a real controller wrote: KIP-966's eligible leader replicas (on by default for a
   cluster formatted by 4.1 or later) leave the partition with leader -1, ISR [] and ELR [1, 2]: the ISR
   fell below min.insync.replicas when broker 2 stopped, and a replica that leaves the ISR below
   min.insync.replicas goes to the ELR (K:metadata/.../controller/PartitionChangeBuilder.java,
   maybePopulateTargetElr). Broker 3 left while the ISR still had two members, so it is in neither: the
   controller elects it only from the ISR (isValidNewLeader: ISR, else the ELR when the ISR is empty), so
   it cannot lead until it is back in the ISR, whatever its disk holds (unclean election stays off).
3. All three brokers start again. The controller elects an ELR member (its copy has every committed
   record: the high watermark does not advance while the ISR is below min.insync.replicas); broker 3
   loads the copy logdoctor wrote as its own log: its LogManager reports log-end-offset 400 before any
   fetch, its partition starts with the high watermark 400 (the replication-offset-checkpoint entry), it
   is never truncated (no "Truncating" line for the partition) and fetches nothing (no segment rolled;
   every segment file logdoctor wrote keeps its inode), and the leader puts it back in the ISR
   (K:core/.../cluster/Partition.scala, maybeExpandIsr: a follower that has reached the high watermark).
   Without the sync the same broker loads log-end-offset 40 with the high watermark 36 and rolls
   segments 100, 202 and 304 as it fetches them, and rejoins the ISR as well: the test fails then on the
   load, the high watermark and the rolled segments (checked by running it without ``--apply``).
4. Brokers 1 and 2 stop cleanly: broker 3, the one ISR member left, leads, and a consumer talking to it
   alone reads every acknowledged record (offsets, keys, values).
"""

from __future__ import annotations

import filecmp
import os
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import kafka_cluster as kc

pytestmark = pytest.mark.kafka

TOPIC = "test_isr"
NAME = f"{TOPIC}-0"
LEADER, OTHER, FOLLOWER = 1, 2, 3
FIRST, LATER = 40, 360  # records acked before and after the follower stops
VALUE = 10_000  # bytes a value: LATER records fill four 1 MiB segments
SYNCED = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint")


def _records(tag: str, n: int, seed: int) -> list[tuple[bytes, bytes]]:
    rnd = random.Random(seed)
    return [(f"{tag}-{i}".encode(), rnd.randbytes(VALUE)) for i in range(n)]


def _create_topic(cluster: kc.KafkaCluster, config: dict[str, object]) -> None:
    """TOPIC with one partition on brokers [LEADER, OTHER, FOLLOWER] (the first is the preferred leader).
    (KafkaCluster.create_topic(assignment=...) makes its NewTopic without a partition count, which
    confluent-kafka 2.16 refuses beside an assignment: "Specifying a default partition count and a replica
    assignment are mutually exclusive".)"""
    from confluent_kafka.admin import NewTopic

    admin = cluster.admin()  # kept while its future is pending
    topic = NewTopic(TOPIC, 1, replica_assignment=[[LEADER, OTHER, FOLLOWER]], config=kc._strs(config))
    admin.create_topics([topic], operation_timeout=60)[TOPIC].result(timeout=90)
    kc.wait_until("the topic's leader", lambda: _state(cluster)["leader"] == LEADER, 60)


def _state(cluster: kc.KafkaCluster, bootstrap: str | None = None) -> dict[str, object]:
    return cluster.describe(TOPIC, bootstrap)[0]


def _logdoctor(*args: str) -> subprocess.CompletedProcess:
    """``logdoctor ARGS`` as kafka_cluster.logdoctor runs it, with ``os.environ`` as the environment: pytest's
    readline exports COLUMNS=80 behind ``os.environ``'s back (tests/conftest.py), and logdoctor then wraps
    its fix over lines where an operator's pipe gets whole lines."""
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", *args],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ),
    )


def _run(command: str, version: str) -> str:
    done = kc.run_printed(command, version=version)
    assert done.returncode == 0, f"{command}\nexited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _checkpoint(log_dir: Path, name: str) -> int | None:
    """The partition's entry in one checkpoint file of ``log_dir`` (None: no entry)."""
    for line in (log_dir / name).read_text().splitlines()[2:]:
        topic, partition, offset = line.rsplit(" ", 2)
        if (topic, partition) == (TOPIC, "0"):
            return int(offset)
    return None


def _same_tree(a: Path, b: Path) -> list[str]:
    """The files that differ between two partition folders (contents compared byte by byte)."""
    cmp = filecmp.dircmp(a, b)
    diff = [*cmp.left_only, *cmp.right_only, *cmp.common_funny]
    _match, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return sorted(diff + mismatch + errors)


def _inodes(folder: Path) -> dict[str, int]:
    """The inode of each segment's files (the broker rewrites leader-epoch-checkpoint at startup)."""
    return {p.name: p.stat().st_ino for p in folder.iterdir() if p.suffix in (".log", ".index", ".timeindex")}


def _partition_lines(log: str, pattern: str) -> list[str]:
    """The lines of a broker log that match ``pattern`` and name the partition (its folder or its name)."""
    regex = re.compile(pattern)
    return [line for line in log.splitlines() if regex.search(line) and re.search(rf"\b{NAME}\b", line)]


@pytest.mark.parametrize("version", [kc.NEWEST, kc.ZOOKEEPER_ERA])
def test_synced_follower_rejoins_the_isr_and_leads(version, tmp_path):
    """The whole of field report 001 on one cluster of ``version`` (the module's docstring, steps 1-4)."""
    cluster = kc.KafkaCluster(
        tmp_path / "cluster",
        version=version,
        brokers=3,
        broker_config={"replica.lag.time.max.ms": 10000},
    )
    cluster.start()
    try:
        _field_report_001(cluster, version)
    finally:
        cluster.kill()  # what is left of it: its data goes with tmp_path


def _field_report_001(cluster: kc.KafkaCluster, version: str) -> None:
    """Steps 1-4 on a started ``cluster``."""
    # 1. the follower out of the ISR while acknowledged records go on
    _create_topic(cluster, {"segment.bytes": 1048576, "min.insync.replicas": 2})
    first, later = _records("a", FIRST, 1), _records("b", LATER, 2)
    acked = cluster.produce(TOPIC, first, batch_size=65536)
    cluster.broker(FOLLOWER).stop()
    kc.wait_until("the follower out of the ISR", lambda: _state(cluster)["isr"] == [LEADER, OTHER], 60)
    acked += cluster.produce(TOPIC, later, batch_size=65536)
    assert acked == list(range(FIRST + LATER))
    assert _state(cluster)["leader"] == LEADER
    cluster.broker(OTHER).stop()
    cluster.broker(LEADER).stop()

    # 2. the scan's finding and its fix, run as printed
    dirs = {b: cluster.broker(b).log_dirs[0] for b in (LEADER, OTHER, FOLLOWER)}
    lagging = dirs[FOLLOWER] / NAME
    scan = _logdoctor("scan", *(str(d) for d in dirs.values())).stdout
    assert re.findall(r"^(\w+) +(\w+) (\S+)$", scan, re.M) == [("ERROR", "REPLICA_LAG", str(lagging))], scan
    behind = re.findall(
        rf"{NAME} on broker-{FOLLOWER} ends at offset {FIRST}, {LATER} offsets and 3.4 MiB behind "
        r"broker-(\d) \(log end offset 400\); below the partition's high watermark 400, so it is out "
        "of the ISR",
        scan,
    )
    # brokers 1 and 2 hold the same log (same offsets, same leader epochs): either is the copy to take
    assert len(behind) == 1 and int(behind[0]) in (LEADER, OTHER), scan
    source = int(behind[0])
    assert "1 error(s), 0 warning(s)" in scan
    printed = re.findall(r"`(logdoctor sync-replica [^`]*)` prints the plan, add --apply to make it", scan)
    assert len(printed) == 1, scan
    command = printed[0]
    assert shlex.split(command) == [
        "logdoctor", "sync-replica", NAME, "--leader", str(dirs[source]), "--follower", str(dirs[FOLLOWER])
    ]  # fmt: skip
    before = _inodes(lagging)
    assert _same_tree(dirs[source] / NAME, lagging), "the follower's copy already is the leader's"

    dry = _run(command, version)
    assert "Dry run: nothing was written. Add --apply to make these changes." in dry
    assert _inodes(lagging) == before and not (dirs[FOLLOWER] / f"{NAME}.logdoctor-incoming").exists()
    if cluster.kraft:  # the metadata a 4.4 controller wrote when every broker had stopped (KIP-966)
        elr = re.search(
            r"names broker -1 as the leader of test_isr-0 \(leader epoch \d+, ISR \[\], ELR (\[.*?\])\)",
            dry,
        )
        assert elr and sorted(map(int, elr.group(1)[1:-1].split(","))) == [LEADER, OTHER], dry
        assert f"broker {source} is in the ELR" in dry and "NOT in the ISR" not in dry
    applied = _run(command + " --apply", version)
    assert "verified: every file at the destination matches the source" in applied, applied

    # what the broker will find: the leader's copy, byte for byte, and the leader's checkpoint entries
    assert _same_tree(dirs[source] / NAME, lagging) == []
    for name in SYNCED:
        assert _checkpoint(dirs[FOLLOWER], name) == _checkpoint(dirs[source], name), name
    assert _checkpoint(dirs[FOLLOWER], "replication-offset-checkpoint") == FIRST + LATER
    written = _inodes(lagging)

    # 3. the brokers' verdict: the follower's log taken as it is, the follower back in the ISR
    for node in cluster.broker_nodes:
        node.start(wait=False)
    for node in cluster.broker_nodes:
        node.wait_started()
    cluster.wait_brokers_registered(cluster.broker_nodes)
    kc.wait_until(
        "the synced follower back in the ISR",
        lambda: sorted(_state(cluster)["isr"]) == [LEADER, OTHER, FOLLOWER],
        40,  # replica.lag.time.max.ms and a margin for a loaded machine: a follower at the high watermark
    )  # joins at its first fetch
    assert _state(cluster)["leader"] in (LEADER, OTHER)  # 4.4: from the ELR; 3.9: the last ISR member
    log = cluster.broker(FOLLOWER).log()
    loaded = _partition_lines(log, r"Completed load of Log\(")
    assert len(loaded) == 1 and "log-end-offset 400 " in loaded[0], loaded or log[-3000:]
    assert _partition_lines(log, r"initial high watermark 400$|initial high watermark 400 "), log[-3000:]
    assert _partition_lines(log, r"Truncat") == []
    assert _partition_lines(log, r"Rolled new log segment") == []
    assert {k: v for k, v in _inodes(lagging).items() if k in written} == written, (
        "the segments were written again"
    )

    # 4. the synced follower leads alone and serves every acknowledged record
    for broker in (LEADER, OTHER):
        cluster.broker(broker).stop()
    alone = cluster.bootstrap_of([cluster.broker(FOLLOWER)])
    kc.wait_until(
        "the synced follower leading",
        lambda: (_state(cluster, alone)["leader"], _state(cluster, alone)["isr"]) == (FOLLOWER, [FOLLOWER]),
        60,
    )
    got = cluster.consume(TOPIC, bootstrap=alone)
    assert [o for o, _, _ in got] == acked
    assert [(k, v) for _, k, v in got] == first + later

"""``--partitioner default`` (issue 72 item 2) with real brokers: each record's key re-hashed as the Java
producer's default partitioner does, exactly once and resumable.

A source cluster (Kafka 4.4.0, one KRaft node) is written by real clients and stopped: its log dir is the
dead broker's, what a ``read_committed`` consumer read of it the oracle of the records. The oracle of the
partitions is the Java producer itself: Kafka 4.4.0's ``ConsoleProducer`` (``parse.key=true``, the default
partitioner: no ``partitioner.class``) writes the same keys into topics of the target's partition counts,
and where each key landed is read back. librdkafka's ``murmur2_random``, documented as the Java producer's,
is checked against it once.

1. ``test_rehash_as_the_java_producer``: replayed into a topic of 5 partitions and one of 2 (fewer than the
   source's 3: no conflict), every keyed record is in the partition the Java producer chose for its key, a
   null-key record in its source partition modulo the count; within a target partition the records of each
   source partition keep their order (so each key's order holds), headers and CreateTime timestamps as
   they were; the run's offset map equals the one read back; a second replay is a no-op.
2. ``test_conflicts``: a non-empty target partition is ``TARGET_NOT_EMPTY``; a target topic whose
   partition count changed after a replay is ``PARTITION_COUNT_CHANGED`` for each source partition; apply
   refuses both; ``--groups`` with ``--partitioner default`` is refused (exit 64) with the reason.
3. ``test_open_transaction_on_the_target``: another producer's transaction open on the target topic is
   named by the plan, and ``--apply`` refuses it (78) once the replay's producers are fenced.
4. ``test_kill_and_resume``: a replay in a process of its own is killed with SIGKILL at random moments,
   then once between a transaction's offsets and its commit, and run again until it ends: a
   ``read_committed`` consumer of the target reads every record exactly once, in its key's partition, in
   order per source partition.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import kafka_cluster as kc

pytestmark = pytest.mark.kafka

BASE_TS = int(time.time() * 1000) - 3_600_000  # within the target's retention
SOURCE_PARTITIONS = 3
PER_PARTITION = 150
BIG = 1200  # records per partition of the topic replayed under kills


def _key(part: int, i: int) -> bytes | None:
    if i % 13 == 0:
        return None
    if i == 5:
        return b""  # an empty key is a key: hashed (only null is not)
    return f"user-{(i * 7 + part) % 41}".encode()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    """The dead broker: (its log dir, {(topic, partition): the read_committed oracle})."""
    cluster = kc.KafkaCluster(tmp_path_factory.mktemp("rehash-source"))
    cluster.start()
    try:
        cluster.create_topic("keyed", SOURCE_PARTITIONS)
        cluster.create_topic("big", 2)
        p = cluster.producer()
        for part in range(SOURCE_PARTITIONS):
            for i in range(PER_PARTITION):
                headers = [("src", f"{part}-{i}".encode()), ("dup", b"1"), ("dup", b"2")] if i % 4 else None
                p.produce("keyed", value=f"v-{part}-{i}".encode(), key=_key(part, i), partition=part,
                          headers=headers, timestamp=BASE_TS + part * 100_000 + i)  # fmt: skip
        for part in range(2):
            for i in range(BIG):
                value = f"b-{part}-{i:05d}".encode() * 4
                p.produce("big", value=value, key=f"k{i % 97}".encode(), partition=part,
                          headers=[("i", str(i).encode())], timestamp=BASE_TS + i)  # fmt: skip
        assert p.flush(60) == 0
        oracle = {
            (t, part): kc.read_all(cluster.bootstrap, t, part)
            for t, n in (("keyed", SOURCE_PARTITIONS), ("big", 2))
            for part in range(n)
        }
        del p
    finally:
        cluster.stop()
    return cluster.broker(1).log_dirs[0], oracle


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    # a killed run's lease member expires after its session timeout: 2 s here (the broker's minimum is 6 s by
    # default), so that each rerun of test_kill_and_resume waits 2 s for it, not 6
    config = {"group.min.session.timeout.ms": 2000}
    with kc.KafkaCluster(tmp_path_factory.mktemp("rehash-target"), broker_config=config) as cluster:
        yield cluster


def _by_value(cluster, topic: str, partitions: int) -> dict[bytes, tuple[int, int, tuple]]:
    """value -> (partition, offset, the record's content) of every record a read_committed consumer reads."""
    out = {}
    for part in range(partitions):
        for off, k, v, h, ts in kc.read_all(cluster.bootstrap, topic, part, to_end=True):
            assert v not in out, f"{v!r} twice"
            out[v] = (part, off, (k, v, h, ts))
    return out


def _java_partitions(cluster, tmp: Path, keys: list[bytes], partitions: int) -> dict[bytes, int]:
    """Where Kafka 4.4.0's Java producer (its ConsoleProducer, the default partitioner) puts each key in a
    topic of ``partitions`` partitions."""
    topic = f"java-oracle-{partitions}"
    cluster.create_topic(topic, partitions)
    lines = "".join(f"{k.decode()}\t{n}\n" for n, k in enumerate(keys))
    libs = kc.kafka_libs()
    done = subprocess.run(
        ["java", *kc.JVM_OPTIONS, "-cp", f"{libs}/*", "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", cluster.bootstrap, "--topic", topic,
         "--property", "parse.key=true", "--property", "key.separator=\t"],
        input=lines, capture_output=True, text=True, timeout=120, cwd=tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    got = {v: part for v, (part, _o, _c) in _by_value(cluster, topic, partitions).items()}
    assert len(got) == len(keys)
    return {k: got[str(n).encode()] for n, k in enumerate(keys)}


def _librdkafka_partitions(cluster, keys: list[bytes], partitions: int) -> dict[bytes, int]:
    topic = f"librdkafka-oracle-{partitions}"
    cluster.create_topic(topic, partitions)
    p = cluster.producer(partitioner="murmur2_random")
    for n, k in enumerate(keys):
        p.produce(topic, key=k, value=str(n).encode())
    assert p.flush(60) == 0
    got = {v: part for v, (part, _o, _c) in _by_value(cluster, topic, partitions).items()}
    return {k: got[str(n).encode()] for n, k in enumerate(keys)}


def _check_replayed(
    cluster, topic: str, partitions: int, oracle: dict, java: dict[bytes, int]
) -> dict[bytes, tuple[int, int, tuple]]:
    """The checks of a re-hashed replay of ``keyed``; returns what :func:`_by_value` read."""
    got = _by_value(cluster, topic, partitions)
    source = [(part, rec) for (t, part), rows in oracle.items() if t == "keyed" for rec in rows]
    assert len(got) == len(source)  # every record once
    for part, (_off, k, v, h, ts) in source:
        at, _o, content = got[v]
        assert content == (k, v, h, ts)  # key, value, headers, CreateTime timestamp as they were
        assert at == (part % partitions if k is None else java[k]), (k, v)
    for part in range(SOURCE_PARTITIONS):  # per source partition, the order within each target partition
        for at in range(partitions):
            offsets = [got[rec[2]][1] for rec in oracle[("keyed", part)] if got[rec[2]][0] == at]
            assert offsets == sorted(offsets)
    return got


def test_rehash_as_the_java_producer(source, target, tmp_path: Path) -> None:
    import pyarrow as pa

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, offset_map, plan_replay
    from logdoctor.replay.partitioner import partition_for

    log_dir, oracle = source
    keys = sorted({rec[1] for (t, _p), rows in oracle.items() if t == "keyed" for rec in rows} - {None})
    assert b"" in keys and len(keys) > 40
    for partitions in (5, 2):
        java = _java_partitions(target, tmp_path, keys, partitions)
        assert len(set(java.values())) == partitions  # the keys spread over every partition
        assert {k: partition_for(k, 0, partitions) for k in keys} == java
        if partitions == 5:  # librdkafka's murmur2_random, documented as the Java producer's: it is
            assert _librdkafka_partitions(target, keys, partitions) == java
        name = f"keyed{partitions}"
        target.create_topic(name, partitions)
        mapping = TopicMap({"keyed": name})
        plan = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="keyed"),
                           topic_map=mapping, partitioner="default")  # fmt: skip
        assert plan.all_conflicts() == [] and plan.to_json()["partitioner"] == "default"
        assert len({p.transactional_id for p in plan.partitions}) == SOURCE_PARTITIONS
        assert all(p.target_partitions == partitions for p in plan.partitions)
        assert (
            sum(sum(p.target_records.values()) for p in plan.partitions) == SOURCE_PARTITIONS * PER_PARTITION
        )
        result = apply_replay(plan, txn_records=40)
        assert result.records == SOURCE_PARTITIONS * PER_PARTITION
        got = _check_replayed(target, name, partitions, oracle, java)

        key = [(c, "ascending") for c in ("source_topic", "source_partition", "source_offset")]
        rebuilt = pa.Table.from_batches(list(offset_map(plan))).sort_by(key)
        assert result.offset_map.sort_by(key).equals(rebuilt)
        for row in rebuilt.to_pylist():
            v = f"v-{row['source_partition']}-{row['source_offset']}".encode()
            assert (row["target_partition"], row["target_offset"]) == got[v][:2]

        again = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="keyed"),
                            topic_map=mapping, partitioner="default")  # fmt: skip
        assert again.all_conflicts() == [] and again.remaining_records == 0
        assert apply_replay(again).records == 0


def test_conflicts(source, target) -> None:
    from confluent_kafka.admin import NewPartitions

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import ReplayRefused, TopicMap, apply_replay, plan_groups, plan_replay

    log_dir, _oracle = source
    opts = ReadOptions(topics="keyed")
    target.create_topic("crowded", 4)
    p = target.producer()
    p.produce("crowded", key=b"k", value=b"already here", partition=2)
    assert p.flush(30) == 0
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=TopicMap({"keyed": "crowded"}),
                       partitioner="default")  # fmt: skip
    assert [(c.code, "crowded-2" in c.message) for c in plan.all_conflicts()] == [("TARGET_NOT_EMPTY", True)]
    with pytest.raises(ReplayRefused):
        apply_replay(plan)
    assert sum(len(kc.read_all(target.bootstrap, "crowded", n)) for n in range(4)) == 1
    with pytest.raises(ValueError, match="--partitioner default"):
        plan_groups(plan, ".*")

    # a topic re-hashed (by the command) whose partition count grows
    mapping = TopicMap({"keyed": "grown"})
    target.create_topic("grown", 2)
    argv = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "keyed"]
    argv += ["--topic-map", "keyed=grown", "--partitioner", "default", "--apply"]
    applied = kc.logdoctor_json("replay", *argv)
    assert (
        applied["plan"]["partitioner"] == "default"
        and applied["result"]["records"] == SOURCE_PARTITIONS * PER_PARTITION
    )
    assert {p["target"]["partitions"] for p in applied["plan"]["partitions"]} == {2}
    admin = target.admin()
    admin.create_partitions([NewPartitions("grown", 3)])["grown"].result(30)
    kc.wait_until(
        "grown to have 3 partitions",
        lambda: len(target.admin().list_topics("grown", timeout=5).topics["grown"].partitions) == 3,
    )
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=mapping, partitioner="default")
    assert [c.code for c in plan.all_conflicts()] == ["PARTITION_COUNT_CHANGED"] * SOURCE_PARTITIONS
    with pytest.raises(ReplayRefused):
        apply_replay(plan)

    done = kc.logdoctor("replay", str(log_dir), "--bootstrap-server", target.bootstrap, "--partitioner",
                        "default", "--groups", ".*")  # fmt: skip
    assert done.returncode == 64 and "--partitioner default" in done.stderr, done.stderr


def test_open_transaction_on_the_target(source, target) -> None:
    """Another producer's transaction open on a re-hashed replay's target topic: the plan names it (topic
    line ``open:``, ``--json`` ``target_open_transactions``; it said nothing before) and reads no further;
    ``--apply`` fences the replay's producers, then refuses (78) naming the other producer's open
    transaction; nothing of the replay is written."""
    log_dir, _oracle = source
    target.create_topic("held", 3)
    outsider = target.producer(**{"transactional.id": "outsider", "transaction.timeout.ms": 300000})
    outsider.init_transactions(60)
    outsider.begin_transaction()
    for i in range(2):
        outsider.produce("held", key=b"o", value=b"open %d" % i, partition=1)
    assert outsider.flush(30) == 0
    try:
        argv = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "keyed"]
        argv += ["--topic-map", "keyed=held", "--partitioner", "default"]
        plan = kc.logdoctor("replay", *argv)
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert "open: a transaction holds offsets 0-1 of held-1, open" in " ".join(plan.stdout.split())
        planned = kc.logdoctor_json("replay", *argv)
        (topic,) = planned.get("plan", planned)["topics"]
        assert topic["target_open_transactions"] == {"1": 0} and topic["conflicts"] == []
        applied = kc.logdoctor("replay", *argv, "--apply")
        assert applied.returncode == 78, applied.stdout + applied.stderr
        assert "another producer's open transaction holds offsets 0-1" in applied.stderr + applied.stdout
    finally:
        outsider.abort_transaction(60)
    assert [len(kc.read_all(target.bootstrap, "held", n, "read_uncommitted")) for n in range(3)] == [0, 2, 0]


_ENTRY = """
import json, sys, time
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.replay import TopicMap, apply_replay, plan_replay
args = json.loads(sys.argv[1])
if args.get("die_before_commit"):  # SIGKILL itself with a transaction's records and offsets sent, uncommitted
    import os, signal
    from logdoctor.replay import apply as replay_apply
    real = replay_apply._producer
    class Dying:
        def __init__(self, producer):
            self.producer, self.commits = producer, 0
        def __getattr__(self, name):
            return getattr(self.producer, name)
        def commit_transaction(self, *a):
            self.commits += 1
            if self.commits >= args["die_before_commit"]:
                print("dying", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            return self.producer.commit_transaction(*a)
    replay_apply._producer = lambda *a, **k: Dying(real(*a, **k))
plan = plan_replay([args["log_dir"]], args["bootstrap"], opts=ReadOptions(topics="big"),
                   topic_map=TopicMap({"big": args["topic"]}), partitioner="default")
def progress(pp, prog):
    print("committed", pp.source_partition, prog.next_source_offset, flush=True)
    time.sleep(args["pause"])
result = apply_replay(plan, txn_records=60, session_timeout_ms=2000, on_transaction=progress)
print("done", result.records, flush=True)
"""


def _replay_process(
    log_dir: Path, target, topic: str, out: Path, pause: float, die: int = 0
) -> subprocess.Popen:
    args = json.dumps({"log_dir": str(log_dir), "bootstrap": target.bootstrap, "topic": topic, "pause": pause,
                       "die_before_commit": die})  # fmt: skip
    return kc.spawn([sys.executable, "-c", _ENTRY, args], log=out)


def test_kill_and_resume(source, target, tmp_path: Path) -> None:
    import pyarrow as pa

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, offset_map, plan_replay
    from logdoctor.replay.partitioner import partition_for

    log_dir, oracle = source
    rng = random.Random(7202)
    topic, partitions = "big3", 3
    target.create_topic(topic, partitions)
    out = tmp_path / "replay.log"
    for round_ in range(2):
        before = out.read_text().count("committed") if out.exists() else 0
        proc = _replay_process(log_dir, target, topic, out, 0.1)
        kc.wait_until(
            "the replay to commit a transaction",
            lambda before=before, proc=proc: (
                out.read_text().count("committed") > before or proc.poll() is not None
            ),
            120,
        )
        time.sleep(rng.uniform(0.0, 0.3))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert "done" not in out.read_text(), f"round {round_}: the replay ended before its kill"
    proc = _replay_process(log_dir, target, topic, out, 0.0, die=2)
    assert proc.wait(120) == -signal.SIGKILL, out.read_text()[-3000:]
    assert out.read_text().endswith("dying\n")
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="big"),
                       topic_map=TopicMap({"big": topic}), partitioner="default")  # fmt: skip
    assert any(p.pending for p in plan.partitions) and 0 < plan.remaining_records < 2 * BIG
    proc = _replay_process(log_dir, target, topic, out, 0.0)
    assert proc.wait(180) == 0, out.read_text()[-3000:]
    assert f"done {plan.remaining_records}" in out.read_text().splitlines()

    got = _by_value(target, topic, partitions)  # read_committed: asserts each record at most once
    source_rows = [(part, rec) for part in range(2) for rec in oracle[("big", part)]]
    assert len(got) == len(source_rows) == 2 * BIG  # ... and exactly once
    for part, (_off, k, v, h, ts) in source_rows:
        assert got[v][0] == partition_for(k, part, partitions) and got[v][2] == (k, v, h, ts)
    for part in range(2):
        for at in range(partitions):
            offsets = [got[r[2]][1] for r in oracle[("big", part)] if got[r[2]][0] == at]
            assert offsets == sorted(offsets)
    aborted = Counter()  # the killed transactions' records are in the log, invisible to read_committed
    for at in range(partitions):
        aborted[at] = len(kc.read_all(target.bootstrap, topic, at, "read_uncommitted", to_end=True))
    assert sum(aborted.values()) > len(got)
    rows = pa.Table.from_batches(list(offset_map(plan))).to_pylist()
    assert len(rows) == 2 * BIG
    for row in rows:
        v = oracle[("big", row["source_partition"])][row["source_offset"]][2]
        assert (row["target_partition"], row["target_offset"]) == got[v][:2]
    final = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="big"),
                        topic_map=TopicMap({"big": topic}), partitioner="default")  # fmt: skip
    assert final.remaining_records == 0 and final.all_conflicts() == []

"""Issue 72 with real brokers: a dead broker's topics replayed into a running cluster, exactly once.

A source cluster (Kafka 4.4.0, one KRaft node) is written by real clients and stopped: its log dir is the
dead broker's. What a ``read_committed`` consumer of it read while it ran (keys, values, headers,
timestamps, in order) is the oracle. A second cluster (4.4.0) is the target:

1. ``test_plan_and_apply``: the plan (nothing written) names each source partition's target, records and
   bytes, the topics to create with the source's partition count and configs (from its KRaft metadata
   log: the compacted topic's ``cleanup.policy``), and no conflict; applied, the target holds exactly the
   oracle's records (headers, CreateTime timestamps, tombstones, order; a transactional topic with an
   aborted and an open transaction: only what read_committed read; a compacted topic; a renamed topic),
   the offset map of the run is the one read back from the target, and a second replay is a no-op.
2. ``test_conflicts_refused``: a target topic with fewer partitions, a non-empty partition and
   LogAppendTime: each is a conflict of the plan, and apply refuses, writing nothing.
3. ``test_kill_and_resume``: a replay in a process of its own is killed with SIGKILL at random moments
   during its transactions, several times, and run again until it ends; meanwhile a second replay into the
   same target is refused. The target holds every record once, in order, and the offset map read back is
   consistent with it.
4. ``test_partitions_in_parallel_killed_and_resumed``: four partitions replayed at once, killed with
   SIGKILL while two are half done, and run again: every record once, in order per partition.
5. ``test_max_rate_over_partitions_in_parallel``: three partitions replayed at once under ``max_rate``: the
   target gets no more than the rate overall, and each transaction holds its thread's share of it.
6. ``test_leases_join_at_once``: into a cluster with the brokers' default ``group.initial.rebalance.delay.ms``
   (3 s: a new group's first join waits that long), the leases of three target topics join at once.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kafka_cluster as kc

pytestmark = pytest.mark.kafka

# CreateTime timestamps of an hour ago: within the target's retention (7 days by default; older records are
# a RETENTION_DELETES conflict of the plan: the target would delete them once their segment rolls)
BASE_TS = int(time.time() * 1000) - 3_600_000
BIG = 3000  # records of the topic replayed under kills


def _produce(producer, topic: str, records: list[tuple], partition: int = 0) -> None:
    for key, value, headers, ts in records:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers, timestamp=ts)
    assert producer.flush(60) == 0


def _content(rows: list[tuple]) -> list[tuple]:
    """What a replay keeps of each record (not its offset)."""
    return [(k, v, h, ts) for _o, k, v, h, ts in rows]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    """The dead broker: (its log dir, {(topic, partition): the read_committed oracle})."""
    root = tmp_path_factory.mktemp("replay-source")
    cluster = kc.KafkaCluster(root, broker_config={"log.cleaner.backoff.ms": 300})
    cluster.start()
    try:
        cluster.create_topic("plain", 2)
        cluster.create_topic("txn", 1)
        cluster.create_topic(
            "compacted",
            1,
            config={"cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.01},
        )
        cluster.create_topic("big", 1)
        p = cluster.producer()
        for part in (0, 1):
            rows = []
            for i in range(40):
                headers = [("trace", f"t{part}-{i}".encode()), ("dup", b"1"), ("dup", b"2")] if i % 3 else []
                value = None if i == 7 else (b"" if i == 8 else f"value-{part}-{i}".encode())
                key = None if i == 9 else f"key-{i % 10}".encode()
                rows.append((key, value, headers or None, BASE_TS + part * 1000 + i * 7))
            _produce(p, "plain", rows, part)
        # transactions: committed, aborted, plain records between, committed, then one left open and a
        # committed one after it (above the last stable offset: read_committed never reads it)
        t1 = cluster.producer(**{"transactional.id": "source-t1"})
        t1.init_transactions(60)
        t1.begin_transaction()
        _produce(
            t1,
            "txn",
            [(b"c1", b"committed-1", [("h", b"1")], BASE_TS + 1), (b"c2", b"committed-2", None, BASE_TS + 2)],
        )
        t1.commit_transaction(60)
        t1.begin_transaction()
        _produce(
            t1, "txn", [(b"a1", b"aborted-1", None, BASE_TS + 3), (b"a2", b"aborted-2", None, BASE_TS + 4)]
        )
        t1.abort_transaction(60)
        _produce(p, "txn", [(b"p1", b"plain-1", None, BASE_TS + 5)])
        t1.begin_transaction()
        _produce(t1, "txn", [(b"c3", b"committed-3", None, BASE_TS + 6)])
        t1.commit_transaction(60)
        # open for the module's whole run: the coordinator's decision at a restart (an Ongoing transaction
        # aborts once its timeout passed: logdir/coordinator.py) holds it open in every run, not only in those
        # within 60 s (the default) of this one
        t2 = cluster.producer(**{"transactional.id": "source-t2", "transaction.timeout.ms": 600000})
        t2.init_transactions(60)
        t2.begin_transaction()
        _produce(t2, "txn", [(b"o1", b"open-1", None, BASE_TS + 7)])  # never committed nor aborted
        t1.begin_transaction()
        _produce(t1, "txn", [(b"c4", b"committed-after-open", None, BASE_TS + 8)])
        t1.commit_transaction(60)
        # a compacted topic: rounds of the same keys, each in a segment of its own (segment.ms rolls by the
        # records' timestamps: K:storage/.../internals/log/LogSegment.java shouldRoll), then cleaned
        for rnd in range(6):
            rows = [
                (f"k{i}".encode(), f"r{rnd}-{i}".encode(), None, BASE_TS + rnd * 1000 + i) for i in range(5)
            ]
            _produce(p, "compacted", rows)
        _produce(p, "compacted", [(b"k0", None, None, BASE_TS + 8000)])  # a tombstone
        _produce(p, "compacted", [(b"roll", b"x", None, BASE_TS + 10000)])  # rolls the segment before
        kc.wait_until(
            "the cleaner to compact 'compacted'",
            lambda: len(kc.read_all(cluster.bootstrap, "compacted", 0)) < 30,
            60,
        )
        rows = [
            (f"big-{i}".encode(), f"{i:06d}".encode() * 8, [("i", str(i).encode())], BASE_TS + i)
            for i in range(BIG)
        ]
        _produce(p, "big", rows)
        oracle = {
            (topic, part): kc.read_all(cluster.bootstrap, topic, part)
            for topic, part in (("plain", 0), ("plain", 1), ("txn", 0), ("compacted", 0), ("big", 0))
        }
        del t1, t2, p
    finally:
        cluster.stop()
    assert [r[1] for r in oracle[("txn", 0)]] == [b"c1", b"c2", b"p1", b"c3"]
    offsets = [r[0] for r in oracle[("compacted", 0)]]
    assert offsets != list(range(len(offsets)))  # compacted: offsets gone
    return cluster.broker(1).log_dirs[0], oracle


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    with kc.KafkaCluster(tmp_path_factory.mktemp("replay-target")) as cluster:
        yield cluster


def test_plan_and_apply(source, target) -> None:
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, offset_map, plan_replay

    log_dir, oracle = source
    opts = ReadOptions(topics="plain,txn,compacted")
    mapping = TopicMap(["plain=plain-restored"])
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=mapping)
    assert plan.all_conflicts() == []
    topics = {t.source_topic: t for t in plan.topics}
    assert topics["plain"].target_topic == "plain-restored" and topics["plain"].create
    assert topics["plain"].partitions == 2 and topics["plain"].source_partitions == 2
    assert topics["compacted"].configs["cleanup.policy"] == "compact"  # from the source's metadata log
    counts = {(p.source_topic, p.source_partition): p.records for p in plan.partitions}
    assert counts == {k: len(v) for k, v in oracle.items() if k[0] != "big"}
    assert target.admin().list_topics(timeout=10).topics.keys().isdisjoint({"plain-restored", "txn"})

    result = apply_replay(plan, txn_records=7)
    assert result.records == sum(counts.values())
    assert sorted(result.created_topics) == ["compacted", "plain-restored", "txn"]
    for (topic, part), want in oracle.items():
        if topic == "big":
            continue
        got = kc.read_all(target.bootstrap, mapping(topic), part, to_end=True)
        assert _content(got) == _content(want), f"{topic}-{part}"
        assert _content(
            kc.read_all(target.bootstrap, mapping(topic), part, "read_uncommitted", to_end=True)
        ) == _content(want)
    admin = target.admin()  # kept while its futures pend
    configs = admin.describe_configs([_topic_resource("compacted")])
    assert next(iter(configs.values())).result(30)["cleanup.policy"].value == "compact"

    rebuilt = __import__("pyarrow").Table.from_batches(list(offset_map(plan)))
    run = result.offset_map
    assert run.num_rows == rebuilt.num_rows == sum(counts.values())
    key = ["source_topic", "source_partition", "source_offset"]
    assert run.sort_by([(k, "ascending") for k in key]).equals(
        rebuilt.sort_by([(k, "ascending") for k in key])
    )
    src_txn = [r for r in rebuilt.to_pylist() if r["source_topic"] == "txn"]
    assert [r["source_offset"] for r in src_txn] == [r[0] for r in oracle[("txn", 0)]]

    again = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=mapping)
    assert again.all_conflicts() == [] and again.remaining_records == 0
    assert apply_replay(again).records == 0


def _topic_resource(name: str):
    from confluent_kafka.admin import ConfigResource, ResourceType

    return ConfigResource(ResourceType.TOPIC, name)


def test_conflicts_refused(source, target) -> None:
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import ReplayRefused, TopicMap, apply_replay, plan_replay

    log_dir, _oracle = source
    target.create_topic("crowded", 1, config={"message.timestamp.type": "LogAppendTime"})
    target.produce("crowded", [(b"k", b"already here")])
    plan = plan_replay(
        [str(log_dir)],
        target.bootstrap,
        opts=ReadOptions(topics="plain"),
        topic_map=TopicMap({"plain": "crowded"}),
    )
    codes = sorted({c.code for c in plan.all_conflicts()})
    assert codes == ["LOG_APPEND_TIME", "TARGET_NOT_EMPTY", "TOO_FEW_PARTITIONS"]
    with pytest.raises(ReplayRefused):
        apply_replay(plan)
    assert len(kc.read_all(target.bootstrap, "crowded", 0)) == 1


_ENTRY = """
import json, sys, time
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.replay import TopicMap, apply_replay, plan_replay
args = json.loads(sys.argv[1])
# SIGKILL itself with a transaction's records and offsets sent, uncommitted (or its records alone)
if args.get("die_before_commit") or args.get("die_before_offsets"):
    import os, signal
    from logdoctor.replay import apply as replay_apply
    real = replay_apply._producer
    class Dying:
        def __init__(self, producer):
            self.producer, self.commits = producer, 0
        def __getattr__(self, name):
            return getattr(self.producer, name)
        def send_offsets_to_transaction(self, *a):
            if args.get("die_before_offsets"):  # the first transaction's records written, no progress
                print("dying", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            return self.producer.send_offsets_to_transaction(*a)
        def commit_transaction(self, *a):
            self.commits += 1
            if self.commits >= args["die_before_commit"]:
                print("dying", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            return self.producer.commit_transaction(*a)
    replay_apply._producer = lambda *a, **k: Dying(real(*a, **k))
topics = args.get("topics") or {"big": args["topic"]}
plan = plan_replay([args["log_dir"]], args["bootstrap"], opts=ReadOptions(topics=",".join(topics)),
                   topic_map=TopicMap(topics))
def progress(pp, prog):
    print("committed", prog.next_source_offset, prog.records, pp.name, flush=True)
    time.sleep(args["pause"])
result = apply_replay(plan, txn_records=args.get("txn_records", 100), session_timeout_ms=6000,
                      on_transaction=progress, parallelism=args.get("parallelism"))
print("done", result.records, flush=True)
"""


def _replay_process(
    log_dir: Path, target, topic: str, out: Path, pause: float, die_before_commit: int = 0,
    die_before_offsets: bool = False, **more: object,
) -> subprocess.Popen:  # fmt: skip
    args = json.dumps(
        {"log_dir": str(log_dir), "bootstrap": target.bootstrap, "topic": topic, "pause": pause,
         "die_before_commit": die_before_commit, "die_before_offsets": die_before_offsets, **more}
    )  # fmt: skip
    return kc.spawn([sys.executable, "-c", _ENTRY, args], log=out)


def test_kill_and_resume(source, target, tmp_path: Path) -> None:
    import pyarrow as pa

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import ReplayRefused, TopicMap, apply_replay, offset_map, plan_replay

    log_dir, oracle = source
    rng = random.Random(72)
    topic = "big-restored"
    out = tmp_path / "replay.log"
    killed_mid = 0
    for round_ in range(3):
        before = out.read_text().count("committed") if out.exists() else 0
        proc = _replay_process(log_dir, target, topic, out, 0.05)
        kc.wait_until(
            "the replay to commit a transaction",
            lambda before=before, proc=proc: (
                out.read_text().count("committed") > before or proc.poll() is not None
            ),
            120,
        )
        time.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        lines = [line.split() for line in out.read_text().splitlines() if line.startswith("committed")]
        assert "done" not in out.read_text(), f"round {round_}: the replay ended before its kill"
        killed_mid += bool(lines) and int(lines[-1][2]) < BIG
    assert killed_mid == 3
    # the last kill leaves a transaction with the next progress pending in the group (after
    # send_offsets_to_transaction, before commit_transaction): the plan shows the last committed progress
    # at once (it does not wait out transaction.timeout.ms), and says that a transaction holds it
    before = out.read_text().count("committed")
    proc = _replay_process(log_dir, target, topic, out, 0.0, die_before_commit=2)
    assert proc.wait(120) == -signal.SIGKILL, out.read_text()[-3000:]
    assert out.read_text().count("committed") == before + 1 and out.read_text().endswith("dying\n")
    committed = int(out.read_text().splitlines()[-2].split()[2])

    started = time.monotonic()
    plan = plan_replay(
        [str(log_dir)], target.bootstrap, opts=ReadOptions(topics="big"), topic_map=TopicMap({"big": topic})
    )
    assert time.monotonic() - started < 20
    assert plan.partitions[0].pending and plan.partitions[0].to_json()["pending_transaction"]
    assert plan.partitions[0].progress.records == committed
    assert plan.partitions[0].remaining_records == BIG - committed
    # the records left in about 10 transactions, a second between them: the run still holds the lease when
    # its first commit is seen, however few records the kills left (one transaction ends within lock_wait)
    txn = max(1, plan.partitions[0].remaining_records // 10)
    proc = _replay_process(log_dir, target, topic, out, 1.0, txn_records=txn)
    seen = out.read_text().count("committed")
    kc.wait_until("the last run to commit", lambda: out.read_text().count("committed") > seen, 120)
    with pytest.raises(ReplayRefused, match="another replay"):  # the running one holds the lease
        apply_replay(plan, lock_wait=1.0)
    assert proc.wait(180) == 0, out.read_text()[-3000:]
    assert f"done {plan.partitions[0].remaining_records}" in out.read_text().splitlines()

    want = oracle[("big", 0)]
    got = kc.read_all(target.bootstrap, topic, 0, to_end=True)
    assert _content(got) == _content(want)  # every record once, in order
    rows = pa.Table.from_batches(list(offset_map(plan))).to_pylist()
    assert [r["source_offset"] for r in rows] == [r[0] for r in want]
    assert [r["target_offset"] for r in rows] == [r[0] for r in got]
    final = plan_replay(
        [str(log_dir)], target.bootstrap, opts=ReadOptions(topics="big"), topic_map=TopicMap({"big": topic})
    )
    assert final.remaining_records == 0 and final.all_conflicts() == []


def test_rerun_after_kill_in_first_transaction(source, target, tmp_path: Path) -> None:
    """Issue 87 item 4: a replay SIGKILLed inside a partition's first transaction (its records written, no
    progress committed) leaves an open transaction that holds the target partition's last stable offset
    at its first record until the coordinator times it out (transaction.timeout.ms, 60 s). The rerun's plan
    at once: the open transaction named, no conflict, nothing written (it read to the last stable offset
    and no further: before, it waited for a record past it, then exit 1 and a traceback); its --apply
    fences the killed producer, then reads: every record once. Another producer's open transaction in an
    empty target partition is named alike and refused by --apply (78), nothing written."""
    log_dir, oracle = source
    topic = "big-open"
    out = tmp_path / "replay.log"
    proc = _replay_process(log_dir, target, topic, out, 0.0, die_before_offsets=True)
    assert proc.wait(120) == -signal.SIGKILL, out.read_text()[-3000:]
    assert "committed" not in out.read_text()
    assert len(kc.read_all(target.bootstrap, topic, 0, "read_uncommitted", to_end=True)) == 100
    base = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "big", "--timeout", "20"]

    started = time.monotonic()
    done = kc.logdoctor("replay", *base, "--topic-map", f"big={topic}", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - started < 18  # not one --timeout spent waiting
    (part,) = json.loads(done.stdout)["plan"]["partitions"]
    assert part["target_open_transaction_from"] == 0 and part["resume_from"] is None
    assert part["conflicts"] == [] and part["remaining_records"] == BIG
    done = kc.logdoctor("replay", *base, "--topic-map", f"big={topic}")
    assert done.returncode == 0 and "open: a transaction holds offsets 0-99 of big-open-0" in done.stdout

    done = kc.logdoctor("replay", *base, "--topic-map", f"big={topic}", "--apply")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert _content(kc.read_all(target.bootstrap, topic, 0, to_end=True)) == _content(oracle[("big", 0)])

    other = "big-foreign"
    target.create_topic(other, 1)
    foreign = target.producer(**{"transactional.id": "someone-else"})
    foreign.init_transactions(30)
    foreign.begin_transaction()
    _produce(foreign, other, [(b"k", b"theirs", None, BASE_TS)])
    try:
        done = kc.logdoctor("replay", *base, "--topic-map", f"big={other}", "--json")
        assert done.returncode == 0, done.stderr[-3000:]
        (part,) = json.loads(done.stdout)["plan"]["partitions"]
        assert part["target_open_transaction_from"] == 0 and part["conflicts"] == []
        done = kc.logdoctor("replay", *base, "--topic-map", f"big={other}", "--apply")
        assert done.returncode == 78, done.stdout[-2000:] + done.stderr[-3000:]
        assert "another producer's open transaction holds offsets 0-0" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        foreign.abort_transaction(30)
    assert kc.read_all(target.bootstrap, other, 0, "read_uncommitted", to_end=True)[0][2] == b"theirs"
    assert len(kc.read_all(target.bootstrap, other, 0, "read_uncommitted", to_end=True)) == 1


def test_partitions_in_parallel_killed_and_resumed(source, target, tmp_path: Path) -> None:
    """Issue 89 item 1: four source partitions replayed at once (``parallelism=4``) in a process of its own;
    its transactions interleave: two partitions each committed some of their transactions and not all, at
    the same moment (one after the other, a partition is done before the next one's first commit), when
    it is SIGKILLed. The rerun (parallel too) resumes each partition: the target holds every record once,
    in order per partition."""
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, plan_replay

    log_dir, oracle = source
    names = {"plain": "plain-par", "txn": "txn-par", "compacted": "compacted-par"}
    total = {f"{t}-{p}": len(rows) for (t, p), rows in oracle.items() if t in names}
    out = tmp_path / "replay.log"

    def mid_way() -> set[str]:
        last = {}
        for line in out.read_text().splitlines():
            if line.startswith("committed"):
                _c, _next, records, name = line.split()
                last[name] = int(records)
        return {name for name, records in last.items() if records < total[name]}

    proc = _replay_process(log_dir, target, "", out, 0.05, topics=names, txn_records=4, parallelism=4)
    kc.wait_until("the replay's transactions", lambda: len(mid_way()) >= 2 or proc.poll() is not None, 120)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert len(mid_way()) >= 2 and "done" not in out.read_text(), out.read_text()[-3000:]

    opts = ReadOptions(topics=",".join(names))
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=TopicMap(names))
    assert plan.all_conflicts() == [] and 0 < plan.remaining_records < sum(total.values())
    assert apply_replay(plan, parallelism=4).records == plan.remaining_records
    for (topic, part), want in oracle.items():
        if topic in names:
            got = kc.read_all(target.bootstrap, names[topic], part, to_end=True)
            assert _content(got) == _content(want), f"{topic}-{part}"  # every record once, in order


def test_max_rate_over_partitions_in_parallel(source, target, monkeypatch) -> None:
    """Issue 89 item 1: ``max_rate`` (``--max-rate``) is one budget for the pool's threads. plain's two
    partitions and txn's (84 records) replayed at once (parallelism 3) at R = 20 records/s. The tokens the
    threads take (each right before its record's ``produce``), all together, keep to one bucket of R: in
    any span of d seconds at most R d and the burst (R / 10: 2); so the whole takes at least (84 - 2) / R s
    (a bucket per thread: 3 R). A ``read_uncommitted`` consumer of the three target partitions (a record is
    there once sent, before its transaction commits) sees no two seconds of arrivals hold more than 2 R,
    the burst and a second of the arrivals' jitter (a transaction's first records wait for its
    AddPartitionsToTxn, then go together). Each transaction holds at most ``RateLimit.TXN_SECONDS`` of its
    thread's share (R / 3; here 1 s: 6 records): ten seconds of the whole rate, as before, took 10 s per
    thread in each transaction, 70 s in 7 threads, past librdkafka's transaction.timeout.ms (60 s), which
    aborts it. The target holds the oracle's records."""
    import itertools

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, plan_replay
    from logdoctor.replay.apply import RateLimit

    log_dir, oracle = source
    rate, names = 20, {"plain": "plain-rated", "txn": "txn-rated"}
    parts = [("plain", 0), ("plain", 1), ("txn", 0)]
    total = sum(len(oracle[tp]) for tp in parts)
    assert total == 84
    target.create_topic("plain-rated", 2)
    target.create_topic("txn-rated", 1)
    monkeypatch.setattr(RateLimit, "TXN_SECONDS", 1.0, raising=False)
    taken: list[float] = []
    take = RateLimit.take

    def timed(self) -> None:
        take(self)
        taken.append(time.monotonic())  # appended in turn: the bucket's lock is held by one thread at once

    monkeypatch.setattr(RateLimit, "take", timed)
    committed: dict[str, list[int]] = {}

    def progress(pp, prog) -> None:
        committed.setdefault(pp.name, [0]).append(prog.records)

    plan = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="plain,txn"),
                       topic_map=TopicMap(names))  # fmt: skip
    with kc.arrivals(target.bootstrap, [(names[t], p) for t, p in parts], total) as arrivals:
        result = apply_replay(plan, max_rate=rate, parallelism=3, on_transaction=progress, offset_rows=False)
    assert result.records == total and len(arrivals) == total and len(taken) == total
    taken.sort()
    over = [(j - i + 1, b - a) for i, a in enumerate(taken) for j, b in enumerate(taken) if j > i]
    worst = max(over, key=lambda nd: nd[0] - rate * nd[1])
    # (two records of slack: a thread may append its time ~0.1 s after its take)
    assert worst[0] <= rate / 10 + rate * worst[1] + 2, f"{worst[0]} records taken in {worst[1]:.3f} s"
    assert taken[-1] - taken[0] >= (total - 2) / rate - 0.1
    busiest = max(sum(1 for b in arrivals[i:] if b - a < 2.0) for i, a in enumerate(arrivals))
    assert busiest <= 2 * rate + rate / 10 + rate, f"{busiest} records within 2 s at max_rate {rate}"
    sizes = {name: [b - a for a, b in itertools.pairwise(done)] for name, done in committed.items()}
    assert max(n for each in sizes.values() for n in each) == rate // 3, sizes
    for t, p in parts:
        got = kc.read_all(target.bootstrap, names[t], p, to_end=True)
        assert _content(got) == _content(oracle[(t, p)]), f"{t}-{p}"


def test_leases_join_at_once(source, tmp_path_factory: pytest.TempPathFactory, monkeypatch) -> None:
    """Into a cluster with the brokers' default ``group.initial.rebalance.delay.ms`` (3 s, which the other
    targets here set to 0: the coordinator holds a new classic group's first join that long,
    K:group-coordinator/.../GroupMetadataManager.java prepareRebalance), the leases of plain's, txn's and
    compacted's target topics ask to join before the first of them is taken in: each replay pays the delay
    once, not once per target topic (one lease after another held a replay of three topics 9 s before its
    first record; an operator's of a hundred topics, 5 minutes). Every lease asks the target for the
    group's members before it joins (a stopped run's member must expire first), and the first lease's
    assignment comes after the last of those asks. The target then holds the oracle's records."""
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import apply_replay, plan_replay
    from logdoctor.replay.apply import _Lease
    from logdoctor.replay.target import Target

    log_dir, oracle = source
    events: list[tuple[str, str]] = []
    members, on_assign = Target.group_members, _Lease._on_assign

    def asked(self, group: str) -> list[str]:
        events.append(("members", group))
        return members(self, group)

    def assigned(self, consumer, partitions) -> None:
        events.append(("assigned", self.group))
        on_assign(self, consumer, partitions)

    monkeypatch.setattr(Target, "group_members", asked)
    monkeypatch.setattr(_Lease, "_on_assign", assigned)
    root = tmp_path_factory.mktemp("replay-target-delayed")
    with kc.KafkaCluster(root, broker_config={"group.initial.rebalance.delay.ms": 3000}) as delayed:
        plan = plan_replay([str(log_dir)], delayed.bootstrap, opts=ReadOptions(topics="plain,txn,compacted"))
        groups = {pp.lease_group or pp.group for pp in plan.partitions}
        assert len(groups) == 3, groups
        events.clear()
        result = apply_replay(plan, offset_rows=False)
        first = next(i for i, (what, _g) in enumerate(events) if what == "assigned")
        asked_before = {g for what, g in events[:first] if what == "members"}
        assert asked_before == groups, events
        assert result.records == sum(len(v) for k, v in oracle.items() if k[0] != "big")
        for (topic, part), want in oracle.items():
            if topic != "big":
                got = kc.read_all(delayed.bootstrap, topic, part, to_end=True)
                assert _content(got) == _content(want), f"{topic}-{part}"

"""Issue 72 item 4 with real brokers: a dead broker's consumer groups carried over by ``replay --groups``.

A source cluster (Kafka 4.4.0, one KRaft node) is written by real clients, and real consumers commit
their groups' offsets on it before it is stopped:

- ``mid``: a consumer read 12 records of ``events-0`` and committed its position (with a metadata string),
  and read all of ``events-1`` (its commit is the partition's end);
- ``aborted``: a ``read_uncommitted`` consumer read ``txn-0`` up to the first aborted record and committed
  its position: the offset of the second aborted record;
- ``txn-aborted``: a plain commit, then a transactional offset commit (``send_offsets_to_transaction``)
  whose transaction was aborted: the plain commit stands;
- ``txn-committed``: a transactional offset commit whose transaction committed;
- ``gone``: committed, then deleted (its offsets' tombstones): not carried over.

The oracle is Kafka's own: before the source is stopped, a fresh ``read_committed`` consumer of each group
(no commit of its own) reads the first record from the group's committed offset, or the partition's end.
The verdict: after ``replay --apply --groups``, a ``read_committed`` consumer of the group on the target
reads exactly that record first (key, value, headers, timestamp), or nothing. Along the way: a group with
an active member on the target is a ``GROUP_ACTIVE`` conflict (nothing written); groups are committed only
once their partitions' replay is complete (a replay of the records alone, as a kill leaves it, then a rerun
commits the groups); a rerun changes nothing, and never moves back a group that moved on on the target.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

import kafka_cluster as kc

pytestmark = pytest.mark.kafka

BASE_TS = int(time.time() * 1000) - 3_600_000  # within the target's retention
TOPICS = "events,txn"
MAP = {"events": "events-restored"}


def _produce(producer, topic: str, rows: list[tuple], partition: int = 0) -> None:
    for key, value, headers, ts in rows:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers, timestamp=ts)
    assert producer.flush(60) == 0


def _consumer(bootstrap: str, group: str, isolation: str = "read_committed"):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",  # never a silent reset: the committed offset or a failure
        }
    )


def _read(consumer, n: int) -> list:
    out = []
    deadline = time.monotonic() + 30
    while len(out) < n:
        assert time.monotonic() < deadline, f"read {len(out)} of {n}"
        msg = consumer.poll(1.0)
        if msg is None or (msg.error() is not None and msg.error().code() == -191):
            continue
        assert msg.error() is None, msg.error()
        out.append(msg)
    return out


def resume(bootstrap: str, group: str, topic: str, partition: int) -> tuple | None:
    """The first record a ``read_committed`` consumer of ``group`` reads from its committed offset of the
    partition (key, value, headers, timestamp), None at the partition's end. Commits nothing."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(bootstrap, group)
    try:
        consumer.assign([TopicPartition(topic, partition)])  # no offset: the group's committed one
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == -191, msg.error()  # _PARTITION_EOF: at the end
                return None
            return msg.key(), msg.value(), tuple(msg.headers() or ()), msg.timestamp()[1]
        raise AssertionError(f"{group} {topic}-{partition}: nothing read")
    finally:
        consumer.close()


#: (group, source topic, partition) -> the source's committed offset
COMMITTED = {
    ("mid", "events", 0): 12,
    ("mid", "events", 1): 20,
    ("aborted", "txn", 0): 4,
    ("txn-aborted", "events", 0): 5,
    ("txn-committed", "events", 1): 7,
}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    """The dead broker: (its log dir, {(group, topic, partition): the record its consumer reads next}, {the
    same: the commit's metadata as the source's admin client lists it})."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    cluster = kc.KafkaCluster(tmp_path_factory.mktemp("replay-groups-source"))
    cluster.start()
    try:
        cluster.create_topic("events", 2)
        cluster.create_topic("txn", 1)
        p = cluster.producer()
        for part, n in ((0, 30), (1, 20)):
            rows = [
                (f"k{i % 6}".encode(), None if i == 13 else f"e{part}-{i}".encode(),
                 [("i", str(i).encode())] if i % 2 else None, BASE_TS + part * 100 + i)
                for i in range(n)
            ]  # fmt: skip
            _produce(p, "events", rows, part)
        # txn-0: c1 0, c2 1, COMMIT 2, a1 3, a2 4, ABORT 5, p1 6, c3 7, COMMIT 8
        t = cluster.producer(**{"transactional.id": "groups-source"})
        t.init_transactions(60)
        t.begin_transaction()
        _produce(t, "txn", [(b"c1", b"v1", None, BASE_TS + 1), (b"c2", b"v2", [("h", b"2")], BASE_TS + 2)])
        t.commit_transaction(60)
        t.begin_transaction()
        _produce(
            t, "txn", [(b"a1", b"aborted-1", None, BASE_TS + 3), (b"a2", b"aborted-2", None, BASE_TS + 4)]
        )
        t.abort_transaction(60)
        _produce(p, "txn", [(b"p1", b"plain-1", [("h", b"p")], BASE_TS + 5)])
        t.begin_transaction()
        _produce(t, "txn", [(b"c3", b"v3", None, BASE_TS + 6)])
        t.commit_transaction(60)

        boot = cluster.bootstrap
        mid = _consumer(boot, "mid")
        mid.assign([TopicPartition("events", 0, 0)])
        got = _read(mid, 12)
        assert got[-1].offset() == 11
        mid.commit(offsets=[TopicPartition("events", 0, 12, "from the source")], asynchronous=False)
        mid.assign([TopicPartition("events", 1, 0)])
        _read(mid, 20)
        mid.commit(asynchronous=False)  # its position: the partition's end
        mid.close()
        aborted = _consumer(boot, "aborted", "read_uncommitted")
        aborted.assign([TopicPartition("txn", 0, 0)])
        assert [m.offset() for m in _read(aborted, 3)] == [0, 1, 3]  # c1, c2, a1
        aborted.commit(asynchronous=False)  # its position: 4, a2 (aborted)
        aborted.close()
        for group, offset, end in (("txn-aborted", 25, "abort"), ("txn-committed", 7, "commit")):
            c = _consumer(boot, group)
            part = 0 if group == "txn-aborted" else 1
            if group == "txn-aborted":
                c.commit(offsets=[TopicPartition("events", 0, 5)], asynchronous=False)
            tp = cluster.producer(**{"transactional.id": f"groups-{group}"})
            tp.init_transactions(60)
            tp.begin_transaction()
            tp.send_offsets_to_transaction(
                [TopicPartition("events", part, offset)], c.consumer_group_metadata(), 60
            )
            getattr(tp, f"{end}_transaction")(60)
            c.close()
        gone = _consumer(boot, "gone")
        gone.commit(offsets=[TopicPartition("events", 0, 3)], asynchronous=False)
        gone.close()
        admin = cluster.admin()
        admin.delete_consumer_groups(["gone"], request_timeout=30)["gone"].result(30)

        oracle, metadata = {}, {}
        for (group, topic, part), offset in COMMITTED.items():
            request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, part)])]
            committed = admin.list_consumer_group_offsets(request)[group].result(30)
            assert committed.topic_partitions[0].offset == offset, (group, topic, part)
            metadata[(group, topic, part)] = committed.topic_partitions[0].metadata
            oracle[(group, topic, part)] = resume(boot, group, topic, part)
        del t, p, admin
    finally:
        cluster.stop()
    assert oracle[("aborted", "txn", 0)][0] == b"p1"  # the aborted a2 is no record to read_committed
    assert oracle[("mid", "events", 1)] is None  # at the end
    assert metadata[("mid", "events", 0)].startswith("from the source")
    return cluster.broker(1).log_dirs[0], oracle, metadata


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    with kc.KafkaCluster(tmp_path_factory.mktemp("replay-groups-target")) as cluster:
        yield cluster


def _plan(log_dir, target, groups: str | None = ".*"):
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, plan_groups, plan_replay

    opts = ReadOptions(topics=TOPICS)
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=TopicMap(MAP))
    if groups is not None:
        plan_groups(plan, groups)
    return plan


def _statuses(groups) -> dict[tuple[str, str, int], tuple[int, object, str]]:
    return {
        (g.group, p.source_topic, p.source_partition): (p.source_offset, p.target_offset, p.status)
        for g in groups
        for p in g.partitions
    }


def _target_offsets(target, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    parts = [TopicPartition(MAP.get(t, t), p) for (g, t, p) in COMMITTED if g == group]
    admin = target.admin()  # kept while its future pends
    got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, parts)])[group].result(30)
    return {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in got.topic_partitions}


def test_groups_carried_over(source, target) -> None:
    from confluent_kafka import TopicPartition

    from logdoctor.replay import ReplayRefused, apply_replay

    log_dir, oracle, metadata = source
    # "mid" is active on the target: a member subscribed to a topic of its own there
    target.create_topic("busy", 1)
    busy = _consumer(target.bootstrap, "mid")
    busy.subscribe(["busy"])
    kc.wait_until(
        "mid to be stable on the target", lambda: busy.poll(0.5) is not None or busy.assignment(), 60
    )

    plan = _plan(log_dir, target)
    assert [c.code for c in plan.all_conflicts()] == ["GROUP_ACTIVE"]
    states = {g.group: g.target_state for g in plan.groups}  # not "gone": deleted on the source
    assert sorted(states) == ["aborted", "mid", "txn-aborted", "txn-committed"]
    assert states["mid"] == "STABLE" and states["txn-aborted"] in ("DEAD", "ABSENT")  # none there
    want = {k: (v, None, "after the replay") for k, v in COMMITTED.items()}
    assert _statuses(plan.groups) == want
    assert plan.to_json()["groups"][0]["partitions"][0]["after"] == "after the replay"
    with pytest.raises(ReplayRefused, match="no active member"):
        apply_replay(plan)
    assert "events-restored" not in target.admin().list_topics(timeout=10).topics  # nothing written
    busy.close()  # leaves the group: Empty

    # the records alone, as a replay killed before its groups leaves them
    records_only = _plan(log_dir, target, groups=None)
    assert apply_replay(records_only).groups is None
    plan = _plan(log_dir, target)
    assert plan.all_conflicts() == []
    assert {g.group: g.target_state for g in plan.groups}["mid"] == "EMPTY"
    planned = _statuses(plan.groups)
    assert {k: v[2] for k, v in planned.items()} == dict.fromkeys(COMMITTED, "commit")
    assert all(after is not None for _b, after, _s in planned.values())  # translated in the plan

    result = apply_replay(plan)
    assert result.records == 0
    applied = _statuses(result.groups)
    assert {k: (v[0], v[1]) for k, v in applied.items()} == {k: (v[0], v[1]) for k, v in planned.items()}
    assert {v[2] for v in applied.values()} == {"committed"}

    # the verdict: each group resumes on the target at the record it would have read next on the source
    for (group, topic, part), expected in oracle.items():
        assert resume(target.bootstrap, group, MAP.get(topic, topic), part) == expected, (group, topic, part)
    mid = _target_offsets(target, "mid")
    assert mid[("events-restored", 0)][1] == metadata[("mid", "events", 0)]  # the source commit's, kept

    # a rerun changes nothing
    before = {g: _target_offsets(target, g) for g in ("mid", "aborted", "txn-aborted", "txn-committed")}
    again = _plan(log_dir, target)
    assert {v[2] for v in _statuses(again.groups).values()} == {"committed"}
    assert {v[2] for v in _statuses(apply_replay(again).groups).values()} == {"committed"}
    assert {g: _target_offsets(target, g) for g in before} == before

    # a group that moved on on the target is never moved back
    moved = mid[("events-restored", 0)][0] + 2
    c = _consumer(target.bootstrap, "mid")
    c.commit(offsets=[TopicPartition("events-restored", 0, moved)], asynchronous=False)
    c.close()
    kept = apply_replay(_plan(log_dir, target)).groups
    assert _statuses(kept)[("mid", "events", 0)][2] == "kept"
    assert _target_offsets(target, "mid")[("events-restored", 0)][0] == moved


def test_cli_groups(source, target) -> None:
    """The command: the plan prints each group's before and after, --json carries them, --apply commits
    (the topic replayed under another name here, so that it does not meet the other test's)."""
    log_dir, oracle, _metadata = source
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "txn", "--topic-map",
            "txn=txn-cli", "--groups", "abort.*"]  # fmt: skip
    plan = kc.logdoctor("replay", *args)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "Consumer groups (1):" in plan.stdout
    assert "txn-0 -> txn-cli-0: 4 -> after the replay" in plan.stdout
    done = kc.logdoctor_json("replay", *args, "--apply")
    (group,) = done["result"]["groups"]
    assert group["group"] == "aborted" and group["partitions"][0]["status"] == "committed"
    assert group["partitions"][0]["before"] == 4
    assert resume(target.bootstrap, "aborted", "txn-cli", 0) == oracle[("aborted", "txn", 0)]
    bad = kc.logdoctor("replay", *args[:-1], "(")
    assert bad.returncode == 64 and "--groups" in bad.stderr


def test_cli_groups_takes_a_regex_not_an_option(source, target) -> None:
    """``--groups`` takes a value: ``--groups --apply`` is refused (64, one line, nothing written) instead of
    planning the groups matching "--apply"; ``--all-groups`` is ``--groups '.*'``, not with ``--groups``."""
    log_dir, _oracle, _metadata = source
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", TOPICS, "--topic-map",
            "events=events-all", "--topic-map", "txn=txn-all"]  # fmt: skip
    before = set(target.admin().list_topics(timeout=10).topics)
    swallowed = kc.logdoctor("replay", *args, "--groups", "--apply")
    assert swallowed.returncode == 64, swallowed.stdout + swallowed.stderr
    assert swallowed.stderr.strip().count("\n") == 0 and "--groups --apply" in swallowed.stderr
    assert set(target.admin().list_topics(timeout=10).topics) == before
    every = kc.logdoctor_json("replay", *args, "--all-groups")
    regex = kc.logdoctor_json("replay", *args, "--groups", ".*")
    assert every["plan"]["groups"] == regex["plan"]["groups"]
    assert {g["group"] for g in every["plan"]["groups"]} == {"mid", "aborted", "txn-aborted",
                                                                 "txn-committed"}  # not gone: deleted
    both = kc.logdoctor("replay", *args, "--all-groups", "--groups", ".*")
    assert both.returncode == 64 and "--all-groups" in both.stderr


def test_group_joined_before_commit(source, target) -> None:
    """A group with no member when planned, joined on the target before its commit: ``--apply`` asks again
    just before, commits nothing for it and says so (the CLI refuses with 78 while the member stays); once
    the member left, a rerun commits it."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, plan_groups, plan_replay

    log_dir, oracle, _metadata = source
    opts, mapping = ReadOptions(topics="events"), TopicMap({"events": "events-late"})
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=mapping)
    plan_groups(plan, "txn-committed")
    assert plan.all_conflicts() == []
    target.create_topic("busy-late", 1)
    member = _consumer(target.bootstrap, "txn-committed")
    member.subscribe(["busy-late"])
    kc.wait_until("the member to join", lambda: member.poll(0.5) is not None or member.assignment(), 60)
    try:
        result = apply_replay(plan)
        assert result.records == 50
        assert _statuses(result.groups) == {("txn-committed", "events", 1): (7, result.groups[0].partitions[0]
                                            .target_offset, "active")}  # fmt: skip
        admin = target.admin()  # kept while its future pends
        request = [ConsumerGroupTopicPartitions("txn-committed", [TopicPartition("events-late", 1)])]
        listed = admin.list_consumer_group_offsets(request)["txn-committed"].result(30)
        assert listed.topic_partitions[0].offset < 0  # nothing committed
        cli = kc.logdoctor("replay", str(log_dir), "--bootstrap-server", target.bootstrap, "--topics",
                           "events", "--topic-map", "events=events-late", "--groups", "txn-committed",
                           "--apply")  # fmt: skip
        assert cli.returncode == 78, cli.stdout + cli.stderr
        assert "GROUP_ACTIVE" in cli.stdout
    finally:
        member.close()
    again = plan_replay([str(log_dir)], target.bootstrap, opts=opts, topic_map=mapping)
    plan_groups(again, "txn-committed")
    assert {p.status for g in apply_replay(again).groups for p in g.partitions} == {"committed"}
    want = oracle[("txn-committed", "events", 1)]
    assert resume(target.bootstrap, "txn-committed", "events-late", 1) == want


def test_group_consumed_on_target(source, target, tmp_path: Path) -> None:
    """Issue 87 item 3: a group whose consumer runs on the target while the replay runs (``latest``,
    auto-commit: it commits what it reads) is not left there silently. The run ends 78, naming it; the
    rerun's plan is ``GROUP_COMMITTED_ON_TARGET`` with the replayed records its consumers skip (counted on
    the target's records: from the source's commit, 12, to the offset the consumer committed), exit 78;
    ``--groups-overwrite`` moves it to the translated offset, where a consumer of the group reads the record
    the source's consumer read next. Before, the rerun "kept" the group where its consumer left it, exit
    0."""
    import threading

    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition

    log_dir, oracle, _metadata = source
    topic = "events-live"
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "events", "--topic-map",
            f"events={topic}", "--groups", "mid"]  # fmt: skip
    log = tmp_path / "replay-live.log"
    run = kc.spawn([sys.executable, "-m", "logdoctor", "replay", *args, "--apply", "--max-rate", "4"],
                   log=log)  # fmt: skip
    stop = threading.Event()
    committed: list[object] = []

    def consume() -> None:  # a consumer of the application, with the client's defaults
        c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "mid", "auto.offset.reset": "latest",
                      "enable.auto.commit": True, "auto.commit.interval.ms": 200,
                      "on_commit": lambda err, parts: committed.append(err)})  # fmt: skip
        c.subscribe([topic])
        try:
            while not stop.is_set():
                c.poll(0.2)
        finally:
            c.close()

    kc.wait_until(
        f"the replay to create {topic}", lambda: topic in target.admin().list_topics(timeout=10).topics
    )
    consumer = threading.Thread(target=consume)
    consumer.start()
    try:
        kc.wait_until("the consumer to commit on the target", lambda: None in committed, 60)
        assert run.poll() is None, "the replay ended before the consumer committed: slow it down"
        assert run.wait(120) == 78, log.read_text()[-3000:]
    finally:
        stop.set()
        consumer.join(30)
    assert "no replay committed it" in log.read_text()

    # the records its consumers skip when they resume at the offset they committed: the target's own
    # records of events-0 from the 13th (the source's commit, 12) up to that offset
    admin = target.admin()  # kept while its future pends
    request = [ConsumerGroupTopicPartitions("mid", [TopicPartition(topic, 0)])]
    at = admin.list_consumer_group_offsets(request)["mid"].result(30).topic_partitions[0].offset
    offsets = [r[0] for r in kc.read_all(target.bootstrap, topic, 0)]
    skipped = sum(1 for o in offsets[12:] if o < at)
    assert skipped > 0
    plan = kc.logdoctor("replay", *args)
    assert plan.returncode == 78, plan.stdout + plan.stderr
    text = " ".join(plan.stdout.split())
    assert "GROUP_COMMITTED_ON_TARGET" in text
    assert f"{topic}-0 at {at}, not {offsets[12]}: its consumers skip {skipped} replayed record(s)" in text

    moved = kc.logdoctor("replay", *args, "--groups-overwrite", "--apply")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "(--groups-overwrite)" in moved.stdout
    assert resume(target.bootstrap, "mid", topic, 0) == oracle[("mid", "events", 0)]
    assert resume(target.bootstrap, "mid", topic, 1) == oracle[("mid", "events", 1)]
    again = kc.logdoctor("replay", *args)  # the replay committed it: nothing to say
    assert again.returncode == 0 and "No conflict." in again.stdout, again.stdout + again.stderr


def test_group_committed_before_replay(source, target) -> None:
    """Issue 87 item 3: a group first committed on the target by someone else (here by hand, on the empty
    target topic the replay will fill) is ``GROUP_COMMITTED_ON_TARGET`` in the first plan already: after
    the replay its consumers would resume there, not at the translated offset. Before, no conflict, and
    ``--apply`` "kept" it, exit 0."""
    from confluent_kafka import TopicPartition

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, plan_groups, plan_replay

    log_dir, _oracle, _metadata = source
    target.create_topic("txn-hand", 1)
    c = _consumer(target.bootstrap, "aborted")
    c.commit(offsets=[TopicPartition("txn-hand", 0, 0)], asynchronous=False)
    c.close()
    plan = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="txn"),
                       topic_map=TopicMap({"txn": "txn-hand"}))  # fmt: skip
    plan_groups(plan, "aborted")
    conflicts = plan.all_conflicts()
    assert [c.code for c in conflicts] == ["GROUP_COMMITTED_ON_TARGET"], conflicts
    assert "txn-hand-0 at 0 (its consumers resume there" in conflicts[0].message
    overwrite = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="txn"),
                            topic_map=TopicMap({"txn": "txn-hand"}))  # fmt: skip
    plan_groups(overwrite, "aborted", overwrite=True)
    assert overwrite.all_conflicts() == []


def test_first_groups_plan_while_the_coordinator_comes(source, tmp_path: Path) -> None:
    """Issue 87 item 6: the first ``--groups`` plan against a target with no ``__consumer_offsets`` yet.
    The first FindCoordinator has the broker create it; while it cannot (here: a replication factor of 2
    and one of the two brokers up, as a cluster whose brokers are still starting, or one whose creation of
    the default 50 partitions outlasts librdkafka's two retries), the coordinator is not available, and
    librdkafka 2.16's DescribeConsumerGroups whose FindCoordinator is answered so three times waits its
    whole request timeout without an answer. The plan waits for the topic (its metadata) while a consumer of
    the group asks for the coordinator, and prints the groups once the second broker is up: exit 0.
    Before, its one request waited out --timeout: exit 69 "cannot be reached" (or a traceback), while the
    target answered."""
    import subprocess

    log_dir, _oracle, _metadata = source
    cluster = kc.KafkaCluster(tmp_path / "fresh-target", brokers=2)
    assert cluster.controller is not None
    try:
        cluster.format()
        cluster.controller.start(wait=False)
        first, second = cluster.broker(1), cluster.broker(2)
        first.start()
        cluster.wait_brokers_registered([first])
        proc = subprocess.Popen(
            [sys.executable, "-m", "logdoctor", "replay", str(log_dir), "--bootstrap-server",
             f"127.0.0.1:{first.port}", "--topics", "events", "--groups", "mid", "--timeout", "45", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(4)  # its first coordinator request under way, unanswerable with one broker
        second.start()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
        (group,) = json.loads(out)["plan"]["groups"]
        assert group["group"] == "mid" and group["target_state"] in ("DEAD", "ABSENT")
    finally:
        cluster.stop()


def test_cut_at_clamps_the_groups_into_the_cut(source, target) -> None:
    """``replay --cut-at T --groups .*`` (the plan): T after every ``events`` record (stamped BASE_TS + i,
    partition 1's BASE_TS + 100 + i: one batch per partition, partition 1's past T) and before the
    transactions' markers (the broker stamps them now, an hour after BASE_TS). So events-0 is replayed
    whole, events-1 not at all, txn-0 only its plain record p1 (offset 6, stamped BASE_TS + 5, after the
    first transaction's first offset 0). Each partition's cut end offset: events-0 its log end 30,
    events-1 and txn-0 0. Each group's offset past it is clamped to it: mid's 20 on events-1, aborted's 4
    on txn-0, txn-committed's 7 on events-1; mid's 12 on events-0 is kept."""
    log_dir, _oracle, _metadata = source
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", TOPICS, "--topic-map",
            "events=events-cut", "--topic-map", "txn=txn-cut", "--groups", ".*",
            "--cut-at", str(BASE_TS + 50)]  # fmt: skip
    plan = kc.logdoctor_json("replay", *args)["plan"]
    parts = {(p["source"]["topic"], p["source"]["partition"]): p for p in plan["partitions"]}
    # what the cut leaves out of what read_committed reads: events-1's 20 records, txn-0's c1, c2, c3
    assert {k: (p["records"], p["cut_end_offset"], p["cut_records_left_out"]) for k, p in parts.items()} == {
        ("events", 0): (30, 30, 0),
        ("events", 1): (0, 0, 20),
        ("txn", 0): (1, 0, 3),
    }, parts
    clamped = {
        (g["group"], p["source"]["topic"], p["source"]["partition"]): (p["before"], p["cut_from"])
        for g in plan["groups"]
        for p in g["partitions"]
    }
    assert clamped == {
        ("mid", "events", 0): (12, None),
        ("mid", "events", 1): (0, 20),
        ("aborted", "txn", 0): (0, 4),
        ("txn-aborted", "events", 0): (5, None),
        ("txn-committed", "events", 1): (0, 7),
    }, clamped
    text = kc.logdoctor("replay", *args)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "events-1 -> events-cut-1: 0 -> after the replay" in text.stdout, text.stdout
    assert "(committed at 20, past the cut: clamped)" in text.stdout, text.stdout
    assert "ends at offset 0 (groups past it resume there), 20 record(s) left out by it" in text.stdout

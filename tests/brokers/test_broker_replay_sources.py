"""Issue 87 items 1 and 2 with real brokers (Kafka 4.4.0): whose records a replay's progress is, and which
copy of a partition held in several log dirs a replay sends.

1. ``test_another_cluster_same_names``: two dead clusters, A and B, each with a topic ``orders`` (their own
   cluster id and topic id; B with more records). A's ``orders`` is replayed into the target; B's planned
   into the same target topic is ``PROGRESS_OF_OTHER_SOURCE`` (the progress names A's cluster id and topic
   id), ``--apply`` refuses (exit 78) and the target holds A's records alone. Before the progress named its
   source, the plan "resumed" A's progress and skipped B's first records.
2. ``test_progress_without_source_resumes``: a progress committed as the replay committed it before it
   named its source (version 1: the topic and partition alone, written here with the admin client) is
   resumed by a rerun of the same source, which then commits the source's names.
3. ``test_several_replicas_reference``: a real unclean election (two brokers, a controller of their own):
   broker 1 holds the longer log in the older leader epoch, broker 2, elected uncleanly, the shorter one in
   the newer epoch. Replaying both log dirs is ``SEVERAL_REPLICAS``; accepted (``--ignore-conflict
   SEVERAL_REPLICAS --apply``), broker 2's copy is replayed (the replica rules' reference: the newest
   leader epoch, then the longest log), every record a consumer of broker 2 read, and the plan and the
   result name that copy. Before, neither copy was replayed ("Replayed 0 records", exit 0).
"""

from __future__ import annotations

import json
import time

import pytest

import kafka_cluster as kc

pytestmark = pytest.mark.kafka

BASE_TS = int(time.time() * 1000) - 3_600_000  # within the target's retention


def _content(rows: list[tuple]) -> list[tuple]:
    return [(k, v, h, ts) for _o, k, v, h, ts in rows]


def _dead_cluster(root, tag: str, count: int):
    """A cluster with topic ``orders`` of ``count`` records, stopped: (its log dir, the oracle, its id)."""
    cluster = kc.KafkaCluster(root)
    cluster.start()
    try:
        cluster.create_topic("orders", 1)
        records = [(f"{tag}-k{i}".encode(), f"{tag}-order-{i}".encode()) for i in range(count)]
        cluster.produce("orders", records, timestamps=[BASE_TS + i for i in range(count)])
        oracle = kc.read_all(cluster.bootstrap, "orders", 0)
    finally:
        cluster.stop()
    assert len(oracle) == count
    return cluster.broker(1).log_dirs[0], oracle, cluster.cluster_id


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory):
    """Clusters A (30 records) and B (40) of the same topic name, both dead."""
    return {
        "A": _dead_cluster(tmp_path_factory.mktemp("replay-source-a"), "a", 30),
        "B": _dead_cluster(tmp_path_factory.mktemp("replay-source-b"), "b", 40),
    }


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    with kc.KafkaCluster(tmp_path_factory.mktemp("replay-sources-target")) as cluster:
        yield cluster


def _plan(log_dir, target, topic: str = "orders"):
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, plan_replay

    return plan_replay(
        [str(log_dir)],
        target.bootstrap,
        opts=ReadOptions(topics="orders"),
        topic_map=TopicMap({"orders": topic}),
    )


def test_another_cluster_same_names(sources, target) -> None:
    from logdoctor.replay import ReplayRefused, apply_replay

    a_dir, a_oracle, a_cluster = sources["A"]
    b_dir, _b_oracle, b_cluster = sources["B"]
    assert a_cluster != b_cluster
    first = _plan(a_dir, target)
    assert first.all_conflicts() == []
    assert apply_replay(first).records == 30

    plan = _plan(b_dir, target)
    conflicts = plan.all_conflicts()
    assert [c.code for c in conflicts] == ["PROGRESS_OF_OTHER_SOURCE"], conflicts
    assert a_cluster in conflicts[0].message and b_cluster in conflicts[0].message
    assert first.partitions[0].source_id[0] == a_cluster and first.partitions[0].source_id[1]
    assert plan.partitions[0].progress.source_id == first.partitions[0].source_id
    with pytest.raises(ReplayRefused):
        apply_replay(plan)
    # accepted or not, the target partition's progress is A's: apply refuses B's records there
    with pytest.raises(ReplayRefused, match="holds the replay of orders-0 of cluster"):
        apply_replay(plan, ignore=["PROGRESS_OF_OTHER_SOURCE"])

    done = kc.logdoctor("replay", str(b_dir), "--bootstrap-server", target.bootstrap, "--topics", "orders",
                        "--apply")  # fmt: skip
    assert done.returncode == 78, done.stdout + done.stderr
    assert "PROGRESS_OF_OTHER_SOURCE" in done.stdout and "No conflict" not in done.stdout
    assert _content(kc.read_all(target.bootstrap, "orders", 0, to_end=True)) == _content(a_oracle)


class _Stop(Exception):
    pass


def test_progress_without_source_resumes(sources, target) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    from logdoctor.replay import apply_replay

    a_dir, a_oracle, _a_cluster = sources["A"]
    topic = "orders-legacy"
    plan = _plan(a_dir, target, topic)

    def stop(_pp, _prog) -> None:
        raise _Stop

    with pytest.raises(_Stop):  # one transaction of 10 records committed, then the replay stops
        apply_replay(plan, txn_records=10, on_transaction=stop)
    group = plan.partitions[0].group
    admin = target.admin()
    got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])
    tp = got[group].result(30).topic_partitions[0]
    committed = json.loads(tp.metadata)
    assert committed["cluster"] and committed["topic_id"]
    # the progress as the replay committed it before it named its source: version 1, topic and partition
    legacy = {"logdoctor-replay": 1, "source": ["orders", 0], "next": committed["next"],
              "first": committed["first"], "records": committed["records"]}  # fmt: skip
    assert committed["records"] == 10
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, tp.offset, json.dumps(legacy))])
    assert admin.alter_consumer_group_offsets([request])[group].result(30).topic_partitions[0].error is None

    again = _plan(a_dir, target, topic)
    assert again.all_conflicts() == []
    pp = again.partitions[0]
    assert pp.progress.source_id is None and pp.progress.records == 10 and pp.remaining_records == 20
    assert apply_replay(again).records == 20
    assert _content(kc.read_all(target.bootstrap, topic, 0, to_end=True)) == _content(a_oracle)
    final = _plan(a_dir, target, topic)
    assert final.all_conflicts() == [] and final.remaining_records == 0
    assert final.partitions[0].progress.source_id == pp.source_id  # the source named from now on


# --- item 2: the same partition in two log dirs ------------------------------------------------------------

TOPIC = "dup"
BEFORE, ALONE, NEW = 20, 15, 5  # on both brokers; on broker 1 alone; on broker 2 after its election


def _describe_from(cluster: kc.KafkaCluster, broker: int) -> dict:
    return cluster.describe(TOPIC, bootstrap=cluster.bootstrap_of([cluster.broker(broker)]))[0]


def _records(tag: str, count: int, at: int) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    return [(f"{tag}-{i}".encode(), f"{tag}-value-{i}".encode()) for i in range(count)], [
        BASE_TS + at + i for i in range(count)
    ]


@pytest.fixture(scope="module")
def unclean(tmp_path_factory: pytest.TempPathFactory):
    """Broker 1's and broker 2's log dirs after an unclean election of broker 2, and what a consumer of
    broker 2 (the last leader) read."""
    cluster = kc.KafkaCluster(tmp_path_factory.mktemp("replay-unclean"), brokers=2)
    cluster.start()
    try:
        one, two = cluster.broker(1), cluster.broker(2)
        cluster.tool(
            "kafka-topics.sh", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC,
            "--replica-assignment", "1:2", "--config", "min.insync.replicas=1",
            "--config", "unclean.leader.election.enable=true",
        )  # fmt: skip

        def in_sync(leader: int, isr: list[int]) -> bool:
            d = _describe_from(cluster, leader)
            return d["leader"] == leader and sorted(d["isr"]) == isr

        kc.wait_until("broker 1 to lead with the ISR [1, 2]", lambda: in_sync(1, [1, 2]), 90)
        recs, ts = _records("before", BEFORE, 0)
        cluster.produce(TOPIC, recs, timestamps=ts)
        kc.wait_until("both in sync", lambda: in_sync(1, [1, 2]), 90)
        two.stop()
        kc.wait_until("the ISR to shrink to [1]", lambda: _describe_from(cluster, 1)["isr"] == [1], 90)
        recs, ts = _records("alone", ALONE, 1000)
        cluster.produce(TOPIC, recs, timestamps=ts, bootstrap_servers=cluster.bootstrap_of([one]))
        one.kill()
        two.start()
        kc.wait_until("broker 2 to lead", lambda: _describe_from(cluster, 2)["leader"] == 2, 120)
        recs, ts = _records("new", NEW, 2000)
        cluster.produce(TOPIC, recs, timestamps=ts, bootstrap_servers=cluster.bootstrap_of([two]))
        oracle = kc.read_all(cluster.bootstrap_of([two]), TOPIC, 0)
    finally:
        cluster.stop()
    assert [r[1] for r in oracle] == [f"before-{i}".encode() for i in range(BEFORE)] + [
        f"new-{i}".encode() for i in range(NEW)
    ]
    return str(cluster.broker(1).log_dirs[0]), str(cluster.broker(2).log_dirs[0]), oracle


def test_several_replicas_reference(unclean, target) -> None:
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import ReplayRefused, apply_replay, plan_replay

    one, two, oracle = unclean
    # broker 1's copy first, and the longer one (older epoch): neither the first nor the longest is the
    # reference
    done = kc.logdoctor("replay", one, two, "--bootstrap-server", target.bootstrap, "--topics", TOPIC,
                        "--ignore-conflict", "SEVERAL_REPLICAS", "--apply")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())  # the lines as printed, unwrapped
    assert f"Replayed {BEFORE + NEW} records of 1 partition(s)" in text
    assert _content(kc.read_all(target.bootstrap, TOPIC, 0, to_end=True)) == _content(oracle)
    assert f"copy: {two}'s, the reference of the copies in" in text
    assert f"{TOPIC}-0 -> {TOPIC}-0: {BEFORE + NEW} records" in text and f"the copy in {two}" in text

    plan = plan_replay([one, two], target.bootstrap, opts=ReadOptions(topics=TOPIC))
    conflicts = plan.all_conflicts()
    assert [c.code for c in conflicts] == ["SEVERAL_REPLICAS"], conflicts
    assert f"replays the copy in {two} " in conflicts[0].message
    [pp] = plan.partitions
    assert pp.log_dir == two and pp.copies == sorted([one, two]) and pp.records == BEFORE + NEW
    assert pp.remaining_records == 0  # the rerun resumes the same copy: nothing left
    with pytest.raises(ReplayRefused):  # not accepted: refused
        apply_replay(plan)

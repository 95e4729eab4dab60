"""Who loses what, with a live broker's verdict: a hanging transaction (``TRANSACTION_HANGING``) and consumer
groups whose committed offsets retention left behind (``CONSUMER_OFFSET_OUT_OF_RANGE``), found by
``logdoctor scan`` in a running Kafka 4.4.0 broker's log dir and checked against what the broker and
Kafka's own tools say (docs/who-loses-what.md).

- A transactional producer is SIGKILLed mid-transaction. While the transaction coordinator still holds
  the transaction (Ongoing, the partition listed) it is the coordinator's to abort: ``find-hanging`` lists
  nothing and the scan, reading ``__transaction_state`` in the same log dir, finds no
  ``TRANSACTION_STATE_MISMATCH``. Then the coordinator loses its state (``__transaction_state`` emptied
  while the broker is stopped, as after an unclean election of that topic's partitions): no marker will
  ever come, the last stable offset stays at the transaction's first offset and ``read_committed``
  consumers see nothing after it. The scan names the transaction (``TRANSACTION_HANGING`` and the
  ``open-in-log`` mismatch) with the producer, epoch, first offset and last write that the
  ``find-hanging`` it prints lists; its abort command, run as printed (the placeholders ``HOST:PORT`` and
  ``ID`` filled with the broker's address and the ``node.id`` of its meta.properties, as an operator fills
  them), ends it: ``find-hanging`` then lists nothing, a ``read_committed`` consumer reads the records
  after it and never the aborted ones, and the scan finds nothing in the partition
  (K:tools/.../TransactionsCommand.java ``AbortTransactionCommand``: the producer is found by
  ``--start-offset`` in DescribeProducers, the ABORT marker written by WriteTxnMarkers;
  ``FindHangingTransactionsCommand``: open for longer than ``--max-transaction-timeout`` by the
  producer's last timestamp, and not held by its coordinator).
- Consumer groups of both protocols (classic, and KIP-848's ``group.protocol=consumer``) commit offsets,
  then time retention deletes the oldest segments: the groups and partitions the scan names are exactly
  those ``kafka-consumer-groups.sh --describe --all-groups`` shows committed below the log start
  ``kafka-get-offsets.sh --time -2`` gives (or beyond the log end it shows), with the same offsets.

One broker for the module (KRaft, combined), with the retention task started at once and run every half
second (``log.initial.task.delay.ms``, an internal config of LogManager's tasks, K:server-common/.../
ServerLogConfigs.java).
"""

from __future__ import annotations

import re
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster, logdoctor_json, run_printed, spawn, wait_until

pytestmark = pytest.mark.kafka

TXN_MAX_TIMEOUT_MS = 720_000  # the broker's transaction.max.timeout.ms (12 minutes, not Kafka's default)
LATE_BUFFER_MS = 5 * 60 * 1000  # ProducerStateManager.LATE_TRANSACTION_BUFFER_MS


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("txn-groups")
    cluster = KafkaCluster(
        root,
        version=kafka_cluster.NEWEST,
        broker_config={
            "transaction.max.timeout.ms": TXN_MAX_TIMEOUT_MS,
            "log.retention.check.interval.ms": 500,
            "log.initial.task.delay.ms": 0,
        },
    )
    with cluster:
        yield cluster


def _scan(cluster: KafkaCluster) -> dict:
    """``logdoctor scan --json`` of the broker's log dir (running or stopped), with its server.properties
    (transaction.max.timeout.ms)."""
    node = cluster.broker(1)
    return logdoctor_json("scan", str(node.log_dirs[0]), "--server-properties", str(node.properties))


def _findings(report: dict, code: str, topic: str) -> list[dict]:
    """The scan's findings ``code`` of ``topic``'s partitions."""
    return [f for f in report["findings"] if f["code"] == code and f["details"].get("topic") == topic]


# -- a hanging transaction ----------

# a transactional producer that writes its records and waits to be killed: its records carry a CreateTime
# half an hour old, so that the transaction is late both for the broker's rule (hasLateTransaction, on the
# producer's last timestamp) and for find-hanging (now - lastTimestamp), while the coordinator, on its own
# clock, would abort it only after transaction.timeout.ms (10 minutes) from now
PRODUCER = r"""
import sys, time
from confluent_kafka import Producer

bootstrap, topic, count, age_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
producer = Producer({
    "bootstrap.servers": bootstrap,
    "transactional.id": topic + "-writer",
    "transaction.timeout.ms": 600000,
})
producer.init_transactions(60)
producer.begin_transaction()
acked = []
stamp = int(time.time() * 1000) - age_ms
for i in range(count):
    producer.produce(
        topic, key=b"txn-%d" % i, value=b"aborted-%d" % i, partition=0, timestamp=stamp + i,
        on_delivery=lambda err, msg: acked.append(str(err) if err else msg.offset()),
    )
producer.flush(60)
print("ACKED", " ".join(map(str, acked)), flush=True)
time.sleep(3600)
"""


def _transactional_write_then_sigkill(
    cluster: KafkaCluster, topic: str, count: int, folder: Path
) -> list[int]:
    """``count`` records of one transaction written (acknowledged) by a producer that is then SIGKILLed:
    the transaction stays open; their offsets."""
    log = folder / f"{topic}-producer.log"
    proc = spawn(
        [sys.executable, "-c", PRODUCER, cluster.bootstrap, topic, str(count), str(30 * 60_000)], log=log
    )
    try:
        line = wait_until(
            "the transactional producer's records acknowledged",
            lambda: re.search(r"^ACKED (.*)$", log.read_text(), re.M),
            120,
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    offsets = [int(x) for x in line.group(1).split()]
    assert len(offsets) == count, log.read_text()
    return offsets


def _table(text: str) -> list[dict[str, str]]:
    """The rows of a table Kafka's tools print (ToolsUtils.prettyPrintTable: a header line, then rows)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0]
    return [dict(zip(header, row, strict=True)) for row in lines[1:]]


def _find_hanging(cluster: KafkaCluster, topic: str) -> list[dict[str, str]]:
    done = cluster.tool(
        "kafka-transactions.sh", "--bootstrap-server", cluster.bootstrap, "find-hanging", "--topic", topic
    )
    return _table(done.stdout)


def _node_id(log_dir: Path) -> str:
    """The broker's id as an operator reads it on the host: ``node.id`` of the log dir's meta.properties."""
    found = re.search(r"^node\.id=(\d+)$", (log_dir / "meta.properties").read_text(), re.M)
    assert found
    return found.group(1)


def _printed(fix: str) -> list[str]:
    """The commands a finding's fix text prints (its backticked spans)."""
    return re.findall(r"`([^`]+)`", fix)


def test_a_hanging_transaction_is_named_and_its_printed_abort_ends_it(
    cluster: KafkaCluster, tmp_path: Path
) -> None:
    """A transaction whose producer died and whose coordinator lost it: the scan's TRANSACTION_HANGING is
    the transaction ``find-hanging`` lists (producer, epoch, first offset, last write), and the abort it
    prints, run as printed, ends it for the broker. The scan runs next to the running broker (read-only)."""
    topic = "payments"
    cluster.create_topic(topic, 1, 1)
    before = cluster.produce(topic, [(b"k%d" % i, b"before-%d" % i) for i in range(3)])
    aborted = _transactional_write_then_sigkill(cluster, topic, 4, tmp_path)
    after = cluster.produce(topic, [(b"a%d" % i, b"after-%d" % i) for i in range(5)])
    assert before == [0, 1, 2] and aborted == [3, 4, 5, 6] and after == [7, 8, 9, 10, 11]
    # the broker's view: read_committed stops at the open transaction's first offset
    assert [o for o, _k, _v in cluster.consume(topic, timeout=30)] == before

    # the coordinator still holds the transaction (Ongoing, this partition listed, to be aborted on its own
    # clock): find-hanging leaves it to it, and the scan, which reads __transaction_state in the same log
    # dir, finds no TRANSACTION_STATE_MISMATCH; the transaction is late all the same (its producer's last
    # write half an hour before the partition's newest record: ProducerStateManager.hasLateTransaction)
    assert _find_hanging(cluster, topic) == []
    report = _scan(cluster)
    assert len(_findings(report, "TRANSACTION_HANGING", topic)) == 1
    assert _findings(report, "TRANSACTION_STATE_MISMATCH", topic) == []

    # the coordinator loses its state (broker stopped, __transaction_state's folders removed, as after an
    # unclean election of that topic's partitions): no marker will ever come
    node = cluster.broker(1)
    log_dir = node.log_dirs[0]
    node.stop()
    # stopped cleanly, as the scan usually meets a broker: the producer state comes from the snapshot the
    # broker wrote at its log end (the transaction open in it), not from replaying the log
    assert (log_dir / ".kafka_cleanshutdown").is_file()
    assert (log_dir / f"{topic}-0" / "00000000000000000012.snapshot").is_file()
    report = _scan(cluster)
    assert [f["details"]["first_offset"] for f in _findings(report, "TRANSACTION_HANGING", topic)] == [3]
    assert _findings(report, "TRANSACTION_STATE_MISMATCH", topic) == []
    wiped = list(log_dir.glob("__transaction_state-*"))
    assert wiped
    for folder in wiped:
        shutil.rmtree(folder)
    node.start()
    cluster.wait_brokers_registered([node])
    # (read once the partition serves again after the restart)
    got = wait_until("a read_committed read", lambda: ([o for o, _k, _v in cluster.consume(topic)],), 60)
    assert got[0] == before

    report = _scan(cluster)
    (hanging,) = _findings(report, "TRANSACTION_HANGING", topic)
    (mismatch,) = _findings(report, "TRANSACTION_STATE_MISMATCH", topic)
    d = hanging["details"]
    assert (d["first_offset"], d["last_stable_offset"], d["log_end_offset"]) == (3, 3, 12)
    assert d["records_above"] == len(aborted) + len(after) and d["control_records_above"] == 0
    assert d["transaction_max_timeout_ms"] == TXN_MAX_TIMEOUT_MS  # from --server-properties
    assert d["newest_timestamp"] - d["last_timestamp"] > TXN_MAX_TIMEOUT_MS + LATE_BUFFER_MS
    m = mismatch["details"]
    assert (m["case"], m["producer_id"], m["first_offset"]) == ("open-in-log", d["producer_id"], 3)
    abort, find_hanging = _printed(hanging["fix"])
    assert abort == d["command_for_running_cluster"] == m["command_for_running_cluster"]

    # the printed commands are for the running cluster: their placeholders, the cluster's address
    # (HOST:PORT) and the broker's id (ID), are filled as the operator fills them
    assert abort.count("HOST:PORT") == 1 and find_hanging.count("HOST:PORT") == find_hanging.count("ID") == 1
    fill = {"HOST:PORT": cluster.bootstrap, " ID": " " + _node_id(log_dir)}
    for placeholder, value in fill.items():
        abort, find_hanging = abort.replace(placeholder, value), find_hanging.replace(placeholder, value)

    # Kafka's own search finds the same transaction: producer, epoch, first offset and last write
    def hanging_listed():
        done = run_printed(find_hanging)
        assert done.returncode == 0, done.stdout + done.stderr
        return _table(done.stdout)

    (listed,) = wait_until("the printed find-hanging to list the transaction", hanging_listed, 60)
    assert (listed["Topic"], listed["Partition"], listed["StartOffset"]) == (topic, "0", "3")
    assert (int(listed["ProducerId"]), int(listed["ProducerEpoch"]), int(listed["LastTimestamp"])) == (
        d["producer_id"],
        d["producer_epoch"],
        d["last_timestamp"],
    )

    done = run_printed(abort)
    assert done.returncode == 0, done.stdout + done.stderr

    # the broker's verdict: the ABORT marker written (offset 12), the records after the transaction visible
    # to read_committed, the aborted ones never; nothing hanging any more, for find-hanging and the scan
    def committed_read():
        got = [o for o, _k, _v in cluster.consume(topic, timeout=30)]
        return got if got != before else None

    assert wait_until("read_committed to read past the transaction", committed_read, 60) == before + after
    uncommitted = cluster.consume(topic, isolation="read_uncommitted", timeout=30)
    assert [o for o, _k, _v in uncommitted] == before + aborted + after
    assert hanging_listed() == []
    report = _scan(cluster)
    assert [f["code"] for f in report["findings"] if f"{topic}-0" in (f["path"] or "")] == []
    assert _findings(report, "TRANSACTION_STATE_MISMATCH", topic) == []


# -- consumer offsets out of range ----------

DAY_MS = 86_400_000


def _commit(cluster: KafkaCluster, group: str, topic: str, offsets: dict[int, int], *, protocol: str) -> None:
    """``group`` commits ``offsets`` (partition -> offset) of ``topic`` and leaves: with the classic protocol
    as a consumer that assigned itself the partitions (generation -1, a simple group), with KIP-848's
    ``group.protocol=consumer`` as the member the coordinator assigned them to."""
    from confluent_kafka import Consumer, TopicPartition

    config = {"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False}
    if protocol == "consumer":
        consumer = Consumer({**config, "group.protocol": "consumer"})
        assigned: list = []
        consumer.subscribe([topic], on_assign=lambda _c, parts: assigned.extend(parts))
        wait_until(f"{group}'s assignment", lambda: (consumer.poll(0.2), assigned)[1], 60)
    else:
        consumer = Consumer(config)
    try:
        done = consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
        assert all(tp.error is None for tp in done), done
    finally:
        consumer.close()


def _resumes_at(cluster: KafkaCluster, group: str, topic: str, partition: int, reset: str) -> int:
    """Where ``group``'s consumer of ``topic``/``partition`` resumes, with ``auto.offset.reset=reset``: the
    offset of the first record it reads, or of the partition's end when it reads none (nothing committed:
    ``enable.auto.commit`` off)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": reset,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition)])  # from the group's committed offset
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is None or msg.error().code() == -191:  # a record, or _PARTITION_EOF
                return msg.offset()
            raise AssertionError(f"{group} {topic}-{partition}: {msg.error()}")
        raise AssertionError(f"{group} read nothing of {topic}-{partition} in 60 s")
    finally:
        consumer.close()


def _log_starts(cluster: KafkaCluster, topic: str) -> dict[int, int]:
    """Each partition's log start offset as Kafka's kafka-get-offsets.sh gives it (ListOffsets, earliest)."""
    done = cluster.tool(
        "kafka-get-offsets.sh", "--bootstrap-server", cluster.bootstrap, "--topic", topic, "--time", "-2"
    )
    out = {}
    for line in done.stdout.split():
        name, partition, offset = line.rsplit(":", 2)
        if name == topic:
            out[int(partition)] = int(offset)
    return out


def test_groups_retention_left_behind_are_those_kafka_consumer_groups_shows(cluster: KafkaCluster) -> None:
    """Three groups (two classic, one KIP-848) commit offsets, then time retention moves the log start
    past some of them: the scan's CONSUMER_OFFSET_OUT_OF_RANGE findings are exactly the (group, partition)
    pairs whose committed offset ``kafka-consumer-groups.sh --describe --all-groups`` shows outside
    [log start (``kafka-get-offsets.sh --time -2``), LOG-END-OFFSET], with the same three offsets, and the
    offsets each reset skips or reads again follow from them (docs/who-loses-what.md)."""
    from confluent_kafka import Consumer, ConsumerGroupType, TopicPartition
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    topic = "orders"
    cluster.create_topic(topic, 3, 1, {"segment.ms": 60_000})
    # six batches per partition, each in a segment of its own (a batch more than segment.ms after its
    # segment's first one rolls it: LogSegment.shouldRoll, timeWaitedForRoll on record timestamps): three
    # written three days ago (offsets 0-11), three in the last ten minutes (12-23)
    now = int(time.time() * 1000)
    stamps = [now - 3 * DAY_MS + i * 120_000 for i in range(3)] + [
        now - 600_000 + i * 120_000 for i in range(3)
    ]
    producer = cluster.producer()
    for partition in range(3):
        for stamp in stamps:
            cluster.produce(
                topic,
                [(b"k", b"v%d" % i) for i in range(4)],
                partition=partition,
                timestamp=stamp,
                producer=producer,
            )
    watcher = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "logdoctor-test-watermarks"})

    def ranges() -> list[tuple[int, int]]:
        return [watcher.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(3)]

    try:
        assert ranges() == [(0, 24)] * 3  # Kafka's default retention (7 days) keeps them all

        commits = {
            # group: (protocol, {partition: committed offset})
            "billing": ("classic", {0: 5, 1: 20, 2: 12}),  # p0 below the coming log start; p2 at it
            "audit": ("classic", {0: 11, 1: 30, 2: 24}),  # p0 one below it; p1 beyond the log end; p2 at it
            "shipping": ("consumer", {0: 15, 1: 3}),  # KIP-848: p1 below the coming log start
        }
        for group, (protocol, offsets) in commits.items():
            _commit(cluster, group, topic, offsets, protocol=protocol)
        admin = cluster.admin()
        listed = admin.list_consumer_groups().result(60).valid
        assert {g.group_id: g.type for g in listed if g.group_id in commits} == {
            "billing": ConsumerGroupType.CLASSIC,
            "audit": ConsumerGroupType.CLASSIC,
            "shipping": ConsumerGroupType.CONSUMER,
        }

        # retention: one day; the broker's retention task (every 500 ms) deletes the three-day-old segments
        resource = ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry("retention.ms", str(DAY_MS), incremental_operation=AlterConfigOpType.SET)
            ],
        )
        admin.incremental_alter_configs([resource])[resource].result(60)
        wait_until("retention to move every log start to 12", lambda: ranges() == [(12, 24)] * 3, 90)
    finally:
        watcher.close()

    # Kafka's verdict, with the broker up: each committed offset against its partition's log range
    starts = _log_starts(cluster, topic)
    described = cluster.tool(
        "kafka-consumer-groups.sh", "--bootstrap-server", cluster.bootstrap, "--describe", "--all-groups"
    )
    rows = [
        row
        for block in described.stdout.split("\n\n")
        for row in _table(block)
        if row.get("GROUP") in commits and row["TOPIC"] == topic
    ]
    kafka_says = {
        (r["GROUP"], int(r["PARTITION"])): (
            int(r["CURRENT-OFFSET"]),
            starts[int(r["PARTITION"])],
            int(r["LOG-END-OFFSET"]),
        )
        for r in rows
    }
    assert set(kafka_says) == {(g, p) for g, (_proto, offsets) in commits.items() for p in offsets}
    out_of_range = {key: v for key, v in kafka_says.items() if not v[1] <= v[0] <= v[2]}
    assert set(out_of_range) == {("billing", 0), ("audit", 0), ("audit", 1), ("shipping", 1)}

    # logdoctor's, from the running broker's log dir (__consumer_offsets replayed, the partitions' ranges)
    report = _scan(cluster)
    out = _findings(report, "CONSUMER_OFFSET_OUT_OF_RANGE", topic)
    found = {
        (d["group"], d["partition"]): (d["committed_offset"], d["log_start_offset"], d["log_end_offset"])
        for d in (f["details"] for f in out)
    }
    assert found == out_of_range
    for d in (f["details"] for f in out):
        below = d["committed_offset"] < d["log_start_offset"]
        assert d["earliest_skips"] == (d["log_start_offset"] - d["committed_offset"] if below else 0)
        assert d["earliest_rereads"] == (0 if below else d["log_end_offset"] - d["log_start_offset"])
        assert d["latest_skips"] == (d["log_end_offset"] - d["committed_offset"] if below else 0)

    # and the consumers' verdict when the groups come back (OFFSET_OUT_OF_RANGE, then the reset): earliest
    # resumes at the log start, latest at the log end, as the skips and rereads above count from
    for group, partition in found:
        assert _resumes_at(cluster, group, topic, partition, "earliest") == 12
        assert _resumes_at(cluster, group, topic, partition, "latest") == 24
    assert _resumes_at(cluster, "billing", topic, 1, "latest") == 20  # in range: from its commit

"""A dead broker's log with a transaction left open by a killed producer, then a committed one after it:
``export`` and ``replay`` read what a ``read_committed`` consumer of the broker, restarted on the same
log dir, reads (issue 86, item 2: one rule for what a consumer of the restarted cluster reads,
:mod:`logdoctor.logdir.coordinator`).

One real Kafka 4.4.0 broker (KRaft, its own transaction coordinator). Into ``orders``: 10 plain records;
Kafka's own Java producer (``ProducerPerformance --transactional-id hang``, ``transaction.timeout.ms``
30 s) opens a transaction, writes records and is SIGKILLed; confluent-kafka's transactional producer then
commits 15 records, and 20 plain records follow. The broker is SIGKILLed before the coordinator's 30 s run
out: its ``__transaction_state`` holds ``hang`` Ongoing, the log holds no marker for it, and the
partition's last stable offset is the open transaction's first offset.

The oracle: the same broker started again on its log dir. Its coordinator loads ``hang`` Ongoing and
aborts it once the timeout has passed (TransactionStateManager ``timedOutTransactions``); a real
``read_committed`` consumer then reads the plain records and the committed transaction after it. Before
that restart the log dir is copied, and logdoctor reads the copy:

- ``export`` (default ``--open-transactions hold``): the coordinator's state among the inputs decides:
  Ongoing aborts, so the export equals the consumer's read, record for record (offset, key, value), and
  its summary names the decision;
- ``export`` of the partition folder alone, in a log dir without ``__transaction_state``: no coordinator
  decides; ``hold`` stops at the open transaction's first offset (what that restarted broker would serve
  without its coordinator state) and says so; ``--open-transactions abort`` equals the consumer's read;
- ``replay`` of the copy into the restarted broker (as ``orders-replayed``) sends the records the consumer
  read, and its plan names the decided transaction.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kafka_cluster as kc

pytestmark = pytest.mark.kafka

VERSION = "4.4.0"
TIMEOUT_MS = 30_000


@dataclass
class Dead:
    cluster: kc.KafkaCluster
    copy: Path  # the dead broker's log dir, copied before the restart
    consumed: list[tuple[int, bytes | None, bytes | None]]  # read_committed, from the restarted broker
    open_first: int  # the open transaction's first offset (the dead broker's last stable offset)


def _offsets(cluster: kc.KafkaCluster, level: str) -> int:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    tp = TopicPartition("orders", 0)
    isolation = getattr(IsolationLevel, level)
    admin = cluster.admin()  # kept while its future is pending: a collected client cancels it
    got = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=isolation)
    return int(got[tp].result(timeout=30).offset)


@pytest.fixture(scope="module")
def dead(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dead]:
    from confluent_kafka import Producer

    root = tmp_path_factory.mktemp("open-txn")
    cluster = kc.KafkaCluster(root, version=VERSION, broker_config=kc.ABORT_TIMED_OUT_EVERY_SECOND)
    with cluster:
        cluster.create_topic("orders")
        cluster.produce("orders", [(b"plain-%02d" % i, b"before") for i in range(10)])
        argv = kc.java_tool(
            cluster.version, "org.apache.kafka.tools.ProducerPerformance", "--topic", "orders",
            "--num-records", "1000000", "--record-size", "20", "--throughput", "50",
            "--transactional-id", "hang", "--transaction-duration-ms", "600000", "--producer-props",
            f"bootstrap.servers={cluster.bootstrap}", f"transaction.timeout.ms={TIMEOUT_MS}",
        )  # fmt: skip
        perf = kc.spawn(argv, log=root / "perf.log")
        try:
            kc.wait_until(
                "the hanging producer's records",
                lambda: _offsets(cluster, "READ_UNCOMMITTED") > 12,
                90,
                every=0.05,
            )
        finally:
            perf.send_signal(signal.SIGKILL)
            perf.wait()
        open_first = _offsets(cluster, "READ_COMMITTED")
        assert open_first == 10
        later = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "later"})
        later.init_transactions(60)
        later.begin_transaction()
        for i in range(15):
            later.produce("orders", key=b"committed-%02d" % i, value=b"after", partition=0)
        later.commit_transaction(60)
        cluster.produce("orders", [(b"plain-%02d" % i, b"after") for i in range(10, 30)])
        assert (
            _offsets(cluster, "READ_COMMITTED") == open_first
        )  # still held: the coordinator has not aborted
        cluster.kill()
        log_dir = cluster.broker(1).log_dirs[0]
        copy = root / "dead-copy"
        shutil.copytree(log_dir, copy)
        cluster.start()
        cluster.wait_brokers_registered([cluster.broker(1)])
        kc.wait_until(  # the restarted coordinator aborts the timed-out transaction
            "the restarted coordinator to abort hang's transaction",
            lambda: _offsets(cluster, "READ_COMMITTED") == _offsets(cluster, "READ_UNCOMMITTED"),
            TIMEOUT_MS / 1000 + 60,
            every=0.5,
        )
        consumed = [(o, k, v) for o, k, v, *_ in kc.read_all(cluster.bootstrap, "orders", 0)]
        yield Dead(cluster, copy, consumed, open_first)


def _export(dead: Dead, out: Path, path: Path, *extra: str) -> tuple[list[tuple], dict]:
    done = kc.logdoctor(
        "export", str(path), "--out", str(out), "--topics", "orders", "--writer", "arrow", "--json", *extra
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    rows = sorted((r["offset"], r["key"], r["value"]) for r in pq.read_table(out).to_pylist())
    return rows, json.loads(done.stdout)


def _summary(report: dict) -> dict:
    (entry,) = [e for e in report["transactions"] if e["topic"] == "orders"]
    return entry


def test_the_oracle_holds_what_the_test_means(dead: Dead) -> None:
    """The restarted broker's read: the 10 plain records, then (the open transaction aborted) the 15
    committed and 20 plain records after it, none of the killed producer's."""
    keys = [k for _o, k, _v in dead.consumed]
    assert keys[:10] == [b"plain-%02d" % i for i in range(10)]
    assert sorted(k for k in keys if k and k.startswith(b"committed")) == [
        b"committed-%02d" % i for i in range(15)
    ]
    assert len(keys) == 45 and max(o for o, _k, _v in dead.consumed) > dead.open_first


def test_export_decides_by_the_coordinators_state(dead: Dead, tmp_path: Path) -> None:
    rows, report = _export(dead, tmp_path / "out", dead.copy)
    assert rows == dead.consumed
    entry = _summary(report)
    (decided,) = entry["decided_transactions"]
    assert decided["result"] == "aborted" and decided["first_offset"] == dead.open_first
    assert "is Ongoing" in decided["decided_by"] and entry["open_transactions"] == []


def test_without_the_coordinators_state_hold_stops_and_abort_reads_on(dead: Dead, tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(dead.copy / "meta.properties", alone / "meta.properties")
    shutil.copytree(dead.copy / "orders-0", alone / "orders-0")
    held, report = _export(dead, tmp_path / "held", alone / "orders-0")
    assert held == [r for r in dead.consumed if r[0] < dead.open_first]
    (open_txn,) = _summary(report)["open_transactions"]
    assert open_txn["first_offset"] == dead.open_first
    aborted, report = _export(dead, tmp_path / "aborted", alone / "orders-0", "--open-transactions", "abort")
    assert aborted == dead.consumed
    (decided,) = _summary(report)["decided_transactions"]
    assert decided["decided_by"] == "--open-transactions abort"


def test_replay_sends_what_the_restarted_broker_serves(dead: Dead) -> None:
    args = ("replay", str(dead.copy), "--bootstrap-server", dead.cluster.bootstrap, "--topics", "orders")
    args += ("--topic-map", "orders=orders-replayed")
    plan = kc.logdoctor(*args, "--json")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    (pp,) = json.loads(plan.stdout)["plan"]["partitions"]
    (decided,) = pp["transactions_without_marker"]
    assert decided["result"] == "aborted" and "is Ongoing" in decided["decided_by"]
    assert pp["records_held_back"] == 0
    done = kc.logdoctor(*args, "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [(k, v) for _o, k, v, *_ in kc.read_all(dead.cluster.bootstrap, "orders-replayed", 0)]
    assert sent == [(k, v) for _o, k, v in dead.consumed]

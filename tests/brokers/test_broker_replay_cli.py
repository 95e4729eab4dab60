"""`logdoctor replay PATHS --bootstrap-server HOST:PORT` (issue 72) with real brokers, run in a process.

A source cluster (Kafka 4.4.0, one KRaft node) is written by real clients (plain records with headers and
a tombstone; a transaction committed, one aborted) and stopped: its log dir is the dead broker's, and
what a ``read_committed`` consumer read of it while it ran is the oracle. A second cluster is the target:

- the plan prints and writes nothing (the target has no new topic), exit 0; ``--json`` parses;
- ``--apply`` replays: a ``read_committed`` consumer of the target reads exactly the oracle's records;
  ``--offset-map`` writes a Delta table whose rows pair every source offset with its target offset;
- a rerun is a no-op (nothing left to send, no new record);
- ``--view cdc`` exits 64; a plan with a conflict (a non-empty target topic) exits 78.
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


def _produce(producer, topic: str, rows: list[tuple]) -> None:
    for key, value, headers, ts in rows:
        producer.produce(topic, value=value, key=key, partition=0, headers=headers, timestamp=ts)
    assert producer.flush(60) == 0


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    """The dead broker: (its log dir, {topic: the read_committed oracle of partition 0})."""
    cluster = kc.KafkaCluster(tmp_path_factory.mktemp("replay-cli-source"))
    cluster.start()
    try:
        cluster.create_topic("orders", 1)
        cluster.create_topic("payments", 1)
        p = cluster.producer()
        rows = []
        for i in range(25):
            headers = [("trace", f"t{i}".encode())] if i % 2 else None
            value = None if i == 5 else f"order-{i}".encode()
            rows.append((f"k{i % 7}".encode(), value, headers, BASE_TS + i))
        _produce(p, "orders", rows)
        t = cluster.producer(**{"transactional.id": "cli-source"})
        t.init_transactions(60)
        t.begin_transaction()
        _produce(
            t, "payments", [(b"p1", b"paid-1", None, BASE_TS + 1), (b"p2", b"paid-2", None, BASE_TS + 2)]
        )
        t.commit_transaction(60)
        t.begin_transaction()
        _produce(t, "payments", [(b"a1", b"aborted", None, BASE_TS + 3)])
        t.abort_transaction(60)
        t.begin_transaction()
        _produce(t, "payments", [(b"p3", b"paid-3", None, BASE_TS + 4)])
        t.commit_transaction(60)
        oracle = {topic: kc.read_all(cluster.bootstrap, topic, 0) for topic in ("orders", "payments")}
        del t, p
    finally:
        cluster.stop()
    assert [r[1] for r in oracle["payments"]] == [b"p1", b"p2", b"p3"]
    return cluster.broker(1).log_dirs[0], oracle


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    with kc.KafkaCluster(tmp_path_factory.mktemp("replay-cli-target")) as cluster:
        yield cluster


def _topics(cluster: kc.KafkaCluster) -> set[str]:
    return set(cluster.admin().list_topics(timeout=10).topics)


def test_plan_apply_rerun_offset_map(source, target, tmp_path) -> None:
    log_dir, oracle = source
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "orders,payments"]
    args += ["--topic-map", "orders=orders-restored"]
    before = _topics(target)

    plan = kc.logdoctor("replay", *args)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "orders -> orders-restored: create, 1 partition(s)" in plan.stdout
    assert "orders-0 -> orders-restored-0: 25 records" in plan.stdout
    assert "payments-0 -> payments-0: 3 records" in plan.stdout
    assert "No conflict." in plan.stdout and "nothing was written" in plan.stdout
    assert _topics(target) == before  # the plan wrote nothing

    as_json = kc.logdoctor_json("replay", *args)
    assert as_json["applied"] is False
    assert as_json["plan"]["conflicts"] == [] and as_json["plan"]["remaining_records"] == 28
    assert {t["target_topic"]: t["create"] for t in as_json["plan"]["topics"]} == {
        "orders-restored": True,
        "payments": True,
    }
    assert _topics(target) == before

    table = tmp_path / "offset-map"
    done = kc.logdoctor("replay", *args, "--apply", "--offset-map", str(table))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Replayed 28 records of 2 partition(s)" in done.stdout
    assert "Offset map: 28 rows" in done.stdout
    assert _content(kc.read_all(target.bootstrap, "orders-restored", 0)) == _content(oracle["orders"])
    got_payments = kc.read_all(target.bootstrap, "payments", 0)
    assert _content(got_payments) == _content(oracle["payments"])

    from deltalake import DeltaTable

    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    assert len(rows) == 28
    pay = sorted((r for r in rows if r["source_topic"] == "payments"), key=lambda r: r["source_offset"])
    assert [r["source_offset"] for r in pay] == [r[0] for r in oracle["payments"]]
    assert [r["target_offset"] for r in pay] == [r[0] for r in got_payments]
    assert {r["target_topic"] for r in rows} == {"orders-restored", "payments"}

    again = kc.logdoctor_json("replay", *args, "--apply")
    assert again["applied"] is True and again["plan"]["remaining_records"] == 0
    assert again["result"]["records"] == 0 and again["result"]["created_topics"] == []
    assert len(kc.read_all(target.bootstrap, "payments", 0)) == 3


def test_refusals(source, target) -> None:
    log_dir, _oracle = source
    base = [str(log_dir), "--bootstrap-server", target.bootstrap]
    cdc = kc.logdoctor("replay", *base, "--view", "cdc")
    assert cdc.returncode == 64, cdc.stderr
    assert "--view cdc" in cdc.stderr

    target.create_topic("occupied", 1)
    target.produce("occupied", [(b"k", b"already here")])
    busy = kc.logdoctor("replay", *base, "--topics", "orders", "--topic-map", "orders=occupied", "--apply")
    assert busy.returncode == 78, busy.stdout + busy.stderr
    assert "TARGET_NOT_EMPTY" in busy.stdout and "Refused" in busy.stdout
    assert len(kc.read_all(target.bootstrap, "occupied", 0)) == 1

    parsed = json.loads(kc.logdoctor("replay", *base, "--topics", "orders", "--topic-map", "orders=occupied",
                                     "--json").stdout)  # fmt: skip
    assert [c["code"] for c in parsed["plan"]["conflicts"]] == ["TARGET_NOT_EMPTY"]

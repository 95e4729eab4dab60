"""`logdoctor replay PATHS --bootstrap-server HOST:PORT` (issue 72) with real brokers, run in a process.

A source cluster (Kafka 4.4.0, one KRaft node) is written by real clients (plain records with headers and
a tombstone; a transaction committed, one aborted) and stopped: its log dir is the dead broker's, and
what a ``read_committed`` consumer read of it while it ran is the oracle. A second cluster is the target:

- the plan prints and writes nothing (the target has no new topic), exit 0; ``--json`` parses;
- ``--apply`` replays: a ``read_committed`` consumer of the target reads exactly the oracle's records;
  ``--offset-map`` writes a Parquet file (the default) whose rows pair every source offset, as the source
  broker gave them, with its target offset, as the target broker gives them;
- a rerun is a no-op (nothing left to send, no new record); its ``--offset-map-format delta`` writes the same
  pairs as a Delta table;
- ``--max-rate``: the records arrive at the target (a ``read_uncommitted`` consumer reading while the
  replay runs) no faster than the rate, within a tolerance;
- ``--view cdc`` exits 64; a plan with a conflict (a non-empty target topic) exits 78;
- issue 87: a topic to create checked in the plan against the configs it will get (the target broker's
  defaults), before anything is created (item 11); batches sized to a target topic's small
  max.message.bytes (item 9); ``--offset-map`` after the target's cleaner compacted a replayed compacted
  topic (item 10: the source's cleaner is off, the target's looks every 0.3 s), same partition and
  re-hashed;
- issue 89: the target's broker SIGSTOPped while a replay takes its lease, longer than ``--timeout``: 69 and
  one line (last: it pauses the target); the codec of the source's batches (item 1: ``--compression``): a
  topic whose partitions a real producer wrote with zstd, lz4, and gzip then one uncompressed record, is
  replayed with each partition's codec (the target broker's log dir read back), or with none.
"""

from __future__ import annotations

import json
import time

import pytest

import cli_runs
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
    # no cleaner: ledger (compacted) keeps every record the test wrote, for the target's cleaner to remove
    cluster = kc.KafkaCluster(
        tmp_path_factory.mktemp("replay-cli-source"), broker_config={"log.cleaner.enable": "false"}
    )
    cluster.start()
    try:
        cluster.create_topic("orders", 1)
        cluster.create_topic("payments", 1)
        # compacted, its segments rolled by the records' timestamps, its batches small (a few records each:
        # the replay's too, sized to max.message.bytes), cleaned as soon as the target's cleaner looks
        cluster.create_topic(
            "ledger",
            1,
            config={"cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.01,
                    "max.message.bytes": 200},
        )  # fmt: skip
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
        for rnd in range(6):  # rounds of the same keys, a tombstone of k0 in round 4
            for i in range(5):
                value = None if (rnd, i) == (4, 0) else f"r{rnd}-{i}".encode()
                _produce(p, "ledger", [(f"k{i}".encode(), value, None, BASE_TS + rnd * 1000 + i)])
        _produce(p, "ledger", [(b"roll", b"x", None, BASE_TS + 10_000)])  # the last round's segment rolled
        # each partition of packed written by a producer of one codec (values that compress: librdkafka sends
        # a batch compression does not shrink uncompressed); packed-2 gzip, then one small record uncompressed
        cluster.create_topic("packed", 3)
        for part, codec, n in ((0, "zstd", 20), (1, "lz4", 20), (2, "gzip", 12), (2, "none", 1)):
            rows = [(f"k{i}".encode(), f"{codec}-{i}-".encode() * 20, [("c", codec.encode())], BASE_TS + i)
                    for i in range(n)]  # fmt: skip
            coded = cluster.producer(compression_type=codec)
            for key, value, headers, ts in rows:
                coded.produce("packed", value=value, key=key, partition=part, headers=headers, timestamp=ts)
            assert coded.flush(60) == 0
        from confluent_kafka import Consumer, TopicPartition

        reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ledger-readers"})
        reader.commit(offsets=[TopicPartition("ledger", 0, 2)], asynchronous=False)  # next: k2's first record
        reader.close()
        oracle = {
            topic: kc.read_all(cluster.bootstrap, topic, 0) for topic in ("orders", "payments", "ledger")
        } | {f"packed-{part}": kc.read_all(cluster.bootstrap, "packed", part) for part in range(3)}
        del t, p
    finally:
        cluster.stop()
    assert [r[1] for r in oracle["payments"]] == [b"p1", b"p2", b"p3"]
    return cluster.broker(1).log_dirs[0], oracle


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    # a cleaner that looks every 0.3 s (test_offset_map_after_the_target_compacted)
    with kc.KafkaCluster(
        tmp_path_factory.mktemp("replay-cli-target"), broker_config={"log.cleaner.backoff.ms": 300}
    ) as cluster:
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
    assert "Offset map: 28 rows" in done.stdout and "offset-map.parquet" in done.stdout
    got_orders = kc.read_all(target.bootstrap, "orders-restored", 0)
    assert _content(got_orders) == _content(oracle["orders"])
    got_payments = kc.read_all(target.bootstrap, "payments", 0)
    assert _content(got_payments) == _content(oracle["payments"])
    # the pairs (source offset as the source broker gave it, target offset as the target broker gives it)
    pairs = {
        ("orders", s[0], "orders-restored", t[0]) for s, t in zip(oracle["orders"], got_orders, strict=True)
    } | {("payments", s[0], "payments", t[0]) for s, t in zip(oracle["payments"], got_payments, strict=True)}

    def pairs_of(rows: list[dict]) -> set[tuple]:
        assert {(r["source_partition"], r["target_partition"]) for r in rows} == {(0, 0)}
        return {(r["source_topic"], r["source_offset"], r["target_topic"], r["target_offset"]) for r in rows}

    import pyarrow.parquet as pq

    assert sorted(p.name for p in table.iterdir()) == ["offset-map.parquet"]
    rows = pq.read_table(table / "offset-map.parquet").to_pylist()
    assert len(rows) == 28 and pairs_of(rows) == pairs

    delta = tmp_path / "offset-map-delta"
    again = kc.logdoctor_json(
        "replay", *args, "--apply", "--offset-map", str(delta), "--offset-map-format", "delta"
    )
    assert again["applied"] is True and again["plan"]["remaining_records"] == 0
    assert again["result"]["records"] == 0 and again["result"]["created_topics"] == []
    assert again["offset_map"]["format"] == "delta" and again["offset_map"]["rows"] == 28
    assert len(kc.read_all(target.bootstrap, "payments", 0)) == 3

    from deltalake import DeltaTable

    rows = DeltaTable(str(delta)).to_pyarrow_table().to_pylist()
    assert len(rows) == 28 and pairs_of(rows) == pairs
    # a folder holding something else is refused, nothing written; an unknown format is a usage error
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    busy = kc.logdoctor("replay", *args, "--apply", "--offset-map", str(other))
    assert busy.returncode == 73, busy.stdout + busy.stderr
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]
    bad = kc.logdoctor("replay", *args, "--apply", "--offset-map", str(table), "--offset-map-format", "csv")
    assert bad.returncode == 64 and "--offset-map-format" in bad.stderr


def test_max_rate(source, target) -> None:
    """``--max-rate 10`` over the 25 records of orders: a consumer reading the target while the replay
    runs (read_uncommitted: a record is there once the producer sent it, before its transaction commits)
    sees them arrive over at least ~2.4 s (the first at once, then one per 0.1 s), with a tolerance; the
    whole run is no shorter. Without the rate they arrive within a fraction of that."""
    log_dir, oracle = source
    topic = "orders-rated"
    target.create_topic(topic, 1)
    with kc.arrivals(target.bootstrap, [(topic, 0)], 25) as arrivals:
        argv = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "orders"]
        argv += ["--topic-map", f"orders={topic}", "--apply", "--max-rate", "10"]
        t0 = time.monotonic()
        done = kc.logdoctor("replay", *argv)
        wall = time.monotonic() - t0
        assert done.returncode == 0, done.stdout + done.stderr
    assert len(arrivals) == 25
    span = arrivals[-1] - arrivals[0]
    assert span >= 2.4 * 0.8, f"25 records at --max-rate 10 arrived within {span:.2f} s"
    assert wall >= 2.4
    assert _content(kc.read_all(target.bootstrap, topic, 0)) == _content(oracle["orders"])
    bad = kc.logdoctor("replay", *argv[:-1], "0")
    assert bad.returncode == 64 and "--max-rate" in bad.stderr


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


def test_client_settings_and_connections_before_any_write(source, target, tmp_path) -> None:
    """Every client setting is judged by the client library itself before anything is written (a
    transactional producer refuses max.in.flight.requests.per.connection above 5: 64, naming it and its
    file), and every client is heard from first: SASL settings against the PLAINTEXT listener, in either
    file, and a bootstrap where nothing listens exit 69. Each with one line on stderr (librdkafka's own
    log lines off) and no topic created."""
    log_dir, _oracle = source
    base = [str(log_dir), "--topics", "orders", "--topic-map", "orders=orders-settings", "--timeout", "5"]
    inflight = tmp_path / "inflight.properties"
    inflight.write_text("max.in.flight.requests.per.connection=10\n")
    sasl = tmp_path / "sasl.properties"
    sasl.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n"
    )
    before = _topics(target)
    cases = [
        (["--producer-config", str(inflight)], 64, ["--producer-config", "max.in.flight"]),
        (["--admin-config", str(inflight)], 64, ["--admin-config", "max.in.flight"]),
        (["--admin-config", str(sasl)], 69, ["cannot be reached", "admin client"]),
        (["--producer-config", str(sasl)], 69, ["cannot be reached", "transactional producer"]),
    ]
    for extra, code, said in cases:
        done = kc.logdoctor("replay", *base, "--bootstrap-server", target.bootstrap, *extra, "--apply")
        assert done.returncode == code, (extra, done.stdout, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and all(s in done.stderr for s in said), done.stderr
        # no topic made (the broker makes its __consumer_offsets when a consumer first asks for a group's
        # coordinator, as any plan's consumers do)
        assert _topics(target) - {"__consumer_offsets"} == before - {"__consumer_offsets"}
    nobody = f"127.0.0.1:{kc.free_port()}"
    gone = kc.logdoctor("replay", *base, "--bootstrap-server", nobody)
    assert gone.returncode == 69, gone.stdout + gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1, gone.stderr
    assert gone.stderr.startswith(
        f"error: {nobody}: the target cluster cannot be reached with these settings: the admin client: "
    )  # librdkafka's "timed out", or no answer within --timeout, whichever ends first


def _batches(segment) -> list[tuple[int, int, int, int]]:
    """(position, base offset, last offset, size) of each batch of a v2 segment, read by hand (the
    header's baseOffset, batchLength and lastOffsetDelta: K:clients/.../record/DefaultRecordBatch.java)."""
    import struct

    data, out, pos = segment.read_bytes(), [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((pos, base, base + delta, 12 + length))
        pos += 12 + length
    return out


def test_records_left_out_exit_1(source, target, tmp_path) -> None:
    """A torn tail (orders-0's last batch cut in half) and a CRC-damaged batch (the last byte of
    payments-0's first batch flipped): the plan names both and exits 1, as ``export`` does for the ranges
    it skips, and ``--json`` counts them; ``--apply`` replays every other record (a ``read_committed``
    consumer of the target reads the source's oracle less those batches' records) and exits 1 too."""
    import shutil

    log_dir, oracle = source
    damaged = tmp_path / "kafka-logs"
    shutil.copytree(log_dir, damaged)
    (orders,) = kc.segments(damaged / "orders-0")
    torn = _batches(orders)[-1]
    with open(orders, "r+b") as fh:
        fh.truncate(torn[0] + torn[3] // 2)
    (payments,) = kc.segments(damaged / "payments-0")
    flipped = _batches(payments)[0]
    data = bytearray(payments.read_bytes())
    data[flipped[0] + flipped[3] - 1] ^= 0xFF
    payments.write_bytes(bytes(data))
    args = [str(damaged), "--bootstrap-server", target.bootstrap, "--topics", "orders,payments",
            "--topic-map", "orders=orders-damaged", "--topic-map", "payments=payments-damaged"]  # fmt: skip

    plan = kc.logdoctor("replay", *args)
    assert plan.returncode == 1, plan.stdout + plan.stderr
    assert "batches stop here" in plan.stdout and "CRC mismatch" in plan.stdout
    assert kc.logdoctor_json("replay", *args)["ranges_not_replayed"] == 2
    done = kc.logdoctor("replay", *args, "--apply", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["ranges_not_replayed"] == 2
    want_orders = [r for r in oracle["orders"] if r[0] < torn[1]]
    assert _content(kc.read_all(target.bootstrap, "orders-damaged", 0)) == _content(want_orders)
    want_payments = [r for r in oracle["payments"] if not flipped[1] <= r[0] <= flipped[2]]
    assert [r[1] for r in want_payments] == [b"p3"]
    assert _content(kc.read_all(target.bootstrap, "payments-damaged", 0)) == _content(want_payments)


def _with_tty_stderr(*args: str) -> tuple[int, str, str]:
    """``logdoctor ARGS`` with stderr on a pseudo-terminal (a progress bar's place) and stdout a pipe:
    (exit code, stdout, what the terminal got)."""
    import os
    import pty
    import subprocess
    import sys
    import threading

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "logdoctor", *args], stdout=subprocess.PIPE, stderr=slave,
        stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    os.close(slave)
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            seen.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(10)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(seen).decode(errors="replace")


def test_progress_bar_on_a_terminal_and_clean_json(source, target) -> None:
    """On a terminal (stderr a tty) ``--apply`` draws its bar there ("replay", records done of the total);
    with ``--json`` it draws none and stdout is the JSON alone, whatever stderr is."""
    log_dir, _oracle = source
    base = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "orders", "--apply"]
    code, out, tty = _with_tty_stderr("replay", *base, "--topic-map", "orders=orders-tty")
    assert code == 0, out + tty
    assert "Replayed 25 records" in out
    assert "replay" in tty and "25/25" in tty, tty[-2000:]
    code, out, tty = _with_tty_stderr("replay", *base, "--topic-map", "orders=orders-tty-json", "--json")
    assert code == 0, out + tty
    assert json.loads(out)["result"]["records"] == 25
    assert "25/25" not in tty and "\x1b[?25l" not in tty, tty[-2000:]


def _set_broker_config(cluster: kc.KafkaCluster, key: str, value: str | None) -> None:
    """A dynamic config of broker 1 set (or deleted: None), as ``kafka-configs.sh --entity-type brokers
    --entity-name 1 --alter`` does it."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry(key, value or "", incremental_operation=op)
    admin = cluster.admin()
    for fut in admin.incremental_alter_configs(
        [ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])]
    ).values():
        fut.result(30)


def test_plan_checks_the_configs_a_created_topic_gets(source, target) -> None:
    """Issue 87 item 11: a topic the replay creates is checked against the configs it will have (the
    source's, else the target broker's defaults) in the plan, before anything is created. The target's
    broker 1 retains 10 minutes (a dynamic log.retention.ms); orders' records are an hour old: the plan
    says RETENTION_DELETES and exits 78, and so does --apply, creating no topic (it created the topic, then
    refused, and the plan said "No conflict"). The configs the plan checks equal those the broker gives a
    topic created without configs (DescribeConfigs of a topic made by the admin client)."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, plan_replay

    log_dir, _oracle = source
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "orders"]
    args += ["--topic-map", "orders=orders-retained"]
    _set_broker_config(target, "log.retention.ms", "600000")
    try:
        before = _topics(target)
        for extra in ([], ["--apply"]):
            done = kc.logdoctor("replay", *args, *extra)
            assert done.returncode == 78, (extra, done.stdout, done.stderr)
            assert "RETENTION_DELETES" in done.stdout and "retention.ms=600000" in done.stdout
            assert "No conflict" not in done.stdout
            assert _topics(target) == before  # nothing created
        plan = plan_replay([str(log_dir)], target.bootstrap, opts=ReadOptions(topics="orders"),
                           topic_map=TopicMap({"orders": "orders-retained"}))  # fmt: skip
        (tp,) = plan.topics
        assert tp.create and tp.effective["retention.ms"] == "600000"
        target.create_topic("configs-probe", 1)
        res = ConfigResource(ResourceType.TOPIC, "configs-probe")
        admin = target.admin()
        got = admin.describe_configs([res])[res].result(30)
        assert {k: got[k].value for k in tp.effective} == tp.effective
    finally:
        _set_broker_config(target, "log.retention.ms", None)


def test_batches_sized_to_the_target_topic(source, target) -> None:
    """Issue 87 item 9: a target topic whose max.message.bytes (300) takes each of orders' records but not
    a batch of many: the replay sends batches that fit (it failed with librdkafka's "Erroneous state", exit
    2, on every run), and the target holds the oracle's records."""
    log_dir, oracle = source
    target.create_topic("orders-tight", 1, config={"max.message.bytes": 300})
    argv = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "orders"]
    done = kc.logdoctor("replay", *argv, "--topic-map", "orders=orders-tight", "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _content(kc.read_all(target.bootstrap, "orders-tight", 0)) == _content(oracle["orders"])


def _removed_by_the_cleaner(rows: list[dict], source_rows: dict[int, tuple], stdout: str) -> list[int]:
    """The source offsets the map says the target's cleaner removed (some, and counted in the summary), each
    a record a later one of its key supersedes."""
    removed = [r["source_offset"] for r in rows if r["target_offset"] is None]
    assert removed and f"{len(removed)} of them no longer on the target" in stdout
    keys = [k for k, _v in source_rows.values()]
    for offset in removed:
        at = list(source_rows).index(offset)
        assert keys[at] in keys[at + 1 :], f"source offset {offset} removed, no later record of its key"
    return removed


def test_offset_map_after_the_target_compacted(source, target, tmp_path) -> None:
    """Issue 87 item 10: ledger, compacted, is replayed into a topic created with the source's configs,
    whose cleaner then removes the records a later one's key supersedes. ``--offset-map`` afterwards maps
    every record sent (exit 0; it was "key or value differ", exit 2, on every run): each record the target
    holds at the offset the target gives it (its key and value the source record's), each the cleaner
    removed with a null target_offset, and only records a later one's key supersedes are among those. A
    consumer group committed on the source at a record the target removed is carried over (``--groups``)
    to the next record the target kept."""
    import pyarrow.parquet as pq

    log_dir, oracle = source
    argv = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "ledger", "--apply"]
    done = kc.logdoctor("replay", *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    kc.wait_until(
        "the target's cleaner to compact ledger",
        lambda: len(kc.read_all(target.bootstrap, "ledger", 0, to_end=True)) < len(oracle["ledger"]),
        60,
    )
    got = {o: (k, v) for o, k, v, _h, _ts in kc.read_all(target.bootstrap, "ledger", 0, to_end=True)}
    mapped = kc.logdoctor("replay", *argv, "--offset-map", str(tmp_path / "map"))
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    rows = pq.read_table(tmp_path / "map" / "offset-map.parquet").to_pylist()
    source_rows = {o: (k, v) for o, k, v, _h, _ts in oracle["ledger"]}
    assert [r["source_offset"] for r in rows] == list(source_rows)
    kept = {
        r["target_offset"]: source_rows[r["source_offset"]] for r in rows if r["target_offset"] is not None
    }
    assert kept == got
    removed = _removed_by_the_cleaner(rows, source_rows, mapped.stdout)
    # the group committed at source offset 2 (a record the target removed) is carried over to the next
    # record the target kept: where its consumers, there, read on
    assert 2 in removed
    carried = kc.logdoctor("replay", *argv, "--groups", "ledger-readers")
    assert carried.returncode == 0, carried.stdout + carried.stderr
    want = min(r["target_offset"] for r in rows if r["source_offset"] >= 2 and r["target_offset"] is not None)
    admin = target.admin()
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = [ConsumerGroupTopicPartitions("ledger-readers", [TopicPartition("ledger", 0)])]
    (tp,) = admin.list_consumer_group_offsets(request)["ledger-readers"].result(30).topic_partitions
    assert tp.offset == want


def test_rehashed_offset_map_after_the_target_compacted(source, target, tmp_path) -> None:
    """Issue 87 item 10 with ``--partitioner default``: ledger re-hashed into a compacted topic of 3
    partitions, whose cleaner then removes the records a later one's key supersedes. ``--offset-map``
    afterwards maps every record sent (exit 0; it was "not the next record of any re-hashed source
    partition", exit 2): each kept record at the target partition and offset where the target holds its key
    and value, each removed one with a null target_offset, and only records a later one's key supersedes
    (same key, same target partition) are among those."""
    import pyarrow.parquet as pq

    log_dir, oracle = source
    target.create_topic(
        "ledger-hashed",
        3,
        config={"cleanup.policy": "compact", "segment.ms": 100, "min.cleanable.dirty.ratio": 0.01,
                "max.message.bytes": 200},
    )  # fmt: skip
    argv = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "ledger"]
    argv += ["--topic-map", "ledger=ledger-hashed", "--partitioner", "default", "--apply"]
    done = kc.logdoctor("replay", *argv)
    assert done.returncode == 0, done.stdout + done.stderr

    def held() -> dict[tuple[int, int], tuple]:
        return {
            (p, o): (k, v)
            for p in range(3)
            for o, k, v, _h, _ts in kc.read_all(target.bootstrap, "ledger-hashed", p, to_end=True)
        }

    kc.wait_until(
        "the target's cleaner to compact ledger-hashed", lambda: len(held()) < len(oracle["ledger"]), 60
    )
    got = held()
    mapped = kc.logdoctor("replay", *argv, "--offset-map", str(tmp_path / "map"))
    assert mapped.returncode == 0, mapped.stdout + mapped.stderr
    rows = pq.read_table(tmp_path / "map" / "offset-map.parquet").to_pylist()
    source_rows = {o: (k, v) for o, k, v, _h, _ts in oracle["ledger"]}
    assert sorted(r["source_offset"] for r in rows) == list(source_rows)
    kept = {
        (r["target_partition"], r["target_offset"]): source_rows[r["source_offset"]]
        for r in rows
        if r["target_offset"] is not None
    }
    assert kept == got
    removed = _removed_by_the_cleaner(rows, source_rows, mapped.stdout)
    # the same map written by Spark's writer (--master): the same rows, the cleaner's removals counted too
    # (Spark's Parquet writer said nothing of them before)
    on_spark = [*argv, "--master", "local[1]", "--offset-map", str(tmp_path / "map-spark"), "--json"]
    by_spark = kc.logdoctor("replay", *on_spark)
    assert by_spark.returncode == 0, by_spark.stdout + by_spark.stderr
    spark_rows = pq.read_table(tmp_path / "map-spark").to_pylist()
    by_offset = lambda r: r["source_offset"]  # noqa: E731
    assert sorted(spark_rows, key=by_offset) == sorted(rows, key=by_offset)
    assert json.loads(by_spark.stdout)["offset_map"]["cleaned"] == len(removed)


def test_target_paused_while_the_lease_is_taken(source, target) -> None:
    """Issue 89: the target stops answering (its broker SIGSTOPped) while a replay takes its first
    partition's lease, for longer than ``--timeout``: the replay exits 69 with one line saying the target
    cannot be reached (a time-out of the group's describe is retried within --timeout, then it is the
    documented code), not a traceback nor an empty message. Another replay's lease is held meanwhile (a
    member of the replay group), so that the replay is in its lease loop when the broker stops."""
    import os
    import signal
    import subprocess
    import sys

    from confluent_kafka import Consumer

    from logdoctor.replay.target import Target, replay_group

    log_dir, _oracle = source
    topic = "orders-paused"
    target.create_topic(topic, 1)  # nothing to create: the first request after the plan's is the lease's
    group = replay_group(Target(target.bootstrap).cluster_id, topic)
    holder = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "session.timeout.ms": 45000})
    holder.subscribe([topic])
    kc.wait_until("the other lease held", lambda: holder.poll(0.2) is None and bool(holder.assignment()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "logdoctor", "replay", str(log_dir), "--bootstrap-server", target.bootstrap,
         "--topics", "orders", "--topic-map", f"orders={topic}", "--timeout", "3", "--apply"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    broker = target.broker(1).proc
    try:
        assert proc.stdout.readline()  # the plan printed: --apply goes on to the lease, which waits
        time.sleep(2)
        broker.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        out, err = proc.communicate(timeout=60)
        waited = time.monotonic() - stopped
    finally:
        broker.send_signal(signal.SIGCONT)
        proc.kill()
        holder.close()
    assert proc.returncode == 69, out + err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: {target.bootstrap}: the target cluster cannot be reached"), err
    assert "no answer within 3 s" in err or "Timed out" in err, err
    assert waited < 20, waited  # within --timeout and a retry, not the lease's wait for the other member
    assert not kc.read_all(target.bootstrap, topic, 0)  # nothing written


def test_the_codec_of_the_source(source, target, tmp_path) -> None:
    """Issue 89 item 1: each partition's producer writes with the codec of its source batches (it wrote them
    uncompressed, whatever the source's codec): packed-0's zstd, packed-1's lz4, packed-2's gzip (twelve
    gzip records, then one uncompressed: the codec of most of the bytes, not the last batch's). The plan
    names each; the target broker's log dir holds batches of that codec alone (read by the project's batch
    reader; the transactions' markers are uncompressed control batches), ``--compression none`` writes
    none; a ``read_committed`` consumer reads the oracle's records either way. Into a topic of
    ``compression.type=gzip`` the plan names the partitions the broker recompresses (not gzip's), and the
    broker stores gzip batches alone. An unknown codec, and a
    codec key in --producer-config, are usage errors (64)."""
    from logdoctor.formats.records import iter_batches

    log_dir, oracle = source
    codecs = {0: "zstd", 1: "lz4", 2: "gzip"}
    base = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", "packed"]

    def stored(topic: str) -> dict[int, set[str]]:
        folder = target.broker(1).log_dirs[0]
        return {
            part: {
                b.compression.label
                for seg in kc.segments(folder / f"{topic}-{part}")
                for b in iter_batches(seg.read_bytes())
                if not b.is_control
            }
            for part in codecs
        }

    def lines(stdout: str) -> dict[int, str]:
        rows = stdout.splitlines()
        return {p: next(ln for ln in rows if ln.startswith(f"  packed-{p} -> ")) for p in codecs}

    plan = cli_runs.logdoctor("replay", *base)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    for part, line in lines(plan.stdout).items():
        assert line.endswith(f", {codecs[part]} batches (the source's codec)"), line
    done = cli_runs.logdoctor("replay", *base, "--apply", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    planned = json.loads(done.stdout)["plan"]
    assert planned["compression"] == "source"
    got = {
        p["source"]["partition"]: (p["source_compression"], p["compression"]) for p in planned["partitions"]
    }
    assert got == {part: (codec, codec) for part, codec in codecs.items()}
    assert stored("packed") == {part: {codec} for part, codec in codecs.items()}

    plain = cli_runs.logdoctor("replay", *base, "--topic-map", "packed=packed-plain", "--compression", "none",
                               "--apply")  # fmt: skip
    assert plain.returncode == 0, plain.stdout + plain.stderr
    for part, line in lines(plain.stdout).items():
        assert line.endswith(f", none batches (--compression; the source's {codecs[part]})"), line
    assert stored("packed-plain") == {part: {"none"} for part in codecs}
    for part in codecs:
        want = _content(oracle[f"packed-{part}"])
        assert _content(kc.read_all(target.bootstrap, "packed", part)) == want
        assert _content(kc.read_all(target.bootstrap, "packed-plain", part)) == want

    # a target topic of compression.type=gzip: the plan says which partitions the broker recompresses, and
    # the broker's log dir holds gzip batches alone
    target.create_topic("packed-gz", 3, 1, {"compression.type": "gzip"})
    gz = [*base, "--topic-map", "packed=packed-gz"]
    for part, line in lines(cli_runs.logdoctor("replay", *gz).stdout).items():
        tail = ", recompressed gzip by the broker (packed-gz's compression.type)" if part != 2 else ""
        assert line.endswith(f", {codecs[part]} batches (the source's codec){tail}"), line
    done = cli_runs.logdoctor("replay", *gz, "--apply", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    planned = json.loads(done.stdout)["plan"]["partitions"]
    recompressed = {p["source"]["partition"]: p["recompressed_as"] for p in planned}
    assert recompressed == {0: "gzip", 1: "gzip", 2: None}
    assert stored("packed-gz") == {part: {"gzip"} for part in codecs}

    bad = cli_runs.logdoctor("replay", *base, "--compression", "brotli")
    assert bad.returncode == 64 and "--compression brotli: one of source, none, gzip" in bad.stderr
    conf = tmp_path / "producer.properties"
    conf.write_text("compression.type=zstd\n")
    bad = cli_runs.logdoctor("replay", *base, "--producer-config", str(conf))
    assert bad.returncode == 64 and "compression.type: the replay sets it: --compression" in bad.stderr

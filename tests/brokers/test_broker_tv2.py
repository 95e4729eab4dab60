"""Transaction version 2 (KIP-890 part 2) as a real Kafka 4.4.0 broker writes it (issue 74): the coordinator
bumps the producer epoch at every transaction end, so each COMMIT or ABORT marker carries the epoch of the
transaction's data + 1 (K:transaction-coordinator/.../TransactionMetadata.java ``prepareAbortOrCommit``,
server-common/.../TransactionVersion.java ``supportsEpochBump``).

One KRaft broker, formatted by 4.4.0's ``StorageTool`` with its default features: ``transaction.version``
2, as ``kafka-features.sh describe`` (FeatureCommand) says and the zero checkpoint's FeatureLevelRecord
holds. Producers, each a real client:

- Kafka's own Java producer (kafka-clients 4.4.0), which speaks TV2 when the broker finalizes it:
  ``TransactionalMessageCopier`` (kafka-tools; the system tests' exactly-once copier) copies 100 records
  in transactions of 5 (20 or more) with random aborts (one in three) and its consumer offsets sent to
  the transaction (``sendOffsetsToTransaction``: transactional offset commits and markers in
  ``__consumer_offsets``);
  ``ProducerPerformance`` (``kafka-producer-perf-test.sh --transactional-id``) commits every 2 s and is
  SIGKILLed mid-transaction, which the coordinator aborts when its ``transaction.timeout.ms`` (5 s) runs
  out (the epoch fenced and bumped);
- confluent-kafka 2.16.1 (librdkafka): three commits and an abort. Its ``__transaction_state`` records say
  which transaction version it used (``ClientTransactionVersion``, tag 2 of TransactionLogValue); the
  test checks its markers by that.

Then one record stamped 50 minutes ahead is produced to each data partition: a transaction the offline
walk took for open would be late at that newest timestamp (ProducerStateManager.hasLateTransaction) and
named by TRANSACTION_HANGING. The broker is then SIGKILLed, so that its producer state is rebuilt from the
log's batches and markers (no clean-shutdown marker, no snapshot at the log end: UnifiedLog
``rebuildProducerState``), and its log dir is judged:

- ``scan``: no TRANSACTION_HANGING, no TRANSACTION_STATE_MISMATCH (the coordinator's state against the
  producer states of the partitions);
- ``export --isolation-level read_committed`` gives, record for record (offset, key, value), what a real
  ``read_committed`` consumer read from the running broker (the Spark records source's read_committed:
  aborted transactions left out by their markers, nothing at or above the last stable offset);
- ``--cut-at T`` (export, and replay's source) takes each transaction over the two partitions of ``cut``
  (confluent-kafka) and ``cut2`` (Kafka's Java producer, round robin, transaction version 2) in both or in
  neither, by its earliest marker's timestamp as ``kafka-dump-log.sh`` prints it, against what a real
  ``read_committed`` consumer read; on a copy cut between a PrepareCommit and its last marker, by that
  decision's time;
- ``dump --print-data --json`` of ``__transaction_state`` gives every field ``kafka-dump-log.sh
  --transaction-log-decoder`` prints, and of every transactional partition each marker's offset,
  producer id and epoch, type (COMMIT/ABORT) and coordinator epoch as its marker lines print them.

Producer id rollover (``NextProducerId`` when the epoch is exhausted at Short.MAX_VALUE - 1) would take
32767 transactions of one producer; instead the coordinator's state of one transactional id is moved to
epoch 32764 by one record appended to its ``__transaction_state`` partition while the broker is stopped
(:func:`_rollover`), and the real coordinator and Java producer do the rest: the ``roll`` partition holds
the old id's last transactions and the new id's first, judged by every test here.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dump_agreement import agrees
from kafka_cluster import (
    ABORT_TIMED_OUT_EVERY_SECOND,
    KafkaCluster,
    kafka_libs,
    logdoctor,
    read_all,
    spawn,
    wait_until,
)

pytestmark = pytest.mark.kafka

VERSION = "4.4.0"
# the copier's, the killed producer's, confluent-kafka's, the rollover's
TOPICS = ("out", "perf", "ck", "roll")
NEAR_EXHAUSTION = 32764  # a producer epoch two transactions below exhaustion (Short.MAX_VALUE - 1)
JAVA = ["java", "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
AHEAD_MS = 50 * 60_000  # within the broker's message.timestamp.after.max.ms (1 hour)


@dataclass
class Written:
    cluster: KafkaCluster
    log_dir: Path
    features: str
    committed: dict[str, list[tuple[int, bytes | None, bytes | None]]] = field(default_factory=dict)
    listed: dict[str, dict[str, str]] = field(default_factory=dict)  # kafka-transactions.sh list
    #: the ``cut`` topic's records as a read_committed consumer read them, per partition, and the moment
    #: between transaction B's two records (:func:`_cut_transactions`)
    cut_read: dict[int, list[tuple]] = field(default_factory=dict)
    between: int = 0
    #: ``cut2``'s records as a read_committed consumer read them (Kafka's Java producer, round robin)
    cut2_read: dict[int, list[tuple]] = field(default_factory=dict)


def _java(cluster: KafkaCluster, main: str, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [*JAVA, "-cp", f"{kafka_libs(cluster.version)}/*", main, *args],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, (main, done.stdout[-2000:], done.stderr[-2000:])
    return done


def _confluent_transactions(cluster: KafkaCluster) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "ck-txn"})
    producer.init_transactions(60)
    for i in range(4):
        producer.begin_transaction()
        for j in range(3):
            producer.produce("ck", key=b"ck-%d" % i, value=b"%d-%d" % (i, j), partition=0)
        producer.flush(60)
        if i == 2:
            producer.abort_transaction(60)
        else:
            producer.commit_transaction(60)


def _cut_transactions(cluster: KafkaCluster) -> int:
    """Topic ``cut`` (2 partitions) for ``--cut-at``: confluent-kafka's transactions A, B and C, each over
    both partitions, and plain records between them (keys: the transaction's letter, or x, w, y plain):
    A; x to partition 0; B's record to partition 0, w to partition 0, the moment returned, B's record to
    partition 1, y to partition 1, B committed; C. At the moment B has a record on either side (partition
    0's stamped before it) and commits after it."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "cut-txn"})
    producer.init_transactions(60)

    def txn(letter: bytes, *, between=None) -> None:
        producer.begin_transaction()
        producer.produce("cut", key=letter, value=letter + b"0", partition=0)
        producer.flush(60)
        if between is not None:
            between()
        producer.produce("cut", key=letter, value=letter + b"1", partition=1)
        producer.flush(60)
        producer.commit_transaction(60)
        time.sleep(0.05)

    moment: list[int] = []

    def b_between() -> None:
        cluster.produce("cut", [(b"w", b"w0")], partition=0)
        time.sleep(0.05)
        moment.append(int(time.time() * 1000))
        time.sleep(0.05)

    txn(b"a")
    cluster.produce("cut", [(b"x", b"x0")], partition=0)
    txn(b"b", between=b_between)
    cluster.produce("cut", [(b"y", b"y1")], partition=1)
    txn(b"c")
    return moment[0]


def _perf(cluster: KafkaCluster, topic: str, tid: str, records: int, *props: str) -> list[str]:
    """ProducerPerformance's argv: ``records`` to ``topic`` at 20 a second in transactions of ``tid``."""
    return [
        *JAVA,
        "-cp",
        f"{kafka_libs(cluster.version)}/*",
        "org.apache.kafka.tools.ProducerPerformance",
        *("--topic", topic, "--num-records", str(records), "--record-size", "20", "--throughput", "20"),
        *("--transactional-id", tid, "--producer-props", f"bootstrap.servers={cluster.bootstrap}", *props),
    ]


def _rollover(cluster: KafkaCluster) -> None:
    """A producer id rollover by the real coordinator, cheaply: transactional id ``rollover`` is registered
    (InitProducerId: its Empty record at epoch 0), the broker stopped, one record appended to its
    ``__transaction_state`` partition that moves it to epoch NEAR_EXHAUSTION (the coordinator's state
    is the last record of the id), the broker started again: it loads that state, and the Java producer's
    InitProducerId (epoch + 1) and two TV2 transactions reach Short.MAX_VALUE - 1, where the coordinator
    gives the producer a new id (K:transaction-coordinator/.../TransactionMetadata.java
    ``isEpochExhausted``, ``prepareAbortOrCommit``: NextProducerId, the markers at the old id's epoch
    32767, then the new id at epoch 0)."""
    from confluent_kafka import Producer

    from logdoctor.formats.internal import encode_transaction_log
    from logdoctor.formats.record_types import RecordSpec
    from logdoctor.formats.writer import build_record_batch

    Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "rollover"}).init_transactions(60)
    node = cluster.broker(1)
    node.stop()
    log = next(
        p
        for p in _partition_logs(node.log_dirs[0], "__transaction_state")
        if any(r.get("decoded", {}).get("key") == {"transactional_id": "rollover"} for r in _dump([p])[p])
    )
    rows = _dump([log])[log]
    last = [
        r for r in rows if r["type"] == "record" and r["decoded"]["key"] == {"transactional_id": "rollover"}
    ][-1]
    batch = [r for r in rows if r["type"] == "batch"][-1]
    decoded = last["decoded"]
    assert decoded["value"]["transaction_status_name"] == "Empty", decoded
    now = int(time.time() * 1000)
    value = {k: v for k, v in decoded["value"].items() if k != "transaction_status_name"}
    value.update(producer_epoch=NEAR_EXHAUSTION, transaction_last_update_timestamp_ms=now)
    key, encoded = encode_transaction_log({**decoded, "value": value})
    with open(log, "ab") as f:
        f.write(
            build_record_batch(
                [RecordSpec(encoded, key, now)],
                base_offset=batch["last_offset"] + 1,
                partition_leader_epoch=batch["partition_leader_epoch"],
            )
        )
    node.start()
    cluster.wait_brokers_registered([node])
    done = subprocess.run(
        [
            *_perf(cluster, "roll", "rollover", 40, "transaction.timeout.ms=10000"),
            "--transaction-duration-ms",
            "300",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def _listed(cluster: KafkaCluster) -> dict[str, dict[str, str]]:
    """transactional id -> its row of ``kafka-transactions.sh list`` (ProducerId, TransactionState)."""
    text = cluster.tool("kafka-transactions.sh", "--bootstrap-server", cluster.bootstrap, "list").stdout
    lines = [x.split() for x in text.splitlines() if x.strip()]
    return {row[0]: dict(zip(lines[0], row, strict=True)) for row in lines[1:]}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("tv2")
    cluster = KafkaCluster(root, version=VERSION, broker_config=ABORT_TIMED_OUT_EVERY_SECOND)
    with cluster:
        features = _java(
            cluster,
            "org.apache.kafka.tools.FeatureCommand",
            "--bootstrap-server",
            cluster.bootstrap,
            "describe",
        ).stdout
        for topic in ("in", *TOPICS):
            cluster.create_topic(topic)
        cluster.create_topic("cut", 2)
        cluster.create_topic("cut2", 2)
        cluster.produce("in", [(b"k%03d" % i, b"v%03d" % i) for i in range(100)])
        _rollover(cluster)
        _java(
            cluster,
            "org.apache.kafka.tools.TransactionalMessageCopier",
            *("--broker-list", cluster.bootstrap, "--input-topic", "in", "--input-partition", "0"),
            *("--output-topic", "out", "--transactional-id", "copier", "--transaction-size", "5"),
            *("--enable-random-aborts", "--use-group-metadata", "--consumer-group", "copier-group"),
        )
        for attempt in range(3):  # a kill that fell between two transactions is tried again
            if _perf_killed_in_a_transaction(cluster, root / f"perf-{attempt}.log"):
                break
        else:
            raise AssertionError("three perf producers were each killed between two transactions")
        _confluent_transactions(cluster)
        between = _cut_transactions(cluster)
        round_robin = "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner"
        perf = [*_perf(cluster, "cut2", "cut2-txn", 40, round_robin), "--transaction-duration-ms", "300"]
        subprocess.run(perf, check=True, capture_output=True, timeout=120)
        # the coordinator's timeout abort of the killed producer's transaction
        wait_until(
            "the coordinator to abort perf-txn's transaction",
            lambda: _stable_offset(cluster, "perf") == _high_watermark(cluster, "perf"),
            60,
            every=0.5,
        )
        ahead = int(time.time() * 1000) + AHEAD_MS
        for topic in TOPICS:
            cluster.produce(topic, [(b"ahead", b"ahead")], timestamp=ahead)
        out = Written(cluster, cluster.broker(1).log_dirs[0], features)
        for topic in TOPICS:
            out.committed[topic] = [(o, k, v) for o, k, v, *_ in read_all(cluster.bootstrap, topic, 0)]
        out.listed = _listed(cluster)
        out.between = between
        out.cut_read = {p: read_all(cluster.bootstrap, "cut", p) for p in (0, 1)}
        out.cut2_read = {p: read_all(cluster.bootstrap, "cut2", p) for p in (0, 1)}
        # SIGKILL: no clean-shutdown marker, no producer snapshot at the log end: the broker (and the
        # scan) rebuild the producer state from the log, marker by marker
        cluster.kill()
    return out


def _perf_killed_in_a_transaction(cluster: KafkaCluster, log: Path) -> bool:
    """ProducerPerformance in transactions of ``perf-txn`` of 2 s, SIGKILLed after a commit while its next
    transaction holds records; whether one was still open after the kill (on a loaded machine it may
    commit between the look and the kill)."""
    perf = spawn(
        [
            *JAVA,
            "-cp",
            f"{kafka_libs(cluster.version)}/*",
            "org.apache.kafka.tools.ProducerPerformance",
            *("--topic", "perf", "--num-records", "1000000", "--record-size", "20", "--throughput", "50"),
            *("--transactional-id", "perf-txn", "--transaction-duration-ms", "2000"),
            *("--producer-props", f"bootstrap.servers={cluster.bootstrap}", "transaction.timeout.ms=5000"),
        ],
        log=log,
    )
    committed = _stable_offset(cluster, "perf")
    try:
        wait_until("the perf producer's commit", lambda: _stable_offset(cluster, "perf") > committed, 90)
        # the high watermark first, then the last stable offset below it: a transaction open at the second
        wait_until(
            "the perf producer's next transaction",
            lambda: _high_watermark(cluster, "perf") > _stable_offset(cluster, "perf"),
            30,
            every=0.05,
        )
    finally:
        perf.send_signal(signal.SIGKILL)
        perf.wait()
    return _stable_offset(cluster, "perf") < _high_watermark(cluster, "perf")


def _stable_offset(cluster: KafkaCluster, topic: str, level: str = "READ_COMMITTED") -> int:
    """The partition's last stable offset (high watermark: ``level`` READ_UNCOMMITTED), as ListOffsets
    gives it."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    tp = TopicPartition(topic, 0)
    admin = cluster.admin()  # kept while its future is pending: a collected client cancels it
    futures = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=getattr(IsolationLevel, level))
    return int(futures[tp].result(timeout=30).offset)


def _high_watermark(cluster: KafkaCluster, topic: str) -> int:
    return _stable_offset(cluster, topic, "READ_UNCOMMITTED")


# -- Kafka's own view of the files ----------

_BATCH = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) .*?producerId: (-?\d+) producerEpoch: (-?\d+) .*?"
    r"isTransactional: (\w+) isControl: (\w+)"
)
_MARKER = re.compile(r"^\| offset: (\d+) .*endTxnMarker: (\w+) coordinatorEpoch: (\d+)")
_PAYLOAD = re.compile(r"^\| offset: (\d+) .*? key: (\{.*\}) payload: (\{.*\}|<DELETE>)$")


def _kafka_dump(cluster: KafkaCluster, files: list[Path], *options: str) -> dict[Path, list[str]]:
    """file -> the lines ``kafka-dump-log.sh OPTIONS`` prints for it (one JVM for all)."""
    text = cluster.tool("kafka-dump-log.sh", *options, "--files", ",".join(map(str, files))).stdout
    out: dict[Path, list[str]] = {}
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            lines = out.setdefault(Path(line.removeprefix("Dumping ").strip()), [])
        else:
            lines.append(line)
    assert set(out) == set(files), (sorted(out), files)
    return out


def _kafka_batches(lines: list[str]) -> list[dict[str, Any]]:
    """Each batch as ``kafka-dump-log.sh --print-data-log`` prints it, a control batch with its marker."""
    out: list[dict[str, Any]] = []
    for line in lines:
        if found := _BATCH.match(line):
            base, last, pid, epoch, txn, control = found.groups()
            out.append(
                {
                    "base_offset": int(base),
                    "last_offset": int(last),
                    "producer_id": int(pid),
                    "producer_epoch": int(epoch),
                    "is_transactional": txn == "true",
                    "is_control": control == "true",
                }
            )
        elif found := _MARKER.match(line):
            out[-1]["marker"] = (int(found[1]), found[2], int(found[3]))
    return out


def _dump(files: list[Path]) -> dict[Path, list[dict[str, Any]]]:
    """file -> the rows of ``logdoctor dump --print-data --json`` (one process for all)."""
    done = logdoctor("dump", "--print-data", "--json", *map(str, files))
    assert done.returncode == 0, done.stderr
    out: dict[Path, list[dict[str, Any]]] = {f: [] for f in files}
    for line in done.stdout.splitlines():
        if line.strip():
            row = json.loads(line)
            out[Path(row["file"])].append(row)
    return out


def _partition_logs(log_dir: Path, *topics: str) -> list[Path]:
    return [
        p
        for t in topics
        for d in sorted(log_dir.glob(f"{t}-*"))
        for p in sorted(d.glob("*.log"))
        if p.stat().st_size
    ]


@pytest.fixture(scope="module")
def data_log(written: Written) -> dict[Path, list[str]]:
    """``kafka-dump-log.sh --print-data-log`` of every segment of the data partitions, ``cut``'s and
    ``__consumer_offsets``' (one JVM)."""
    logs = _partition_logs(written.log_dir, *TOPICS, "cut", "cut2", "__consumer_offsets")
    return _kafka_dump(written.cluster, logs, "--print-data-log")


@pytest.fixture(scope="module")
def transaction_log(written: Written) -> dict[Path, list[str]]:
    """``kafka-dump-log.sh --transaction-log-decoder`` of every ``__transaction_state`` segment."""
    files = _partition_logs(written.log_dir, "__transaction_state")
    return _kafka_dump(written.cluster, files, "--transaction-log-decoder")


def _client_versions(transaction_log: dict[Path, list[str]]) -> dict[str, set[int]]:
    """transactional id -> the ClientTransactionVersion of its __transaction_state records (Kafka's
    decoder; 0 where it prints none: the tag at its default)."""
    out: dict[str, set[int]] = {}
    for lines in transaction_log.values():
        for line in lines:
            if (found := _PAYLOAD.match(line)) and found[3] != "<DELETE>":
                tid = json.loads(found[2])["data"]["transactionalId"]
                data = json.loads(found[3])["data"]
                if data["transactionStatus"] != "Empty":
                    out.setdefault(tid, set()).add(data.get("clientTransactionVersion", 0))
    return out


# -- the tests ----------


def test_transaction_version_2_is_finalized(written: Written, transaction_log: dict[Path, list[str]]) -> None:
    """The broker runs TV2: FeatureCommand's describe, and the FeatureLevelRecord of the zero checkpoint
    (Kafka's decoder and ours); the Java producers' transactions are TV2 ones (ClientTransactionVersion 2
    in every record of theirs past Empty) and the killed producer's ended in the coordinator's abort."""
    assert re.search(r"Feature: transaction\.version\s.*FinalizedVersionLevel: 2\s", written.features)
    zero = written.log_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    theirs = _kafka_dump(written.cluster, [zero], "--cluster-metadata-decoder")[zero]
    assert any(re.search(r'"name":"transaction\.version","featureLevel":2', x) for x in theirs)
    ours = [r["decoded"] for r in _dump([zero])[zero] if r.get("type") == "record" and "decoded" in r]
    levels = {
        r["data"]["name"]: r["data"]["feature_level"] for r in ours if r["type"] == "FeatureLevelRecord"
    }
    assert levels["transaction.version"] == 2
    versions = _client_versions(transaction_log)
    assert versions["copier"] == {2} and versions["perf-txn"] == {2}, versions
    assert written.listed["perf-txn"]["TransactionState"] == "CompleteAbort", written.listed


def test_markers_carry_the_bumped_epoch(
    written: Written, transaction_log: dict[Path, list[str]], data_log: dict[Path, list[str]]
) -> None:
    """Every batch header and marker as Kafka's dump prints it is ours (offset, producer id and epoch,
    flags, COMMIT/ABORT, coordinator epoch); each marker of a TV2 producer carries its transaction's data
    epoch + 1, the coordinator's timeout abort included; the copier's random aborts, its offset commits'
    markers in ``__consumer_offsets`` and the timeout abort are there. confluent-kafka's markers follow the
    version its records name: epoch + 1 under TV2, the same epoch under TV1."""
    versions = _client_versions(transaction_log)
    tv2 = {int(written.listed[t]["ProducerId"]) for t, v in versions.items() if v == {2}}
    assert len(tv2) >= 2
    logs = _partition_logs(written.log_dir, *TOPICS, "cut2", "__consumer_offsets")  # cut2: a TV2 producer's
    theirs_all = data_log
    ours_all = _dump(logs)
    kinds: dict[str, set[str]] = {}
    bumps: dict[int, set[int]] = {}  # producer id -> marker epoch - data epoch
    for log in logs:
        rows = ours_all[log]
        ours_batches = {r["base_offset"]: r for r in rows if r["type"] == "batch"}
        ours_markers = {
            r["offset"]: r["decoded"]
            for r in rows
            if r["type"] == "record" and (r.get("decoded") or {}).get("type") == "control"
        }
        open_epoch: dict[int, int] = {}
        for b in _kafka_batches(theirs_all[log]):
            mine = ours_batches[b["base_offset"]]
            for k in ("last_offset", "producer_id", "producer_epoch", "is_transactional", "is_control"):
                assert mine[k] == b[k], (log, b, mine)
            pid = b["producer_id"]
            if not b["is_control"]:
                if b["is_transactional"]:
                    open_epoch.setdefault(pid, b["producer_epoch"])
                continue
            offset, kind, coordinator_epoch = b["marker"]
            decoded = ours_markers[offset]
            assert (decoded["control_type"], decoded["value"]["coordinator_epoch"]) == (
                kind,
                coordinator_epoch,
            )
            assert mine["transaction_result"] == ("committed" if kind == "COMMIT" else "aborted"), (
                log,
                offset,
            )
            kinds.setdefault(log.parent.name.rsplit("-", 1)[0], set()).add(kind)
            bumps.setdefault(pid, set()).add(b["producer_epoch"] - open_epoch.pop(pid))
    assert kinds["out"] == {"COMMIT", "ABORT"} and kinds["perf"] == {"COMMIT", "ABORT"}, kinds
    assert "COMMIT" in kinds["__consumer_offsets"]
    for pid in tv2:
        assert bumps[pid] == {1}, (pid, bumps)
    ck = int(written.listed["ck-txn"]["ProducerId"])
    assert bumps[ck] == ({1} if versions["ck-txn"] == {2} else {0}), (versions["ck-txn"], bumps[ck])


def test_transaction_state_dump_equals_kafkas_decoder(
    written: Written, transaction_log: dict[Path, list[str]]
) -> None:
    """``dump --print-data --json`` of ``__transaction_state``: every field of every record as
    ``kafka-dump-log.sh --transaction-log-decoder`` prints it (its ``transactionStatus`` is the state's
    name: ours in ``transaction_status_name``, the number beside it)."""
    seen = 0
    statuses: set[str] = set()
    ours_all = _dump(list(transaction_log))
    for log, lines in transaction_log.items():
        ours = {r["offset"]: r["decoded"] for r in ours_all[log] if r["type"] == "record"}
        for line in lines:
            found = _PAYLOAD.match(line)
            if not found:
                continue
            offset, key, payload = int(found[1]), json.loads(found[2]), found[3]
            mine = ours[offset]
            where = f"{log.parent.name} offset {offset}"
            assert mine["key_version"] == int(key["type"]), where
            agrees(mine["key"], key["data"], f"{where} key")
            if payload == "<DELETE>":
                assert mine["value"] is None, where
            else:
                value = json.loads(payload)
                assert mine["version"] == int(value["version"]), where
                value_ours = dict(mine["value"])
                value_ours["transaction_status"] = value_ours.pop("transaction_status_name")
                agrees(value_ours, value["data"], f"{where} value")
                statuses.add(value["data"]["transactionStatus"])
            seen += 1
    assert seen >= 20
    assert {"Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"} <= statuses


def test_scan_finds_no_hanging_transaction(written: Written) -> None:
    """Every transaction ended with a marker of a bumped epoch; each data partition's newest record is 50
    minutes after its last transaction: any transaction the walk left open would be late there."""
    node = written.cluster.broker(1)
    assert not (written.log_dir / ".kafka_cleanshutdown").exists()
    for topic in TOPICS:  # the producer state comes from the log itself
        assert not list((written.log_dir / f"{topic}-0").glob("*.snapshot")), topic
    done = logdoctor("scan", str(written.log_dir), "--server-properties", str(node.properties), "--json")
    report = json.loads(done.stdout)
    codes = [f["code"] for f in report["findings"]]
    assert "TRANSACTION_HANGING" not in codes and "TRANSACTION_STATE_MISMATCH" not in codes, report[
        "findings"
    ]
    assert not [f for f in report["findings"] if f["severity"] in ("error", "critical")], report["findings"]


def _exported(
    written: Written, level: str, out: Path
) -> dict[str, list[tuple[int, bytes | None, bytes | None]]]:
    done = logdoctor(
        "export",
        str(written.log_dir),
        "--out",
        str(out),
        "--topics",
        ",".join(TOPICS),
        "--isolation-level",
        level,
        "--writer",
        "arrow",
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    table = pq.read_table(out).to_pylist()
    got: dict[str, list[tuple[int, bytes | None, bytes | None]]] = {}
    for row in sorted(table, key=lambda r: (str(r["topic"]), r["offset"])):
        got.setdefault(str(row["topic"]), []).append((row["offset"], row["key"], row["value"]))
    return got


def test_export_read_committed_equals_a_real_consumer(written: Written, tmp_path: Path) -> None:
    """``export --isolation-level read_committed``: the records a real ``read_committed`` consumer read
    from the running broker, offset, key and value, the copier's 100 records exactly once."""
    committed = _exported(written, "read_committed", tmp_path / "committed")
    assert committed == written.committed
    copied = [k for _o, k, _v in written.committed["out"] if k != b"ahead"]
    assert sorted(copied) == [b"k%03d" % i for i in range(100)]


def test_scan_names_a_transaction_the_coordinator_lost_the_end_of(
    written: Written, transaction_log: dict[Path, list[str]], tmp_path: Path
) -> None:
    """The other side of the epoch bump: ``__transaction_state`` cut at the copier's last PrepareCommit
    (its tail lost, as by an unclean election of that partition) leaves the coordinator's state Ongoing at
    the data's epoch, while the log holds the COMMIT markers at epoch + 1: the scan names that transaction
    closed in the log (TRANSACTION_STATE_MISMATCH ``closed-in-log``) for the partitions it lists, and
    nothing of the other transactional ids."""
    cut: tuple[Path, int] | None = None
    for log, lines in transaction_log.items():
        position = -1
        for line in lines:
            if found := re.search(r" position: (\d+) ", line):
                position = int(found[1])
            elif (found := _PAYLOAD.match(line)) and found[3] != "<DELETE>":
                tid = json.loads(found[2])["data"]["transactionalId"]
                if tid == "copier" and json.loads(found[3])["data"]["transactionStatus"] == "PrepareCommit":
                    cut = (log, position)
    assert cut is not None
    copy = tmp_path / "kafka-logs"
    shutil.copytree(written.log_dir, copy)
    with open(copy / cut[0].relative_to(written.log_dir), "r+b") as f:
        f.truncate(cut[1])
    report = json.loads(logdoctor("scan", str(copy), "--json").stdout)
    named = {
        (f["details"]["case"], f["details"].get("transactional_id"), f["details"]["topic"])
        for f in report["findings"]
        if f["code"] == "TRANSACTION_STATE_MISMATCH"
    }
    assert ("closed-in-log", "copier", "out") in named, report["findings"]
    assert {t for _c, t, _p in named} == {"copier"}, named
    assert "TRANSACTION_HANGING" not in {f["code"] for f in report["findings"]}


def test_producer_id_rollover(written: Written, transaction_log: dict[Path, list[str]]) -> None:
    """The coordinator's rollover as Kafka's decoder prints it: a PrepareCommit at epoch 32767 naming the
    NextProducerId, then the new id at epoch 0 with the old one as PreviousProducerId; the old id's last
    markers at 32766 and 32767, the new id's data from epoch 0 on, each marker at its data's epoch + 1. The
    scan, export and dump tests above read these partitions too (``roll``)."""
    states = []
    for lines in transaction_log.values():
        for line in lines:
            found = _PAYLOAD.match(line)
            if (
                found
                and found[3] != "<DELETE>"
                and json.loads(found[2])["data"]["transactionalId"] == "rollover"
            ):
                states.append(json.loads(found[3])["data"])
    rolled = [d for d in states if d.get("nextProducerId", -1) >= 0]
    assert rolled and rolled[0]["producerEpoch"] == 32767, states
    old, new = rolled[0]["producerId"], rolled[0]["nextProducerId"]
    assert any(
        d["producerId"] == new and d["previousProducerId"] == old and d["producerEpoch"] == 0 for d in states
    )
    assert int(written.listed["rollover"]["ProducerId"]) == new
    # the markers and data of both ids in the topic the producer wrote
    logs = _partition_logs(written.log_dir, "roll")
    batches = [
        b
        for lines in _kafka_dump(written.cluster, logs, "--print-data-log").values()
        for b in _kafka_batches(lines)
    ]
    markers = {(b["producer_id"], b["producer_epoch"]) for b in batches if b["is_control"]}
    data = {
        (b["producer_id"], b["producer_epoch"])
        for b in batches
        if b["is_transactional"] and not b["is_control"]
    }
    assert {(old, 32766), (old, 32767)} <= markers, markers
    assert {(old, 32765), (old, 32766), (new, 0)} <= data, data
    assert all((pid, epoch + 1) in markers for pid, epoch in data), (data, markers)


_CREATE_TIME = re.compile(r"^baseOffset: (\d+) .*? CreateTime: (\d+) ")


def _cut(written: Written, at: int, out: Path) -> tuple[dict[int, list[tuple]], dict[int, dict[str, Any]]]:
    """``export --cut-at AT`` of topic ``cut``: per partition its rows (offset, key, value) and the cut its
    ``--json`` summary gives (end offset, records left out ...)."""
    done = logdoctor(
        "export", str(written.log_dir), "--out", str(out), "--topics", "cut", "--cut-at", str(at),
        "--writer", "arrow", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows: dict[int, list[tuple]] = {0: [], 1: []}
    for row in sorted(pq.read_table(out).to_pylist(), key=lambda r: (r["partition"], r["offset"])):
        rows[row["partition"]].append((row["offset"], row["key"], row["value"]))
    summary = json.loads(done.stdout)["transactions"]
    return rows, {e["partition"]: e["cut"] for e in summary}


def _cut_source(
    written: Written, at: int, topic: str = "cut", log_dir: Path | None = None
) -> dict[int, list[tuple]]:
    """Per partition, the records of ``topic`` that ``replay --cut-at AT`` reads (its source: no Spark), of
    ``log_dir`` (default: the broker's)."""
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.logdir.read_plan import plan_read
    from logdoctor.replay.source import PartitionSource

    opts = ReadOptions(topics=topic, cut_at=at)
    read = plan_read([str(log_dir or written.log_dir)], opts)
    sources = {r.partition: PartitionSource.of(r, opts, read.decisions) for r in read.refs}
    return {p: [(x.offset, x.key, x.value) for x in source.records()] for p, source in sources.items()}


def test_cut_at_takes_a_transaction_in_all_its_partitions_or_none(
    written: Written, transaction_log: dict[Path, list[str]], data_log: dict[Path, list[str]], tmp_path: Path
) -> None:
    """``--cut-at T`` against what a real read_committed consumer read and the moments Kafka's own dump
    (``kafka-dump-log.sh``) gives each COMMIT marker: a record is in the cut iff it is plain and stamped
    at or before T, or its transaction's earliest marker is (transaction version 2: the marker's bumped
    epoch names the transaction in both partitions). ``export`` at the moment between B's two records
    (its partition 0 record stamped before it, its commit after it): B in neither partition, the cut's
    end offsets B's first offsets, the plain record w after B's first offset, stamped before T, in. The
    replay's source (the same plan and readers, no Spark to start) at C's earliest marker: C in both
    partitions (its markers may straddle it: each leader stamps its own), a millisecond before in none;
    with transaction version 1 (one epoch for all three) each partition's transaction at its own marker."""
    logs = dict(enumerate(_partition_logs(written.log_dir, "cut")))
    dumped = data_log
    markers: dict[int, list[int]] = {}  # partition -> its COMMIT markers' timestamps: A, B, C
    for p, log in logs.items():
        stamps = {int(m[1]): int(m[2]) for line in dumped[log] if (m := _CREATE_TIME.match(line))}
        markers[p] = [stamps[b["base_offset"]] for b in _kafka_batches(dumped[log]) if b["is_control"]]
        assert [b["marker"][1] for b in _kafka_batches(dumped[log]) if b["is_control"]] == ["COMMIT"] * 3
    tv2 = _client_versions(transaction_log)["cut-txn"] == {2}
    moment = {  # (key, partition) -> its transaction's moment; TV1: one epoch, each partition its own marker
        (k, p): min(markers[0][i], markers[1][i]) if tv2 else markers[p][i]
        for i, k in enumerate((b"a", b"b", b"c"))
        for p in (0, 1)
    }

    def expected(at: int) -> dict[int, list[tuple]]:
        return {
            p: [
                (o, k, v)
                for o, k, v, _h, ts in written.cut_read[p]
                if ((k, p) in moment and moment[k, p] <= at) or ((k, p) not in moment and ts <= at)
            ]
            for p in (0, 1)
        }

    read = {p: {k: (o, ts) for o, k, _v, _h, ts in written.cut_read[p]} for p in (0, 1)}
    at = written.between
    assert read[0][b"b"][1] <= at < min(markers[0][1], markers[1][1]), (read, at, markers)
    assert read[0][b"w"][0] > read[0][b"b"][0], read  # w: past B's first offset
    rows, cuts = _cut(written, at, tmp_path / "between")
    assert rows == expected(at) and [k for _o, k, _v in rows[0]] == [b"a", b"x", b"w"], rows
    assert {p: c["end_offset"] for p, c in cuts.items()} == {0: read[0][b"b"][0], 1: read[1][b"b"][0]}, cuts
    # what the cut leaves out of what the real consumer read: B, C and the plain records stamped after T
    assert {p: c["records_left_out"] for p, c in cuts.items()} == {
        p: len(written.cut_read[p]) - len(rows[p]) for p in (0, 1)
    }, cuts
    c = min(markers[0][2], markers[1][2])
    for at in (c - 1, c):  # the replay's source: the same plan and readers, without starting Spark
        rows = _cut_source(written, at)
        assert rows == expected(at), (tv2, at, markers, rows)
        if tv2:
            assert [p for p in (0, 1) for _o, k, _v in rows[p] if k == b"c"] == ([0, 1] if at == c else [])


def test_cut_at_takes_a_java_producers_transaction_at_its_earliest_marker(
    written: Written, data_log: dict[Path, list[str]]
) -> None:
    """Kafka's Java producer (transaction version 2: each transaction's markers carry its bumped epoch)
    round-robins ``cut2``'s records over both partitions in transactions of 300 ms. Each record's
    transaction is the marker that follows it in its partition (the one producer), named by producer id
    and marker epoch as Kafka's dump prints them, and its moment is the earliest of its markers' timestamps.
    At each moment and a millisecond before it, the replay's source reads what the read_committed
    consumer read of the transactions whose moment is not past it: every transaction in both partitions
    or in neither."""
    logs = dict(enumerate(_partition_logs(written.log_dir, "cut2")))
    moment: dict[tuple[int, int], int] = {}
    owner: dict[tuple[int, int], tuple[int, int]] = {}  # (partition, offset) -> (producer id, marker epoch)
    for p, log in logs.items():
        stamps = {int(m[1]): int(m[2]) for line in data_log[log] if (m := _CREATE_TIME.match(line))}
        pending: list[int] = []
        for b in _kafka_batches(data_log[log]):
            if not b["is_control"]:
                pending += range(b["base_offset"], b["last_offset"] + 1)
                continue
            key = (b["producer_id"], b["producer_epoch"])
            if b["marker"][1] == "COMMIT":
                moment[key] = min(moment.get(key, stamps[b["base_offset"]]), stamps[b["base_offset"]])
                owner.update(((p, o), key) for o in pending)
            pending = []
    spanning = {key for key in moment if {p for (p, _o), k in owner.items() if k == key} == {0, 1}}
    assert len(spanning) >= 3, (moment, owner)
    for at in sorted({m + d for m in moment.values() for d in (-1, 0)}):
        expected = {
            p: [(o, k, v) for o, k, v, _h, _ts in written.cut2_read[p] if moment[owner[p, o]] <= at]
            for p in (0, 1)
        }
        assert _cut_source(written, at, "cut2") == expected, (at, moment)


_POSITION = re.compile(r"^baseOffset: (\d+) .*? position: (\d+) ")


def test_cut_at_takes_a_prepared_commit_at_the_coordinators_decision(
    written: Written, transaction_log: dict[Path, list[str]], data_log: dict[Path, list[str]], tmp_path: Path
) -> None:
    """The cluster dead between the coordinator's decision to commit ``cut``'s transaction B and its last
    marker, made from a copy by Kafka's own dump: ``__transaction_state`` ends right after B's
    PrepareCommit, partition 1 of ``cut`` right before B's COMMIT marker, partition 0 right after it. The
    coordinator's last state commits B where no marker did, and B's moment is that decision's
    ``transactionLastUpdateTimestampMs`` in both partitions: at it B is read in both, a millisecond before
    in neither, and at partition 0's (later) marker in both. A stays at its markers' moment, and nothing
    past the copies' ends is read. (Taken at each partition's marker alone, partition 1's B had no moment
    and was in no cut while partition 0's was.)"""
    states: list[list[Any]] = []  # [log, the position past its batch, data] of each state, in log order
    for log, lines in transaction_log.items():
        for line in lines:
            if found := _POSITION.match(line):
                for state in states:
                    if state[0] == log and state[1] is None:
                        state[1] = int(found[2])
            elif (
                (found := _PAYLOAD.match(line))
                and found[3] != "<DELETE>"
                and json.loads(found[2])["data"]["transactionalId"] == "cut-txn"
            ):
                states.append([log, None, json.loads(found[3])["data"]])
    prepared = [s for s in states if s[2]["transactionStatus"] == "PrepareCommit"]
    assert len(prepared) == 3, states  # A, B, C
    log, past, b_state = prepared[1]
    decided = b_state["transactionLastUpdateTimestampMs"]
    assert b_state["transactionPartitions"] == [{"topic": "cut", "partitionIds": [0, 1]}], b_state
    copy = tmp_path / "kafka-logs"
    shutil.copytree(written.log_dir, copy)
    with open(copy / log.relative_to(written.log_dir), "r+b") as f:
        f.truncate(past if past is not None else log.stat().st_size)
    ends: dict[int, int] = {}  # partition -> the first offset past its copy
    b_marker, a_markers = 0, []
    for p, seg in enumerate(_partition_logs(written.log_dir, "cut")):
        batches = _kafka_batches(data_log[seg])
        positions = [int(m[2]) for line in data_log[seg] if (m := _POSITION.match(line))]
        control = [i for i, b in enumerate(batches) if b["is_control"]]
        cut = control[1] if p == 1 else control[1] + 1  # partition 1 before B's marker, 0 after it
        stamps = {int(m[1]): int(m[2]) for line in data_log[seg] if (m := _CREATE_TIME.match(line))}
        a_markers.append(stamps[batches[control[0]]["base_offset"]])
        if p == 0:
            b_marker = stamps[batches[control[1]]["base_offset"]]
        ends[p] = batches[cut]["base_offset"]
        with open(copy / seg.relative_to(written.log_dir), "r+b") as f:
            f.truncate(positions[cut])
    assert max(a_markers) < decided - 1 and decided <= b_marker, (a_markers, decided, b_marker)
    plain = {b"x", b"w", b"y"}
    for at in (decided - 1, decided, b_marker):
        rows = _cut_source(written, at, log_dir=copy)
        wanted = {
            p: [
                (o, k, v)
                for o, k, v, _h, ts in written.cut_read[p]
                if o < ends[p] and ((k in plain and ts <= at) or k == b"a" or (k == b"b" and decided <= at))
            ]
            for p in (0, 1)
        }
        assert rows == wanted, (at, decided, b_marker, ends, rows)
        assert [p for p in (0, 1) for _o, k, _v in rows[p] if k == b"b"] == ([0, 1] if at >= decided else [])

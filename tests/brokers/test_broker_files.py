"""What the installed brokers write is read as they read it: every file a healthy broker of each installed
version (4.4.0 and 4.3.1 in KRaft mode, 3.9.1 with ZooKeeper) leaves in its log dirs is dumped by
``logdoctor dump`` without a finding and scanned by ``logdoctor scan --deep`` without an error, after a clean
stop (SIGTERM) and after a SIGKILL; the segments, indexes, transaction indexes, producer snapshots and KRaft
snapshots are compared with what Kafka's own ``kafka-dump-log.sh`` (DumpLogSegments) lists of the same files.

One broker per version for the module (two log dirs), made to write every file kind it can in a short run:
a topic of several segments (``internal.segment.bytes``, the topic config Kafka's own tests use below the
1 MiB floor of ``segment.bytes`` in 4.x, K:storage/.../log/LogConfig.java; ``segment.bytes`` in 3.9.1), a
compacted topic the cleaner has cleaned (``cleaner-offset-checkpoint``, ``.deleted`` files), transactions
committed and aborted (``.txnindex``, ``__transaction_state``; transaction version 2 by default in 4.x),
consumer groups of the classic protocol and (4.x) of KIP-848's consumer protocol (``__consumer_offsets``), a
share group (4.x, KIP-932: ``__share_group_state``), the KRaft metadata log with its snapshots (taken every
second: ``metadata.log.max.snapshot.interval.ms``), producer snapshots, leader-epoch checkpoints,
``partition.metadata``, ``meta.properties`` and the dir's checkpoint files.

The broker runs, its dirs are scanned while a producer writes (docs/live-broker.md: no error finding on a
live dir), it is stopped cleanly and its dirs copied (sparse: the preallocated indexes stay holes), then
started again on the same dirs, written to, and SIGKILLed: the copy is the clean case, the dirs the
SIGKILL case.

The regression this module was written for: a cleanly stopped 4.4.0 broker leaves its
``__cluster_metadata-0`` active segment's ``.timeindex`` (and ``.index``) preallocated, 10 MiB of zeros after
its entries (K:raft/.../raft/internals/KafkaRaftLog.java closes its UnifiedLog without the trim
LogManager.shutdown gives the logs it manages; in 4.4 AbstractIndex.close no longer trims). ``dump`` ran
Kafka's sanity check on the whole file, the broker's way, and said ``INDEX_SANITY_CHECK_FAILED`` ("the last
timestamp is 0 which is less than the first"), exit 2, while DumpLogSegments lists its entries and exits 0
and ``scan`` found nothing. Now both apply one rule (logdoctor.checks.preallocated_index): the active
segment's zero slots after its entries are its preallocation, the file is judged by its entries, and dump
says what the broker does with it (it recovers the metadata log, rebuilding its indexes, at every start).
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster, logdoctor, wait_until

pytestmark = pytest.mark.kafka

STOPS = ("clean", "sigkill")
SEGMENT_BYTES = 16 * 1024
BATCH_BYTES = 8 * 1024  # the producer's batches fit in a segment (a batch larger than it is refused)
METADATA = "__cluster_metadata-0"

# What a scan may say of a healthy broker's dirs that is not an error, by stop kind, and why:
# - ORPHAN_FILE of a ``.deleted`` file (either stop): the log cleaner renames the segments it replaced
#   ``.deleted`` and removes them file.delete.delay.ms (60 s) later (LogSegment.changeFileSuffixes,
#   UnifiedLog.deleteSegmentFiles); a stop in between leaves them, and LogLoader deletes them at the next
#   start (removeTempFilesAndCollectSwapFiles). A warning, never an error.
# - UNCLEAN_SHUTDOWN (SIGKILL): no ``.kafka_cleanshutdown`` marker; the broker recovers every partition from
#   its recovery point at the next start (LogLoader.recoverLog).
ALLOWED = {
    "clean": {"ORPHAN_FILE"},
    "sigkill": {"ORPHAN_FILE", "UNCLEAN_SHUTDOWN"},
}


@dataclass
class Written:
    """One version's broker and what it wrote: ``dirs`` by stop kind, the live scan's report."""

    version: str
    kraft: bool
    dirs: dict[str, list[Path]] = field(default_factory=dict)
    live_scan: dict = field(default_factory=dict)
    live_acked: tuple[int, int] = (0, 0)  # records the background producer had acknowledged before/after
    metadata_timeindex: dict[str, bytes] = field(default_factory=dict)  # stop -> its bytes (KRaft)


def _config(kraft: bool) -> dict[str, object]:
    config: dict[str, object] = {"log.cleaner.backoff.ms": 200}
    if kraft:
        config["metadata.log.max.snapshot.interval.ms"] = 1000  # KRaft snapshots in a short run
    return config


def _segment_config(kraft: bool) -> dict[str, object]:
    return {"internal.segment.bytes" if kraft else "segment.bytes": SEGMENT_BYTES}


def _records(n: int, prefix: bytes, size: int = 200) -> list[tuple[bytes, bytes]]:
    return [(prefix + b"%d" % i, prefix * (size // max(len(prefix), 1))) for i in range(n)]


def _transactions(cluster: KafkaCluster, topic: str, outcomes: tuple[bool, ...], tid: str) -> None:
    """One transaction per outcome (True: commit, False: abort) of 20 records to ``topic``-0."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "batch.size": BATCH_BYTES}
    )
    producer.init_transactions(60)
    for commit in outcomes:
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, value=b"t%d" % i, partition=0)
        assert producer.flush(60) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(60)


def _group_commits(cluster: KafkaCluster, topic: str, group: str, protocol: str, records: int) -> None:
    """``group`` reads ``records`` records of ``topic`` (subscribed: the coordinator assigns, with the classic
    or the consumer protocol) and commits its position."""
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    consumer = Consumer(config)
    try:
        consumer.subscribe([topic])
        got = [0]

        def read() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got[0] += 1
            return got[0] >= records

        wait_until(f"{group} to read {records} records", read, 90, every=0)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def _share_group(cluster: KafkaCluster, topic: str, group: str, records: int) -> None:
    """A share consumer (KIP-932, confluent-kafka's ShareConsumer) of ``group`` acquires and accepts
    ``records`` records: the share coordinator writes the group's state to ``__share_group_state``."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        consumer.subscribe([topic])
        got = [0]

        def read() -> bool:
            # a share group starts at the partition's end (share.auto.offset.reset=latest): records written
            # while it polls
            cluster.produce(topic, _records(5, b"s"), batch_size=BATCH_BYTES)
            got[0] += sum(1 for m in consumer.poll(0.5) or [] if m.error() is None)
            return got[0] >= records

        wait_until(f"share group {group} to read {records} records", read, 90, every=0)
    finally:
        consumer.close()


def _write_every_kind(cluster: KafkaCluster, kraft: bool) -> None:
    seg = _segment_config(kraft)
    cluster.create_topic("plain", 1, 1, seg)
    cluster.create_topic(
        "compacted",
        1,
        1,
        {**seg, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.01, "delete.retention.ms": 100},
    )
    cluster.create_topic("txn", 1, 1, seg)
    cluster.produce("plain", _records(400, b"p"), batch_size=BATCH_BYTES)  # several segments
    compacted = [(b"k%d" % (i % 10), b"v" * 200) for i in range(400)]  # 10 keys: most records cleaned away
    cluster.produce("compacted", compacted, batch_size=BATCH_BYTES)
    _transactions(cluster, "txn", (True, False, True), "files-txn")
    _group_commits(cluster, "plain", "files-classic", "classic", 50)
    if kraft:
        _group_commits(cluster, "plain", "files-consumer", "consumer", 50)
        _share_group(cluster, "plain", "files-share", 10)
    # the cleaner has cleaned the compacted topic (cleaner-offset-checkpoint, .cleaned/.swap, .deleted)
    cluster.broker(1).wait_for_log(r"Cleaner \d+: Beginning cleaning of log compacted-0", 90)


def _log_dirs(cluster: KafkaCluster) -> list[Path]:
    return list(cluster.broker(1).log_dirs)


def _scan(dirs: list[Path]) -> dict:
    done = logdoctor("scan", "--deep", "--json", *map(str, dirs))
    assert done.stdout.strip(), f"scan printed nothing (exit {done.returncode}): {done.stderr}"
    report = json.loads(done.stdout)
    report["exit_code"] = done.returncode
    return report


class _Producer(threading.Thread):
    """Acknowledged records to ``plain`` until stopped (the live scan's writer)."""

    def __init__(self, cluster: KafkaCluster) -> None:
        super().__init__(daemon=True)
        self.producer = cluster.producer(batch_size=BATCH_BYTES, linger_ms=20)
        self.acked = 0
        self.stopping = threading.Event()

    def _ack(self, err, _msg) -> None:
        if err is None:
            self.acked += 1

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            self.producer.produce("plain", key=b"live%d" % i, value=b"l" * 200, on_delivery=self._ack)
            self.producer.poll(0.01)
            i += 1
        self.producer.flush(60)
        self.producer = None


@pytest.fixture(scope="module", params=kafka_cluster.VERSIONS)
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    version = request.param
    root = tmp_path_factory.mktemp(f"files-{version}")
    kraft = int(version.split(".")[0]) >= 4
    cluster = KafkaCluster(root / "cluster", version=version, log_dirs=2, broker_config=_config(kraft))
    out = Written(version, kraft)
    try:
        cluster.start()
        _write_every_kind(cluster, kraft)
        # the dirs of a running broker, scanned while a producer writes
        writer = _Producer(cluster)
        writer.start()
        wait_until("the live producer's first acknowledgements", lambda: writer.acked > 0, 60)
        before = writer.acked
        out.live_scan = _scan(_log_dirs(cluster))
        out.live_acked = (before, writer.acked)
        writer.stopping.set()
        writer.join(90)
        # a clean stop, copied (sparse, as the broker left them)
        cluster.stop()
        clean = root / "clean"
        clean.mkdir()
        for d in _log_dirs(cluster):
            subprocess.run(["cp", "-a", "--sparse=always", str(d), str(clean / d.name)], check=True)
        out.dirs["clean"] = [clean / d.name for d in _log_dirs(cluster)]
        # started again on the same dirs, written to, SIGKILLed
        cluster.start()
        cluster.produce("plain", _records(100, b"q"), batch_size=BATCH_BYTES)
        _transactions(cluster, "txn", (False, True), "files-txn-2")
        _group_commits(cluster, "plain", "files-classic", "classic", 20)
        cluster.kill()
        out.dirs["sigkill"] = _log_dirs(cluster)
        if kraft:
            for stop, dirs in out.dirs.items():
                out.metadata_timeindex[stop] = (dirs[0] / METADATA / f"{0:020d}.timeindex").read_bytes()
        yield out
    finally:
        cluster.kill()


# -- logdoctor's reads ----------


def _files(dirs: list[Path]) -> list[Path]:
    return [p for d in dirs for p in kafka_cluster.iter_files(d)]


def _dump(files: list[Path]) -> tuple[subprocess.CompletedProcess, list[dict]]:
    done = logdoctor("dump", "--json", *map(str, files))
    return done, [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("stop", STOPS)
def test_every_file_dumps_without_a_finding(written: Written, stop: str) -> None:
    """``logdoctor dump`` of every file of every log dir, in one process: exit 0, nothing on stderr, every
    file read (an event names it), no finding, no error, every summary without findings or problems; the
    preallocated metadata indexes are shown as such (their entries, the zero slots after them, a note)."""
    files = _files(written.dirs[stop])
    names = {p.name for p in files}
    # the file kinds this broker writes, all there
    assert {"meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"} <= names
    assert {"log-start-offset-checkpoint", "cleaner-offset-checkpoint", "leader-epoch-checkpoint"} <= names
    assert {"partition.metadata"} <= names and any(n.endswith(".txnindex") for n in names)
    assert any(n.endswith(".snapshot") for n in names)
    # the cleaner's replaced segments, renamed .deleted and left by the clean stop (the restart deletes them)
    assert any(n.endswith(".deleted") for n in names) is (stop == "clean")
    folders = {p.parent.name for p in files}
    assert {"__consumer_offsets-0", "__transaction_state-0", "plain-0", "compacted-0", "txn-0"} <= folders
    assert len([p for p in files if p.parent.name == "plain-0" and p.suffix == ".log"]) >= 4
    if written.kraft:
        assert {METADATA, "__share_group_state-0"} <= folders
        assert "quorum-state" in names and any(re.fullmatch(r"\d{20}-\d{10}\.checkpoint", n) for n in names)
        assert any(p.stat().st_size > 12 for p in files if p.parent.name.startswith("__share_group_state"))
    assert (".kafka_cleanshutdown" in names) is (stop == "clean")

    done, events = _dump(files)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.strip() == ""
    assert {e["file"] for e in events} == {str(p) for p in files}
    bad = [e for e in events if e["type"] in ("finding", "error")]
    assert bad == []
    summaries = [e for e in events if e["type"] == "summary"]
    assert [s for s in summaries if s.get("findings") or s.get("problems") or s.get("invalid_bytes")] == []
    assert all(e["crc_valid"] for e in events if e["type"] == "batch")

    if written.kraft:
        # the metadata log's active .timeindex: 4.4.0 leaves it preallocated even at a clean stop, 4.3.1 trims
        # it (AbstractIndex.close trimmed up to 4.3); a SIGKILL leaves it preallocated in both
        data = written.metadata_timeindex[stop]
        preallocated = stop == "sigkill" or written.version == kafka_cluster.NEWEST
        assert (len(data) == 10 * 1024 * 1024 // 12 * 12) is preallocated
        name = str(written.dirs[stop][0] / METADATA / f"{0:020d}.timeindex")
        summary = next(s for s in summaries if s["file"] == name)
        entries = [e for e in events if e["type"] == "index_entry" and e["file"] == name]
        assert len(entries) == summary["entries"] >= 1  # entries before the zero slots: the bug's case
        if preallocated:
            assert summary["zero_slots"] == len(data) // 12 - summary["entries"]
            assert "preallocated" in summary["note"] and "rebuilds these indexes" in summary["note"]
        else:
            assert summary["zero_slots"] == 0 and "note" not in summary


@pytest.mark.parametrize("stop", STOPS)
def test_deep_scan_finds_no_error(written: Written, stop: str) -> None:
    """``logdoctor scan --deep`` of the broker's log dirs together: no finding of severity error, and every
    other finding one of :data:`ALLOWED` (what a healthy broker's stop leaves, each explained there); a
    SIGKILLed broker's dirs are said to have had no clean shutdown."""
    report = _scan(written.dirs[stop])
    findings = report["findings"]
    assert [f for f in findings if f["severity"] == "error"] == []
    assert report["exit_code"] in (0, 1)
    unexpected = [f for f in findings if f["code"] not in ALLOWED[stop]]
    assert unexpected == [], json.dumps(unexpected, indent=1)[:4000]
    orphans = [f for f in findings if f["code"] == "ORPHAN_FILE"]
    assert all(f["path"].endswith(".deleted") and f["severity"] == "warning" for f in orphans), orphans
    codes = {f["code"] for f in findings}
    assert ("UNCLEAN_SHUTDOWN" in codes) is (stop == "sigkill")
    scanned = {(p["topic"], p["partition"]) for p in report["partitions"]}
    assert {("plain", 0), ("compacted", 0), ("txn", 0), ("__consumer_offsets", 0)} <= scanned


def test_a_live_broker_dirs_scan_without_an_error(written: Written) -> None:
    """The running broker's dirs, scanned (--deep) while a producer's records were being acknowledged: no
    finding of severity error; the broker is seen running (``BROKER_RUNNING``, a note) and nothing of a live
    dir's normal state (docs/live-broker.md) is called damage."""
    report = written.live_scan
    before, after = written.live_acked
    assert after > before  # the producer wrote during the scan
    assert [f for f in report["findings"] if f["severity"] == "error"] == []
    assert report["exit_code"] in (0, 1)
    running = [f for f in report["findings"] if f["code"] == "BROKER_RUNNING"]
    assert running and {f["severity"] for f in running} == {"info"}
    assert all(d["locked"] is True for d in report["log_dirs"])


# -- against Kafka's DumpLogSegments ----------


def _kafka_dump(version: str, files: list[Path]) -> dict[str, list[dict[str, str]]]:
    """kafka-dump-log.sh --files of ``files`` (one JVM): per file, its lines of ``key: value`` fields
    (batches, index entries, aborted transactions, producer snapshot entries)."""
    script = kafka_cluster.kafka_bin(version) / "kafka-dump-log.sh"
    done = subprocess.run(
        [str(script), "--files", ",".join(map(str, files))], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, list[dict[str, str]]] = {}
    current: list[dict[str, str]] | None = None
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping ") :].strip(), [])
            continue
        first = line.split(":", 1)[0]
        if current is not None and first in ("baseOffset", "offset", "timestamp", "version", "producerId"):
            current.append(dict(re.findall(r"(\w+): (\S+)", line)))
    return out


def _compared_files(dirs: list[Path]) -> list[Path]:
    """Every segment file and KRaft snapshot of the dirs that holds something, but the ``.deleted`` ones
    (DumpLogSegments skips names it does not know) and the indexes of an empty ``.log``: after a SIGKILL an
    empty active segment's indexes are preallocated, and DumpLogSegments reads slot 0 (a zero slot, the loop
    skips zero slots only after it) as an entry and looks for its batch: NoSuchElementException
    (K:tools/.../DumpLogSegments.java ``dumpIndex``), where logdoctor lists no entry."""
    suffixes = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")
    out = []
    for p in _files(dirs):
        if p.suffix not in suffixes or not re.match(r"\d{20}", p.name) or p.stat().st_size == 0:
            continue
        if p.suffix in (".index", ".timeindex") and p.with_suffix(".log").stat().st_size == 0:
            continue
        out.append(p)
    return out


def _ours(events: list[dict], path: Path) -> list[tuple]:
    """What logdoctor's dump listed of ``path``, in the form of :func:`_theirs`."""
    mine = [e for e in events if e["file"] == str(path)]
    if path.suffix in (".log", ".checkpoint"):
        return [
            (e["base_offset"], e["last_offset"], e["record_count"], e["position"])
            for e in mine
            if e["type"] == "batch"
        ]
    if path.suffix == ".index":
        return [(e["offset"], e["position"]) for e in mine if e["type"] == "index_entry"]
    if path.suffix == ".timeindex":
        return [(e["timestamp"], e["offset"]) for e in mine if e["type"] == "index_entry"]
    if path.suffix == ".txnindex":
        return [
            (e["producer_id"], e["first_offset"], e["last_offset"], e["last_stable_offset"])
            for e in mine
            if e["type"] == "aborted_txn"
        ]
    return sorted((e["producer_id"], e["last_offset"]) for e in mine if e["type"] == "producer_state")


def _theirs(lines: list[dict[str, str]], path: Path) -> list[tuple]:
    """What DumpLogSegments listed of ``path``."""
    if path.suffix in (".log", ".checkpoint"):
        return [
            (int(x["baseOffset"]), int(x["lastOffset"]), int(x["count"]), int(x["position"]))
            for x in lines
            if "baseOffset" in x
        ]
    # DumpLogSegments skips an index's zero slots only after slot 0 (``i > 0``): a preallocated index with no
    # entry yet (a SIGKILLed broker's active segment of less than index.interval.bytes) shows its zero slot 0
    # as an entry, (base offset, position 0) or (timestamp 0, base offset); logdoctor lists no entry
    base = int(path.name[:20])
    if path.suffix == ".index":
        entries = [(int(x["offset"]), int(x["position"])) for x in lines if "position" in x]
        return [] if entries == [(base, 0)] else entries
    if path.suffix == ".timeindex":
        entries = [(int(x["timestamp"]), int(x["offset"])) for x in lines if "timestamp" in x]
        return [] if entries == [(0, base)] else entries
    if path.suffix == ".txnindex":
        return [
            (int(x["producerId"]), int(x["firstOffset"]), int(x["lastOffset"]), int(x["lastStableOffset"]))
            for x in lines
            if "firstOffset" in x
        ]
    return sorted((int(x["producerId"]), int(x["lastOffset"])) for x in lines if "producerId" in x)


@pytest.mark.parametrize("stop", STOPS)
def test_dump_lists_what_kafka_dump_log_lists(written: Written, stop: str) -> None:
    """Every segment file, producer snapshot and KRaft snapshot of the dirs, dumped by logdoctor and by
    Kafka's own kafka-dump-log.sh of the same version: the same batches (base and last offset, record count,
    position), the same offset and time index entries (DumpLogSegments stops at the first zero slot of a
    preallocated index, K:core/.../tools/DumpLogSegments.scala ``dumpIndex``/``dumpTimeIndex``), the same
    aborted transactions and producer entries. So the test is not logdoctor against itself."""
    files = _compared_files(written.dirs[stop])
    theirs = _kafka_dump(written.version, files)
    done, events = _dump(files)
    assert done.returncode == 0, done.stderr[-3000:]
    kinds: dict[str, int] = {}
    for path in files:
        assert str(path) in theirs, f"kafka-dump-log.sh did not dump {path}"
        ours = _ours(events, path)
        assert ours == _theirs(theirs[str(path)], path), path
        if ours:
            kinds[path.suffix] = kinds.get(path.suffix, 0) + 1
    # every kind compared on files that hold something
    want = {".log", ".index", ".timeindex", ".txnindex", ".snapshot"}
    assert set(kinds) == want | ({".checkpoint"} if written.kraft else set()), kinds
    if written.kraft:
        # the metadata log's active .timeindex (preallocated but in 4.3.1's clean case): the same entries
        name = written.dirs[stop][0] / METADATA / f"{0:020d}.timeindex"
        assert _ours(events, name) == _theirs(theirs[str(name)], name) != []

"""`logdoctor restore` against a real tiered broker: Kafka 4.3.1 with its own reference RemoteStorageManager,
`LocalTieredStorage` (kafka-storage-4.3.1-test.jar), and the default `TopicBasedRemoteLogMetadataManager`.

The broker uploads 1 MiB segments of two topics and deletes them locally (`local.retention.bytes=1`), then
two losses are restored as docs/restore.md says, with the commands run as an operator runs them
(``kafka_cluster.run_printed``: the plan, then the same command with ``--apply``):

- ``payments``: the partition's folder is lost (the broker stopped, the folder gone); the topic stays
  tiered, with `local.retention.*` raised to -2 first so that the restored segments stay local
  (docs/restore.md, "a restored partition whose topic stays tiered", step 2);
- ``ledger``: "turning tiering off (KIP-950) without losing history", with the configs the page gives,
  set as the page writes them: `remote.log.copy.disable=true` (with `local.retention.*=-2`, which Kafka
  requires), stop, restore the remote part below the local log start, start, then
  `remote.storage.enable=false,remote.log.delete.on.disable=true`.

The broker is the judge: it loads the restored segments without recovering or deleting any of them, a
consumer reads every acknowledged record the remote tier held at its offset, and after tiering is turned
off the log start offset stays 0 while the broker deletes the remote copies. logdoctor's restored files are
byte-identical to the objects LocalTieredStorage wrote, and `scan --deep` / `dump` read the broker's
`__remote_log_metadata` partitions and the store without an error finding (the scan names the committed
records lost with payments' never-uploaded active segment).

One broker (KRaft, combined), started twice in the module: under a minute; 85 s with the machine's load
average at 25.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster

pytestmark = pytest.mark.kafka

VERSION = kafka_cluster.EARLIER_4X  # its lib has kafka-storage-4.3.1-test.jar: LocalTieredStorage
RSM = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
SEGMENT = 1 << 20  # Kafka 4.x refuses a topic segment.bytes below 1 MiB
RECORDS = 9000  # ~3.8 MB: three rolled (uploaded) segments and the active one
TOPICS = ("payments", "ledger")
SENTINEL = "sentinel"
RESTORE_DOC = kafka_cluster.ROOT / "docs" / "restore.md"


def _doc_step(step: int) -> dict[str, str]:
    """The topic configs docs/restore.md's "Turning tiering off" tells the operator to set at ``step``
    (``(1) set `k=v,k=v```): the test sets exactly those, so the broker judges the page."""
    text = RESTORE_DOC.read_text()
    section = text[text.index("## Turning tiering off") :]
    found = re.search(rf"\({step}\)[^`(]*?set\s+`([^`]+)`", section)
    assert found, f"docs/restore.md: no config in step ({step}) of 'Turning tiering off'"
    return dict(pair.split("=", 1) for pair in found.group(1).split(","))


def _value(topic: str, i: int) -> bytes:
    return hashlib.sha256(f"{topic}-{i}".encode()).digest() * 12  # 384 bytes, distinct per record


def _broker_config(remote: Path) -> dict[str, object]:
    return {
        "remote.log.storage.system.enable": True,
        "remote.log.storage.manager.class.name": RSM,
        # LocalTieredStorage.STORAGE_DIR_CONFIG ("dir") under the RSM prefix (remote.log.storage.manager.
        # impl.prefix, "rsm.config."): the objects go to <dir>/kafka-tiered-storage/<topic>-<p>-<topicId>/
        "rsm.config.dir": remote,
        # the RLMM's clients (admin, producer, consumer of __remote_log_metadata) need a listener: without
        # one 4.3.1 stops the broker ("You must set either bootstrap.servers or bootstrap.controllers")
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": 1,
        "rlmm.config.remote.log.metadata.topic.num.partitions": 2,
        "remote.log.manager.task.interval.ms": 500,
        "log.retention.check.interval.ms": 500,
        "log.initial.task.delay.ms": 500,
        # segments deleted by local retention leave no .deleted files behind a quick stop
        "log.segment.delete.delay.ms": 100,
    }


@dataclass
class Restored:
    cluster: kafka_cluster.KafkaCluster
    log_dir: Path
    remote: Path  # rsm.config.dir (the store's root for --remote-storage)
    acked: dict[str, list[tuple[int, bytes, bytes]]]  # topic -> (offset, key, value) acknowledged
    local_start: dict[str, int]  # each partition's local log start offset when the broker stopped
    uploaded: dict[str, dict[str, bytes]] = field(default_factory=dict)  # topic -> object name -> bytes
    plans: dict[str, str] = field(default_factory=dict)  # topic -> the dry run's output
    applied: dict[str, str] = field(default_factory=dict)
    tree_before_plan: dict[str, bytes] = field(default_factory=dict)
    tree_after_plan: dict[str, bytes] = field(default_factory=dict)
    restored_files: dict[str, bytes] = field(default_factory=dict)  # path -> bytes right after --apply
    scan: dict = field(default_factory=dict)
    dumps: list[str] = field(default_factory=list)


def _remote_folder(remote: Path, topic: str) -> Path:
    found = list((remote / "kafka-tiered-storage").glob(f"{topic}-0-*"))
    assert len(found) == 1, found
    return found[0]


def _remote_logs(remote: Path, topic: str) -> list[Path]:
    folder = list((remote / "kafka-tiered-storage").glob(f"{topic}-0-*"))
    return sorted(folder[0].glob("*.log")) if folder else []


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in kafka_cluster.iter_files(folder)}


def _alter_topic(cluster: kafka_cluster.KafkaCluster, topic: str, configs: dict[str, object]) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    resource = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()
        ],
    )
    admin = cluster.admin()  # kept while its future is pending
    futures = admin.incremental_alter_configs([resource])
    futures[resource].result(timeout=60)


def _watermarks(cluster: kafka_cluster.KafkaCluster, topic: str) -> tuple[int, int]:
    """(log start offset, high watermark) of ``topic``-0 as a consumer sees them (ListOffsets: the log
    start is the remote tier's when the topic is tiered)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "logdoctor-test-watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)
    finally:
        consumer.close()


def _run(command: str) -> str:
    done = kafka_cluster.run_printed(command, version=VERSION)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def restored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restored]:
    root = tmp_path_factory.mktemp("tiered-restore")
    remote = root / "remote"
    cluster = kafka_cluster.KafkaCluster(
        root / "cluster", version=VERSION, broker_config=_broker_config(remote)
    )
    cluster.start()
    broker = cluster.broker(1)
    log_dir = broker.log_dirs[0]
    try:
        acked: dict[str, list[tuple[int, bytes, bytes]]] = {}
        for topic in TOPICS:  # both produced before waiting: their uploads run together
            cluster.create_topic(
                topic,
                1,
                1,
                {
                    "remote.storage.enable": True,
                    "segment.bytes": SEGMENT,
                    "local.retention.bytes": 1,  # every uploaded segment goes locally
                    "retention.ms": -1,
                },
            )
            records = [(f"key-{i}".encode(), _value(topic, i)) for i in range(RECORDS)]
            # small batches: segments of many batches, with offset and time index entries
            offsets = cluster.produce(topic, records, batch_size=16384, linger_ms=2)
            assert offsets == list(range(RECORDS))
            acked[topic] = [(o, k, v) for o, (k, v) in zip(offsets, records, strict=True)]

        # a topic that is not tiered, with one rolled segment: its deletion after the restart, once its
        # retention.bytes is lowered, shows that the broker's retention pass (LogManager.cleanupLogs, every
        # log of the broker in one pass) ran over the restored partitions too
        cluster.create_topic(SENTINEL, 1, 1, {"segment.bytes": SEGMENT, "retention.ms": -1})
        cluster.produce(SENTINEL, [(None, _value(SENTINEL, i)) for i in range(3000)], batch_size=65536)
        assert len(list((log_dir / f"{SENTINEL}-0").glob("*.log"))) == 2

        def tiered(topic: str) -> bool:
            local = sorted((log_dir / f"{topic}-0").glob("*.log"))
            uploaded = _remote_logs(remote, topic)
            # uploaded: every rolled segment; deleted locally: only the active one is left, no .deleted
            return (
                len(uploaded) >= 3
                and len(local) == 1
                and not list((log_dir / f"{topic}-0").glob("*.deleted"))
                and int(local[0].name[:20]) == int(uploaded[-1].name[:20]) + _records_in(uploaded[-1])
            )

        for topic in TOPICS:
            kafka_cluster.wait_until(
                f"{topic}-0 uploaded and deleted locally", lambda t=topic: tiered(t), 120
            )
        # docs/restore.md: a topic that stays tiered keeps restored segments only with local retention
        # raised; a topic whose tiering is to be turned off first stops uploading
        _alter_topic(cluster, "payments", {"local.retention.ms": -2, "local.retention.bytes": -2})
        # step (1) as the page says it (LogConfig.validateRetentionConfigsWhenRemoteCopyDisabled refuses
        # remote.log.copy.disable=true alone while local.retention.* is neither -2 nor retention.*)
        _alter_topic(cluster, "ledger", _doc_step(1))
        broker.stop()

        local_start = {t: int(next((log_dir / f"{t}-0").glob("*.log")).name[:20]) for t in TOPICS}
        state = Restored(cluster, log_dir, remote, acked, local_start)
        for topic in TOPICS:
            state.uploaded[topic] = {p.name: p.read_bytes() for p in _remote_folder(remote, topic).iterdir()}

        # the loss: payments-0's folder (its disk); ledger keeps its local part
        shutil.rmtree(log_dir / "payments-0")

        state.tree_before_plan = _tree(log_dir)
        commands = {
            t: shlex.join(
                ["logdoctor", "restore", str(log_dir), "--remote-storage", str(remote), "--topics", t]
            )
            for t in TOPICS
        }
        for topic in TOPICS:  # docs/restore.md: the plan first
            state.plans[topic] = _run(commands[topic])
        state.tree_after_plan = _tree(log_dir)
        for topic in TOPICS:
            assert "Add --apply to make these changes." in state.plans[topic], state.plans[topic]
            state.applied[topic] = _run(f"{commands[topic]} --apply")  # the same command, as the plan says
        state.restored_files = _tree(log_dir)

        done = kafka_cluster.logdoctor(
            "scan", "--deep", str(log_dir), "--remote-storage", str(remote), "--json"
        )
        state.scan = json.loads(done.stdout)
        state.scan["exit"] = done.returncode
        metadata_logs = sorted(log_dir.glob("__remote_log_metadata-*/*.log"))
        assert len(metadata_logs) == 2  # rlmm.config.remote.log.metadata.topic.num.partitions
        dumped = kafka_cluster.logdoctor("dump", "--deep", "--print-data", "--json", *map(str, metadata_logs))
        assert dumped.returncode == 0, dumped.stdout[-2000:] + dumped.stderr
        state.dumps.append(dumped.stdout)

        broker.start()
        yield state
    finally:
        cluster.kill()


def _records_in(log: Path) -> int:
    """The number of offsets a segment file holds (its last batch's last offset + 1 - its base offset)."""
    data = log.read_bytes()
    pos, last = 0, -1
    while pos + 12 <= len(data):
        base = int.from_bytes(data[pos : pos + 8], "big")
        size = int.from_bytes(data[pos + 8 : pos + 12], "big")
        if pos + 12 + size > len(data):
            break
        last = base + int.from_bytes(data[pos + 23 : pos + 27], "big", signed=True)  # lastOffsetDelta
        pos += 12 + size
    return last + 1 - int(log.name[:20])


def _uploaded_segments(state: Restored, topic: str) -> list[tuple[int, str]]:
    """(base offset, segment id) of each uploaded segment, in offset order."""
    out = []
    for name in state.uploaded[topic]:
        m = re.fullmatch(r"(\d{20})-(.+)\.log", name)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return sorted(out)


def test_the_plan_writes_nothing_and_apply_restores_every_uploaded_object_byte_for_byte(restored):
    """The dry run leaves the log dir as it was; ``--apply`` writes each remote segment's ``.log``,
    ``.index``, ``.timeindex`` byte for byte as LocalTieredStorage stored them, and the producer snapshot
    uploaded with a segment (``<base>-<id>.snapshot``, the snapshot the broker wrote when it rolled it, at
    the next segment's base offset) as ``<end + 1>.snapshot``."""
    state = restored
    assert state.tree_after_plan == state.tree_before_plan
    for topic in TOPICS:
        # the plan names each uploaded object it restores; the run checks what it wrote
        plan, applied = state.plans[topic], state.applied[topic]
        for base, sid in _uploaded_segments(state, topic):
            assert f"{base:020d}-{sid}.log" in plan, plan
        assert plan.count("] restore-segment ") == len(_uploaded_segments(state, topic)), plan
        assert "verified: every file at the destination matches the source" in applied, applied
    for topic in TOPICS:
        segments = _uploaded_segments(state, topic)
        assert len(segments) >= 3
        ends = [b for b, _ in segments[1:]] + [state.local_start[topic]]
        for (base, sid), end in zip(segments, ends, strict=True):
            for suffix in ("log", "index", "timeindex"):
                local = f"{topic}-0/{base:020d}.{suffix}"
                assert state.restored_files[local] == state.uploaded[topic][f"{base:020d}-{sid}.{suffix}"], (
                    local
                )
            assert (
                state.restored_files[f"{topic}-0/{end:020d}.snapshot"]
                == state.uploaded[topic][f"{base:020d}-{sid}.snapshot"]
            )
        # the indexes are real ones (entries every ~4 KiB of 16 KiB batches), not empty files
        assert all(len(state.restored_files[f"{topic}-0/{b:020d}.index"]) >= 8 * 50 for b, _ in segments)


def test_the_broker_loads_the_restored_segments_without_recovering_or_deleting_them(restored):
    """At the restart the broker loads each restored partition from the first restored offset (clean
    shutdown: no segment is recovered, `LogLoader.recoverLog`; no index is rebuilt, `LogSegment.
    sanityCheck`), and none of the restored segments is deleted: payments' local retention is -2, ledger
    does not copy, so local retention falls back to retention.ms=-1 (`UnifiedLog.
    remoteLogEnabledAndRemoteCopyEnabled`)."""
    state = restored
    broker = state.cluster.broker(1)
    for topic in TOPICS:
        # LogManager: each partition loaded from the first restored offset, every segment of it
        folder = re.escape(str(state.log_dir / f"{topic}-0"))
        loaded = broker.wait_for_log(
            rf"Completed load of Log\(dir={folder},.* with (\d+) segments, local-log-start-offset (\d+) and "
            rf"log-end-offset (\d+)",
            60,
        )
        restored_segments = len(_uploaded_segments(state, topic))
        local_segments = 0 if topic == "payments" else 1  # payments' folder was lost with its active segment
        end = state.local_start[topic] if topic == "payments" else RECORDS
        assert loaded.groups() == (str(restored_segments + local_segments), "0", str(end))
    # payments' producer state is loaded from the snapshot restored at the restored end (no full replay)
    assert re.search(
        rf"partition=payments-0, .*Reloading from producer snapshot and rebuilding producer state "
        rf"from offset {state.local_start['payments']}\b",
        broker.log(),
    )
    # a retention pass after the restart: the sentinel's rolled segment goes once its retention.bytes is 1;
    # then one more pass (500 ms) and the RLM tasks (500 ms) a few rounds
    _alter_topic(state.cluster, SENTINEL, {"retention.bytes": 1})
    broker.wait_for_log(rf"partition={SENTINEL}-0, .*Deleting segment LogSegment\(baseOffset=0,", 60)
    time.sleep(2)
    log = broker.log()
    for topic in TOPICS:
        lines = [ln for ln in log.splitlines() if f"{topic}-0" in ln]
        bad = [
            ln
            for ln in lines
            if re.search(
                r"Recovering unflushed segment|Deleting segment|Found deletable|corrupt|rebuilding index|"
                r"Truncating|Copying .* to remote storage",
                ln,
                re.I,
            )
        ]
        assert not bad, "\n".join(bad)
        for base, _sid in _uploaded_segments(state, topic):
            path = state.log_dir / f"{topic}-0" / f"{base:020d}.log"
            assert path.read_bytes() == state.restored_files[f"{topic}-0/{base:020d}.log"]
    assert not list(state.log_dir.glob("*-0/*.deleted"))


def test_every_acknowledged_record_the_remote_tier_held_is_served_at_its_offset(restored):
    """A consumer reads, from offset 0, every acknowledged record at its offset with its key and value:
    for ledger all of them (remote part restored below the local part); for payments those of the uploaded
    segments, and the log ends there (its active segment was never uploaded and was lost with the folder:
    with one replica that is Kafka's own loss, not the restore's)."""
    state = restored
    ledger = state.cluster.consume("ledger", 0, start=0)
    assert ledger == state.acked["ledger"]
    assert _watermarks(state.cluster, "ledger") == (0, RECORDS)

    remote_end = state.local_start["payments"]
    assert 0 < remote_end < RECORDS
    payments = state.cluster.consume("payments", 0, start=0)
    assert payments == state.acked["payments"][:remote_end]
    assert _watermarks(state.cluster, "payments") == (0, remote_end)


def test_scan_and_dump_read_the_remote_log_metadata_and_the_store_without_an_error(restored):
    """`scan --deep LOGDIR --remote-storage` of the restored log dir (the broker's `__remote_log_metadata`
    partitions replayed against the store's listing) finds no error (only the records lost with payments'
    active segment, named), and `dump --deep` of each metadata
    segment decodes a `COPY_SEGMENT_FINISHED` for every uploaded segment of both topics, with its offsets
    (RemoteLogMetadataSerde's records as the broker's TopicBasedRemoteLogMetadataManager wrote them)."""
    state = restored
    # after a clean stop and the restore, only the loss itself: payments' folder went with its active
    # segment, never uploaded, so the broker's own entries (kept by the restore) are past the restored log
    # end, and the scan names the committed records lost (the broker lowers both to the log end:
    # LogLoader's min(recovery point, log end), the high watermark clamped; the consume test sees it)
    end, lost = state.local_start["payments"], RECORDS - 1
    messages = sorted(f["message"] for f in state.scan["findings"])
    assert [f["severity"] for f in state.scan["findings"]] == ["warning", "warning"], messages
    assert {f["code"] for f in state.scan["findings"]} == {"CHECKPOINT_MISMATCH"}, messages
    assert re.search(
        rf"high watermark {RECORDS} of payments-0 is beyond its log end offset {end}: committed records "
        rf"{end}\.\.{lost} are missing",
        messages[0] + messages[1],
    ), messages
    assert re.search(
        rf"recovery point {RECORDS} of payments-0 is beyond its log end offset {end}", "".join(messages)
    )
    assert state.scan["exit"] == 1  # warnings only
    assert state.scan["remote_log_metadata"]["problems"] == 0
    assert state.scan["remote_log_metadata"]["num_partitions"] == 2
    finished: dict[str, tuple[str, int, int]] = {}
    started: dict[str, tuple[str, int, int]] = {}
    for out in state.dumps:
        for line in out.splitlines():
            row = json.loads(line)
            if row.get("type") != "record":
                continue
            assert row["decoder"] == "remote-log-metadata"
            decoded = row["decoded"]
            data = decoded["data"]
            if decoded["type"] == "RemoteLogSegmentMetadataRecord":
                seg = data["remote_log_segment_id"]
                started[seg["id"]] = (
                    seg["topic_id_partition"]["name"],
                    data["start_offset"],
                    data["end_offset"],
                )
            elif (
                decoded["type"] == "RemoteLogSegmentMetadataUpdateRecord"
                and data["remote_log_segment_state"] == 1  # COPY_SEGMENT_FINISHED
            ):
                seg = data["remote_log_segment_id"]
                finished[seg["id"]] = started[seg["id"]]
    want = {}
    for topic in TOPICS:
        segments = _uploaded_segments(state, topic)
        ends = [b for b, _ in segments[1:]] + [state.local_start[topic]]
        for (base, sid), end in zip(segments, ends, strict=True):
            want[sid] = (topic, base, end - 1)
    assert finished == want


def test_turning_tiering_off_after_the_restore_keeps_every_record(restored):
    """docs/restore.md, "Turning tiering off", step 3 (the last test here: it changes the topic): with the
    remote part restored, `remote.storage.enable=false,remote.log.delete.on.disable=true` makes the broker
    delete ledger's remote segments (`RemoteLogManager.stopPartitions` with delete; LocalTieredStorage's
    files go) and move the log start to the local log start (`ConfigHandler.maybeUpdateRemoteLogComponents`),
    which is now 0: every acknowledged record is still served. payments' objects stay."""
    state = restored
    assert _doc_step(3) == {"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}
    _alter_topic(state.cluster, "ledger", _doc_step(3))
    kafka_cluster.wait_until(
        "the broker to delete ledger's remote segments", lambda: not _remote_logs(state.remote, "ledger"), 60
    )
    assert _watermarks(state.cluster, "ledger") == (0, RECORDS)
    assert state.cluster.consume("ledger", 0, start=0) == state.acked["ledger"]
    assert len(_remote_logs(state.remote, "payments")) == len(_uploaded_segments(state, "payments"))

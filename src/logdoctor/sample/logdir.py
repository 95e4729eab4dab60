"""Generate whole broker log dirs on disk, laid out as a broker leaves them.

A :class:`FleetSpec` describes brokers (ZooKeeper or KRaft ``meta.properties``), topics with
partitions and replicas, and a list of :class:`Fault` objects applied to the result (planted
problems for the checks to find). :func:`generate_fleet` writes it and returns what it wrote
(:class:`GeneratedFleet`, with the expected offsets of every replica) so tests can compare.

What a broker writes, and when (K:storage/.../log/LogSegment.java, UnifiedLog.java,
ProducerStateManager.java, K:core/.../log/LogManager.scala):
- segments roll when the next batch would not fit in ``segment.bytes``
  (LogSegment.shouldRoll: ``size > segmentSize - batchSize``); the new base offset is the batch's
  first offset;
- while appending, an offset-index entry (batch last offset, batch position) and a time-index
  entry (max timestamp so far, its offset) are added once more than ``index.interval.bytes``
  were appended since the last entry; the first batch never gets one; when a segment becomes
  inactive (roll) or is closed (clean shutdown) the time index gets a final max-timestamp entry;
  closed index files are trimmed, while a running broker's active index files are preallocated
  (10 MiB, written here as sparse files);
- a producer snapshot ``<offset>.snapshot`` at every roll (at the new base offset) and at clean
  shutdown (at the log end offset), when the log end offset moved;
- leader-epoch-checkpoint, partition.metadata (topic ids, Kafka 2.8+), the four offset
  checkpoints in the log dir root, ``.lock``, and ``.kafka_cleanshutdown`` after a clean
  shutdown (Kafka 3.5+ writes JSON with the broker epoch).
"""

from __future__ import annotations

import base64
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from logdoctor.formats.checkpoint import (
    new_leader_epoch_checkpoint,
    new_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    OffsetEntry,
    TimeEntry,
    preallocated_size,
    write_offset_index,
    write_time_index,
)
from logdoctor.formats.partition_metadata import PartitionMetadata, write_partition_metadata
from logdoctor.formats.producer_snapshot import ProducerSnapshotEntry, write_producer_snapshot
from logdoctor.formats.properties import MetaProperties, write_meta_properties
from logdoctor.formats.record_types import Compression, RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.disk import SimulatedDisk
from logdoctor.logdir.names import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES_FILE,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    SegmentFileType,
    format_partition_dir,
    segment_file_name,
)

__all__ = [
    "BrokerSpec",
    "Fault",
    "FleetSpec",
    "GeneratedFleet",
    "LaggingReplica",
    "ReplicaInfo",
    "SegmentInfo",
    "TopicSpec",
    "ZeroedTimeIndex",
    "generate_fleet",
    "generate_log_dir",
]

_FIXED_DATE = datetime(2024, 1, 1, tzinfo=UTC)


def topic_uuid(drawn: str, topic: str) -> str:
    """A topic's id: the id drawn from the fleet's generator mixed with the topic's name, so that two
    fleets of one seed (the demo's ZooKeeper brokers and its KRaft broker) never give two topics one id
    unless a spec plants it (``TopicSpec.topic_id``: TOPIC_ID_SHARED)."""
    import hashlib

    salt = 0
    while True:  # as Uuid.randomUuid: never an id whose text starts with '-'
        digest = hashlib.sha256(f"{drawn}/{topic}/{salt}".encode()).digest()[:16]
        text = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if not text.startswith("-"):
            return text
        salt += 1


def kafka_uuid(rng: random.Random) -> str:
    """A random Kafka Uuid as text (URL-safe base64 of 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")


# --- specs ---------------------------------------------------------------------------------------


@dataclass
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 1
    records_per_partition: int = 100
    records_per_batch: int = 1
    value_size: int = 64
    key_size: int = 8  # 0: null keys
    segment_bytes: int = 1024 * 1024
    compression: Compression = Compression.NONE
    idempotent: bool = False  # batches carry a producer id/epoch/sequence; snapshots list it
    leader_epochs: int = 1  # epochs 0..n-1, switching at evenly spaced batches
    topic_id: str | None = None  # None: random (seeded)


@dataclass
class BrokerSpec:
    broker_id: int
    kraft: bool = False  # meta.properties v1 (node.id, directory.id) instead of v0 (broker.id)
    log_dirs: int = 1
    running: bool = False  # True: no clean-shutdown marker, active indexes preallocated, .lock


@dataclass
class FleetSpec:
    topics: Sequence[TopicSpec]
    brokers: Sequence[BrokerSpec] = (BrokerSpec(0),)
    faults: Sequence[Fault] = ()
    seed: int = 0
    cluster_id: str | None = None
    base_timestamp_ms: int = 1_700_000_000_000
    timestamp_step_ms: int = 1000
    index_interval_bytes: int = 4096
    producer_snapshots: str = "every-roll"  # "every-roll" | "last" | "none"
    topic_ids: bool = True  # partition.metadata (Kafka 2.8+)
    clean_shutdown_marker: bool = True  # .kafka_cleanshutdown after a clean stop (Kafka 3.5+)


# --- what was written ----------------------------------------------------------------------------


@dataclass
class SegmentInfo:
    base_offset: int
    next_offset: int  # offset after its last record
    size: int
    max_timestamp: int
    path: Path


@dataclass
class ReplicaInfo:
    broker_id: int
    log_dir: Path
    topic: str
    partition: int
    path: Path
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int
    leader_epochs: list[tuple[int, int]]
    topic_id: str | None
    segments: list[SegmentInfo] = field(default_factory=list)
    producer_snapshots: list[int] = field(default_factory=list)


@dataclass
class GeneratedFleet:
    root: Path
    spec: FleetSpec
    log_dirs: dict[int, list[Path]]  # broker id -> its log dirs
    replicas: list[ReplicaInfo]
    #: disks a fault simulates (log dir absolute path -> disk): pass them to the census or inventory as
    #: ``simulated_disks`` (logdoctor.logdir.disk); nothing on disk records them
    simulated_disks: dict[str, SimulatedDisk] = field(default_factory=dict)

    def replica(self, broker_id: int, topic: str, partition: int) -> ReplicaInfo:
        for r in self.replicas:
            if (r.broker_id, r.topic, r.partition) == (broker_id, topic, partition):
                return r
        raise KeyError((broker_id, topic, partition))


# --- faults --------------------------------------------------------------------------------------


class Fault:
    """A planted problem. ``records_kept`` may shorten one replica while generating;
    ``apply`` edits the written files afterwards. Subclasses override either or both."""

    def records_kept(self, broker_id: int, topic: str, partition: int, records: int) -> int:
        return records

    def apply(self, fleet: GeneratedFleet) -> None:
        return None


@dataclass
class LaggingReplica(Fault):
    """One follower's replica is ``lag`` records behind the others (its LEO and checkpoints too)."""

    broker_id: int
    topic: str
    partition: int
    lag: int

    def records_kept(self, broker_id: int, topic: str, partition: int, records: int) -> int:
        if (broker_id, topic, partition) == (self.broker_id, self.topic, self.partition):
            return max(0, records - self.lag)
        return records


@dataclass
class ZeroedTimeIndex(Fault):
    """Zero a segment's ``.timeindex`` in place (same size): largestTimestamp becomes 0 (KAFKA-10207)."""

    broker_id: int
    topic: str
    partition: int
    segment: int = 0  # position in the segment list

    def apply(self, fleet: GeneratedFleet) -> None:
        rep = fleet.replica(self.broker_id, self.topic, self.partition)
        seg = rep.segments[self.segment]
        path = seg.path.parent / segment_file_name(seg.base_offset, SegmentFileType.TIMEINDEX)
        size = path.stat().st_size or TIME_ENTRY_SIZE
        path.write_bytes(bytes(size))


# --- generation ----------------------------------------------------------------------------------


@dataclass
class _Batch:
    base_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    data: bytes
    epoch: int
    sequence: int
    producer_id: int


def _partition_batches(spec: FleetSpec, topic: TopicSpec, partition: int, rng: random.Random) -> list[_Batch]:
    """The batches of one partition, shared by all its replicas (their copies are byte-identical)."""
    n = topic.records_per_partition
    per = max(1, topic.records_per_batch)
    n_batches = (n + per - 1) // per
    epoch_every = max(1, (n_batches + topic.leader_epochs - 1) // max(1, topic.leader_epochs))
    producer_id = 1000 + partition if topic.idempotent else -1
    out: list[_Batch] = []
    offset = 0
    for b in range(n_batches):
        count = min(per, n - offset)
        records = []
        for i in range(count):
            ts = spec.base_timestamp_ms + (offset + i) * spec.timestamp_step_ms
            key = rng.randbytes(topic.key_size) if topic.key_size else None
            records.append(RecordSpec(value=rng.randbytes(topic.value_size), key=key, timestamp=ts))
        epoch = min(b // epoch_every, topic.leader_epochs - 1)
        seq = offset if topic.idempotent else -1
        data = build_record_batch(
            records,
            base_offset=offset,
            compression=topic.compression,
            producer_id=producer_id,
            producer_epoch=0 if topic.idempotent else -1,
            base_sequence=seq,
            partition_leader_epoch=epoch,
        )
        last_ts = records[-1].timestamp
        last = offset + count - 1
        out.append(_Batch(offset, last, last_ts, last, data, epoch, seq, producer_id))
        offset += count
    return out


class _SegmentWriter:
    """Accumulates one segment as the broker's append path would, then writes its files."""

    def __init__(self, base_offset: int, interval: int):
        self.base_offset = base_offset
        self.interval = interval
        self.chunks: list[bytes] = []
        self.size = 0
        self.bytes_since_entry = 0
        self.offset_entries: list[OffsetEntry] = []
        self.time_entries: list[TimeEntry] = []
        self.max_ts = -1
        self.offset_of_max_ts = -1
        self.next_offset = base_offset

    def append(self, b: _Batch) -> None:
        if b.max_timestamp > self.max_ts:
            self.max_ts, self.offset_of_max_ts = b.max_timestamp, b.offset_of_max_timestamp
        # LogSegment.append: the check runs before the batch's own bytes are counted
        if self.bytes_since_entry > self.interval:
            self.offset_entries.append(OffsetEntry(b.last_offset, self.size))
            self._maybe_time_entry()
            self.bytes_since_entry = 0
        self.bytes_since_entry += len(b.data)
        self.chunks.append(b.data)
        self.size += len(b.data)
        self.next_offset = b.last_offset + 1

    def _maybe_time_entry(self) -> None:
        # TimeIndex.maybeAppend: only when the timestamp grows
        if self.max_ts >= 0 and (not self.time_entries or self.max_ts > self.time_entries[-1].timestamp):
            self.time_entries.append(TimeEntry(self.max_ts, self.offset_of_max_ts))

    def write(self, folder: Path, *, closed: bool) -> SegmentInfo:
        if closed:  # onBecomeInactiveSegment / close: final time-index entry
            self._maybe_time_entry()
        log = folder / segment_file_name(self.base_offset, SegmentFileType.LOG)
        log.write_bytes(b"".join(self.chunks))
        idx = folder / segment_file_name(self.base_offset, SegmentFileType.INDEX)
        tix = folder / segment_file_name(self.base_offset, SegmentFileType.TIMEINDEX)
        idx_bytes = write_offset_index(self.offset_entries, self.base_offset)
        tix_bytes = write_time_index(self.time_entries, self.base_offset)
        idx.write_bytes(idx_bytes)
        tix.write_bytes(tix_bytes)
        if not closed:  # a running broker's active index files are preallocated (sparse here)
            os.truncate(idx, preallocated_size(OFFSET_ENTRY_SIZE))
            os.truncate(tix, preallocated_size(TIME_ENTRY_SIZE))
        return SegmentInfo(self.base_offset, self.next_offset, self.size, self.max_ts, log)


def _write_replica(
    spec: FleetSpec,
    topic: TopicSpec,
    batches: list[_Batch],
    records_kept: int,
    folder: Path,
    running: bool,
) -> tuple[list[SegmentInfo], list[int], int]:
    folder.mkdir(parents=True, exist_ok=True)
    kept = [b for b in batches if b.last_offset < records_kept]
    segments: list[SegmentInfo] = []
    snapshots: list[int] = []
    cur = _SegmentWriter(0, spec.index_interval_bytes)
    producer_last: _Batch | None = None

    def snapshot(at: int) -> None:
        entries = []
        b = producer_last
        if b is not None:
            count = b.last_offset - b.base_offset + 1
            last_seq = b.sequence + count - 1
            entries.append(
                ProducerSnapshotEntry(
                    b.producer_id, 0, last_seq, b.last_offset, count - 1, b.max_timestamp, -1, -1
                )
            )
        path = folder / segment_file_name(at, SegmentFileType.SNAPSHOT)
        path.write_bytes(write_producer_snapshot(entries))
        snapshots.append(at)

    for b in kept:
        if cur.size > 0 and cur.size > topic.segment_bytes - len(b.data):  # LogSegment.shouldRoll
            segments.append(cur.write(folder, closed=True))
            cur = _SegmentWriter(b.base_offset, spec.index_interval_bytes)
            if spec.producer_snapshots == "every-roll":
                snapshot(b.base_offset)
        cur.append(b)
        if b.producer_id >= 0:
            producer_last = b
    segments.append(cur.write(folder, closed=not running))
    leo = cur.next_offset
    moved = leo > 0 and (not snapshots or snapshots[-1] < leo)
    if not running and spec.producer_snapshots != "none" and moved:
        snapshot(leo)
    return segments, snapshots, leo


def _write_root_files(log_dir: Path, broker: BrokerSpec, cluster_id: str, rng: random.Random,
                      replicas: list[ReplicaInfo], spec: FleetSpec) -> None:
    meta = MetaProperties(
        version=1 if broker.kraft else 0,
        node_id=broker.broker_id,
        cluster_id=cluster_id,
        directory_id=kafka_uuid(rng) if broker.kraft else None,
    )
    (log_dir / META_PROPERTIES_FILE).write_bytes(write_meta_properties(meta, date=_FIXED_DATE))

    def cp(values: list[tuple[str, int, int]]) -> bytes:
        return write_offset_checkpoint(new_offset_checkpoint(values))

    mine = [r for r in replicas if r.log_dir == log_dir]
    (log_dir / RECOVERY_POINT_CHECKPOINT).write_bytes(
        cp([(r.topic, r.partition, r.recovery_point) for r in mine])
    )
    (log_dir / REPLICATION_OFFSET_CHECKPOINT).write_bytes(
        cp([(r.topic, r.partition, r.high_watermark) for r in mine])
    )
    starts = [(r.topic, r.partition, r.log_start_offset) for r in mine
              if r.segments and r.log_start_offset > r.segments[0].base_offset]
    (log_dir / LOG_START_OFFSET_CHECKPOINT).write_bytes(cp(starts))
    (log_dir / CLEANER_OFFSET_CHECKPOINT).write_bytes(cp([]))
    (log_dir / LOCK_FILE).write_bytes(b"")
    if not broker.running and spec.clean_shutdown_marker:
        marker = b'{"version":0,"brokerEpoch":%d}' % (100 + broker.broker_id)
        (log_dir / CLEAN_SHUTDOWN_FILE).write_bytes(marker)


def generate_fleet(root: str | os.PathLike[str], spec: FleetSpec) -> GeneratedFleet:
    """Write every broker's log dirs under ``root/broker-<id>/kafka-logs-<k>`` and apply the faults."""
    root = Path(root)
    rng = random.Random(spec.seed)
    cluster_id = spec.cluster_id or kafka_uuid(rng)
    brokers = list(spec.brokers)
    log_dirs: dict[int, list[Path]] = {}
    for b in brokers:
        dirs = [root / f"broker-{b.broker_id}" / f"kafka-logs-{k}" for k in range(b.log_dirs)]
        for d in dirs:
            d.mkdir(parents=True, exist_ok=True)
        log_dirs[b.broker_id] = dirs
    by_id = {b.broker_id: b for b in brokers}
    replicas: list[ReplicaInfo] = []
    placement_counter: dict[int, int] = {b.broker_id: 0 for b in brokers}
    for t_index, topic in enumerate(spec.topics):
        topic_id = topic.topic_id or topic_uuid(kafka_uuid(rng), topic.name)
        for p in range(topic.partitions):
            batches = _partition_batches(spec, topic, p, rng)
            total = batches[-1].last_offset + 1 if batches else 0
            rf = min(topic.replication_factor, len(brokers))
            first = (t_index + p) % len(brokers)
            chosen = [brokers[(first + i) % len(brokers)].broker_id for i in range(rf)]
            kept = {bid: total for bid in chosen}
            for f in spec.faults:
                kept = {bid: f.records_kept(bid, topic.name, p, n) for bid, n in kept.items()}
            hw = min(kept.values()) if kept else 0  # the leader's HW: what every ISR member has
            for bid in chosen:
                broker = by_id[bid]
                ld = log_dirs[bid][placement_counter[bid] % len(log_dirs[bid])]
                placement_counter[bid] += 1
                folder = ld / format_partition_dir(topic.name, p)
                segs, snaps, leo = _write_replica(spec, topic, batches, kept[bid], folder, broker.running)
                epochs: list[tuple[int, int]] = []
                for b in batches:
                    if b.last_offset < kept[bid] and (not epochs or b.epoch > epochs[-1][0]):
                        epochs.append((b.epoch, b.base_offset))
                (folder / LEADER_EPOCH_CHECKPOINT_FILE).write_bytes(
                    write_leader_epoch_checkpoint(new_leader_epoch_checkpoint(epochs))
                )
                if spec.topic_ids:
                    (folder / PARTITION_METADATA_FILE).write_bytes(
                        write_partition_metadata(PartitionMetadata(0, topic_id))
                    )
                # a clean shutdown flushes everything; a running broker has flushed up to its active segment
                recovery = leo if not broker.running else segs[-1].base_offset
                replicas.append(
                    ReplicaInfo(
                        bid, ld, topic.name, p, folder, segs[0].base_offset, leo, min(hw, leo), recovery,
                        epochs, topic_id if spec.topic_ids else None, segs, snaps,
                    )
                )
    for b in brokers:
        for ld in log_dirs[b.broker_id]:
            _write_root_files(ld, b, cluster_id, rng, replicas, spec)
    fleet = GeneratedFleet(root, spec, log_dirs, replicas)
    for f in spec.faults:
        f.apply(fleet)
    return fleet


def generate_log_dir(
    path: str | os.PathLike[str],
    topics: Sequence[TopicSpec],
    *,
    broker: BrokerSpec | None = None,
    **options: object,
) -> tuple[Path, GeneratedFleet]:
    """One broker with one log dir; returns (the log dir, the fleet record). ``options`` go to FleetSpec."""
    spec = FleetSpec(topics=topics, brokers=(broker or BrokerSpec(0),), **options)  # type: ignore[arg-type]
    fleet = generate_fleet(path, spec)
    return fleet.log_dirs[spec.brokers[0].broker_id][0], fleet


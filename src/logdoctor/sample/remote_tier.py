"""Writing a tiered partition's remote side: ``__remote_log_metadata`` events and Kafka's LocalTieredStorage.

The events and their batches are built by :mod:`logdoctor.formats.remote_log_metadata_events` (re-exported
here), whose bytes equal Kafka's for the same inputs.

The remote store is Kafka's reference RemoteStorageManager layout (K:storage/src/test/java/org/apache/
kafka/server/log/remote/storage/LocalTieredStorage.java, RemoteLogSegmentFileset.java):
``<root>/<topic>-<partition>-<topicId>/<20-digit start offset>-<segment id>.{log,index,timeindex,
snapshot,leader_epoch_checkpoint}`` (a ``.txnindex`` only when the segment has one).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.formats.remote_log_metadata_events import (
    MetadataEvent,
    metadata_batches,
    partition_delete,
    segment_metadata,
    segment_update,
)
from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition
from logdoctor.sample.logdir import Fault

__all__ = [
    "REMOTE_STORE_DIR",
    "MetadataEvent",
    "TieredPartition",
    "append_metadata_events",
    "local_tiered_storage_dir",
    "metadata_batches",
    "partition_delete",
    "segment_metadata",
    "segment_update",
    "write_local_tiered_segment",
]


def append_metadata_events(path: str | os.PathLike[str], *records: Any, ts: int) -> None:
    """Append ``records`` (events as :func:`segment_metadata` and friends make them) to the
    ``__remote_log_metadata`` segment at ``path``, after its last batch and in its leader epoch, with
    timestamps ``ts``, ``ts + 1``, ...: what the metadata manager would write next (a test plants events)."""
    from logdoctor.formats.records import iter_batches

    path = Path(path)
    data = path.read_bytes()
    last = list(iter_batches(data))[-1]
    more = metadata_batches(
        [MetadataEvent(r, ts + i) for i, r in enumerate(records)],
        base_offset=last.last_offset + 1,
        leader_epoch=last.partition_leader_epoch,
    )
    path.write_bytes(data + more)


def local_tiered_storage_dir(root: str | os.PathLike[str], tip: TopicIdPartition) -> Path:
    """``<root>/<topic>-<partition>-<topicId>`` (LocalTieredStorage's partition folder)."""
    return Path(root) / f"{tip.topic}-{tip.partition}-{tip.topic_id}"


def write_local_tiered_segment(
    root: str | os.PathLike[str],
    tip: TopicIdPartition,
    segment_id: str,
    start_offset: int,
    files: dict[str, bytes],
) -> list[Path]:
    """Write one remote segment's objects: ``files`` maps a suffix (``log``, ``index``, ``timeindex``,
    ``snapshot``, ``leader_epoch_checkpoint``, ``txnindex``) to its bytes. Returns the paths written."""
    folder = local_tiered_storage_dir(root, tip)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, data in files.items():
        path = folder / f"{start_offset:020d}-{segment_id}.{suffix}"
        path.write_bytes(data)
        written.append(path)
    return written


# --- a tiered partition in a generated fleet -------------------------------------------------------------

#: where the demo's remote store goes, beside the fleet's brokers (LocalTieredStorage's own folder name below)
REMOTE_STORE_DIR = "remote-storage"
LOCAL_TIERED_STORAGE_DIR = "kafka-tiered-storage"


def _metadata_log(folder: Path, events: Sequence[MetadataEvent], *, interval: int, running: bool) -> Any:
    """Write ``__remote_log_metadata-N``'s one segment as the broker's append path would (indexes too) and
    its producer snapshot at the log end (the metadata manager's idempotent producer id 0)."""
    from logdoctor.formats.producer_snapshot import ProducerSnapshotEntry, write_producer_snapshot
    from logdoctor.logdir.names import SegmentFileType, segment_file_name
    from logdoctor.sample.logdir import _Batch, _SegmentWriter

    folder.mkdir(parents=True, exist_ok=True)
    writer = _SegmentWriter(0, interval)
    for i, ev in enumerate(events):
        data = metadata_batches([ev], base_offset=i, first_sequence=i)
        writer.append(_Batch(i, i, ev.timestamp_ms, i, data, 0, i, 0))
    info = writer.write(folder, closed=not running)
    if events and not running:
        last = len(events) - 1
        entry = ProducerSnapshotEntry(0, 0, last, last, 0, events[-1].timestamp_ms, -1, -1)
        (folder / segment_file_name(len(events), SegmentFileType.SNAPSHOT)).write_bytes(
            write_producer_snapshot([entry])
        )
    return info


def _set_checkpoint(path: Path, topic: str, partition: int, offset: int) -> None:
    from logdoctor.formats.checkpoint import (
        new_offset_checkpoint,
        parse_offset_checkpoint,
        write_offset_checkpoint,
    )

    entries = []
    if path.exists():
        entries = [
            e
            for e in parse_offset_checkpoint(path.read_bytes(), source=str(path)).entries
            if (e[0], e[1]) != (topic, partition)
        ]
    entries.append((topic, partition, offset))
    path.write_bytes(write_offset_checkpoint(new_offset_checkpoint(entries)))


@dataclass
class TieredPartition(Fault):
    """Make one partition of a generated fleet tiered, as a broker with Kafka's LocalTieredStorage leaves it
    (a :class:`logdoctor.sample.logdir.Fault`: ``apply`` after generation).

    Its oldest segments (all but ``local_segments``) are uploaded to ``<fleet root>/remote-storage/
    kafka-tiered-storage/`` (the .log, .index, .timeindex as they were, the producer snapshot at the
    segment's end, the leader epochs up to it; RemoteLogManager.copyLogSegment, LocalTieredStorage) and
    deleted from every replica by local retention; the log-start checkpoint keeps the partition's log start
    offset below the first local segment (LogManager.checkpointLogStartOffsetsInDir writes every
    remote-enabled log); each replica's broker holds the ``__remote_log_metadata`` partition that
    RemoteLogMetadataTopicPartitioner gives the partition, with a COPY_SEGMENT_STARTED and a
    COPY_SEGMENT_FINISHED event per segment (its replication factor: the partition's brokers)."""

    topic: str
    partition: int
    local_segments: int = 2
    seed: int = 0
    # filled in by apply
    segment_ids: list[str] = field(default_factory=list)
    remote_end: int = 0
    metadata_partition: int = -1

    def apply(self, fleet: Any) -> None:
        import random

        from logdoctor.formats.checkpoint import new_leader_epoch_checkpoint, write_leader_epoch_checkpoint
        from logdoctor.formats.partition_metadata import PartitionMetadata, write_partition_metadata
        from logdoctor.logdir.names import (
            LEADER_EPOCH_CHECKPOINT_FILE,
            LOG_START_OFFSET_CHECKPOINT,
            PARTITION_METADATA_FILE,
            RECOVERY_POINT_CHECKPOINT,
            REPLICATION_OFFSET_CHECKPOINT,
            SegmentFileType,
            format_partition_dir,
            segment_file_name,
        )
        from logdoctor.logdir.remote_metadata import REMOTE_LOG_METADATA_TOPIC, metadata_partition_for
        from logdoctor.sample.logdir import ReplicaInfo, kafka_uuid

        rng = random.Random(f"{self.seed}-{self.topic}-{self.partition}")
        reps = [r for r in fleet.replicas if (r.topic, r.partition) == (self.topic, self.partition)]
        source = reps[0]
        tiered = source.segments[: max(0, len(source.segments) - self.local_segments)]
        if not tiered or source.topic_id is None:
            return
        tip = TopicIdPartition(source.topic_id, self.topic, self.partition)
        store = Path(fleet.root) / REMOTE_STORE_DIR / LOCAL_TIERED_STORAGE_DIR
        leader_broker = source.broker_id
        events: list[MetadataEvent] = []
        folder = source.path
        for seg in tiered:
            seg_id = kafka_uuid(rng)
            self.segment_ids.append(seg_id)

            def read(t: SegmentFileType, base: int = seg.base_offset) -> bytes:
                p = folder / segment_file_name(base, t)
                return p.read_bytes() if p.exists() else b""

            # the leader epoch cache up to the segment's end (the uploaded checkpoint), and the epochs of
            # the segment's own offsets (RemoteLogManager: the cache cut to [base, next))
            epochs = [(e, o) for e, o in source.leader_epochs if o < seg.next_offset]
            at_base = [(e, seg.base_offset) for e, o in epochs if o <= seg.base_offset][-1:]
            seg_epochs = at_base + [(e, o) for e, o in epochs if o > seg.base_offset]
            files = {
                "log": seg.path.read_bytes(),
                "index": read(SegmentFileType.INDEX),
                "timeindex": read(SegmentFileType.TIMEINDEX),
                "snapshot": read(SegmentFileType.SNAPSHOT, seg.next_offset),
                "leader_epoch_checkpoint": write_leader_epoch_checkpoint(new_leader_epoch_checkpoint(epochs)),
            }
            write_local_tiered_segment(store, tip, seg_id, seg.base_offset, files)
            # uploaded right after the segment rolled (its events dated before the next record, so the fleet's
            # newest timestamp stays its newest record's)
            t = seg.max_timestamp + 100
            meta = segment_metadata(
                tip,
                seg_id,
                seg.base_offset,
                seg.next_offset - 1,
                broker_id=leader_broker,
                event_timestamp_ms=t,
                max_timestamp_ms=seg.max_timestamp,
                leader_epochs=seg_epochs,
                size=seg.size,
            )
            events.append(MetadataEvent(meta, t))
            done = segment_update(
                tip,
                seg_id,
                SegmentState.COPY_SEGMENT_FINISHED,
                broker_id=leader_broker,
                event_timestamp_ms=t + 5,
            )
            events.append(MetadataEvent(done, t + 5))
        self.remote_end = tiered[-1].next_offset
        mp = metadata_partition_for(tip.topic_id, tip.partition)
        self.metadata_partition = mp
        meta_topic_id = kafka_uuid(rng)
        for rep in reps:
            # local retention after the upload: the tiered segments and their producer snapshots go
            for seg in rep.segments[: len(tiered)]:
                for t in (SegmentFileType.LOG, SegmentFileType.INDEX, SegmentFileType.TIMEINDEX):
                    (rep.path / segment_file_name(seg.base_offset, t)).unlink(missing_ok=True)
            for snap in [s for s in rep.producer_snapshots if s < self.remote_end]:
                (rep.path / segment_file_name(snap, SegmentFileType.SNAPSHOT)).unlink(missing_ok=True)
            rep.segments = rep.segments[len(tiered) :]
            rep.producer_snapshots = [s for s in rep.producer_snapshots if s >= self.remote_end]
            _set_checkpoint(
                rep.log_dir / LOG_START_OFFSET_CHECKPOINT, self.topic, self.partition, rep.log_start_offset
            )
            # the metadata partition, replicated on the partition's brokers
            running = any(b.running for b in fleet.spec.brokers if b.broker_id == rep.broker_id)
            mfolder = rep.log_dir / format_partition_dir(REMOTE_LOG_METADATA_TOPIC, mp)
            info = _metadata_log(mfolder, events, interval=fleet.spec.index_interval_bytes, running=running)
            (mfolder / LEADER_EPOCH_CHECKPOINT_FILE).write_bytes(
                write_leader_epoch_checkpoint(new_leader_epoch_checkpoint([(0, 0)]))
            )
            (mfolder / PARTITION_METADATA_FILE).write_bytes(
                write_partition_metadata(PartitionMetadata(0, meta_topic_id))
            )
            leo = len(events)
            recovery = leo if not running else 0
            _set_checkpoint(rep.log_dir / RECOVERY_POINT_CHECKPOINT, REMOTE_LOG_METADATA_TOPIC, mp, recovery)
            _set_checkpoint(rep.log_dir / REPLICATION_OFFSET_CHECKPOINT, REMOTE_LOG_METADATA_TOPIC, mp, leo)
            fleet.replicas.append(
                ReplicaInfo(
                    rep.broker_id,
                    rep.log_dir,
                    REMOTE_LOG_METADATA_TOPIC,
                    mp,
                    mfolder,
                    0,
                    leo,
                    leo,
                    recovery,
                    [(0, 0)],
                    meta_topic_id,
                    [info],
                    [leo] if not running else [],
                )
            )

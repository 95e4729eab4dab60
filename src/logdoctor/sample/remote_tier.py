"""Writing a tiered partition's remote side: ``__remote_log_metadata`` events and Kafka's LocalTieredStorage.

The events are the values Kafka's RemoteLogMetadataSerde writes (:func:`logdoctor.formats.internal.
encode_remote_log_metadata`), one record per batch, null key, as the topic-based metadata manager's
producer sends them (K:storage/.../remote/metadata/storage/ProducerManager.java); the bytes equal
Kafka's for the same inputs (tests/sample/test_remote_tier.py re-encodes ../shared/tiered's records).

The remote store is Kafka's reference RemoteStorageManager layout (K:storage/src/test/java/org/apache/
kafka/server/log/remote/storage/LocalTieredStorage.java, RemoteLogSegmentFileset.java):
``<root>/<topic>-<partition>-<topicId>/<20-digit start offset>-<segment id>.{log,index,timeindex,
snapshot,leader_epoch_checkpoint}`` (a ``.txnindex`` only when the segment has one).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logdoctor.formats.internal import encode_remote_log_metadata
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.remote_metadata import PartitionDeleteState, SegmentState, TopicIdPartition

__all__ = [
    "MetadataEvent",
    "local_tiered_storage_dir",
    "metadata_batches",
    "partition_delete",
    "segment_metadata",
    "segment_update",
    "write_local_tiered_segment",
]


def _tip(tip: TopicIdPartition) -> dict[str, Any]:
    return {"name": tip.topic, "id": tip.topic_id, "partition": tip.partition}


def segment_metadata(
    tip: TopicIdPartition,
    segment_id: str,
    start_offset: int,
    end_offset: int,
    *,
    broker_id: int,
    event_timestamp_ms: int,
    max_timestamp_ms: int,
    leader_epochs: Sequence[tuple[int, int]],
    size: int,
    state: SegmentState = SegmentState.COPY_SEGMENT_STARTED,
) -> dict[str, Any]:
    """A RemoteLogSegmentMetadataRecord (what RemoteLogManager.copyLogSegment sends first)."""
    return {
        "type": "RemoteLogSegmentMetadataRecord",
        "version": 0,
        "data": {
            "remote_log_segment_id": {"topic_id_partition": _tip(tip), "id": segment_id},
            "start_offset": start_offset,
            "end_offset": end_offset,
            "broker_id": broker_id,
            "max_timestamp_ms": max_timestamp_ms,
            "event_timestamp_ms": event_timestamp_ms,
            "segment_leader_epochs": [{"leader_epoch": e, "offset": o} for e, o in leader_epochs],
            "segment_size_in_bytes": size,
            "custom_metadata": None,
            "remote_log_segment_state": int(state),
        },
    }


def segment_update(
    tip: TopicIdPartition,
    segment_id: str,
    state: SegmentState,
    *,
    broker_id: int,
    event_timestamp_ms: int,
    custom_metadata: bytes | None = None,
) -> dict[str, Any]:
    """A RemoteLogSegmentMetadataUpdateRecord (COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED/FINISHED)."""
    return {
        "type": "RemoteLogSegmentMetadataUpdateRecord",
        "version": 0,
        "data": {
            "remote_log_segment_id": {"topic_id_partition": _tip(tip), "id": segment_id},
            "broker_id": broker_id,
            "event_timestamp_ms": event_timestamp_ms,
            "custom_metadata": custom_metadata,
            "remote_log_segment_state": int(state),
        },
    }


def partition_delete(
    tip: TopicIdPartition, state: PartitionDeleteState, *, broker_id: int, event_timestamp_ms: int
) -> dict[str, Any]:
    """A RemotePartitionDeleteMetadataRecord (the controller's DELETE_PARTITION_MARKED, then the leader's)."""
    return {
        "type": "RemotePartitionDeleteMetadataRecord",
        "version": 0,
        "data": {
            "topic_id_partition": _tip(tip),
            "broker_id": broker_id,
            "event_timestamp_ms": event_timestamp_ms,
            "remote_partition_delete_state": int(state),
        },
    }


@dataclass(frozen=True, slots=True)
class MetadataEvent:
    """One record to write: the decoded event and the producer's timestamp for it."""

    record: dict[str, Any]
    timestamp_ms: int


def metadata_batches(
    events: Sequence[MetadataEvent],
    *,
    base_offset: int,
    leader_epoch: int = 0,
    producer_id: int = 0,
    producer_epoch: int = 0,
    first_sequence: int | None = None,
) -> bytes:
    """The bytes of ``events`` as the metadata topic holds them: one uncompressed batch per record, null
    key, offsets from ``base_offset``, from the metadata manager's idempotent producer (producer id and
    epoch, one sequence number per batch from ``first_sequence``, default ``base_offset``; producer_id -1:
    not idempotent)."""
    out = bytearray()
    seq = base_offset if first_sequence is None else first_sequence
    for i, ev in enumerate(events):
        value = encode_remote_log_metadata(ev.record)
        out += build_record_batch(
            [RecordSpec(value=value, key=None, timestamp=ev.timestamp_ms)],
            base_offset=base_offset + i,
            partition_leader_epoch=leader_epoch,
            producer_id=producer_id,
            producer_epoch=producer_epoch if producer_id >= 0 else -1,
            base_sequence=seq + i if producer_id >= 0 else -1,
        )
    return bytes(out)


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

"""The ``__remote_log_metadata`` events Kafka's topic-based RemoteLogMetadataManager writes, as bytes.

Builders of the decoded records (:func:`segment_metadata`: a RemoteLogSegmentMetadataRecord, what
RemoteLogManager.copyLogSegment sends first; :func:`segment_update`: a
RemoteLogSegmentMetadataUpdateRecord; :func:`partition_delete`) and :func:`metadata_batches`, the bytes
of the topic's batches: the values RemoteLogMetadataSerde writes
(:func:`logdoctor.formats.internal.encode_remote_log_metadata`), one record per batch, null key, as the
metadata manager's producer sends them (K:storage/.../remote/metadata/storage/ProducerManager.java).
The bytes equal Kafka's for the same inputs (tests/sample/test_remote_metadata_encoder.py re-encodes
every batch of ../shared/tiered). States are RemoteLogSegmentState's ids (0 COPY_SEGMENT_STARTED,
1 COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from logdoctor.formats.internal import encode_remote_log_metadata
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

__all__ = [
    "COPY_SEGMENT_FINISHED",
    "COPY_SEGMENT_STARTED",
    "MetadataEvent",
    "TopicIdPartitionLike",
    "metadata_batches",
    "partition_delete",
    "segment_metadata",
    "segment_update",
]

COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED = 0, 1


class TopicIdPartitionLike(Protocol):
    """Topic id (Kafka's base64), topic name, partition (e.g. logdir.remote_metadata.TopicIdPartition)."""

    @property
    def topic_id(self) -> str: ...

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


def _tip(tip: TopicIdPartitionLike) -> dict[str, Any]:
    return {"name": tip.topic, "id": tip.topic_id, "partition": tip.partition}


def segment_metadata(
    tip: TopicIdPartitionLike,
    segment_id: str,
    start_offset: int,
    end_offset: int,
    *,
    broker_id: int,
    event_timestamp_ms: int,
    max_timestamp_ms: int,
    leader_epochs: Sequence[tuple[int, int]],
    size: int,
    state: int = COPY_SEGMENT_STARTED,
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
    tip: TopicIdPartitionLike,
    segment_id: str,
    state: int,
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
    tip: TopicIdPartitionLike, state: int, *, broker_id: int, event_timestamp_ms: int
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

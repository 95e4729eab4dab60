"""The remote log metadata encoder against Kafka's own bytes (../shared/tiered, written by
RemoteLogMetadataSerde and Kafka's producer): decode every record, build it again with the sample
helpers, and get the same bytes, record by record and batch by batch."""

from __future__ import annotations

import realworld
from logdoctor.formats.internal import decode_remote_log_metadata, encode_remote_log_metadata
from logdoctor.formats.records import iter_batches
from logdoctor.logdir.remote_metadata import PartitionDeleteState, SegmentState, TopicIdPartition
from logdoctor.sample.remote_tier import (
    MetadataEvent,
    metadata_batches,
    partition_delete,
    segment_metadata,
    segment_update,
)


def _rebuild(decoded: dict) -> dict:
    """The same event built from its fields by the sample helpers (not by re-encoding the dict)."""
    d = decoded["data"]
    if decoded["type"] == "RemoteLogSegmentMetadataRecord":
        sid = d["remote_log_segment_id"]
        t = sid["topic_id_partition"]
        return segment_metadata(
            TopicIdPartition(t["id"], t["name"], t["partition"]),
            sid["id"],
            d["start_offset"],
            d["end_offset"],
            broker_id=d["broker_id"],
            event_timestamp_ms=d["event_timestamp_ms"],
            max_timestamp_ms=d["max_timestamp_ms"],
            leader_epochs=[(e["leader_epoch"], e["offset"]) for e in d["segment_leader_epochs"]],
            size=d["segment_size_in_bytes"],
            state=SegmentState(d["remote_log_segment_state"]),
        )
    if decoded["type"] == "RemoteLogSegmentMetadataUpdateRecord":
        sid = d["remote_log_segment_id"]
        t = sid["topic_id_partition"]
        return segment_update(
            TopicIdPartition(t["id"], t["name"], t["partition"]),
            sid["id"],
            SegmentState(d["remote_log_segment_state"]),
            broker_id=d["broker_id"],
            event_timestamp_ms=d["event_timestamp_ms"],
            custom_metadata=d["custom_metadata"],
        )
    t = d["topic_id_partition"]
    return partition_delete(
        TopicIdPartition(t["id"], t["name"], t["partition"]),
        PartitionDeleteState(d["remote_partition_delete_state"]),
        broker_id=d["broker_id"],
        event_timestamp_ms=d["event_timestamp_ms"],
    )


def test_encoder_gives_kafkas_bytes() -> None:
    tiered = realworld.require_tiered()
    logs = sorted(tiered.glob("**/kafka-logs/__remote_log_metadata-*/*.log"))
    assert len(logs) == 8  # kafka-local and three aiven variants, -16 and -21 each
    batches = 0
    for path in logs:
        data = path.read_bytes()
        for batch in iter_batches(data, source=str(path)):
            [rec] = list(batch.records())  # one event per batch, as the metadata producer sends them
            assert rec.key is None
            assert (batch.producer_id, batch.base_sequence) == (
                0,
                batch.base_offset,
            )  # its idempotent producer
            decoded = decode_remote_log_metadata(rec.key, rec.value)
            rebuilt = _rebuild(decoded)
            assert encode_remote_log_metadata(rebuilt) == bytes(rec.value), (path, rec.offset)
            ours = metadata_batches(
                [MetadataEvent(rebuilt, rec.timestamp)],
                base_offset=batch.base_offset,
                leader_epoch=batch.partition_leader_epoch,
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                first_sequence=batch.base_sequence,
            )
            assert ours == bytes(data[batch.position : batch.position + batch.size]), (path, rec.offset)
            batches += 1
    assert batches == 82

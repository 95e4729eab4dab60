"""The replay of __remote_log_metadata against what Kafka and Aiven's plugin really wrote (../shared/tiered).

The truth is independent of our decoder: the objects actually present in each remote store (their file
names carry the start offset and the segment id), the README's offsets (payments-0 remote [0, 1296);
payments-1 tiered up to 2289 with LocalTieredStorage, up to 1962 with Aiven's plugin), the segment files
still in the log dir, and Kafka's own placement of the events (the metadata partition each partition's
events are in, which our partitioner must compute; murmur2 checked against kafka-python's).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from kafka.partitioner.default import murmur2 as kp_murmur2

import realworld
from logdoctor.formats.murmur2 import murmur2
from logdoctor.logdir.remote_metadata import (
    RemoteLogMetadataReplay,
    SegmentState,
    metadata_partition_for,
    replay_remote_log_metadata,
)

PAYMENTS_ID = "cGF5bWVudHMtdG9waWMwMQ"
VARIANTS = ["kafka-local", "aiven/plain", "aiven/compressed", "aiven/encrypted"]
#: the README's offsets: (variant kind, partition) -> the first local offset (the remote tier ends below it)
LOCAL_FROM = {("kafka-local", 0): 1296, ("kafka-local", 1): 2289, ("aiven", 0): 1296, ("aiven", 1): 1962}
_OBJECT = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.(log|rsm-manifest)$")


def _store_objects(tiered: Path, variant: str, partition: int) -> dict[str, int]:
    """segment id -> start offset, from the names of the .log (Kafka) or .rsm-manifest (Aiven) objects."""
    if variant == "kafka-local":
        folder = tiered / "kafka-local/remote/kafka-tiered-storage" / f"payments-{partition}-{PAYMENTS_ID}"
    else:
        folder = tiered / variant / "storage" / f"payments-{PAYMENTS_ID}" / str(partition)
    found = {}
    for p in folder.iterdir():
        m = _OBJECT.match(p.name)
        if m:
            found[m.group(2)] = int(m.group(1))
    assert found, folder
    return found


def test_murmur2_agrees_with_kafka_python() -> None:
    for data in (b"", b"a", b"ab", b"abc", b"\x01\x02\x03\x04", b"\xff\xfe\xfd\xfc\xfb", bytes(range(37))):
        assert murmur2(data) & 0xFFFFFFFF == kp_murmur2(data), data


@pytest.mark.parametrize("variant", VARIANTS)
def test_replay_matches_the_objects_in_the_store_and_the_readme(variant: str) -> None:
    tiered = realworld.require_tiered()
    log_dir = tiered / variant / "kafka-logs"
    md = replay_remote_log_metadata([log_dir])
    assert md.problems == []
    assert sorted(md.metadata_dirs) == [16, 21]
    kind = variant.split("/")[0]
    for partition in (0, 1):
        rp = md.partition(PAYMENTS_ID, "payments", partition)
        assert rp is not None
        # Kafka put the events where its partitioner says (RemoteLogMetadataTopicPartitioner)
        assert rp.metadata_partition == metadata_partition_for(PAYMENTS_ID, partition, 50)
        objects = _store_objects(tiered, variant, partition)
        copied = rp.copied
        assert all(s.state is SegmentState.COPY_SEGMENT_FINISHED for s in rp.live_segments)
        # every COPY_SEGMENT_FINISHED segment is an object in the store, with the same start offset
        assert {s.segment_id: s.start_offset for s in copied} == objects
        # contiguous from 0 up to the first local segment (the README's offsets and the log dir's files)
        local_from = LOCAL_FROM[(kind, partition)]
        first_local = min(int(p.stem) for p in (log_dir / f"payments-{partition}").glob("*.log"))
        assert first_local == local_from
        assert rp.remote_log_start_offset == 0 and rp.remote_log_end_offset == local_from
        assert rp.uncovered(0, local_from) == []
        ends = [(s.start_offset, s.end_offset) for s in copied]
        assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ends))
        assert rp.remote_bytes == sum(s.size for s in copied) > 0
        for s in copied:
            assert [e.state for e in s.events] == ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"]
            assert s.leader_epochs and s.leader_epochs[0][1] == s.start_offset
    # the untiered topic has no remote events
    assert md.partition(None, "audit", 0) is None


def test_kafka_local_segment_sizes_are_the_uploaded_logs() -> None:
    """LocalTieredStorage copies the .log as is: the size in the metadata is the object's size."""
    tiered = realworld.require_tiered()
    md = replay_remote_log_metadata([tiered / "kafka-local/kafka-logs"])
    for partition in (0, 1):
        rp = md.partition(PAYMENTS_ID, "payments", partition)
        assert rp is not None
        folder = tiered / "kafka-local/remote/kafka-tiered-storage" / f"payments-{partition}-{PAYMENTS_ID}"
        for s in rp.copied:
            obj = folder / f"{s.start_offset:020d}-{s.segment_id}.log"
            assert obj.stat().st_size == s.size


def test_replay_is_lazy(tmp_path: Path) -> None:
    tiered = realworld.require_tiered()
    replay = RemoteLogMetadataReplay([tiered / "kafka-local/kafka-logs", tmp_path / "missing"])
    assert "metadata" not in replay.__dict__  # construction read nothing
    assert replay.metadata.records == 22
    assert [p.kind for p in replay.metadata.problems] == ["unreadable"]  # the missing dir, named


def test_a_metadata_partition_not_among_the_inputs_is_not_covered(tmp_path: Path) -> None:
    tiered = realworld.require_tiered()
    md = replay_remote_log_metadata([tiered / "kafka-local/kafka-logs"])
    assert md.covers(PAYMENTS_ID, 0) and md.covers(PAYMENTS_ID, 1)
    # a partition whose metadata partition is neither -16 nor -21 cannot be known from these inputs
    other = next(p for p in range(2, 200) if metadata_partition_for(PAYMENTS_ID, p) not in (16, 21))
    assert not md.covers(PAYMENTS_ID, other)
    one = next(p for p in range(2, 200) if metadata_partition_for(PAYMENTS_ID, p) == 16)
    assert md.covers(PAYMENTS_ID, one)  # read, and no event: no remote segment

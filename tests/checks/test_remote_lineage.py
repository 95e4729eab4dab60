"""The leader-epoch lineage rule of the remote tier audit against Kafka's own expectations.

The cases and their verdicts are those of apache/kafka's RemoteLogManagerTest
(core/src/test/java/kafka/log/remote/RemoteLogManagerTest.java, 1eb7644:
testRemoteSegmentWithinLeaderEpochs and testRemoteSegmentWithinLeaderEpochsForOverlappingSegments), the
tests of the broker's RemoteLogManager.isRemoteSegmentWithinLeaderEpochs: (segment start, end, epochs),
log end offset, lineage -> within or not.
"""

from __future__ import annotations

import pytest

from logdoctor.checks.remote_audit import audit_partition, within_leader_epochs
from logdoctor.logdir.remote_metadata import (
    RemotePartition,
    RemoteSegment,
    SegmentState,
    TopicIdPartition,
)

TIP = TopicIdPartition("cGF5bWVudHMtdG9waWMwMQ", "payments", 0)
LINEAGE = {0: 0, 1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 7: 70}
OVERLAPPING = {7: 51, 9: 100}


def _seg(
    start: int, end: int, epochs: dict[int, int], seg_id: str = "AAAAAAAAAAAAAAAAAAAAAA"
) -> RemoteSegment:
    return RemoteSegment(
        seg_id, TIP, start, end, 0, tuple(sorted(epochs.items())), 1, SegmentState.COPY_SEGMENT_FINISHED, 0, 0
    )


CASES = [
    # testRemoteSegmentWithinLeaderEpochs, log end offset 90
    (15, 35, {1: 15, 2: 20, 3: 30}, 90, LINEAGE, True),
    (15, 19, {1: 15}, 90, LINEAGE, True),
    (0, 5, {0: 0}, 90, LINEAGE, True),
    (70, 75, {7: 70}, 90, LINEAGE, True),
    (15, 29, {1: 15, 2: 20}, 90, LINEAGE, True),
    (55, 85, {5: 55, 6: 60, 7: 70}, 90, LINEAGE, False),
    (15, 45, {1: 15, 2: 20, 4: 40}, 90, LINEAGE, False),
    (15, 95, LINEAGE, 90, LINEAGE, False),
    (15, 90, LINEAGE, 90, LINEAGE, False),
    (5, 25, {1: 5, 2: 20}, 90, LINEAGE, False),
    (15, 35, {1: 15, 2: 20}, 90, LINEAGE, False),
    # testRemoteSegmentWithinLeaderEpochsForOverlappingSegments, log end offset 210
    (14, 150, {5: 14, 7: 15, 9: 100}, 210, OVERLAPPING, True),
    (2, 7, {2: 5, 3: 6}, 210, OVERLAPPING, False),
    (15, 250, {7: 15, 9: 100, 10: 200}, 210, OVERLAPPING, False),
    (75, 100, {8: 75}, 210, OVERLAPPING, False),
    (15, 150, {7: 15, 9: 101}, 210, OVERLAPPING, False),
    (99, 150, {9: 99}, 210, OVERLAPPING, False),
]


@pytest.mark.parametrize(("start", "end", "epochs", "log_end", "lineage", "within"), CASES)
def test_within_leader_epochs_as_kafka_decides(start, end, epochs, log_end, lineage, within) -> None:
    why = within_leader_epochs(_seg(start, end, epochs), lineage.items(), log_end)
    assert (why is None) is within, why


def test_epochs_going_down_between_segments_and_against_the_local_lineage() -> None:
    """Without a local lineage (a partition the log dirs do not hold) only the order of epochs along the
    remote log is checked; with one, each segment against it."""
    a = _seg(0, 99, {3: 0}, "AAAAAAAAAAAAAAAAAAAAAA")
    b = _seg(100, 199, {2: 100}, "BBBBBBBBBBBBBBBBBBBBBB")
    rp = RemotePartition(TIP, 21, {a.segment_id: a, b.segment_id: b})
    [br] = audit_partition(rp, None).epoch_breaks
    assert (br.case, br.segment.segment_id, br.previous.segment_id) == (
        "between-segments",
        b.segment_id,
        a.segment_id,
    )
    rp = RemotePartition(TIP, 21, {a.segment_id: a})
    assert audit_partition(rp, None, lineage=[(3, 0)], local_log_start_offset=100).epoch_breaks == []
    # this replica's lineage never had epoch 3: the segment is another leader's history
    [br] = audit_partition(rp, None, lineage=[(0, 0), (4, 50)], local_log_start_offset=100).epoch_breaks
    assert br.case == "outside-lineage" and "last epoch 3" not in br.reason

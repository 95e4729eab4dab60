"""Which COPY_SEGMENT_STARTED segments the audit calls dangling (checks.remote_audit.dangling_uploads).

Kafka tells an upload in progress from a dangling one only in memory (RemoteLogManager
segmentIdsBeingCopied; KAFKA-17062: "either they are being copied ... or they are dangling"). Offline the
metadata must show the copy ended: a later copy event of the partition (its leader copies one segment at
a time, RLMCopyTask), or an event DANGLING_AFTER_MS newer than its start anywhere in the metadata read.
"""

from __future__ import annotations

from logdoctor.checks.remote_audit import DANGLING_AFTER_MS, dangling_uploads, newest_event_ms
from logdoctor.logdir.remote_metadata import (
    RemoteEvent,
    RemotePartition,
    RemoteSegment,
    SegmentState,
    TopicIdPartition,
)

TIP = TopicIdPartition("cGF5bWVudHMtdG9waWMwMQ", "payments", 0)
T0 = 1_795_454_733_031


def _seg(seg_id: str, start: int, *events: tuple[SegmentState, int, int]) -> RemoteSegment:
    """A segment and its events (state, timestamp, offset in the metadata partition)."""
    evs = [RemoteEvent(s.name, ts, 0, "m.log", None, off) for s, ts, off in events]
    return RemoteSegment(
        seg_id, TIP, start, start + 99, 0, ((0, start),), 1, events[-1][0], 0, events[0][1], events=evs
    )


def _rp(*segs: RemoteSegment) -> RemotePartition:
    return RemotePartition(TIP, 21, {s.segment_id: s for s in segs})


STARTED, FINISHED = SegmentState.COPY_SEGMENT_STARTED, SegmentState.COPY_SEGMENT_FINISHED


def test_the_newest_upload_is_in_progress_until_the_metadata_moves_an_hour_on() -> None:
    done = _seg("A" * 22, 0, (STARTED, T0, 0), (FINISHED, T0 + 5, 1))
    going = _seg("B" * 22, 100, (STARTED, T0 + 10, 2))
    rp = _rp(done, going)
    assert newest_event_ms([rp]) == T0 + 10
    assert dangling_uploads(rp, newest_event_ms([rp])) == []
    assert dangling_uploads(rp, T0 + 10 + DANGLING_AFTER_MS - 1) == []
    [(seg, why)] = dangling_uploads(rp, T0 + 10 + DANGLING_AFTER_MS)
    assert seg is going and "1.0 h newer than its start" in why


def test_a_later_upload_of_the_partition_ends_the_earlier_one_at_once() -> None:
    left = _seg("B" * 22, 100, (STARTED, T0, 2))
    again = _seg("C" * 22, 100, (STARTED, T0 + 1, 3), (FINISHED, T0 + 2, 4))
    [(seg, why)] = dangling_uploads(_rp(left, again), T0 + 2)
    assert seg is left and "a later upload of payments-0" in why
    # a later upload that itself has not finished is the one in progress
    newer = _seg("D" * 22, 200, (STARTED, T0 + 3, 5))
    assert [s.segment_id for s, _w in dangling_uploads(_rp(left, newer), T0 + 3)] == [left.segment_id]

"""Which remote segment the broker reads for each offset: the leader-epoch lineage rule of the remote tier.

Pure data over the replayed remote log metadata (:mod:`logdoctor.logdir.remote_metadata`) and a
partition's leader-epoch lineage (its ``leader-epoch-checkpoint`` entries), shared by every caller that
chooses among overlapping finished segments: the read plan
(:func:`logdoctor.logdir.remote_attach.attach_remote`: what an export reads) and the remote tier audit
(:mod:`logdoctor.checks.remote_audit`: which of two overlapping segments it names as the second copy).
K: = path in apache/kafka.

- :func:`within_leader_epochs`: K:core/.../log/remote/RemoteLogManager.java
  ``isRemoteSegmentWithinLeaderEpochs`` (the expiration task deletes a segment outside the lineage);
- :func:`readable_segments`: a fetch looks the offset's epoch up in the local lineage and reads the
  segment that epoch maps the offset to (RemoteLogManager.read, RemoteLogMetadataCache
  ``remoteLogSegmentMetadata``): a segment outside the lineage is never the one read where a segment
  within it holds the offsets; among segments of the same epochs, the one whose COPY_SEGMENT_FINISHED
  came last replaces the others from its start offset on
  (K:storage/.../remote/metadata/storage/RemoteLogLeaderEpochState.java
  ``handleSegmentWithCopySegmentFinishedState``).
"""

from __future__ import annotations

from collections.abc import Iterable

from logdoctor.logdir.remote_metadata import RemotePartition, RemoteSegment, SegmentState

__all__ = [
    "filtered_epochs",
    "first_epoch",
    "last_epoch",
    "readable_segments",
    "within_leader_epochs",
]


def filtered_epochs(epochs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """(epoch, start offset) sorted by epoch, without the epochs that hold no record (the next epoch
    starts at the same offset: RemoteLogManager.buildFilteredLeaderEpochMap)."""
    items = sorted(dict(epochs).items())
    return [(e, o) for i, (e, o) in enumerate(items) if i + 1 == len(items) or items[i + 1][1] != o]


def within_leader_epochs(
    seg: RemoteSegment, lineage: Iterable[tuple[int, int]], log_end_offset: int | None
) -> str | None:
    """Why ``seg`` is not within the partition's leader-epoch ``lineage`` as the broker's
    RemoteLogManager.isRemoteSegmentWithinLeaderEpochs decides it (None: it is): the segment's epochs
    must be the lineage's, each starting where the lineage says, and end before the next epoch."""
    leader = dict(sorted(dict(lineage).items()))
    seg_epochs = dict(filtered_epochs(seg.leader_epochs))
    if not leader or not seg_epochs:
        return None
    lkeys = sorted(leader)
    skeys = sorted(seg_epochs)
    last = skeys[-1]
    if last < lkeys[0] or last > lkeys[-1]:
        return f"its last epoch {last} is outside the lineage's epochs {lkeys[0]}-{lkeys[-1]}"
    first = next((e for e in skeys if e >= lkeys[0]), None)
    if first is None:
        return "none of its epochs is in the lineage"
    for e in skeys:
        if e < first:
            continue
        if e not in leader:
            return f"its epoch {e} is not in the lineage"
        lower = [k for k in lkeys if k < e]
        if e == first and lower and seg_epochs[e] < leader[e]:
            return f"its epoch {e} starts at {seg_epochs[e]}, before the lineage's {leader[e]}"
        higher_l = next(((k, leader[k]) for k in lkeys if k > e), None)
        if e == last:
            if higher_l is not None and seg.end_offset > higher_l[1] - 1:
                return (
                    f"it ends at {seg.end_offset}, past the start {higher_l[1]} of epoch {higher_l[0]} "
                    f"in the lineage"
                )
        else:
            higher_s = next(((k, seg_epochs[k]) for k in skeys if k > e), None)
            if higher_l != higher_s:
                return f"after its epoch {e} come {higher_s}, the lineage has {higher_l}"
    if log_end_offset is not None and seg.end_offset >= log_end_offset:
        return f"it ends at {seg.end_offset}, at or past the log end offset {log_end_offset}"
    return None


def last_epoch(seg: RemoteSegment) -> int | None:
    return max((e for e, _o in seg.leader_epochs), default=None)


def first_epoch(seg: RemoteSegment) -> int | None:
    return min((e for e, _o in seg.leader_epochs), default=None)


def _finished_at(seg: RemoteSegment) -> int:
    """Where the segment's COPY_SEGMENT_FINISHED event is in its metadata partition (the order the
    broker applied them in; -1: not known)."""
    name = SegmentState.COPY_SEGMENT_FINISHED.name
    return max((e.offset for e in seg.events if e.state == name), default=-1)


def _later_wins(segments: Iterable[RemoteSegment]) -> list[RemoteSegment]:
    """One segment per offset, in offset order: a segment replaces those that start at or after its start
    (the same start offset: the one finished last)."""
    out: list[RemoteSegment] = []
    for s in sorted(segments, key=lambda s: (s.start_offset, _finished_at(s))):
        while out and out[-1].start_offset >= s.start_offset:
            out.pop()
        out.append(s)
    return out


def _overlap(a: RemoteSegment, b: RemoteSegment) -> bool:
    return a.start_offset <= b.end_offset and b.start_offset <= a.end_offset


def readable_segments(
    rp: RemotePartition,
    lineage: Iterable[tuple[int, int]] | None = None,
    log_end_offset: int | None = None,
) -> list[RemoteSegment]:
    """The finished segments the broker reads, one per offset, in offset order (see the module doc).

    With the partition's ``lineage`` (its leader-epoch-checkpoint entries; None or empty: not known), a
    segment not :func:`within_leader_epochs` is read only where no segment within it holds any of its
    offsets (the broker would answer OffsetOutOfRange there; its offsets are still read once rather than
    not at all). Without it, every finished segment competes by start offset and finish order."""
    copied = rp.copied
    lin = list(lineage) if lineage is not None else []
    if not lin:
        return _later_wins(copied)
    within = [s for s in copied if within_leader_epochs(s, lin, log_end_offset) is None]
    chosen = _later_wins(within)
    ids = {s.segment_id for s in within}
    outside = [s for s in copied if s.segment_id not in ids and not any(_overlap(s, c) for c in chosen)]
    return _later_wins([*chosen, *outside])

"""Where a follower's log is truncated when it starts fetching from a leader: the leader-epoch rule.

Pure arithmetic over two leader-epoch caches (``(epoch, start offset)`` entries, oldest first, as
leader-epoch-checkpoint holds them) and the two log end offsets; nothing is read here. Used by the
``REPLICA_DIVERGED`` finding (:mod:`logdoctor.checks.divergence`) and meant for any procedure that must
know what a replica loses when another one leads (e.g. refusing a sync in the wrong direction).

What Kafka does (K:core/.../server/AbstractFetcherThread.scala ``getOffsetTruncationState``, with
K:storage/.../epoch/LeaderEpochFileCache.java ``endOffsetFor`` on both sides, and
K:core/.../server/ReplicaManager.scala ``initialFetchOffset``):

1. The follower asks the leader for the end offset of its own latest epoch (OffsetsForLeaderEpoch, or the
   diverging epoch of a Fetch response, which the leader computes with the same ``endOffsetFor``).
2. The leader answers ``endOffsetFor(requested, its log end offset)``: its log end offset when the epoch is
   its latest; else the start offset of its first epoch above the requested one, with its largest epoch
   at or below the requested one (the requested epoch itself when it has none below); undefined when the
   request is undefined (no epoch cache) or above every epoch it knows.
3. Undefined offset: the follower truncates to its initial fetch offset, its high watermark (no epochs).
   Else the follower looks up the leader's answered epoch in its own cache (``endOffsetFor`` again, with its
   own log end offset): none (it did not track epochs that old): truncate to min(leader's offset, own log
   end); another epoch than the leader's: truncate to min(its end offset for that epoch, own log end) and
   ask again with the epoch cache truncated there; the same epoch: truncate to min(both end offsets, own
   log end), done.

A truncation at or above the follower's log end offset removes nothing (a follower that only lags).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["UNDEFINED", "Truncation", "end_offset_for", "follower_truncation"]

#: LeaderEpochFileCache's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET
UNDEFINED = -1

EpochEntries = Sequence[tuple[int, int]]


def end_offset_for(epochs: EpochEntries, requested: int, log_end_offset: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: ``(epoch, end offset)`` of the requested epoch in a cache holding
    ``epochs`` (oldest first) of a log ending at ``log_end_offset``; ``(-1, -1)`` when undefined."""
    if requested == UNDEFINED or not epochs:
        return UNDEFINED, UNDEFINED
    by_epoch = sorted(epochs)
    if by_epoch[-1][0] == requested:
        return requested, log_end_offset
    higher = next((e for e in by_epoch if e[0] > requested), None)
    if higher is None:
        return UNDEFINED, UNDEFINED
    floor = next((e for e in reversed(by_epoch) if e[0] <= requested), None)
    if floor is None:
        return requested, higher[1]
    return floor[0], higher[1]


@dataclass(frozen=True, slots=True)
class Truncation:
    """Where the follower's log ends after the truncation, and the requests it took."""

    offset: int  # the follower's log end offset after truncating (== its log end: nothing removed)
    rounds: int  # OffsetsForLeaderEpoch requests (each intermediate truncation asks again)
    via_high_watermark: bool = False  # an undefined answer: truncated to the high watermark

    def removes(self, follower_log_end_offset: int) -> bool:
        return self.offset < follower_log_end_offset


def follower_truncation(
    leader_epochs: EpochEntries,
    leader_log_end_offset: int,
    follower_epochs: EpochEntries,
    follower_log_end_offset: int,
    follower_high_watermark: int | None = None,
) -> Truncation:
    """Where the follower's log is truncated when it fetches from this leader (the module docstring's
    rule). ``follower_high_watermark`` None: its log end offset (an undefined answer then removes nothing)."""
    epochs = sorted(follower_epochs)
    leo = follower_log_end_offset
    hw = leo if follower_high_watermark is None else follower_high_watermark
    rounds = 0
    while True:
        rounds += 1
        requested = epochs[-1][0] if epochs else UNDEFINED
        leader_epoch, leader_end = end_offset_for(leader_epochs, requested, leader_log_end_offset)
        if leader_end == UNDEFINED:
            return Truncation(min(hw, leo), rounds, via_high_watermark=True)
        mine_epoch, mine_end = end_offset_for(epochs, leader_epoch, leo)
        if mine_end == UNDEFINED:
            return Truncation(min(leader_end, leo), rounds)
        if mine_epoch == leader_epoch:
            return Truncation(min(mine_end, leader_end, leo), rounds)
        leo = min(mine_end, leo)  # intermediate truncation; the epoch cache follows the log end
        epochs = [e for e in epochs if e[1] < leo]
        if rounds > len(follower_epochs) + 1:  # every round drops an epoch: cannot loop, but never hang
            return Truncation(leo, rounds)

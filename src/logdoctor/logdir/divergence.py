"""Where a follower's broker truncates its replica when it starts fetching from a leader (pure rule), and
what the follower holds from there on.

The rule is Kafka's follower truncation, restated (never copied):

- K:core/src/main/scala/kafka/server/AbstractFetcherThread.scala: a follower whose leader-epoch cache is
  empty truncates to its high watermark (``truncateToHighWatermark``; with truncation on fetch too, whose
  initial fetch offset is then the high watermark: K:core/.../server/ReplicaManager.scala
  ``initialFetchOffset``). Otherwise it asks the leader for the end offset of its latest epoch
  (OffsetsForLeaderEpoch, or the diverging epoch of a fetch response since KIP-320, the same answer) and
  ``getOffsetTruncationState`` decides: when the leader answers an epoch the follower does not know, the
  follower truncates to its own end offset for the largest epoch below it and asks again; otherwise it
  truncates to min(the leader's end offset, its own end offset for that epoch, its log end offset).
- K:storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java
  ``endOffsetFor(requestedEpoch, logEndOffset)``: the latest epoch ends at the log end offset; an older
  epoch ends where the next higher epoch starts and is answered as the floor epoch (the requested one
  when none is lower); an epoch above every known one is undefined. ``truncateFromEnd`` (entries starting
  at or after an offset go) and ``truncateFromStart`` (entries at or before the log start collapse into
  one starting there) are applied when a log is loaded (K:.../log/LogLoader.java load) and when it is
  truncated.
- The leader: when it becomes leader it assigns its new leader epoch (above every epoch either replica
  holds) at its log end offset (K:core/.../cluster/Partition.scala makeLeader,
  ``maybeAssignEpochStartOffset``); the follower's latest epoch is then always below the leader's latest.
- The high watermark a broker loads is the replication-offset-checkpoint entry (0 when there is none),
  kept within [log start offset, log end offset] (UnifiedLog.updateHighWatermark).

No I/O in :func:`follower_truncation`; :func:`replica_log` and :func:`records_from` read a
:class:`~logdoctor.logdir.model.Partition`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import loaded_epochs

if TYPE_CHECKING:
    from logdoctor.logdir.model import Partition

__all__ = [
    "FollowerTruncation",
    "RecordsFrom",
    "ReplicaLog",
    "follower_truncation",
    "records_from",
    "reference_key",
    "replica_log",
]

_EpochCache = list[tuple[int, int]]  # (epoch, start offset), ascending by epoch


@dataclass(frozen=True)
class ReplicaLog:
    """What a replica's broker knows of its log when it loads it.

    ``leader_epochs``: the leader-epoch-checkpoint entries (epoch, start offset) as read;
    ``high_watermark``: the replication-offset-checkpoint entry (None: none).
    """

    leader_epochs: tuple[tuple[int, int], ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None = None

    @property
    def loaded_high_watermark(self) -> int:
        """The high watermark as the broker loads it: the entry (0 without one) within [start, end]."""
        hw = 0 if self.high_watermark is None else self.high_watermark
        return min(max(hw, self.log_start_offset), self.log_end_offset)


@dataclass(frozen=True)
class FollowerTruncation:
    """Where the follower's log is truncated: ``offset`` (its log end offset when nothing is truncated).

    ``rule``: ``"leader-epoch"`` or ``"high-watermark"`` (the follower has no leader epoch);
    ``epoch``: the epoch the last exchange agreed on (None with the high-watermark rule);
    ``follower_log_end_offset``: the follower's log end offset before;
    ``high_watermark``: the follower's high watermark as loaded;
    ``leader_log_end_offset``: the leader's log end offset."""

    offset: int
    rule: str
    epoch: int | None
    follower_log_end_offset: int
    high_watermark: int
    leader_log_end_offset: int

    @property
    def truncates(self) -> bool:
        return self.offset < self.follower_log_end_offset

    @property
    def lacks_from(self) -> int:
        """The first offset of the follower's records the leader lacks (its log end offset: none).
        With leader epochs everything truncated is the leader's lack (the epochs differ from there);
        without them (the high-watermark rule) the follower fetches the offsets it truncated back from
        the leader, so only what lies beyond the leader's log end is known to be lost."""
        if self.rule == "high-watermark":
            return min(self.follower_log_end_offset, max(self.offset, self.leader_log_end_offset))
        return self.offset

    def to_json(self) -> dict[str, object]:
        return {
            "offset": self.offset,
            "rule": self.rule,
            "epoch": self.epoch,
            "follower_log_end_offset": self.follower_log_end_offset,
            "high_watermark": self.high_watermark,
            "leader_log_end_offset": self.leader_log_end_offset,
            "lacks_from": self.lacks_from,
        }


def _load_cache(entries: Iterable[tuple[int, int]], log_start: int, log_end: int) -> _EpochCache:
    return _truncate_from_start(_truncate_from_end(loaded_epochs(entries), log_end), log_start)


def _truncate_from_end(cache: _EpochCache, end: int) -> _EpochCache:
    """LeaderEpochFileCache.truncateFromEnd: entries starting at or after ``end`` go (from the newest)."""
    out = list(cache)
    while out and out[-1][1] >= end:
        out.pop()
    return out


def _truncate_from_start(cache: _EpochCache, start: int) -> _EpochCache:
    """LeaderEpochFileCache.truncateFromStart: entries starting at or before ``start`` collapse into the
    last of them, moved to ``start``."""
    below = [e for e in cache if e[1] <= start]
    if not below:
        return list(cache)
    return [(below[-1][0], start), *cache[len(below) :]]


def _end_offset_for(cache: _EpochCache, requested: int, log_end: int) -> tuple[int, int] | None:
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset), None when undefined."""
    if requested < 0:
        return None
    if cache and cache[-1][0] == requested:
        return requested, log_end
    higher = next((e for e in cache if e[0] > requested), None)
    if higher is None:
        return None
    floor = [e for e in cache if e[0] <= requested]
    return (floor[-1][0] if floor else requested), higher[1]


def follower_truncation(follower: ReplicaLog, leader: ReplicaLog) -> FollowerTruncation:
    """Where the follower's broker truncates ``follower`` before it fetches from ``leader`` (the leader
    taking a new leader epoch, as after every election). Pure."""
    f_end = follower.log_end_offset
    hw = follower.loaded_high_watermark
    f_cache = _load_cache(follower.leader_epochs, follower.log_start_offset, f_end)
    l_cache = _load_cache(leader.leader_epochs, leader.log_start_offset, leader.log_end_offset)
    new_epoch = max([e for e, _ in f_cache + l_cache], default=-1) + 1
    l_cache = [*l_cache, (new_epoch, leader.log_end_offset)]
    leader_end = leader.log_end_offset
    end = f_end
    while True:
        if not f_cache:
            # no epoch: truncateToHighWatermark (with truncation on fetch the initial fetch offset is the
            # high watermark too); a fetch beyond the leader's log end is out of range and the follower
            # truncates to the leader's log end (AbstractFetcherThread.fetchOffsetAndTruncate)
            return FollowerTruncation(min(hw, end, leader_end), "high-watermark", None, f_end, hw, leader_end)
        answer = _end_offset_for(l_cache, f_cache[-1][0], leader_end)
        if answer is None:  # undefined: the initial fetch offset (its log end), then out of range as above
            return FollowerTruncation(min(end, leader_end), "leader-epoch", None, f_end, hw, leader_end)
        l_epoch, l_end = answer
        mine = _end_offset_for(f_cache, l_epoch, end)
        if mine is None:  # the follower tracked no epoch that low: the leader's offset
            return FollowerTruncation(min(l_end, end), "leader-epoch", l_epoch, f_end, hw, leader_end)
        f_epoch, f_epoch_end = mine
        if f_epoch != l_epoch:  # an epoch the follower does not know: truncate to its own end and ask again
            end = min(f_epoch_end, end)
            f_cache = _truncate_from_end(f_cache, end)
            continue
        offset = min(f_epoch_end, l_end, end)
        return FollowerTruncation(offset, "leader-epoch", l_epoch, f_end, hw, leader_end)


def reference_key(latest: int | None, log_end_offset: int | None, *ties: str) -> tuple[object, ...]:
    """THE order in which the replicas of one partition are taken as the reference, smallest first: the
    one every rule that compares replicas, names a leader or a copy to sync from, or reads a partition as a
    consumer would, takes (REPLICA_DIVERGED, REPLICA_LAG, the consumer groups' log range; the census's SQL
    orders its rows by the same keys, spark.census_sql).

    The newest leader epoch first: the controller raised the epoch when it elected that replica's broker,
    which assigned it at its log end (K:core/.../cluster/Partition.scala makeLeader), so it is the last
    leader and every other replica truncates to it when it fetches (:func:`follower_truncation`); a
    replica with an older epoch and a longer log diverged (an unclean election), it never leads by being
    longer. Then the longest log (replicas of one epoch: the leader and its followers, which only lag);
    then ``ties`` (broker, log dir, path: one, always the same). A replica without leader epochs (a log of
    message format v0/v1, or an empty one) comes after every replica with one."""
    return (-(latest if latest is not None else -1), -(log_end_offset or 0), *ties)


def replica_log(partition: Partition) -> ReplicaLog:
    """The :class:`ReplicaLog` of a partition folder (its leader-epoch-checkpoint, log start and end
    offsets, and its log dir's high watermark entry). An empty log ends at its log start."""
    start = partition.log_start_offset or 0
    end = partition.log_end_offset
    return ReplicaLog(
        tuple(partition.leader_epochs), start, start if end is None else end, partition.high_watermark
    )


@dataclass(frozen=True)
class RecordsFrom:
    """The records a partition holds at and after an offset (what a truncation there removes).

    ``first_offset``/``last_offset``: the first and last of them (None when there is none);
    ``records``: how many; ``below_high_watermark``: how many below ``high_watermark`` (committed as the
    replica saw it); ``bytes``: the bytes of the batches that hold them; ``unreadable``: a segment whose
    bytes could not be walked to the end (the counts stop there)."""

    offset: int
    first_offset: int | None
    last_offset: int | None
    records: int
    below_high_watermark: int
    high_watermark: int | None
    bytes: int
    unreadable: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "from_offset": self.first_offset,
            "to_offset": self.last_offset,
            "records": self.records,
            "below_high_watermark": self.below_high_watermark,
            "high_watermark": self.high_watermark,
            "bytes": self.bytes,
            "unreadable": list(self.unreadable),
        }


def _offsets_from(batch: object, offset: int) -> Sequence[int]:
    return [r.offset for r in batch.records() if r.offset >= offset]  # type: ignore[attr-defined]


def records_from(partition: Partition, offset: int, high_watermark: int | None = None) -> RecordsFrom:
    """The records ``partition`` holds at offsets >= ``offset`` (batches are walked, not decompressed,
    except one that straddles ``offset``)."""
    first: int | None = None
    last: int | None = None
    count = below = nbytes = 0
    unreadable: list[str] = []
    for seg in partition.segments:
        try:
            if seg.next_offset() <= offset:
                continue
            cut: int | None = None
            for b in seg.batches():
                if b.last_offset < offset:
                    continue
                if cut is None:
                    cut = b.position
                if b.base_offset >= offset and b.record_count == b.last_offset - b.base_offset + 1:
                    n, lo, hi = b.record_count, b.base_offset, b.last_offset
                    under = 0 if high_watermark is None else max(0, min(hi + 1, high_watermark) - lo)
                else:  # straddles the offset, or offsets with gaps (compacted): the records' own offsets
                    offs = _offsets_from(b, offset)
                    if not offs:
                        continue
                    n, lo, hi = len(offs), offs[0], offs[-1]
                    under = 0 if high_watermark is None else sum(1 for o in offs if o < high_watermark)
                first = lo if first is None else first
                last = hi
                count += n
                below += under
            if cut is not None:
                nbytes += seg.size - cut
        except (FormatError, OSError) as e:
            unreadable.append(f"{seg.log_path}: {e}")
    return RecordsFrom(offset, first, last, count, below, high_watermark, nbytes, tuple(unreadable))

"""logdir.divergence: where a follower's broker truncates its replica, checked against what Kafka's
classes computed on ../shared/forensics (its README's table), cases of AbstractFetcherThread's rule worked
by hand, and a property over generated histories (a follower that shares the leader's history up to a
point and then wrote in its own epoch is truncated exactly there)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import realworld
from logdoctor.logdir.divergence import ReplicaLog, follower_truncation, records_from, replica_log
from logdoctor.logdir.model import LogDir


def _wallet(forensics, broker: int):
    return LogDir(forensics / f"broker-{broker}" / "kafka-logs").partition("wallet", 0)


# (follower, leader) -> (truncated to, records lost, first, last): README "A", rows broker-1 and broker-2
# following broker-3; broker-1 following broker-2 keeps what broker-2 replicated of epoch 1 ([800, 920),
# the same batches) and loses the rest; a follower behind on the same history loses nothing.
FORENSICS_CASES = {
    (1, 3): (800, 250, 800, 1049),
    (2, 3): (800, 120, 800, 919),
    (1, 2): (920, 130, 920, 1049),
    (2, 1): (920, 0, None, None),
    (3, 1): (800, 400, 800, 1199),
}


@pytest.mark.parametrize(("follower", "leader"), sorted(FORENSICS_CASES))
def test_forensics_wallet_truncation(follower, leader):
    forensics = realworld.require_forensics()
    fp, lp = _wallet(forensics, follower), _wallet(forensics, leader)
    t = follower_truncation(replica_log(fp), replica_log(lp))
    offset, records, first, last = FORENSICS_CASES[(follower, leader)]
    assert t.offset == offset and t.rule == "leader-epoch"
    lost = records_from(fp, t.offset)
    assert (lost.records, lost.first_offset, lost.last_offset) == (records, first, last)
    assert t.truncates == (records > 0)


def test_forensics_stable_partition_loses_nothing():
    forensics = realworld.require_forensics()
    for fb, lb in [(1, 3), (3, 1), (2, 3)]:
        fp = LogDir(forensics / f"broker-{fb}" / "kafka-logs").partition("stable", 0)
        lp = LogDir(forensics / f"broker-{lb}" / "kafka-logs").partition("stable", 0)
        t = follower_truncation(replica_log(fp), replica_log(lp))
        assert not t.truncates and t.offset == 600


def test_no_epoch_truncates_to_the_high_watermark():
    # AbstractFetcherThread.truncateToHighWatermark: a follower with no leader epoch (old message format)
    f = ReplicaLog((), 0, 500, 320)
    leader = ReplicaLog(((0, 0),), 0, 900)
    t = follower_truncation(f, leader)
    assert (t.offset, t.rule) == (320, "high-watermark")
    assert t.lacks_from == 500  # what it truncated it fetches back: the leader holds [320, 900)
    # a leader behind the high watermark: the fetch is out of range, truncated to the leader's end
    t = follower_truncation(ReplicaLog((), 0, 500, 480), ReplicaLog((), 0, 400))
    assert (t.offset, t.lacks_from) == (400, 400)
    # no entry in replication-offset-checkpoint: the broker loads 0, kept at or above the log start
    assert follower_truncation(ReplicaLog((), 100, 500), leader).offset == 100


def test_epoch_unknown_to_the_follower_is_asked_again():
    # follower epochs 0@0, 1@100, 3@200, LEO 300; leader 0@0, 2@150, 4@250, LEO 400.
    # ask 3 -> leader answers (2, 250); the follower's floor of 2 is 1, ending at 200 -> truncate to 200,
    # ask 1 -> leader answers (0, 150); the follower's epoch 0 ends at 100 -> min(100, 150, 200) = 100.
    f = ReplicaLog(((0, 0), (1, 100), (3, 200)), 0, 300)
    leader = ReplicaLog(((0, 0), (2, 150), (4, 250)), 0, 400)
    t = follower_truncation(f, leader)
    assert (t.offset, t.epoch) == (100, 0)


def test_checkpoint_entries_beyond_the_log_end_are_dropped_on_load():
    # LogLoader truncateFromEnd(log end): an entry at 300 of a log ending at 300 is no epoch of its
    f = ReplicaLog(((0, 0), (5, 300)), 0, 300)
    leader = ReplicaLog(((0, 0),), 0, 250)
    t = follower_truncation(f, leader)
    assert (t.offset, t.epoch) == (250, 0)


@st.composite
def _histories(draw):
    """A leader history of (epoch, records) runs; the follower shares it up to ``cut`` and then (maybe)
    wrote ``extra`` records in an epoch of its own the leader never had."""
    runs = draw(st.lists(st.integers(1, 50), min_size=1, max_size=6))
    epochs, start = [], 0
    epoch = draw(st.integers(0, 3))
    for n in runs:
        epochs.append((epoch, start))
        start += n
        epoch += draw(st.integers(2, 3))  # gaps, so an epoch of the follower's own fits between
    leader_end = start
    cut = draw(st.integers(0, leader_end))
    shared = [e for e in epochs if e[1] < cut]
    extra = draw(st.integers(0, 40))
    f_epochs = list(shared)
    if extra and shared:
        own = shared[-1][0] + 1  # between the shared epoch and the leader's next one
        f_epochs.append((own, cut))
    elif not shared:
        extra = 0
    return tuple(epochs), leader_end, tuple(f_epochs), cut, extra


@given(_histories())
def test_follower_truncated_where_it_diverged(h):
    l_epochs, l_end, f_epochs, cut, extra = h
    t = follower_truncation(ReplicaLog(f_epochs, 0, cut + extra), ReplicaLog(l_epochs, 0, l_end))
    assert t.offset == cut  # what it wrote in its own epoch goes, nothing it shares with the leader

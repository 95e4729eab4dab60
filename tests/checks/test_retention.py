"""The retention simulation against UnifiedLog.deleteOldSegments' rules, and on real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kp_oracle
import realworld
import tiers
from logdoctor.checks.retention import retention
from logdoctor.checks.retention_round import (
    LOG_START_OFFSET_BREACH,
    RETENTION_MS_BREACH,
    RETENTION_SIZE_BREACH,
    RetentionConfig,
    simulate,
)
from logdoctor.checks.topic_config import config_inputs, parse_topic_config

DAY = 86_400_000


def run(segs, *, lso=0, leo, hw=None, ms=-1, size=-1, delete=True, now=0):
    return simulate(
        segs,
        log_start_offset=lso,
        log_end_offset=leo,
        high_watermark=leo if hw is None else hw,
        config=RetentionConfig(ms, size, delete),
        now_ms=now,
    )


def test_time_deletes_oldest_first_and_stops_at_the_first_kept_segment() -> None:
    segs = [(0, 100, 1_000), (10, 100, 5_000), (20, 50, 9_000)]
    reasons, lso, rolls = run(segs, leo=25, ms=6_000, now=10_000)
    assert reasons == [RETENTION_MS_BREACH, None, None]
    assert (lso, rolls) == (10, False)
    # a newer segment in front blocks older ones behind it (deletableSegments stops at the first false)
    reasons, lso, _ = run([(0, 100, 9_500), (10, 100, 1_000), (20, 50, 9_000)], leo=25, ms=6_000, now=10_000)
    assert reasons == [None, None, None] and lso == 0


def test_strictly_greater_than_retention_ms() -> None:
    reasons, _, _ = run([(0, 1, 4_000), (1, 1, 9_000)], leo=2, ms=6_000, now=10_000)
    assert reasons == [None, None]  # 10000 - 4000 == 6000 is not > 6000


def test_high_watermark_bounds_deletion() -> None:
    segs = [(0, 100, 0), (10, 100, 0), (20, 50, 0)]
    reasons, lso, _ = run(segs, leo=25, hw=15, ms=1, now=10_000)
    assert reasons == [RETENTION_MS_BREACH, None, None] and lso == 10
    reasons, _, _ = run(segs, leo=25, hw=9, ms=1, now=10_000)
    assert reasons == [None, None, None]


def test_every_segment_goes_after_a_roll_but_an_empty_last_one_never() -> None:
    reasons, lso, rolls = run([(0, 100, 0), (10, 100, 0), (20, 50, 0)], leo=25, ms=1, now=10_000)
    assert reasons == [RETENTION_MS_BREACH] * 3 and (lso, rolls) == (25, True)
    reasons, lso, rolls = run([(0, 100, 0), (10, 0, -1)], leo=10, ms=1, now=10_000)
    assert reasons == [RETENTION_MS_BREACH, None] and (lso, rolls) == (10, False)


def test_size_retention_keeps_at_least_retention_bytes() -> None:
    segs = [(0, 100, 0), (10, 100, 0), (20, 100, 0)]
    reasons, lso, _ = run(segs, leo=30, size=150)
    assert reasons == [RETENTION_SIZE_BREACH, None, None] and lso == 10  # 300-150=150: 150-100>=0, 50-100<0
    reasons, _, _ = run(segs, leo=30, size=301)
    assert reasons == [None, None, None]
    reasons, lso, rolls = run(segs, leo=30, size=0)
    assert reasons == [RETENTION_SIZE_BREACH] * 3 and rolls


def test_log_start_breach_first_and_even_when_compacted() -> None:
    segs = [(0, 100, 10**13), (10, 100, 10**13), (20, 50, 10**13)]
    reasons, lso, _ = run(segs, lso=15, leo=25, delete=False, ms=1, size=0, now=10_000)
    assert reasons == [LOG_START_OFFSET_BREACH, None, None] and lso == 15
    # order: log start, then size, then time
    reasons, lso, _ = run(
        [(0, 10, 0), (10, 100, 0), (20, 100, 10**13), (30, 5, 10**13)],
        lso=10,
        leo=35,
        size=100,
        ms=1,
        now=10_000,
    )
    assert reasons == [LOG_START_OFFSET_BREACH, RETENTION_SIZE_BREACH, None, None]


def test_future_timestamps_block_time_retention() -> None:
    reasons, _, _ = run([(0, 1, 10**13), (1, 1, 0), (2, 1, 0)], leo=3, ms=1, now=10_000)
    assert reasons == [None, None, None]


def test_topic_config_parsing() -> None:
    assert parse_topic_config(["a.b-c:retention.ms=5", "a.b-c:cleanup.policy=compact,delete"]) == {
        "a.b-c": {"retention.ms": "5", "cleanup.policy": "compact,delete"}
    }
    with pytest.raises(ValueError):
        parse_topic_config(["nocolon"])
    with pytest.raises(ValueError):
        parse_topic_config(["t:segment.bytes=1"])
    with pytest.raises(ValueError):
        parse_topic_config(["t:cleanup.policy=shred"])


PART = "__consumer_offsets-12"
# the largest record timestamp of the inactive segment 0 of that partition, as kafka-python reads it
SEG0_TS = (
    kp_oracle.max_timestamp(realworld.REALWORLD / "zk-3.7-nikhildighe-b0" / PART / "00000000000000000000.log")
    if realworld.available()
    else 0
)


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    src = realworld.require() / "zk-3.7-nikhildighe-b0"
    d = tmp_path / "kafka-logs"
    realworld.writable_copy(src, d)
    for root, _dirs, files in os.walk(d):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return d


@pytest.mark.realworld
def test_zeroed_timeindex_makes_retention_delete_a_fresh_segment(logdir: Path) -> None:
    # __consumer_offsets is compact by default: make it a delete topic to see time retention at work
    cfg = config_inputs(retention_ms=7 * DAY, topic_config=["__consumer_offsets:cleanup.policy=delete"])
    now = SEG0_TS + DAY  # the records are one day old: nothing is due
    before = retention([logdir], config_inputs=cfg, now_ms=now, jobs=1)
    part = next(p for p in before.partitions if (p.topic, p.partition) == ("__consumer_offsets", 12))
    assert [s.reason for s in part.segments] == [None, None]
    assert part.segments[0].broker_largest_timestamp == part.segments[0].true_largest_timestamp == SEG0_TS
    assert before.findings == []

    tindex = logdir / PART / "00000000000000000000.timeindex"
    tindex.write_bytes(bytes(tindex.stat().st_size))
    after = retention([logdir], config_inputs=cfg, now_ms=now, jobs=1)
    part = next(p for p in after.partitions if (p.topic, p.partition) == ("__consumer_offsets", 12))
    seg0 = part.segments[0]
    assert (seg0.broker_largest_timestamp, seg0.true_largest_timestamp) == (0, SEG0_TS)
    assert seg0.reason == RETENTION_MS_BREACH and seg0.reason_if_true_timestamps is None and seg0.at_risk
    assert part.segments[1].reason is None  # the active segment's largest timestamp is recent
    assert part.new_log_start_offset == 862
    assert [(f.code, f.path) for f in after.findings] == [("RETENTION_RISK", str(tindex))]
    # the same single finding as scan's: the zeroed time index named as the root cause
    assert after.findings[0].details["root_cause"]["code"] == "INDEX_CORRUPT"
    assert after.findings[0].message.startswith(f"Root cause: {tindex} belongs to an inactive segment")
    assert "(from cleanup.policy, --topic-config)" in after.findings[0].message
    assert after.exit_code == 2


@pytest.mark.realworld
def test_compacted_internal_topics_are_not_time_retained(logdir: Path) -> None:
    rep = retention([logdir], config_inputs=config_inputs(retention_ms=1), now_ms=SEG0_TS + 365 * DAY, jobs=1)
    offsets = [p for p in rep.partitions if p.topic == "__consumer_offsets"]
    assert offsets and all(not p.deleted for p in offsets)
    others = [p for p in rep.partitions if p.topic != "__consumer_offsets" and p.log_end_offset]
    assert any(p.deleted for p in others)
    for p in others:
        for s in p.deleted:
            assert s.reason == RETENTION_MS_BREACH and not s.at_risk


@st.composite
def _partitions(draw):
    n = draw(st.integers(1, 8))
    bases = sorted(draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n, unique=True)))
    leo = bases[-1] + draw(st.integers(0, 100))
    segs = [(b, draw(st.integers(0, 5_000)), draw(st.integers(-1, 20_000))) for b in bases]
    lso = draw(st.integers(bases[0], leo))
    hw = draw(st.integers(lso, leo))
    return segs, lso, leo, hw


@settings(max_examples=tiers.examples(300), deadline=None)
@given(_partitions(), st.integers(-1, 20_000), st.integers(-1, 20_000), st.integers(0, 40_000))
def test_compacted_topics_never_lose_segments_to_time_or_size(part, ms, size, now) -> None:
    """cleanup.policy=compact (no delete): only segments below the log start offset go (deleteOldSegments)."""
    segs, lso, leo, hw = part
    reasons, _lso, _rolls = simulate(
        segs,
        log_start_offset=lso,
        log_end_offset=leo,
        high_watermark=hw,
        config=RetentionConfig(ms, size, delete=False),
        now_ms=now,
    )
    assert set(reasons) <= {None, LOG_START_OFFSET_BREACH}
    # and the active (last) segment never goes while records above the high watermark are in it
    if hw < leo:
        assert reasons[-1] is None

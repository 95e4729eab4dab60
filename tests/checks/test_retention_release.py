"""The release-dependent parts of tiered retention (issue 74), by Kafka 4.4.0's rules as its jar has them
(docs/tiered-storage.md, "Local retention by release"): delayed upload's eligibility
(RemoteLogManager.RLMCopyTask.candidateLogSegments / isEligibleForUpload), the -1 resolution of the lags
(LogConfig.remoteCopyLagMs/Bytes), and the future-timestamp case named on the kept segments. The broker's
own judgement of the same rules is tests/brokers/test_broker_tiered_retention.py."""

from __future__ import annotations

from logdoctor.checks.retention_round import RetentionConfig, future_timestamp_note, upload_holds
from logdoctor.checks.topic_config import KAFKA_DEFAULT, Setting, TopicConfig

NOW = 1_800_000_000_000
HOUR = 3_600_000


def _cfg(**lags: int) -> TopicConfig:
    def s(v: int, k: str) -> Setting:
        return Setting(v, k, "topic ConfigRecord")

    return TopicConfig(
        "t",
        s(-1, "retention.ms"),
        s(-1, "retention.bytes"),
        Setting(("delete",), "cleanup.policy", KAFKA_DEFAULT),
        s(True, "remote.storage.enable"),
        s(2 * HOUR, "local.retention.ms"),
        s(10_000, "local.retention.bytes"),
        remote_copy_lag_ms=s(lags["ms"], "remote.copy.lag.ms") if "ms" in lags else None,
        remote_copy_lag_bytes=s(lags["bytes"], "remote.copy.lag.bytes") if "bytes" in lags else None,
    )


def test_lags_resolve_as_logconfig_does() -> None:
    # -1: the effective local retention; unset bytes: Kafka's default -1, so local.retention.bytes
    c = RetentionConfig.of(_cfg(ms=-1), remote=True)
    assert (c.copy_lag_ms, c.copy_lag_bytes, c.delays_upload) == (2 * HOUR, 10_000, True)
    # remote.copy.lag.ms=0 (Kafka's default) in either lag: no delay at all
    assert not RetentionConfig.of(_cfg(ms=0, bytes=5), remote=True).delays_upload
    # a 4.3 broker has no such configs
    assert not RetentionConfig.of(_cfg(ms=HOUR), remote=True, delayed_upload=False).delays_upload
    # nothing set anywhere: no delay (4.4's default remote.copy.lag.ms is 0)
    assert not RetentionConfig.of(_cfg(), remote=True).delays_upload


def test_held_by_time_and_behind_it() -> None:
    c = RetentionConfig.of(_cfg(ms=HOUR, bytes=10_000), remote=True)
    segs = [
        (0, 1000, NOW - 3 * HOUR),
        (10, 1000, NOW - 30 * 60_000),
        (20, 1000, NOW - 2 * HOUR),
        (30, 10, NOW),
    ]
    held = upload_holds(segs, from_offset=0, last_stable_offset=30, config=c, now_ms=NOW)
    # 0: an hour old and more -> uploaded; 10: 30 min old, 1010 bytes after it < 10,000 -> held; 20: old
    # enough, but the copy task stops at 10; 30: the active segment, never a candidate
    assert set(held) == {10, 20}
    assert "remote.copy.lag.ms" in held[10] and "behind segment 10" in held[20]


def test_future_timestamp_is_eligible_at_once_and_size_lag_counts_newer_bytes() -> None:
    c = RetentionConfig.of(_cfg(ms=HOUR, bytes=1000), remote=True)
    segs = [(0, 1000, NOW + HOUR), (10, 1000, NOW), (20, 1000, NOW), (30, 10, NOW)]
    held = upload_holds(segs, from_offset=0, last_stable_offset=30, config=c, now_ms=NOW)
    # 0: a negative age uploads at once; 10: 1010 newer bytes (20 and 30) >= 1000; 20: 10 < 1000, too young
    assert set(held) == {20}
    # only the segments from the one holding the first offset not uploaded count
    assert upload_holds(segs, from_offset=20, last_stable_offset=30, config=c, now_ms=NOW) == {20: held[20]}
    # a segment whose next one starts above the last stable offset is no candidate
    assert upload_holds(segs, from_offset=0, last_stable_offset=19, config=c, now_ms=NOW) == {}


def test_future_note_names_the_rule_of_both_releases() -> None:
    note = future_timestamp_note(NOW + 24 * HOUR, NOW, True)
    assert note.startswith("largest timestamp in the future")
    assert "24.0 h ahead" in note and "even though it is uploaded" in note
    assert "4.3.1 and 4.4.0 alike" in note and "KAFKA-20609" in note

"""RETENTION_RISK says when time retention deletes a segment, and `scan` and `retention` say the same
(issue 77 item 1; item 5: the fix names the cause it found).

Kafka deletes by time only from the oldest segment forward while each one is past the limit
(K:core/src/main/scala/kafka/log/UnifiedLog.scala deleteRetentionMsBreachedSegments, deletableSegments: the
pass stops at the first segment the predicate refuses). A segment whose time index the broker's user cannot
read (largestTime=0) therefore goes at the next retention check only when every older segment goes too.

The data: a copy of a real Kafka 3.7.1 log dir (../shared/realworld) whose __consumer_offsets-12 has one
inactive segment; it is cut in two at a batch boundary (offset 422), so that the partition has segments 0 and
422 and the active 862, each with a sound offset index (the real entries, rebased) and a one-entry time index
holding the segment's largest record timestamp as kafka-python (tests/kp_oracle.py) reads it from the .log.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kp_oracle
import realworld
from logdoctor.checks.retention_risk import deletion_moment
from logdoctor.checks.retention_round import RetentionConfig, partition_verdicts
from logdoctor.checks.state.time_words import iso
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app

DIR = "zk-3.7-nikhildighe-b0"
PART = "__consumer_offsets-12"
SPLIT = 422  # the first offset of the batch at byte 31760 of segment 0
RETENTION_MS = 7 * 24 * 3600 * 1000
# __consumer_offsets is compacted; an operator could make it a delete topic with kafka-configs
CONFIG = ("--topic-config", "__consumer_offsets:cleanup.policy=delete", "--retention-ms", str(RETENTION_MS))
NOBODY = 65534


def _name(base: int, ext: str) -> str:
    return f"{base:020d}.{ext}"


def _split(folder: Path) -> tuple[int, int]:
    """Cut segment 0 of ``folder`` in two at offset SPLIT; the largest record timestamps of both halves."""
    log = (folder / _name(0, "log")).read_bytes()
    pos, cut, last_a, last_b = 0, None, 0, 0
    while pos < len(log):
        base, length = struct.unpack_from(">qi", log, pos)
        last = base + struct.unpack_from(">i", log, pos + 23)[0]
        if base == SPLIT:
            cut = pos
        if cut is None:
            last_a = last
        else:
            last_b = last
        pos += 12 + length
    assert cut is not None
    (folder / _name(0, "log")).write_bytes(log[:cut])
    (folder / _name(SPLIT, "log")).write_bytes(log[cut:])
    index = (folder / _name(0, "index")).read_bytes()
    entries = [struct.unpack_from(">ii", index, i) for i in range(0, len(index), 8)]
    (folder / _name(0, "index")).write_bytes(
        b"".join(struct.pack(">ii", o, p) for o, p in entries if o < SPLIT)
    )
    (folder / _name(SPLIT, "index")).write_bytes(
        b"".join(struct.pack(">ii", o - SPLIT, p - cut) for o, p in entries if o >= SPLIT)
    )
    ts_a = kp_oracle.max_timestamp(folder / _name(0, "log"))
    ts_b = kp_oracle.max_timestamp(folder / _name(SPLIT, "log"))
    (folder / _name(0, "timeindex")).write_bytes(struct.pack(">qi", ts_a, last_a))
    (folder / _name(SPLIT, "timeindex")).write_bytes(struct.pack(">qi", ts_b, last_b - SPLIT))
    return ts_a, ts_b


@pytest.fixture
def split_dir(tmp_path: Path) -> tuple[Path, int, int]:
    d = tmp_path / "kafka-logs"
    realworld.writable_copy(realworld.require() / DIR, d)
    ts_a, ts_b = _split(d / PART)
    assert ts_b - ts_a > 3600_000  # the second half ends days later (a last commit on 2024-07-22)
    return d, ts_a, ts_b


def _unreadable_to_the_broker(d: Path, tindex: Path) -> None:
    """Field report 002: the files belong to the broker's user, but this time index to root, mode 600."""
    os.chmod(tindex, 0o600)
    for root, _dirs, files in os.walk(d):
        os.chown(root, NOBODY, NOBODY)
        for name in files:
            p = os.path.join(root, name)
            if p != str(tindex):
                os.chown(p, NOBODY, NOBODY)


def _run(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--json", "--jobs", "1", *CONFIG])
    assert result.exit_code in (0, 1, 2), result.output
    return json.loads(result.stdout)


def _risks(report: dict) -> list[dict]:
    return [
        {k: f[k] for k in ("severity", "path", "message", "fix", "offset")}
        for f in report["findings"]
        if f["code"] == "RETENTION_RISK"
    ]


def _verdicts(report: dict) -> dict[int, tuple[bool, bool]]:
    part = next(p for p in report["partitions"] if f"{p['topic']}-{p['partition']}" == PART)
    return {s["base_offset"]: (s["deleted"], s["retention_risk"]) for s in part["segments"]}


@pytest.mark.realworld
@pytest.mark.needs_root
def test_scan_and_retention_agree_on_when_an_unreadable_time_index_deletes_its_segment(
    split_dir: tuple[Path, int, int],
) -> None:
    d, ts_a, ts_b = split_dir
    tindex = d / PART / _name(SPLIT, "timeindex")
    _unreadable_to_the_broker(d, tindex)

    # segment 0 still within retention: the next check keeps it, and so segment 422 (largestTime=0) too
    now = ts_a + RETENTION_MS - 3600_000
    goes = ts_a + RETENTION_MS + 1  # the first moment now - largestTimestamp(0) > retention.ms
    scan = _run("scan", "--now", str(now), str(d))
    risks = _risks(scan)
    assert len(risks) == 1 and risks[0]["path"] == str(tindex) and risks[0]["offset"] == SPLIT
    risk = risks[0]
    assert risk["severity"] == "warning"
    assert "at the next retention check" not in risk["message"]
    assert f"at {iso(goes)}, once segment 0 has gone" in risk["message"]
    assert f"instead of at {iso(ts_b + RETENTION_MS + 1)}" in risk["message"]
    assert "the next retention check keeps it" in risk["message"]
    # item 5: its entries are sound (this process reads them): the permission is the whole fix
    assert f"chown nobody {tindex}" in risk["fix"] and "chmod u+rw" in risk["fix"]
    assert "rebuild the time index" not in risk["fix"] and "logdoctor repair" not in risk["fix"]
    retention = _run("retention", "--all", "--now", str(now), str(d))
    assert _verdicts(retention)[0] == (False, False) and _verdicts(retention)[SPLIT] == (False, False)
    assert _risks(retention) == risks  # the same finding, word for word
    part = next(p for p in retention["partitions"] if f"{p['topic']}-{p['partition']}" == PART)
    assert [s["retention_risk_at"] for s in part["segments"]] == [None, goes, None]
    # --quick (no inactive .log read): the same date, the true one unknown
    quick = _risks(_run("scan", "--quick", "--now", str(now), str(d)))
    assert [(r["severity"], r["path"]) for r in quick] == [("warning", str(tindex))]
    assert f"at {iso(goes)}, once segment 0 has gone" in quick[0]["message"]

    # a minute after segment 0 has passed retention: the next check deletes both, 422 days early
    now = goes + 60_000
    scan = _run("scan", "--now", str(now), str(d))
    risks = _risks(scan)
    assert [(r["severity"], r["path"]) for r in risks] == [("error", str(tindex))]
    assert "at the next retention check" in risks[0]["message"]
    assert f"instead of at {iso(ts_b + RETENTION_MS + 1)}" in risks[0]["message"]
    retention = _run("retention", "--all", "--now", str(now), str(d))
    assert _verdicts(retention)[0] == (True, False) and _verdicts(retention)[SPLIT] == (True, True)
    assert _risks(retention) == risks


@pytest.mark.realworld
@pytest.mark.needs_root
def test_a_damaged_and_unreadable_time_index_gets_the_rebuild_and_the_permission(
    split_dir: tuple[Path, int, int],
) -> None:
    d, ts_a, _ts_b = split_dir
    tindex = d / PART / _name(SPLIT, "timeindex")
    tindex.write_bytes(bytes(12 * 3))  # zeroed, and then unreadable to the broker's user too
    _unreadable_to_the_broker(d, tindex)
    now = ts_a + RETENTION_MS - 3600_000
    risks = _risks(_run("scan", "--now", str(now), str(d)))
    assert [(r["severity"], r["path"]) for r in risks] == [("warning", str(tindex))]
    fix = risks[0]["fix"]
    assert "rebuild the time index" in fix and "logdoctor repair" in fix
    assert f"chown nobody {tindex}" in fix


def test_the_moment_follows_the_round() -> None:
    """deletion_moment against the round's own rules: oldest first, the high watermark, the log start."""
    segs = [(0, 10, 5000), (10, 10, 0), (20, 10, 9000), (30, 0, -1)]

    def moment(now: int, log_start: int = 0, hw: int = 30) -> tuple[int | None, tuple[int, ...], int | None]:
        kw = {"log_start_offset": log_start, "log_end_offset": 30, "high_watermark": hw}
        kw["config"] = RetentionConfig(retention_ms=1000)

        def round_(segments: list[tuple[int, int, int]], at: int) -> list[str | None]:
            return partition_verdicts(segments, now_ms=at, **kw)[0]

        return deletion_moment(segs, 1, now_ms=now, retention_ms=1000, delete=True, round_=round_)

    # segment 10 (largestTime 0) waits for segment 0, which passes retention after 6000
    assert moment(3000) == (6001, (0,), 0)
    assert moment(7000) == (7000, (), None)
    # the high watermark below segment 10's end: never, as things stand
    assert moment(3000, hw=15)[0] is None
    # a log start offset past segment 0 removes it first: segment 10 goes at the next check
    assert moment(3000, log_start=10) == (3000, (), None)

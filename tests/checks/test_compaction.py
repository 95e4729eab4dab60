"""Where the log cleaner stands (issue 46, item 3): the cleaner state of a compacted partition and
COMPACTION_BEHIND, by LogCleanerManager's rules (cleanableOffsets, calculateCleanableBytes, LogToClean's
cleanableRatio, maxCompactionDelay), each on a crafted log whose expected figures are worked out here from
the segment files' own sizes and the timestamps written, never from logdoctor's code."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.sample.logdir import _Batch, _SegmentWriter

T0 = 1_700_000_000_000
HOUR = 3600 * 1000
META = "version=0\nbroker.id=1\n"


def _write(folder: Path, segments: list[list[int]], records_per_batch: int = 10) -> list[int]:
    """One segment per list of batch timestamps (each batch ``records_per_batch`` keyed records, keys
    cycling over 20); returns each segment's size."""
    folder.mkdir(parents=True)
    offset = 0
    sizes = []
    for k, stamps in enumerate(segments):
        w = _SegmentWriter(offset, 4096)
        for ts in stamps:
            recs = [
                RecordSpec(value=b"v" * 50, key=b"key-%d" % ((offset + i) % 20), timestamp=ts)
                for i in range(records_per_batch)
            ]
            data = build_record_batch(recs, base_offset=offset, partition_leader_epoch=0)
            w.append(_Batch(offset, offset + records_per_batch - 1, ts, offset, data, 0, -1, -1))
            offset += records_per_batch
        w.write(folder, closed=k + 1 < len(segments))
        sizes.append(w.size)
    return sizes


def _logdir(tmp_path: Path, segments: list[list[int]], cleaner: int | None = None) -> tuple[Path, list[int]]:
    root = tmp_path / "kafka-logs"
    sizes = _write(root / "cdc-0", segments)
    return _closed(root, cleaner), sizes


def _closed(root: Path, cleaner: int | None) -> Path:
    """``root`` as a cleanly shut down log dir, with cdc-0's cleaner checkpoint entry when given."""
    (root / "meta.properties").write_text(META)
    (root / ".kafka_cleanshutdown").write_text("")
    if cleaner is not None:
        (root / "cleaner-offset-checkpoint").write_text(f"0\n1\ncdc 0 {cleaner}\n")
    return root


def _scan(root: Path, **config: str):
    cfg = {"cleanup.policy": "compact", **config}
    report = scan([root], ScanOptions(config_inputs=ConfigInputs(topic_overrides={"cdc": cfg})), jobs=1)
    (part,) = report.partitions
    return report, part


def _behind(report) -> list:
    return [f for f in report.findings if f.code == "COMPACTION_BEHIND"]


def test_a_log_never_cleaned_for_hours_is_behind(tmp_path):
    """4 segments an hour apart, no checkpoint: all 3 inactive ones dirty (ratio 1.0 > 0.5) since the second
    segment rolled (its first batch, T0 + 1 h): cleanable for 2 hours at the newest record."""
    root, sizes = _logdir(tmp_path, [[T0], [T0 + HOUR], [T0 + 2 * HOUR], [T0 + 3 * HOUR]])
    report, part = _scan(root)
    c = part.cleaner
    assert c["first_dirty_offset"] == 0 and c["first_uncleanable_offset"] == 30  # the active segment's base
    assert c["clean_bytes"] == 0 and c["cleanable_bytes"] == sum(sizes[:3])
    assert c["cleanable_ratio"] == 1.0 and c["cleanable_now"]
    assert c["cleanable_since"] == T0 + HOUR and c["now"] == T0 + 3 * HOUR
    (f,) = _behind(report)
    assert f.offset == 0 and "cdc-0 has been cleanable for 2.0 hours of its own time" in f.message


def test_a_log_the_cleaner_keeps_up_with_is_not_behind(tmp_path):
    """The checkpoint at the last inactive segment's base: clean 2 segments, dirty 1: ratio 1/3 < 0.5."""
    root, sizes = _logdir(tmp_path, [[T0], [T0 + HOUR], [T0 + 2 * HOUR], [T0 + 3 * HOUR]], cleaner=20)
    report, part = _scan(root)
    c = part.cleaner
    assert c["first_dirty_offset"] == 20 and not c["checkpoint_reset"]
    # logSegments(-1, 20): the segments below the first dirty offset; cleanable: the one holding it
    assert c["clean_bytes"] == sizes[0] + sizes[1] and c["cleanable_bytes"] == sizes[2]
    assert c["cleanable_ratio"] == pytest.approx(sizes[2] / sum(sizes[:3]), abs=1e-4)
    assert not c["cleanable_now"]
    assert not _behind(report)


def test_a_checkpoint_past_the_log_end_is_reset_to_the_log_start(tmp_path):
    root, _sizes = _logdir(tmp_path, [[T0], [T0 + HOUR]], cleaner=999)
    _report, part = _scan(root)
    assert part.cleaner["checkpoint"] == 999
    assert part.cleaner["first_dirty_offset"] == 0 and part.cleaner["checkpoint_reset"]


def test_min_compaction_lag_keeps_recent_segments_uncleanable(tmp_path):
    """min.compaction.lag.ms of 90 minutes: a segment whose largest timestamp is within it of now (T0 + 3 h)
    cannot be cleaned: segment 10 (T0 + 1 h) is older than T0 + 1.5 h, segment 20 (T0 + 2 h) is the first
    within the lag."""
    root, sizes = _logdir(tmp_path, [[T0], [T0 + HOUR], [T0 + 2 * HOUR], [T0 + 3 * HOUR]])
    _report, part = _scan(root, **{"min.compaction.lag.ms": str(90 * 60 * 1000)})
    assert part.cleaner["first_uncleanable_offset"] == 20
    assert part.cleaner["cleanable_bytes"] == sizes[0] + sizes[1]


def test_max_compaction_lag_makes_a_clean_enough_log_due(tmp_path):
    """A ratio under min.cleanable.dirty.ratio (0.9 here) but a dirty segment whose first batch is older than
    max.compaction.lag.ms (30 min) at now: due since its first batch + 30 min; behind when that is over an
    hour ago."""
    root, _sizes = _logdir(tmp_path, [[T0], [T0 + HOUR], [T0 + 2 * HOUR], [T0 + 3 * HOUR]], cleaner=10)
    report, part = _scan(
        root, **{"min.cleanable.dirty.ratio": "0.9", "max.compaction.lag.ms": str(30 * 60 * 1000)}
    )
    c = part.cleaner
    assert c["cleanable_ratio"] < 0.9
    # maxCompactionDelay: now - maxLag - earliest first-batch timestamp of the dirty inactive segments
    assert c["compaction_delay_ms"] == (T0 + 3 * HOUR) - 30 * 60 * 1000 - (T0 + HOUR)
    assert c["cleanable_now"] and c["cleanable_since"] == T0 + HOUR + 30 * 60 * 1000
    assert len(_behind(report)) == 1


def test_a_topic_with_delete_only_has_no_cleaner_state(tmp_path):
    root, _sizes = _logdir(tmp_path, [[T0], [T0 + HOUR]])
    inputs = ConfigInputs(topic_overrides={"cdc": {"cleanup.policy": "delete"}})
    report = scan([root], ScanOptions(config_inputs=inputs), jobs=1)
    assert all(p.cleaner is None for p in report.partitions)


def test_realworld_compacted_topics_say_where_the_cleaner_stands():
    """The real log dirs' __consumer_offsets (compacted by the broker's own config): every such partition
    with a log gets a cleaner state whose bytes are the segment files' sizes."""
    import realworld

    realworld.require()  # skips with a reason without ../shared
    seen = 0
    for log_dir in realworld.log_dirs():
        if not any(log_dir.glob("__consumer_offsets-*")):
            continue
        report = scan([log_dir], ScanOptions(), jobs=1)
        for p in report.partitions:
            if p.topic != "__consumer_offsets" or not p.segments:
                continue
            folder = Path(p.path)
            total = sum(f.stat().st_size for f in folder.glob("*.log") if not f.name.startswith("."))
            c = p.cleaner
            assert c is not None, p.path
            assert c["clean_bytes"] + c["cleanable_bytes"] <= total
            seen += 1
    assert seen > 0


# --- what the cleaner meets in the segments it reads (--deep; COMPACTION_DAMAGE at every depth) ----------


def _deep(root: Path, server: dict[str, str] | None = None, **config: str):
    cfg = {"cleanup.policy": "compact", **config}
    inputs = ConfigInputs(server_properties=server or {}, topic_overrides={"cdc": cfg})
    report = scan([root], ScanOptions(depth=Depth.DEEP, config_inputs=inputs), jobs=1)
    (part,) = report.partitions
    return report, part


def _codes(report, code: str) -> list:
    return [f for f in report.findings if f.code == code]


def _segments(folder: Path, segments: list[list[bytes]]) -> list[int]:
    """One segment per list of batches (their bytes, built at the offsets they say); their sizes."""
    folder.mkdir(parents=True)
    sizes = []
    for k, batches in enumerate(segments):
        first = int.from_bytes(batches[0][:8], "big")
        w = _SegmentWriter(first, 4096)
        for data in batches:
            base = int.from_bytes(data[:8], "big")
            kp = _kp_batch(data)
            w.append(_Batch(base, kp.last_offset, kp.max_timestamp, base, data, 0, -1, -1))
        w.write(folder, closed=k + 1 < len(segments))
        sizes.append(w.size)
    return sizes


def _kp_batch(data: bytes):
    """kafka-python's reading of one v2 batch (the test's own decoder, independent of logdoctor's)."""
    from kafka.record.default_records import DefaultRecordBatch

    b = DefaultRecordBatch(data)
    return type(
        "B", (), {"last_offset": b.base_offset + b.last_offset_delta, "max_timestamp": b.max_timestamp}
    )


def _batch(base: int, n: int, ts: int, *, key=lambda i: b"k-%d" % i, value=b"v" * 50, **kw) -> bytes:
    recs = [RecordSpec(value=value, key=key(base + i), timestamp=ts) for i in range(n)]
    return build_record_batch(recs, base_offset=base, partition_leader_epoch=0, **kw)


def _kafka_logdir(tmp_path: Path, segments: list[list[bytes]], cleaner: int | None = None):
    root = tmp_path / "kafka-logs"
    sizes = _segments(root / "cdc-0", segments)
    return _closed(root, cleaner), sizes


def test_a_batch_larger_than_the_old_cleaners_largest_buffer(tmp_path):
    """Cleaner.growBuffers before Kafka 2.0: the buffers grow to max(topic max.message.bytes, broker
    message.max.bytes) and no further; a batch of the inactive segment bigger than both is found, one in
    the active segment (never cleaned) is not."""
    big = _batch(10, 1, T0 + HOUR, value=b"x" * 3000)
    root, _ = _kafka_logdir(
        tmp_path, [[_batch(0, 10, T0), big], [_batch(11, 1, T0 + 2 * HOUR, value=b"y" * 3000)]]
    )
    report, _part = _deep(root, {"message.max.bytes": "2000"}, **{"max.message.bytes": "1500"})
    (f,) = _codes(report, "COMPACTION_BATCH_TOO_LARGE")
    assert f.offset == 10 and f.details["limit"] == 2000 and f.details["largest"] == len(big)
    assert f.path.endswith("00000000000000000000.log") and f.position == len(_batch(0, 10, T0))
    assert f"max.message.bytes={len(big)}" in f.fix
    # the limit is the larger of the two: raising the topic's above the batch leaves nothing to report
    report, _part = _deep(root, {"message.max.bytes": "2000"}, **{"max.message.bytes": str(len(big))})
    assert not _codes(report, "COMPACTION_BATCH_TOO_LARGE")


def test_records_without_a_key_below_the_first_uncleanable_offset(tmp_path):
    """Cleaner.shouldRetainRecord drops a record without a key from every segment it cleans: the 3 keyless
    records of the inactive segment are counted (the active segment's are not: never cleaned), and the fix
    exports exactly the offsets the cleaner reads, run as printed."""
    keyless = _batch(10, 3, T0 + HOUR, key=lambda i: None)
    root, _ = _kafka_logdir(
        tmp_path, [[_batch(0, 10, T0), keyless], [_batch(13, 2, T0 + 2 * HOUR, key=lambda i: None)]]
    )
    report, part = _deep(root)
    (f,) = _codes(report, "COMPACTION_KEYLESS_RECORDS")
    assert f.offset == 10 and f.details["records"] == 3
    assert part.cleaner["first_uncleanable_offset"] == 13
    assert "--starting-offsets 10 --ending-offsets 13" in f.fix
    # the default depth decodes no record: nothing said there
    report, _part = _scan(root)
    assert not _codes(report, "COMPACTION_KEYLESS_RECORDS")


def test_tombstones_past_their_delete_horizon_in_the_cleaned_range(tmp_path):
    """KIP-534: a v2 batch's delete horizon (set by the cleaning that kept its tombstones) lets the next
    cleaning drop them once it has passed. Cleaned range [0, 20): one batch whose horizon passed before the
    newest record (T0 + 3 h), one whose horizon is after it, one without a horizon (kept, the next cleaning
    sets one); the dirty range's tombstones are not the finding's."""
    tomb = {"key": lambda i: b"k-%d" % i, "value": None}
    passed = _batch(0, 2, T0, delete_horizon_ms=T0 + HOUR, **tomb)
    later = _batch(2, 3, T0, delete_horizon_ms=T0 + 5 * HOUR, **tomb)
    none = _batch(5, 4, T0, **tomb)
    fill = _batch(9, 11, T0)
    dirty = _batch(20, 2, T0 + 2 * HOUR, **tomb)
    root, _ = _kafka_logdir(
        tmp_path, [[passed, later, none, fill], [dirty], [_batch(22, 1, T0 + 3 * HOUR)]], cleaner=20
    )
    report, part = _deep(root)
    assert part.cleaner["first_dirty_offset"] == 20 and part.cleaner["now"] == T0 + 3 * HOUR
    (f,) = _codes(report, "COMPACTION_TOMBSTONES_EXPIRED")
    assert f.offset == 0 and f.details == {"tombstones": 2, "delete_horizon_ms": T0 + HOUR}
    assert "passed 2.0 hours before the newest record" in f.message


def test_damage_in_a_segment_the_cleaner_reads(tmp_path):
    """A zero-filled tail in the inactive segment (below the first uncleanable offset): the scan's
    LOG_CORRUPT, and COMPACTION_DAMAGE at the same place with the cleaner's consequence and LOG_CORRUPT's
    repair; the same damage in the active segment (never cleaned) gives none."""
    root, _ = _kafka_logdir(
        tmp_path, [[_batch(0, 10, T0)], [_batch(10, 1, T0 + HOUR)], [_batch(11, 1, T0 + 2 * HOUR)]]
    )
    seg = root / "cdc-0" / "00000000000000000000.log"
    with seg.open("ab") as fh:
        fh.write(b"\0" * 100)
    report, _part = _deep(root)  # the default depth walks no segment below the recovery point
    corrupt = [f for f in report.findings if f.code == "LOG_CORRUPT" and f.path == str(seg)]
    assert corrupt, [f.code for f in report.findings]
    (f,) = _codes(report, "COMPACTION_DAMAGE")
    assert f.path == str(seg) and f.position == corrupt[0].position and "uncleanable" in f.message
    assert f"logdoctor repair {root} --only LOG_CORRUPT" in f.fix
    assert f.details == {"damage": "LOG_CORRUPT", "kind": corrupt[0].details["kind"]}


def test_scan_of_a_real_log_dir_says_where_each_cleaner_stands():
    """Issue 46's "done when": `logdoctor scan` of a real log dir with compacted topics (zk-2.8-seanorth:
    __consumer_offsets, cleaned by a real broker) prints the log cleaner's line, and --json gives every
    compacted partition its cleaner state; the count is the folders' own (each __consumer_offsets
    partition with a segment)."""
    import json

    from typer.testing import CliRunner

    import realworld
    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    rw = realworld.require()
    log_dir = rw / "zk-2.8-seanorth"
    folders = [f for f in log_dir.glob("__consumer_offsets-*") if any(f.glob("*.log"))]
    assert folders
    text = CliRunner().invoke(app, ["scan", str(log_dir), "--now", "2026-01-01T00:00:00Z"]).output
    line = next(x for x in text.splitlines() if x.startswith("log cleaner:"))
    assert line.startswith(f"log cleaner: {len(folders)} compacted partition(s), ")
    out = CliRunner().invoke(app, ["scan", str(log_dir), "--json", "--now", "2026-01-01T00:00:00Z"]).output
    parts = json.loads(out)["partitions"]
    cleaners = {f"{p['topic']}-{p['partition']}": p["cleaner"] for p in parts if p.get("cleaner") is not None}
    assert set(cleaners) == {f.name for f in folders}
    for c in cleaners.values():
        assert c["first_dirty_offset"] <= c["first_uncleanable_offset"]

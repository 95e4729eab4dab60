"""CONSUMER_OFFSET_OUT_OF_RANGE on every real log dir against an independent reading of __consumer_offsets
and of the log ranges (tests/consumer_offsets_oracle.py: kafka-python, Kafka's JSON schemas, the
coordinator's replay restated). Every committed offset of every dir: no false finding, none missed."""

from __future__ import annotations

from pathlib import Path

import pytest

import kafka_schemas as ks
import realworld
from consumer_offsets_oracle import checkpoint, commits, expected_out_of_range, log_range
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan


@pytest.mark.realworld
def test_every_committed_offset_of_every_real_log_dir_matches_the_oracle() -> None:
    ks.require()
    realworld.require()
    total_judged, total_found = 0, 0
    for log_dir in realworld.log_dirs():
        if not log_dir.is_dir() or not (log_dir / "meta.properties").exists():
            continue
        expected, judged = expected_out_of_range(log_dir)
        rep = scan([log_dir], ScanOptions(), jobs=1)
        got = {
            (f.details["group"], f.details["topic"], f.details["partition"], f.details["committed_offset"])
            for f in rep.findings
            if f.code == "CONSUMER_OFFSET_OUT_OF_RANGE"
        }
        assert got == expected, log_dir.name
        total_judged += judged
        total_found += len(got)
    # the comparison judged real commits, and real dirs hold groups that will reset
    assert total_judged >= 30 and total_found >= 1


@pytest.mark.realworld
def test_lewi217_group_beyond_an_emptied_partition_says_what_each_reset_does() -> None:
    rw = realworld.require()
    rep = scan([rw / "zk-lewi217"], ScanOptions(), jobs=1)
    (f,) = [f for f in rep.findings if f.code == "CONSUMER_OFFSET_OUT_OF_RANGE"]
    d = f.details
    # the folder holds no segment (its .log was not committed): the broker starts it empty at 0
    assert (d["group"], d["topic"], d["partition"]) == ("myGroup", "wikimedia-stream", 0)
    assert (d["log_start_offset"], d["log_end_offset"]) == (0, 0)
    assert d["committed_offset"] == commits(rw / "zk-lewi217" / "__consumer_offsets-17")[
        ("myGroup", "wikimedia-stream", 0)
    ]
    resets = (d["earliest_skips"], d["earliest_rereads"], d["latest_skips"], d["latest_rereads"])
    assert resets == (0, 0, 0, 0)


@pytest.mark.realworld
def test_a_raised_log_start_moves_a_real_group_below_the_log(tmp_path: Path) -> None:
    """A copy of a real dir whose log-start-offset-checkpoint was raised past a group's commit (as
    DeleteRecords or retention would): the oracle and the scan agree on the group and what it skips."""
    ks.require()
    src = realworld.require() / "zk-3.6-saikrupa82-a"
    copy = realworld.writable_copy(src, tmp_path / "logs")
    starts = checkpoint(copy / "log-start-offset-checkpoint")
    held = {k: v for co in copy.glob("__consumer_offsets-*") for k, v in commits(co).items()}
    (group, topic, part), committed = next(iter(sorted(held.items())))
    _start, end = log_range(copy / f"{topic}-{part}", starts.get((topic, part)))
    assert committed < end  # a commit with records after it
    starts[(topic, part)] = end
    body = "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(starts.items()))
    (copy / "log-start-offset-checkpoint").write_text(f"0\n{len(starts)}\n{body}")
    expected, _ = expected_out_of_range(copy)
    assert (group, topic, part, committed) in expected
    rep = scan([copy], ScanOptions(), jobs=1)
    found = [f for f in rep.findings if f.code == "CONSUMER_OFFSET_OUT_OF_RANGE"]
    got = {(f.details["group"], f.details["topic"], f.details["partition"], f.details["committed_offset"])
           for f in found}  # fmt: skip
    assert got == expected
    d = next(f.details for f in found if f.details["group"] == group)
    assert (d["log_start_offset"], d["log_end_offset"]) == (end, end)
    assert d["earliest_skips"] == end - committed == d["latest_skips"]
    assert d["earliest_rereads"] == 0


@pytest.mark.realworld
def test_retention_lists_the_groups_its_deletions_move_below_the_log() -> None:
    """A retention round that deletes every segment of data-stream-0 (retention.ms 1 s, years later: the
    active segment rolls and goes too) leaves the log starting at its end: the group that committed below
    it, as the independent reading gives it, is listed with what each reset skips."""
    from logdoctor.checks.retention import retention
    from logdoctor.checks.topic_config import ConfigInputs

    ks.require()
    d = realworld.require() / "zk-3.6-saikrupa82-a"
    held = {k: v for co in d.glob("__consumer_offsets-*") for k, v in commits(co).items()}
    (key, committed), = [(k, v) for k, v in held.items() if k[1:] == ("data-stream", 0)]
    _start, end = log_range(d / "data-stream-0", checkpoint(d / "log-start-offset-checkpoint").get(key[1:]))
    assert committed < end
    rep = retention(
        [d],
        now_ms=1_900_000_000_000,
        config_inputs=ConfigInputs(broker_overrides={"log.retention.ms": "1000"}),
        jobs=1,
    )
    moved = {(g["group"], g["topic"], g["partition"]): g for g in rep.consumer_groups}
    g = moved[key]
    assert (g["committed_offset"], g["log_start_offset"], g["log_end_offset"]) == (committed, end, end)
    assert g["earliest_skips"] == g["latest_skips"] == end - committed
    assert rep.to_json()["consumer_groups"] == rep.consumer_groups


@pytest.mark.realworld
def test_transactional_commits_and_tombstones_replay_as_the_coordinator(tmp_path: Path) -> None:
    """A real dir's empty __consumer_offsets-0 given a log written independently (kafka-python batches,
    Kafka's schemas): plain commits (the last wins), a tombstone, transactional commits applied on their
    COMMIT marker and dropped on ABORT (OffsetMetadataManager.replay / replayEndTransactionMarker)."""
    from consumer_offsets_oracle import batch, marker, offset_commit_record

    ks.require()
    copy = realworld.writable_copy(realworld.require() / "zk-3.6-saikrupa82-a", tmp_path / "logs")
    rec = offset_commit_record
    log = b"".join(
        [
            batch(0, [rec("g1", "data-stream", 0, 5)]),
            batch(1, [rec("g2", "data-stream", 0, 100)], pid=42),
            batch(2, [rec("g3", "data-stream", 0, 200)], pid=43),
            batch(3, [marker(True)], pid=42, control=True),
            batch(4, [marker(False)], pid=43, control=True),
            batch(5, [rec("g4", "data-stream", 0, 300), rec("g4", "data-stream", 0, None)]),
            batch(7, [rec("g1", "data-stream", 0, 500)]),
        ]
    )
    (copy / "__consumer_offsets-0" / "00000000000000000000.log").write_bytes(log)
    held = commits(copy / "__consumer_offsets-0")
    assert held == {("g1", "data-stream", 0): 500, ("g2", "data-stream", 0): 100}
    expected, _ = expected_out_of_range(copy)
    assert {(g, c) for g, _t, _p, c in expected} == {("g1", 500), ("g2", 100)}
    rep = scan([copy], ScanOptions(), jobs=1)
    got = {
        (f.details["group"], f.details["topic"], f.details["partition"], f.details["committed_offset"])
        for f in rep.findings
        if f.code == "CONSUMER_OFFSET_OUT_OF_RANGE"
    }
    assert got == expected

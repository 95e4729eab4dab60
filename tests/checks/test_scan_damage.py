"""Each field failure built from a real log dir: `scan --json` must name the exact code and file.

Every test copies one real log dir (../shared/realworld) into tmp_path, damages it the way the
field does, and runs the CLI. The undamaged copy is checked first so a finding cannot come from the
data itself.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kp_oracle
import realworld
from logdoctor.checks.timestamps import RISK_TOLERANCE_MS
from logdoctor.checks.topic_config import config_inputs
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.logdir.lock import hold_lock

DIR = "zk-3.7-nikhildighe-b0"  # Kafka 3.7.1, clean shutdown; __consumer_offsets-12 has 2 segments
PART = "__consumer_offsets-12"
SEG0 = "00000000000000000000"  # inactive: 64548-byte log, 14 index entries, 15 time index entries
ACTIVE = "00000000000000000862"
NOW = "1800000000000"
# the largest record timestamp of segment 0, as kafka-python reads it from the real file
SEG0_MAX_TS = (
    kp_oracle.max_timestamp(realworld.REALWORLD / DIR / PART / f"{SEG0}.log") if realworld.available() else 0
)
# partition folders of the dir and entries of its recovery-point checkpoint, from the data's manifest
MANIFEST = (
    next((e for e in realworld.manifest()["entries"] if e["name"] == DIR), {})
    if realworld.available()
    else {}
)
# __consumer_offsets is compacted (cleanup.policy=compact, set by the broker when it creates it), so time
# retention never deletes its segments; the tests of the timestamps time retention would use make it a
# delete topic, as an operator could with kafka-configs
AS_DELETE = ("--topic-config", "__consumer_offsets:cleanup.policy=delete")
AS_DELETE_INPUTS = config_inputs(topic_config=[AS_DELETE[1]])


def copy_logdir(name: str, dst: Path) -> Path:
    src = realworld.require() / name
    realworld.writable_copy(src, dst)
    for root, _dirs, files in os.walk(dst):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return dst


def run_scan(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["scan", "--json", "--jobs", "1", "--now", NOW, *args])
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def codes_at(report: dict, path: Path | str) -> set[str]:
    return {f["code"] for f in report["findings"] if f["path"] == str(path)}


def errors(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["severity"] == "error"]


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    d = copy_logdir(DIR, tmp_path / "kafka-logs")
    _code, report = run_scan(str(d))
    # the undamaged copy: only the .tmp leftover of the real dir (a warning), and at NOW (2027) the notes
    # of what retention deletes of its 2024 delete topics (RETENTION_DUE)
    assert errors(report) == []
    assert {(f["code"], f["path"]) for f in report["findings"] if f["code"] != "RETENTION_DUE"} == {
        ("ORPHAN_FILE", str(d / "cleaner-offset-checkpoint.tmp"))
    }
    assert {f["severity"] for f in report["findings"] if f["code"] == "RETENTION_DUE"} <= {"info"}
    return d


def test_untrimmed_zero_padded_index_on_inactive_segment(logdir: Path) -> None:
    # unclean shutdown: the inactive segment's .index keeps its 10 MiB preallocation (zero tail)
    index = logdir / PART / f"{SEG0}.index"
    real = index.read_bytes()
    index.write_bytes(real + bytes(10 * 1024 * 1024 - len(real)))
    (logdir / ".kafka_cleanshutdown").unlink()
    code, report = run_scan(str(logdir))
    assert code == 2
    hits = [f for f in report["findings"] if f["path"] == str(index) and f["code"] == "INDEX_CORRUPT"]
    assert len(hits) == 1
    f = hits[0]
    assert f["position"] == len(real)  # where the zero tail starts
    assert f["details"]["rejected_by"] == ["0.8-1.0", "1.1"]
    assert "the last offset is 0 which is no larger than the base offset 0" in f["message"]
    assert "2.0+ accept it" in f["message"]
    unclean = [f for f in report["findings"] if f["code"] == "UNCLEAN_SHUTDOWN"]
    assert len(unclean) == 1 and "never trimmed" in unclean[0]["message"]


def test_all_zero_index_quotes_the_field_report(logdir: Path) -> None:
    # the field report: an index with no entries left preallocated -> last offset == base offset
    part = logdir / PART
    index = part / f"{SEG0}.index"
    index.write_bytes(bytes(10 * 1024 * 1024))
    _code, report = run_scan(str(logdir))
    msgs = [
        f["message"] for f in report["findings"] if f["path"] == str(index) and f["code"] == "INDEX_CORRUPT"
    ]
    assert len(msgs) == 1
    assert (
        f"Corrupt index found, index file ({index}) has non-zero size but the last offset is 0 which is no "
        "larger than the base offset 0." in msgs[0]
    )


@pytest.mark.needs_root
def test_timeindex_unreadable_to_the_broker_user(logdir: Path) -> None:
    # field report 002: after a remount the files belong to root; the broker runs as another user
    tindex = logdir / PART / f"{SEG0}.timeindex"
    os.chmod(tindex, 0o600)  # still root's; the log dir and the rest belong to "nobody"
    for root, _dirs, files in os.walk(logdir):
        os.chown(root, 65534, 65534)
        for name in files:
            p = os.path.join(root, name)
            if p != str(tindex):
                os.chown(p, 65534, 65534)
    code, report = run_scan(*AS_DELETE, str(logdir))
    assert code == 2
    assert codes_at(report, tindex) == {"PERMISSION_DENIED", "RETENTION_RISK"}
    risk = next(f for f in report["findings"] if f["code"] == "RETENTION_RISK")
    assert risk["details"]["broker_largest_timestamp"] == 0
    assert risk["details"]["true_largest_timestamp"] == SEG0_MAX_TS  # max timestamp of the segment's records
    assert "largestTimestamp=0" in risk["message"] and str(SEG0_MAX_TS) in risk["message"]


def test_stale_count_line_in_checkpoint(logdir: Path) -> None:
    cp = logdir / "recovery-point-offset-checkpoint"
    lines = cp.read_text().split("\n")
    assert lines[1] == str(MANIFEST["checkpoints"]["recovery-point-offset-checkpoint"]["entries"])
    lines[1] = "85"  # an entry was removed by hand, the count line left as it was
    cp.write_text("\n".join(lines))
    code, report = run_scan(str(logdir))
    assert code == 2
    hits = [f for f in report["findings"] if f["path"] == str(cp)]
    assert [f["code"] for f in hits] == ["CHECKPOINT_MISMATCH"]
    assert hits[0]["position"] == 2  # the count line starts after "0\n"
    assert hits[0]["severity"] == "error"


def test_truncated_batch_at_the_end_of_the_active_segment(logdir: Path) -> None:
    log = logdir / PART / f"{ACTIVE}.log"
    data = log.read_bytes()
    # find the start of the last batch (walk the length fields), then cut it in half
    pos, starts = 0, []
    while pos < len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    last = starts[-1]
    log.write_bytes(data[: last + (len(data) - last) // 2])
    (logdir / ".kafka_cleanshutdown").unlink()
    code, report = run_scan("--quick", str(logdir))
    assert code == 2
    hits = [f for f in report["findings"] if f["path"] == str(log)]
    assert [f["code"] for f in hits] == ["LOG_CORRUPT"]
    assert hits[0]["position"] == last
    assert "truncated entry" in hits[0]["message"].lower() and "truncates" in hits[0]["message"]


def test_zeroed_timeindex(logdir: Path) -> None:
    tindex = logdir / PART / f"{SEG0}.timeindex"
    tindex.write_bytes(bytes(tindex.stat().st_size))
    code, report = run_scan(*AS_DELETE, str(logdir))
    assert code == 2
    # one problem, one finding: RETENTION_RISK names the damaged time index as its root cause
    assert [f["code"] for f in report["findings"] if f["path"] == str(tindex)] == ["RETENTION_RISK"]
    risk = next(f for f in report["findings"] if f["code"] == "RETENTION_RISK")
    assert risk["details"]["broker_largest_timestamp"] == 0
    assert risk["details"]["true_largest_timestamp"] == SEG0_MAX_TS
    assert risk["details"]["root_cause"]["code"] == "INDEX_CORRUPT" and risk["position"] == 0
    assert risk["message"].startswith(f"Root cause: {tindex} belongs to an inactive segment but is untrimmed")
    assert "time lookups" in risk["message"] and "INDEX_CORRUPT" in risk["message"]
    # the same file on the compacted topic as the broker creates it: no time retention, so INDEX_CORRUPT
    # alone, saying why retention does not matter
    code, report = run_scan(str(logdir))
    hits = [f for f in report["findings"] if f["path"] == str(tindex)]
    assert [f["code"] for f in hits] == ["INDEX_CORRUPT"]
    assert "time retention does not apply to this topic: cleanup.policy=compact" in hits[0]["message"]


def test_truncated_timeindex_is_a_retention_risk_with_both_timestamps(logdir: Path) -> None:
    tindex = logdir / PART / f"{SEG0}.timeindex"
    data = tindex.read_bytes()
    tindex.write_bytes(data[:24])  # keep 2 of 15 entries: the last one is months older
    ts_kept = struct.unpack_from(">q", data, 12)[0]
    _code, report = run_scan(*AS_DELETE, str(logdir))
    risk = [f for f in report["findings"] if f["code"] == "RETENTION_RISK"]
    assert [f["path"] for f in risk] == [str(tindex)]
    assert risk[0]["details"]["broker_largest_timestamp"] == ts_kept
    assert risk[0]["details"]["true_largest_timestamp"] == SEG0_MAX_TS


def test_swap_file(logdir: Path) -> None:
    swap = logdir / PART / f"{SEG0}.log.swap"
    shutil.copyfile(logdir / PART / f"{SEG0}.log", swap)
    code, report = run_scan(str(logdir))
    assert code == 1
    assert codes_at(report, swap) == {"ORPHAN_FILE"}


def test_held_lock(logdir: Path) -> None:
    with hold_lock(logdir):
        code, report = run_scan(str(logdir))
    assert code == 0  # a running broker is information, not damage (issue 58): the exit code is the data's
    assert codes_at(report, logdir / ".lock") == {"BROKER_RUNNING"}
    code, report = run_scan(str(logdir))
    assert codes_at(report, logdir / ".lock") == set()


def test_mismatched_meta_properties_across_log_dirs(logdir: Path, tmp_path: Path) -> None:
    # a second log dir of the same broker (one partition moved there) with another cluster's meta.properties
    second = tmp_path / "kafka-logs-2"
    second.mkdir()
    shutil.move(str(logdir / "my-topic-0"), second / "my-topic-0")
    meta = (logdir / "meta.properties").read_text()
    (second / "meta.properties").write_text(meta.replace("cluster.id=", "cluster.id=X"))
    code, report = run_scan(str(logdir), str(second))
    assert code == 2
    assert codes_at(report, second / "meta.properties") == {"META_PROPERTIES_MISMATCH"}
    assert codes_at(report, logdir / "meta.properties") == set()
    # the moved partition is still listed in the first dir's checkpoints, and missing from the second's
    assert "CHECKPOINT_MISMATCH" in codes_at(report, logdir / "recovery-point-offset-checkpoint")


def test_same_partition_in_two_log_dirs(logdir: Path, tmp_path: Path) -> None:
    second = tmp_path / "kafka-logs-2"
    second.mkdir()
    shutil.copy(logdir / "meta.properties", second / "meta.properties")
    shutil.copytree(logdir / PART, second / PART)
    _code, report = run_scan(str(logdir), str(second))
    assert codes_at(report, logdir / PART) == {"DUPLICATE_PARTITION"}
    assert codes_at(report, second / PART) == {"DUPLICATE_PARTITION"}


def test_crc_mismatch_found_by_deep_only(logdir: Path) -> None:
    log = logdir / PART / f"{SEG0}.log"
    data = bytearray(log.read_bytes())
    size = struct.unpack_from(">i", data, 8)[0]
    second = 12 + size  # flip a byte inside the second batch's records
    data[second + 70] ^= 0xFF
    log.write_bytes(bytes(data))
    _code, report = run_scan(str(logdir))  # clean shutdown: startup would not re-read this segment
    assert codes_at(report, log) == set()
    code, report = run_scan("--deep", str(logdir))
    assert code == 2
    hits = [f for f in report["findings"] if f["path"] == str(log) and not f.get("caused_by")]
    assert [f["code"] for f in hits] == ["LOG_CORRUPT"]
    assert hits[0]["position"] == second
    assert "CRC mismatch" in hits[0]["message"]
    # the cleaner of the compacted __consumer_offsets would carry the damage on: listed under it
    linked = [(f["code"], f["caused_by"]["code"]) for f in report["findings"] if f.get("caused_by")]
    assert linked == [("COMPACTION_DAMAGE", "LOG_CORRUPT")]


def test_zero_filled_tail_of_a_log(logdir: Path) -> None:
    log = logdir / PART / f"{ACTIVE}.log"
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(bytes(4096))
    _code, report = run_scan("--quick", str(logdir))
    hits = [f for f in report["findings"] if f["path"] == str(log)]
    assert [(f["code"], f["position"]) for f in hits] == [("LOG_CORRUPT", size)]
    assert hits[0]["details"]["kind"] == "zero_tail"


def test_index_pointing_past_the_log(logdir: Path) -> None:
    index = logdir / PART / f"{SEG0}.index"
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, len(data) - 4, 10_000_000)  # last entry's position
    index.write_bytes(bytes(data))
    _code, report = run_scan(str(logdir))
    hits = [f for f in report["findings"] if f["path"] == str(index)]
    assert [(f["code"], f["position"]) for f in hits] == [("INDEX_CORRUPT", len(data) - 8)]
    assert "points past the log" in hits[0]["message"]


def test_index_entries_going_backwards(logdir: Path) -> None:
    index = logdir / PART / f"{SEG0}.index"
    data = bytearray(index.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 8 * 5)
    struct.pack_into(">ii", data, 8 * 6, rel - 1, pos)
    index.write_bytes(bytes(data))
    _code, report = run_scan(str(logdir))
    hits = [f for f in report["findings"] if f["path"] == str(index)]
    assert [(f["code"], f["position"]) for f in hits] == [("INDEX_CORRUPT", 48)]
    assert "go backwards" in hits[0]["message"]


def test_orphan_index_and_deleted_segment(logdir: Path) -> None:
    part = logdir / PART
    orphan = part / "00000000000000000500.index"
    orphan.write_bytes(b"")
    deleted = part / f"{SEG0}.log.deleted"
    deleted.write_bytes(b"x")
    _code, report = run_scan(str(logdir))
    assert codes_at(report, orphan) == {"ORPHAN_FILE"}
    assert codes_at(report, deleted) == {"ORPHAN_FILE"}


def test_checkpoints_beyond_the_log(logdir: Path) -> None:
    hw = logdir / "replication-offset-checkpoint"
    hw.write_text(hw.read_text().replace("__consumer_offsets 12 869\n", "__consumer_offsets 12 900\n"))
    ls = logdir / "log-start-offset-checkpoint"
    ls.write_text("0\n1\n__consumer_offsets 12 1000\n")
    code, report = run_scan(str(logdir))
    assert code == 2
    hw_hits = [f for f in report["findings"] if f["path"] == str(hw)]
    assert [(f["code"], f["severity"], f["offset"]) for f in hw_hits] == [
        ("CHECKPOINT_MISMATCH", "warning", 900)
    ]
    assert "869..899 are missing" in hw_hits[0]["message"]
    ls_hits = [f for f in report["findings"] if f["path"] == str(ls)]
    assert [(f["code"], f["severity"], f["position"]) for f in ls_hits] == [
        ("CHECKPOINT_MISMATCH", "error", 4)
    ]
    assert "deletes ALL segments" in ls_hits[0]["message"]


def test_partition_folder_not_in_the_checkpoints(logdir: Path) -> None:
    # a folder copied in by hand (field report 000/004) without editing the checkpoints
    shutil.copytree(logdir / "my-topic-0", logdir / "copied-topic-0")
    _code, report = run_scan(str(logdir))
    rp = logdir / "recovery-point-offset-checkpoint"
    hits = [f for f in report["findings"] if f["path"] == str(rp)]
    assert [f["code"] for f in hits] == ["CHECKPOINT_MISMATCH"]
    assert hits[0]["details"]["missing"] == ["copied-topic-0"]


def test_leader_epoch_and_producer_snapshot_beyond_log_end(logdir: Path) -> None:
    part = logdir / PART
    (part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n5 5000\n")
    snap = part / "00000000000000005000.snapshot"
    shutil.copyfile(part / "00000000000000000869.snapshot", snap)
    _code, report = run_scan(str(logdir))
    assert codes_at(report, part / "leader-epoch-checkpoint") == {"LEADER_EPOCH_BEYOND_LOG_END"}
    assert codes_at(report, snap) == {"PRODUCER_SNAPSHOT_AHEAD"}


def test_invalid_folder_and_topic_id_mismatch(logdir: Path) -> None:
    (logdir / "lost+found").mkdir()
    pm = logdir / "my-1" / "partition.metadata"
    pm.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    _code, report = run_scan(str(logdir))
    assert codes_at(report, logdir / "lost+found") == {"INVALID_DIR_NAME"}
    assert codes_at(report, pm) == {"TOPIC_ID_MISMATCH"}


def test_a_finding_never_stops_the_scan(logdir: Path) -> None:
    # damage three partitions in three ways: all three are reported, and every partition is listed
    (logdir / "demo-0" / "partition.metadata").write_bytes(b"\xff\xfe")
    (logdir / PART / f"{SEG0}.timeindex").write_bytes(b"\x00" * 13)
    log = logdir / "nikhilDemo-0" / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()[:-5])
    _code, report = run_scan(str(logdir))
    assert len(report["partitions"]) == MANIFEST["n_partitions"]
    assert codes_at(report, logdir / "demo-0" / "partition.metadata") == {"PARTITION_METADATA_INVALID"}
    assert "INDEX_CORRUPT" in codes_at(report, logdir / PART / f"{SEG0}.timeindex")
    assert codes_at(report, log) == {"LOG_CORRUPT", "RETENTION_DUE"}  # at NOW its 2024 records go too


def _demote_and_scan(logdir: Path, write_fd: int) -> None:
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    try:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        report = scan(
            [logdir],
            ScanOptions(depth=Depth.DEFAULT, now_ms=int(NOW), config_inputs=AS_DELETE_INPUTS),
            jobs=1,
        )
        payload = memoryview(json.dumps(report.to_json()).encode())
        while payload:  # a pipe write may be partial (a signal, e.g. a profiler's stop, ends it early)
            payload = payload[os.write(write_fd, payload) :]
    finally:
        os.close(write_fd)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the scan as the unprivileged user 'nobody'")
def test_permission_denied_as_an_unprivileged_user(tmp_path: Path) -> None:
    import tempfile

    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    base = Path(tempfile.mkdtemp(prefix="logdoctor-perm-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        logdir = copy_logdir(DIR, base / "kafka-logs")
        for root, _dirs, files in os.walk(logdir):
            os.chown(root, 65534, 65534)
            for name in files:
                os.chown(os.path.join(root, name), 65534, 65534)
        tindex = logdir / PART / f"{SEG0}.timeindex"
        os.chmod(tindex, 0)
        index = logdir / "my-topic-0" / "00000000000000000003.index"
        os.chmod(index, stat.S_IWUSR)
        scan([logdir], ScanOptions(depth=Depth.DEFAULT, now_ms=int(NOW)), jobs=1)  # warm imports as root
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 1
            try:
                os.close(r)
                _demote_and_scan(logdir, w)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        chunks = []
        while chunk := os.read(r, 1 << 16):
            chunks.append(chunk)
        os.close(r)
        _pid, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        report = json.loads(b"".join(chunks))
        assert codes_at(report, tindex) == {"PERMISSION_DENIED", "RETENTION_RISK"}
        assert codes_at(report, index) == {"PERMISSION_DENIED"}
        denied = {f["path"] for f in report["findings"] if f["code"] == "PERMISSION_DENIED"}
        assert denied == {str(tindex), str(index)}
    finally:
        shutil.rmtree(base, ignore_errors=True)


KRAFT = "kraft-4.2-nomanazeem"


def test_topic_id_differs_from_the_kraft_metadata_log(tmp_path: Path) -> None:
    d = copy_logdir(KRAFT, tmp_path / "kraft-logs")
    _code, report = run_scan(str(d))
    assert [f for f in report["findings"] if f["code"] == "TOPIC_ID_MISMATCH"] == []
    # every partition of demo-topic agrees with the others, but not with the metadata log (a recreated topic)
    changed = []
    for part in sorted(d.glob("demo-topic-*")):
        pm = part / "partition.metadata"
        pm.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
        changed.append(str(pm))
    assert changed
    code, report = run_scan(str(d))
    assert code == 2
    assert sorted(f["path"] for f in report["findings"] if f["code"] == "TOPIC_ID_MISMATCH") == changed
    assert (
        "S2kwl2mvSCasFtxUPkayPw"
        in next(f for f in report["findings"] if f["code"] == "TOPIC_ID_MISMATCH")["message"]
    )


def test_empty_timeindex_falls_back_to_an_old_mtime(logdir: Path) -> None:
    # the .timeindex is empty and the .log's mtime was reset (a copy without -p): Kafka uses the mtime
    tindex = logdir / PART / f"{SEG0}.timeindex"
    tindex.write_bytes(b"")
    log = logdir / PART / f"{SEG0}.log"
    os.utime(log, (1_600_000_000, 1_600_000_000))
    _code, report = run_scan(*AS_DELETE, str(logdir))
    risk = [f for f in report["findings"] if f["code"] == "RETENTION_RISK"]
    assert [f["path"] for f in risk] == [str(tindex)]
    assert risk[0]["details"]["broker_timestamp_source"] == "mtime"
    assert risk[0]["details"]["broker_largest_timestamp"] == 1_600_000_000_000
    # with a recent mtime (the usual case after a plain copy) there is no risk
    os.utime(log, None)
    _code, report = run_scan(*AS_DELETE, str(logdir))
    assert [f for f in report["findings"] if f["code"] == "RETENTION_RISK"] == []


def test_quick_reports_the_risk_without_reading_the_log(logdir: Path) -> None:
    tindex = logdir / PART / f"{SEG0}.timeindex"
    tindex.write_bytes(bytes(tindex.stat().st_size))
    _code, report = run_scan("--quick", *AS_DELETE, str(logdir))
    risk = [f for f in report["findings"] if f["code"] == "RETENTION_RISK"]
    assert [f["path"] for f in risk] == [str(tindex)]
    assert risk[0]["details"]["true_largest_timestamp"] is None
    assert "not read in --quick" in risk[0]["message"]


def _rename_segment(part: Path, old: int, new: int) -> None:
    for suffix in (".log", ".index", ".timeindex"):
        src = part / f"{old:020d}{suffix}"
        if src.exists():
            src.rename(part / f"{new:020d}{suffix}")


def test_segment_base_offset_above_its_first_batch(logdir: Path) -> None:
    part = logdir / PART
    _rename_segment(part, 862, 865)
    code, report = run_scan("--deep", str(logdir))
    assert code == 2
    log = part / "00000000000000000865.log"
    hits = [f for f in report["findings"] if f["path"] == str(log)]
    assert [(f["code"], f["offset"]) for f in hits] == [("SEGMENT_BASE_OFFSET_MISMATCH", 862)]


def test_overlapping_segments(logdir: Path) -> None:
    part = logdir / PART
    _rename_segment(part, 862, 850)  # the first segment holds offsets up to 861
    _code, report = run_scan("--deep", str(logdir))
    hits = [f for f in report["findings"] if f["path"] == str(part / f"{SEG0}.log")]
    assert [(f["code"], f["offset"]) for f in hits] == [("LOG_CORRUPT", 861)]
    assert "overlap" in hits[0]["message"]


def test_malformed_checkpoint_line_and_unreadable_checkpoint(logdir: Path) -> None:
    cp = logdir / "cleaner-offset-checkpoint"
    cp.write_text("0\n1\nfoo bar\n")
    hw = logdir / "replication-offset-checkpoint"
    os.chmod(hw, 0o200)
    for root, _dirs, files in os.walk(logdir):  # the broker runs as nobody; one checkpoint stays root's
        os.chown(root, 65534, 65534)
        for name in files:
            if os.path.join(root, name) != str(hw):
                os.chown(os.path.join(root, name), 65534, 65534)
    _code, report = run_scan(str(logdir))
    assert codes_at(report, cp) == {"CHECKPOINT_CORRUPT"}
    assert next(f for f in report["findings"] if f["path"] == str(cp))["position"] == 4
    assert "PERMISSION_DENIED" in codes_at(report, hw)


def test_leftover_partition_folders(logdir: Path) -> None:
    moved = logdir / "my-topic-0.8d0ac2f1a4f84e9c9a2e6e5f4c3b2a19-delete"
    shutil.copytree(logdir / "my-topic-0", moved)
    future = logdir / "my-topic-0.0123456789abcdef0123456789abcdef-future"
    shutil.copytree(logdir / "my-topic-0", future)
    _code, report = run_scan(str(logdir))
    assert codes_at(report, moved) == {"ORPHAN_FILE"}
    assert codes_at(report, future) == {"ORPHAN_FILE"}
    assert len(report["partitions"]) == MANIFEST["n_partitions"]  # leftovers are not partitions


def test_corrupt_producer_snapshot(logdir: Path) -> None:
    snap = logdir / PART / "00000000000000000869.snapshot"
    data = bytearray(snap.read_bytes())
    data[-1] ^= 0x01  # breaks its CRC-32C
    snap.write_bytes(bytes(data))
    _code, report = run_scan(str(logdir))
    assert codes_at(report, snap) == {"PRODUCER_SNAPSHOT_CORRUPT"}


def test_missing_timeindex_uses_the_log_mtime(logdir: Path) -> None:
    tindex = logdir / PART / f"{SEG0}.timeindex"
    tindex.unlink()
    log = logdir / PART / f"{SEG0}.log"
    os.utime(log, (1_600_000_000, 1_600_000_000))
    _code, report = run_scan(*AS_DELETE, str(logdir))
    # at NOW (2027) its 2024 records are past retention by their own timestamps too: deleted at the next
    # retention check (RETENTION_DUE)
    assert codes_at(report, log) == {"INDEX_MISSING", "RETENTION_RISK", "RETENTION_DUE"}
    missing = next(f for f in report["findings"] if f["code"] == "INDEX_MISSING")
    assert missing["details"]["missing"] == [".timeindex"] and "mtime" in missing["message"]


def test_crc_error_below_the_recovery_point_after_an_unclean_shutdown(logdir: Path) -> None:
    # the broker's recovery re-reads segment 0 (recovery point 0): it would truncate it and drop segment 862
    (logdir / ".kafka_cleanshutdown").unlink()
    rp = logdir / "recovery-point-offset-checkpoint"
    rp.write_text(rp.read_text().replace("__consumer_offsets 12 869\n", "__consumer_offsets 12 0\n"))
    log = logdir / PART / f"{SEG0}.log"
    data = bytearray(log.read_bytes())
    second = 12 + struct.unpack_from(">i", data, 8)[0]
    data[second + 70] ^= 0xFF
    log.write_bytes(bytes(data))
    code, report = run_scan(str(logdir))  # default depth: what recovery reads
    assert code == 2
    hits = [f for f in report["findings"] if f["path"] == str(log) and not f.get("caused_by")]
    assert [(f["code"], f["position"]) for f in hits] == [("LOG_CORRUPT", second)]
    # __consumer_offsets is compacted: the damage also stops its cleaner, one problem listed under it
    (cleaner,) = [f for f in report["findings"] if f["path"] == str(log) and f.get("caused_by")]
    assert cleaner["code"] == "COMPACTION_DAMAGE" and cleaner["caused_by"]["code"] == "LOG_CORRUPT"
    assert f"truncates {SEG0}.log to {second} bytes" in hits[0]["message"]
    assert "deletes the 1 later segment(s)" in hits[0]["message"]


def test_index_entry_not_at_a_batch_start_is_found_by_deep(logdir: Path) -> None:
    index = logdir / PART / f"{SEG0}.index"
    data = bytearray(index.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 8 * 3)
    struct.pack_into(">ii", data, 8 * 3, rel, pos + 1)
    index.write_bytes(bytes(data))
    _code, report = run_scan(str(logdir))
    assert codes_at(report, index) == set()  # in order and inside the log: only the log can tell
    _code, report = run_scan("--deep", str(logdir))
    hits = [f for f in report["findings"] if f["path"] == str(index)]
    assert [(f["code"], f["position"]) for f in hits] == [("INDEX_CORRUPT", 24)]
    assert "not the start of a batch" in hits[0]["message"]


def test_future_timestamps_block_retention(logdir: Path) -> None:
    # seen from 2020, the 2024 records of segment 0 are in the future: time retention stops there
    result = CliRunner().invoke(
        app, ["scan", "--json", "--jobs", "1", "--now", "2020-01-01T00:00:00Z", *AS_DELETE, str(logdir)]
    )
    report = json.loads(result.stdout)
    tindex = logdir / PART / f"{SEG0}.timeindex"
    assert codes_at(report, tindex) == {"RETENTION_BLOCKED"}
    assert result.exit_code == 1


def test_a_clock_a_moment_behind_the_producer_blocks_nothing(logdir: Path) -> None:
    """Issue 75 item 4: a producer clock 300 ms ahead of the broker's (ordinary skew on a live broker) is
    no RETENTION_BLOCKED: the same 60 s tolerance as RETENTION_RISK's, the other way. A minute and more is."""
    tindex = logdir / PART / f"{SEG0}.timeindex"

    def blocked(now_ms: int) -> list[dict]:
        result = CliRunner().invoke(
            app, ["scan", "--json", "--jobs", "1", "--now", str(now_ms), *AS_DELETE, str(logdir)]
        )
        return [
            f
            for f in json.loads(result.stdout)["findings"]
            if f["code"] == "RETENTION_BLOCKED" and f["path"] == str(tindex)
        ]

    (seen,) = blocked(1_577_836_800_000)  # 2020: the 2024 records are years ahead
    largest = seen["details"]["broker_largest_timestamp"]
    assert blocked(largest - 300) == []
    assert blocked(largest - RISK_TOLERANCE_MS) == []
    assert len(blocked(largest - RISK_TOLERANCE_MS - 1_000)) == 1


def _scan_as_printed(*args: str) -> subprocess.CompletedProcess[str]:
    """`logdoctor scan ARGS` as a user types it (a new process: the installed command's own code path)."""
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", "scan", *args], capture_output=True, text=True, check=False
    )


def test_torn_inactive_segment_found_by_the_default_scan(logdir: Path) -> None:
    """Issue 59 item 2: `truncate -s -777` of an inactive segment after a clean shutdown. The broker never
    re-reads it at startup; a consumer reading its end gets CorruptRecordException. The default scan walks
    each inactive segment's tail from its last index entry, and finds what `--deep` finds (it used to report
    only the ORPHAN_FILE of the copy)."""
    log = logdir / PART / f"{SEG0}.log"
    subprocess.run(["truncate", "-s", "-777", str(log)], check=True)  # the command, as printed
    r = _scan_as_printed(str(logdir))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "ERROR   LOG_CORRUPT" in r.stdout and "CorruptRecordException" in r.stdout
    _code, default = run_scan(str(logdir))
    _code, deep = run_scan("--deep", str(logdir))

    def damage(report: dict) -> set[tuple[str, str, int | None]]:
        return {
            (f["code"], f["path"], f["position"])
            for f in report["findings"]
            if f["code"] in ("LOG_CORRUPT", "INDEX_CORRUPT")
        }

    # the same findings as the deep scan's full walk: the torn batch where the 64548-byte file was cut
    assert damage(default) == damage(deep)
    size = log.stat().st_size
    (hit,) = [f for f in default["findings"] if f["code"] == "LOG_CORRUPT"]
    assert hit["path"] == str(log) and hit["details"]["kind"] == "truncated"
    assert 0 < hit["position"] < size < 64548
    assert ("INDEX_CORRUPT", str(logdir / PART / f"{SEG0}.timeindex"), 168) in damage(default)
    # and the repair it prints, run as printed on the copy, leaves nothing to find
    fix = re.search(r"`(logdoctor repair [^`]+)`", hit["fix"])
    assert fix is not None
    argv = shlex.split(fix.group(1))[1:]
    assert CliRunner().invoke(app, [*argv, "--apply"]).exit_code == 1  # the copy's ORPHAN_FILE is left
    _code, after = run_scan(str(logdir))
    assert damage(after) == set()


def test_torn_segment_without_its_indexes_is_read_whole(logdir: Path) -> None:
    """The same torn segment with its .index and .timeindex deleted: the broker's start recovers it whole
    to rebuild the index (LogLoader.loadSegmentFiles), truncating the torn batch; the default scan reads it
    as the broker does, and no longer says only "Nothing is lost" (INDEX_MISSING)."""
    log = logdir / PART / f"{SEG0}.log"
    subprocess.run(["truncate", "-s", "-777", str(log)], check=True)
    (logdir / PART / f"{SEG0}.index").unlink()
    (logdir / PART / f"{SEG0}.timeindex").unlink()
    code, report = run_scan(str(logdir))
    assert code == 2
    (hit,) = [f for f in report["findings"] if f["code"] == "LOG_CORRUPT"]
    assert hit["path"] == str(log)
    assert "recovers this segment to rebuild its missing offset index" in hit["message"]
    _code, deep = run_scan("--deep", str(logdir))
    assert [(f["code"], f["position"]) for f in deep["findings"] if f["code"] == "LOG_CORRUPT"] == [
        ("LOG_CORRUPT", hit["position"])
    ]
    (missing,) = [f for f in report["findings"] if f["code"] == "INDEX_MISSING"]
    assert "Nothing is lost" not in missing["fix"]


def test_default_scan_reads_only_the_tails_of_inactive_segments(logdir: Path) -> None:
    """Never the whole file: of the inactive segment 0 the default scan reads the bytes from its offset
    index's last entry to its end, its active segment whole, and the small files."""
    index = (logdir / PART / f"{SEG0}.index").read_bytes()
    last_position = struct.unpack_from(">i", index, len(index) - 4)[0]
    tail = (logdir / PART / f"{SEG0}.log").stat().st_size - last_position
    assert 0 < tail < 4096 + 1024  # index.interval.bytes and one batch
    everything = sum(f.stat().st_size for f in logdir.rglob("*") if f.is_file())
    _code, report = run_scan(str(logdir))
    # every other file of the log dir read whole at most, segment 0's .log only from its last index entry
    seg0 = (logdir / PART / f"{SEG0}.log").stat().st_size
    assert report["summary"]["bytes_read"] <= everything - seg0 + tail

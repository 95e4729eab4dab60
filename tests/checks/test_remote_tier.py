"""The remote tier's findings, planted in a copy of ../shared/tiered (written by Kafka's classes and
LocalTieredStorage / Aiven's plugin), each checked against the store's real objects and the README's offsets.

The real data itself gives none of them (its remote tiers are whole): a scan of every variant is the
check that no false gap is reported.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.checkpoint import new_offset_checkpoint, write_offset_checkpoint
from logdoctor.formats.internal import decode_remote_log_metadata
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.records import iter_batches
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.remote_metadata import PartitionDeleteState, SegmentState, TopicIdPartition
from logdoctor.sample.remote_tier import (
    MetadataEvent,
    metadata_batches,
    partition_delete,
    segment_metadata,
    segment_update,
)

PAYMENTS_ID = "cGF5bWVudHMtdG9waWMwMQ"
P0 = TopicIdPartition(PAYMENTS_ID, "payments", 0)
REMOTE = {
    "REMOTE_OFFSETS_LOST",
    "REMOTE_UPLOAD_UNFINISHED",
    "REMOTE_SEGMENT_BELOW_LOG_START",
    "REMOTE_PARTITION_DELETED_ON_DISK",
    "REMOTE_METADATA_INVALID",
    "REMOTE_METADATA_NOT_HERE",
}


def _copy(variant: str, tmp_path: Path) -> Path:
    src = realworld.require_tiered() / variant / "kafka-logs"
    dst = tmp_path / "kafka-logs"
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst


def _log(log_dir: Path, n: int) -> Path:
    return log_dir / f"__remote_log_metadata-{n}" / "00000000000000000000.log"


def _events(path: Path) -> list[tuple[int, int, dict]]:
    """(position, size, decoded event) of every batch."""
    data = path.read_bytes()
    out = []
    for b in iter_batches(data):
        [rec] = list(b.records())
        out.append((b.position, b.size, decode_remote_log_metadata(None, rec.value)))
    return out


def _append(path: Path, *records: dict, ts: int = 1795454800000) -> int:
    """Append events after the last batch (offsets and producer sequence go on); returns their position."""
    data = path.read_bytes()
    last = list(iter_batches(data))[-1]
    at = len(data)
    more = metadata_batches(
        [MetadataEvent(r, ts + i) for i, r in enumerate(records)],
        base_offset=last.last_offset + 1,
        leader_epoch=last.partition_leader_epoch,
    )
    path.write_bytes(data + more)
    return at


P1 = TopicIdPartition(PAYMENTS_ID, "payments", 1)
HOUR = 3_600_000


def _upload_started(log_dir: Path, at_ms: int) -> None:
    """payments-1 (events in -16) starts an upload of its local [2289, 2600] at ``at_ms``: an event that
    moves the time the metadata shows on, and is itself an upload in progress (never a finding)."""
    _append(
        _log(log_dir, 16),
        segment_metadata(
            P1, "cGF5bWVudHMxLXVwbG9hZA", 2289, 2600, broker_id=0, event_timestamp_ms=at_ms,
            max_timestamp_ms=1710000002600, leader_epochs=[(0, 2289)], size=1,
        ),
    )  # fmt: skip


def _remote(findings) -> list:
    return [f for f in findings if f.code in REMOTE]


@pytest.mark.parametrize("variant", ["kafka-local", "aiven/plain", "aiven/compressed", "aiven/encrypted"])
def test_real_tiered_log_dirs_have_no_remote_findings(variant: str) -> None:
    tiered = realworld.require_tiered()
    report = scan([tiered / variant / "kafka-logs"], ScanOptions(), jobs=1)
    assert _remote(report.findings) == []
    assert report.remote is not None and sorted(report.remote.metadata_dirs) == [16, 21]
    assert report.to_json()["remote_log_metadata"]["records"] in (20, 22)


@pytest.mark.parametrize(
    ("variant", "store"),
    [("kafka-local", "kafka-local/remote/kafka-tiered-storage"), ("aiven/plain", "aiven/plain/storage")],
)
def test_last_copy_finished_deleted_is_a_gap_and_an_unfinished_upload(
    variant: str, store: str, tmp_path: Path
) -> None:
    tiered = realworld.require_tiered()
    log_dir = _copy(variant, tmp_path)
    path = _log(log_dir, 21)  # payments-0's events
    events = _events(path)
    pos, _size, last = events[-1]
    assert last["type"] == "RemoteLogSegmentMetadataUpdateRecord"
    assert last["data"]["remote_log_segment_state"] == SegmentState.COPY_SEGMENT_FINISHED
    seg_id = last["data"]["remote_log_segment_id"]["id"]
    with open(path, "r+b") as f:
        f.truncate(pos)  # the last COPY_SEGMENT_FINISHED (payments-0 [972, 1295]) never written
    report = scan([log_dir], ScanOptions(remote_storage=str(tiered / store)), jobs=1)
    # its COPY_SEGMENT_STARTED is the newest event: an upload that may be in progress, no finding yet
    assert sorted(f.code for f in _remote(report.findings)) == ["REMOTE_OFFSETS_LOST"]
    _upload_started(log_dir, events[-2][2]["data"]["event_timestamp_ms"] + HOUR)  # an hour on: dangling
    report = scan([log_dir], ScanOptions(remote_storage=str(tiered / store)), jobs=1)
    found = _remote(report.findings)
    assert sorted(f.code for f in found) == ["REMOTE_OFFSETS_LOST", "REMOTE_UPLOAD_UNFINISHED"]
    gap = next(f for f in found if f.code == "REMOTE_OFFSETS_LOST")
    assert gap.path == str(log_dir / "payments-0")
    assert gap.details["gaps"] == [[972, 1296]]  # [972, 1296): the README's remote end, now nowhere
    assert gap.offset == 972 and "972-1295" in gap.message and "324 offsets" in gap.message
    assert "Nothing can restore offsets 972-1295 offline" in gap.fix
    assert "OFFSET_OUT_OF_RANGE" in gap.fix and '"offset":1296' in gap.fix
    assert "offsets 0-971, which still exist" in gap.fix  # moving the log start would delete those
    unfinished = next(f for f in found if f.code == "REMOTE_UPLOAD_UNFINISHED")
    assert unfinished.path == str(path) and unfinished.details["segment_id"] == seg_id
    assert "1.0 h newer than its start" in unfinished.message
    # the objects the plugin left behind: the store's real files of that segment id
    real = sorted(str(p) for p in (tiered / store).rglob(f"*{seg_id}*"))
    assert len(real) >= 3 and sorted(unfinished.details["objects"]) == real
    # payments-1 (its events in -16) is untouched
    assert all("payments-1" not in f.message for f in found)


def test_an_unfinished_upload_of_a_local_segment_is_no_gap(tmp_path: Path) -> None:
    log_dir = _copy("kafka-local", tmp_path)
    path = _log(log_dir, 21)
    seg_id = "AAAAAAAAAAAAAAAAAAAAAA"
    at = _append(
        path,
        segment_metadata(
            P0,
            seg_id,
            1296,
            1619,
            broker_id=0,
            event_timestamp_ms=1795454800000,
            max_timestamp_ms=1710000001619,
            leader_epochs=[(0, 1296)],
            size=63000,
        ),
    )
    store = tmp_path / "store"
    assert _remote(scan([log_dir], ScanOptions(remote_storage=str(store)), jobs=1).findings) == []
    _upload_started(log_dir, 1795454800000 + HOUR)
    report = scan([log_dir], ScanOptions(remote_storage=str(store)), jobs=1)
    found = _remote(report.findings)
    assert [f.code for f in found] == ["REMOTE_UPLOAD_UNFINISHED"]
    [f] = found
    assert f.position == at and f.offset == 8
    assert "offsets 1296-1619" in f.message and "started by broker 0" in f.message
    assert f"{store} is not a folder" in f.message  # the store cannot be listed: said, not hidden
    assert "still in the log dir" in f.fix
    store.mkdir()
    (store / f"payments-0-{PAYMENTS_ID}").mkdir()
    left = store / f"payments-0-{PAYMENTS_ID}" / f"00000000000000001296-{seg_id}.log"
    left.write_bytes(b"x")
    [f] = [f for f in _remote(scan([log_dir], ScanOptions(remote_storage=str(store)), jobs=1).findings)]
    assert f.details["objects"] == [str(left)] and str(left) in f.message
    [f] = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    assert "--remote-storage" in f.fix and f.details["objects"] == []


def test_partition_deleted_remotely_but_still_on_disk(tmp_path: Path) -> None:
    log_dir = _copy("kafka-local", tmp_path)
    path = _log(log_dir, 21)
    at = _append(
        path,
        partition_delete(
            P0, PartitionDeleteState.DELETE_PARTITION_MARKED, broker_id=3000, event_timestamp_ms=1795454800000
        ),
    )
    found = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    assert [f.code for f in found] == ["REMOTE_PARTITION_DELETED_ON_DISK"]
    [f] = found
    assert f.path == str(log_dir / "payments-0")
    assert "DELETE_PARTITION_MARKED by broker 3000" in f.message and PAYMENTS_ID in f.message
    assert f.details["metadata_path"] == str(path) and f.details["metadata_position"] == at
    # a topic re-created under the same name (another topic id) is another partition: no finding
    log_dir2 = _copy("kafka-local", tmp_path / "2")
    other = TopicIdPartition("b3RoZXItdG9waWMtMDA0Mw", "payments", 0)  # its events belong in -21 too
    _append(
        _log(log_dir2, 21),
        partition_delete(
            other,
            PartitionDeleteState.DELETE_PARTITION_MARKED,
            broker_id=3000,
            event_timestamp_ms=1795454800000,
        ),
    )
    assert _remote(scan([log_dir2], ScanOptions(), jobs=1).findings) == []
    # events in a metadata partition the partitioner does not give them: the partition count is not 50
    log_dir3 = _copy("kafka-local", tmp_path / "3")
    elsewhere = TopicIdPartition("b3RoZXItdG9waWMtaWQwMQ", "payments", 0)
    _append(
        _log(log_dir3, 21),
        partition_delete(
            elsewhere,
            PartitionDeleteState.DELETE_PARTITION_MARKED,
            broker_id=3000,
            event_timestamp_ms=1795454800000,
        ),
    )
    [f] = _remote(scan([log_dir3], ScanOptions(), jobs=1).findings)
    assert f.code == "REMOTE_METADATA_INVALID" and f.details["kind"] == "wrong-partition"
    assert "remote.log.metadata.topic.num.partitions" in f.message


def test_remote_segments_below_the_log_start(tmp_path: Path) -> None:
    log_dir = _copy("kafka-local", tmp_path)
    cp = new_offset_checkpoint([("payments", 0, 648), ("payments", 1, 0)])
    (log_dir / "log-start-offset-checkpoint").write_bytes(write_offset_checkpoint(cp))
    found = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    assert [f.code for f in found] == ["REMOTE_SEGMENT_BELOW_LOG_START"]
    [f] = found
    assert f.path == str(log_dir / "payments-0")
    assert "2 remote segments" in f.message and "offsets 0-323, 324-647" in f.message
    assert "log start offset 648" in f.message and "2 COPY_SEGMENT_FINISHED" in f.message


def test_invalid_transition_and_damaged_bytes_name_file_and_position(tmp_path: Path) -> None:
    log_dir = _copy("kafka-local", tmp_path)
    path = _log(log_dir, 21)
    seg_id = _events(path)[0][2]["data"]["remote_log_segment_id"]["id"]
    at = _append(
        path,
        segment_update(
            P0, seg_id, SegmentState.DELETE_SEGMENT_FINISHED, broker_id=0, event_timestamp_ms=1795454800000
        ),
    )
    found = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    assert [f.code for f in found] == ["REMOTE_METADATA_INVALID"]
    [f] = found
    assert f.path == str(path) and f.position == at and f.offset == 8
    assert "from COPY_SEGMENT_FINISHED to DELETE_SEGMENT_FINISHED, a change Kafka drops" in f.message
    # the event was dropped, as Kafka drops it: the segment is still there, no gap
    # damaged bytes in -16: a finding at the damage, and the replay of -21 goes on
    p16 = _log(log_dir, 16)
    data = bytearray(p16.read_bytes())
    data[200] ^= 0xFF  # inside the second batch
    p16.write_bytes(bytes(data))
    found = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    damaged = [f for f in found if f.code == "REMOTE_METADATA_INVALID" and f.path == str(p16)]
    assert len(damaged) == 1 and damaged[0].position == 177  # the batch whose CRC fails
    assert "LOG_CORRUPT" in damaged[0].fix
    assert "logdoctor repair" in damaged[0].fix and "--only LOG_CORRUPT" in damaged[0].fix
    # payments-1 is known only up to the damage: no gap or unfinished upload is made up from the events lost
    assert [f.code for f in found] == ["REMOTE_METADATA_INVALID", "REMOTE_METADATA_INVALID"]
    assert "__remote_log_metadata-16" in damaged[0].fix


def test_metadata_partition_elsewhere_is_said_once_never_a_gap(tmp_path: Path) -> None:
    log_dir = _copy("kafka-local", tmp_path)
    shutil.rmtree(log_dir / "__remote_log_metadata-21")  # payments-0's events are on another broker
    found = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    assert [f.code for f in found] == ["REMOTE_METADATA_NOT_HERE"]
    [f] = found
    assert "payments-0" in f.message and "__remote_log_metadata-21" in f.message
    assert "payments-1" not in f.message


def test_fix_commands_run_exactly_as_printed(tmp_path: Path) -> None:
    """The logdoctor commands in the remote findings' fixes (a damaged metadata batch: repair's dry run;
    an undecodable event: dump) run as printed, and the CLI's --remote-storage lists the left objects."""
    import re
    import shlex
    import subprocess
    import sys

    log_dir = _copy("kafka-local", tmp_path)
    p16 = _log(log_dir, 16)
    data = bytearray(p16.read_bytes())
    data[200] ^= 0xFF
    p16.write_bytes(bytes(data))
    _append(
        _log(log_dir, 21),
        segment_metadata(
            P0,
            "BBBBBBBBBBBBBBBBBBBBBB",
            1296,
            1619,
            broker_id=0,
            event_timestamp_ms=1,
            max_timestamp_ms=1,
            leader_epochs=[(0, 1296)],
            size=1,
        ),
    )
    path21 = _log(log_dir, 21)
    last = list(iter_batches(path21.read_bytes()))[-1]
    newer = build_record_batch(
        [RecordSpec(value=bytes([1, 9, 0, 0]), timestamp=2)], base_offset=last.last_offset + 1
    )
    path21.write_bytes(path21.read_bytes() + newer)  # an event of a type this Kafka does not know
    findings = _remote(scan([log_dir], ScanOptions(), jobs=1).findings)
    commands = [c for f in findings for c in re.findall(r"`(logdoctor [^`]*)`", f.fix)]
    assert any(c.startswith("logdoctor repair") for c in commands)
    assert f"logdoctor dump {path21}" in commands
    for line in commands:
        words = shlex.split(line)
        done = subprocess.run([sys.executable, "-m", "logdoctor", *words[1:]], capture_output=True, text=True)
        assert done.returncode in (0, 1, 2), (line, done.stderr)
        assert "Traceback" not in done.stderr, line
    if commands:
        repair = next(c for c in commands if c.startswith("logdoctor repair"))
        out = subprocess.run(
            [sys.executable, "-m", "logdoctor", *shlex.split(repair)[1:]], capture_output=True, text=True
        )
        assert str(p16) in out.stdout  # the plan truncates the damaged metadata segment
    store = realworld.require_tiered() / "kafka-local/remote"
    done = subprocess.run(
        [sys.executable, "-m", "logdoctor", "scan", str(log_dir), "--json", "--remote-storage", str(store)],
        capture_output=True,
        text=True,
    )
    assert done.returncode in (1, 2), done.stderr
    assert "REMOTE_UPLOAD_UNFINISHED" in done.stdout and f"no object of it is in {store}" in done.stdout

"""Checks of __cluster_metadata-0 on a generated KRaft broker: snapshots (header, footer, CRC, ids against
the log), the log start without a snapshot, quorum-state against the log, bootstrap.checkpoint. Each
planted fault gives exactly its finding; the real KRaft dirs give none (test_kraft_realworld)."""

from __future__ import annotations

import os
from pathlib import Path

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.quorum_state import QuorumState, write_quorum_state
from logdoctor.logdir.metadata_image import replay
from logdoctor.logdir.names import kraft_snapshot_file_name
from logdoctor.sample.kraft import metadata_records, write_metadata_log, write_snapshot
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

CODES = {
    "METADATA_SNAPSHOT_CORRUPT",
    "METADATA_SNAPSHOT_MISSING",
    "METADATA_SNAPSHOT_MISMATCH",
    "QUORUM_STATE_MISMATCH",
    "QUORUM_STATE_CORRUPT",
    "BOOTSTRAP_CHECKPOINT_CORRUPT",
}


def _node(tmp_path: Path):
    spec = FleetSpec(
        topics=[TopicSpec("orders", partitions=3, records_per_partition=30)],
        brokers=(BrokerSpec(1, kraft=True),),
        seed=2,
    )
    fleet = generate_fleet(tmp_path / "fleet", spec)
    recs = metadata_records(fleet, metadata_version=21)
    mdir = write_metadata_log(fleet, 1, records=recs, epoch=3)
    return fleet, mdir, recs


def _found(fleet):
    report = scan([str(d) for d in fleet.log_dirs[1]], ScanOptions(Depth.QUICK), jobs=1)
    return sorted((f.code, f.path) for f in report.findings if f.code in CODES), report


def test_clean_with_a_snapshot_and_bootstrap(tmp_path):
    fleet, mdir, recs = _node(tmp_path)
    snap = write_snapshot(mdir / kraft_snapshot_file_name(len(recs), 3), recs, epoch=3)
    write_snapshot(mdir.parent / "bootstrap.checkpoint", recs[:1], epoch=0)
    found, report = _found(fleet)
    assert found == []
    assert report.metadata.snapshot == (len(recs), 3)
    assert report.metadata.snapshot_path == str(snap)
    assert len(report.metadata.partitions) == 3


def test_corrupt_latest_snapshot_and_the_replay_falls_back_to_the_log(tmp_path):
    fleet, mdir, recs = _node(tmp_path)
    snap = write_snapshot(mdir / kraft_snapshot_file_name(len(recs), 3), recs, epoch=3)
    data = bytearray(snap.read_bytes())
    data[-5] ^= 0xFF  # inside the footer batch: its CRC no longer matches
    snap.write_bytes(bytes(data))
    found, report = _found(fleet)
    assert found == [("METADATA_SNAPSHOT_CORRUPT", str(snap))]
    image = report.metadata
    assert image.snapshot is None and image.errors and len(image.partitions) == 3


def test_snapshot_epoch_disagrees_with_the_log(tmp_path):
    fleet, mdir, recs = _node(tmp_path)
    snap = write_snapshot(mdir / kraft_snapshot_file_name(2, 1), recs[:2], epoch=1)  # the log says epoch 3
    found, _ = _found(fleet)
    assert found == [("METADATA_SNAPSHOT_MISMATCH", str(snap))]


def test_log_start_without_snapshot(tmp_path):
    fleet, mdir, _recs = _node(tmp_path)
    for name in os.listdir(mdir):
        if name.startswith("00000000000000000000."):
            os.rename(mdir / name, mdir / name.replace("00000000000000000000", "00000000000000000005"))
    found, _ = _found(fleet)
    assert ("METADATA_SNAPSHOT_MISSING", str(mdir)) in found


def test_quorum_state_behind_the_log_and_not_a_voter(tmp_path):
    fleet, mdir, _recs = _node(tmp_path)
    q = mdir / "quorum-state"
    q.write_bytes(
        write_quorum_state(
            QuorumState(
                0,
                leader_id=1,
                leader_epoch=2,
                voted_id=-1,
                cluster_id="",
                applied_offset=0,
                current_voters=[1],
            )
        )
    )
    found, _ = _found(fleet)
    assert found == [("QUORUM_STATE_MISMATCH", str(q))]
    q.write_bytes(
        write_quorum_state(
            QuorumState(
                0,
                leader_id=9,
                leader_epoch=3,
                voted_id=-1,
                cluster_id="",
                applied_offset=0,
                current_voters=[1],
            )
        )
    )
    found, _ = _found(fleet)
    assert found == [("QUORUM_STATE_MISMATCH", str(q))]
    q.write_bytes(b'{"leaderId":1')
    found, _ = _found(fleet)
    assert found == [("QUORUM_STATE_CORRUPT", str(q))]


def test_corrupt_bootstrap_checkpoint(tmp_path):
    fleet, mdir, recs = _node(tmp_path)
    b = mdir.parent / "bootstrap.checkpoint"
    write_snapshot(b, recs[:1], epoch=0)
    b.write_bytes(b.read_bytes()[:-10])  # torn: no footer
    found, _ = _found(fleet)
    assert found == [("BOOTSTRAP_CHECKPOINT_CORRUPT", str(b))]


def test_replay_skips_record_types_it_does_not_know(tmp_path):
    """A record type newer than our tables is counted as 'unknown type N, version V', never an error."""
    from logdoctor.formats.internal.protocol import write_uvarint

    _fleet, mdir, recs = _node(tmp_path)
    from logdoctor.formats.record_types import RecordSpec
    from logdoctor.formats.writer import build_record_batch

    value = bytearray()
    for n in (1, 99, 4):
        write_uvarint(value, n)
    value += b"\x00\x01\x02"
    log = mdir / "00000000000000000000.log"
    log.write_bytes(
        log.read_bytes()
        + build_record_batch([RecordSpec(bytes(value))], base_offset=len(recs), partition_leader_epoch=3)
    )
    image = replay(mdir)
    assert image.skipped == {"unknown type 99, version 4": 1}
    assert image.errors == [] and image.end_offset == len(recs) + 1


def test_leftover_snapshot_files(tmp_path):
    fleet, mdir, recs = _node(tmp_path)
    deleted = write_snapshot(mdir / (kraft_snapshot_file_name(1, 3) + ".deleted"), recs[:1], epoch=3)
    partial = mdir / (kraft_snapshot_file_name(2, 3)[: -len(".checkpoint")] + "-123.checkpoint.part")
    partial.write_bytes(b"")
    report = scan([str(d) for d in fleet.log_dirs[1]], ScanOptions(Depth.QUICK), jobs=1)
    orphans = {f.path: f for f in report.findings if f.code == "ORPHAN_FILE"}
    assert set(orphans) == {str(deleted), str(partial)}
    assert "KafkaMetadataLog.recoverSnapshots" in orphans[str(deleted)].message
    assert "being written" in orphans[str(partial)].message
    assert [f for f in report.findings if f.code in CODES] == []


def _append_control(mdir: Path, value, *, epoch: int = 3) -> None:
    """Append one control batch holding ``value`` to the metadata log's only segment."""
    from logdoctor.formats.control import control_record_spec
    from logdoctor.formats.writer import build_record_batch

    seg = mdir / "00000000000000000000.log"
    end = replay(mdir).end_offset
    batch = build_record_batch([control_record_spec(value)], base_offset=end, partition_leader_epoch=epoch,
                               is_control=True)
    with open(seg, "ab") as f:
        f.write(batch)


def test_static_voters_of_quorum_state_against_the_logs_leader_change(tmp_path):
    from logdoctor.formats.control import LeaderChangeMessage, LeaderChangeVoter

    fleet, mdir, _recs = _node(tmp_path)
    q = mdir / "quorum-state"
    _append_control(mdir, LeaderChangeMessage(0, 1, tuple(LeaderChangeVoter(v) for v in (1, 2, 3))))
    assert replay(mdir).leader_change == (1, (1, 2, 3))
    v0 = dict(leader_id=1, leader_epoch=3, voted_id=-1, cluster_id="", applied_offset=0)
    q.write_bytes(write_quorum_state(QuorumState(0, **v0, current_voters=[1])))
    found, report = _found(fleet)
    assert found == [("QUORUM_STATE_MISMATCH", str(q))]
    (msg,) = [f.message for f in report.findings if f.code == "QUORUM_STATE_MISMATCH"]
    assert "[1]" in msg and "[1, 2, 3]" in msg
    q.write_bytes(write_quorum_state(QuorumState(0, **v0, current_voters=[3, 2, 1])))
    assert _found(fleet)[0] == []


def test_dynamic_quorum_state_against_the_logs_voters_record(tmp_path):
    import uuid

    from logdoctor.formats.control import Endpoint, KRaftVersionFeature, Voter, VotersRecord

    fleet, mdir, _recs = _node(tmp_path)
    q = mdir / "quorum-state"
    endpoint = Endpoint("CONTROLLER", "localhost", 9093)
    voter = Voter(1, uuid.UUID(int=7), (endpoint,), KRaftVersionFeature(0, 1))
    _append_control(mdir, VotersRecord(0, (voter,)))
    assert replay(mdir).voters == (1,)
    q.write_bytes(write_quorum_state(QuorumState(1, leader_id=1, leader_epoch=3, voted_id=-1,
                                                 voted_directory_id=None)))
    assert _found(fleet)[0] == []
    q.write_bytes(write_quorum_state(QuorumState(1, leader_id=4, leader_epoch=3, voted_id=-1,
                                                 voted_directory_id=None)))
    assert _found(fleet)[0] == [("QUORUM_STATE_MISMATCH", str(q))]

"""The model on generated log dirs: what the generator wrote vs what the model reads back,
with kafka-python's decoder as the independent oracle for log end offsets."""

from __future__ import annotations

import os
import shutil

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from logdoctor.formats.record_types import Compression, RecordSpec
from logdoctor.formats.writer import build_message_set
from logdoctor.logdir import DirKind, LogDir
from logdoctor.sample.logdir import (
    BrokerSpec,
    FleetSpec,
    LaggingReplica,
    TopicSpec,
    ZeroedTimeIndex,
    generate_fleet,
    generate_log_dir,
)


def kafka_python_next_offset(data: bytes, base_offset: int) -> int:
    last = None
    for batch in MemoryRecords(data):
        if isinstance(batch, DefaultRecordBatch):
            last = batch.last_offset
        else:
            for rec in batch:
                last = rec.offset
    return base_offset if last is None else last + 1


TOPICS = [
    TopicSpec("orders.v1_eu-west", partitions=3, records_per_partition=400, records_per_batch=4,
              segment_bytes=5000, idempotent=True, leader_epochs=3),
    TopicSpec("gz", partitions=1, records_per_partition=300, records_per_batch=10, segment_bytes=3000,
              compression=Compression.GZIP),
    TopicSpec("empty-topic", partitions=2, records_per_partition=0),
]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return generate_log_dir(tmp_path_factory.mktemp("clean"), TOPICS, index_interval_bytes=700)


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    return generate_log_dir(
        tmp_path_factory.mktemp("running"), TOPICS, broker=BrokerSpec(3, kraft=True, running=True),
        index_interval_bytes=700,
    )


@pytest.mark.parametrize("which", ["clean", "running"])
def test_model_matches_generator_and_kafka_python(which, request):
    path, fleet = request.getfixturevalue(which)
    ld = LogDir(path)
    assert len(ld.partitions) == len(fleet.replicas) == 6
    for rep in fleet.replicas:
        p = ld.partition(rep.topic, rep.partition)
        assert p.kind is DirKind.LOG and p.path == rep.path
        assert [s.base_offset for s in p.segments] == [s.base_offset for s in rep.segments]
        assert [s.size for s in p.segments] == [s.size for s in rep.segments]
        assert p.log_end_offset == rep.log_end_offset
        active = p.active_segment
        assert p.log_end_offset == kafka_python_next_offset(active.log_path.read_bytes(), active.base_offset)
        for seg in p.segments[:-1]:  # every segment's next offset is the next segment's base
            assert seg.next_offset() == kafka_python_next_offset(seg.log_path.read_bytes(), seg.base_offset)
        assert p.log_start_offset == rep.log_start_offset == 0
        assert p.recovery_point == rep.recovery_point
        assert p.high_watermark == rep.high_watermark
        assert p.leader_epochs == rep.leader_epochs
        assert p.topic_id == rep.topic_id
        assert [o for o, _ in p.producer_snapshots] == rep.producer_snapshots
        assert p.orphan_files == []
    assert ld.orphans == [] and ld.problems == []
    mp = ld.meta_properties
    assert mp.version == (1 if which == "running" else 0)
    assert mp.node_id == (3 if which == "running" else 0)
    assert ld.has_clean_shutdown_marker is (which == "clean")


def test_running_broker_active_index_is_preallocated(running):
    path, _ = running
    p = LogDir(path).partition("orders.v1_eu-west", 0)
    active = p.active_segment
    assert active.index_size == 10 * 1024 * 1024 and active.timeindex_size == 10 * 1024 * 1024 - 4
    entries = active.offset_index()
    assert entries and all(e.offset > active.base_offset for e in entries)  # zero slots left out
    assert len(active.offset_index(include_zero_slots=True)) == 10 * 1024 * 1024 // 8
    assert p.recovery_point == active.base_offset < p.log_end_offset


def test_largest_timestamp(clean, tmp_path):
    path, fleet = clean
    dst = tmp_path / "copy"
    shutil.copytree(path, dst)
    ld = LogDir(dst)
    segs = ld.partition("orders.v1_eu-west", 2).segments
    rep = fleet.replica(0, "orders.v1_eu-west", 2)
    for seg, info in zip(segs, rep.segments, strict=True):
        assert seg.largest_timestamp_from_log() == info.max_timestamp
        assert seg.largest_timestamp_from_index() == info.max_timestamp  # closed: final time-index entry
    # a zeroed time index (same size): the broker would see timestamp 0 (KAFKA-10207)
    seg = segs[1]
    seg.timeindex_path.write_bytes(bytes(seg.timeindex_size))
    assert LogDir(dst).partition("orders.v1_eu-west", 2).segments[1].largest_timestamp_from_index() == 0
    # no time index: the .log mtime
    os.unlink(seg.timeindex_path)
    os.utime(seg.log_path, ns=(1_600_000_000_123_000_000, 1_600_000_000_123_000_000))
    fresh = LogDir(dst).partition("orders.v1_eu-west", 2).segments[1]
    assert fresh.largest_timestamp_from_index() == 1_600_000_000_123
    assert fresh.largest_timestamp_from_log() == rep.segments[1].max_timestamp


def test_torn_tail_and_bad_index(clean, tmp_path):
    path, fleet = clean
    dst = tmp_path / "copy"
    shutil.copytree(path, dst)
    p = LogDir(dst).partition("gz", 0)
    active = p.active_segment
    data = active.log_path.read_bytes()
    batches = list(MemoryRecords(data))
    assert len(batches) >= 3
    # cut the last batch in half: the last complete batch ends the log, as recovery would say
    cut = len(data) - batches[-1].size_in_bytes // 2
    os.truncate(active.log_path, cut)
    expected = kafka_python_next_offset(data[:cut], active.base_offset)
    assert expected < fleet.replica(0, "gz", 0).log_end_offset
    p2 = LogDir(dst).partition("gz", 0)
    assert p2.log_end_offset == expected
    assert p2.active_segment.last_scan_error is not None
    # an index whose last entry points into the middle of a batch: fall back to a scan from 0
    idx = p2.active_segment.index_path
    assert idx.stat().st_size >= 8
    raw = bytearray(idx.read_bytes())
    raw[-4:] = (7).to_bytes(4, "big")
    idx.write_bytes(bytes(raw))
    assert LogDir(dst).partition("gz", 0).log_end_offset == expected
    # an index pointing past the end of the log
    raw[-4:] = (10**8).to_bytes(4, "big")
    idx.write_bytes(bytes(raw))
    assert LogDir(dst).partition("gz", 0).log_end_offset == expected


def test_legacy_message_sets(tmp_path):
    """v1 compressed wrappers (0.10-era): last offset comes from the wrapper."""
    folder = tmp_path / "old-0"
    folder.mkdir()
    chunks, offset = [], 0
    for i in range(5):
        recs = [RecordSpec(value=b"v%d" % j, key=None, timestamp=1_500_000_000_000 + j) for j in range(3)]
        chunks.append(build_message_set(recs, magic=1, base_offset=offset,
                                        compression=Compression.GZIP if i % 2 else Compression.NONE))
        offset += 3
    data = b"".join(chunks)
    (folder / "00000000000000000000.log").write_bytes(data)
    p = LogDir(tmp_path).partition("old", 0)
    assert p.log_end_offset == kafka_python_next_offset(data, 0) == 15
    assert p.recovery_point is None and p.high_watermark is None and p.leader_epochs == []


def test_empty_active_segment_and_empty_file(tmp_path):
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / "00000000000000000042.log").write_bytes(b"")
    p = LogDir(tmp_path).partition("t", 0)
    assert p.active_segment.map_log().tobytes() == b""
    assert p.log_end_offset == 42 and p.log_start_offset == 42
    assert p.active_segment.last_offset() is None
    assert p.active_segment.largest_timestamp_from_log() == -1


def test_orphans(clean, tmp_path):
    path, _ = clean
    dst = tmp_path / "copy"
    shutil.copytree(path, dst)
    u = "0123456789abcdef0123456789abcdef"
    (dst / f"gz-0.{u}-delete").mkdir()
    (dst / f"gz-0.{u}-future").mkdir()
    (dst / f"orders.v1_eu-west-9.{u}-stray").mkdir()
    (dst / "lost+found").mkdir()
    (dst / "notes.txt").write_text("hi")
    (dst / "replication-offset-checkpoint.tmp").write_text("0\n")
    part = dst / "gz-0"
    (part / "00000000000000000000.log.swap").write_bytes(b"")
    (part / "00000000000000000000.index.cleaned").write_bytes(b"")
    (part / "00000000000000099999.timeindex.deleted").write_bytes(b"")
    (part / "00000000000000088888.index").write_bytes(b"")  # index without .log
    (part / "core").write_bytes(b"")
    ld = LogDir(dst)
    kinds = sorted((o.path.name, o.kind) for o in ld.orphans)
    assert kinds == sorted([
        (f"gz-0.{u}-delete", "delete-dir"),
        (f"gz-0.{u}-future", "future-dir"),
        (f"orders.v1_eu-west-9.{u}-stray", "stray-dir"),
        ("lost+found", "unknown-dir"),
        ("notes.txt", "unknown-file"),
        ("replication-offset-checkpoint.tmp", "tmp-file"),
    ])
    assert {(p.topic, p.partition, p.kind) for p in ld.orphan_partitions} == {
        ("gz", 0, DirKind.DELETE), ("gz", 0, DirKind.FUTURE), ("orders.v1_eu-west", 9, DirKind.STRAY)}
    assert len(ld.partitions) == 6  # the orphan folders are not live partitions
    p = ld.partition("gz", 0)
    assert sorted((o.path.name, o.kind) for o in p.orphan_files) == sorted([
        ("00000000000000000000.log.swap", "swap"),
        ("00000000000000000000.index.cleaned", "cleaned"),
        ("00000000000000099999.timeindex.deleted", "deleted"),
        ("00000000000000088888.index", "index-without-log"),
        ("core", "unknown-file"),
    ])
    assert 88888 not in [s.base_offset for s in p.segments]


def test_lenient_checkpoints(clean, tmp_path):
    path, fleet = clean
    dst = tmp_path / "copy"
    shutil.copytree(path, dst)
    rp = (dst / "recovery-point-offset-checkpoint").read_text().splitlines()
    rp.insert(3, "garbage line here too many")
    (dst / "recovery-point-offset-checkpoint").write_text("\n".join(rp) + "\n")
    (dst / "log-start-offset-checkpoint").write_text("0\n1\ngz 0 25\n")
    ld = LogDir(dst)
    assert ld.recovery_points.problems  # kept, not raised
    assert not ld.recovery_points.ok
    expected = fleet.replica(0, "orders.v1_eu-west", 0).recovery_point
    assert ld.partition("orders.v1_eu-west", 0).recovery_point == expected
    assert any(path.name == "recovery-point-offset-checkpoint" for path, _ in ld.problems)
    # log start = max(checkpoint, first segment base) as LogLoader computes it
    assert ld.partition("gz", 0).log_start_offset == 25
    (dst / "replication-offset-checkpoint").unlink()
    assert LogDir(dst).partition("gz", 0).high_watermark is None
    assert not LogDir(dst).high_watermarks.exists


def test_fleet_with_lagging_replica_and_zeroed_time_index(tmp_path):
    spec = FleetSpec(
        topics=[TopicSpec("events", partitions=4, replication_factor=3, records_per_partition=120,
                          segment_bytes=2500)],
        brokers=[BrokerSpec(1), BrokerSpec(2), BrokerSpec(3, log_dirs=2)],
        faults=[LaggingReplica(2, "events", 1, lag=30), ZeroedTimeIndex(3, "events", 2, segment=0)],
    )
    fleet = generate_fleet(tmp_path, spec)
    leos = {}
    for bid, dirs in fleet.log_dirs.items():
        for d in dirs:
            ld = LogDir(d)
            assert ld.meta_properties.node_id == bid
            for p in ld.partitions:
                leos[(bid, p.partition)] = p.log_end_offset
                assert p.high_watermark == fleet.replica(bid, "events", p.partition).high_watermark
    assert len(leos) == 12  # 4 partitions x 3 replicas, across 4 log dirs
    assert leos[(2, 1)] == 90 and leos[(1, 1)] == leos[(3, 1)] == 120
    assert fleet.replica(1, "events", 1).high_watermark == 90  # the ISR's minimum
    rep = fleet.replica(3, "events", 2)
    ld = LogDir(rep.log_dir)
    assert ld.partition("events", 2).segments[0].largest_timestamp_from_index() == 0
    second = ld.partition("events", 2).segments[1]
    assert second.largest_timestamp_from_index() == rep.segments[1].max_timestamp

"""The log dir generator writes what a broker would: checked with independent readers."""

from __future__ import annotations

from kafka.record.memory_records import MemoryRecords

from logdoctor.formats.checkpoint import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from logdoctor.formats.partition_metadata import parse_partition_metadata
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.formats.properties import parse_meta_properties
from logdoctor.formats.record_types import Compression
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir import LogDir
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet, generate_log_dir


def test_segments_decode_with_kafka_python_and_roll_by_size(tmp_path):
    spec = TopicSpec("t", partitions=2, records_per_partition=333, records_per_batch=5, segment_bytes=4096,
                     compression=Compression.LZ4, idempotent=True, leader_epochs=4)
    _, fleet = generate_log_dir(tmp_path, [spec])
    for rep in fleet.replicas:
        expected_offset = 0
        for seg in rep.segments:
            data = seg.path.read_bytes()
            assert 0 < len(data) <= 4096
            batches = list(MemoryRecords(data))
            assert all(b.validate_crc() for b in batches)
            assert batches[0].base_offset == seg.base_offset == expected_offset
            assert all(b.producer_id == 1000 + rep.partition for b in batches)
            expected_offset = batches[-1].last_offset + 1
            assert expected_offset == seg.next_offset
        assert expected_offset == rep.log_end_offset == 333
        # leader epochs: the checkpoint's start offsets are where the batches' epochs change
        epochs = parse_leader_epoch_checkpoint((rep.path / "leader-epoch-checkpoint").read_bytes()).entries
        seen = []
        for seg in rep.segments:
            for b in MemoryRecords(seg.path.read_bytes()):
                if not seen or b.leader_epoch > seen[-1][0]:
                    seen.append((b.leader_epoch, b.base_offset))
        assert epochs == seen and len(epochs) == 4


def test_generated_indexes_equal_recovery_rebuild(tmp_path):
    """The generator's append-time indexes vs formats.recovery.rebuild_indexes (LogSegment.recover)."""
    spec = TopicSpec("t", partitions=3, records_per_partition=600, records_per_batch=3, segment_bytes=9000,
                     compression=Compression.GZIP)
    path, _ = generate_log_dir(tmp_path, [spec], index_interval_bytes=600)
    compared = 0
    for p in LogDir(path).partitions:
        for s in p.segments:
            rebuilt = rebuild_indexes(s.map_log(), s.base_offset, index_interval_bytes=600)
            assert rebuilt.error is None
            assert rebuilt.offset_index == s.index_path.read_bytes()
            assert rebuilt.time_index == s.timeindex_path.read_bytes()
            compared += bool(rebuilt.offset_entries)
    assert compared > 6


def test_small_files_parse_and_agree(tmp_path):
    spec = FleetSpec(
        topics=[TopicSpec("a", partitions=2, records_per_partition=40, segment_bytes=1500, idempotent=True),
                TopicSpec("b", partitions=1, records_per_partition=10)],
        brokers=[BrokerSpec(7, kraft=True), BrokerSpec(8)],
        seed=42,
    )
    fleet = generate_fleet(tmp_path, spec)
    kraft_dir = fleet.log_dirs[7][0]
    zk_dir = fleet.log_dirs[8][0]
    k = parse_meta_properties((kraft_dir / "meta.properties").read_bytes())
    z = parse_meta_properties((zk_dir / "meta.properties").read_bytes())
    assert (k.version, k.node_id) == (1, 7) and k.directory_id is not None
    assert (z.version, z.node_id, z.directory_id) == (0, 8, None)
    assert k.cluster_id == z.cluster_id
    for bid, dirs in fleet.log_dirs.items():
        ld = dirs[0]
        mine = [r for r in fleet.replicas if r.broker_id == bid]
        rp = parse_offset_checkpoint((ld / "recovery-point-offset-checkpoint").read_bytes()).offsets()
        hw = parse_offset_checkpoint((ld / "replication-offset-checkpoint").read_bytes()).offsets()
        assert rp == {(r.topic, r.partition): r.log_end_offset for r in mine}
        assert hw == rp
        assert parse_offset_checkpoint((ld / "log-start-offset-checkpoint").read_bytes()).entries == []
        assert (ld / ".lock").exists() and (ld / ".kafka_cleanshutdown").exists()
        for r in mine:
            pm = parse_partition_metadata((r.path / "partition.metadata").read_bytes())
            assert pm.topic_id == r.topic_id
            # a snapshot at each roll and at the log end; the last one lists the idempotent producer
            bases = [s.base_offset for s in r.segments[1:]]
            assert r.producer_snapshots == [*bases, r.log_end_offset]
            last = parse_producer_snapshot(
                (r.path / f"{r.log_end_offset:020d}.snapshot").read_bytes()
            )
            if r.topic == "a":
                (entry,) = last.entries
                assert entry.producer_id == 1000 + r.partition
                assert entry.last_offset == r.log_end_offset - 1
                assert entry.last_sequence == r.log_end_offset - 1
            else:
                assert last.entries == []
    # the same topic id on every replica, different ids for different topics
    ids = {(r.topic, r.topic_id) for r in fleet.replicas}
    assert len(ids) == 2 and len({i for _, i in ids}) == 2


def test_tiny_segments(tmp_path):
    """One batch per segment (the 100,000-segment benchmark's shape)."""
    path, _ = generate_log_dir(
        tmp_path, [TopicSpec("x", partitions=2, records_per_partition=30, value_size=4, key_size=0,
                             segment_bytes=1)], producer_snapshots="last",
    )
    ld = LogDir(path)
    for p in ld.partitions:
        assert [s.base_offset for s in p.segments] == list(range(30))
        assert all(s.index_size == 0 and s.timeindex_size == 12 for s in p.segments)
        assert [o for o, _ in p.producer_snapshots] == [30]
        assert p.log_end_offset == 30

"""The demo fleet: several brokers with the problems a fleet census must find.

Built on :mod:`logdoctor.sample.logdir` (which writes brokers, replicas and checkpoints as a broker
leaves them) with the faults the demo needs on top:

- an out-of-ISR replica: one follower ``lag`` records behind, while the leader and the other
  follower have moved their high watermark past it (after the ISR shrank);
- a corrupt offset index (entries that go backwards: the broker's lookups would fail);
- a retention-risk segment (a zeroed ``.timeindex``: largestTimestamp=0, KAFKA-10207);
- a nearly full log dir: a simulated disk (``GeneratedFleet.simulated_disks``, an in-process argument
  the demo gives its inventories and tests give the census; :mod:`logdoctor.logdir.disk`);
- a tiered partition (KIP-405): ``orders-2``'s oldest segments uploaded to a remote store in Kafka's
  LocalTieredStorage layout beside the brokers (``remote-storage/``) and deleted locally, its log start
  offset kept below its first local segment, and the ``__remote_log_metadata`` partition with the upload
  events on its brokers (:class:`logdoctor.sample.remote_tier.TieredPartition`);
- a KRaft broker (its own single-node cluster, Kafka 3.9 metadata) with two log dirs, its
  ``__cluster_metadata-0`` and a replica moved by hand to the dir the metadata does not assign it
  to (REPLICA_MISPLACED; :mod:`logdoctor.sample.kraft`).
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.formats.checkpoint import (
    new_offset_checkpoint,
    parse_offset_checkpoint,
    write_offset_checkpoint,
)
from logdoctor.formats.record_types import Compression
from logdoctor.logdir.disk import SimulatedDisk
from logdoctor.logdir.names import REPLICATION_OFFSET_CHECKPOINT, SegmentFileType, segment_file_name
from logdoctor.sample.logdir import (
    BrokerSpec,
    Fault,
    FleetSpec,
    GeneratedFleet,
    LaggingReplica,
    TopicSpec,
    ZeroedTimeIndex,
    generate_fleet,
)
from logdoctor.sample.remote_tier import REMOTE_STORE_DIR, TieredPartition

#: the demo's records end this long before its "now" (spaced 1 s apart, they start ~35 minutes earlier):
#: fresh data that no retention deletes, so the one segment the next retention check does delete is the
#: planted RETENTION_RISK one
DEMO_DATA_AGE_MS = 2 * 3600 * 1000


@dataclass
class OutOfIsrReplica(LaggingReplica):
    """A lagging follower that has left the ISR: the other replicas' high watermark is the full log end."""

    def apply(self, fleet: GeneratedFleet) -> None:
        others = [
            r
            for r in fleet.replicas
            if (r.topic, r.partition) == (self.topic, self.partition) and r.broker_id != self.broker_id
        ]
        if not others:
            return
        hw = max(r.log_end_offset for r in others)
        for r in others:
            path = r.log_dir / REPLICATION_OFFSET_CHECKPOINT
            cp = parse_offset_checkpoint(path.read_bytes(), source=str(path))
            entries = [(t, p, hw if (t, p) == (self.topic, self.partition) else o) for t, p, o in cp.entries]
            path.write_bytes(write_offset_checkpoint(new_offset_checkpoint(entries)))
            r.high_watermark = hw


@dataclass
class CorruptOffsetIndex(Fault):
    """Make a segment's ``.index`` go backwards (its second entry gets an offset below the first)."""

    broker_id: int
    topic: str
    partition: int
    segment: int = 0

    def apply(self, fleet: GeneratedFleet) -> None:
        rep = fleet.replica(self.broker_id, self.topic, self.partition)
        seg = rep.segments[self.segment]
        path = seg.path.parent / segment_file_name(seg.base_offset, SegmentFileType.INDEX)
        data = bytearray(path.read_bytes())
        if len(data) < 16:  # fewer than two entries: write two that go backwards
            data = bytearray(struct.pack(">iiii", 50, 4096, 10, 8192))
        else:
            first_rel = struct.unpack_from(">i", data, 0)[0]
            struct.pack_into(">i", data, 8, max(0, first_rel - 1))
        path.write_bytes(bytes(data))


@dataclass
class NearlyFullDisk(Fault):
    """Simulate (``fleet.simulated_disks``) that one log dir's disk is ``used`` full, the others less."""

    broker_id: int
    log_dir_index: int = 0
    used: float = 0.97
    disk_bytes: int = 500 * 1024**3
    others_used: float = 0.40

    def apply(self, fleet: GeneratedFleet) -> None:
        dirs = fleet.log_dirs[self.broker_id]
        for i, d in enumerate(dirs):
            used = self.used if i == self.log_dir_index else self.others_used
            fleet.simulated_disks[os.path.abspath(d)] = SimulatedDisk(
                self.disk_bytes, int(self.disk_bytes * (1 - used))
            )


@dataclass
class DemoFleet:
    root: Path
    fleet: GeneratedFleet
    planted: list[str] = field(default_factory=list)  # human-readable list of the planted faults
    now_ms: int = 0  # the "now" the data was generated for (records end DEMO_DATA_AGE_MS before it)
    kraft: GeneratedFleet | None = None  # the KRaft broker (its own cluster) beside the fleet

    @property
    def simulated_disks(self) -> dict[str, SimulatedDisk]:
        """The disks the planted faults simulate (``simulated_disks`` of the census and inventories)."""
        return {**self.fleet.simulated_disks, **(self.kraft.simulated_disks if self.kraft else {})}


KRAFT_BROKER_ID = 4
KRAFT_METADATA_VERSION = 21  # 3.9-IV0: replicas are assigned to directory ids (KIP-858)


def demo_kraft_spec(seed: int = 7, now_ms: int | None = None) -> FleetSpec:
    """One KRaft broker with two log dirs (JBOD, Kafka 3.7+) holding the ``events`` topic."""
    topics = (
        TopicSpec(
            "events",
            partitions=4,
            replication_factor=1,
            records_per_partition=800,
            records_per_batch=20,
            value_size=100,
            segment_bytes=64 * 1024,
        ),
    )
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    step = 1000
    base = now_ms - DEMO_DATA_AGE_MS - (topics[0].records_per_partition - 1) * step  # dated like the fleet
    return FleetSpec(
        topics=topics,
        brokers=(BrokerSpec(KRAFT_BROKER_ID, kraft=True, log_dirs=2),),
        seed=seed,
        base_timestamp_ms=base,
        timestamp_step_ms=step,
    )


def generate_demo_kraft_broker(
    root: str | os.PathLike[str], seed: int = 7, now_ms: int | None = None
) -> tuple[GeneratedFleet, str]:
    """Write the KRaft broker under ``root/broker-4`` with a misplaced replica; returns it and a note."""
    from logdoctor.sample.kraft import MisplacedReplica, write_metadata_log

    fleet = generate_fleet(root, demo_kraft_spec(seed, now_ms))
    write_metadata_log(fleet, KRAFT_BROKER_ID, metadata_version=KRAFT_METADATA_VERSION)
    first = fleet.log_dirs[KRAFT_BROKER_ID][0]
    moved = next(r for r in fleet.replicas if r.log_dir == first)
    MisplacedReplica(KRAFT_BROKER_ID, moved.topic, moved.partition, to_log_dir_index=1).apply(fleet)
    note = (
        f"misplaced replica (KRaft, two log dirs): {moved.topic}-{moved.partition} on broker "
        f"{KRAFT_BROKER_ID} moved by hand to {moved.log_dir.name}, the metadata assigns it to {first.name}"
    )
    return fleet, note


def demo_fleet_spec(seed: int = 7, now_ms: int | None = None) -> FleetSpec:
    """The demo's brokers, topics and faults, with record timestamps ending DEMO_DATA_AGE_MS before
    ``now_ms`` (default: the current time), so `retention`, the census and the report at that time agree."""
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    topics = (
        TopicSpec(
            "orders",
            partitions=6,
            replication_factor=3,
            records_per_partition=2000,
            records_per_batch=10,
            value_size=200,
            segment_bytes=96 * 1024,
            compression=Compression.NONE,
        ),
        TopicSpec(
            "payments",
            partitions=3,
            replication_factor=3,
            records_per_partition=1200,
            records_per_batch=5,
            value_size=120,
            segment_bytes=64 * 1024,
            idempotent=True,
        ),
        TopicSpec(
            "clicks",
            partitions=4,
            replication_factor=2,
            records_per_partition=1500,
            records_per_batch=50,
            value_size=80,
            segment_bytes=128 * 1024,
            compression=Compression.ZSTD,
        ),
    )
    brokers = (BrokerSpec(1, log_dirs=2), BrokerSpec(2, log_dirs=2), BrokerSpec(3, log_dirs=1))
    faults: tuple[Fault, ...] = (
        OutOfIsrReplica(broker_id=3, topic="orders", partition=1, lag=600),
        CorruptOffsetIndex(broker_id=1, topic="orders", partition=0, segment=0),
        ZeroedTimeIndex(broker_id=2, topic="payments", partition=1, segment=0),
        NearlyFullDisk(broker_id=2, log_dir_index=1, used=0.97),
        TieredPartition(topic="orders", partition=2, local_segments=2, seed=seed),
    )
    step = 1000
    span = (max(t.records_per_partition for t in topics) - 1) * step  # the last record at now - age
    base = now_ms - DEMO_DATA_AGE_MS - span
    return FleetSpec(
        topics=topics,
        brokers=brokers,
        faults=faults,
        seed=seed,
        base_timestamp_ms=base,
        timestamp_step_ms=step,
    )


def generate_demo_fleet(root: str | os.PathLike[str], seed: int = 7, now_ms: int | None = None) -> DemoFleet:
    """Write the demo fleet under ``root`` (``root/broker-<id>/kafka-logs-<k>``), its records dated
    relative to ``now_ms`` (default: the current time; give one for byte-identical fleets)."""
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    spec = demo_fleet_spec(seed, now_ms)
    fleet = generate_fleet(root, spec)
    planted = []
    for f in spec.faults:
        if isinstance(f, OutOfIsrReplica):
            planted.append(
                f"out-of-ISR replica: {f.topic}-{f.partition} on broker {f.broker_id}, {f.lag} records behind"
            )
        elif isinstance(f, CorruptOffsetIndex):
            planted.append(f"corrupt offset index: {f.topic}-{f.partition} on broker {f.broker_id}")
        elif isinstance(f, ZeroedTimeIndex):
            planted.append(
                f"retention risk (zeroed time index): {f.topic}-{f.partition} on broker {f.broker_id}"
            )
        elif isinstance(f, TieredPartition):
            planted.append(
                f"tiered partition: {f.topic}-{f.partition}, offsets [0, {f.remote_end}) only in the remote "
                f"store ({len(f.segment_ids)} segments in {REMOTE_STORE_DIR}/), its events in "
                f"__remote_log_metadata-{f.metadata_partition}"
            )
        elif isinstance(f, NearlyFullDisk):
            planted.append(
                f"nearly full log dir: broker {f.broker_id} log dir #{f.log_dir_index} ({f.used:.0%}, a "
                "simulated disk: the broker's log dirs lie on one real file system, where a move-partition "
                "frees nothing, so the fix shown is retention, not a move)"
            )
    kraft, note = generate_demo_kraft_broker(root, seed, now_ms)
    planted.append(note)
    return DemoFleet(Path(root), fleet, planted, now_ms, kraft)

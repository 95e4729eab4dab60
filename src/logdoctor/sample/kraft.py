"""A KRaft broker's metadata log for a generated fleet, and the directory faults around it.

:func:`write_metadata_log` writes ``__cluster_metadata-0`` into a broker's first log dir (its
metadata.log.dir) the way a combined-mode KRaft node leaves it after creating the fleet's topics:
FeatureLevelRecord ``metadata.version``, RegisterBrokerRecord of every broker (with its directory
ids from 3.7-IV2 on), TopicRecord and PartitionRecord of every partition (``directories`` from
3.7-IV2 on: the directory id of the log dir each replica was written to), ConfigRecords when asked,
in v2 record batches of the project's writer, with indexes as ``LogSegment.recover`` rebuilds them,
a ``quorum-state`` and a ``leader-epoch-checkpoint``. Record layouts follow Kafka's JSON message
definitions (metadata/src/main/resources/common/metadata/*.json).

Faults for tests and the demo:

- :class:`MisplacedReplica`: a replica's folder (and its checkpoint entries) moved by hand to
  another log dir of its broker, so it sits in a dir other than its assignment;
- :class:`SharedDirectoryId`: a log dir whose meta.properties was copied from a sibling
  (duplicate ``directory.id``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from logdoctor.formats.checkpoint import (
    new_leader_epoch_checkpoint,
    new_offset_checkpoint,
    parse_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from logdoctor.formats.internal.cluster_metadata import encode_metadata_record
from logdoctor.formats.internal.protocol import uuid_to_text
from logdoctor.formats.partition_metadata import PartitionMetadata, write_partition_metadata
from logdoctor.formats.properties import parse_meta_properties
from logdoctor.formats.quorum_state import QuorumState, write_quorum_state
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.formats.writer import build_record_batch
from logdoctor.logdir.identity import MIGRATING
from logdoctor.logdir.names import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    OFFSET_CHECKPOINT_FILES,
    PARTITION_METADATA_FILE,
    QUORUM_STATE_FILE,
    SegmentFileType,
    segment_file_name,
)
from logdoctor.sample.logdir import Fault, GeneratedFleet

__all__ = [
    "METADATA_TOPIC_ID",
    "MisplacedReplica",
    "SharedDirectoryId",
    "directory_id_of",
    "metadata_records",
    "write_metadata_log",
    "write_snapshot",
]

#: Uuid.METADATA_TOPIC_ID (0, 1): the topic id of __cluster_metadata in its partition.metadata
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_LEVEL_RECORD_VERSION = [(22, 2), (17, 1)]  # (feature level from which, PartitionRecord version)


def directory_id_of(log_dir: str | os.PathLike[str]) -> str | None:
    """The directory.id in a log dir's meta.properties (None when absent)."""
    path = Path(log_dir) / META_PROPERTIES_FILE
    return parse_meta_properties(path.read_bytes(), source=str(path)).directory_id


def _partition_version(level: int) -> int:
    for since, version in _LEVEL_RECORD_VERSION:
        if level >= since:
            return version
    return 0


def metadata_records(
    fleet: GeneratedFleet,
    *,
    metadata_version: int,
    assignments: Mapping[tuple[str, int, int], str] | None = None,
    topic_configs: Mapping[str, Mapping[str, str]] | None = None,
    leader_epoch: int = 0,
) -> list[dict]:
    """The metadata records (decoded form) describing ``fleet``.

    ``assignments`` overrides the directory id of (topic, partition, broker id) replicas; by default
    each replica is assigned to the directory id of the log dir it was generated in.
    """
    with_dirs = metadata_version >= 17
    out: list[dict] = [
        {
            "type": "FeatureLevelRecord",
            "version": 0,
            "data": {"name": "metadata.version", "feature_level": metadata_version},
        },
    ]
    for i, (bid, dirs) in enumerate(sorted(fleet.log_dirs.items())):
        ids = [directory_id_of(d) for d in dirs]
        out.append(
            {
                "type": "RegisterBrokerRecord",
                "version": 3 if with_dirs else 2,
                "data": {
                    "broker_id": bid,
                    "incarnation_id": uuid_to_text(hashlib.md5(f"incarnation-{bid}".encode()).digest()),
                    "broker_epoch": 10 + i,
                    "end_points": [
                        {"name": "PLAINTEXT", "host": f"broker-{bid}", "port": 9092, "security_protocol": 0}
                    ],
                    "features": [
                        {
                            "name": "metadata.version",
                            "min_supported_version": 1,
                            "max_supported_version": metadata_version,
                        }
                    ],
                    "rack": None,
                    "fenced": False,
                    "log_dirs": [d for d in ids if d] if with_dirs else [],
                },
            }
        )
    by_tp: dict[tuple[str, int], list] = {}
    for r in fleet.replicas:
        by_tp.setdefault((r.topic, r.partition), []).append(r)
    topics: dict[str, str] = {}
    for r in fleet.replicas:
        if r.topic_id is not None:
            topics.setdefault(r.topic, r.topic_id)
    version = _partition_version(metadata_version)
    for topic, tid in topics.items():
        out.append({"type": "TopicRecord", "version": 0, "data": {"name": topic, "topic_id": tid}})
        for key, value in sorted((topic_configs or {}).get(topic, {}).items()):
            out.append(
                {
                    "type": "ConfigRecord",
                    "version": 0,
                    "data": {"resource_type": 2, "resource_name": topic, "name": key, "value": value},
                }
            )
        for (t, p), reps in sorted(by_tp.items()):
            if t != topic:
                continue
            replicas = [r.broker_id for r in reps]
            chosen = assignments or {}
            dirs = [chosen.get((t, p, r.broker_id)) or directory_id_of(r.log_dir) or MIGRATING for r in reps]
            data = {
                "partition_id": p,
                "topic_id": tid,
                "replicas": replicas,
                "isr": replicas,
                "removing_replicas": [],
                "adding_replicas": [],
                "leader": replicas[0],
                "leader_epoch": leader_epoch,
                "partition_epoch": 0,
            }
            if version >= 1:
                data["directories"] = dirs
            out.append({"type": "PartitionRecord", "version": version, "data": data})
    return out


def write_metadata_log(
    fleet: GeneratedFleet,
    broker_id: int,
    *,
    metadata_version: int = 21,
    records: Sequence[dict] | None = None,
    epoch: int = 1,
    timestamp_ms: int = 1_700_000_000_000,
    records_per_batch: int = 20,
) -> Path:
    """Write ``__cluster_metadata-0`` into ``broker_id``'s first log dir; returns the folder.

    ``records`` defaults to :func:`metadata_records` of the fleet.
    """
    recs = (
        list(records) if records is not None else metadata_records(fleet, metadata_version=metadata_version)
    )
    folder = fleet.log_dirs[broker_id][0] / "__cluster_metadata-0"
    folder.mkdir(parents=True, exist_ok=True)
    log = bytearray()
    offset = 0
    for start in range(0, len(recs), records_per_batch):
        chunk = recs[start : start + records_per_batch]
        specs = [RecordSpec(encode_metadata_record(r), None, timestamp_ms) for r in chunk]
        log += build_record_batch(specs, base_offset=offset, partition_leader_epoch=epoch)
        offset += len(chunk)
    rebuilt = rebuild_indexes(bytes(log), 0)
    (folder / segment_file_name(0, SegmentFileType.LOG)).write_bytes(bytes(log))
    (folder / segment_file_name(0, SegmentFileType.INDEX)).write_bytes(rebuilt.offset_index)
    (folder / segment_file_name(0, SegmentFileType.TIMEINDEX)).write_bytes(rebuilt.time_index)
    (folder / LEADER_EPOCH_CHECKPOINT_FILE).write_bytes(
        write_leader_epoch_checkpoint(new_leader_epoch_checkpoint([(epoch, 0)] if offset else []))
    )
    (folder / PARTITION_METADATA_FILE).write_bytes(
        write_partition_metadata(PartitionMetadata(0, METADATA_TOPIC_ID))
    )
    voters = sorted(fleet.log_dirs)
    state = QuorumState(
        0,
        leader_id=voters[0],
        leader_epoch=epoch,
        voted_id=-1,
        cluster_id="",
        applied_offset=0,
        current_voters=voters,
    )
    (folder / QUORUM_STATE_FILE).write_bytes(write_quorum_state(state))
    return folder


def write_snapshot(
    path: str | os.PathLike[str],
    records: Sequence[dict],
    *,
    epoch: int = 1,
    timestamp_ms: int = 1_700_000_000_000,
) -> Path:
    """Write a KRaft snapshot (or ``bootstrap.checkpoint``) at ``path``: a SNAPSHOT_HEADER control
    batch, the metadata records in one batch, a SNAPSHOT_FOOTER control batch (RecordsSnapshotWriter)."""
    from logdoctor.formats.control import SnapshotFooterRecord, SnapshotHeaderRecord, control_record_spec

    out = bytearray()
    head = control_record_spec(SnapshotHeaderRecord(0, timestamp_ms), timestamp=timestamp_ms)
    out += build_record_batch([head], base_offset=0, partition_leader_epoch=epoch, is_control=True)
    specs = [RecordSpec(encode_metadata_record(r), None, timestamp_ms) for r in records]
    if specs:
        out += build_record_batch(specs, base_offset=1, partition_leader_epoch=epoch)
    foot = control_record_spec(SnapshotFooterRecord(0), timestamp=timestamp_ms)
    out += build_record_batch(
        [foot], base_offset=1 + len(specs), partition_leader_epoch=epoch, is_control=True
    )
    target = Path(path)
    target.write_bytes(bytes(out))
    return target


def _move_entries(src: Path, dst: Path, topic: str, partition: int) -> None:
    for name in OFFSET_CHECKPOINT_FILES:
        s_path, d_path = src / name, dst / name
        if not s_path.exists():
            continue
        s_cp = parse_offset_checkpoint(s_path.read_bytes(), source=str(s_path))
        moved = [e for e in s_cp.entries if (e[0], e[1]) == (topic, partition)]
        kept = [e for e in s_cp.entries if (e[0], e[1]) != (topic, partition)]
        s_path.write_bytes(write_offset_checkpoint(new_offset_checkpoint(kept)))
        d_entries = (
            parse_offset_checkpoint(d_path.read_bytes(), source=str(d_path)).entries
            if d_path.exists()
            else []
        )
        d_path.write_bytes(write_offset_checkpoint(new_offset_checkpoint(list(d_entries) + moved)))


@dataclass
class MisplacedReplica(Fault):
    """Move a replica's folder and its checkpoint entries to another log dir of its broker, by hand.

    Apply it after :func:`write_metadata_log`: the metadata keeps assigning the replica to the
    dir it was generated in.
    """

    broker_id: int
    topic: str
    partition: int
    to_log_dir_index: int = 1

    def apply(self, fleet: GeneratedFleet) -> None:
        rep = fleet.replica(self.broker_id, self.topic, self.partition)
        dst_dir = fleet.log_dirs[self.broker_id][self.to_log_dir_index]
        if rep.log_dir == dst_dir:
            raise ValueError(f"{rep.path} is already in {dst_dir}")
        new_path = dst_dir / rep.path.name
        shutil.move(str(rep.path), str(new_path))
        _move_entries(rep.log_dir, dst_dir, self.topic, self.partition)
        rep.log_dir, rep.path = dst_dir, new_path


@dataclass
class SharedDirectoryId(Fault):
    """Give a log dir the meta.properties of its broker's first dir (the same directory.id)."""

    broker_id: int
    log_dir_index: int = 1

    def apply(self, fleet: GeneratedFleet) -> None:
        dirs = fleet.log_dirs[self.broker_id]
        shutil.copyfile(dirs[0] / META_PROPERTIES_FILE, dirs[self.log_dir_index] / META_PROPERTIES_FILE)

"""Replay a KRaft broker's ``__cluster_metadata-0`` to the metadata image it describes.

What a broker rebuilds at startup before it touches its replicas (K: = path in apache/kafka):
the latest snapshot (``<end offset>-<epoch>.checkpoint``), then every record of the metadata log
from the snapshot's end offset on (K:metadata/.../image/loader/MetadataLoader.java). The image
keeps what the log dir checks and procedures need:

- topics: name <-> topic id (TopicRecord, RemoveTopicRecord; K:metadata/.../image/TopicsDelta.java);
- partitions: replicas, ISR, leader, leader epoch, partition epoch and the assigned directory of
  each replica (PartitionRecord, PartitionChangeRecord merged as
  K:metadata/.../metadata/PartitionRegistration.java ``merge`` does: ``leader`` -2 means no change,
  any other value bumps the leader epoch; null arrays mean no change; an all-MIGRATING or empty
  ``directories`` means MIGRATING for every replica);
- brokers: their registered log dir ids (RegisterBrokerRecord v3+ ``log_dirs``,
  BrokerRegistrationChangeRecord v2+; K:metadata/.../controller/ClusterControlManager.java replay) and
  cordoned ones (KIP-1066, Kafka 4.3: RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3
  ``cordoned_log_dirs``, null = no change; Kafka 4.3.1's and 4.4.0's definitions, read from their jars),
  with the record that set them (:class:`RecordAt`: type, version, offset, file), as a real 4.4.0 broker
  writes them (tests/brokers/test_broker_cordon_stray.py).
  A registration of a version newer than every definition is read with the newest known layout when that
  reads it exactly (a tagged addition, kept raw): ``cluster_metadata.decode_as_newest_known``, counted in
  :attr:`MetadataImage.read_as_older`. One that cannot be read keeps the broker's last known
  registration (never drops its log dirs) and is named in :attr:`MetadataImage.unread_registrations`;
- controllers and their endpoints (RegisterControllerRecord ``end_points``, UnregisterControllerRecord of
  metadata.version 4.4-IV2+);
- ELRs (KIP-966): PartitionRecord/PartitionChangeRecord ``eligible_leader_replicas`` and
  ``last_known_elr``; a ClearElrRecord (its topic, or every topic when its name is empty) clears
  both of each partition that has any, as a PartitionChangeRecord merge: the partition epoch goes up
  (K:metadata/.../image/TopicsDelta.java, TopicDelta.java ``maybeClearElr``, 4.2.0);
- features (``metadata.version`` decides whether directory assignment is in use: 3.7-IV2, level 17,
  K:server-common/.../common/MetadataVersion.java ``isDirectoryAssignmentSupported``);
- configs (ConfigRecord; a null value deletes the key, RemoveTopicRecord deletes the topic's
  configs; K:metadata/.../image/ConfigurationDelta.java, MetadataDelta.java), with the metadata
  offset each value was set at: :attr:`MetadataImage.topic_configs` / ``topic_config_offsets``.

Records between BeginTransactionRecord and EndTransactionRecord apply at the end; an
AbortTransactionRecord discards them (KIP-868, K:metadata/.../image/loader/MetadataBatchLoader.java).
Replay never raises on bad bytes: an unreadable snapshot falls back to the previous one, a damaged
segment stops the replay there, and every problem is kept in :attr:`MetadataImage.errors`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logdoctor.errors import FormatError
from logdoctor.logdir.identity import MIGRATING, find_metadata_dir
from logdoctor.logdir.names import BOOTSTRAP_CHECKPOINT_FILE, parse_kraft_snapshot, parse_segment_file

if TYPE_CHECKING:
    from logdoctor.formats.internal.layouts import ClusterFeatures

__all__ = [
    "DIRECTORY_ASSIGNMENT_LEVEL",
    "BrokerRegistration",
    "MetadataImage",
    "PartitionState",
    "RecordAt",
    "ReplayProblem",
    "UnreadRegistration",
    "bootstrap_features",
    "cluster_features",
    "find_metadata_dir",
    "log_dir_features",
    "metadata_version_name",
    "replay",
]

#: metadata.version feature level of 3.7-IV2, the first with directory assignment (KIP-858)
DIRECTORY_ASSIGNMENT_LEVEL = 17
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader default (K:metadata/.../LeaderConstants.java)
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER

# MetadataVersion feature levels (K:server-common/.../common/MetadataVersion.java, branch 4.4 of 2026)
_MV_NAMES = dict(
    enumerate(
        (
            None,
            "3.0-IV1",
            "3.1-IV0",
            "3.2-IV0",
            "3.3-IV0",
            "3.3-IV1",
            "3.3-IV2",
            "3.3-IV3",
            "3.4-IV0",
            "3.5-IV0",
            "3.5-IV1",
            "3.5-IV2",
            "3.6-IV0",
            "3.6-IV1",
            "3.6-IV2",
            "3.7-IV0",
            "3.7-IV1",
            "3.7-IV2",
            "3.7-IV3",
            "3.7-IV4",
            "3.8-IV0",
            "3.9-IV0",
            "4.0-IV0",
            "4.0-IV1",
            "4.0-IV2",
            "4.0-IV3",
            "4.1-IV0",
            "4.1-IV1",
            "4.2-IV0",
            "4.2-IV1",
            "4.3-IV0",  # cordoned log dirs (KIP-1066): RegisterBrokerRecord v4
            "4.4-IV0",
            "4.4-IV1",
            "4.4-IV2",  # controller unregistration (UnregisterControllerRecord)
        )
    )
)


def metadata_version_name(level: int | None) -> str:
    """``3.7-IV2`` for feature level 17; ``level N`` for levels this table does not name."""
    if level is None:
        return "unknown"
    return _MV_NAMES.get(level) or f"level {level}"


@dataclass(slots=True)
class PartitionState:
    """One partition as the image holds it (PartitionRegistration)."""

    topic_id: str
    partition: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: list[str]  # one per replica (Kafka Uuid text); MIGRATING when unassigned by version
    removing_replicas: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)
    leader_recovery_state: int = 0
    offset: int = -1  # metadata offset of the record that last changed it
    elr: list[int] = field(default_factory=list)  # eligible leader replicas (KIP-966)
    last_known_elr: list[int] = field(default_factory=list)

    def directory(self, broker_id: int) -> str | None:
        """The directory id assigned to ``broker_id``'s replica; None when it is not a replica."""
        for i, r in enumerate(self.replicas):
            if r == broker_id:
                return self.directories[i] if i < len(self.directories) else MIGRATING
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic_id": self.topic_id,
            "partition": self.partition,
            "replicas": self.replicas,
            "isr": self.isr,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "directories": self.directories,
            "removing_replicas": self.removing_replicas,
            "adding_replicas": self.adding_replicas,
            "offset": self.offset,
        }


@dataclass(slots=True)
class BrokerRegistration:
    broker_id: int
    broker_epoch: int
    log_dirs: list[str]  # registered directory ids ([] before 3.7-IV2)
    fenced: bool | None = None
    offset: int = -1
    max_metadata_version: int | None = None  # the highest metadata.version it supports (its release)
    cordoned_log_dirs: list[str] | None = None  # KIP-1066 (4.3); None: not given
    cordoned_by: RecordAt | None = None  # the record that set cordoned_log_dirs last


@dataclass(frozen=True, slots=True)
class RecordAt:
    """One metadata record and where it is: type, version, offset and the file (segment or snapshot)."""

    record: str  # "BrokerRegistrationChangeRecord"
    version: int
    offset: int
    path: str

    def __str__(self) -> str:
        return f"{self.record} v{self.version} at offset {self.offset} of {self.path}"


@dataclass(frozen=True, slots=True)
class UnreadRegistration:
    """A broker registration record (RegisterBrokerRecord, BrokerRegistrationChangeRecord) of a version newer
    than every known definition that no known layout reads exactly: where it is and what it is. The image
    keeps the broker's registration from before it (if any)."""

    broker_id: int
    record: str  # "RegisterBrokerRecord"
    version: int
    offset: int
    path: str  # the segment (.log) or snapshot (.checkpoint) holding it

    def __str__(self) -> str:
        return f"{self.record} v{self.version} at offset {self.offset}"


@dataclass(frozen=True, slots=True)
class ReplayProblem:
    path: str
    position: int | None
    message: str


@dataclass
class MetadataImage:
    """The image a broker would build from its metadata log dir (see the module docstring)."""

    metadata_dir: str
    snapshot: tuple[int, int] | None = None  # (end offset, epoch) of the snapshot replayed
    snapshot_path: str | None = None
    end_offset: int = 0  # the offset after the last record replayed
    last_epoch: int = -1  # partition leader epoch of the last batch replayed
    last_timestamp: int | None = None  # max timestamp of the last log batch replayed (None: snapshot only)
    # nextProducerId of the ProducerIdsRecords replayed (-1: none; each moves it forward:
    # K:metadata/.../controller/ProducerIdControlManager.java ``replay``)
    next_producer_id: int = -1
    topics: dict[str, str] = field(default_factory=dict)  # name -> topic id
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name
    partitions: dict[tuple[str, int], PartitionState] = field(default_factory=dict)  # (topic id, p)
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, tuple[str, int]]] = field(default_factory=dict)
    records: int = 0  # metadata records applied
    record_types: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)  # "unknown type N, version V" -> count
    # "RegisterBrokerRecord v4 as v3" -> count: newer registrations read with the newest known layout
    read_as_older: Counter = field(default_factory=Counter)
    # broker id -> the last registration too new to read (str: "RegisterBrokerRecord v5 at offset N"); the
    # broker's last known registration (log dirs) is kept and may be stale
    unread_registrations: dict[int, UnreadRegistration] = field(default_factory=dict)
    controllers: dict[int, str] = field(default_factory=dict)  # controller id -> incarnation id
    # controller id -> its registered endpoints (listener name, host, port), as RegisterControllerRecord says
    controller_endpoints: dict[int, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)
    errors: list[ReplayProblem] = field(default_factory=list)
    open_transaction: bool = False  # a metadata transaction began and did not end
    # KRaft control records: the voter set of the latest VotersRecord (kraft.version 1, KIP-853) and
    # the leader and voters of the latest LeaderChangeMessage (every election writes one)
    voters: tuple[int, ...] | None = None
    # voter id -> its endpoints (listener name, host, port) in that VotersRecord: a dynamic quorum's own
    # word on where each voter listens (K:raft/.../raft/internals/VoterSet.java ``listeners``)
    voter_endpoints: dict[int, tuple[tuple[str, str, int], ...]] = field(default_factory=dict)
    leader_change: tuple[int, tuple[int, ...]] | None = None
    segments_read: list[str] = field(default_factory=list)

    # --- views -----------------------------------------------------------------------------------
    @property
    def metadata_version(self) -> int | None:
        return self.features.get("metadata.version")

    @property
    def metadata_version_name(self) -> str:
        return metadata_version_name(self.metadata_version)

    @property
    def directory_assignment(self) -> bool:
        """metadata.version >= 3.7-IV2: replicas are assigned to directory ids."""
        mv = self.metadata_version
        return mv is not None and mv >= DIRECTORY_ASSIGNMENT_LEVEL

    def cluster_features(self) -> ClusterFeatures | None:
        """The feature levels the internal-topic decoders choose layouts by (``layouts.ClusterFeatures``):
        finalized ``metadata.version`` and ``share.version`` (0 when the image has none) and each
        registered broker's highest supported metadata.version; None when the image has no
        metadata.version (nothing replayed)."""
        from logdoctor.formats.internal.layouts import ClusterFeatures

        if self.metadata_version is None:
            return None
        return ClusterFeatures(
            self.metadata_version,
            self.features.get("share.version", 0),
            tuple(b.max_metadata_version for b in self.brokers.values()
                  if b.max_metadata_version is not None),
            self.metadata_dir,
        )

    def topic_id(self, topic: str) -> str | None:
        return self.topics.get(topic)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        tid = self.topics.get(topic)
        return self.partitions.get((tid, partition)) if tid is not None else None

    def replicas_of(self, broker_id: int) -> dict[tuple[str, int], PartitionState]:
        """(topic name, partition) -> state, for every partition listing ``broker_id`` as a replica."""
        out: dict[tuple[str, int], PartitionState] = {}
        for (tid, p), st in self.partitions.items():
            if broker_id in st.replicas:
                out[(self.topic_names.get(tid, tid), p)] = st
        return out

    def _configs(self, resource_type: int, at: int) -> dict[str, dict[str, Any]]:
        """resource name -> {config name: its value (``at`` 0) or the offset that set it (1)}."""
        return {
            name: {k: value_offset[at] for k, value_offset in values.items()}
            for (rt, name), values in self.configs.items()
            if rt == resource_type
        }

    @property
    def topic_configs(self) -> dict[str, dict[str, str]]:
        """topic name -> {config name: value} (dynamic topic configs, as ConfigRecords set them)."""
        return self._configs(TOPIC_RESOURCE, 0)

    @property
    def topic_config_offsets(self) -> dict[str, dict[str, int]]:
        """topic name -> {config name: metadata offset of the ConfigRecord that set it}."""
        return self._configs(TOPIC_RESOURCE, 1)

    @property
    def broker_configs(self) -> dict[str, dict[str, str]]:
        """broker id as text ("" = the cluster-wide default) -> {config name: value}."""
        return self._configs(BROKER_RESOURCE, 0)

    def summary(self) -> dict[str, Any]:
        return {
            "metadata_dir": self.metadata_dir,
            "snapshot": list(self.snapshot) if self.snapshot else None,
            "end_offset": self.end_offset,
            "last_epoch": self.last_epoch,
            "metadata_version": self.metadata_version,
            "metadata_version_name": self.metadata_version_name,
            "topics": len(self.topics),
            "partitions": len(self.partitions),
            "brokers": sorted(self.brokers),
            "records": self.records,
            "skipped": dict(self.skipped),
            **({"read_as_older": dict(self.read_as_older)} if self.read_as_older else {}),
            **({"unread_registrations": {str(k): str(v) for k, v in self.unread_registrations.items()}}
               if self.unread_registrations else {}),
            **({"cordoned_log_dirs": cordoned} if (cordoned := self.cordoned_log_dirs()) else {}),
            "errors": [{"path": e.path, "position": e.position, "message": e.message} for e in self.errors],
        }

    def cordoned_log_dirs(self) -> dict[str, list[str]]:
        """broker id as text -> the directory ids it has cordoned (KIP-1066), for brokers with any."""
        return {
            str(b): list(r.cordoned_log_dirs) for b, r in sorted(self.brokers.items()) if r.cordoned_log_dirs
        }

    # --- replay ----------------------------------------------------------------------------------
    def _apply(self, decoded: dict[str, Any], offset: int, path: str = "") -> None:
        kind = decoded["type"]
        d = decoded["data"]
        self.records += 1
        self.record_types[kind] += 1
        if kind == "TopicRecord":
            old = self.topics.get(d["name"])
            if old is not None and old != d["topic_id"]:
                self.topic_names.pop(old, None)
            self.topics[d["name"]] = d["topic_id"]
            self.topic_names[d["topic_id"]] = d["name"]
        elif kind == "RemoveTopicRecord":
            tid = d["topic_id"]
            name = self.topic_names.pop(tid, None)
            if name is not None and self.topics.get(name) == tid:
                del self.topics[name]
                self.configs.pop((TOPIC_RESOURCE, name), None)
            for key in [k for k in self.partitions if k[0] == tid]:
                del self.partitions[key]
        elif kind == "PartitionRecord":
            replicas = list(d["replicas"])
            self.partitions[(d["topic_id"], d["partition_id"])] = PartitionState(
                d["topic_id"],
                d["partition_id"],
                replicas,
                list(d["isr"]),
                d["leader"],
                d["leader_epoch"],
                d["partition_epoch"],
                _directories(d.get("directories"), len(replicas)),
                list(d["removing_replicas"]),
                list(d["adding_replicas"]),
                d.get("leader_recovery_state", 0),
                offset,
                list(d.get("eligible_leader_replicas") or []),
                list(d.get("last_known_elr") or []),
            )
        elif kind == "PartitionChangeRecord":
            st = self.partitions.get((d["topic_id"], d["partition_id"]))
            if st is None:
                return  # a change of a partition the image does not hold (Kafka fails the delta)
            if d.get("replicas") is not None:
                st.replicas = list(d["replicas"])
            dirs = d.get("directories")
            st.directories = _directories(st.directories if dirs is None else dirs, len(st.replicas))
            if d.get("isr") is not None:
                st.isr = list(d["isr"])
            if d.get("removing_replicas") is not None:
                st.removing_replicas = list(d["removing_replicas"])
            if d.get("adding_replicas") is not None:
                st.adding_replicas = list(d["adding_replicas"])
            if d.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
                st.leader = d["leader"]
                st.leader_epoch += 1
            if d.get("leader_recovery_state", -1) != -1:
                st.leader_recovery_state = d["leader_recovery_state"]
            if d.get("eligible_leader_replicas") is not None:
                st.elr = list(d["eligible_leader_replicas"])
            if d.get("last_known_elr") is not None:
                st.last_known_elr = list(d["last_known_elr"])
            st.partition_epoch += 1
            st.offset = offset
        elif kind == "ClearElrRecord":
            name = d["topic_name"]
            topic_ids = set(self.topic_names) if not name else {self.topics.get(name)}
            for (tid, _p), st in self.partitions.items():
                if tid in topic_ids and (st.elr or st.last_known_elr):
                    st.elr, st.last_known_elr = [], []
                    st.partition_epoch += 1
                    st.offset = offset
        elif kind == "RegisterControllerRecord":
            self.controllers[d["controller_id"]] = d["incarnation_id"]
            self.controller_endpoints[d["controller_id"]] = tuple(
                (e["name"], e["host"], e["port"]) for e in d.get("end_points") or ()
            )
        elif kind == "UnregisterControllerRecord":
            self.controllers.pop(d["controller_id"], None)
            self.controller_endpoints.pop(d["controller_id"], None)
        elif kind == "ConfigRecord":
            key = (d["resource_type"], d["resource_name"])
            if d["value"] is None:
                values = self.configs.get(key)
                if values is not None:
                    values.pop(d["name"], None)
            else:
                self.configs.setdefault(key, {})[d["name"]] = (d["value"], offset)
        elif kind == "RegisterBrokerRecord":
            mv_max = next(
                (f["max_supported_version"] for f in d.get("features") or ()
                 if f["name"] == "metadata.version"),
                None,
            )
            self.brokers[d["broker_id"]] = BrokerRegistration(
                d["broker_id"], d["broker_epoch"], list(d.get("log_dirs") or []), d.get("fenced"), offset,
                mv_max, None if d.get("cordoned_log_dirs") is None else list(d["cordoned_log_dirs"]),
            )
            if d.get("cordoned_log_dirs") is not None:
                self.brokers[d["broker_id"]].cordoned_by = RecordAt(kind, decoded["version"], offset, path)
            self.unread_registrations.pop(d["broker_id"], None)
        elif kind == "BrokerRegistrationChangeRecord":
            reg = self.brokers.get(d["broker_id"])
            if reg is not None:
                if d.get("log_dirs"):
                    reg.log_dirs = list(d["log_dirs"])
                if d.get("cordoned_log_dirs") is not None:
                    reg.cordoned_log_dirs = list(d["cordoned_log_dirs"])
                    reg.cordoned_by = RecordAt(kind, decoded["version"], offset, path)
                reg.offset = offset
        elif kind == "UnregisterBrokerRecord":
            self.brokers.pop(d["broker_id"], None)
            self.unread_registrations.pop(d["broker_id"], None)  # the registration it named is gone too
        elif kind == "ProducerIdsRecord":
            self.next_producer_id = max(self.next_producer_id, d["next_producer_id"])
        elif kind == "FeatureLevelRecord":
            if d["feature_level"] == 0:
                self.features.pop(d["name"], None)
            else:
                self.features[d["name"]] = d["feature_level"]


def _directories(dirs: list[str] | None, replicas: int) -> list[str]:
    # PartitionRegistration.defaultToMigrating: no ids, or only MIGRATING ones, mean MIGRATING for all
    if not dirs or all(x == MIGRATING for x in dirs):
        return [MIGRATING] * replicas
    return list(dirs)


class _Replayer:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.pending: list[tuple[dict[str, Any], int, str]] | None = None

    def record(self, value: bytes | memoryview | None, offset: int, path: str, position: int) -> None:
        from logdoctor.errors import UnsupportedError
        from logdoctor.formats.internal.cluster_metadata import decode_metadata_record

        try:
            decoded = decode_metadata_record(value, source=path)
        except UnsupportedError:
            decoded = _newer_registration(value, path)
            if decoded is None:
                self.image.skipped[_unknown_label(value)] += 1
                unread = _unread_registration(value)
                if unread is not None:  # the broker keeps its last registration, marked as maybe stale
                    broker, record, version = unread
                    self.image.unread_registrations[broker] = UnreadRegistration(
                        broker, record, version, offset, path
                    )
                return
            label = f"{decoded['type']} v{decoded['version']} as v{decoded['read_as_version']}"
            self.image.read_as_older[label] += 1
        except FormatError as e:
            self.image.errors.append(ReplayProblem(path, position, f"offset {offset}: {e}"))
            return
        kind = decoded["type"]
        if kind == "BeginTransactionRecord":
            self.pending = []
            self.image.open_transaction = True
            return
        if kind in ("EndTransactionRecord", "AbortTransactionRecord"):
            pending, self.pending = self.pending or [], None
            self.image.open_transaction = False
            if kind == "EndTransactionRecord":  # an abort discards them
                for rec, off, at in pending:
                    self.image._apply(rec, off, at)
            return
        if self.pending is not None:
            self.pending.append((decoded, offset, path))
        else:
            self.image._apply(decoded, offset, path)

    def control(
        self, key: bytes | memoryview | None, value: bytes | memoryview | None, path: str, position: int
    ) -> None:
        """Remember the voters of VotersRecord and LeaderChangeMessage control records."""
        from logdoctor.formats.control import LeaderChangeMessage, VotersRecord, parse_control_record

        try:
            parsed = parse_control_record(key, value, source=path, position=position).value
        except FormatError:
            return  # a control record of a newer version: the voters stay unknown, the replay goes on
        if isinstance(parsed, VotersRecord):
            self.image.voters = tuple(sorted(v.voter_id for v in parsed.voters))
            self.image.voter_endpoints = {
                v.voter_id: tuple((e.name, e.host, e.port) for e in v.endpoints) for v in parsed.voters
            }
        elif isinstance(parsed, LeaderChangeMessage):
            self.image.leader_change = (parsed.leader_id, tuple(sorted(v.voter_id for v in parsed.voters)))

    def batches(self, buf: bytes | memoryview, path: str, min_offset: int) -> bool:
        """Apply every data record at or above ``min_offset``; False when the walk hit bad bytes."""
        from logdoctor.formats.records import iter_batches

        try:
            for batch in iter_batches(buf, source=path, verify_crc=True):
                if batch.last_offset < min_offset:
                    continue
                if not batch.is_control:
                    for rec in batch.records():
                        if rec.offset >= min_offset:
                            self.record(rec.value, rec.offset, path, batch.position)
                else:
                    for rec in batch.records():
                        self.control(rec.key, rec.value, path, batch.position)
                self.image.end_offset = max(self.image.end_offset, batch.last_offset + 1)
                self.image.last_epoch = batch.partition_leader_epoch
                self.image.last_timestamp = batch.max_timestamp
        except FormatError as e:
            self.image.errors.append(ReplayProblem(path, e.position, str(e)))
            return False
        return True


_READ_AS_OLDER = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord")


def _newer_registration(value: bytes | memoryview | None, path: str) -> dict[str, Any] | None:
    """A broker registration of a version newer than the definitions here, read exactly with the newest
    known layout (see the module docstring), or None."""
    from logdoctor.formats.internal.cluster_metadata import decode_as_newest_known

    try:
        decoded = decode_as_newest_known(value, source=path)
    except FormatError:
        return None
    return decoded if decoded["type"] in _READ_AS_OLDER and "read_as_version" in decoded else None


def _unread_registration(value: bytes | memoryview | None) -> tuple[int, str, int] | None:
    """(broker id, "RegisterBrokerRecord", 5) of a broker registration record too new to read: BrokerId is
    the first field, int32, of every version of both records (RegisterBrokerRecord.json,
    BrokerRegistrationChangeRecord.json: "versions": "0+", first); None for other records."""
    (_frame_version, api_key, version), pos, data = _frame(value)
    name = {0: "RegisterBrokerRecord", 17: "BrokerRegistrationChangeRecord"}.get(api_key)
    if name is None or pos + 4 > len(data):
        return None
    return int.from_bytes(data[pos:pos + 4], "big", signed=True), name, version


def _frame(value: bytes | memoryview | None) -> tuple[list[int], int, bytes]:
    """The record's frame (frame version, api key, version: uvarints), the position past it, the bytes."""
    data = bytes(value or b"")
    nums = []
    pos = 0
    for _ in range(3):
        result = shift = 0
        while pos < len(data):
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        nums.append(result)
    return nums, pos, data


def _unknown_label(value: bytes | memoryview | None) -> str:
    """``unknown type N, version V`` from the record's frame."""
    (_frame_version, api_key, version), _pos, _data = _frame(value)
    return f"unknown type {api_key}, version {version}"


def replay(metadata_dir: str | os.PathLike[str]) -> MetadataImage:
    """Replay ``metadata_dir`` (a ``__cluster_metadata-0`` folder). Never raises on bad data."""
    from logdoctor.logdir.files import map_file, read_file

    mdir = os.path.abspath(os.fspath(metadata_dir))
    image = MetadataImage(mdir)
    try:
        names = sorted(os.listdir(mdir))
    except OSError as e:
        image.errors.append(ReplayProblem(mdir, None, f"cannot list: {e.strerror or e}"))
        return image
    snapshots: list[tuple[int, int, str]] = []
    logs: list[tuple[int, str]] = []
    for n in names:
        snap = parse_kraft_snapshot(n)
        if snap is not None:
            if snap[1] is not None and snap[1].value == "":
                snapshots.append((snap[0].offset, snap[0].epoch, n))
            continue
        seg = parse_segment_file(n)
        if seg is not None and seg.suffix == ".log":
            logs.append((seg.base_offset, n))
    replayer = _Replayer(image)
    start = 0
    for end, epoch, name in sorted(snapshots, reverse=True):
        path = os.path.join(mdir, name)
        trial = MetadataImage(mdir)
        trial_replayer = _Replayer(trial)
        try:
            ok = trial_replayer.batches(read_file(Path(path)), path, 0)
        except OSError as e:
            trial.errors.append(ReplayProblem(path, None, f"cannot read: {e.strerror or e}"))
            ok = False
        if ok:
            trial.errors = image.errors + trial.errors
            image = trial
            replayer = trial_replayer
            replayer.pending = None  # a snapshot never ends inside a transaction
            image.snapshot, image.snapshot_path = (end, epoch), path
            image.end_offset, image.last_timestamp = end, None
            start = end
            break
        image.errors.extend(trial.errors)
    for _base, name in sorted(logs):
        path = os.path.join(mdir, name)
        try:
            buf = map_file(Path(path))
        except OSError as e:
            image.errors.append(ReplayProblem(path, None, f"cannot read: {e.strerror or e}"))
            break
        image.segments_read.append(path)
        if not replayer.batches(buf, path, start):
            break
    return image


def bootstrap_features(path: str | os.PathLike[str]) -> ClusterFeatures | None:
    """The feature levels of a ``bootstrap.checkpoint`` (its FeatureLevelRecords: the cluster's initial
    metadata.version and features, K:metadata/.../bootstrap/BootstrapDirectory.java), or None when the
    file is missing, unreadable or names no metadata.version."""
    from logdoctor.formats.internal.cluster_metadata import decode_metadata_record
    from logdoctor.formats.internal.layouts import ClusterFeatures
    from logdoctor.formats.kraft_snapshot import parse_kraft_snapshot as parse_snapshot
    from logdoctor.formats.records import iter_batches
    from logdoctor.logdir.files import read_file

    features: dict[str, int] = {}
    try:
        data = read_file(Path(path))
        parse_snapshot(data, name=None, source=str(path))  # header, footer and CRCs as Kafka checks them
        for batch in iter_batches(data, source=str(path)):
            if batch.is_control:
                continue
            for rec in batch.records():
                d = decode_metadata_record(rec.value, source=str(path))
                if d["type"] == "FeatureLevelRecord":
                    features[d["data"]["name"]] = d["data"]["feature_level"]
    except (OSError, FormatError):
        return None
    mv = features.get("metadata.version")
    if not mv:
        return None
    return ClusterFeatures(mv, features.get("share.version", 0), (), os.fspath(path))


def cluster_features(
    metadata_dir: str | os.PathLike[str], image: MetadataImage | None = None
) -> ClusterFeatures | None:
    """The cluster's feature levels for the internal-topic decoders: from the replayed metadata log of
    ``metadata_dir`` (a ``__cluster_metadata-0`` folder; ``image`` when already replayed), else from the
    ``bootstrap.checkpoint`` of its log dir (the initial levels: a cluster upgraded since has higher
    ones, and the log, when present, says so). None when neither names a metadata.version."""
    if image is None:
        image = replay(metadata_dir)
    found = image.cluster_features()
    if found is not None:
        return found
    return bootstrap_features(os.path.join(os.path.dirname(os.path.abspath(os.fspath(metadata_dir))),
                                           BOOTSTRAP_CHECKPOINT_FILE))


def log_dir_features(log_dirs: Sequence[str]) -> dict[str, ClusterFeatures]:
    """log dir -> its cluster's feature levels (:func:`cluster_features`), for the local ``log_dirs`` given
    (a URI is left out). A log dir's own ``__cluster_metadata-0`` gives them; a log dir without one takes
    its broker's: the one metadata log among the given dirs of the same (cluster.id, node.id) in
    meta.properties (none or several: not known, K:core/.../server/KafkaRaftServer.scala keeps one metadata
    log per node); else its own ``bootstrap.checkpoint``. A log dir for which none names a metadata.version
    is left out (the decoders then read by the one exact layout)."""
    from logdoctor.logdir.identity import read_identity

    local = [os.path.abspath(d) for d in log_dirs if "://" not in d and os.path.isdir(d)]
    mdirs = {d: find_metadata_dir([d]) for d in local}
    node_of: dict[str, tuple[str | None, int] | None] = {}
    for d in local:
        ident = read_identity(d)
        known = ident.readable and ident.node_id is not None
        node_of[d] = (ident.cluster_id, ident.node_id) if known else None  # type: ignore[assignment]
    by_mdir: dict[str, ClusterFeatures | None] = {}
    out: dict[str, ClusterFeatures] = {}
    for d in local:
        mdir = mdirs[d]
        if mdir is None and node_of[d] is not None:
            siblings = {mdirs[s] for s in local if mdirs[s] is not None and node_of[s] == node_of[d]}
            mdir = siblings.pop() if len(siblings) == 1 else None
        if mdir is not None:
            if mdir not in by_mdir:
                by_mdir[mdir] = cluster_features(mdir)
            found = by_mdir[mdir]
        else:
            boot = os.path.join(d, BOOTSTRAP_CHECKPOINT_FILE)
            found = bootstrap_features(boot) if os.path.isfile(boot) else None
        if found is not None:
            out[d] = found
    return out

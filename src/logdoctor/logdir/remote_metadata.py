"""Replay ``__remote_log_metadata`` (tiered storage, KIP-405) into each partition's remote segments.

The topic-based remote log metadata manager keeps, per user partition (topic id, topic, partition), the
segments the RemoteLogManager uploaded, with their states; a broker rebuilds that state by consuming the
``__remote_log_metadata`` partitions. This module does the same offline, from the metadata partitions
found in the given log dirs (K: = path in apache/kafka):

- the state machine of a segment: K:storage/api/.../remote/storage/RemoteLogSegmentState.java
  ``isValidTransition`` (null -> COPY_SEGMENT_STARTED; a state to itself; STARTED -> FINISHED or
  DELETE_SEGMENT_STARTED; FINISHED -> DELETE_SEGMENT_STARTED; DELETE_SEGMENT_STARTED ->
  DELETE_SEGMENT_FINISHED); an invalid event is dropped (K:storage/.../remote/metadata/storage/
  RemoteLogMetadataCache.java ``checkStateTransition``), an update of a segment never added is
  rejected (``updateRemoteLogSegmentMetadata``: RemoteResourceNotFoundException), and an update
  replaces the segment's state, broker id, event time and custom metadata (RemoteLogSegmentMetadata
  ``createWithUpdates``);
- partition deletion: K:storage/.../remote/metadata/storage/RemotePartitionMetadataStore.java
  ``handleRemotePartitionDeleteMetadata`` keeps the latest state and forgets the partition (its
  segments too) at DELETE_PARTITION_FINISHED; the valid order is RemotePartitionDeleteState.java
  ``isValidTransition`` (MARKED -> STARTED -> FINISHED);
- which metadata partition holds a user partition's events: K:storage/.../remote/metadata/storage/
  RemoteLogMetadataTopicPartitioner.java (murmur2 of the 4 big-endian bytes of
  ``Objects.hash(topicId.lsb, topicId.msb, partition)``, made positive, modulo the number of metadata
  partitions, ``remote.log.metadata.topic.num.partitions``, default 50 in
  TopicBasedRemoteLogMetadataManagerConfig.java).

One broker's log dirs hold only the metadata partitions it replicates: :meth:`RemoteLogMetadata.covers`
says whether the events of a user partition are among the inputs, so that a check never reads "no
events" as "no remote data". Nothing is read until asked (:class:`RemoteLogMetadataReplay` lists and
replays on first use); bad bytes never raise: each problem is kept with its file and byte position and
the replay goes on with the next batch or segment.
"""

from __future__ import annotations

import base64
import enum
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.formats.murmur2 import partition_of
from logdoctor.logdir.names import DirKind, parse_segment_file
from logdoctor.logdir.offsets import uncovered

__all__ = [
    "DEFAULT_METADATA_PARTITIONS",
    "REMOTE_LOG_METADATA_TOPIC",
    "PartitionDeleteState",
    "RemoteEvent",
    "RemoteLogMetadata",
    "RemoteLogMetadataReplay",
    "RemotePartition",
    "RemoteProblem",
    "RemoteSegment",
    "SegmentState",
    "TopicIdPartition",
    "metadata_partition_for",
    "replay_metadata_folders",
    "replay_remote_log_metadata",
]

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
#: remote.log.metadata.topic.num.partitions default (TopicBasedRemoteLogMetadataManagerConfig.java)
DEFAULT_METADATA_PARTITIONS = 50
NUM_PARTITIONS_CONFIG = "remote.log.metadata.topic.num.partitions"


class SegmentState(enum.IntEnum):
    """RemoteLogSegmentState ids (K:storage/api/.../remote/storage/RemoteLogSegmentState.java)."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class PartitionDeleteState(enum.IntEnum):
    """RemotePartitionDeleteState ids (K:storage/api/.../remote/storage/RemotePartitionDeleteState.java)."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


_S = SegmentState
_SEGMENT_NEXT = {
    None: {_S.COPY_SEGMENT_STARTED},
    _S.COPY_SEGMENT_STARTED: {_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED},
    _S.COPY_SEGMENT_FINISHED: {_S.DELETE_SEGMENT_STARTED},
    _S.DELETE_SEGMENT_STARTED: {_S.DELETE_SEGMENT_FINISHED},
    _S.DELETE_SEGMENT_FINISHED: set(),
}
_P = PartitionDeleteState
_DELETE_NEXT = {
    None: {_P.DELETE_PARTITION_MARKED},
    _P.DELETE_PARTITION_MARKED: {_P.DELETE_PARTITION_STARTED},
    _P.DELETE_PARTITION_STARTED: {_P.DELETE_PARTITION_FINISHED},
    _P.DELETE_PARTITION_FINISHED: set(),
}


def is_valid_transition(src: SegmentState | None, target: SegmentState) -> bool:
    """RemoteLogSegmentState.isValidTransition (a state to itself is valid: retries, failover)."""
    return src == target or target in _SEGMENT_NEXT[src]


def is_valid_delete_transition(src: PartitionDeleteState | None, target: PartitionDeleteState) -> bool:
    """RemotePartitionDeleteState.isValidTransition."""
    return src == target or target in _DELETE_NEXT[src]


# --- the partitioner ------------------------------------------------------------------------------------


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _long_hash(v: int) -> int:
    """Long.hashCode: (int) (v ^ (v >>> 32)) of the signed 64-bit value."""
    u = v & 0xFFFFFFFFFFFFFFFF
    return _int32(u ^ (u >> 32))


def uuid_bits(topic_id: str) -> tuple[int, int]:
    """(most, least) significant bits of a Kafka Uuid in its base64 (URL-safe, unpadded) form."""
    raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    if len(raw) != 16:
        raise ValueError(f"a topic id of 16 bytes, found {len(raw)}: {topic_id!r}")
    msb, lsb = struct.unpack(">qq", raw)
    return msb, lsb


def metadata_partition_for(
    topic_id: str, partition: int, num_partitions: int = DEFAULT_METADATA_PARTITIONS
) -> int:
    """The ``__remote_log_metadata`` partition that holds the events of (topic id, partition), as
    RemoteLogMetadataTopicPartitioner.metadataPartition computes it."""
    msb, lsb = uuid_bits(topic_id)
    h = 1  # Objects.hash(lsb, msb, partition) = Arrays.hashCode of the boxed values
    for part in (_long_hash(lsb), _long_hash(msb), _int32(partition)):
        h = _int32(31 * h + part)
    return partition_of(h.to_bytes(4, "big", signed=True), num_partitions)


# --- the model -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class TopicIdPartition:
    """Kafka's TopicIdPartition (equal on topic id, topic name and partition)."""

    topic_id: str
    topic: str
    partition: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class RemoteEvent:
    """One applied event: the state it set, when and by which broker, and where it was read."""

    state: str
    event_timestamp_ms: int
    broker_id: int
    path: str  # the metadata segment file
    position: int | None  # byte position of the batch that holds the record
    offset: int  # the record's offset in its metadata partition


@dataclass(slots=True)
class RemoteSegment:
    """One remote log segment as RemoteLogSegmentMetadata after every event (ids in Kafka's base64)."""

    segment_id: str
    topic_id_partition: TopicIdPartition
    start_offset: int
    end_offset: int  # inclusive, as Kafka keeps it
    max_timestamp_ms: int
    leader_epochs: tuple[tuple[int, int], ...]  # (leader epoch, start offset)
    size: int
    state: SegmentState
    broker_id: int
    event_timestamp_ms: int
    custom_metadata: bytes | None = None
    events: list[RemoteEvent] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        """Only a COPY_SEGMENT_FINISHED segment serves reads (RemoteLogMetadataCache)."""
        return self.state is SegmentState.COPY_SEGMENT_FINISHED

    @property
    def first_event(self) -> RemoteEvent:
        return self.events[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "segment_id": self.segment_id,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "leader_epochs": [list(e) for e in self.leader_epochs],
            "size": self.size,
            "state": self.state.name,
            "broker_id": self.broker_id,
            "event_timestamp_ms": self.event_timestamp_ms,
            "max_timestamp_ms": self.max_timestamp_ms,
            "events": [
                {"state": e.state, "event_timestamp_ms": e.event_timestamp_ms, "broker_id": e.broker_id}
                for e in self.events
            ],
        }


@dataclass(slots=True)
class RemotePartition:
    """The remote tier of one user partition after the replay."""

    topic_id_partition: TopicIdPartition
    metadata_partition: int  # where its events were read
    segments: dict[str, RemoteSegment] = field(default_factory=dict)  # every segment ever added
    delete_state: PartitionDeleteState | None = None
    delete_events: list[RemoteEvent] = field(default_factory=list)

    @property
    def deleted(self) -> bool:
        """DELETE_PARTITION_FINISHED: the store forgot the partition and its segments."""
        return self.delete_state is PartitionDeleteState.DELETE_PARTITION_FINISHED

    @property
    def live_segments(self) -> list[RemoteSegment]:
        """Segments the broker still lists (every state but DELETE_SEGMENT_FINISHED), by start offset."""
        if self.deleted:
            return []
        live = (s for s in self.segments.values() if s.state is not SegmentState.DELETE_SEGMENT_FINISHED)
        return sorted(live, key=lambda s: (s.start_offset, s.end_offset, s.segment_id))

    @property
    def copied(self) -> list[RemoteSegment]:
        """The segments that serve reads (COPY_SEGMENT_FINISHED), by start offset."""
        return [s for s in self.live_segments if s.readable]

    @property
    def unfinished(self) -> list[RemoteSegment]:
        """Uploads started and never finished (COPY_SEGMENT_STARTED)."""
        return [s for s in self.live_segments if s.state is SegmentState.COPY_SEGMENT_STARTED]

    @property
    def remote_bytes(self) -> int:
        return sum(s.size for s in self.copied)

    @property
    def remote_log_start_offset(self) -> int | None:
        """The first offset a copied segment holds (None: none)."""
        copied = self.copied
        return min(s.start_offset for s in copied) if copied else None

    @property
    def remote_log_end_offset(self) -> int | None:
        """The offset after the last copied one (end offset + 1, like a log end offset; None: none)."""
        copied = self.copied
        return max(s.end_offset for s in copied) + 1 if copied else None

    def uncovered(self, start: int, end: int) -> list[tuple[int, int]]:
        """The ranges ``[a, b)`` of ``[start, end)`` that no copied segment holds."""
        return uncovered(start, end, ((s.start_offset, s.end_offset + 1) for s in self.copied))


@dataclass(frozen=True, slots=True)
class RemoteProblem:
    """A metadata record the replay could not apply: unreadable bytes, an invalid state transition, an
    update of an unknown segment (``kind``: "damaged" (the batch walk failed: bad bytes), "undecodable" (a
    value RemoteLogMetadataSerde could not read either), "invalid-transition", "unknown-segment",
    "wrong-partition", "unreadable" (a file or folder that cannot be read)). ``position`` is the byte
    position in ``path`` (the batch's, or the damage's)."""

    kind: str
    path: str
    position: int | None
    offset: int | None
    message: str
    topic_id_partition: TopicIdPartition | None = None
    segment_id: str | None = None
    #: the facts behind ``message``, for the words of a finding: "from_state", "to_state", "error",
    #: "expected" (the metadata partition the partitioner gives), "found" (where the events are)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class RemoteLogMetadata:
    """What the replay of the metadata partitions in some log dirs found."""

    metadata_dirs: dict[int, str] = field(default_factory=dict)  # metadata partition -> folder
    num_partitions: int = DEFAULT_METADATA_PARTITIONS
    num_partitions_source: str = "Kafka's default"
    partitions: dict[TopicIdPartition, RemotePartition] = field(default_factory=dict)
    problems: list[RemoteProblem] = field(default_factory=list)
    records: int = 0
    #: metadata partitions whose replay stopped early (damaged bytes, unreadable files): the state of
    #: their user partitions is known only up to the damage
    incomplete: set[int] = field(default_factory=set)

    def metadata_partition_for(self, topic_id: str, partition: int) -> int:
        return metadata_partition_for(topic_id, partition, self.num_partitions)

    @cached_property
    def _by_id(self) -> dict[tuple[str, int], list[RemotePartition]]:
        out: dict[tuple[str, int], list[RemotePartition]] = {}
        for tip, rp in self.partitions.items():
            out.setdefault((tip.topic_id, tip.partition), []).append(rp)
        return out

    def partition(self, topic_id: str | None, topic: str, partition: int) -> RemotePartition | None:
        """The remote tier of (topic id, topic, partition); with no topic id, by name alone."""
        if topic_id is not None:
            return self.partitions.get(TopicIdPartition(topic_id, topic, partition))
        named = [rp for t, rp in self.partitions.items() if t.topic == topic and t.partition == partition]
        return named[0] if len(named) == 1 else None

    def covers(self, topic_id: str | None, partition: int) -> bool:
        """Whether the events of (topic id, partition) were among the inputs: its metadata partition was
        read (or its events were found), so that no event means no remote segment."""
        if topic_id is None:
            return False
        found = self._by_id.get((topic_id, partition))
        if found:
            return all(rp.metadata_partition not in self.incomplete for rp in found)
        if self.misplaced:  # the partition count is not what the partitioner assumed: trust nothing else
            return False
        try:
            mp = self.metadata_partition_for(topic_id, partition)
        except ValueError:
            return False
        return mp in self.metadata_dirs and mp not in self.incomplete

    def highest_copied_offset(self, topic_id: str | None, topic: str, partition: int) -> int | None:
        """UnifiedLog.highestOffsetInRemoteStorage as the broker would find it from this metadata: the
        highest end offset of a COPY_SEGMENT_FINISHED segment (K:core/.../log/remote/RemoteLogManager.java
        findHighestRemoteOffset), -1 when the partition's events were read and none is copied (the
        broker's initial value), None when its events are not among the inputs (unknown)."""
        rp = self.partition(topic_id, topic, partition)
        if rp is not None:
            if rp.metadata_partition in self.incomplete:
                return None
            end = rp.remote_log_end_offset
            return -1 if end is None else end - 1
        return -1 if self.covers(topic_id, partition) else None

    @property
    def misplaced(self) -> bool:
        return any(p.kind == "wrong-partition" for p in self.problems)

    def summary(self) -> dict[str, Any]:
        return {
            "metadata_partitions": sorted(self.metadata_dirs),
            "num_partitions": self.num_partitions,
            "num_partitions_source": self.num_partitions_source,
            "records": self.records,
            "partitions": len(self.partitions),
            "problems": len(self.problems),
            "incomplete": sorted(self.incomplete),
        }


# --- the replay ------------------------------------------------------------------------------------------


def _tip(entry: dict[str, Any]) -> TopicIdPartition:
    return TopicIdPartition(str(entry["id"]), str(entry["name"]), int(entry["partition"]))


def _uuid(value: Any) -> str:
    """The decoder gives uuids in Kafka's base64 form already; keep them as strings."""
    return str(value)


class _Replayer:
    def __init__(self, out: RemoteLogMetadata) -> None:
        self.out = out

    def _partition(self, tip: TopicIdPartition, mp: int) -> RemotePartition:
        rp = self.out.partitions.get(tip)
        if rp is None:
            rp = self.out.partitions[tip] = RemotePartition(tip, mp)
            try:
                expected = self.out.metadata_partition_for(tip.topic_id, tip.partition)
            except ValueError:
                expected = mp
            if expected != mp:
                self.out.problems.append(
                    RemoteProblem(
                        "wrong-partition",
                        self.out.metadata_dirs.get(mp, ""),
                        None,
                        None,
                        f"events of {tip.name} (topic id {tip.topic_id}) are in "
                        f"{REMOTE_LOG_METADATA_TOPIC}-{mp}, where {self.out.num_partitions} metadata "
                        f"partitions ({self.out.num_partitions_source}) "
                        f"would put them in -{expected}: the topic has another number of partitions "
                        f"({NUM_PARTITIONS_CONFIG})",
                        tip,
                        facts={"expected": expected, "found": mp},
                    )
                )
        return rp

    def _problem(self, kind: str, where: tuple[str, int | None, int], message: str, **kw: Any) -> None:
        path, position, offset = where
        self.out.problems.append(RemoteProblem(kind, path, position, offset, message, **kw))

    def record(self, decoded: dict[str, Any], mp: int, where: tuple[str, int | None, int]) -> None:
        kind, data = decoded["type"], decoded["data"]
        path, position, offset = where
        if kind in ("RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord"):
            sid = data["remote_log_segment_id"]
            tip = _tip(sid["topic_id_partition"])
            seg_id = _uuid(sid["id"])
            state = self._state(data["remote_log_segment_state"], where, tip, seg_id)
            if state is None:
                return
            rp = self._partition(tip, mp)
            event = RemoteEvent(
                state.name, data["event_timestamp_ms"], data["broker_id"], path, position, offset
            )
        if kind == "RemoteLogSegmentMetadataRecord":
            existing = rp.segments.get(seg_id)
            src = existing.state if existing is not None else None
            # K:.../RemoteLogMetadataCache.java addCopyInProgressSegment: only COPY_SEGMENT_STARTED is added
            if state is not SegmentState.COPY_SEGMENT_STARTED or not is_valid_transition(src, state):
                self._problem(
                    "invalid-transition",
                    where,
                    f"segment {seg_id} of {tip.name}: a segment metadata record with state {state.name} "
                    f"(current state {src.name if src is not None else 'none'}); Kafka drops the event",
                    topic_id_partition=tip,
                    segment_id=seg_id,
                    facts={"from_state": src.name if src is not None else "no state", "to_state": state.name},
                )
                return
            seg = RemoteSegment(
                seg_id,
                tip,
                data["start_offset"],
                data["end_offset"],
                data["max_timestamp_ms"],
                tuple((e["leader_epoch"], e["offset"]) for e in data["segment_leader_epochs"]),
                data["segment_size_in_bytes"],
                state,
                data["broker_id"],
                data["event_timestamp_ms"],
                data.get("custom_metadata"),
                (existing.events if existing is not None else []) + [event],
            )
            rp.segments[seg_id] = seg
        elif kind == "RemoteLogSegmentMetadataUpdateRecord":
            seg = rp.segments.get(seg_id)
            if seg is None:
                self._problem(
                    "unknown-segment",
                    where,
                    f"segment {seg_id} of {tip.name}: an update to {state.name} for a segment no metadata "
                    f"record added; Kafka rejects it (RemoteResourceNotFoundException)",
                    topic_id_partition=tip,
                    segment_id=seg_id,
                    facts={"from_state": "no state", "to_state": state.name},
                )
                return
            if not is_valid_transition(seg.state, state) or state is SegmentState.COPY_SEGMENT_STARTED:
                self._problem(
                    "invalid-transition",
                    where,
                    f"segment {seg_id} of {tip.name} [{seg.start_offset}, {seg.end_offset}]: "
                    f"{seg.state.name} cannot become {state.name}; Kafka drops the event",
                    topic_id_partition=tip,
                    segment_id=seg_id,
                    facts={"from_state": seg.state.name, "to_state": state.name},
                )
                return
            seg.state = state
            seg.broker_id = data["broker_id"]
            seg.event_timestamp_ms = data["event_timestamp_ms"]
            seg.custom_metadata = data.get("custom_metadata")
            seg.events.append(event)
        elif kind == "RemotePartitionDeleteMetadataRecord":
            tip = _tip(data["topic_id_partition"])
            try:
                dstate = PartitionDeleteState(data["remote_partition_delete_state"])
            except ValueError:
                self._problem(
                    "undecodable",
                    where,
                    f"{tip.name}: unknown partition delete state {data['remote_partition_delete_state']}",
                    topic_id_partition=tip,
                    facts={
                        "error": f"unknown partition delete state {data['remote_partition_delete_state']}"
                    },
                )
                return
            rp = self._partition(tip, mp)
            if not is_valid_delete_transition(rp.delete_state, dstate):
                # the store applies it anyway (RemotePartitionMetadataStore keeps the latest state)
                self._problem(
                    "delete-order",
                    where,
                    f"{tip.name}: partition delete state "
                    f"{rp.delete_state.name if rp.delete_state is not None else 'none'} -> {dstate.name} "
                    f"skips a step (RemotePartitionDeleteState.isValidTransition)",
                    topic_id_partition=tip,
                    facts={
                        "from_state": rp.delete_state.name if rp.delete_state is not None else "no state",
                        "to_state": dstate.name,
                    },
                )
            rp.delete_state = dstate
            rp.delete_events.append(
                RemoteEvent(
                    dstate.name, data["event_timestamp_ms"], data["broker_id"], path, position, offset
                )
            )
        # RemoteLogSegmentMetadataSnapshotRecord lives in the manager's snapshot files, never in the topic

    def _state(
        self, value: int, where: tuple[str, int | None, int], tip: TopicIdPartition, seg_id: str
    ) -> SegmentState | None:
        try:
            return SegmentState(value)
        except ValueError:
            self._problem(
                "undecodable",
                where,
                f"segment {seg_id} of {tip.name}: unknown segment state {value}",
                facts={"error": f"unknown segment state {value}"},
                topic_id_partition=tip,
                segment_id=seg_id,
            )
            return None

    def segment(self, buf: bytes | memoryview, path: str, mp: int) -> bool:
        """Apply every record of one metadata segment; bad bytes stop this segment (False), never the
        replay."""
        from logdoctor.formats.internal.remote_log_metadata import decode_remote_log_metadata
        from logdoctor.formats.records import iter_batches

        try:
            for batch in iter_batches(buf, source=path, verify_crc=True):
                if batch.is_control:
                    continue
                try:
                    records = list(batch.records())
                except FormatError as e:
                    self._problem(
                        "damaged", (path, e.position, batch.base_offset), str(e), facts={"error": str(e)}
                    )
                    return False
                for rec in records:
                    where = (path, batch.position, rec.offset)
                    try:
                        decoded = decode_remote_log_metadata(rec.key, rec.value, source=path)
                    except FormatError as e:
                        self._problem(
                            "undecodable",
                            where,
                            f"offset {rec.offset} (batch at byte {batch.position}): {e}",
                            facts={"error": str(e)},
                        )
                        continue
                    self.out.records += 1
                    try:
                        self.record(decoded, mp, where)
                    except (KeyError, TypeError, ValueError) as e:  # a field missing from a hand-made record
                        self._problem(
                            "undecodable", where, f"offset {rec.offset}: {e!r}", facts={"error": repr(e)}
                        )
        except FormatError as e:
            self._problem("damaged", (path, e.position, -1), str(e), facts={"error": str(e)})
            return False
        return True


def _unreadable(path: str, what: str, e: OSError) -> RemoteProblem:
    return RemoteProblem(
        "unreadable", path, None, None, f"{what}: {e.strerror or e}", facts={"error": str(e.strerror or e)}
    )


def find_metadata_partitions(
    log_dirs: Iterable[str | os.PathLike[str]], problems: list[RemoteProblem] | None = None
) -> dict[int, str]:
    """The live ``__remote_log_metadata-N`` folders of ``log_dirs`` (names only; the first dir wins). A log
    dir that cannot be listed is left out (and kept in ``problems`` when given)."""
    from logdoctor.logdir.model import LogDir

    found: dict[int, str] = {}
    for d in log_dirs:
        try:
            parts = LogDir(d).partitions
        except OSError as e:
            if problems is not None:
                problems.append(_unreadable(os.fspath(d), "cannot list", e))
            continue
        for part in parts:
            if part.topic == REMOTE_LOG_METADATA_TOPIC and part.kind is DirKind.LOG:
                found.setdefault(part.partition, str(part.path))
    return found


def replay_remote_log_metadata(
    log_dirs: Iterable[str | os.PathLike[str]],
    *,
    num_partitions: int | None = None,
    num_partitions_source: str | None = None,
) -> RemoteLogMetadata:
    """Replay every ``__remote_log_metadata`` partition of ``log_dirs``. Never raises on bad data."""
    problems: list[RemoteProblem] = []
    folders = find_metadata_partitions(log_dirs, problems)
    return replay_metadata_folders(
        folders, num_partitions=num_partitions, num_partitions_source=num_partitions_source, problems=problems
    )


def replay_metadata_folders(
    folders: dict[int, str],
    *,
    num_partitions: int | None = None,
    num_partitions_source: str | None = None,
    problems: list[RemoteProblem] | None = None,
) -> RemoteLogMetadata:
    """Replay the given ``__remote_log_metadata`` partition folders ({partition: folder}; e.g. one per
    Spark task). Never raises on bad data."""
    from logdoctor.logdir.files import map_file

    out = RemoteLogMetadata(dict(folders), problems=problems if problems is not None else [])
    if num_partitions is not None and num_partitions > 0:
        out.num_partitions = num_partitions
        out.num_partitions_source = num_partitions_source or NUM_PARTITIONS_CONFIG
    replayer = _Replayer(out)
    for mp, folder in sorted(out.metadata_dirs.items()):
        try:
            names = sorted(os.listdir(folder))
        except OSError as e:
            out.problems.append(_unreadable(folder, "cannot list", e))
            out.incomplete.add(mp)
            continue
        logs = sorted(
            (seg.base_offset, n)
            for n in names
            if (seg := parse_segment_file(n)) is not None and seg.suffix == ".log"
        )
        for _base, name in logs:
            path = os.path.join(folder, name)
            try:
                buf = map_file(Path(path))
            except OSError as e:
                out.problems.append(_unreadable(path, "cannot read", e))
                out.incomplete.add(mp)
                break
            if not replayer.segment(buf, path, mp):
                # the events after the damage are not known: stop here, as a consumer would
                out.incomplete.add(mp)
                break
    return out


class RemoteLogMetadataReplay:
    """The remote log metadata of some log dirs, replayed on first use (construction reads nothing)."""

    def __init__(
        self,
        log_dirs: Iterable[str | os.PathLike[str]],
        *,
        num_partitions: int | None = None,
        num_partitions_source: str | None = None,
    ) -> None:
        self.log_dirs = [os.fspath(d) for d in log_dirs]
        self._num = num_partitions
        self._source = num_partitions_source

    @cached_property
    def metadata(self) -> RemoteLogMetadata:
        return replay_remote_log_metadata(
            self.log_dirs, num_partitions=self._num, num_partitions_source=self._source
        )

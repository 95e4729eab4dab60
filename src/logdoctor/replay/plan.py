"""The plan of a replay, made before anything is written: for each source partition, the target topic and
partition, the records and bytes to send (those already replayed by an earlier run left out), whether the
target topic exists or would be created (partitions and configs from the source's KRaft metadata log where
the log dir holds it, else unknown), and the conflicts that stop :func:`logdoctor.replay.apply.apply_replay`.

Conflicts (codes; ``apply_replay(ignore=...)`` lets the operator accept some):

- ``TARGET_NOT_EMPTY``: the target partition holds records and no progress of a replay of this source
  partition (a rerun of the same replay resumes instead);
- ``PROGRESS_OF_OTHER_SOURCE``: the target partition's replay progress names another source partition: another
  topic or partition, or the same names of another cluster or topic id (a progress names its source's
  cluster id and topic id: :class:`logdoctor.replay.target.Progress`);
- ``TOO_FEW_PARTITIONS``: the target topic has fewer partitions than the source partition's number needs;
- ``RECORD_TOO_LARGE``: a record whose batch alone (uncompressed) is larger than the target topic's
  ``max.message.bytes`` (K:storage/.../internals/log/LogValidator.java, UnifiedLog analyzeAndValidateRecords:
  ``RecordTooLargeException``; a compressing producer may still get it through);
- ``LOG_APPEND_TIME``: the target topic's ``message.timestamp.type`` is LogAppendTime: the broker stamps
  its own time on every batch (LogValidator ``assignOffsetsNonCompressed``,
  ``validateMessagesAndAssignOffsetsCompressed``) and the source's timestamps are lost;
- ``TIMESTAMP_REJECTED``: records older than ``message.timestamp.before.max.ms`` or newer than
  ``message.timestamp.after.max.ms`` allow (KIP-937; LogValidator ``validateTimestamp``): the broker refuses
  their batch;
- ``RETENTION_DELETES``: records older than the target topic's ``retention.ms`` (a ``delete`` policy): the
  target's retention deletes their segments as soon as they are rolled, by their largest timestamp
  (K:storage/.../internals/log/UnifiedLog.java deleteRetentionMsBreachedSegments);
- ``NO_TIMESTAMP``: records with no timestamp (magic 0): they get the producer's time;
- ``SEVERAL_REPLICAS``: the inputs hold the partition in several log dirs: give the one to replay; accepted,
  the reference copy of the replica rules is replayed (:func:`logdoctor.replay.source.single_replicas`);
- ``BAD_TARGET_NAME``: the topic map makes a name Kafka refuses;
- ``TARGET_MISSING``: the target topic does not exist and ``create`` is off;
- ``GROUP_ACTIVE``: a consumer group to carry over has active members on the target
  (:mod:`logdoctor.replay.groups`);
- ``GROUP_COMMITTED_ON_TARGET``: a consumer group to carry over has a committed offset on a replayed target
  partition that no replay committed (its consumers' on the target, or someone's by hand): its consumers
  resume there, skipping replayed records or reading some again (``overwrite``: moved to the translated
  offset instead).

With ``partitioner="default"`` (the keys re-hashed as the Java producer does:
:mod:`logdoctor.replay.partitioner`) a source partition's records go to many target partitions and each
target partition gets records of many source partitions, so the progress is the source partition's
(:func:`logdoctor.replay.target.rehash_group`). Then ``TARGET_NOT_EMPTY`` is a target partition with records
while no source partition of its topic has a replay's progress (a replay begun owns the whole topic),
``TOO_FEW_PARTITIONS`` does not apply (any count is fine), and ``PARTITION_COUNT_CHANGED`` is a source
partition whose progress was hashed over another partition count than the target topic has now (the rest
of its keys would land elsewhere than the first part's).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from logdoctor.formats.record_types import Compression
from logdoctor.logdir.names import topic_name_problem
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.refs import PartitionRef
from logdoctor.logdir.transactions import READ_COMMITTED, count_left_out
from logdoctor.replay.partitioner import DEFAULT, PARTITIONERS, SAME, partition_for
from logdoctor.replay.target import (
    Progress,
    Target,
    describe_source,
    rehash_group,
    rehash_transactional_id,
    replay_group,
    transactional_id,
)

__all__ = [
    "COMPRESSIONS",
    "DROPPED_CONFIGS",
    "Conflict",
    "GroupPartition",
    "GroupPlan",
    "PartitionPlan",
    "ReplayPlan",
    "TopicMap",
    "TopicPlan",
    "plan_replay",
]

#: topic configs of the source not given to a created target topic: they name the source cluster's brokers
DROPPED_CONFIGS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
_LONG_MAX = 2**63 - 1
#: ``plan_replay(compression=...)``: ``source`` (each partition's producer writes with the codec of its source
#: batches: :attr:`logdoctor.replay.source.PartitionSource.codec`), or the producers' ``compression.type``
SOURCE = "source"
COMPRESSIONS = (SOURCE, *(c.label for c in Compression))  # none, gzip, snappy, lz4, zstd: librdkafka's names
#: partition folders a replay never reads: scheduled for deletion, a move target, no longer assigned
_NOT_LIVE = ("delete", "future", "stray")
_TOPIC_CHARS = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Conflict:
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


class TopicMap:
    """OLD -> NEW topic names: entries ``OLD=NEW`` (or pairs), the first that matches wins; OLD made only of
    the characters of topic names is an exact name, anything else a regex matched whole, NEW then a
    template of its groups (``\\1``, ``\\g<name>``). A topic no entry matches keeps its name."""

    def __init__(self, entries: Iterable[str | tuple[str, str]] | Mapping[str, str] | None = None) -> None:
        items: list[tuple[str, str]] = []
        if isinstance(entries, Mapping):
            items = [(str(k), str(v)) for k, v in entries.items()]
        else:
            for e in entries or ():
                if isinstance(e, str):
                    old, sep, new = e.rpartition("=")
                    if not sep or not old or not new:
                        raise ValueError(f"topic map entry {e!r}: expected OLD=NEW")
                    items.append((old, new))
                else:
                    items.append((str(e[0]), str(e[1])))
        self._rules: list[tuple[str, re.Pattern[str] | None, str]] = []
        for old, new in items:
            if _TOPIC_CHARS.fullmatch(old):
                self._rules.append((old, None, new))
            else:
                try:
                    self._rules.append((old, re.compile(old), new))
                except re.error as exc:
                    raise ValueError(f"topic map entry {old!r}={new!r}: not a valid regex: {exc}") from None
        self.entries = tuple(items)

    def __call__(self, topic: str) -> str:
        for old, pattern, new in self._rules:
            if pattern is None:
                if topic == old:
                    return new
                continue
            m = pattern.fullmatch(topic)
            if m is not None:
                return m.expand(new)
        return topic


@dataclass
class PartitionPlan:
    """One source partition's replay."""

    log_dir: str
    source_topic: str
    source_partition: int
    target_topic: str
    #: the target partition (-1 with ``partitioner`` default: each record's key chooses it)
    target_partition: int
    transactional_id: str
    group: str
    #: records and bytes (keys, values, headers) of the whole replay, and of what is left to send
    records: int = 0
    bytes: int = 0
    remaining_records: int = 0
    remaining_bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    max_batch_bytes: int = 0
    #: the target topic's ``max.message.bytes`` (None: unknown): the producer's batches are sized to it
    max_message_bytes: int | None = None
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    no_timestamp: int = 0
    #: the progress of an earlier run (None: none)
    progress: Progress | None = None
    #: a transaction of a killed run still holds this partition's next progress pending: ``progress`` is
    #: the last committed one, and ``remaining_*`` count from it (``--apply`` ends that transaction first:
    #: it is aborted unless its commit had begun, then the replay goes on from what is committed)
    pending: bool = False
    #: (log start, high watermark) of the target partition (None: the topic does not exist yet)
    target_offsets: tuple[int, int] | None = None
    #: the target partition's first offset held by an open transaction while no replay progress is there
    #: (a killed first run's, whose producer ``--apply`` fences before it reads the partition; another
    #: producer's, which ``--apply`` refuses): None, none open
    target_open_from: int | None = None
    conflicts: list[Conflict] = field(default_factory=list)
    #: what is not read once (read problems of the source)
    problems: list[str] = field(default_factory=list)
    #: ``same`` or ``default`` (:mod:`logdoctor.replay.partitioner`)
    partitioner: str = SAME
    #: with ``default``: the target topic's partition count the keys are hashed over (None: unknown)
    target_partitions: int | None = None
    #: with ``default``: the records left to send per target partition
    target_records: dict[int, int] = field(default_factory=dict)
    #: the group whose membership is the replay's lease on the target topic (None: ``group``)
    lease_group: str | None = None
    #: whose partition the source is: (cluster id, topic id) of its log dir
    #: (:func:`logdoctor.logdir.identity.source_of`), named in the progress the replay commits
    source_id: tuple[str | None, str | None] = (None, None)
    #: the log dirs of every copy of the source partition among the inputs when there are several
    #: (``SEVERAL_REPLICAS``): ``log_dir`` is the one replayed, the reference copy; empty: one copy
    copies: list[str] = field(default_factory=list)
    #: the transactions left without a marker (logdir.transactions ``without_marker_json``): open ones
    #: hold back every record from their first offset (read_committed), decided ones are replayed or
    #: left out as the coordinator's state or ``--open-transactions`` decided (logdir.coordinator)
    without_marker: list[dict[str, Any]] = field(default_factory=list)
    #: the data records at or above the last stable offset that an open transaction holds back
    held_back: int = 0
    #: ``--cut-at``: the cut's end offset (logdir.cut: the first offset past the cut; a group's offset past
    #: it is clamped to it); None: no cut
    cut_end: int | None = None
    #: ``--cut-at``: the records read_committed gives that the cut leaves out (LeftOut.after_cut)
    cut_left_out: int = 0
    #: the codec of the source's batches (:attr:`logdoctor.replay.source.PartitionSource.codec`; None: no
    #: record), and the one the partition's producer writes with (its ``compression.type``)
    source_compression: str | None = None
    compression: str = "none"
    #: the codec the target broker rewrites the partition's batches with: its topic's ``compression.type``
    #: is neither ``producer`` nor :attr:`compression` (:func:`broker_recompresses`); None: kept as sent
    recompressed_as: str | None = None

    @property
    def name(self) -> str:
        return f"{self.source_topic}-{self.source_partition}"

    @property
    def rehashed(self) -> bool:
        return self.partitioner == DEFAULT

    def target_of(self, key: bytes | None) -> int:
        """The target partition of a record of this source partition with ``key``."""
        if not self.rehashed:
            return self.target_partition
        assert self.target_partitions is not None
        return partition_for(key, self.source_partition, self.target_partitions)

    @property
    def done(self) -> bool:
        return self.remaining_records == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "log_dir": self.log_dir,
            "copies": self.copies,
            "source": {
                "topic": self.source_topic,
                "partition": self.source_partition,
                "cluster_id": self.source_id[0],
                "topic_id": self.source_id[1],
            },
            "target": {
                "topic": self.target_topic,
                "partition": None if self.rehashed else self.target_partition,
                "partitioner": self.partitioner,
                "partitions": self.target_partitions,
                "remaining_records_per_partition": {str(k): v for k, v in sorted(self.target_records.items())}
                if self.rehashed
                else None,
            },
            "transactional_id": self.transactional_id,
            "group": self.group,
            "records": self.records,
            "bytes": self.bytes,
            "remaining_records": self.remaining_records,
            "remaining_bytes": self.remaining_bytes,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "max_batch_bytes": self.max_batch_bytes,
            "min_timestamp": self.min_timestamp,
            "max_timestamp": self.max_timestamp,
            "resume_from": None if self.progress is None else self.progress.next_source_offset,
            "pending_transaction": self.pending,
            "target_offsets": None if self.target_offsets is None else list(self.target_offsets),
            "target_open_transaction_from": self.target_open_from,
            "conflicts": [c.to_json() for c in self.conflicts],
            "problems": self.problems,
            "transactions_without_marker": self.without_marker,
            "records_held_back": self.held_back,
            "cut_end_offset": self.cut_end,
            "cut_records_left_out": self.cut_left_out,
            "source_compression": self.source_compression,
            "compression": self.compression,
            "recompressed_as": self.recompressed_as,
        }


@dataclass
class TopicPlan:
    """One target topic: exists, or would be created with ``partitions`` and ``configs`` (None: unknown,
    the target's defaults apply)."""

    source_topic: str
    target_topic: str
    exists: bool
    partitions: int | None
    #: the source topic's partition count and replication factor (None: unknown)
    source_partitions: int | None = None
    replication_factor: int | None = None
    #: the configs a created topic gets (the source's), or the existing target's (None: unknown)
    configs: dict[str, str] | None = None
    configs_from: str = "unknown"
    create: bool = False
    conflicts: list[Conflict] = field(default_factory=list)
    #: the configs the target topic has, or will have once created (``configs`` over the target's defaults):
    #: what the conflicts are checked against (:func:`check_partition`)
    effective: dict[str, str] = field(default_factory=dict)
    #: a re-hashed replay's target partitions where an open transaction holds offsets ``[from, high)`` while
    #: no source partition has progress: partition -> (from, high) (:func:`_check_rehashed_target`)
    open_transactions: dict[int, tuple[int, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "source_topic": self.source_topic,
            "target_topic": self.target_topic,
            "exists": self.exists,
            "create": self.create,
            "partitions": self.partitions,
            "source_partitions": self.source_partitions,
            "replication_factor": self.replication_factor,
            "configs": self.configs if self.configs is not None else "unknown",
            "configs_from": self.configs_from,
            "conflicts": [c.to_json() for c in self.conflicts],
            "target_open_transactions": {str(p): f for p, (f, _h) in self.open_transactions.items()},
        }


#: a partition's status in a group's plan
COMMIT = "commit"  # its replay is complete: the translated offset is committed by --apply
AFTER_REPLAY = "after the replay"  # its replay is not complete: translated and committed once it is
COMMITTED = "committed"  # the target group holds the translated offset already
KEPT = "kept"  # the target group moved on since the replay committed it: left as it is
OTHER = "committed on the target"  # no replay committed it, records between: left (moved with ``overwrite``)
ACTIVE = "active"  # (a result) the group had active members when it was to be committed


@dataclass
class GroupPartition:
    """One committed offset of a source group on a replayed partition, and its translation."""

    source_topic: str
    source_partition: int
    #: the source's committed offset (the next record the group reads) and the commit's metadata
    source_offset: int
    metadata: str | None
    commit_timestamp: int
    target_topic: str
    target_partition: int
    #: the translated offset (None: not known before the partition's replay is complete)
    target_offset: int | None = None
    status: str = AFTER_REPLAY
    #: the target group's committed offset there before (None: none)
    target_committed: int | None = None
    #: the offset a replay committed there for the group (its ledger: ``carried_group``; None: never)
    carried: int | None = None
    #: with ``target_committed`` no replay committed: the replayed records its consumers skip (it is past
    #: ``target_offset``) or read again (before it); None: not known before the partition's replay is done
    skipped: int | None = None
    read_again: int | None = None
    #: ``--cut-at``: the source's committed offset, past the cut's end offset ``source_offset`` now is
    cut_from: int | None = None

    @property
    def foreign(self) -> bool:
        """A committed offset on the target that no replay committed, with replayed records between it and
        the translated one (or any, before the partition's replay is done)."""
        return (
            self.target_committed is not None
            and self.carried is None
            and (self.status == OTHER or self.target_offset is None)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": {"topic": self.source_topic, "partition": self.source_partition},
            "target": {"topic": self.target_topic, "partition": self.target_partition},
            "before": self.source_offset,
            "after": self.target_offset if self.target_offset is not None else AFTER_REPLAY,
            "status": self.status,
            "target_committed": self.target_committed,
            "skipped": self.skipped,
            "read_again": self.read_again,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "cut_from": self.cut_from,
        }


@dataclass
class GroupPlan:
    """One source group: its state on the target and each replayed partition's before and after."""

    group: str
    #: EMPTY, DEAD, STABLE, ... as the target describes it; ABSENT: no such group there
    target_state: str
    members: list[str] = field(default_factory=list)
    partitions: list[GroupPartition] = field(default_factory=list)
    #: its commits on partitions the replay does not replay (topic-partition)
    not_replayed: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: move the offsets no replay committed (``GROUP_COMMITTED_ON_TARGET``) to the translated ones
    overwrite: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "target_state": self.target_state,
            "members": self.members,
            "partitions": [p.to_json() for p in self.partitions],
            "not_replayed": self.not_replayed,
            "conflicts": [c.to_json() for c in self.conflicts],
            "overwrite": self.overwrite,
        }


@dataclass
class ReplayPlan:
    """What :func:`plan_replay` found; :func:`logdoctor.replay.apply.apply_replay` carries it out."""

    paths: tuple[str, ...]
    opts: ReadOptions
    bootstrap: str
    cluster_id: str
    topics: list[TopicPlan]
    partitions: list[PartitionPlan]
    admin_config: dict[str, Any] = field(default_factory=dict)
    #: offsets not read once (the read plan's), and the internal topics left out
    not_read: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    #: the source's consumer groups carried over (:func:`logdoctor.replay.groups.plan_groups`; None: none)
    groups: list[GroupPlan] | None = None
    #: ``same`` or ``default`` (:mod:`logdoctor.replay.partitioner`)
    partitioner: str = SAME
    #: one of :data:`COMPRESSIONS` (each partition's own: :attr:`PartitionPlan.compression`)
    compression: str = SOURCE

    def all_conflicts(self) -> list[Conflict]:
        out = list(self.conflicts)
        for t in self.topics:
            out.extend(t.conflicts)
        for p in self.partitions:
            out.extend(p.conflicts)
        for g in self.groups or ():
            out.extend(g.conflicts)
        return out

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def remaining_records(self) -> int:
        return sum(p.remaining_records for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "bootstrap": self.bootstrap,
            "cluster_id": self.cluster_id,
            "partitioner": self.partitioner,
            "compression": self.compression,
            "records": self.records,
            "remaining_records": self.remaining_records,
            "topics": [t.to_json() for t in self.topics],
            "partitions": [p.to_json() for p in self.partitions],
            "not_read": self.not_read,
            "left_out": self.left_out,
            "groups": None if self.groups is None else [g.to_json() for g in self.groups],
            "conflicts": [c.to_json() for c in self.all_conflicts()],
        }


def _source_topics(
    log_dirs: Sequence[str],
) -> tuple[dict[str, tuple[int, int | None, dict[str, str]]], str | None]:
    """topic -> (partitions, replication factor, dynamic configs) from the KRaft metadata log of one of
    ``log_dirs`` (the image a broker rebuilds: :func:`logdoctor.logdir.metadata_image.replay`), and where
    it was read; empty and None without one (a ZooKeeper-era log dir: its topics' configs are in
    ZooKeeper)."""
    from logdoctor.logdir.identity import find_metadata_dir
    from logdoctor.logdir.metadata_image import replay

    mdir = find_metadata_dir(list(log_dirs))
    if mdir is None:
        return {}, None
    image = replay(mdir)
    counts: dict[str, int] = {}
    rf: dict[str, int] = {}
    for (tid, _p), st in image.partitions.items():
        name = image.topic_names.get(tid)
        if name is None:
            continue
        counts[name] = counts.get(name, 0) + 1
        rf.setdefault(name, len(st.replicas))
    configs = image.topic_configs
    out = {name: (n, rf.get(name), dict(configs.get(name, {}))) for name, n in counts.items()}
    return out, mdir


def broker_recompresses(topic_codec: str | None, codec: str) -> str | None:
    """The codec a broker rewrites batches of ``codec`` (a producer's ``compression.type``) with, in a topic
    whose ``compression.type`` is ``topic_codec`` (None: unknown, taken as ``producer``); None when it keeps
    them as sent. The topic's codec is the target unless it is ``producer``
    (K:server-common/.../server/record/BrokerCompressionType.java targetCompression, ``uncompressed`` is
    none), and offsets are assigned in place only into batches of that codec
    (K:storage/.../internals/log/LogValidator.java validateMessagesAndAssignOffsets)."""
    target = (topic_codec or "producer").strip().lower()
    target = {"uncompressed": "none", "producer": codec}.get(target, target)
    return None if target == codec else target


def check_partition(pp: PartitionPlan, configs: Mapping[str, str], now_ms: int | None = None) -> None:
    """The conflicts of ``pp`` that depend on the ``configs`` its target topic has, or will have once created
    (:attr:`TopicPlan.effective`), added: the plan's one check, before anything is created. The codec the
    broker rewrites the batches with, if any (:attr:`PartitionPlan.recompressed_as`), is noted, not a
    conflict: the records are the same."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    codec = configs.get("compression.type")
    pp.recompressed_as = broker_recompresses(codec, pp.compression) if pp.records else None
    max_bytes = pp.max_message_bytes = _int(configs.get("max.message.bytes"))
    if max_bytes is not None and pp.max_batch_bytes > max_bytes:
        pp.conflicts.append(
            Conflict(
                "RECORD_TOO_LARGE",
                f"{pp.name}: a record makes a batch of {pp.max_batch_bytes} bytes, more than "
                f"{pp.target_topic}'s max.message.bytes={max_bytes}",
            )
        )
    if configs.get("message.timestamp.type", "CreateTime") == "LogAppendTime" and pp.records:
        pp.conflicts.append(
            Conflict(
                "LOG_APPEND_TIME",
                f"{pp.target_topic} has message.timestamp.type=LogAppendTime: the target broker stamps its "
                f"own time on {pp.name}'s records, their timestamps are not kept",
            )
        )
    retention = _int(configs.get("retention.ms"))
    policy = configs.get("cleanup.policy", "delete")
    if (
        "delete" in policy
        and retention is not None
        and retention >= 0
        and pp.min_timestamp is not None
        and pp.min_timestamp < now_ms - retention
    ):
        pp.conflicts.append(
            Conflict(
                "RETENTION_DELETES",
                f"{pp.name}: records as old as {pp.min_timestamp} are past {pp.target_topic}'s "
                f"retention.ms={retention}: the target deletes them once their segment rolls",
            )
        )
    for when, ts, sign in (("before", pp.min_timestamp, -1), ("after", pp.max_timestamp, 1)):
        limit = _int(configs.get(f"message.timestamp.{when}.max.ms"))
        if limit is not None and limit < _LONG_MAX and ts is not None and (ts - now_ms) * sign > limit:
            age, than = ("old", "older") if sign < 0 else ("new", "newer")
            pp.conflicts.append(
                Conflict(
                    "TIMESTAMP_REJECTED",
                    f"{pp.name}: records as {age} as {ts} are {than} than {pp.target_topic}'s "
                    f"message.timestamp.{when}.max.ms={limit} allows: the broker refuses them",
                )
            )


def live_refs(refs: Iterable[PartitionRef]) -> dict[tuple[str, str, int], PartitionRef]:
    """The partitions a replay reads (not :data:`_NOT_LIVE`) by log dir, topic and partition: of several
    copies (``SEVERAL_REPLICAS`` accepted), the plan's is the one of its log dir."""
    return {(r.log_dir, r.topic, r.partition): r for r in refs if r.kind not in _NOT_LIVE}


def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def plan_replay(
    paths: str | Sequence[str],
    bootstrap: str,
    *,
    opts: ReadOptions | None = None,
    topic_map: TopicMap | Callable[[str], str] | None = None,
    admin_config: Mapping[str, Any] | None = None,
    create: bool = True,
    timeout: float = 60.0,
    partitioner: str = SAME,
    compression: str = SOURCE,
) -> ReplayPlan:
    """The plan of replaying the records of ``paths`` (log dirs, partition folders, as ``export`` takes
    them, read with ``opts``) into the cluster at ``bootstrap``: one pass over the source's records (see
    :mod:`logdoctor.replay.source`) and a few questions to the target (its cluster id, its topics and their
    configs, each target partition's offsets, the replay groups' progress). Writes nothing. The source's
    consumer groups are planned on top of it (:func:`logdoctor.replay.groups.plan_groups`).
    ``partitioner``: ``same`` (each record to its source partition's number) or ``default`` (the key
    re-hashed as the Java producer does: :mod:`logdoctor.replay.partitioner`). ``compression``: the codec of
    the producers' batches (:data:`COMPRESSIONS`): ``source``, each source partition's
    (:attr:`logdoctor.replay.source.PartitionSource.codec`; ``none`` for a partition without records),
    else that one for all (the records' bytes are the same either way)."""
    from logdoctor.logdir.identity import source_of
    from logdoctor.logdir.read_plan import plan_read
    from logdoctor.replay.source import PartitionSource, single_replicas

    if partitioner not in PARTITIONERS:
        raise ValueError(f"partitioner {partitioner!r}: one of {', '.join(PARTITIONERS)}")
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression {compression!r}: one of {', '.join(COMPRESSIONS)}")
    opts = opts if opts is not None else ReadOptions()
    _check_options(opts)
    mapping = topic_map if topic_map is not None else TopicMap()
    read = plan_read(paths, opts)
    target = Target(bootstrap, admin_config, timeout)
    cluster_id = target.cluster_id
    refs, several = single_replicas(list(live_refs(read.refs).values()))
    plan = ReplayPlan(
        tuple(read.items), opts, bootstrap, cluster_id, [], [], dict(admin_config or {}),
        [p.message for p in read.not_read], list(read.left_out), partitioner=partitioner,
        compression=compression,
    )  # fmt: skip
    for (topic, partition), (dirs, chosen) in sorted(several.items()):
        accepted = (
            f"--ignore-conflict SEVERAL_REPLICAS replays the copy in {chosen.log_dir} (the reference: the "
            "newest leader epoch, then the longest log)"
            if chosen is not None
            else "no copy's log end is known here (not a local log dir): --ignore-conflict SEVERAL_REPLICAS "
            "replays none of them"
        )
        plan.conflicts.append(
            Conflict(
                "SEVERAL_REPLICAS",
                f"{topic}-{partition} is in several log dirs ({', '.join(dirs)}): give the one to replay; "
                + accepted,
            )
        )
    refs.sort(key=lambda r: (r.topic, r.partition))
    source_meta, meta_dir = _source_topics(read.log_dirs)
    existing = target.partition_counts()
    by_source: dict[str, TopicPlan] = {}
    targets_of: dict[str, str] = {}
    for ref in refs:
        if ref.topic in by_source:
            continue
        new = mapping(ref.topic)
        tp = TopicPlan(ref.topic, new, new in existing, existing.get(new))
        bad = topic_name_problem(new)
        if bad is not None:
            tp.conflicts.append(Conflict("BAD_TARGET_NAME", f"{ref.topic} -> {new!r}: {bad}"))
        other = targets_of.get(new)
        if other is not None:
            tp.conflicts.append(
                Conflict("BAD_TARGET_NAME", f"{ref.topic} and {other} would both be replayed into {new}")
            )
        targets_of[new] = ref.topic
        known = source_meta.get(ref.topic)
        if known is not None:
            tp.source_partitions, tp.replication_factor = known[0], known[1]
        seen = max(r.partition for r in refs if r.topic == ref.topic) + 1
        if not tp.exists:
            tp.create = create and bad is None
            tp.partitions = max(seen, tp.source_partitions or 0)
            if known is not None:
                tp.configs = {k: v for k, v in known[2].items() if k not in DROPPED_CONFIGS}
                tp.configs_from = f"the topic's ConfigRecords in {meta_dir}"
            if not create:
                tp.conflicts.append(Conflict("TARGET_MISSING", f"{new} does not exist on the target"))
        by_source[ref.topic] = tp
    plan.topics = list(by_source.values())
    existing_topics = [t.target_topic for t in plan.topics if t.exists]
    described = target.topic_configs(existing_topics)
    defaults = target.topic_defaults() if not all(t.exists for t in plan.topics) else {}
    for tp in plan.topics:
        if tp.exists:
            tp.configs = described.get(tp.target_topic)
            tp.configs_from = "the target cluster"
        tp.effective = dict(tp.configs or {}) if tp.exists else {**defaults, **(tp.configs or {})}
    if partitioner == DEFAULT:
        for ref in refs:
            pp = _rehashed_partition(
                ref, by_source[ref.topic], target, cluster_id, opts, read.decisions, compression
            )
            pp.copies = several.get((ref.topic, ref.partition), ([], None))[0]
            plan.partitions.append(pp)
        for tp in plan.topics:
            _check_rehashed_target(
                tp, [p for p in plan.partitions if p.source_topic == tp.source_topic], target
            )
        return plan
    progress: dict[str, tuple[dict[int, Progress], set[int]]] = {}
    for tp in plan.topics:
        if tp.exists:
            parts = sorted(r.partition for r in refs if r.topic == tp.source_topic)
            progress[tp.target_topic] = target.committed_progress(
                replay_group(cluster_id, tp.target_topic), tp.target_topic, parts
            )
    for ref in refs:
        tp = by_source[ref.topic]
        pp = PartitionPlan(
            ref.log_dir, ref.topic, ref.partition, tp.target_topic, ref.partition,
            transactional_id(cluster_id, tp.target_topic, ref.partition),
            replay_group(cluster_id, tp.target_topic), source_id=source_of(ref),
        )  # fmt: skip
        committed, pending = progress.get(tp.target_topic, ({}, set()))
        pp.progress, pp.pending = committed.get(ref.partition), ref.partition in pending
        pp.copies = several.get((ref.topic, ref.partition), ([], None))[0]
        _count(pp, PartitionSource.of(ref, opts, read.decisions), compression)
        if tp.exists and tp.partitions is not None and ref.partition >= tp.partitions:
            pp.conflicts.append(
                Conflict(
                    "TOO_FEW_PARTITIONS",
                    f"{pp.name}: {tp.target_topic} has {tp.partitions} partitions, no partition "
                    f"{ref.partition}",
                )
            )
        elif tp.exists:
            pp.target_offsets = target.watermarks(tp.target_topic, ref.partition)
            _check_target(pp, target)
        check_partition(pp, tp.effective)
        plan.partitions.append(pp)
    return plan


def _rehashed_partition(
    ref: Any,
    tp: TopicPlan,
    target: Target,
    cluster_id: str,
    opts: ReadOptions,
    decisions: Any,
    compression: str = SOURCE,
) -> PartitionPlan:
    """One source partition's plan under the ``default`` partitioner: its progress in its own group."""
    from logdoctor.logdir.identity import source_of
    from logdoctor.replay.source import PartitionSource

    pp = PartitionPlan(
        ref.log_dir, ref.topic, ref.partition, tp.target_topic, -1,
        rehash_transactional_id(cluster_id, ref.topic, ref.partition, tp.target_topic),
        rehash_group(cluster_id, ref.topic, ref.partition, tp.target_topic),
        partitioner=DEFAULT, target_partitions=tp.partitions,
        lease_group=replay_group(cluster_id, tp.target_topic), source_id=source_of(ref),
    )  # fmt: skip
    if tp.exists:
        committed, pending = target.committed_progress(pp.group, tp.target_topic, [0])
        pp.progress, pp.pending = committed.get(0), 0 in pending
    prog = pp.progress
    if prog is not None and prog.of_other_source(ref.topic, ref.partition, pp.source_id):
        pp.conflicts.append(Conflict("PROGRESS_OF_OTHER_SOURCE", other_source(pp, prog)))
    elif prog is not None and prog.partitions != tp.partitions:
        pp.conflicts.append(
            Conflict(
                "PARTITION_COUNT_CHANGED",
                f"{pp.name}: its first {prog.records} records were hashed over "
                f"{prog.partitions if prog.partitions is not None else 'no'} partitions of "
                f"{tp.target_topic}, which has {tp.partitions} now: the rest would land elsewhere",
            )
        )
    _count(pp, PartitionSource.of(ref, opts, decisions), compression)
    check_partition(pp, tp.effective)
    return pp


def _check_rehashed_target(tp: TopicPlan, pps: list[PartitionPlan], target: Target) -> None:
    """``TARGET_NOT_EMPTY`` for each target partition with records while no source partition of the topic
    has a replay's progress (committed or pending): a re-hashed replay begun owns the whole topic. An open
    transaction's records are noted as :func:`_check_target` notes them."""
    if not tp.exists or tp.partitions is None or any(p.progress is not None or p.pending for p in pps):
        return
    for partition in range(tp.partitions):
        low, high = target.watermarks(tp.target_topic, partition)
        if high <= low:
            continue
        stable = target.last_stable(tp.target_topic, partition)
        if stable < high:  # noted, read no further: --apply fences the topic's producers, then refuses
            tp.open_transactions[partition] = (stable, high)
        if target.has_records(tp.target_topic, partition, low, stable):
            tp.conflicts.append(
                Conflict(
                    "TARGET_NOT_EMPTY",
                    f"{tp.target_topic}-{partition} is not empty (offsets {low}-{high - 1}) and no source "
                    f"partition of {tp.source_topic} holds a re-hashed replay's progress there",
                )
            )


def _check_options(opts: ReadOptions) -> None:
    from logdoctor.logdir.discovery import DiscoveryError

    if opts.view != "history":
        raise DiscoveryError(f"view {opts.view}: a replay sends the records as they are (view history)")
    if opts.typed or opts.decoded:
        raise DiscoveryError(
            "a replay sends keys and values as the bytes they are: no decoder, no typed tables"
        )
    if opts.include_control:
        raise DiscoveryError("control records are never replayed: the target's transactions write their own")


def _check_target(pp: PartitionPlan, target: Target) -> None:
    """A target partition with records: ours to resume (the progress of this source partition), else a
    conflict. Records no ``read_committed`` consumer reads (a killed first transaction's) are none; an open
    transaction's, where no progress is, are noted (``target_open_from``) and read no further: the plan
    fences no producer, ``--apply`` does (:func:`logdoctor.replay.apply.replay_partition`)."""
    assert pp.target_offsets is not None
    low, high = pp.target_offsets
    prog = pp.progress
    if prog is not None and prog.of_other_source(pp.source_topic, pp.source_partition, pp.source_id):
        pp.conflicts.append(Conflict("PROGRESS_OF_OTHER_SOURCE", other_source(pp, prog)))
        return
    if prog is not None or high <= low:
        return
    stable = target.last_stable(pp.target_topic, pp.target_partition)
    pp.target_open_from = stable if stable < high else None  # an open transaction holds stable..high
    if not pp.pending and target.has_records(pp.target_topic, pp.target_partition, low, stable):
        pp.conflicts.append(  # (pending: this replay's first transaction holds the partition's progress)
            Conflict(
                "TARGET_NOT_EMPTY",
                f"{pp.target_topic}-{pp.target_partition} is not empty (offsets {low}-{high - 1}) and holds "
                f"no replay of {pp.name}",
            )
        )


def other_source(pp: PartitionPlan, prog: Progress) -> str:
    """What ``PROGRESS_OF_OTHER_SOURCE`` says (the plan's conflict, and apply's refusal when the progress
    changed since the plan)."""
    where = (
        f"group {pp.group} ({pp.target_topic})"
        if pp.rehashed
        else f"{pp.target_topic}-{pp.target_partition} (group {pp.group})"
    )
    return (
        f"{where} holds the replay of {prog.source_text()}, not of {pp.name} of "
        f"{describe_source(pp.source_id)}: replay into another topic (--topic-map {pp.source_topic}=NEW)"
    )


def _count(pp: PartitionPlan, source: Any, compression: str = SOURCE) -> None:
    """What the plan says of the records to send (counts, bytes, offsets, timestamps, the widest record's
    batch: :func:`logdoctor.replay.source.alone_batch_bytes`), over every record once, as columns of whole
    batches (:meth:`logdoctor.replay.source.PartitionSource.sizes`: the plan reads the whole source)."""
    from logdoctor.replay.source import HEADER_LENGTHS, alone_batch_bytes

    resume = pp.progress.next_source_offset if pp.progress is not None else None
    hashed: dict[bytes | None, int] = {}
    rehash = bool(pp.rehashed and pp.target_partitions)
    target_of, spread = pp.target_of, pp.target_records
    records = nbytes = remaining = remaining_bytes = no_timestamp = 0
    first = last = low = high = None
    widest = None  # (size, headers) of the record whose batch alone is widest
    wide = -1
    for run in source.sizes(keys=rehash):
        offsets, timestamps, sizes, headers = run.offsets, run.timestamps, run.sizes, run.headers
        records += len(offsets)
        nbytes += int(sizes.sum())
        left = slice(None) if resume is None else offsets >= resume
        remaining += int(offsets[left].size)
        remaining_bytes += int(sizes[left].sum())
        if rehash:
            for k, go in zip(run.keys, offsets >= (resume or 0), strict=True):
                if not go:
                    continue
                at = hashed.get(k)
                if at is None:  # keys repeat: each hashed once per 65536 keys
                    if len(hashed) >= 65536:
                        hashed.clear()
                    at = hashed[k] = target_of(k)
                spread[at] = spread.get(at, 0) + 1
        if first is None:
            first = int(offsets[0])
        last = int(offsets[-1])
        widths = sizes + HEADER_LENGTHS * headers  # alone_batch_bytes' order
        i = int(widths.argmax())  # the first of the widest
        if widths[i] > wide:
            wide, widest = int(widths[i]), (int(sizes[i]), int(headers[i]))
        # librdkafka sends 0 as "now": a timestamp is kept only from 1 ms after the epoch
        stamped = timestamps[timestamps > 0]
        no_timestamp += len(timestamps) - len(stamped)
        if len(stamped):
            lo, hi = int(stamped.min()), int(stamped.max())
            low = lo if low is None else min(low, lo)
            high = hi if high is None else max(high, hi)
    pp.records += records
    pp.bytes += nbytes
    pp.remaining_records += remaining
    pp.remaining_bytes += remaining_bytes
    pp.no_timestamp += no_timestamp
    if first is not None and pp.first_offset is None:
        pp.first_offset = first
    if last is not None:
        pp.last_offset = last
    if widest is not None:
        pp.max_batch_bytes = max(pp.max_batch_bytes, alone_batch_bytes(*widest))
    if low is not None:
        pp.min_timestamp = low if pp.min_timestamp is None else min(pp.min_timestamp, low)
    if high is not None:
        pp.max_timestamp = high if pp.max_timestamp is None else max(pp.max_timestamp, high)
    pp.problems = list(source.problems)
    pp.source_compression = source.codec  # of every record of the partition, a resumed run's too
    pp.compression = (pp.source_compression or "none") if compression == SOURCE else compression
    txns = source.txns
    if txns is not None:
        pp.without_marker = [t.without_marker_json() for t in txns.transactions if t.marker_offset is None]
        held = txns.open_transactions()
        if source.opts.isolation_level == READ_COMMITTED and (held or txns.cut_at is not None):
            left = count_left_out(source.ref, txns, source.opts.upto_high_watermark, source.start, source.end)
            pp.held_back = left.open + left.above_stable if held else 0
            if txns.cut_at is not None:
                pp.cut_end = txns.log_end_offset if txns.cut_end is None else txns.cut_end
                pp.cut_left_out = left.after_cut
    if pp.no_timestamp:
        pp.conflicts.append(
            Conflict(
                "NO_TIMESTAMP",
                f"{pp.name}: {pp.no_timestamp} records have no timestamp (magic 0) or 0: they get the "
                "producer's time",
            )
        )

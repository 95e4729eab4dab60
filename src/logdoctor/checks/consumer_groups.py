"""CONSUMER_OFFSET_OUT_OF_RANGE: consumer groups whose committed offset lies outside their partition's log.

The committed offsets are those the group coordinator loads from ``__consumer_offsets`` (K:group-coordinator/
.../OffsetMetadataManager.java ``replay`` and ``replayEndTransactionMarker``; the same as the classic
K:core/.../coordinator/group/GroupMetadataManager.scala ``loadGroupsAndOffsets``), replayed here from the log
start of each ``__consumer_offsets`` partition to its end:

- an OffsetCommit record (key types 0 and 1) with a value outside a transaction (no producer id) is the
  group's committed offset for that topic and partition (the last one wins); inside a transaction it is
  pending for its producer until that producer's COMMIT marker (then it wins unless a later plain commit
  already did: the larger record offset) or ABORT marker (dropped);
- a tombstone (null value) deletes the committed offset and the pending ones of the group's open
  transactions;
- group records (GroupMetadata, the KIP-848 ConsumerGroup* and ShareGroup* records) hold no offsets: a group
  tombstone leaves its offsets (the coordinator writes their tombstones itself when it deletes a group).

A committed offset is compared with the log range ``[log start, log end]`` of its partition where that
partition is among the inputs (of several replicas, the one with the newest leader epoch, then the longest).
A consumer fetching below the log start or beyond the log end gets OFFSET_OUT_OF_RANGE and resets by
``auto.offset.reset`` (K:clients/.../consumer/internals/AbstractFetch / SubscriptionState
``resetStrategy``): ``earliest`` resumes at the log start, ``latest`` at the log end. What each skips or
reads again is counted in offsets (a compacted or transactional partition has fewer records than offsets).
A committed offset of -1 (no offset) is not a commit.

Kafka 4.1+ writes the topic id into every commit (OffsetCommitValue v4 ``topicId``). A commit whose topic id
is not the partition's (``partition.metadata``) was made for an earlier topic of the same name: a consumer
that fetches its offsets by topic id (OffsetFetch v10+) gets no offset for it and resets by
``auto.offset.reset``; one that fetches by name gets this offset (K:group-coordinator/.../
OffsetMetadataManager.java ``isMismatchedTopicId``, 4.2.0). Out-of-range findings name both topic ids then.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.cross_dir import BrokerGroup
from logdoctor.checks.findings import Finding
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import latest_epoch
from logdoctor.logdir.internal_records import records_of
from logdoctor.logdir.names import CONSUMER_OFFSETS_TOPIC, DirKind

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "Commit",
    "OutOfRange",
    "choice_key",
    "clusters_of",
    "commit_rows",
    "committed_offsets",
    "finding_of_row",
    "judge",
    "log_range",
    "moved_out_of_range",
    "offsets_out_of_range",
    "plan_note",
    "records_of",
    "replay_records",
]

_OFFSET_COMMIT_TYPES = (0, 1)
#: the record type of each kind of group's metadata record in __consumer_offsets (K:group-coordinator/
#: src/main/resources/common/message/*Key.json, 4.2.0: GroupMetadataKey 2, ConsumerGroupMetadataKey 3,
#: ShareGroupMetadataKey 11, StreamsGroupMetadataKey 17): the group type the census lists
GROUP_TYPES = {2: "classic", 3: "consumer", 11: "share", 17: "streams"}
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID: no topic id


@dataclass(frozen=True, slots=True)
class Commit:
    """A group's committed offset for one partition, as the coordinator loads it."""

    group: str
    topic: str
    partition: int
    offset: int
    commit_timestamp: int
    record_offset: int  # where in __consumer_offsets-N the commit record is
    source: str  # the __consumer_offsets partition folder
    topic_id: str | None = None  # the topic id the commit was made for (Kafka 4.1+), None: not written
    metadata: str | None = None  # the committing client's metadata string (OffsetCommitValue metadata)


@dataclass(frozen=True, slots=True)
class OutOfRange:
    """A commit outside ``[log_start_offset, log_end_offset]`` and what each reset policy does."""

    commit: Commit
    log_start_offset: int
    log_end_offset: int
    topic_id: str | None = None  # the partition's topic id (partition.metadata), None: not known

    @property
    def below(self) -> bool:
        return self.commit.offset < self.log_start_offset

    @property
    def earliest_skips(self) -> int:
        """Offsets ``earliest`` never reads: those deleted between the commit and the log start."""
        return max(0, self.log_start_offset - self.commit.offset)

    @property
    def earliest_rereads(self) -> int:
        """Offsets ``earliest`` reads again: the whole log, when the commit was beyond its end."""
        return 0 if self.below else self.log_end_offset - self.log_start_offset

    @property
    def latest_skips(self) -> int:
        """Offsets ``latest`` never reads: from the commit (or the log start) to the log end."""
        return self.log_end_offset - self.commit.offset if self.below else 0

    def details(self) -> dict[str, object]:
        c = self.commit
        return {
            "group": c.group,
            "topic": c.topic,
            "partition": c.partition,
            "committed_offset": c.offset,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "earliest_skips": self.earliest_skips,
            "earliest_rereads": self.earliest_rereads,
            "latest_skips": self.latest_skips,
            "latest_rereads": 0,  # ``latest`` resumes at the log end: nothing read again
            "commit_timestamp": c.commit_timestamp,
            "consumer_offsets_partition": c.source,
            "commit_record_offset": c.record_offset,
            **self._topic_ids(),
        }

    def _topic_ids(self) -> dict[str, object]:
        c = self.commit
        if c.topic_id is None:
            return {}
        earlier = self.topic_id is not None and self.topic_id != c.topic_id
        return {"commit_topic_id": c.topic_id, "topic_id": self.topic_id, "commit_for_earlier_topic": earlier}


def judge(commit: Commit, log_start_offset: int, log_end_offset: int) -> OutOfRange | None:
    """The commit against a log range: None when a consumer can fetch from it (the log end included)."""
    if commit.offset < 0 or log_start_offset <= commit.offset <= log_end_offset:
        return None
    return OutOfRange(commit, log_start_offset, log_end_offset)


_Key = tuple[str, str, int]


def replay_records(
    records: Iterable[tuple[int, int, bool, bytes | None, bytes | None, int]],
    source: str = "",
    group_types: dict[str, str] | None = None,
) -> dict[_Key, Commit]:
    """The coordinator's replay (the module docstring) over ``(record offset, producer id, is control, key,
    value, control type)`` in log order (control type: 0 ABORT, 1 COMMIT, -1 for a data record).

    ``group_types``, when given, gets group id -> its type (:data:`GROUP_TYPES`) from the last metadata
    record of each group (a tombstone removes it): streams groups (KIP-1071), share groups, KIP-848 consumer
    groups (those subscribing by regex too) and classic ones."""
    from logdoctor.formats.internal import decode_consumer_offsets

    offsets: dict[_Key, Commit] = {}
    pending: dict[int, dict[_Key, Commit]] = {}
    for offset, pid, is_control, key, value, control_type in records:
        if is_control:
            done = pending.pop(pid, None)
            if done is not None and control_type == 1:
                for k, c in done.items():
                    old = offsets.get(k)
                    if old is None or c.record_offset > old.record_offset:
                        offsets[k] = c
            continue
        if key is None or len(key) < 2:
            continue
        record_type = int.from_bytes(key[:2], "big", signed=True)
        if group_types is not None and record_type in GROUP_TYPES:
            try:  # the key alone (a group id): the value's layout does not matter here
                group = decode_consumer_offsets(key, None, source=source)["key"][
                    "group" if record_type == 2 else "group_id"
                ]
            except FormatError:
                continue
            if value is None:
                group_types.pop(group, None)
            else:
                group_types[group] = GROUP_TYPES[record_type]
            continue
        if record_type not in _OFFSET_COMMIT_TYPES:
            continue
        try:
            rec = decode_consumer_offsets(key, value, source=source, decode_protocol=False)
        except FormatError:
            continue  # a record the coordinator could not load either
        k = (rec["key"]["group"], rec["key"]["topic"], rec["key"]["partition"])
        v = rec["value"]
        if v is None:
            offsets.pop(k, None)
            for p in pending.values():
                p.pop(k, None)
            continue
        topic_id = v.get("topic_id")
        commit = Commit(
            k[0],
            k[1],
            k[2],
            v["offset"],
            v["commit_timestamp"],
            offset,
            source,
            None if topic_id in (None, _ZERO_UUID) else topic_id,
            v.get("metadata"),
        )
        if pid < 0:
            offsets[k] = commit
        else:
            pending.setdefault(pid, {})[k] = commit
    return offsets


def committed_offsets(
    consumer_offsets_partitions: Iterable[PartitionReport], group_types: dict[str, str] | None = None
) -> list[Commit]:
    """Every committed offset of the given ``__consumer_offsets`` partition replicas (one per partition),
    replayed from each one's log start to its log end (a plan's new end: what the coordinator loads after
    a truncation); ``group_types`` as :func:`replay_records` fills it."""
    out: list[Commit] = []
    for p in consumer_offsets_partitions:
        start = p.log_start_offset if p.log_start_offset is not None else (p.first_base_offset or 0)
        end = p.log_end_offset
        rows = records_of(p.path, start)
        if end is not None:
            rows = (r for r in rows if r[0] < end)
        out.extend(replay_records(rows, p.path, group_types).values())
    return out


def clusters_of(groups: list[BrokerGroup]) -> dict[str, str | None]:
    """log dir -> the cluster its partitions are compared within: its cluster id, or, when one (cluster
    id, node id) is several brokers (a docker-compose default, each with its own metadata log:
    checks.cross_dir.broker_groups), its own broker alone (clusters that cannot be told apart)."""
    keys = [g.key for g in groups if g.key is not None]
    ambiguous = len(keys) != len(set(keys))
    out: dict[str, str | None] = {}
    for i, g in enumerate(groups):
        cluster = None if g.key is None else g.key[0]
        for d in g.dirs:
            out[d] = f"{cluster}#broker{i}" if ambiguous else cluster
    return out


def choice_key(latest_epoch: int | None, log_end_offset: int | None, path: str) -> tuple[object, ...]:
    """The order in which a consumer's replica is chosen of several (the smallest first): the reference
    replica's order (:func:`logdoctor.logdir.divergence.reference_key`: the newest leader epoch, then the
    longest log), then the path (replicas alike in both: one, always the same). The census's SQL orders its
    replica rows by the same three (census_sql.consumer_ranges)."""
    from logdoctor.logdir.divergence import reference_key

    return reference_key(latest_epoch, log_end_offset, path)


def log_range(p: PartitionReport) -> tuple[int, int] | None:
    """``(log start, log end)`` a consumer of the replica sees when its broker has loaded it; a folder
    without segments gets one at its log start checkpoint entry (0 without one: K:storage/.../log/
    LogLoader.java load), so its range is that one offset. None: not known here (a tiered partition with
    no local segment: its end is in the remote tier; an unreadable folder)."""
    if p.log_end_offset is not None:
        start = p.log_start_offset if p.log_start_offset is not None else (p.first_base_offset or 0)
        return start, p.log_end_offset
    denied = any(f.code == "PERMISSION_DENIED" for f in p.findings)
    if p.segments == 0 and not p.remote_log_enabled and not denied:
        start = p.log_start_offset if p.log_start_offset is not None else 0
        return start, start
    return None


def replicas_by_partition(
    parts: Iterable[PartitionReport], clusters: dict[str, str | None]
) -> dict[tuple[str | None, str, int], PartitionReport]:
    """(cluster id, topic, partition) -> the replica whose range a consumer sees: of several, the leader's
    as far as the files tell (:func:`choice_key`)."""
    by: dict[tuple[str | None, str, int], list[PartitionReport]] = {}
    for p in parts:
        if p.kind == DirKind.LOG.value and log_range(p) is not None:
            by.setdefault((clusters.get(p.log_dir), p.topic, p.partition), []).append(p)
    return {
        k: min(v, key=lambda p: choice_key(latest_epoch(p.leader_epochs), p.log_end_offset, p.path))
        for k, v in by.items()
    }


def out_of_range(
    parts: list[PartitionReport], clusters: dict[str, str | None]
) -> list[tuple[OutOfRange, PartitionReport]]:
    """Every commit of the inputs' ``__consumer_offsets`` outside its partition's log range, with the
    replica it was compared with."""
    replicas = replicas_by_partition(parts, clusters)
    out: list[tuple[OutOfRange, PartitionReport]] = []
    for (cluster, topic, _n), co in sorted(replicas.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        if topic != CONSUMER_OFFSETS_TOPIC:
            continue
        for c in committed_offsets([co]):
            target = replicas.get((cluster, c.topic, c.partition))
            rng = None if target is None else log_range(target)
            if target is None or rng is None:
                continue
            o = judge(c, *rng)
            if o is not None:
                out.append((dataclasses.replace(o, topic_id=target.topic_id), target))
    return out


def moved_out_of_range(
    parts: list[PartitionReport],
    clusters: dict[str, str | None],
    new_ranges: dict[str, tuple[int, int]],
) -> list[OutOfRange]:
    """The commits out of range once the log ranges change (partition folder -> its ``(log start, log
    end)`` after a plan: a truncation, a raised log start, a restore), of the partitions that change. A
    commit out of range already (e.g. beyond the end the scan reports for a log whose recovery truncates
    it) is listed too: the plan is what makes it so on disk. A truncated ``__consumer_offsets`` partition
    moves groups too: the commits after its new end are gone, so an older commit (or one a deleted
    group's tombstone had removed) is what the coordinator loads."""
    changed = [
        dataclasses.replace(p, log_start_offset=new_ranges[p.path][0], log_end_offset=new_ranges[p.path][1])
        if p.path in new_ranges
        else p
        for p in parts
    ]
    return [
        o for o, t in out_of_range(changed, clusters) if t.path in new_ranges or o.commit.source in new_ranges
    ]


def plan_note(o: OutOfRange) -> str:
    """The dry run's line for a group a plan moves out of range."""
    c = o.commit
    side = "below its new log start" if o.below else "beyond its new log end"
    return (
        f"consumer group {c.group}: its committed offset {c.offset} of {c.topic}-{c.partition} will be "
        f"{side} "
        f"(log start {o.log_start_offset}, log end {o.log_end_offset}): with auto.offset.reset=earliest it "
        f"skips {o.earliest_skips} and reads {o.earliest_rereads} offsets again, with latest it skips "
        f"{o.latest_skips} (CONSUMER_OFFSET_OUT_OF_RANGE once applied)"
    )


def _lag_bytes_and_ms(p: PartitionReport, committed: int) -> tuple[int | None, int | None]:
    """Bytes of the replica's log from the batch holding ``committed`` to its end, and the time from that
    batch's first timestamp to the last batch's largest one (the age of the oldest record the group has
    not read, at the newest record's time); (0, 0) at the log end; None where unknown (outside the log,
    an unreadable batch)."""
    from logdoctor.logdir.model import Partition
    from logdoctor.logdir.names import parse_partition_dir

    rng = log_range(p)
    if rng is None or not rng[0] <= committed <= rng[1]:
        return None, None
    if committed == rng[1]:
        return 0, 0
    name = parse_partition_dir(os.path.basename(p.path))
    if name is None:
        return None, None
    segs = Partition(None, p.path, name).segments
    i = max((k for k, s in enumerate(segs) if s.base_offset <= committed), default=0)
    try:
        start = next(b for b in segs[i].batches() if b.last_offset >= committed)
        last = None
        for b in segs[-1].batches():
            last = b
    except (FormatError, OSError, StopIteration):
        return None, None
    if last is None:
        return None, None
    nbytes = segs[i].size - start.position + sum(s.size for s in segs[i + 1 :])
    first_ts = start.first_timestamp if start.magic >= 2 else start.max_timestamp
    return nbytes, max(0, last.max_timestamp - first_ts)


def commit_rows(parts: list[PartitionReport]) -> list[dict[str, object]]:
    """One row per committed offset of the given replicas' ``__consumer_offsets`` (one broker's: the
    inventory's and census's ``commit`` rows), with the lag in bytes and time where the partition is
    among them (:func:`_lag_bytes_and_ms`); the census computes the lag in records across brokers."""
    replicas = replicas_by_partition(parts, {})
    out: list[dict[str, object]] = []
    ordered = sorted(replicas.items(), key=lambda kv: kv[0][2])
    cos = [p for (_c, t, _n), p in ordered if t == CONSUMER_OFFSETS_TOPIC]
    types: dict[str, str] = {}
    for c in committed_offsets(cos, types):
        target = replicas.get((None, c.topic, c.partition))
        nbytes, ms = _lag_bytes_and_ms(target, c.offset) if target is not None else (None, None)
        out.append(
            {
                "group": c.group,
                "group_type": types.get(c.group),
                "topic": c.topic,
                "partition": c.partition,
                "committed_offset": c.offset,
                "commit_timestamp": c.commit_timestamp,
                "lag_bytes": nbytes,
                "lag_ms": ms,
                "commit_source": c.source,
                "commit_record_offset": c.record_offset,
                "commit_topic_id": c.topic_id,
            }
        )
    return out


def finding_of_row(row: Mapping[str, Any]) -> Finding | None:
    """CONSUMER_OFFSET_OUT_OF_RANGE of a census consumer-group row (census_sql.consumer_group_table: a
    commit of the chosen ``__consumer_offsets`` replica, and the log range of the replica :func:`choice_key`
    chooses for its partition), judged by :func:`judge` and made by :func:`finding` as the scan's, on the
    chosen replica's folder and log dir; None when in range or when the range is not known."""
    start, end = row.get("log_start_offset"), row.get("log_end_offset")
    if start is None or end is None or row.get("committed_offset") is None:
        return None
    commit = Commit(
        str(row["group"]),
        str(row["topic"]),
        int(row["partition"]),
        int(row["committed_offset"]),
        int(row["commit_timestamp"] if row.get("commit_timestamp") is not None else -1),
        int(row["commit_record_offset"] if row.get("commit_record_offset") is not None else -1),
        str(row.get("commit_source") or ""),
        row.get("commit_topic_id"),
    )
    o = judge(commit, int(start), int(end))
    if o is None:
        return None
    return finding(
        dataclasses.replace(o, topic_id=row.get("topic_id")), str(row["path"]), str(row["log_dir"])
    )


def offsets_out_of_range(parts: list[PartitionReport], clusters: dict[str, str | None]) -> list[Finding]:
    """One CONSUMER_OFFSET_OUT_OF_RANGE per group and partition whose commit is outside the log."""
    return [finding(o, target.path, target.log_dir) for o, target in out_of_range(parts, clusters)]


def finding(o: OutOfRange, path: str, logdir: str) -> Finding:
    c = o.commit
    if o.below:
        where = "below the log range"
        earliest = f"resumes at {o.log_start_offset} and never reads the {o.earliest_skips} offsets deleted"
        latest = f"resumes at {o.log_end_offset} and skips {o.latest_skips} offsets"
    else:
        where = "beyond the log range"
        earliest = f"resumes at {o.log_start_offset} and reads {o.earliest_rereads} offsets again"
        latest = f"resumes at {o.log_end_offset} (nothing skipped, nothing read again)"
    if o.details().get("commit_for_earlier_topic"):
        where += (
            f" (a commit for an earlier topic of this name, id {c.topic_id}: consumers fetching by "
            "topic id get no offset and reset)"
        )
    return catalog.make(
        "CONSUMER_OFFSET_OUT_OF_RANGE",
        path,
        logdir=logdir,
        offset=c.offset,
        group=c.group,
        committed_offset=c.offset,
        topic=c.topic,
        partition=c.partition,
        where=where,
        log_start_offset=o.log_start_offset,
        log_end_offset=o.log_end_offset,
        earliest_effect=earliest,
        latest_effect=latest,
        details=o.details(),
    )

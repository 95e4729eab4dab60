"""REPLICA_DIVERGED: replicas of one partition on several brokers whose logs diverged (an unclean leader
election), and exactly what each follower loses when the brokers start.

The replica with the newest leader epoch (the last entry of its leader-epoch-checkpoint) is the leader:
the controller raised the epoch when it elected it (K:core/.../cluster/Partition.scala makeLeader); of
several with that epoch, the one with the highest log end offset (the reference replica of every rule:
:func:`logdoctor.logdir.divergence.reference_key`). Every other replica is truncated by the
follower's leader-epoch rule (:func:`logdoctor.logdir.divergence.follower_truncation`); what lies
between that offset and its log end offset is gone for good once it fetches. A replica that only lags
(truncated at its log end) gets no finding. Replicas are compared only across brokers
(:func:`checks.cross_dir.broker_groups`: (cluster id, node id), each once) of one cluster id, with the same
topic id (or none on every side), never the metadata log (KRaft's own fetch), and only when each has a
leader epoch cache.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.cross_dir import BrokerGroup
from logdoctor.checks.findings import Finding
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import latest_epoch
from logdoctor.logdir.divergence import (
    FollowerTruncation,
    ReplicaLog,
    follower_truncation,
    records_from,
    reference_key,
)
from logdoctor.logdir.names import METADATA_TOPIC, DirKind

__all__ = [
    "LOST_RECORDS_DIR",
    "LostRecords",
    "Replica",
    "is_compared",
    "lost_records",
    "lost_records_out",
    "partition_diverged",
    "replica_of",
    "replicas_diverged",
]


@dataclass(frozen=True, slots=True)
class LostRecords:
    """The records of one replica at and after a truncation offset: how many and which offsets
    (:func:`logdoctor.logdir.divergence.records_from`), their timestamps and the leader epochs they were
    written in (the batches' partition leader epoch)."""

    records: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    leader_epochs: tuple[int, ...]
    bytes: int = 0
    error: str | None = None  # a batch that could not be read (what precedes it is counted)


def lost_records(path: str, start: int) -> LostRecords:
    """What a truncation of the partition folder ``path`` to ``start`` removes (records at offsets >=
    ``start``), with their time range and leader epochs."""
    from logdoctor.logdir.model import Partition
    from logdoctor.logdir.names import parse_partition_dir

    name = parse_partition_dir(os.path.basename(path))
    if name is None:
        return LostRecords(0, None, None, None, None, (), 0, f"{path} is not a partition folder")
    part = Partition(None, path, name)
    held = records_from(part, start)
    t_min = t_max = None
    epochs: set[int] = set()
    error = "; ".join(held.unreadable) or None
    segs = part.segments
    for i, seg in enumerate(segs):
        if i + 1 < len(segs) and segs[i + 1].base_offset <= start:
            continue
        try:
            for b in seg.batches():
                if b.last_offset < start:
                    continue
                if b.magic >= 2:
                    epochs.add(b.partition_leader_epoch)
                for r in b.records():
                    if r.offset >= start:
                        t_min = r.timestamp if t_min is None else min(t_min, r.timestamp)
                        t_max = r.timestamp if t_max is None else max(t_max, r.timestamp)
        except (FormatError, OSError):
            break  # records_from names the unreadable segment
    first, last = held.first_offset, held.last_offset
    return LostRecords(held.records, first, last, t_min, t_max, tuple(sorted(epochs)), held.bytes, error)


#: the folder, under the directory a salvage export is run from, that its printed ``--out`` names
LOST_RECORDS_DIR = "lost-records"


def lost_records_out(path: str, start: int, end: int) -> str:
    """Where a salvage export (REPLICA_DIVERGED's, COMPACTION_KEYLESS_RECORDS') saves the offsets ``[start,
    end)`` of the partition folder ``path``: ``lost-records/<log dir as a name>/<partition>-<first>-<last>``,
    relative, so under the directory the printed command is run from. Never beside or inside the log dir:
    that is the disk being salvaged, perhaps full or failing, in folders the docs call read only (and a
    folder inside it the broker would take for a partition). The log dir's whole path, its separators made
    ``_``, keeps two brokers' salvages apart."""
    logdir = os.path.dirname(os.path.normpath(path)).strip(os.sep).replace(os.sep, "_") or "root"
    return f"{LOST_RECORDS_DIR}/{logdir}/{os.path.basename(os.path.normpath(path))}-{start}-{end - 1}"


@dataclass(frozen=True, slots=True)
class Replica:
    """What the divergence rule reads of one replica: from a scan's PartitionReport
    (:func:`replica_of`) or from a census's replicas table row (an inventory's, whose folder may be on
    another host). ``broker``: who holds it (a scan: the (cluster id, node id) of its broker group; a
    census: the broker's name)."""

    broker: object
    broker_name: str | None
    log_dir: str
    path: str
    topic: str
    partition: int
    topic_id: str | None
    leader_epochs: tuple[tuple[int, int], ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None


def replica_of(p: PartitionReport, broker: object, broker_name: str | None = None) -> Replica:
    assert p.log_end_offset is not None
    start = p.log_start_offset if p.log_start_offset is not None else (p.first_base_offset or 0)
    return Replica(
        broker, broker_name, p.log_dir, p.path, p.topic, p.partition, p.topic_id,
        tuple(p.leader_epochs), start, p.log_end_offset, p.high_watermark,
    )  # fmt: skip


def replicas_diverged(
    parts: list[PartitionReport], groups: list[BrokerGroup], clusters: dict[str, str | None]
) -> list[Finding]:
    """One REPLICA_DIVERGED per replica that loses records. ``groups``: the scanned dirs by broker;
    ``clusters``: log dir -> its cluster id. The rule itself is :func:`partition_diverged`, per
    partition (the census runs it on each partition group of its fleet)."""
    # a broker is its (cluster id, node id); one of them twice (a docker-compose default cluster id and
    # node id, each with its own metadata log: checks.cross_dir.broker_groups) means clusters that cannot
    # be told apart: no replica is compared. Dirs without a readable meta.properties: not compared.
    keys = [g.key for g in groups if g.key is not None]
    if len(keys) != len(set(keys)):
        return []
    broker_of = {d: g.key for g in groups if g.key is not None for d in g.dirs}
    if len(set(broker_of.values())) < 2:
        return []
    replicas: dict[tuple[str | None, str, int], list[Replica]] = defaultdict(list)
    for p in parts:
        if is_compared(p.kind, p.topic, bool(p.leader_epochs), p.log_end_offset) and p.log_dir in broker_of:
            key = (clusters.get(p.log_dir), p.topic, p.partition)
            replicas[key].append(replica_of(p, broker_of[p.log_dir]))
    out: list[Finding] = []
    for _key, ps in sorted(replicas.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        out.extend(partition_diverged(ps))
    return out


def is_compared(kind: str, topic: str, has_epochs: bool, log_end_offset: int | None) -> bool:
    """Whether a replica takes part in the comparison: a live log (never the metadata log, which
    KafkaRaftClient fetches by its own rules) with a leader epoch cache and a log end offset."""
    return kind == DirKind.LOG.value and topic != METADATA_TOPIC and has_epochs and log_end_offset is not None


def partition_diverged(ps: list[Replica]) -> list[Finding]:
    """REPLICA_DIVERGED of the replicas of one partition (of one cluster): the leader is the replica with
    the newest leader epoch (then the highest log end offset); every replica of another broker that
    its truncation costs records gets one finding. Replicas of one broker only, or of different topic ids
    (a topic deleted and created again), are not compared."""
    if len({p.broker for p in ps}) < 2:
        return []
    if len({p.topic_id for p in ps}) > 1:
        return []  # a topic deleted and created again, or an id known to one side only: not comparable
    leader = min(
        ps, key=lambda p: reference_key(latest_epoch(p.leader_epochs), p.log_end_offset, p.log_dir, p.path)
    )
    out: list[Finding] = []
    for p in sorted(ps, key=lambda p: (p.log_dir, p.path)):
        if p.broker == leader.broker:
            continue
        t = follower_truncation(_replica_log(p), _replica_log(leader))
        if t.lacks_from >= p.log_end_offset:  # only lags, or fetches back what it truncates
            continue
        out.append(_finding(p, leader, t))
    return out


def _node(p: Replica) -> str:
    """The node id of a replica's broker as kafka-topics.sh prints it (``Leader: N``): a scan's broker is
    its (cluster id, node id); a census names it ``broker-N`` (checks.replica_lag.broker_names)."""
    if isinstance(p.broker, tuple) and len(p.broker) == 2:
        return str(p.broker[1])
    name = p.broker_name or str(p.broker)
    return name.removeprefix("broker-").split("@")[0]


def _restart_fields(p: Replica, leader: Replica) -> dict[str, object]:
    """The restart order's words: who leads, and what the reference replica loses if this one is elected
    instead (the follower rule the other way round: the reference replica fetching from this one, which
    answers its own log end for any epoch at or above its latest, K:storage/.../epoch/
    LeaderEpochFileCache.java endOffsetFor)."""
    back = follower_truncation(_replica_log(leader), _replica_log(p))
    if back.lacks_from < leader.log_end_offset:
        end = leader.log_end_offset
        reverse = (
            f"if this replica is elected, the replica in {leader.log_dir} truncates to {back.offset} and "
            f"loses offsets {back.lacks_from} to {end - 1} ({end - back.lacks_from} offsets, written "
            "while it led), and if another stale replica is elected both lose theirs"
        )
    else:
        reverse = (
            f"if another stale replica is elected, this one still loses its records, and the replica in "
            f"{leader.log_dir} loses whatever it holds beyond the new leader's log"
        )
    node = _node(leader)
    return {
        "topic": p.topic,
        "partition": p.partition,
        "reverse": reverse,
        "restart_broker": f"broker {node}" if node.isdigit() else node,
        "leader_node": node,
    }


def _replica_log(p: Replica) -> ReplicaLog:
    return ReplicaLog(p.leader_epochs, p.log_start_offset, p.log_end_offset, p.high_watermark)


def _finding(p: Replica, leader: Replica, t: FollowerTruncation) -> Finding:
    """The finding of a replica that loses the records from ``t.lacks_from``: what they are when its folder
    is here; else (a census of inventories: the folder is on the broker's host, its records unread) the
    offsets it loses, its fix's export (run on the broker's host) saying how many records they are."""
    from logdoctor.checks.state.time_words import iso

    lost = lost_records(p.path, t.lacks_from) if os.path.isdir(p.path) else None
    end = p.log_end_offset
    first = lost.first_offset if lost is not None and lost.first_offset is not None else t.lacks_from
    last = lost.last_offset if lost is not None and lost.last_offset is not None else end - 1
    fields: dict[str, Any] = {
        "leader_epoch": latest_epoch(leader.leader_epochs),
        "own_epoch": latest_epoch(p.leader_epochs),
    }
    if lost is None:
        fields |= {
            "case": "census",
            "broker": p.broker_name or p.log_dir,
            "leader_broker": leader.broker_name or leader.log_dir,
            "offsets": end - t.lacks_from,
        }
    else:
        fields |= {
            "records_lost": lost.records,
            "times": (
                f", timestamps {lost.first_timestamp} ({iso(lost.first_timestamp)}) to {lost.last_timestamp} "
                f"({iso(lost.last_timestamp)})"
                if lost.first_timestamp is not None
                else ""
            ),
            "epochs": ", ".join(map(str, lost.leader_epochs)) or "unknown",
        }
    return catalog.make(
        "REPLICA_DIVERGED",
        p.path,
        logdir=p.log_dir,
        offset=t.offset,
        topic_partition=f"{p.topic}-{p.partition}",
        leader_logdir=leader.log_dir,
        truncate_to=t.offset,
        first=first,
        last=last,
        lost_from=t.lacks_from,
        lost_out=lost_records_out(p.path, t.lacks_from, end),
        log_end_offset=end,
        **fields,
        **_restart_fields(p, leader),
        details={
            "topic": p.topic,
            "partition": p.partition,
            "leader": leader.log_dir,
            "leader_epoch": fields["leader_epoch"],
            "leader_log_end_offset": leader.log_end_offset,
            "log_end_offset": end,
            "truncate_to": t.offset,
            "records_lost": None if lost is None else lost.records,
            "lost_offsets": [first, last],
            "lost_timestamps": [None, None] if lost is None else [lost.first_timestamp, lost.last_timestamp],
            "lost_leader_epochs": [] if lost is None else list(lost.leader_epochs),
            "lost_bytes": None if lost is None else lost.bytes,
            "rule": t.rule,
            **({"unreadable": lost.error} if lost is not None and lost.error else {}),
        },
    )

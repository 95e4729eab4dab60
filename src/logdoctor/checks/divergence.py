"""REPLICA_DIVERGED: replicas of one partition on several brokers whose logs diverged (an unclean leader
election), and exactly what each follower loses when the brokers start.

The replica with the newest leader epoch (the last entry of its leader-epoch-checkpoint) is the leader:
the controller raised the epoch when it elected it (K:core/.../cluster/Partition.scala makeLeader); of
several with that epoch, the one with the highest log end offset. Every other replica is truncated by the
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

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.cross_dir import BrokerGroup
from logdoctor.checks.findings import Finding
from logdoctor.errors import FormatError
from logdoctor.logdir.divergence import FollowerTruncation, ReplicaLog, follower_truncation, records_from
from logdoctor.logdir.names import METADATA_TOPIC, DirKind

__all__ = ["LostRecords", "lost_records", "lost_records_out", "replicas_diverged"]


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


def lost_records_out(path: str, start: int, end: int) -> str:
    """Where the REPLICA_DIVERGED fix saves the offsets ``[start, end)`` of the partition folder ``path``:
    beside its log dir (never inside it: the broker would take the folder for a partition)."""
    logdir = os.path.dirname(path)
    return f"{logdir}.lost-records/{os.path.basename(path)}-{start}-{end - 1}"


def _latest_epoch(p: PartitionReport) -> int:
    return max(e for e, _ in p.leader_epochs)


def replicas_diverged(
    parts: list[PartitionReport], groups: list[BrokerGroup], clusters: dict[str, str | None]
) -> list[Finding]:
    """One REPLICA_DIVERGED per replica that loses records. ``groups``: the scanned dirs by broker;
    ``clusters``: log dir -> its cluster id."""
    # a broker is its (cluster id, node id); one of them twice (a docker-compose default cluster id and
    # node id, each with its own metadata log: checks.cross_dir.broker_groups) means clusters that cannot
    # be told apart: no replica is compared. Dirs without a readable meta.properties: not compared.
    keys = [g.key for g in groups if g.key is not None]
    if len(keys) != len(set(keys)):
        return []
    broker_of = {d: g.key for g in groups if g.key is not None for d in g.dirs}
    if len(set(broker_of.values())) < 2:
        return []
    log = DirKind.LOG.value
    replicas: dict[tuple[str | None, str, int], list[PartitionReport]] = defaultdict(list)
    for p in parts:
        if (
            p.kind == log
            and p.topic != METADATA_TOPIC  # the Raft log: KafkaRaftClient's own fetch rules, not this
            and p.leader_epochs
            and p.log_end_offset is not None
            and p.log_dir in broker_of
        ):
            replicas[(clusters.get(p.log_dir), p.topic, p.partition)].append(p)
    out: list[Finding] = []
    for _key, ps in sorted(replicas.items(), key=lambda kv: (kv[0][1], kv[0][2])):
        if len({broker_of[p.log_dir] for p in ps}) < 2:
            continue
        if len({p.topic_id for p in ps}) > 1:
            continue  # a topic deleted and created again, or an id known to one side only: not comparable
        leader = max(ps, key=lambda p: (_latest_epoch(p), p.log_end_offset or 0))
        lead_broker = broker_of[leader.log_dir]
        for p in ps:
            if broker_of[p.log_dir] == lead_broker:
                continue
            assert p.log_end_offset is not None and leader.log_end_offset is not None
            t = follower_truncation(_replica_log(p), _replica_log(leader))
            if t.lacks_from >= p.log_end_offset:  # only lags, or fetches back what it truncates
                continue
            out.append(_finding(p, leader, t))
    return out


def _replica_log(p: PartitionReport) -> ReplicaLog:
    assert p.log_end_offset is not None
    start = p.log_start_offset if p.log_start_offset is not None else (p.first_base_offset or 0)
    return ReplicaLog(tuple(p.leader_epochs), start, p.log_end_offset, p.high_watermark)


def _finding(p: PartitionReport, leader: PartitionReport, t: FollowerTruncation) -> Finding:
    from logdoctor.checks.state import iso

    assert p.log_end_offset is not None
    lost = lost_records(p.path, t.lacks_from)
    first = lost.first_offset if lost.first_offset is not None else t.lacks_from
    last = lost.last_offset if lost.last_offset is not None else p.log_end_offset - 1
    tp = f"{p.topic}-{p.partition}"
    times = (
        f", timestamps {lost.first_timestamp} ({iso(lost.first_timestamp)}) to {lost.last_timestamp} "
        f"({iso(lost.last_timestamp)})"
        if lost.first_timestamp is not None
        else ""
    )
    return catalog.make(
        "REPLICA_DIVERGED",
        p.path,
        logdir=p.log_dir,
        offset=t.offset,
        topic_partition=tp,
        leader_logdir=leader.log_dir,
        leader_epoch=_latest_epoch(leader),
        own_epoch=_latest_epoch(p),
        truncate_to=t.offset,
        records_lost=lost.records,
        first=first,
        last=last,
        times=times,
        epochs=", ".join(map(str, lost.leader_epochs)) or "unknown",
        lost_from=t.lacks_from,
        lost_out=lost_records_out(p.path, t.lacks_from, p.log_end_offset),
        log_end_offset=p.log_end_offset,
        details={
            "topic": p.topic,
            "partition": p.partition,
            "leader": leader.log_dir,
            "leader_epoch": _latest_epoch(leader),
            "leader_log_end_offset": leader.log_end_offset,
            "log_end_offset": p.log_end_offset,
            "truncate_to": t.offset,
            "records_lost": lost.records,
            "lost_offsets": [first, last],
            "lost_timestamps": [lost.first_timestamp, lost.last_timestamp],
            "lost_leader_epochs": list(lost.leader_epochs),
            "lost_bytes": lost.bytes,
            "rule": t.rule,
            **({"unreadable": lost.error} if lost.error else {}),
        },
    )

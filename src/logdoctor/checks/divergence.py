"""REPLICA_DIVERGED: replicas of one partition on several brokers whose logs diverged (an unclean leader
election), and exactly what each follower loses when the brokers start.

The replica with the newest leader epoch (the last entry of its leader-epoch-checkpoint) is the leader:
the controller raised the epoch when it elected it (K:core/.../cluster/Partition.scala makeLeader); of
several with that epoch, the one with the highest log end offset. Every other replica is truncated by the
follower's leader-epoch rule (:mod:`logdoctor.checks.epoch_truncation`); what lies between that offset and
its log end offset is gone for good once it fetches. A replica that only lags (truncated at its log end)
gets no finding. Replicas are compared only across brokers (:func:`checks.cross_dir.broker_groups`) of one
cluster id, with the same topic id when both know one, and only when both have a leader epoch cache.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.cross_dir import BrokerGroup
from logdoctor.checks.epoch_truncation import Truncation, follower_truncation
from logdoctor.checks.findings import Finding
from logdoctor.errors import FormatError
from logdoctor.logdir.names import METADATA_TOPIC, DirKind

__all__ = ["LostRecords", "lost_records", "lost_records_out", "replicas_diverged"]


@dataclass(frozen=True, slots=True)
class LostRecords:
    """The batches of ``[start, log end)`` of one replica: records (control records included), offsets,
    timestamps and the leader epochs they were written in (from the batches' partition leader epoch)."""

    records: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None
    leader_epochs: tuple[int, ...]
    error: str | None = None  # a batch that could not be read (what precedes it is counted)


def lost_records(path: str, start: int) -> LostRecords:
    """What a truncation of the partition folder ``path`` to ``start`` removes: every batch whose last
    offset is at or above ``start`` (LogSegment.truncateTo cuts before the batch holding ``start``)."""
    from logdoctor.logdir.model import Partition
    from logdoctor.logdir.names import parse_partition_dir

    name = parse_partition_dir(os.path.basename(path))
    if name is None:
        return LostRecords(0, None, None, None, None, (), f"{path} is not a partition folder")
    part = Partition(None, path, name)
    segs = part.segments
    count, first, last, t_min, t_max = 0, None, None, None, None
    epochs: set[int] = set()
    error = None
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
        if nxt is not None and nxt <= start:
            continue
        try:
            for b in seg.batches():
                if b.last_offset < start:
                    continue
                count += b.record_count
                first = b.base_offset if first is None else first
                last = b.last_offset
                if b.magic >= 2:
                    epochs.add(b.partition_leader_epoch)
                for r in b.records():
                    ts = r.timestamp
                    t_min = ts if t_min is None else min(t_min, ts)
                    t_max = ts if t_max is None else max(t_max, ts)
        except FormatError as e:
            error = str(e)
            break
    return LostRecords(count, first, last, t_min, t_max, tuple(sorted(epochs)), error)


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
            t = follower_truncation(
                leader.leader_epochs,
                leader.log_end_offset,
                p.leader_epochs,
                p.log_end_offset,
                p.high_watermark,
            )
            if not t.removes(p.log_end_offset):
                continue
            out.append(_finding(p, leader, t))
    return out


def _finding(p: PartitionReport, leader: PartitionReport, t: Truncation) -> Finding:
    from logdoctor.checks.state import iso

    assert p.log_end_offset is not None
    lost = lost_records(p.path, t.offset)
    first = lost.first_offset if lost.first_offset is not None else t.offset
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
        lost_out=lost_records_out(p.path, t.offset, p.log_end_offset),
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
            "truncated_to_high_watermark": t.via_high_watermark,
            **({"unreadable": lost.error} if lost.error else {}),
        },
    )

"""REPLICA_LAG: a replica behind the reference replica of its partition, on another broker. One rule,
run by the scan of several brokers' log dirs (:func:`replicas_lagging`, over its partition reports) and by
the census (:mod:`logdoctor.spark.census_sql` computes the same numbers in Spark SQL over the fleet's
replicas and makes each finding with :func:`lag_finding`; :mod:`logdoctor.spark.census_rules` is its
Python reference, over :func:`partition_lag`).

The numbers, per partition (of one cluster, and of one topic id when a topic's replicas carry several:
a topic deleted and created again is two topics): the reference replica is the one that leads with the
newest leader epoch, then the highest log end offset (ties: the first by broker name, then log dir:
:func:`logdoctor.logdir.divergence.reference_key`, the order every rule takes its reference in); never the
longest log as such: after an unclean election the longest is the diverged one (REPLICA_DIVERGED), and
syncing from it would overwrite the records the new leader acknowledged. A replica's lag is the reference
replica's log end offset minus its own (0 at least), its lag in bytes the reference replica's bytes minus
its own (0 at least: a compacted leader may hold fewer), and it is below the partition's high watermark
(the largest any replica's checkpoint holds, at most the reference replica's log end: a diverged
replica's high watermark goes with its truncation) when its log ends before it: such a replica cannot be
in the ISR (K:core/.../cluster/Partition.scala, ``maybeExpandIsr`` requires a follower to reach the high
watermark), an error; else a warning.

No finding for the metadata log (a Raft voter or observer fetches it from the leader and truncates it
itself, K:raft/.../KafkaRaftClient.java; sync-replica refuses it), nor for a replica that diverged
(REPLICA_DIVERGED, :mod:`logdoctor.checks.divergence`): it does not lag, it loses records when it fetches,
and sync-replica would copy the leader over them; its fix is the export that saves them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.cross_dir import BrokerGroup
from logdoctor.checks.findings import Finding, Severity
from logdoctor.formats.checkpoint import latest_epoch
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.divergence import reference_key
from logdoctor.logdir.names import METADATA_TOPIC, DirKind

__all__ = ["Lag", "LagReplica", "broker_names", "lag_finding", "partition_lag", "replicas_lagging"]


@dataclass(frozen=True, slots=True)
class LagReplica:
    """What the lag rule reads of one live replica (a scan's partition report, a census's replica row)."""

    broker: str  # the broker's name, as the finding says it (the census's label: broker-<node id>)
    log_dir: str
    path: str
    topic: str
    partition: int
    log_end_offset: int | None
    bytes: int
    high_watermark: int | None
    latest_epoch: int | None = None  # the last leader-epoch-checkpoint entry's epoch (None: no entry)


@dataclass(frozen=True, slots=True)
class Lag:
    """One replica's place in its partition: the reference replica (``leader``, :func:`reference_key`;
    None when no replica knows its log end offset) and how far behind it this one is
    (``max_log_end_offset``: the highest log end offset of any replica, the diverged ones' included)."""

    replica: LagReplica
    leader: LagReplica | None
    max_log_end_offset: int | None
    lag_offsets: int | None
    lag_bytes: int
    partition_high_watermark: int | None
    below_high_watermark: bool
    replica_count: int


def partition_lag(replicas: Sequence[LagReplica]) -> list[Lag]:
    """The lag of each replica of one partition (the replicas given: one partition's of one cluster)."""
    known = [r for r in replicas if r.log_end_offset is not None]
    leader = min(
        known,
        key=lambda r: reference_key(r.latest_epoch, r.log_end_offset, r.broker, r.log_dir),
        default=None,
    )
    leo = leader.log_end_offset if leader is not None else None
    most = leader.bytes if leader is not None else max((r.bytes for r in replicas), default=0)
    hw = max((r.high_watermark for r in replicas if r.high_watermark is not None), default=None)
    if hw is not None and leo is not None:
        hw = min(hw, leo)
    top = max((r.log_end_offset for r in known), default=None)
    out = []
    for r in replicas:
        own = r.log_end_offset
        out.append(
            Lag(
                r, leader, top,
                None if leo is None or own is None else max(0, leo - own),
                max(0, most - r.bytes),
                hw,
                hw is not None and own is not None and own < hw,
                len(replicas),
            )
        )  # fmt: skip
    return out


def lag_finding(
    *,
    broker: str,
    log_dir: str,
    path: str,
    topic: str,
    partition: int,
    log_end_offset: int | None,
    lag: int,
    lag_bytes: int,
    below_high_watermark: bool,
    partition_high_watermark: int | None,
    leader_broker: str,
    leader_log_dir: str,
    leader_log_end_offset: int | None,
) -> Finding:
    """REPLICA_LAG of one lagging replica; its ``fix_argv`` is the command that fixes it: the leader's copy
    over this one with both brokers stopped (``logdoctor sync-replica``, a dry run unless --apply)."""
    state = (
        f"below the partition's high watermark {partition_high_watermark}, so it is out of the ISR"
        if below_high_watermark
        else "behind the replica that leads with the newest leader epoch"
    )
    tp = f"{topic}-{partition}"
    return catalog.make(
        "REPLICA_LAG",
        path,
        severity=Severity.ERROR if below_high_watermark else None,
        offset=log_end_offset,
        topic_partition=tp,
        broker=broker,
        log_end_offset=log_end_offset,
        lag=lag,
        lag_size=human_bytes(lag_bytes or 0),
        leader_broker=leader_broker,
        leader_log_end_offset=leader_log_end_offset,
        state=state,
        leader_logdir=leader_log_dir,
        logdir=log_dir,
        details={"lag_offsets": lag, "lag_bytes": lag_bytes or 0},
    )


def lagging(lags: Iterable[Lag], diverged: Collection[str] = ()) -> list[Finding]:
    """REPLICA_LAG of each lagging replica of ``lags``, but the metadata log's and the
    diverged replicas' (``diverged``: their paths)."""
    out = []
    for x in lags:
        r = x.replica
        if not x.lag_offsets or x.lag_offsets <= 0 or r.topic == METADATA_TOPIC or r.path in diverged:
            continue
        assert x.leader is not None
        out.append(
            lag_finding(
                broker=r.broker, log_dir=r.log_dir, path=r.path, topic=r.topic, partition=r.partition,
                log_end_offset=r.log_end_offset, lag=x.lag_offsets, lag_bytes=x.lag_bytes,
                below_high_watermark=x.below_high_watermark,
                partition_high_watermark=x.partition_high_watermark,
                leader_broker=x.leader.broker, leader_log_dir=x.leader.log_dir,
                leader_log_end_offset=x.leader.log_end_offset,
            )
        )  # fmt: skip
    return out


def broker_names(groups: Sequence[BrokerGroup]) -> dict[str, str]:
    """Log dir -> its broker's name as the census names it (``broker-<node id>``, ``@<cluster id>`` when
    brokers of several clusters share the node id) for the broker groups of a scan; dirs of a group with
    no (cluster id, node id) are left out (no broker to name: not compared)."""
    clusters_of: dict[int, set[str]] = defaultdict(set)
    for g in groups:
        if g.key is not None:
            clusters_of[g.key[1]].add(g.key[0])
    out: dict[str, str] = {}
    for g in groups:
        if g.key is None:
            continue
        cluster, node = g.key
        name = f"broker-{node}" + (f"@{cluster}" if len(clusters_of[node]) > 1 and cluster else "")
        out.update({d: name for d in g.dirs})
    return out


def replicas_lagging(
    parts: Sequence[PartitionReport],
    groups: Sequence[BrokerGroup],
    clusters: dict[str, str | None],
    diverged: Collection[str] = (),
) -> list[Finding]:
    """REPLICA_LAG of the scan of several brokers' log dirs (``groups``: the dirs by broker, at least two
    of them with a (cluster id, node id); ``clusters``: log dir -> its cluster id; ``diverged``: the paths
    of the replicas with REPLICA_DIVERGED). A broker's (cluster id, node id) given twice (each with its own
    metadata log: clusters that cannot be told apart) compares nothing, as the divergence rule."""
    keys = [g.key for g in groups if g.key is not None]
    if len(set(keys)) < 2 or len(keys) != len(set(keys)):
        return []
    names = broker_names(groups)
    live = [p for p in parts if p.kind == DirKind.LOG.value and p.log_dir in names]
    ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for p in live:
        if p.topic_id is not None:
            ids[(clusters.get(p.log_dir) or "", p.topic)].add(p.topic_id)
    by_partition: dict[tuple[str, str, str, int], list[LagReplica]] = defaultdict(list)
    for p in live:
        cluster = clusters.get(p.log_dir) or ""
        # a topic deleted and created again: each topic id a topic of its own
        key = (p.topic_id or "") if len(ids[(cluster, p.topic)]) > 1 else ""
        by_partition[(cluster, p.topic, key, p.partition)].append(
            LagReplica(
                names[p.log_dir], p.log_dir, p.path, p.topic, p.partition, p.log_end_offset, p.bytes or 0,
                p.high_watermark, latest_epoch(p.leader_epochs),
            )
        )  # fmt: skip
    out: list[Finding] = []
    for _key, reps in sorted(by_partition.items(), key=lambda kv: (kv[0][1], kv[0][3], kv[0][0], kv[0][2])):
        reps.sort(key=lambda r: (r.broker, r.log_dir))
        out.extend(lagging(partition_lag(reps), diverged))
    return out

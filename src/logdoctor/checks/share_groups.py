"""SHARE_GROUP_BEHIND_LOG_START: share groups (KIP-932) whose share-partition start offset lies below the
partition's log start, from ``__share_group_state`` and the partitions among the inputs.

The share coordinator's state is replayed from each ``__share_group_state`` partition in log order
(K:share-coordinator/src/main/java/org/apache/kafka/coordinator/share/ShareCoordinatorShard.java ``replay``,
tag 4.2.0): a ShareSnapshot record is the whole state of its (group, topic id, partition), a null value
deletes it; a ShareUpdate merges into it, its start offset replacing the state's unless it is -1
(``merge``). Records of every layout Kafka wrote (4.0's and 4.1+'s share-group state) are read
(``formats.internal.share_group_state``), the layout chosen by the cluster's feature levels where the
broker's metadata log (or bootstrap.checkpoint) gives them (``features``: log dir -> ``ClusterFeatures``,
``layouts.ClusterFeatures.share_group_writer``), else by the one exact read.

A share-partition start offset below the log start offset of its partition (the partition found by its
topic id, ``partition.metadata``) means the records from there to the log start were deleted before the
share group delivered and acknowledged them: when a consumer of the group next fetches, the broker gets
OFFSET_OUT_OF_RANGE, moves the share partition's start to the log start and archives what it held below it
(K:core/src/main/java/kafka/server/share/ShareFetchUtils.java, SharePartition.java
``updateCacheAndOffsets``). Only partitions among the inputs are judged, within one cluster.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.checks import catalog
from logdoctor.checks.consumer_groups import log_range, records_of, replicas_by_partition
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Finding
from logdoctor.checks.replica_ref import Judged
from logdoctor.errors import FormatError

if TYPE_CHECKING:
    from logdoctor.formats.internal.layouts import ClusterFeatures

__all__ = [
    "SHARE_GROUP_STATE_TOPIC",
    "ShareState",
    "behind",
    "share_groups_behind_log_start",
    "share_rows",
    "share_state",
]

SHARE_GROUP_STATE_TOPIC = "__share_group_state"

_Key = tuple[str, str, int]  # group id, topic id (Kafka text), partition


@dataclass(frozen=True, slots=True)
class ShareState:
    group: str
    topic_id: str
    partition: int
    start_offset: int
    source: str  # the __share_group_state partition folder
    record_offset: int  # the record that last set the start offset


def share_state(
    parts: list[PartitionReport], features: Mapping[str, ClusterFeatures | None] | None = None
) -> dict[_Key, ShareState]:
    """(group, topic id, partition) -> its state, replayed from the given ``__share_group_state`` replicas;
    ``features``: the cluster's feature levels by log dir (None or missing: the exact read decides)."""
    from logdoctor.formats.internal import decode_share_group_state

    out: dict[_Key, ShareState] = {}
    for p in parts:
        levels = (features or {}).get(p.log_dir)
        start = p.log_start_offset if p.log_start_offset is not None else (p.first_base_offset or 0)
        for offset, _pid, control, key, value, _ct in records_of(p.path, start):
            if control or key is None:
                continue
            try:
                rec = decode_share_group_state(key, value, source=p.path, features=levels)
            except FormatError:
                continue  # a record the coordinator could not load either (or one newer than our tables)
            k = (rec["key"]["group_id"], rec["key"]["topic_id"], rec["key"]["partition"])
            v = rec["value"]
            if v is None:
                out.pop(k, None)
                continue
            old = out.get(k)
            if rec["type"] == "ShareUpdate" and old is not None and v["start_offset"] == -1:
                continue
            out[k] = ShareState(k[0], k[1], k[2], v["start_offset"], p.path, offset)
    return out


def share_groups_behind_log_start(
    parts: list[PartitionReport],
    clusters: dict[str, str | None],
    features: Mapping[str, ClusterFeatures | None] | None = None,
) -> list[Finding]:
    """One SHARE_GROUP_BEHIND_LOG_START per share partition whose start offset is below its log start."""
    replicas = replicas_by_partition(parts, clusters)
    by_id = {
        (cluster, p.topic_id, n): p
        for (cluster, topic, n), p in replicas.items()
        if p.topic_id and topic != SHARE_GROUP_STATE_TOPIC
    }
    out: list[Finding] = []
    for (cluster, topic, _n), sp in sorted(replicas.items(), key=lambda kv: (str(kv[0][0]), kv[0][2])):
        if topic != SHARE_GROUP_STATE_TOPIC:
            continue
        for s in share_state([sp], features).values():
            target = by_id.get((cluster, s.topic_id, s.partition))
            rng = None if target is None else log_range(target)
            if target is not None and rng is not None and (f := behind(s, target, rng[0])) is not None:
                out.append(f)
    return out


def behind(s: ShareState, target: Judged, log_start: int) -> Finding | None:
    """The rule: a share partition's start offset below its partition's log start (the log start a
    consumer of ``target`` sees, checks.consumer_groups ``log_range``). The scan
    (:func:`share_groups_behind_log_start`) and the census (census_sql.share_group_findings) both run it."""
    if s.start_offset < 0 or s.start_offset >= log_start:
        return None
    return _finding(s, target, log_start)


def share_rows(
    parts: list[PartitionReport], features: Mapping[str, ClusterFeatures | None] | None = None
) -> list[dict[str, object]]:
    """The share-partition states of one broker's ``__share_group_state`` replicas (the one a consumer
    fetches from of each: as the scan's rule takes), as the census's ``share`` rows."""
    replicas = replicas_by_partition(parts, {})
    out: list[dict[str, object]] = []
    for (_c, topic, _n), sp in sorted(replicas.items(), key=lambda kv: kv[0][2]):
        if topic != SHARE_GROUP_STATE_TOPIC:
            continue
        for s in share_state([sp], features).values():
            out.append(
                {
                    "log_dir": sp.log_dir,
                    "path": sp.path,
                    "share_group": s.group,
                    "share_topic_id": s.topic_id,
                    "share_partition": s.partition,
                    "share_start_offset": s.start_offset,
                    "share_record_offset": s.record_offset,
                }
            )
    return out


def _finding(s: ShareState, target: Judged, log_start: int) -> Finding:
    return catalog.make(
        "SHARE_GROUP_BEHIND_LOG_START",
        target.path,
        logdir=target.log_dir,
        offset=s.start_offset,
        group=s.group,
        topic=target.topic,
        partition=target.partition,
        start_offset=s.start_offset,
        log_start_offset=log_start,
        lost=log_start - s.start_offset,
        source=os.path.basename(s.source),
        details={
            "group": s.group,
            "topic": target.topic,
            "partition": target.partition,
            "topic_id": s.topic_id,
            "share_partition_start_offset": s.start_offset,
            "log_start_offset": log_start,
            "offsets_never_delivered": log_start - s.start_offset,
            "share_group_state_partition": s.source,
            "share_group_state_record_offset": s.record_offset,
        },
    )

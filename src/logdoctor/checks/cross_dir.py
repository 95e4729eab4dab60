"""Checks across the log dirs scanned together: several brokers' dirs given at once, the same
partition in two dirs of one broker, meta.properties that disagree, and topic ids against the
metadata log or across a topic's partitions."""

from __future__ import annotations

import os
from collections import Counter, defaultdict

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Finding
from logdoctor.checks.scan_report import LogDirReport
from logdoctor.logdir.metadata_image import MetadataImage
from logdoctor.logdir.names import (
    META_PROPERTIES_FILE,
    DirKind,
)


def broker_groups(reports: list[LogDirReport]) -> list[list[str]]:
    """The scanned log dirs by broker (cluster.id, node id), in the order given.

    Dirs whose meta.properties is missing or unreadable go with the only broker when there is one,
    otherwise they form a group of their own.
    """
    groups: dict[tuple[str, int] | None, list[str]] = {}
    for r in reports:
        key = (r.cluster_id or "", r.node_id) if r.mode is not None and r.node_id is not None else None
        groups.setdefault(key, []).append(r.path)
    known = [k for k in groups if k is not None]
    if None in groups and len(known) == 1:
        groups[known[0]].extend(groups.pop(None))
    return list(groups.values())


def different_brokers(reports: list[LogDirReport], parts: list[PartitionReport]) -> Finding | None:
    """One finding when the given log dirs belong to different brokers.

    A broker is (cluster.id, broker.id/node.id) of meta.properties. Dirs naming different node ids, or
    different clusters and holding the same partitions (replicas), are several brokers' dirs; each
    partition copy would otherwise be a DUPLICATE_PARTITION error (thousands that all say one thing).
    One broker's dir with another cluster's meta.properties and no shared partition stays a
    META_PROPERTIES_MISMATCH of that dir.
    """
    with_meta = [r for r in reports if r.mode is not None and r.node_id is not None]
    by_broker: dict[tuple[str, int], list[LogDirReport]] = defaultdict(list)
    for r in with_meta:
        by_broker[(r.cluster_id or "", r.node_id or 0)].append(r)
    if len(by_broker) < 2:
        return None
    if len({r.node_id for r in with_meta}) < 2:
        broker_of = {r.path: key for key, rs in by_broker.items() for r in rs}
        holders: dict[tuple[str, int], set[tuple[str, int]]] = defaultdict(set)
        for p in parts:
            if p.kind == DirKind.LOG.value and p.log_dir in broker_of:
                holders[(p.topic, p.partition)].add(broker_of[p.log_dir])
        if not any(len(b) > 1 for b in holders.values()):
            return None
    clusters = {c for c, _ in by_broker}
    listing = "; ".join(
        f"broker {n}{f' of cluster {c}' if len(clusters) > 1 else ''}: " + ", ".join(r.path for r in rs)
        for (c, n), rs in sorted(by_broker.items())
    )
    first = with_meta[0]
    return catalog.make(
        "LOG_DIRS_OF_DIFFERENT_BROKERS",
        os.path.join(first.path, META_PROPERTIES_FILE),
        logdir=first.path,
        dirs=len(reports),
        brokers=len(by_broker),
        of_clusters=f"of {len(clusters)} clusters" if len(clusters) > 1 else f"of cluster {first.cluster_id}",
        listing=listing,
        commands=", ".join(f"`logdoctor scan {' '.join(r.path for r in rs)}`" for rs in by_broker.values()),
        details={"brokers": {f"{c}/{n}": [r.path for r in rs] for (c, n), rs in by_broker.items()}},
    )


def cross_dir(
    reports: list[LogDirReport], parts: list[PartitionReport], image: MetadataImage | None = None
) -> list[Finding]:
    """Every check across the scanned log dirs. Dirs of different brokers are said so once, and the
    per-partition and per-dir comparisons, which assume one broker, are skipped for them."""
    out: list[Finding] = []
    brokers = different_brokers(reports, parts)
    if brokers is not None:
        out.append(brokers)
    else:
        _duplicate_partitions(parts, out)
        _meta_properties_across_dirs(reports, out)
    _topic_ids(parts, image, out)
    return out


def _duplicate_partitions(parts: list[PartitionReport], out: list[Finding]) -> None:
    """The same partition in two log dirs of one broker (LogManager.loadLog fails startup)."""
    by_tp: dict[tuple[str, int], list[PartitionReport]] = defaultdict(list)
    for p in parts:
        if p.kind == DirKind.LOG.value:
            by_tp[(p.topic, p.partition)].append(p)
    for (t, n), ps in sorted(by_tp.items()):
        if len(ps) > 1:
            where = ", ".join(p.path for p in ps)
            for p in ps:
                out.append(
                    catalog.make(
                        "DUPLICATE_PARTITION",
                        p.path,
                        partition=f"{t}-{n}",
                        count=len(ps),
                        where=where,
                        log_end_offset=p.log_end_offset,
                        bytes=p.bytes,
                        logdir=p.log_dir,
                        logdirs=" ".join(sorted({q.log_dir for q in ps})),
                    )
                )


def _meta_properties_across_dirs(reports: list[LogDirReport], out: list[Finding]) -> None:
    """cluster.id, node id and version that differ between the log dirs of one broker."""
    with_meta = [r for r in reports if r.mode is not None]
    for attr, label in (("cluster_id", "cluster.id"), ("node_id", "broker.id/node.id"), ("mode", "version")):
        values = Counter(getattr(r, attr) for r in with_meta if getattr(r, attr) is not None)
        if len(values) > 1:
            common = values.most_common(1)[0][0]
            summary = ", ".join(f"{r.path}: {getattr(r, attr)}" for r in with_meta)
            for r in with_meta:
                v = getattr(r, attr)
                if v is not None and v != common:
                    out.append(
                        catalog.make(
                            "META_PROPERTIES_MISMATCH",
                            os.path.join(r.path, META_PROPERTIES_FILE),
                            logdir=r.path,
                            field=label,
                            value=v,
                            common=common,
                            summary=summary,
                        )
                    )


def _topic_ids(parts: list[PartitionReport], image: MetadataImage | None, out: list[Finding]) -> None:
    """Topic ids against the KRaft metadata log when one was scanned, else across a topic's partitions."""
    known: dict[str, str] = dict(image.topics) if image is not None else {}
    ids: dict[str, Counter] = defaultdict(Counter)
    for p in parts:
        if p.topic_id is not None and p.kind == DirKind.LOG.value:
            ids[p.topic][p.topic_id] += 1
    for p in parts:
        if p.topic_id is None or p.kind != DirKind.LOG.value:
            continue
        pm = os.path.join(p.path, "partition.metadata")
        if p.topic in known:
            if p.topic_id != known[p.topic]:
                out.append(
                    catalog.make(
                        "TOPIC_ID_MISMATCH",
                        pm,
                        logdir=p.log_dir,
                        case="metadata-log",
                        partition=f"{p.topic}-{p.partition}",
                        topic_id=p.topic_id,
                        topic=p.topic,
                        known=known[p.topic],
                    )
                )
            continue
        c = ids.get(p.topic)
        if c is None or len(c) < 2:
            continue
        common = c.most_common(1)[0][0]
        if p.topic_id != common:
            out.append(
                catalog.make(
                    "TOPIC_ID_MISMATCH",
                    pm,
                    logdir=p.log_dir,
                    partition=f"{p.topic}-{p.partition}",
                    topic_id=p.topic_id,
                    common=common,
                )
            )

"""Checks across the log dirs scanned together: several brokers' dirs given at once, the same
partition in two dirs of one broker, meta.properties that disagree, and topic ids against the
metadata log or across a topic's partitions."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Finding
from logdoctor.checks.scan_report import LogDirReport
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.identity import find_metadata_dir
from logdoctor.logdir.names import (
    META_PROPERTIES_FILE,
    DirKind,
)

if TYPE_CHECKING:  # replayed only where a broker has a metadata log (the scanner's image_of)
    from logdoctor.logdir.metadata_image import MetadataImage


@dataclass(slots=True)
class BrokerGroup:
    """The scanned log dirs of one broker: its (cluster.id, node id) when meta.properties says them, its
    dirs in the order given, and the dir holding its ``__cluster_metadata-0`` (its metadata.log.dir)."""

    key: tuple[str, int] | None
    dirs: list[str]
    metadata_dir: str | None = None
    mode: str | None = None

    @property
    def label(self) -> str:
        if self.key is None:
            return "the log dirs without a readable meta.properties"
        cluster, node = self.key
        return f"broker {node}" + (f" of cluster {cluster}" if cluster else "")


def broker_groups(
    reports: list[LogDirReport], images: Callable[[str], MetadataImage] | None = None
) -> list[BrokerGroup]:
    """The scanned log dirs by broker, in the order given.

    A broker is (cluster.id, node id) of meta.properties, but cluster ids are not unique in the wild (many
    docker-compose setups format every cluster with the same one, and node id 1): a broker has one
    metadata log (``__cluster_metadata-0`` in its metadata.log.dir, K:core/.../server/KafkaRaftServer.scala),
    so dirs of one (cluster.id, node id) that each hold a metadata log are the dirs of as many brokers. A
    dir without one goes with the broker whose metadata registers its directory.id (BrokerRegistrationRecord
    logDirs, 3.7+) when ``images`` (metadata dir -> its replay) is given, else with the only broker of its
    key; with several and no registration naming it, it is a broker of its own.

    Dirs whose meta.properties is missing or unreadable go with the only broker when there is one,
    otherwise they form a group of their own.
    """
    keyed: dict[tuple[str, int] | None, list[LogDirReport]] = {}
    for r in reports:
        key = (r.cluster_id or "", r.node_id) if r.mode is not None and r.node_id is not None else None
        keyed.setdefault(key, []).append(r)
    known = [k for k in keyed if k is not None]
    if None in keyed and len(known) == 1:
        keyed[known[0]].extend(keyed.pop(None))
    out: list[BrokerGroup] = []
    for key, rs in keyed.items():
        for dirs, mdir in split_by_metadata_log([r.path for r in rs], key[1] if key else None, images):
            out.append(BrokerGroup(key, dirs, mdir, _mode([r for r in rs if r.path in dirs])))
    return out


def split_by_metadata_log(
    dirs: list[str], node_id: int | None, images: Callable[[str], MetadataImage] | None = None
) -> list[tuple[list[str], str | None]]:
    """The log dirs of one (cluster.id, node id), as brokers: (dirs, metadata dir) each, in the order given.

    One metadata log or none: one broker. Several: a broker per metadata log; a dir without one goes with
    the broker whose metadata registers its directory.id (``images``: metadata dir -> its replay), else it
    is a broker of its own."""
    from logdoctor.logdir.identity import read_identity

    metas = [(d, find_metadata_dir([d])) for d in dirs]
    holders = [(d, m) for d, m in metas if m is not None]
    if len(holders) <= 1:
        return [(list(dirs), holders[0][1] if holders else None)]
    subs: list[tuple[list[str], str | None]] = [([d], m) for d, m in holders]
    for d, m in metas:
        if m is not None:
            continue
        did = read_identity(d).directory_id
        owner = None
        if did and images is not None and node_id is not None:
            owner = next(
                (
                    sub
                    for sub in subs
                    if sub[1] is not None
                    and node_id in (reg := images(sub[1]).brokers)
                    and did in reg[node_id].log_dirs
                ),
                None,
            )
        if owner is None:
            subs.append(([d], None))
        else:
            owner[0].append(d)
    order = {d: i for i, d in enumerate(dirs)}
    subs.sort(key=lambda sub: order[sub[0][0]])
    return subs


def _mode(reports: list[LogDirReport]) -> str | None:
    modes = Counter(r.mode for r in reports if r.mode is not None)
    return modes.most_common(1)[0][0] if modes else None


def different_brokers(
    groups: list[BrokerGroup], reports: list[LogDirReport], parts: list[PartitionReport]
) -> Finding | None:
    """One finding when the given log dirs belong to different brokers (:func:`broker_groups`).

    Dirs naming different node ids, or different clusters (or brokers of one cluster id that each have
    their own metadata log) and holding the same partitions (replicas), are several brokers' dirs; each
    partition copy would otherwise be a DUPLICATE_PARTITION error (thousands that all say one thing).
    One broker's dir with another cluster's meta.properties and no shared partition stays a
    META_PROPERTIES_MISMATCH of that dir.
    """
    by_broker = [g for g in groups if g.key is not None]
    if len(by_broker) < 2:
        return None
    if len({g.key[1] for g in by_broker if g.key is not None}) < 2:
        broker_of = {d: i for i, g in enumerate(by_broker) for d in g.dirs}
        holders: dict[tuple[str, int], set[int]] = defaultdict(set)
        for p in parts:
            if p.kind == DirKind.LOG.value and p.log_dir in broker_of:
                holders[(p.topic, p.partition)].add(broker_of[p.log_dir])
        if not any(len(b) > 1 for b in holders.values()):
            return None
    clusters = {g.key[0] for g in by_broker if g.key is not None}
    same_key = Counter(g.key for g in by_broker)

    def name(g: BrokerGroup) -> str:
        assert g.key is not None
        c, n = g.key
        text = f"broker {n}{f' of cluster {c}' if len(clusters) > 1 else ''}"
        if same_key[g.key] > 1:
            text += (
                f" with its own metadata log {g.metadata_dir}"
                if g.metadata_dir is not None
                else " without a metadata log"
            )
        return text

    def key_name(g: BrokerGroup) -> str:
        assert g.key is not None
        c, n = g.key
        return f"{c}/{n}" + (f"@{g.dirs[0]}" if same_key[g.key] > 1 else "")

    listing = "; ".join(f"{name(g)}: " + ", ".join(g.dirs) for g in by_broker)
    first = next(r for r in reports if r.path in by_broker[0].dirs)
    dup = [g for g in by_broker if same_key[g.key] > 1]
    shared = (
        f"; cluster ids are not unique (many docker-compose setups share one): "
        f"{len(dup)} of them are broker {dup[0].key[1]} of cluster {dup[0].key[0]}, each with its own "
        "metadata log, so they are different brokers"
        if dup and dup[0].key is not None
        else ""
    )
    return catalog.make(
        "LOG_DIRS_OF_DIFFERENT_BROKERS",
        os.path.join(first.path, META_PROPERTIES_FILE),
        logdir=first.path,
        dirs=len(reports),
        brokers=len(by_broker),
        of_clusters=(
            f"of {len(clusters)} clusters" if len(clusters) > 1 else f"of cluster {first.cluster_id}"
        )
        + shared,
        listing=listing,
        commands=", ".join(f"`logdoctor repair {' '.join(g.dirs)}`" for g in by_broker),
        details={"brokers": {key_name(g): list(g.dirs) for g in by_broker}},
    )


def cross_dir(
    reports: list[LogDirReport],
    parts: list[PartitionReport],
    groups: list[BrokerGroup],
    images: dict[str, MetadataImage],
    one_broker: bool = False,
) -> list[Finding]:
    """Every check across the scanned log dirs. Dirs of different brokers are said so once when the
    command works on one broker (``one_broker``: repair, the procedures; a scan of several brokers' dirs
    compares their replicas, no error), and the
    per-partition and per-dir comparisons, which assume one broker, are skipped for them; topic ids are
    checked per broker, against that broker's own metadata log only (``images``: metadata dir -> replay;
    another cluster's metadata says nothing about this broker's topics)."""
    out: list[Finding] = []
    brokers = different_brokers(groups, reports, parts)
    if brokers is not None:
        if one_broker:
            out.append(brokers)
    else:
        _duplicate_partitions(parts, out)
        _meta_properties_across_dirs(reports, out)
    for g in groups:
        members = set(g.dirs)
        image = images.get(g.metadata_dir) if g.metadata_dir is not None else None
        _topic_ids([p for p in parts if p.log_dir in members], image, out)
    _shared_topic_ids(reports, parts, out)
    return out


def _shared_topic_ids(reports: list[LogDirReport], parts: list[PartitionReport], out: list[Finding]) -> None:
    """TOPIC_ID_SHARED: one topic id in the partition.metadata of several topics of one cluster (the log
    dirs' cluster.id; dirs without one count as one cluster): one finding per topic after the first."""
    cluster_of = {r.path: r.cluster_id or "" for r in reports}
    by_id: dict[tuple[str, str], dict[str, list[PartitionReport]]] = defaultdict(lambda: defaultdict(list))
    for p in parts:
        if p.topic_id is not None and p.kind == DirKind.LOG.value:
            by_id[(cluster_of.get(p.log_dir, ""), p.topic_id)][p.topic].append(p)
    for (_cluster, topic_id), topics in sorted(by_id.items()):
        if len(topics) < 2:
            continue
        names = sorted(topics)
        where = "; ".join(
            f"{t}: {', '.join(sorted({f'{q.topic}-{q.partition} in {q.log_dir}' for q in topics[t]})[:3])}"
            for t in names
        )
        for t in names[1:]:
            first = min(topics[t], key=lambda q: (q.partition, q.log_dir))
            out.append(
                catalog.make(
                    "TOPIC_ID_SHARED",
                    os.path.join(first.path, "partition.metadata"),
                    logdir=first.log_dir,
                    topics=", ".join(names),
                    topic=t,
                    topic_id=topic_id,
                    where=where,
                    details={"topic_id": topic_id, "topics": names},
                )
            )


def _duplicate_partitions(parts: list[PartitionReport], out: list[Finding]) -> None:
    """The same partition in two log dirs of one broker (LogManager.loadLog fails startup)."""
    by_tp: dict[tuple[str, int], list[PartitionReport]] = defaultdict(list)
    log = DirKind.LOG.value  # once, not an enum attribute lookup per partition (50,000)
    counts = Counter([(p.topic, p.partition) for p in parts if p.kind == log])
    if len(counts) == sum(counts.values()):  # each once: no list for each of 50,000, nothing sorted
        return
    for p in parts:
        if p.kind == log:
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
                        size=human_bytes(p.bytes or 0),
                        details={"log_end_offset": p.log_end_offset, "bytes": p.bytes},
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
        # the metadata log's id of the topic, else the one most of its partitions have
        expected = known.get(p.topic)
        if p.topic not in known:
            c = ids.get(p.topic)
            if c is None or len(c) < 2:
                continue
            expected = c.most_common(1)[0][0]
        if p.topic_id != expected:
            out.append(
                catalog.make(
                    "TOPIC_ID_MISMATCH",
                    os.path.join(p.path, "partition.metadata"),
                    logdir=p.log_dir,
                    case="metadata-log" if p.topic in known else None,
                    partition=f"{p.topic}-{p.partition}",
                    topic_id=p.topic_id,
                    topic=p.topic,
                    known=expected,
                    common=expected,
                )
            )

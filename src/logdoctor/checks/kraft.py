"""Checks of a KRaft broker's log dirs against each other and against its cluster metadata.

Directory identity (KIP-858): every log dir of a broker has its own ``directory.id``
(K:metadata/.../properties/MetaPropertiesEnsemble.java ``verify`` refuses duplicates and reserved
ids; K:core/.../server/KafkaRaftServer.scala ``initializeLogDirs`` writes a new id where one is
missing). Directory assignments: where the broker's ``__cluster_metadata-0`` is among the scanned
dirs, its replay (:mod:`logdoctor.logdir.metadata_image`) says which replicas this broker should
hold and in which dir; what a broker does at startup with each mismatch is cited per finding:

- a replica in another dir than its assignment: loaded where it is (LogManager.loadLogs never looks
  at assignments), then reported to the controller under its actual dir
  (K:core/.../server/ReplicaManager.scala ``applyDelta`` -> ``maybeUpdateTopicAssignment`` ->
  K:server/.../AssignmentsManager.java -> AssignReplicasToDirs; the controller writes a
  PartitionChangeRecord, K:metadata/.../controller/ReplicationControlManager.java
  ``handleAssignReplicasToDirs``). While the assigned dir is offline and the broker has an offline
  dir, the replica is not opened (K:core/.../cluster/Partition.scala ``createLogInAssignedDirectoryId``).
- a replica the metadata no longer assigns to this broker: a stray. 3.5/3.6 delete it at startup
  (BrokerMetadataPublisher ``findStrayPartitions``); 3.7 renames it ``-stray``
  (LogManager ``deleteStrayKRaftReplicas``); 3.8+ renames it while loading (``isStrayKraftReplica``);
  KAFKA-14616, KAFKA-16234. A ``-stray`` folder is kept, never served and never deleted.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport
from logdoctor.checks.cross_dir import BrokerGroup
from logdoctor.checks.findings import Finding, Severity
from logdoctor.logdir.disk import human_bytes
from logdoctor.logdir.identity import (
    LOST,
    MIGRATING,
    UNASSIGNED,
    DirIdentity,
    describe_directory_id,
    is_reserved_directory_id,
    read_identities,
)
from logdoctor.logdir.model import LogDir
from logdoctor.logdir.names import META_PROPERTIES_FILE, METADATA_TOPIC, PARTITION_METADATA_FILE, DirKind

if TYPE_CHECKING:  # an image exists only where a broker's metadata log was replayed (the module is loaded)
    from logdoctor.logdir.metadata_image import MetadataImage

__all__ = ["KraftContext", "check_kraft", "metadata_not_scanned", "unread_registration_findings"]

_NOT_PLACED = (MIGRATING, UNASSIGNED)


@dataclass(slots=True)
class KraftContext:
    """What the checks know about the broker: its dirs' identities and (maybe) its metadata image."""

    identities: list[DirIdentity]
    image: MetadataImage | None
    node_id: int | None

    @property
    def dir_ids(self) -> dict[str, str]:
        """log dir path -> directory.id (dirs that have one of their own: a duplicated id is left out,
        DIRECTORY_ID_DUPLICATE says it)."""
        counts = Counter(i.directory_id for i in self.identities if i.directory_id)
        return {
            i.path: i.directory_id for i in self.identities if i.directory_id and counts[i.directory_id] == 1
        }

    def dir_of(self, directory_id: str) -> str | None:
        for i in self.identities:
            if i.directory_id == directory_id:
                return i.path
        return None

    @property
    def needs_directory_ids(self) -> tuple[bool, str]:
        """(whether this broker's dirs must carry directory ids, why)."""
        im = self.image
        if im is not None and im.metadata_version is not None:
            from logdoctor.logdir.metadata_image import DIRECTORY_ASSIGNMENT_LEVEL, metadata_version_name

            mv = im.metadata_version
            return (
                mv >= DIRECTORY_ASSIGNMENT_LEVEL,
                f"the cluster's metadata.version is {metadata_version_name(mv)} (level {mv})",
            )
        with_ids = [i.path for i in self.identities if i.directory_id]
        if with_ids:
            return (
                True,
                f"the broker's other log dirs carry one ({', '.join(with_ids)}: written by Kafka 3.7+)",
            )
        return False, ""


def _node_id(identities: list[DirIdentity]) -> int | None:
    ids = Counter(i.node_id for i in identities if i.readable and i.node_id is not None)
    return ids.most_common(1)[0][0] if ids else None


def _local_assignments(ctx: KraftContext, parts: list[PartitionReport]) -> dict[str, Counter]:
    """log dir -> Counter of the directory ids the metadata assigns to the replicas found in it."""
    out: dict[str, Counter] = defaultdict(Counter)
    im, node = ctx.image, ctx.node_id
    if im is None or node is None:
        return out
    for p in parts:
        if p.kind != DirKind.LOG.value or p.topic == METADATA_TOPIC:
            continue
        st = im.partition(p.topic, p.partition)
        if st is None or (p.topic_id is not None and p.topic_id != st.topic_id):
            continue
        assigned = st.directory(node)
        if assigned is not None and assigned not in _NOT_PLACED and assigned != LOST:
            out[p.log_dir][assigned] += 1
    return out


def _unused_registered_ids(ctx: KraftContext) -> list[str]:
    """Directory ids the broker registered with the controller that no scanned dir carries."""
    im, node = ctx.image, ctx.node_id
    if im is None or node is None or node not in im.brokers:
        return []
    on_disk = {i.directory_id for i in ctx.identities if i.directory_id}
    return [d for d in im.brokers[node].log_dirs if d not in on_disk]


def _identity_findings(ctx: KraftContext, parts: list[PartitionReport]) -> list[Finding]:
    out: list[Finding] = []
    assigned_here = _local_assignments(ctx, parts)
    by_id: dict[str, list[DirIdentity]] = defaultdict(list)
    for ident in ctx.identities:
        if ident.readable and ident.directory_id:
            by_id[ident.directory_id].append(ident)
    unused = _unused_registered_ids(ctx)
    for did, idents in sorted(by_id.items()):
        if is_reserved_directory_id(did):
            for ident in idents:
                out.append(
                    catalog.make(
                        "DIRECTORY_ID_INVALID",
                        ident.meta_path,
                        logdir=ident.path,
                        directory_id=did,
                        reserved=describe_directory_id(did),
                        details={"directory_id": did},
                    )
                )
            continue
        if len(idents) < 2:
            continue
        # the dir whose replicas the metadata assigns to this id keeps it; the others need another one
        owner = max(idents, key=lambda i: (assigned_here.get(i.path, Counter())[did], -idents.index(i)))
        where = ", ".join(i.path for i in idents)
        for ident in idents:
            if ident is owner:
                continue
            held = assigned_here.get(ident.path, Counter())
            own_ids = [d for d, _n in held.most_common() if d != did and d in unused]
            if own_ids:
                case, own_id = "assigned-id", own_ids[0]
            elif len(unused) == 1:
                case, own_id = "registered-id", unused[0]
            else:
                case, own_id = None, None
            which = (
                f"{owner.path} holds the replicas the cluster metadata assigns to {did}"
                if assigned_here.get(owner.path, Counter())[did]
                else "one meta.properties was probably copied from a sibling dir"
            )
            fields = {"own_id": own_id, "held": held[own_id]} if own_id is not None else {}
            out.append(
                catalog.make(
                    "DIRECTORY_ID_DUPLICATE",
                    ident.meta_path,
                    case=case,
                    logdir=ident.path,
                    directory_id=did,
                    count=len(idents),
                    node=ctx.node_id,
                    where=where,
                    which=which,
                    keeper=owner.path,
                    **fields,
                    details={"directory_id": did, "log_dirs": [i.path for i in idents], "keeps": owner.path},
                )
            )
    needed, why = ctx.needs_directory_ids
    if needed:
        for ident in ctx.identities:
            if not (ident.readable and ident.is_kraft and ident.directory_id is None):
                continue
            held = assigned_here.get(ident.path, Counter())
            others = {i.directory_id for i in ctx.identities if i.directory_id}
            candidates = [d for d, _n in held.most_common() if d not in others]
            former = {"former_id": candidates[0], "held": held[candidates[0]]} if candidates else {}
            out.append(
                catalog.make(
                    "DIRECTORY_ID_MISSING",
                    ident.meta_path,
                    case="former-id-known" if candidates else None,
                    logdir=ident.path,
                    why=why,
                    **former,
                    details={"candidates": candidates},
                )
            )
    im = ctx.image
    kraft_dirs = [i for i in ctx.identities if i.readable and i.is_kraft]
    # the cluster's metadata.version predates directory assignment (KIP-858): ``needed`` is false by it
    if im is not None and im.metadata_version is not None and len(kraft_dirs) > 1 and not needed:
        first = kraft_dirs[0]
        out.append(
            catalog.make(
                "JBOD_METADATA_VERSION",
                first.meta_path,
                logdir=first.path,
                node=ctx.node_id,
                count=len(kraft_dirs),
                log_dirs=", ".join(i.path for i in kraft_dirs),
                metadata_version=im.metadata_version_name,
                details={"metadata_version": im.metadata_version},
            )
        )
    return out


def _assignment_findings(ctx: KraftContext, parts: list[PartitionReport]) -> list[Finding]:
    im, node = ctx.image, ctx.node_id
    if im is None or node is None:
        return []
    out: list[Finding] = []
    dir_ids = ctx.dir_ids
    on_disk: set[tuple[str, int]] = set()
    for p in parts:
        if p.kind != DirKind.LOG.value or p.topic == METADATA_TOPIC:
            continue
        on_disk.add((p.topic, p.partition))
        make = partial(catalog.make, logdir=p.log_dir)
        tp = f"{p.topic}-{p.partition}"
        image_tid = im.topic_id(p.topic)
        if image_tid is not None and p.topic_id is not None and p.topic_id != image_tid:
            continue  # TOPIC_ID_MISMATCH (the scanner's cross-dir check) says it
        st = im.partition(p.topic, p.partition)
        reason = None
        if image_tid is None:
            reason = f"the cluster metadata has no topic {p.topic} (deleted)"
        elif st is None:
            reason = f"the cluster metadata has no partition {p.partition} of {p.topic}"
        elif node not in st.replicas:
            reason = (
                f"the cluster metadata assigns {tp} to brokers {st.replicas} (leader {st.leader}, "
                f"ISR {st.isr}), not to broker {node}"
            )
        elif p.topic_id is None:
            meta_file = os.path.join(p.path, PARTITION_METADATA_FILE)
            state = (
                "cannot be read (PARTITION_METADATA_INVALID: repairing it gives the replica its topic id "
                "back)"
                if os.path.lexists(meta_file)
                else "is missing"
            )
            reason = (
                f"{meta_file} {state}, so the replica has no topic id (a 3.8+ broker treats such a log as "
                "stray)"
            )
        if reason is not None:
            details = {"topic": p.topic, "partition": p.partition, "metadata_offset": im.end_offset}
            if p.topic_id is None and st is not None and node in st.replicas and image_tid is not None:
                details["no_topic_id"] = True
            if st is not None:
                details.update(st.to_json())
            out.append(
                make(
                    "REPLICA_NOT_ASSIGNED",
                    p.path,
                    partition=tp,
                    log_end_offset=p.log_end_offset,
                    reason=reason,
                    details=details,
                )
            )
            continue
        assert st is not None
        assigned = st.directory(node)
        actual = dir_ids.get(p.log_dir)
        if not im.directory_assignment or assigned is None or assigned in _NOT_PLACED or actual is None:
            continue
        if assigned == actual:
            continue
        assigned_dir = ctx.dir_of(assigned)
        if assigned == LOST:
            where = "LOST (a directory the controller saw go offline)"
            severity = Severity.INFO
        elif assigned_dir is not None:
            where = f"{assigned} ({assigned_dir})"
            severity = None
        else:
            where = (
                f"{assigned}, which none of the scanned log dirs carries (a log dir not given to this scan, "
                "or one whose directory.id changed)"
            )
            severity = Severity.INFO
        back = (
            catalog.command_phrase(
                " To put it where the metadata says instead: {command}.",
                ["logdoctor", "move-partition", tp, "--from", p.log_dir, "--to", assigned_dir],
            )
            if assigned_dir is not None
            else ""
        )
        out.append(
            catalog.make(
                "REPLICA_MISPLACED",
                p.path,
                logdir=p.log_dir,
                severity=severity,
                partition=tp,
                directory_id=actual,
                metadata_offset=st.offset,
                node=node,
                where=where,
                move_back=back,
                details={
                    "topic": p.topic,
                    "partition": p.partition,
                    "directory_id": actual,
                    "assigned_directory_id": assigned,
                    "assigned_log_dir": assigned_dir,
                },
            )
        )
    # replicas the metadata assigns to this broker in a scanned dir that is not on disk
    for (topic, pnum), st in sorted(im.replicas_of(node).items()):
        if (topic, pnum) in on_disk or topic == METADATA_TOPIC:
            continue
        assigned = st.directory(node)
        assigned_dir = ctx.dir_of(assigned) if assigned else None
        if assigned_dir is None:
            continue  # in a dir not scanned, or not placed by directory: cannot tell where it should be
        tp = f"{topic}-{pnum}"
        path = os.path.join(assigned_dir, tp)
        if os.path.islink(path):
            continue  # there, behind a symlink that is never followed (SYMLINK_IN_LOG_DIR): not missing
        only = st.replicas == [node]
        out.append(
            catalog.make(
                "REPLICA_MISSING",
                path,
                logdir=assigned_dir,
                severity=Severity.ERROR if only else None,
                partition=tp,
                replicas=st.replicas,
                leader=st.leader,
                isr=st.isr,
                directory_id=assigned,
                only_replica=" - it is the only replica, so its data is gone" if only else "",
                details={
                    "topic": topic,
                    "partition": pnum,
                    "assigned_directory_id": assigned,
                    "missing": True,
                },
            )
        )
    return out


def _stray_findings(ctx: KraftContext, paths: list[str]) -> list[Finding]:
    out: list[Finding] = []
    im, node = ctx.image, ctx.node_id
    for path in paths:
        try:
            strays = [p for p in LogDir.shared(path).orphan_partitions if p.kind is DirKind.STRAY]
        except OSError:
            continue
        for sp in strays:
            tp = f"{sp.topic}-{sp.partition}"
            try:
                size = sum(os.path.getsize(os.path.join(sp.path, n)) for n in os.listdir(sp.path))
                tid = sp.topic_id
            except OSError:
                size, tid = 0, None
            state = ""
            if im is not None:
                st = im.partition(sp.topic, sp.partition)
                if st is None:
                    state = f"; the cluster metadata has no {tp} any more"
                elif tid is not None and tid != st.topic_id:
                    state = (
                        f"; it belongs to an older incarnation of {sp.topic} (topic id {tid}, now "
                        f"{st.topic_id})"
                    )
                else:
                    mine = node is not None and node in st.replicas
                    state = (
                        f"; the metadata now lists replicas {st.replicas} (leader {st.leader}, ISR {st.isr})"
                        + (f", broker {node} among them" if mine else "")
                    )
            out.append(
                catalog.make(
                    "STRAY_REPLICA_LEFT",
                    str(sp.path),
                    logdir=path,
                    partition=tp,
                    size=human_bytes(size),
                    state=state,
                    details={"topic": sp.topic, "partition": sp.partition, "bytes": size, "topic_id": tid},
                )
            )
    return out


def _release_text(label: str) -> str:
    """A release label of the generated tables, with the branch or metadata.version a trunk commit stands
    for (from its SOURCES line), e.g. ``trunk-1eb7644 (4.0.0-SNAPSHOT)``; a release is its own label
    (``4.4.0``)."""
    import re

    from logdoctor.formats.internal.layouts import SOURCES

    m = re.search(r"branch (\d+\.\d+)|metadata\.version (\d+\.\d+-IV\d+)", SOURCES.get(label, ""))
    if not label.startswith("trunk-") or m is None:
        return label
    return f"{label} (branch {m[1]})" if m[1] else f"{label} (metadata.version {m[2]})"


def unread_registration_findings(image: MetadataImage) -> list[Finding]:
    """METADATA_RECORD_UNREAD for each broker registration of the image too new to read
    (:attr:`MetadataImage.unread_registrations`): where it is, what it is, the versions whose definitions
    are known, and the registration the image kept for that broker instead."""
    from logdoctor.formats.internal.layouts import known_releases, newest

    out: list[Finding] = []
    for broker, unread in sorted(image.unread_registrations.items()):
        kept = image.brokers.get(broker)
        facts = {
            "record": unread.record,
            "version": unread.version,
            "broker": broker,
            "known_versions": str(newest(unread.record).valid_versions),
            "known_in": ", ".join(_release_text(r) for r in known_releases(unread.record).split(", ")),
            "metadata_version": (
                f"{image.metadata_version_name} (level {image.metadata_version})"
                if image.metadata_version is not None
                else "unknown (no FeatureLevelRecord replayed)"
            ),
        }
        if kept is not None:
            facts.update(kept_offset=kept.offset, log_dirs=", ".join(kept.log_dirs) or "none")
        out.append(
            catalog.make(
                "METADATA_RECORD_UNREAD",
                unread.path,
                case=None if kept is not None else "no-earlier",
                offset=unread.offset,
                logdir=os.path.dirname(image.metadata_dir),
                **facts,
                details={
                    **facts,
                    "offset": unread.offset,
                    "kept_log_dirs": list(kept.log_dirs) if kept is not None else None,
                },
            )
        )
    return out


def check_kraft(
    paths: list[str], parts: list[PartitionReport], image: MetadataImage | None
) -> tuple[KraftContext, list[Finding]]:
    """Directory identity, directory assignment and stray findings of one broker's log dirs, and the
    broker registrations of its metadata log that could not be read."""
    identities = read_identities(paths)
    ctx = KraftContext(identities, image, _node_id(identities))
    findings = _identity_findings(ctx, parts)
    findings += _assignment_findings(ctx, parts)
    findings += _stray_findings(ctx, paths)
    if image is not None:
        findings += unread_registration_findings(image)
    return ctx, findings


def metadata_not_scanned(group: BrokerGroup) -> Finding:
    """The one note for a KRaft broker whose metadata log is not among the dirs scanned: its
    assignment checks were skipped (never made against another broker's metadata)."""
    first = group.dirs[0]
    return catalog.make(
        "KRAFT_METADATA_NOT_SCANNED",
        os.path.join(first, META_PROPERTIES_FILE),
        logdir=first,
        broker=group.label[0].upper() + group.label[1:],
        dirs=" ".join(group.dirs),
        details={"dirs": list(group.dirs), "broker": list(group.key) if group.key else None},
    )

"""`logdoctor scan`: check log dirs at one depth, partitions in parallel, findings in a stable order.

The log-dir level (lock, meta.properties, checkpoints, clean-shutdown marker, root leftovers) runs
in this process; each partition folder is one task for a process pool (all cores); the checks that
need every partition (checkpoints against the folders, duplicates across log dirs, meta.properties
and topic ids across dirs, unclean-shutdown evidence) run when all partitions are back.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from logdoctor.checks import catalog
from logdoctor.checks.access import BrokerUser, describe, missing_access
from logdoctor.checks.context import Depth, PartitionReport, PartitionTask, ScanOptions
from logdoctor.checks.findings import Finding, Severity, exit_code
from logdoctor.checks.kraft import check_kraft
from logdoctor.checks.metadata_log import check_metadata_log
from logdoctor.checks.partition import check_partition
from logdoctor.checks.topic_config import LOG_RETENTION_MS, ConfigInputs, TopicConfigResolver
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import split_lines
from logdoctor.logdir.lock import lock_holder
from logdoctor.logdir.metadata_image import MetadataImage, find_metadata_dir, replay
from logdoctor.logdir.model import CheckpointRead, LogDir
from logdoctor.logdir.names import (
    CLEAN_SHUTDOWN_FILE,
    CLEANER_OFFSET_CHECKPOINT,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES_FILE,
    OFFSET_CHECKPOINT_FILES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    DirKind,
)
from logdoctor.logdir.recognize import recognize


class ScanUsageError(Exception):
    """Bad arguments (e.g. a path that is not a directory): exit code 64."""


@dataclass(slots=True)
class LogDirReport:
    path: str
    broker_user: BrokerUser
    mode: str | None = None  # "zookeeper" | "kraft" | None
    cluster_id: str | None = None
    node_id: int | None = None
    locked: bool = False
    clean_shutdown: bool = False
    partitions: int = 0
    findings: list[Finding] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": self.mode,
            "cluster_id": self.cluster_id,
            "node_id": self.node_id,
            "locked": self.locked,
            "clean_shutdown": self.clean_shutdown,
            "partitions": self.partitions,
            "broker_user": self.broker_user.name,
        }


@dataclass(slots=True)
class ScanReport:
    depth: Depth
    now_ms: int
    log_dirs: list[LogDirReport]
    partitions: list[PartitionReport]
    findings: list[Finding]
    elapsed_s: float = 0.0
    bytes_read: int = 0
    metadata: MetadataImage | None = None  # the replay of the broker's __cluster_metadata-0, if scanned

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings)

    def counts(self) -> dict[str, int]:
        c = Counter(f.severity for f in self.findings)
        return {"errors": c[Severity.ERROR], "warnings": c[Severity.WARNING], "info": c[Severity.INFO]}

    def to_json(self) -> dict[str, Any]:
        return {
            "depth": self.depth.name.lower(),
            "now_ms": self.now_ms,
            "log_dirs": [d.to_json() for d in self.log_dirs],
            "partitions": [p.to_json() for p in self.partitions],
            "findings": [f.to_json() for f in self.findings],
            "summary": {**self.counts(), "exit_code": self.exit_code, "bytes_read": self.bytes_read},
            "metadata": self.metadata.summary() if self.metadata is not None else None,
        }


# --- log-dir level ------------------------------------------------------------------------------------


def _checkpoint_consequence(name: str) -> tuple[str, str]:
    """(what the broker does when it cannot read it, what deleting it does)."""
    if name == RECOVERY_POINT_CHECKPOINT:
        return (
            "LogManager warns and resets every recovery point of the dir to 0: after an unclean shutdown "
            "every "
            "segment of every partition is recovered",
            "the same full recovery, once",
        )
    if name == LOG_START_OFFSET_CHECKPOINT:
        return (
            "LogManager warns and starts every log at its first segment: records deleted by DeleteRecords "
            "become visible again",
            "the same",
        )
    if name == REPLICATION_OFFSET_CHECKPOINT:
        return (
            "reading the high watermarks fails (KafkaStorageException) and the log dir goes offline",
            "high watermarks restart from the log start; followers truncate and re-fetch",
        )
    return (
        "the log cleaner cannot read its progress and compacts every log again from the start",
        "the cleaner compacts every log again",
    )


def _root_checks(ld: LogDir, rep: LogDirReport) -> None:
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    user = rep.broker_user
    try:
        st = os.stat(path)
        lacking = missing_access(st, user, "rwx")
        if lacking:
            add(
                make(
                    "PERMISSION_DENIED",
                    path,
                    need="readable, writable and searchable",
                    user=user.name,
                    why=describe(st),
                    consequence="; the broker cannot use this log dir",
                    mode_fix=lacking,
                )
            )
    except OSError:
        pass
    holder = lock_holder(path)
    if holder is not None:
        rep.locked = True
        who = f" (by pid {holder.pid})" if holder.pid > 0 else ""
        add(make("BROKER_RUNNING", os.path.join(path, LOCK_FILE), holder=who))
    rep.clean_shutdown = os.path.isfile(os.path.join(path, CLEAN_SHUTDOWN_FILE))
    # root files: permissions
    for entry, p in ld.entries:
        if p.is_dir():
            continue
        try:
            st = os.stat(p)
        except OSError:
            continue
        if entry.name == LOCK_FILE:
            continue
        lacking = missing_access(st, user, "rw")
        if lacking:
            add(
                make(
                    "PERMISSION_DENIED",
                    str(p),
                    need=" and ".join({"r": "readable", "w": "writable"}[c] for c in lacking),
                    user=user.name,
                    why=describe(st),
                    consequence="; the broker cannot read or update it",
                    mode_fix=lacking,
                )
            )
    # meta.properties
    meta_path = os.path.join(path, META_PROPERTIES_FILE)
    mp = ld.meta_properties_read
    if not mp.exists:
        if ld.partitions or any(os.path.exists(os.path.join(path, n)) for n in OFFSET_CHECKPOINT_FILES):
            add(
                make(
                    "META_PROPERTIES_INVALID",
                    meta_path,
                    severity=Severity.WARNING,
                    problem=f"{meta_path} is missing: a ZooKeeper-mode broker writes a new one, a KRaft "
                    "broker refuses "
                    "to start ('No meta.properties found'); the dir's cluster id cannot be verified",
                    fix="Copy meta.properties from another log dir of the same broker (or run `kafka-storage "
                    "format` "
                    "for a new KRaft dir).",
                )
            )
    elif isinstance(mp.error, OSError):
        add(
            make(
                "PERMISSION_DENIED",
                meta_path,
                need="readable",
                user=user.name,
                why=str(mp.error),
                consequence="; the broker cannot verify the dir",
                mode_fix="r",
            )
        )
    elif mp.error is not None:
        e = mp.error
        add(
            make(
                "META_PROPERTIES_INVALID",
                meta_path,
                position=getattr(e, "position", None),
                problem=f"{meta_path} cannot be parsed ({e}): the broker fails to start on this log dir",
                fix="Restore meta.properties from another log dir of the same broker.",
            )
        )
    else:
        meta = mp.value
        rep.mode = "kraft" if meta.version == 1 else "zookeeper"
        rep.cluster_id = meta.cluster_id
        rep.node_id = meta.node_id
        try:
            empty = os.path.getsize(meta_path) == 0
        except OSError:
            empty = False
        if empty:
            add(
                make(
                    "META_PROPERTIES_INVALID",
                    meta_path,
                    severity=Severity.WARNING,
                    position=0,
                    problem=f"{meta_path} is empty (0 bytes, a torn write): the broker reads it as version 0 "
                    "with no "
                    "broker.id and no cluster.id, so nothing ties this dir to its cluster",
                    fix="Restore meta.properties (version, broker.id/node.id, cluster.id) from another log "
                    "dir of "
                    "the same broker.",
                )
            )
    # offset checkpoints: parse problems
    for name in OFFSET_CHECKPOINT_FILES:
        cp = ld.checkpoint(name)
        cpath = os.path.join(path, name)
        consequence, delete_effect = _checkpoint_consequence(name)
        if isinstance(cp.error, OSError):
            add(
                make(
                    "PERMISSION_DENIED",
                    cpath,
                    need="readable",
                    user=user.name,
                    why=str(cp.error),
                    consequence=f"; {consequence}",
                    mode_fix="r",
                )
            )
            continue
        if cp.error is not None:
            add(
                make(
                    "CHECKPOINT_CORRUPT",
                    cpath,
                    position=getattr(cp.error, "position", None),
                    problem=str(cp.error),
                    consequence=consequence,
                    logdir=path,
                    delete_effect=delete_effect,
                )
            )
            continue
        for prob in cp.problems[:1]:
            if prob.message.startswith("Expected ["):
                add(
                    make(
                        "CHECKPOINT_MISMATCH",
                        cpath,
                        position=prob.position,
                        severity=Severity.ERROR,
                        problem=f"{cpath}: the count line disagrees with the entries ({prob.message}); the "
                        "broker "
                        f"rejects the whole file: {consequence}",
                        fix="Correct line 2 to the number of entry lines, or rewrite the file: "
                        f"{catalog.repair_hint('CHECKPOINT_MISMATCH', path)}.",
                        details={
                            "file": name,
                            "expected": cp.checkpoint.count if cp.checkpoint else None,
                            "entries": len(cp.checkpoint.entries) if cp.checkpoint else None,
                        },
                    )
                )
            else:
                add(
                    make(
                        "CHECKPOINT_CORRUPT",
                        cpath,
                        position=prob.position,
                        problem=prob.message,
                        consequence=consequence,
                        logdir=path,
                        delete_effect=delete_effect,
                    )
                )
    # root leftovers
    for orphan in ld.orphans:
        op = str(orphan.path)
        if orphan.kind == "stray-dir":
            continue  # STRAY_REPLICA_LEFT (checks.kraft), with what the cluster metadata says
        if orphan.kind == "unknown-dir":
            add(
                make(
                    "INVALID_DIR_NAME",
                    op,
                    problem=f"{op} is not a topic-partition folder: the broker "
                    "fails to load the log dir ('... is not in the form of topic-partition')",
                )
            )
        elif orphan.kind == "unknown-file":
            add(
                make(
                    "UNKNOWN_FILE", op, problem="not a file Kafka writes in a log dir; the broker ignores it"
                )
            )
        else:
            texts = {
                "delete-dir": (
                    "a partition folder scheduled for deletion (-delete): the broker deletes it at startup",
                    "Nothing to do; the broker deletes it.",
                ),
                "future-dir": (
                    "a KIP-113 move target (-future) left by an interrupted replica move between log "
                    "dirs: the broker resumes the move",
                    "Let the broker finish the move, or cancel it with kafka-reassign-partitions.",
                ),
                "stray-dir": (
                    "a stray partition (-stray) the controller no longer assigns to this broker: the "
                    "broker deletes it",
                    "Keep a copy first if it may hold the only replica of data.",
                ),
                "tmp-file": (
                    "left by an interrupted atomic write of a checkpoint or meta.properties (the "
                    "original is intact): the broker ignores it",
                    "Delete it while the broker is stopped.",
                ),
            }
            problem, fix = texts.get(orphan.kind, (orphan.reason, "Delete it while the broker is stopped."))
            add(make("ORPHAN_FILE", op, problem=f"{op}: {problem}", fix=fix, details={"kind": orphan.kind}))


def _entry_positions(path: str) -> list[int | None]:
    """Byte position of each entry line of a well-formed checkpoint (for findings)."""
    try:
        with open(path, "rb") as f:
            lines = split_lines(f.read())
    except (OSError, FormatError):
        return []
    return [ln.position for ln in lines[2:]]


def _checkpoint_vs_partitions(ld: LogDir, rep: LogDirReport, parts: list[PartitionReport]) -> None:
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    live = {
        (p.topic, p.partition): p
        for p in parts
        if p.kind == DirKind.LOG.value and p.topic != "__cluster_metadata"
    }
    for name in (
        RECOVERY_POINT_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    ):
        cp: CheckpointRead = ld.checkpoint(name)
        cpath = os.path.join(path, name)
        if cp.error is not None or cp.problems:
            continue  # already reported; the broker would not use its entries
        if not cp.exists:
            if name == RECOVERY_POINT_CHECKPOINT and live:
                add(
                    make(
                        "CHECKPOINT_MISMATCH",
                        cpath,
                        problem=f"{cpath} is missing but the dir holds {len(live)} partition(s): the broker "
                        "uses "
                        "recovery point 0 for all of them (after an unclean shutdown it recovers every "
                        "segment)",
                        fix="Write it from the log end offsets: "
                        f"{catalog.repair_hint('CHECKPOINT_MISMATCH', path)}.",
                    )
                )
            continue
        entries = cp.checkpoint.entries if cp.checkpoint is not None else []
        positions = _entry_positions(cpath)
        stale = [(i, t, p) for i, (t, p, _o) in enumerate(entries) if (t, p) not in live]
        if stale:
            i0 = stale[0][0]
            listed = ", ".join(f"{t}-{p}" for _i, t, p in stale[:10]) + (" ..." if len(stale) > 10 else "")
            add(
                make(
                    "CHECKPOINT_MISMATCH",
                    cpath,
                    position=positions[i0] if i0 < len(positions) else None,
                    problem=f"{cpath} lists {len(stale)} partition(s) that are not in {path}: {listed} "
                    "(moved or "
                    "deleted by hand?); the broker ignores these entries and drops them at its next "
                    "checkpoint",
                    fix="If the folders were moved to another log dir, move their entries too (and fix both "
                    "count "
                    "lines); or rewrite the file from the dir: "
                    f"{catalog.repair_hint('CHECKPOINT_MISMATCH', path)}.",
                    details={"file": name, "absent": [f"{t}-{p}" for _i, t, p in stale]},
                )
            )
        listed_tps = {(t, p) for t, p, _o in entries}
        if name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
            missing = sorted(tp for tp in live if tp not in listed_tps)
            if missing:
                names = ", ".join(f"{t}-{p}" for t, p in missing[:10]) + (" ..." if len(missing) > 10 else "")
                effect = (
                    "the broker uses recovery point 0 for them (after an unclean shutdown it recovers all "
                    "their "
                    "segments)"
                    if name == RECOVERY_POINT_CHECKPOINT
                    else "their high watermark restarts at the log start offset"
                )
                add(
                    make(
                        "CHECKPOINT_MISMATCH",
                        cpath,
                        problem=f"{cpath} misses {len(missing)} partition(s) present in {path}: {names}; "
                        f"{effect}",
                        fix=f"{catalog.repair_hint('CHECKPOINT_MISMATCH', path)}; or, if the folders were "
                        "copied in by hand, add their lines and fix the count line.",
                        details={"file": name, "missing": [f"{t}-{p}" for t, p in missing]},
                    )
                )
        for i, (t, p, off) in enumerate(entries):
            part = live.get((t, p))
            if part is None or part.log_end_offset is None:
                continue
            leo, lso = part.log_end_offset, part.log_start_offset
            pos = positions[i] if i < len(positions) else None
            problem = None
            severity = None
            if name == RECOVERY_POINT_CHECKPOINT and off > leo:
                problem = (
                    f"recovery point {off} of {t}-{p} is beyond its log end offset {leo}: segments were "
                    "removed or the log truncated after the checkpoint; the broker lowers it to the log end"
                )
            elif name == RECOVERY_POINT_CHECKPOINT and lso is not None and off < lso:
                problem = (
                    f"recovery point {off} of {t}-{p} is below its log start offset {lso} (segments were "
                    "deleted "
                    "after the checkpoint; the broker raises it to the log start)"
                )
            elif name == REPLICATION_OFFSET_CHECKPOINT and off > leo:
                problem = (
                    f"high watermark {off} of {t}-{p} is beyond its log end offset {leo}: committed "
                    f"records {leo}..{off - 1} are missing from this replica (the broker clamps the high "
                    "watermark to the log end offset)"
                )
            elif name == REPLICATION_OFFSET_CHECKPOINT and lso is not None and off < lso:
                problem = (
                    f"high watermark {off} of {t}-{p} is below its log start offset {lso} (the broker "
                    "raises it to the log start)"
                )
            elif name == LOG_START_OFFSET_CHECKPOINT and off > leo:
                severity = Severity.ERROR
                problem = (
                    f"log start offset {off} of {t}-{p} is beyond its log end offset {leo}: at startup the "
                    "broker deletes ALL segments of the partition ('Deleting all segments because "
                    "logEndOffset is smaller than logStartOffset')"
                )
            elif name == CLEANER_OFFSET_CHECKPOINT and (off > leo or (lso is not None and off < lso)):
                problem = (
                    f"cleaner offset {off} of {t}-{p} is outside its log [{lso}, {leo}]: the cleaner "
                    "resets it and compacts the log from the start"
                )
            if problem is not None:
                add(
                    make(
                        "CHECKPOINT_MISMATCH",
                        cpath,
                        position=pos,
                        offset=off,
                        severity=severity,
                        problem=f"{cpath}: {problem}",
                        fix="Set the entry to a value within the log "
                        f"({catalog.repair_hint('CHECKPOINT_MISMATCH', path)}), or "
                        "re-replicate the partition if records are missing.",
                        details={
                            "file": name,
                            "topic": t,
                            "partition": p,
                            "checkpoint_offset": off,
                            "log_end_offset": leo,
                            "log_start_offset": lso,
                        },
                    )
                )


def _unclean_shutdown(ld: LogDir, rep: LogDirReport, parts: list[PartitionReport]) -> None:
    live = [p for p in parts if p.kind == DirKind.LOG.value and p.topic != "__cluster_metadata"]
    if rep.clean_shutdown or rep.locked or not live:
        return
    behind = [
        p
        for p in live
        if p.recovery_point is not None
        and p.log_end_offset is not None
        and p.recovery_point < p.log_end_offset
    ]
    untrimmed = sum(p.untrimmed_inactive_indexes for p in live)
    evidence = []
    if behind:
        evidence.append(
            f"{len(behind)} partition(s) have a recovery point below their log end offset "
            f"(e.g. {behind[0].topic}-{behind[0].partition}: {behind[0].recovery_point} < "
            f"{behind[0].log_end_offset})"
        )
    if untrimmed:
        evidence.append(f"{untrimmed} index file(s) of inactive segments were never trimmed")
    text = (" and " + "; ".join(evidence)) if evidence else ""
    rep.findings.append(
        catalog.make(
            "UNCLEAN_SHUTDOWN",
            os.path.join(str(ld.path), CLEAN_SHUTDOWN_FILE),
            logdir=str(ld.path),
            evidence=text,
            details={
                "partitions_behind_recovery_point": len(behind),
                "untrimmed_inactive_indexes": untrimmed,
            },
        )
    )


def _broker_groups(reports: list[LogDirReport]) -> list[list[str]]:
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


def _different_brokers(reports: list[LogDirReport], parts: list[PartitionReport]) -> Finding | None:
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
        problem=f"the {len(reports)} log dirs given belong to {len(by_broker)} different brokers"
        + (f" of {len(clusters)} clusters" if len(clusters) > 1 else f" of cluster {first.cluster_id}")
        + f" ({listing}): the log.dirs of one broker share its cluster.id and broker.id/node.id, so "
        "these are the log dirs of several brokers scanned together, or one broker whose "
        "meta.properties disagree (it refuses to start). Partitions found in several of them are "
        "replicas, not duplicates: they were not reported as DUPLICATE_PARTITION",
        commands=", ".join(f"`logdoctor scan {' '.join(r.path for r in rs)}`" for rs in by_broker.values()),
        details={"brokers": {f"{c}/{n}": [r.path for r in rs] for (c, n), rs in by_broker.items()}},
    )


def _cross_dir(
    reports: list[LogDirReport], parts: list[PartitionReport], image: MetadataImage | None = None
) -> list[Finding]:
    out: list[Finding] = []
    # dirs of different brokers: say so once, and skip the per-partition and per-dir comparisons
    brokers = _different_brokers(reports, parts)
    if brokers is not None:
        out.append(brokers)
    # the same partition in two log dirs (LogManager.loadLog fails startup)
    by_tp: dict[tuple[str, int], list[PartitionReport]] = defaultdict(list)
    for p in parts:
        if p.kind == DirKind.LOG.value and brokers is None:
            by_tp[(p.topic, p.partition)].append(p)
    for (t, n), ps in sorted(by_tp.items()):
        if len(ps) > 1:
            where = ", ".join(p.path for p in ps)
            for p in ps:
                out.append(
                    catalog.make(
                        "DUPLICATE_PARTITION",
                        p.path,
                        problem=f"{t}-{n} is in {len(ps)} log dirs of this broker ({where}): the broker "
                        "refuses to "
                        f"start ('Duplicate log directories for {t}-{n} are found'). This copy: log end "
                        "offset "
                        f"{p.log_end_offset}, {p.bytes} bytes",
                        logdir=p.log_dir,
                        logdirs=" ".join(sorted({q.log_dir for q in ps})),
                    )
                )
    # meta.properties across the log dirs of one broker
    with_meta = [r for r in reports if r.mode is not None] if brokers is None else []
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
                            problem=f"{label} {v} in {r.path} differs from {common} in the other log dirs "
                            f"({summary}): "
                            "the broker refuses to start (or takes this dir offline)",
                        )
                    )
    # topic ids: against the KRaft metadata log when one was scanned, else across a topic's partitions
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
                        problem=f"{p.topic}-{p.partition} has topic id {p.topic_id} but the KRaft metadata "
                        "log "
                        f"says {p.topic} is {known[p.topic]}: this folder belongs to a deleted incarnation "
                        "of the "
                        "topic; the broker treats it as a stray log (it is not served, and is deleted)",
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
                    problem=f"{p.topic}-{p.partition} has topic id {p.topic_id} but the topic's other "
                    "partitions "
                    f"have {common}: this folder belongs to an older incarnation of the topic (deleted and "
                    "recreated); the broker fails this partition",
                )
            )
    return out


# --- orchestration ------------------------------------------------------------------------------------


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent(parent: int) -> None:
    """Worker initializer: a scan killed with SIGKILL (an operator's kill -9, an OOM kill) takes its
    workers with it instead of leaving them blocked forever on the pool's queue (Linux prctl
    PR_SET_PDEATHSIG; elsewhere nothing is set)."""
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _run(tasks: list[PartitionTask], jobs: int) -> Iterator[PartitionReport]:
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield check_partition(t)
        return
    ctx = multiprocessing.get_context("fork")
    chunk = max(1, min(64, len(tasks) // (jobs * 8)))
    with ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_die_with_parent, initargs=(os.getpid(),)
    ) as ex:
        yield from ex.map(check_partition, tasks, chunksize=chunk)


def topic_config_resolver(
    log_dirs: Iterable[str | os.PathLike[str]], options: ScanOptions
) -> TopicConfigResolver:
    """The retention settings of every topic of one broker's log dirs, as ``options`` ask (scan, retention,
    census and the report all resolve them here)."""
    inputs = options.config_inputs or ConfigInputs()
    if options.retention_ms is not None:
        inputs = dataclasses.replace(
            inputs, broker_overrides={**inputs.broker_overrides, LOG_RETENTION_MS: str(options.retention_ms)}
        )
    return TopicConfigResolver.for_log_dirs(log_dirs, inputs)


def scan(
    log_dirs: Iterable[str | os.PathLike[str]],
    options: ScanOptions,
    *,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ScanReport:
    """Scan the log dirs of one broker. Never stops on a finding; raises ScanUsageError for bad paths."""
    started = time.perf_counter()
    if options.now_ms <= 0:
        options = dataclasses.replace(options, now_ms=int(time.time() * 1000))
    paths = []
    for d in log_dirs:
        p = os.path.abspath(os.fspath(d))
        what = recognize(p)
        if not what.is_log_dir:  # never advice for what is not a log dir (a partition folder, /etc)
            raise ScanUsageError(what.refusal())
        if p not in paths:
            paths.append(p)
    reports: list[LogDirReport] = []
    dirs: list[LogDir] = []
    tasks: list[PartitionTask] = []
    configs = topic_config_resolver(paths, options)
    for p in paths:
        ld = LogDir(p)
        user = options.broker_user or BrokerUser.owner_of(p)
        rep = LogDirReport(p, user)
        _root_checks(ld, rep)
        rps, hws, lss = (
            ld.checkpoint(n)
            for n in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT)
        )

        # the broker uses an unreadable checkpoint's entries as empty (LogManager.loadLogs)
        def _get(cp: CheckpointRead, t: str, n: int) -> int | None:
            return None if cp.error is not None or cp.problems else cp.get(t, n)

        for part in ld.partitions:
            meta_log = part.is_metadata
            tasks.append(
                PartitionTask(
                    log_dir=p,
                    path=str(part.path),
                    name=part.name,
                    topic=part.topic,
                    partition=part.partition,
                    kind=part.kind.value,
                    recovery_point=None if meta_log else _get(rps, part.topic, part.partition),
                    log_start_checkpoint=None if meta_log else _get(lss, part.topic, part.partition),
                    high_watermark=None if meta_log else _get(hws, part.topic, part.partition),
                    clean_shutdown=rep.clean_shutdown and not meta_log,
                    broker_user=user,
                    options=options,
                    topic_config=None if meta_log else configs.resolve(part.topic),
                )
            )
        rep.partitions = len(ld.partitions)
        reports.append(rep)
        dirs.append(ld)
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    results: list[PartitionReport] = []
    for rep_p in _run(tasks, jobs):
        results.append(rep_p)
        if progress is not None:
            progress(len(results), len(tasks))
    by_dir: dict[str, list[PartitionReport]] = defaultdict(list)
    for r in results:
        by_dir[r.log_dir].append(r)
    for ld, rep in zip(dirs, reports, strict=True):
        parts = by_dir[str(ld.path)]
        _checkpoint_vs_partitions(ld, rep, parts)
        _unclean_shutdown(ld, rep, parts)
    findings: list[Finding] = []
    order = {p: i for i, p in enumerate(paths)}
    for rep in reports:
        findings.extend(rep.findings)
    for r in results:
        findings.extend(r.findings)
    # KRaft checks per broker: the log dirs of several brokers scanned together each get their own
    # broker's metadata log (a replica of broker 2 is not "not assigned to broker 1")
    image: MetadataImage | None = None
    kraft_findings: list[Finding] = []
    for group in _broker_groups(reports):
        mdir = find_metadata_dir(group)
        group_image = replay(mdir) if mdir is not None else None
        image = image if image is not None else group_image
        members = set(group)
        group_parts = [r for r in results if r.log_dir in members]
        kraft_findings.extend(check_kraft(group, group_parts, group_image)[1])
        if mdir is not None:
            kraft_findings.extend(check_metadata_log(mdir, group_image))
    findings.extend(_cross_dir(reports, results, image))
    findings.extend(kraft_findings)
    findings.sort(key=lambda f: (_dir_index(f.path, order), *f.sort_key()))
    results.sort(key=lambda r: (order.get(r.log_dir, 0), r.topic, r.partition, r.path))
    return ScanReport(
        depth=options.depth,
        now_ms=options.now_ms,
        log_dirs=reports,
        partitions=results,
        findings=findings,
        elapsed_s=time.perf_counter() - started,
        bytes_read=sum(r.bytes_read for r in results),
        metadata=image,
    )


def _dir_index(path: str, order: dict[str, int]) -> int:
    best = len(order)
    for d, i in order.items():
        if path == d or path.startswith(d + os.sep):
            best = min(best, i)
    return best

"""Checks of a log dir's root, before any partition is read: the dir's permissions and lock,
root files' permissions, meta.properties, the offset checkpoint files as files, and leftovers.

Symlinks, FIFOs, sockets and devices at the root are reported once (checks.irregular) and read by
no check here: a symlinked checkpoint or meta.properties is not read through, a FIFO ``.lock`` is
not probed."""

from __future__ import annotations

import os
from functools import partial

from logdoctor.checks import catalog, live
from logdoctor.checks.access import describe, missing_access, permission_denied
from logdoctor.checks.findings import Severity
from logdoctor.checks.irregular import irregular_findings
from logdoctor.checks.scan_report import LogDirReport
from logdoctor.logdir.lock import lock_holder
from logdoctor.logdir.model import LogDir
from logdoctor.logdir.names import (
    CLEAN_SHUTDOWN_FILE,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES_FILE,
    OFFSET_CHECKPOINT_FILES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    RootEntryKind,
)


def checkpoint_consequence(name: str) -> tuple[str, str]:
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


def check_root(ld: LogDir, rep: LogDirReport) -> None:
    """Every root check of one log dir, findings into ``rep`` (also its mode, identity, lock state)."""
    rep.findings.extend(irregular_findings(ld.irregular, str(ld.path), "log dir"))
    for check in (
        _dir_access_and_lock,
        _root_file_permissions,
        _meta_properties,
        _offset_checkpoint_files,
        _root_leftovers,
    ):
        check(ld, rep)


def _irregular_names(ld: LogDir) -> set[str]:
    return {i.path.name for i in ld.irregular}


def _dir_access_and_lock(ld: LogDir, rep: LogDirReport) -> None:
    """The dir's own permissions for the broker's user, and a running broker's `.lock`."""
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    user = rep.broker_user
    try:
        st = os.stat(path)
        lacking = missing_access(st, user, "rwx")
        if lacking:
            why, need = describe(st), "readable, writable and searchable"
            add(permission_denied(path, path, user, lacking, why, "the broker cannot use this log dir", need))
    except OSError:
        pass
    holder = lock_holder(path)
    if holder is not None:
        rep.locked = True
        who = f" (by pid {holder.pid})" if holder.pid > 0 else ""
        add(make("BROKER_RUNNING", os.path.join(path, LOCK_FILE), holder=who))
    rep.clean_shutdown = os.path.isfile(os.path.join(path, CLEAN_SHUTDOWN_FILE))


_FOLDER_KINDS = (RootEntryKind.PARTITION, RootEntryKind.REMOTE_LOG_INDEX_CACHE)


def _root_file_permissions(ld: LogDir, rep: LogDirReport) -> None:
    """Every root file the broker's user cannot read or write."""
    logdir = str(ld.path)
    add = rep.findings.append
    user = rep.broker_user
    for entry, p in ld.listing:
        # partition folders and the index cache are folders by their listing: no stat for each of 50,000
        if entry.kind in _FOLDER_KINDS or os.path.isdir(p):
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
                permission_denied(
                    str(p), logdir, user, lacking, describe(st), "the broker cannot read or update it"
                )
            )


def _meta_properties(ld: LogDir, rep: LogDirReport) -> None:
    """meta.properties: missing, unreadable, unparsable or empty; the dir's mode and identity."""
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    user = rep.broker_user
    meta_path = os.path.join(path, META_PROPERTIES_FILE)
    if META_PROPERTIES_FILE in _irregular_names(ld):
        return  # NOT_A_REGULAR_FILE / SYMLINK_IN_LOG_DIR: never read
    mp = ld.meta_properties_read
    if not mp.exists:
        if ld.partitions or any(os.path.exists(os.path.join(path, n)) for n in OFFSET_CHECKPOINT_FILES):
            add(make("META_PROPERTIES_INVALID", meta_path, case="missing", severity=Severity.WARNING))
    elif isinstance(mp.error, OSError):
        add(permission_denied(meta_path, path, user, "r", str(mp.error), "the broker cannot verify the dir"))
    elif mp.error is not None:
        e = mp.error
        add(make("META_PROPERTIES_INVALID", meta_path, position=getattr(e, "position", None), error=e))
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
                    "META_PROPERTIES_INVALID", meta_path, case="empty", severity=Severity.WARNING, position=0
                )
            )


def _offset_checkpoint_files(ld: LogDir, rep: LogDirReport) -> None:
    """The four offset checkpoint files as files: unreadable, unparsable, a wrong count line."""
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    user = rep.broker_user
    irregular = _irregular_names(ld)
    for name in OFFSET_CHECKPOINT_FILES:
        if name in irregular:
            continue  # NOT_A_REGULAR_FILE / SYMLINK_IN_LOG_DIR: never read
        cp = ld.checkpoint(name)
        cpath = os.path.join(path, name)
        consequence, delete_effect = checkpoint_consequence(name)
        if isinstance(cp.error, OSError):
            add(permission_denied(cpath, path, user, "r", str(cp.error), consequence))
            continue
        # the file unparsable, else its first problem: a count line that disagrees, or a malformed entry
        if cp.error is not None:
            problems = [(getattr(cp.error, "position", None), str(cp.error), False)]
        else:
            problems = [(p.position, p.message, p.message.startswith("Expected [")) for p in cp.problems[:1]]
        for position, problem, count_line in problems:
            if count_line:
                add(
                    make(
                        "CHECKPOINT_MISMATCH",
                        cpath,
                        position=position,
                        case="count-line",
                        severity=Severity.ERROR,
                        detail=problem,
                        consequence=consequence,
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
                        position=position,
                        problem=problem,
                        consequence=consequence,
                        logdir=path,
                        delete_effect=delete_effect,
                    )
                )


def _root_leftovers(ld: LogDir, rep: LogDirReport) -> None:
    """Folders and files at the root that are not a partition, nor a file the broker writes there."""
    path = str(ld.path)
    make = partial(catalog.make, logdir=path)
    add = rep.findings.append
    for orphan in ld.orphans:
        op = str(orphan.path)
        if orphan.kind == "stray-dir":
            continue  # STRAY_REPLICA_LEFT (checks.kraft), with what the cluster metadata says
        if rep.locked and orphan.kind in live.TRANSIENT_ORPHANS:
            continue  # a running broker's work in progress (checks.live)
        if orphan.kind == "unknown-dir":
            add(make("INVALID_DIR_NAME", op))
        elif orphan.kind == "unknown-file":
            add(make("UNKNOWN_FILE", op, where="log dir"))
        else:
            case = "root-tmp-file" if orphan.kind == "tmp-file" else orphan.kind
            if case in catalog.CATALOG["ORPHAN_FILE"].cases:
                add(make("ORPHAN_FILE", op, case=case, details={"kind": orphan.kind}))
            else:
                add(make("ORPHAN_FILE", op, reason=orphan.reason, details={"kind": orphan.kind}))

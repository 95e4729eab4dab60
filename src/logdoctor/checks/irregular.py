"""Entries that are never opened nor followed: symlinks, FIFOs, sockets, devices, and folders where a
log dir holds regular files (NOT_A_REGULAR_FILE, SYMLINK_IN_LOG_DIR).

The model lists them apart (:attr:`logdoctor.logdir.model.LogDir.irregular`,
:attr:`~logdoctor.logdir.model.Partition.irregular`), so no other check reads them: a FIFO would block
a read, and a symlink may lead out of the log dirs given, where logdoctor neither reads nor writes.
Deciding where a symlink leads costs ``readlink``/``lstat`` of the path's components, never an open.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from logdoctor.checks import catalog
from logdoctor.checks.findings import Finding, Severity
from logdoctor.logdir.model import Irregular
from logdoctor.logdir.names import (
    PartitionFileKind,
    RootEntryKind,
    classify_partition_file,
    classify_root_entry,
    parse_partition_dir,
)

_NEVER = {
    "FIFO": "logdoctor never opens it (reading a FIFO blocks until something writes to it)",
    "folder": "logdoctor does not look inside",
}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _kafka_name(name: str, where: str) -> bool:
    if where == "partition folder":
        return classify_partition_file(name).kind is not PartitionFileKind.UNKNOWN
    return classify_root_entry(name, False).kind is not RootEntryKind.UNKNOWN


def _what(i: Irregular, where: str) -> str:
    if where == "log dir" and parse_partition_dir(i.path.name) is not None:
        return "the partition behind it"
    return "the file behind it"


def symlink_outside(i: Irregular, log_dir: str) -> bool:
    """True when the symlink ``i`` leads out of ``log_dir`` (after resolving every link on the way)."""
    return not _inside(os.path.realpath(i.path), os.path.realpath(log_dir))


def irregular_findings(entries: Iterable[Irregular], log_dir: str, where: str) -> list[Finding]:
    """One finding per entry; ``where`` is "log dir" (the root) or "partition folder"."""
    out: list[Finding] = []
    for i in entries:
        path = str(i.path)
        if i.is_symlink:
            target = i.target if i.target is not None else "(unreadable link)"
            resolved = os.path.realpath(i.path)
            if not os.path.exists(i.path):
                case = "dangling"
            elif symlink_outside(i, log_dir):
                case = "outside"
            else:
                case = "inside"
            out.append(
                catalog.make(
                    "SYMLINK_IN_LOG_DIR",
                    path,
                    case=case,
                    logdir=log_dir,
                    target=target,
                    what=_what(i, where),
                    details={"target": i.target, "resolved": resolved, "case": case},
                )
            )
            continue
        if i.kind == "folder" and not _kafka_name(i.path.name, where):
            out.append(catalog.make("UNKNOWN_FILE", path, logdir=log_dir, where=where))
            continue
        known = _kafka_name(i.path.name, where)
        out.append(
            catalog.make(
                "NOT_A_REGULAR_FILE",
                path,
                case="kafka-name" if known else "other-name",
                logdir=log_dir,
                kind=i.kind,
                where=where,
                never=_NEVER.get(i.kind, "logdoctor never opens it"),
                severity=Severity.WARNING if i.kind == "folder" else None,
                details={"kind": i.kind},
            )
        )
    return out

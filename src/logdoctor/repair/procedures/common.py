"""What both operator procedures share: refusals, broker identity, checkpoint edits, disk usage."""

from __future__ import annotations

import difflib
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import FormatError, LogDoctorError
from logdoctor.formats.checkpoint import (
    OffsetCheckpoint,
    new_offset_checkpoint,
    parse_offset_checkpoint,
    write_offset_checkpoint,
)
from logdoctor.formats.properties import MetaProperties, parse_meta_properties
from logdoctor.logdir.files import read_file
from logdoctor.logdir.names import META_PROPERTIES_FILE, DirKind, parse_partition_dir
from logdoctor.logdir.recognize import require_log_dir
from logdoctor.repair import backup as bk
from logdoctor.repair import copies as cp
from logdoctor.repair import safety
from logdoctor.repair.backup import NoSpaceError
from logdoctor.repair.plan import Action, Change, Plan, Step
from logdoctor.repair.steps.base import BackupNames
from logdoctor.repair.steps.write import write_file

TopicPartition = tuple[str, int]

SPACE_MARGIN_MIN = 64 << 20  # bytes kept free on the destination besides what a copy needs
SPACE_MARGIN_FRACTION = 0.05  # ... or this share of the copy, whichever is larger


class ProcedureRefused(LogDoctorError):
    """The procedure will not run (nothing was written); the message says why."""


class ProcedureUsageError(LogDoctorError):
    """Bad arguments (a partition name that does not parse, the same dir twice, ...)."""


def parse_topic_partition(text: str) -> TopicPartition:
    """``my-topic-3`` -> ("my-topic", 3): the partition is after the last dash, as in folder names."""
    parsed = parse_partition_dir(text)
    if parsed is None or parsed.kind is not DirKind.LOG:
        raise ProcedureUsageError(f"{text!r} is not TOPIC-PARTITION (e.g. orders-3)")
    return parsed.topic, parsed.partition


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def log_dir_path(path: str | os.PathLike[str]) -> str:
    """The absolute path of a log dir (or an empty folder); NotALogDirError for anything else."""
    p = os.path.abspath(os.fspath(path))
    require_log_dir(p)
    return p


def check_distinct(a: str, b: str) -> None:
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    if ra == rb:
        raise ProcedureUsageError(f"{a} and {b} are the same log dir")
    if ra.startswith(rb + os.sep) or rb.startswith(ra + os.sep):
        raise ProcedureUsageError(f"{a} and {b}: one log dir is inside the other")


def read_meta(log_dir: str) -> MetaProperties:
    """meta.properties of a log dir; ProcedureRefused when it is missing or unreadable."""
    path = os.path.join(log_dir, META_PROPERTIES_FILE)
    try:
        data = read_file(path)  # never through a symlink, never a FIFO
    except FileNotFoundError:
        raise ProcedureRefused(
            f"{path} is missing: cannot tell which broker and cluster {log_dir} belongs to "
            "(start the broker once with this dir in log.dirs so it writes it)"
        ) from None
    except OSError as e:
        raise ProcedureRefused(f"{path} cannot be read: {e.strerror}") from None
    try:
        return parse_meta_properties(data, source=path)
    except FormatError as e:
        raise ProcedureRefused(f"{path} is not a valid meta.properties ({e}); run `logdoctor scan`") from None


def open_log_dirs(
    a: str | os.PathLike[str], b: str | os.PathLike[str]
) -> tuple[str, str, MetaProperties, MetaProperties]:
    """Two distinct log dirs (absolute paths) that no broker holds, with their meta.properties.

    ProcedureUsageError, BrokerRunningError or ProcedureRefused, in that order; nothing is written.
    """
    a_dir, b_dir = log_dir_path(a), log_dir_path(b)
    check_distinct(a_dir, b_dir)
    safety.refuse_if_locked([a_dir, b_dir])  # the engine checks again before writing
    return a_dir, b_dir, read_meta(a_dir), read_meta(b_dir)


def check_same_cluster(a_label: str, a_meta: MetaProperties, b_label: str, b_meta: MetaProperties) -> None:
    """ProcedureRefused unless both log dirs belong to one cluster."""
    if a_meta.cluster_id != b_meta.cluster_id:
        raise ProcedureRefused(
            f"{a_label} belongs to cluster {a_meta.cluster_id} but {b_label} to cluster {b_meta.cluster_id}"
        )


def describe_meta(meta: MetaProperties) -> dict[str, Any]:
    return {
        "mode": "kraft" if meta.is_kraft else "zookeeper",
        "broker_id": meta.node_id,
        "cluster_id": meta.cluster_id,
        "directory_id": meta.directory_id,
    }


def read_checkpoint(log_dir: str, name: str) -> tuple[OffsetCheckpoint | None, bytes | None]:
    """(parsed, raw bytes) of an offset checkpoint; (None, None) when absent. A file the broker would
    reject refuses the procedure (repair it first)."""
    path = os.path.join(log_dir, name)
    try:
        data = read_file(path)  # never through a symlink, never a FIFO
    except FileNotFoundError:
        return None, None
    except OSError as e:
        raise ProcedureRefused(f"{path} cannot be read: {e.strerror}") from None
    try:
        return parse_offset_checkpoint(data, source=path), data
    except FormatError as e:
        raise ProcedureRefused(
            f"{path} is not a checkpoint the broker can read ({e}); "
            "run `logdoctor repair` on this log dir first"
        ) from None


def edited_checkpoint(
    cp_in: OffsetCheckpoint | None, remove: set[TopicPartition], put: list[tuple[str, int, int]]
) -> bytes:
    """Kafka's bytes for the checkpoint with ``remove`` (and the topic-partitions of ``put``) dropped and
    ``put`` appended, count line matching the entries."""
    drop = set(remove) | {(t, p) for t, p, _ in put}
    kept = [(t, p, o) for t, p, o in (cp_in.entries if cp_in is not None else []) if (t, p) not in drop]
    return write_offset_checkpoint(new_offset_checkpoint(kept + list(put)))


def text_diff(path: str, before: bytes | None, after: bytes) -> str:
    a = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = after.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"{path} (before)", f"{path} (after)", n=1))


def checkpoint_action(
    log_dir: str, name: str, before: bytes | None, after: bytes, names: BackupNames, kind: str, reason: str
) -> Action | None:
    """An action rewriting one checkpoint file (None when nothing changes)."""
    if before == after:
        return None
    path = os.path.join(log_dir, name)
    step = write_file(path, after, names)
    change = Change(
        path, len(before) if before is not None else None, len(after), text_diff(path, before, after)
    )
    return Action(kind, path, reason, steps=[step], changes=[change])


def file_writes(folder: str, files: dict[str, bytes], names: BackupNames) -> tuple[list[Step], list[Change]]:
    """A ``write`` step and its change for each of ``files`` ({name: bytes}) in ``folder``."""
    paths = [(os.path.join(folder, name), data) for name, data in files.items()]
    return [write_file(p, d, names) for p, d in paths], [Change(p, None, len(d)) for p, d in paths]


def add_checkpoint_edit(
    plan: Plan,
    names: BackupNames,
    log_dir: str,
    name: str,
    checkpoint: tuple[OffsetCheckpoint | None, bytes | None],
    remove: set[TopicPartition],
    put: list[tuple[str, int, int]],
    kind: str,
    reason: str,
) -> None:
    """Append to ``plan`` the rewrite of one checkpoint (as :func:`read_checkpoint` returned it) with
    :func:`edited_checkpoint`'s edit; nothing when the bytes stay the same."""
    parsed, raw = checkpoint
    after = edited_checkpoint(parsed, remove, put)
    action = checkpoint_action(log_dir, name, raw, after, names, kind, reason)
    if action is not None:
        plan.actions.append(action)


def delete_dir_name(tp: TopicPartition) -> str:
    """Kafka's name for a folder scheduled for deletion: ``<topic>-<p>.<uuid hex>-delete``."""
    return f"{tp_name(tp)}.{uuid.uuid4().hex}-delete"


def new_plan(
    log_dirs: list[str], backup_dir: str | os.PathLike[str] | None, beside: str
) -> tuple[Plan, BackupNames]:
    """An empty plan over ``log_dirs`` (created now) and its backup names; the backup dir is
    ``backup_dir`` or, when not given, the engine's beside ``beside``
    (:func:`logdoctor.repair.backup.default_backup_dir`, unique)."""
    created = int(time.time() * 1000)
    backup = os.path.abspath(os.fspath(backup_dir)) if backup_dir else bk.default_backup_dir(beside, created)
    return Plan(log_dirs, backup, created_ms=created), BackupNames(log_dirs)


def space_margin(need: int) -> int:
    return max(SPACE_MARGIN_MIN, int(need * SPACE_MARGIN_FRACTION))


def check_free_space(where: str, need: int, what: str) -> dict[str, int]:
    """NoSpaceError unless the file system of ``where`` has ``need`` bytes plus the margin free."""
    free = cp.free_bytes(where)
    margin = space_margin(need)
    if free < need + margin:
        raise NoSpaceError(
            f"{where} has {free:,} bytes free; {what} needs {need:,} plus a margin of {margin:,} bytes"
        )
    return {"free": free, "need": need, "margin": margin}


@dataclass(slots=True)
class ProcedurePlan:
    """An engine plan plus what the operator should read before applying it."""

    procedure: str  # "move-partition" | "sync-replica"
    plan: Plan
    summary: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "procedure": self.procedure,
            "summary": self.summary,
            "notes": self.notes,
            "plan": self.plan.to_json(),
        }


__all__ = [
    "ProcedurePlan",
    "ProcedureRefused",
    "ProcedureUsageError",
    "TopicPartition",
    "add_checkpoint_edit",
    "check_distinct",
    "check_free_space",
    "check_same_cluster",
    "checkpoint_action",
    "delete_dir_name",
    "describe_meta",
    "edited_checkpoint",
    "file_writes",
    "log_dir_path",
    "new_plan",
    "open_log_dirs",
    "parse_topic_partition",
    "read_checkpoint",
    "read_meta",
    "space_margin",
    "tp_name",
]

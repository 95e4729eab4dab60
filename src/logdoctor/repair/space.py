"""The space a plan needs on each file system, step by step, and the check before a run writes.

A run adds to the file system of its backup dir (originals, removed tails, staged new contents, the
journal and README: :data:`~logdoctor.repair.backup.SPACE_MARGIN_BYTES` for those two) and, in the log
dirs, writes each new file under a temp name beside its target before the rename
(``logdir.atomic``): a rebuilt index, a rewritten checkpoint, a copied partition. It also frees space
there: a file it replaces is unlinked by the rename, a truncation cuts a tail, a partition moved to
another file system is removed. The check follows the plan in order on each file system: the most it
ever needs beyond what is used now (its peak, whole blocks of the file system for every new file, and a
block for the entries of each folder it adds names to) must be free. A move-partition off a full disk
thus fits: the source's checkpoints are rewritten after the moved folder freed its space.

A rebuilt index takes its final size only: logdoctor writes the bytes Kafka's ``LogSegment.recover``
leaves, i.e. after ``AbstractIndex.trimToValidSize`` (K:storage/src/main/java/org/apache/kafka/storage/
internals/log/AbstractIndex.java: ``reset`` resizes a rebuilt index to ``maxIndexSize``, 10 MiB, and
``close`` trims it to ``entries * entrySize``), straight into a temp file of that size; it never takes
the preallocated 10 MiB Kafka's own rebuild extends the file to while it writes.

When a log dir's file system is short, the refusal says what takes the space, and how to free it first:
the ``logdoctor move-partition`` command (runnable as printed) that moves a partition the plan does not
touch to another log dir of the same broker (among the log dirs given, or beside this one, with the same
broker and cluster ids in meta.properties) on another file system with room for it.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from logdoctor.repair import backup as bk
from logdoctor.repair.plan import Plan
from logdoctor.repair.steps.registry import operation

__all__ = ["DeviceNeed", "check", "fits", "needs"]

_SHOWN = 3  # new files named in a refusal


@dataclass(slots=True)
class DeviceNeed:
    """What a plan needs on one file system."""

    where: str  # the first folder of the plan seen on it (existing, or its nearest existing parent)
    block: int  # the file system's block size (statvfs f_frsize)
    backup: int = 0  # backup dir: originals, tails, staged contents (bytes)
    live_peak: int = 0  # log dirs: the most the steps need at once beyond what is used now (whole blocks)
    new_files: list[tuple[str, int]] = field(default_factory=list)  # (path, bytes) written in log dirs
    folders: set[str] = field(default_factory=set)  # folders that get new names
    log_dirs: list[str] = field(default_factory=list)  # the plan's log dirs on this file system
    holds_backup: bool = False

    @property
    def total(self) -> int:
        margin = bk.SPACE_MARGIN_BYTES if self.holds_backup else 0
        return self.backup + margin + self.live_peak


def _blocks(n: int, block: int) -> int:
    return -(-n // block) * block if n > 0 else 0


def needs(plan: Plan) -> list[DeviceNeed]:
    """What ``plan`` needs on each file system it writes to, in plan order (see the module doc)."""
    by_dev: dict[int, DeviceNeed] = {}
    running: dict[int, int] = {}
    devices: dict[str, int] = {}  # folder -> its file system (a stat per folder, not per step)

    def dev_of(path: str) -> int:
        dev = devices.get(path)
        if dev is None:
            dev = devices[path] = os.stat(bk.existing(path)).st_dev
        return dev

    def device(path: str) -> DeviceNeed:
        dev = dev_of(path)
        need = by_dev.get(dev)
        if need is None:
            where = bk.existing(path)
            need = by_dev[dev] = DeviceNeed(where, os.statvfs(where).f_frsize or 4096)
            running[dev] = 0
        return need

    b = device(plan.backup_dir)
    b.holds_backup = True
    for d in plan.log_dirs:
        device(d).log_dirs.append(os.path.abspath(d))
    for step in plan.steps:
        op = operation(step)
        b.backup += op.backup_cost(step, plan.backup_dir)
        live = op.live_cost(step)
        if live:
            target = step.params.get("dst") or step.path
            folder = os.path.dirname(target)
            need = device(folder)
            dev = dev_of(folder)
            files = op.live_files(step)
            add = _blocks(live, need.block) + (files - 1) * need.block
            if folder not in need.folders:
                need.folders.add(folder)
                add += need.block  # the folder's new entries (ext4 grows a folder a block at a time)
            need.new_files.append((target, live))
            need.live_peak = max(need.live_peak, running[dev] + add)
            running[dev] += add
        freed = op.live_freed(step, plan.backup_dir)
        if freed:
            need = device(os.path.dirname(step.path))
            dev = dev_of(os.path.dirname(step.path))
            running[dev] -= freed // need.block * need.block  # whole blocks: never more than it frees
    return list(by_dev.values())


def check(plan: Plan) -> None:
    """:class:`~logdoctor.repair.backup.NoSpaceError` unless every file system the plan writes to has
    what it needs free (:func:`needs`), naming what takes it, where, and how to make room. Writes
    nothing."""
    for need in needs(plan):
        have = bk.free_bytes(need.where)
        if have < need.total:
            raise bk.NoSpaceError(_refusal(plan, need, have))


def fits(plan: Plan) -> dict[str, object]:
    """Whether ``--apply`` of ``plan`` will find the space it needs, judged now by :func:`check`:
    ``fits`` and the text that says so (a dry run says it, instead of an --apply refused for space)."""
    try:
        check(plan)
    except bk.NoSpaceError as e:
        return {"fits": False, "text": f"--apply will be refused (no space, 73): {e}"}
    except OSError as e:
        return {"fits": False, "text": f"the free space could not be read: {e}"}
    return {"fits": True, "text": "the space --apply needs is free (backups, copies and margin)"}


def _refusal(plan: Plan, need: DeviceNeed, have: int) -> str:
    parts = []
    if need.new_files:
        shown = ", ".join(f"{p} ({n:,} B)" for p, n in need.new_files[:_SHOWN])
        more = len(need.new_files) - _SHOWN
        parts.append(
            f"{len(need.new_files)} new file(s) in the log dirs, written beside their targets before "
            f"anything is removed: {shown}{f' and {more} more' if more > 0 else ''}; "
            f"{need.live_peak:,} bytes at most at once in whole {need.block:,}-byte blocks, with a block "
            f"for the entries of each of {len(need.folders)} folder(s)"
        )
    if need.holds_backup:
        parts.append(
            f"the backup dir {plan.backup_dir}: {need.backup:,} bytes of originals and staged contents "
            f"and {bk.SPACE_MARGIN_BYTES:,} for its journal and README"
        )
    text = (
        f"{need.where} is on a file system with {have:,} bytes free; this run needs {need.total:,} there: "
        + "; ".join(parts)
    )
    ways = []
    if need.holds_backup and need.backup + bk.SPACE_MARGIN_BYTES > 0:
        ways.append("give --backup-dir on another file system with more space")
    if need.live_peak > have and need.log_dirs:
        ways.append(_freeing_move(plan, need, need.live_peak - have))
    return text + ". To make room: " + "; or ".join(ways) + ", then run it again"


def _folder_bytes(path: str) -> int:
    try:
        with os.scandir(path) as it:
            return sum(e.stat(follow_symlinks=False).st_size for e in it if e.is_file(follow_symlinks=False))
    except OSError:
        return 0


def _identity(log_dir: str) -> tuple[str | None, int | None] | None:
    from logdoctor.errors import FormatError
    from logdoctor.formats.properties import parse_meta_properties
    from logdoctor.logdir.files import read_file
    from logdoctor.logdir.names import META_PROPERTIES_FILE

    path = os.path.join(log_dir, META_PROPERTIES_FILE)
    try:
        meta = parse_meta_properties(read_file(path), source=path)
    except (OSError, FormatError):
        return None
    return meta.cluster_id, meta.node_id


def _sibling_log_dirs(log_dir: str) -> list[str]:
    """Log dirs beside ``log_dir`` (in its parent folder; hidden folders and logdoctor's own left out)."""
    from logdoctor.logdir.recognize import PathKind, recognize

    parent = os.path.dirname(log_dir.rstrip(os.sep))
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    out = []
    for name in names:
        p = os.path.join(parent, name)
        if name.startswith(".") or p == log_dir or not os.path.isdir(p) or os.path.islink(p):
            continue
        if recognize(p, look_below=False).kind is PathKind.LOG_DIR:
            out.append(p)
    return out


def _freeing_move(plan: Plan, need: DeviceNeed, short: int) -> str:
    """The way to free ``short`` bytes on ``need``'s file system: a runnable ``logdoctor move-partition``
    of a partition the plan does not touch to another log dir of the same broker on another file system
    with room for it; else what to look for."""
    from logdoctor.checks.disk_space import move_margin
    from logdoctor.logdir.model import LogDir

    dev = os.stat(need.where).st_dev
    touched = {p for s in plan.steps for p in s.touched()}
    for src in need.log_dirs:
        me = _identity(src)
        others = [os.path.abspath(d) for d in plan.log_dirs] + _sibling_log_dirs(src)
        targets = []
        for o in dict.fromkeys(others):
            try:
                if o == src or os.stat(o).st_dev == dev or me is None or _identity(o) != me:
                    continue
            except OSError:
                continue
            targets.append((bk.free_bytes(o), o))
        sizes = []
        for part in LogDir(src).partitions:
            path = str(part.path)
            inside = any(t == path or t.startswith(path + os.sep) for t in touched)
            if part.topic == "__cluster_metadata" or inside:
                continue  # the plan changes it: moved, the run would not find it
            sizes.append((_folder_bytes(path), part.name, path))
        # the smallest partition that frees enough, else the biggest: least data moved
        enough = sorted(s for s in sizes if s[0] >= short)
        ranked = enough[:1] or sorted(sizes, reverse=True)[:1]
        for size, name, _path in ranked:
            fits = [(free, o) for free, o in targets if free >= size + move_margin(size)]
            if not fits:
                continue
            _free, dst = max(fits)
            backup = _move_backup_dir(dst, src, plan.backup_dir, dev)
            command = f"logdoctor move-partition {name} --from {shlex.quote(src)} --to {shlex.quote(dst)}"
            if backup is not None:
                command += f" --backup-dir {shlex.quote(backup)}"
            return (
                f"free {short:,} bytes there first: move the partition {name} ({size:,} bytes, which this "
                f"run does not change) to {dst}, another log dir of the same broker on another file system, "
                f"with the broker stopped: `{command}` (prints its plan; add --apply to make it)"
            )
    return (
        f"free {short:,} bytes there first: with the broker stopped, move a partition to another log dir "
        "of the same broker on another disk (`logdoctor move-partition TOPIC-PARTITION --from LOGDIR --to "
        "LOGDIR`; none with room was found among the log dirs given or beside them), or delete what "
        "retention would (`logdoctor retention LOGDIR` lists it)"
    )


def _move_backup_dir(dst: str, src: str, repair_backup: str, full_dev: int) -> str | None:
    """A backup dir for the move that is not on the full file system: beside the destination (its
    default place) when that is elsewhere, else beside this run's backup dir; None when the move's own
    default (beside the source) is not on the full file system."""
    default = bk.default_backup_dir(src)
    if os.stat(bk.existing(default)).st_dev != full_dev:
        return None
    for candidate in (bk.default_backup_dir(dst), bk.default_backup_dir(repair_backup)):
        if os.stat(bk.existing(candidate)).st_dev != full_dev:
            return candidate
    return None

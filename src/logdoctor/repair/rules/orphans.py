"""Files a broker's startup removes or renames before it loads segments: ORPHAN_FILE.

Restates K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogLoader.java
``removeTempFilesAndCollectSwapFiles`` and ``load`` (passes 2 and 3): ``.deleted`` files removed;
``.cleaned`` files removed; ``.swap`` files at or above the smallest ``.cleaned`` offset removed (an
incomplete split); the other ``.swap`` segments replace the files in [min swap base, max swap next
offset) (removed) and are renamed into place. Index files without a ``.log``, temp files and partial
producer snapshots are removed too; a temp file at the log dir's root (an interrupted checkpoint
write, K:.../checkpoint/CheckpointFileWithFailureHandler) likewise. Everything removed goes to the
backup dir. Folders (``-delete``, ``-future``, ``-stray``) are left to the broker.
"""

from __future__ import annotations

import os
import stat

from logdoctor.checks.findings import Finding
from logdoctor.errors import FormatError
from logdoctor.formats.records import iter_batches
from logdoctor.logdir import files
from logdoctor.logdir.names import parse_segment_file
from logdoctor.repair.plan import Action, Change, Unrepaired
from logdoctor.repair.rules.context import PartitionPlan, PlanContext
from logdoctor.repair.steps.rename import rename_path

CODES = ("ORPHAN_FILE",)
#: the orphan kinds the broker removes at startup one by one (a .swap or .cleaned file: :func:`swaps`)
_REMOVED = ("deleted", "index-without-log", "tmp-file", "partial-snapshot")


def root_tmp_file(ctx: PlanContext, f: Finding) -> None:
    """A temp file at the log dir's root (``kind: tmp-file``)."""
    a = Action("remove-orphan", f.path, f"{f.code}: {f.message}", [f.code], [f.path])
    ctx.move_step(a, f.path, "left by an interrupted write; moved to the backup dir")
    ctx.add(a)


def resolve(ctx: PlanContext, pp: PartitionPlan, orphans: list[Finding]) -> None:
    folder = str(pp.part.path)
    kinds = {f.details.get("kind") for f in orphans}
    action = Action(
        "resolve-orphans",
        folder,
        "; ".join(f"{f.code}: {f.message}" for f in orphans),
        ["ORPHAN_FILE"],
        [f.path for f in orphans],
    )
    for f in orphans:
        if f.details.get("kind") in _REMOVED:
            ctx.move_step(action, f.path, f"{f.details.get('kind')}: removed as the broker does at startup")
    if kinds & {"swap", "cleaned"}:
        swaps(ctx, pp, action)
    for f in orphans:
        if f.details.get("kind") not in (*_REMOVED, "swap", "cleaned"):
            ctx.unrepaired(f, "unknown orphan kind")
    ctx.add(action)


def _special(path: str) -> bool:
    """``path`` exists and is not a regular file."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def swaps(ctx: PlanContext, pp: PartitionPlan, action: Action) -> None:
    """K:storage/.../log/LogLoader.java removeTempFilesAndCollectSwapFiles + load() passes 2 and 3."""
    folder = str(pp.part.path)
    names = sorted(os.listdir(folder))
    cleaned = [n for n in names if n.endswith(".cleaned")]
    swaps = [n for n in names if n.endswith(".swap")]
    min_cleaned = min((int(n.split(".")[0]) for n in cleaned if n.split(".")[0].isdigit()), default=None)
    for n in names:
        if n.endswith(".deleted"):
            ctx.move_step(action, os.path.join(folder, n), ".deleted: removed as the broker does")
    valid = []
    for n in swaps:
        off = int(n.split(".")[0]) if n.split(".")[0].isdigit() else None
        if off is None:
            continue
        if min_cleaned is not None and off >= min_cleaned:
            ctx.move_step(
                action,
                os.path.join(folder, n),
                "swap at or above a .cleaned offset (an incomplete split): removed as the broker does",
            )
        else:
            valid.append((off, n))
    for n in cleaned:
        ctx.move_step(action, os.path.join(folder, n), ".cleaned: removed as the broker does")
    # a .swap that would replace a symlink or a FIFO (never read or written through): the whole swap is
    # left as it is
    blocked = [n for _off, n in valid if _special(os.path.join(folder, n[: -len(".swap")]))]
    if any([ctx.left_alone(os.path.join(folder, n[: -len(".swap")])) for n in blocked]):
        for _off, n in valid:
            ctx.plan.unrepaired.append(
                Unrepaired(
                    "ORPHAN_FILE",
                    os.path.join(folder, n),
                    f"left as it is: the swap it belongs to would replace "
                    f"{os.path.join(folder, blocked[0][:-5])}, not a regular file (never written through)",
                )
            )
        return
    lo, hi = None, None
    for off, n in valid:
        if not n.endswith(".log.swap"):
            continue
        nxt = off
        try:
            for b in iter_batches(files.map_file(os.path.join(folder, n)), source=n):
                nxt = b.last_offset + 1
        except FormatError:
            pass
        lo = off if lo is None else min(lo, off)
        hi = nxt if hi is None else max(hi, nxt)
    if lo is not None and hi is not None:
        for n in names:
            head = n.split(".")[0]
            if n.endswith(".swap") or not head.isdigit():
                continue
            if lo <= int(head) < hi:
                ctx.move_step(
                    action,
                    os.path.join(folder, n),
                    "replaced by a compacted/split .swap segment: removed as the broker does",
                )
                parsed = parse_segment_file(n)
                if parsed is not None:
                    pp.removed.add(parsed.base_offset)
    for _off, n in sorted(valid):
        src = os.path.join(folder, n)
        dst = src[: -len(".swap")]
        if os.path.lexists(dst) and dst not in ctx.moved:
            ctx.move_step(action, dst, "replaced by its .swap file")
        action.steps.append(rename_path(src, dst))
        action.changes.append(Change(dst, None, os.path.getsize(src), None, f"renamed from {n}"))
        parsed = parse_segment_file(os.path.basename(dst))
        if parsed is not None:
            pp.removed.discard(parsed.base_offset)
            pp.rebuilt.add(parsed.base_offset)  # its indexes come with it; rescan after

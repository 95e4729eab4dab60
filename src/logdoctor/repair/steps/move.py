"""``move``: delete with backup: move a file or folder into ``files/`` of the backup dir.

Invariants: a rename on the same file system, else copy, verify, then delete; the live path and its
backup both present is a copy not yet finished (redone from the intact live source).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from logdoctor.repair import backup as bk
from logdoctor.repair import copies
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import (
    AFTER,
    BEFORE,
    OTHER,
    PARTIAL,
    BackupNames,
    Operation,
    StepContext,
    StepStateError,
)


class MoveToBackup(Operation):
    """Delete with backup. params: backup (rel), size, is_dir."""

    op = "move"

    def state(self, step: Step, ctx: StepContext) -> str:
        live = os.path.lexists(step.path)
        saved = os.path.lexists(ctx.backup_path(step.params["backup"]))
        if live and not saved:
            return BEFORE
        if saved and not live:
            return AFTER
        if live and saved:
            return PARTIAL  # a cross-device copy finished but the source was not yet removed
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        dst = ctx.backup_path(step.params["backup"])
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} is gone and not in the backup")
        if s == PARTIAL:  # redo the copy from the live source, which is intact
            copies.remove_tree(dst)
        bk.move_durable(step.path, dst)
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        dst = ctx.backup_path(step.params["backup"])
        s = self.state(step, ctx)
        if s in (BEFORE, PARTIAL):
            if s == PARTIAL:  # the live source is intact; drop the copy
                copies.remove_tree(dst)
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} is gone and not in the backup")
        bk.move_durable(dst, step.path)

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        if os.path.lexists(step.path) and bk.same_device(step.path, backup_dir):
            return 0
        return int(step.params.get("size") or 0)

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return self.backup_cost(step, backup_dir)  # moved to another file system: freed here


def delete_with_backup(path: str, names: BackupNames) -> Step:
    st = os.lstat(path)
    is_dir = stat.S_ISDIR(st.st_mode)
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) if is_dir else st.st_size
    return Step("move", path, {"backup": names.claim("files", path), "size": size, "is_dir": is_dir})

"""``write``: replace or create a file with staged bytes.

Invariants: atomic (temp, fsync, rename, fsync dir); the original is kept in ``files/`` of the backup
dir before it is replaced; optional owner/mode for the result. The staged bytes are checked against
``sha_after`` when read back. A new file runs in a group (:meth:`WriteFile.prepare`): the owner and mode
it is to have are set on its temp file before that is fsynced and renamed, so it is born with them (a
rebuilt index of each of thousands of segments: one barrier and one journal record per group, not four
fsyncs a file).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import fsync_dir
from logdoctor.repair import backup as bk
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
    _file_sha,
    _meta,
    _remove_temps,
    _set_meta,
)


class WriteFile(Operation):
    """params: sha_before|None, size_before, meta_before|None, sha_after, size_after, staged,
    backup (rel)|None, meta_after|None (owner/mode to set on the result)."""

    op = "write"

    def state(self, step: Step, ctx: StepContext) -> str:
        p = step.params
        sha = _file_sha(step.path)
        meta = p.get("meta_after")
        if sha == p["sha_after"] and (meta is None or _meta(step.path) == meta):
            return AFTER
        if sha == p["sha_before"]:  # None == None: absent before and now
            return BEFORE
        if sha == p["sha_after"]:
            return PARTIAL  # content written, owner/mode not yet
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == OTHER:
            raise StepStateError(
                f"{step.path} changed since the plan was made (neither original nor repaired)"
            )
        if s == BEFORE:
            _remove_temps(step.path)  # left by an earlier run killed inside atomic_write
            if p["sha_before"] is not None:
                dst = ctx.backup_path(p["backup"])
                if _file_sha(dst) != p["sha_before"]:
                    bk.copy_file_durable(step.path, dst)
                    if _file_sha(dst) != p["sha_before"]:
                        raise StepStateError(f"backup of {step.path} does not match it")
            ctx.crash(step.number, "backed-up")
            data = ctx.staged_bytes(step)
            meta = p.get("meta_after")
            atomic.atomic_write(
                step.path,
                data,
                mode=meta["mode"] if meta else None,
                before_rename=lambda: ctx.crash(step.number, "temp-written"),
            )
        if p.get("meta_after"):
            _set_meta(step.path, p["meta_after"])
        ctx.crash(step.number, "applied")

    def groupable(self, step: Step) -> bool:
        # a new file only: nothing to back up first; its owner and mode are its temp file's
        return step.params["sha_before"] is None

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        changed = f"{step.path} changed since the plan was made (neither original nor repaired)"
        if not self.to_do(step, ctx, changed):
            return None
        _remove_temps(step.path, barrier, ctx.listings)  # left by an earlier run killed inside atomic_write
        ctx.crash(step.number, "backed-up")
        meta = step.params.get("meta_after")
        tmp = atomic.write_temp(
            step.path,
            ctx.staged_bytes(step),
            mode=meta["mode"] if meta else None,
            uid=meta["uid"] if meta else None,
            gid=meta["gid"] if meta else None,
            sync=False,
        )
        barrier.file(tmp)  # its bytes, owner and mode durable at the flush, before the rename

        def commit() -> None:
            ctx.crash(step.number, "temp-written")  # the temp file is durable (the barrier), not renamed
            try:
                os.replace(tmp, step.path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            barrier.folder(os.path.dirname(step.path))
            if meta:
                _set_meta(step.path, meta)  # no-op when the temp file had them; raises as apply does
            ctx.crash(step.number, "applied")

        return commit

    def undo(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        _remove_temps(step.path)
        sha = _file_sha(step.path)
        if p["sha_before"] is None:
            if sha is not None:
                os.unlink(step.path)
                fsync_dir(os.path.dirname(step.path))
            return
        if sha != p["sha_before"]:
            data = Path(ctx.backup_path(p["backup"])).read_bytes()
            if bk.sha256_bytes(data) != p["sha_before"]:
                raise StepStateError(f"the backup of {step.path} is damaged; cannot restore it")
            atomic.atomic_write(step.path, data, mode=p["meta_before"]["mode"])
        _set_meta(step.path, p["meta_before"])

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        return int(step.params.get("size_before") or 0) + int(step.params["size_after"])

    def live_cost(self, step: Step) -> int:
        return int(step.params["size_after"])

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return int(step.params.get("size_before") or 0)  # the original, unlinked by the rename


def write_file(
    path: str, data: bytes, names: BackupNames, *, meta_after: dict[str, int] | None = None
) -> Step:
    """Replace (or create) ``path`` with ``data``; the original goes to the backup."""
    try:
        before = Path(path).read_bytes()
    except FileNotFoundError:
        before = None
    params: dict[str, Any] = {
        "sha_before": bk.sha256_bytes(before) if before is not None else None,
        "size_before": len(before) if before is not None else None,
        "meta_before": _meta(path),
        "sha_after": bk.sha256_bytes(data),
        "size_after": len(data),
        "backup": names.claim("files", path) if before is not None else None,
        "staged": None,  # set when the plan is staged
        "meta_after": meta_after,
    }
    return Step("write", path, params, data=data)

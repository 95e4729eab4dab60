"""``truncate``: cut a file to ``size_after`` in place.

Invariants: the removed tail is kept in ``tails/`` of the backup dir (holes stay holes) and checked
against ``tail_sha`` before the cut; undo writes it back, so a size between the two is an interrupted undo.
"""

from __future__ import annotations

import os

from logdoctor.logdir.files import open_regular
from logdoctor.logdir.sparse import copy_range_sparse, data_bytes
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
)


class TruncateFile(Operation):
    """params: size_before, size_after, tail_sha, backup (rel of the tail file)."""

    op = "truncate"

    def _tail_ok(self, step: Step, ctx: StepContext) -> bool:
        return _file_sha(ctx.backup_path(step.params["backup"])) == step.params["tail_sha"]

    def state(self, step: Step, ctx: StepContext) -> str:
        p = step.params
        try:
            size = os.stat(step.path).st_size
        except FileNotFoundError:
            return OTHER
        if size == p["size_before"]:
            tail = bk.sha256_file(step.path, p["size_after"], p["size_before"] - p["size_after"])
            return BEFORE if tail == p["tail_sha"] else OTHER
        if size == p["size_after"]:
            return AFTER if self._tail_ok(step, ctx) else OTHER
        if p["size_after"] < size < p["size_before"]:
            return PARTIAL  # an undo that was interrupted while writing the tail back
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == PARTIAL:
            self.undo(step, ctx)
            s = self.state(step, ctx)
        if s != BEFORE:
            raise StepStateError(f"{step.path} changed since the plan was made")
        if not self._tail_ok(step, ctx):
            # holes stay holes: a sparse .log's tail is not written out as real zeros (issue 24)
            bk.copy_range_durable(
                step.path, ctx.backup_path(p["backup"]), p["size_after"], p["size_before"] - p["size_after"]
            )
            if not self._tail_ok(step, ctx):
                raise StepStateError(f"the backup of the tail of {step.path} does not match it")
        ctx.crash(step.number, "backed-up")
        fd = os.open(step.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, p["size_after"])
            os.fsync(fd)
        finally:
            os.close(fd)
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        size = os.stat(step.path).st_size
        if size == p["size_before"]:
            return
        if not self._tail_ok(step, ctx):
            raise StepStateError(f"the backup of the tail of {step.path} is missing or damaged")
        fd = os.open(step.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, p["size_after"])
            fin = open_regular(ctx.backup_path(p["backup"]))
            try:
                copy_range_sparse(fin, fd, 0, None, p["size_after"])  # holes come back as holes
            finally:
                os.close(fin)
            os.fsync(fd)
        finally:
            os.close(fd)

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        """The tail's data bytes: its holes take no space in the backup."""
        p = step.params
        try:
            fd = open_regular(step.path)
        except OSError:
            return int(p["size_before"]) - int(p["size_after"])
        try:
            return data_bytes(fd, int(p["size_after"]), int(p["size_before"]))
        finally:
            os.close(fd)

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return int(step.params["size_before"]) - int(step.params["size_after"])


def truncate_file(path: str, size_after: int, names: BackupNames) -> Step:
    size = os.stat(path).st_size
    if not 0 <= size_after <= size:
        raise ValueError(f"cannot truncate {path} ({size} bytes) to {size_after}")
    tail_sha = bk.sha256_file(path, size_after, size - size_after)
    return Step(
        "truncate",
        path,
        {
            "size_before": size,
            "size_after": size_after,
            "tail_sha": tail_sha,
            "backup": names.claim("tails", path, f".{size_after}.tail"),
        },
    )

"""``mkdir``: create a folder (a restored partition's).

Invariants: the folder must not exist before; undo removes it (empty by then: the steps that filled it
are undone first). The snapshot it depends on is the folder's owner and mode only (``meta``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import fsync_dir
from logdoctor.repair import snapshot as snap
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import AFTER, BEFORE, OTHER, Operation, StepContext


class MakeDir(Operation):
    """Create a folder (a restored partition's). params: mode. Undo removes it (empty by then: the steps
    that filled it are undone first)."""

    op = "mkdir"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.META}  # the folder itself; what goes in it is the later steps' concern

    def state(self, step: Step, ctx: StepContext) -> str:
        if not os.path.lexists(step.path):
            return BEFORE
        return AFTER if os.path.isdir(step.path) and not os.path.islink(step.path) else OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not a folder"):
            return
        os.mkdir(step.path, int(step.params.get("mode") or 0o755))
        fsync_dir(os.path.dirname(step.path))
        ctx.crash(step.number, "applied")

    def groupable(self, step: Step) -> bool:
        return True

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        # the folder is made now (the group's later steps write into it); its entry is durable with the
        # group's first flush, before anything is renamed into it
        if self.to_do(step, ctx, f"{step.path} exists and is not a folder"):
            os.mkdir(step.path, int(step.params.get("mode") or 0o755))
            barrier.folder(os.path.dirname(step.path))
            ctx.crash(step.number, "applied")
        return None

    def undo(self, step: Step, ctx: StepContext) -> None:
        if self.state(step, ctx) == AFTER:
            os.rmdir(step.path)
            fsync_dir(os.path.dirname(step.path))


def make_dir(path: str, mode: int = 0o755) -> Step:
    """Create the folder ``path`` (which must not exist)."""
    return Step(MakeDir.op, path, {"mode": mode})

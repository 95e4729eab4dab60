"""``rename``: rename a file or folder inside the log dirs.

Invariants: never over an existing target (a planner moves an existing target to the backup first);
exactly one of source and destination exists before and after.
"""

from __future__ import annotations

import os

from logdoctor.repair import copies
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import AFTER, BEFORE, OTHER, Operation, StepContext, StepStateError


class RenamePath(Operation):
    """params: dst. Never overwrites: a planner moves an existing target to the backup first."""

    op = "rename"

    def state(self, step: Step, ctx: StepContext) -> str:
        src, dst = os.path.lexists(step.path), os.path.lexists(step.params["dst"])
        if src and not dst:
            return BEFORE
        if dst and not src:
            return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        both_or_neither = f"cannot rename {step.path} to {step.params['dst']}: both or neither exist"
        if not self.to_do(step, ctx, both_or_neither):
            return
        copies.rename_durable(step.path, step.params["dst"])
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        s = self.state(step, ctx)
        if s == BEFORE:
            return
        if s != AFTER:
            raise StepStateError(f"cannot rename {step.params['dst']} back to {step.path}")
        copies.rename_durable(step.params["dst"], step.path)


def rename_path(src: str, dst: str) -> Step:
    return Step("rename", src, {"dst": dst})

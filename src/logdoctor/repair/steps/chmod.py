"""``chmod``: set owner, group and permission bits.

Invariants: owner first, then mode; a kill between the two (new owner, old mode) is a begun step that
apply finishes. The snapshot it depends on is the path's owner and mode only (``meta``).
"""

from __future__ import annotations

from logdoctor.repair import snapshot as snap
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import AFTER, BEFORE, OTHER, Operation, StepContext, _meta, _set_meta


class SetOwnerMode(Operation):
    """params: meta_before, meta_after ({uid, gid, mode})."""

    op = "chmod"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.META}

    def state(self, step: Step, ctx: StepContext) -> str:
        before, after = step.params["meta_before"], step.params["meta_after"]
        m = _meta(step.path)
        if m == after:
            return AFTER
        if m == before:
            return BEFORE
        if m is not None and m == {**after, "mode": before["mode"]}:
            # killed between the chown and the chmod of _set_meta (found by test_external_kill: a
            # SIGKILL right after the journal's plan record): the step is begun, apply finishes it
            return BEFORE
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"owner or mode of {step.path} changed since the plan was made"):
            return
        _set_meta(step.path, step.params["meta_after"], owner_set=lambda: ctx.crash(step.number, "owner-set"))
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        if _meta(step.path) is not None:
            _set_meta(step.path, step.params["meta_before"])


def set_owner_mode(path: str, uid: int, gid: int, mode: int) -> Step:
    before = _meta(path)
    if before is None:
        raise FileNotFoundError(path)
    return Step("chmod", path, {"meta_before": before, "meta_after": {"uid": uid, "gid": gid, "mode": mode}})

"""Run a procedure's plan with the repair engine (apply, resume, rollback) and verify the result."""

from __future__ import annotations

import os

from logdoctor.repair import copies as cp
from logdoctor.repair.apply import CrashHook, RunResult, apply_plan, load_journal, resume, rollback
from logdoctor.repair.plan import Plan
from logdoctor.repair.procedures.move_partition import PROCEDURE as MOVE
from logdoctor.repair.procedures.move_partition import verify_move
from logdoctor.repair.procedures.rebuild_quorum import PROCEDURE as REBUILD
from logdoctor.repair.procedures.rebuild_quorum import refuse_resume_beside_live_controllers
from logdoctor.repair.procedures.restore import PROCEDURE as RESTORE
from logdoctor.repair.procedures.restore import verify_restore
from logdoctor.repair.procedures.sync_replica import verify_sync
from logdoctor.repair.steps.copying import copy_progress


def procedure_of(plan: Plan) -> str | None:
    kinds = {a.kind for a in plan.actions}
    if MOVE in kinds:
        return MOVE
    if "copy-leader-partition" in kinds:
        return "sync-replica"
    if any(k.startswith("restore-") for k in kinds):
        return RESTORE
    if "rebuild-controller-metadata" in kinds:
        return REBUILD
    return None


def verify(plan: Plan) -> list[str]:
    """The end-of-run check of either procedure (see verify_move / verify_sync)."""
    kind = procedure_of(plan)
    if kind == MOVE:
        return verify_move(plan)
    if kind == "sync-replica":
        return verify_sync(plan)
    if kind in (RESTORE, REBUILD):  # files written and folders made, each read back as planned
        return verify_restore(plan)
    return [f"{plan.backup_dir}: not a move-partition, sync-replica or restore plan"]


def _noop(n: int) -> None:
    return None


def apply(
    plan: Plan,
    *,
    progress: cp.Progress | None = None,
    crash: CrashHook | None = None,
    command: str | None = None,
    allow_unfinished: bool = False,
) -> RunResult:
    with copy_progress(progress or _noop):
        return apply_plan(
            plan,
            crash=crash,
            command=command or procedure_of(plan) or "repair",
            allow_unfinished=allow_unfinished,
        )


def resume_journal(
    journal: str | os.PathLike[str], *, progress: cp.Progress | None = None, crash: CrashHook | None = None
) -> tuple[RunResult, Plan]:
    plan, _ = load_journal(journal)
    if procedure_of(plan) == REBUILD:  # a controller may have started since the run was cut short
        refuse_resume_beside_live_controllers(plan)
    with copy_progress(progress or _noop):
        return resume(journal, crash=crash), plan


def rollback_journal(
    journal: str | os.PathLike[str], *, progress: cp.Progress | None = None, crash: CrashHook | None = None
) -> tuple[RunResult, Plan]:
    plan, _ = load_journal(journal)
    with copy_progress(progress or _noop):
        return rollback(journal, crash=crash), plan


def copy_bytes(plan: Plan) -> int:
    """Bytes the plan's copies will move (for a progress bar's total)."""
    return sum(
        int(s.params.get("size") or 0) for s in plan.steps if s.op in ("copy-partition", "fetch-remote")
    )


__all__ = ["apply", "copy_bytes", "procedure_of", "resume_journal", "rollback_journal", "verify"]

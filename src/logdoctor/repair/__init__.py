"""logdoctor repair: plan, apply, resume and roll back changes to broker log dirs, nothing lost.

Layers: :mod:`plan` (data), :mod:`steps` (reversible primitive operations and builders, one module per kind),
:mod:`journal` (append-only, fsynced), :mod:`backup` (layout, durable copies, space),
:mod:`safety` (containment, broker lock), :mod:`apply` (engine), :mod:`planner` (findings -> plan).
"""

from logdoctor.repair.apply import CrashHook, RefusedError, RunResult, apply_plan, resume, rollback
from logdoctor.repair.plan import Action, Change, Plan, Step, Unrepaired
from logdoctor.repair.planner import REPAIRABLE, PlanUsageError, plan_repair

__all__ = [
    "REPAIRABLE",
    "Action",
    "Change",
    "CrashHook",
    "Plan",
    "PlanUsageError",
    "RefusedError",
    "RunResult",
    "Step",
    "Unrepaired",
    "apply_plan",
    "plan_repair",
    "resume",
    "rollback",
]

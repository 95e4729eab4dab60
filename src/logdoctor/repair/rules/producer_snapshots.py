"""Producer state snapshots: PRODUCER_SNAPSHOT_AHEAD.

Restates K:storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerStateManager.java
``truncateAndReload`` (called by K:.../log/LogLoader.java at load): snapshot files whose offset is
beyond the log end offset are deleted by the broker at startup, so the plan removes them (to the
backup dir). Snapshots beyond the new log end of a truncation go with the truncation
(:mod:`logdoctor.repair.rules.truncation`).
"""

from __future__ import annotations

from logdoctor.repair.plan import Action
from logdoctor.repair.rules.context import PartitionPlan, PlanContext

CODES = ("PRODUCER_SNAPSHOT_AHEAD",)


def plan(ctx: PlanContext, pp: PartitionPlan) -> None:
    """Remove each snapshot beyond the log end, as the broker does."""
    for f in pp.findings:
        if f.code == "PRODUCER_SNAPSHOT_AHEAD":
            a = Action("remove-snapshot", f.path, f"{f.code}: {f.message}", [f.code], [f.path])
            ctx.move_step(a, f.path, "the broker deletes it at startup")
            ctx.add(a)

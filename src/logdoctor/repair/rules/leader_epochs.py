"""The leader epoch cache of a partition: LEADER_EPOCH_BEYOND_LOG_END (and CHECKPOINT_CORRUPT of its
``leader-epoch-checkpoint``).

Restates K:storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java
``truncateFromEnd``: entries whose start offset is at or beyond the log end offset go. The broker does
it at startup for a cache beyond its log (K:.../log/LogLoader.java, UnifiedLog's initializeLeaderEpochCache)
and after the truncation of a corrupt segment (recoverLog), so it is planned for both: the file is
rewritten from its readable entries below the (new) log end.
"""

from __future__ import annotations

import os

from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import (
    LeaderEpochCheckpoint,
    scan_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from logdoctor.logdir.names import LEADER_EPOCH_CHECKPOINT_FILE
from logdoctor.repair.plan import Action
from logdoctor.repair.rules.context import PartitionPlan, PlanContext, read

CODES = ("LEADER_EPOCH_BEYOND_LOG_END",)


def plan(ctx: PlanContext, pp: PartitionPlan) -> None:
    """Truncate the epoch cache at the log end (after this plan's truncation, if any)."""
    leo = pp.new_leo if pp.new_leo is not None else (pp.report.log_end_offset if pp.report else None)
    epoch_findings = [
        f
        for f in pp.findings
        if os.path.basename(f.path) == LEADER_EPOCH_CHECKPOINT_FILE
        and f.code in ("LEADER_EPOCH_BEYOND_LOG_END", "CHECKPOINT_CORRUPT")
    ]
    path = os.path.join(str(pp.part.path), LEADER_EPOCH_CHECKPOINT_FILE)
    if ctx.left_alone(path):
        return
    data = read(path)
    if data is None or leo is None or not (epoch_findings or pp.new_leo is not None):
        return
    try:
        cp = scan_leader_epoch_checkpoint(data, source=path).checkpoint
        entries = [(e, s) for e, s in cp.entries if s < leo]
        new = write_leader_epoch_checkpoint(LeaderEpochCheckpoint(0, entries))
    except (FormatError, ValueError):
        new = None
    if new is None or new == data:
        return
    a = Action(
        "rewrite-leader-epochs",
        path,
        "; ".join(f"{f.code}: {f.message}" for f in epoch_findings)
        or f"the log end moves to {leo}: the broker truncates the epoch cache there",
        sorted({f.code for f in epoch_findings}) or ["LOG_CORRUPT"],
        [f.path for f in epoch_findings],
    )
    ctx.write_step(
        a,
        path,
        new,
        "entries at or beyond the log end dropped (LeaderEpochFileCache.truncateFromEnd)",
        text=True,
    )
    ctx.add(a)

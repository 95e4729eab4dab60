"""Operator procedures on stopped brokers, built on the repair engine (plan, journal, resume, rollback).

- :mod:`move_partition`: move partitions to another log dir of the same broker (a full disk).
- :mod:`sync_replica`: replace a lagging follower's copy of a partition with the leader's.
- Their engine operations ``copy-partition`` and ``remove-copied`` live with the others in
  :mod:`logdoctor.repair.steps`; durable copies with checksums in :mod:`logdoctor.repair.copies`.
"""

from logdoctor.repair.procedures.common import (
    ProcedurePlan,
    ProcedureRefused,
    ProcedureUsageError,
    parse_topic_partition,
)
from logdoctor.repair.procedures.move_partition import plan_move, verify_move
from logdoctor.repair.procedures.run import apply, resume_journal, rollback_journal, verify
from logdoctor.repair.procedures.sync_replica import plan_sync, verify_sync

__all__ = [
    "ProcedurePlan",
    "ProcedureRefused",
    "ProcedureUsageError",
    "apply",
    "parse_topic_partition",
    "plan_move",
    "plan_sync",
    "resume_journal",
    "rollback_journal",
    "verify",
    "verify_move",
    "verify_sync",
]

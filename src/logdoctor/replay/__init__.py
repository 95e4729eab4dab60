"""Replay: the records of log dirs back into a running cluster (issue 72), exactly once and resumable.

Beside :mod:`logdoctor.repair` (it writes, to a cluster rather than a log dir); reads with
:mod:`logdoctor.logdir` as every output does, never imports the CLI or Spark. The API:

- :func:`plan_replay` (``logdoctor.replay.plan``): the plan, writing nothing;
- :func:`apply_replay` (``logdoctor.replay.apply``): carries it out, exactly once;
- :func:`offset_map` (``logdoctor.replay.offset_map``): the whole offset map of a replay, read back from
  the target and checked;
- :func:`plan_groups` (``logdoctor.replay.groups``): the source's consumer groups carried over, planned on
  top of a replay plan; ``apply_replay`` commits them after the records.

``plan_replay(partitioner="default")`` re-hashes each record's key as the Java producer does
(:mod:`logdoctor.replay.partitioner`); exactly once and resume then work per source partition.
"""

from __future__ import annotations

from logdoctor.replay.apply import ReplayFailed, ReplayRefused, ReplayResult, apply_replay, check_clients
from logdoctor.replay.groups import plan_groups
from logdoctor.replay.offset_map import ReplayMismatch, offset_map, offset_map_schema
from logdoctor.replay.plan import (
    Conflict,
    GroupPartition,
    GroupPlan,
    PartitionPlan,
    ReplayPlan,
    TopicMap,
    TopicPlan,
    plan_replay,
)
from logdoctor.replay.target import ClientSettingsError, TargetUnreachable

__all__ = [
    "ClientSettingsError",
    "Conflict",
    "GroupPartition",
    "GroupPlan",
    "PartitionPlan",
    "ReplayFailed",
    "ReplayMismatch",
    "ReplayPlan",
    "ReplayRefused",
    "ReplayResult",
    "TargetUnreachable",
    "TopicMap",
    "TopicPlan",
    "apply_replay",
    "check_clients",
    "offset_map",
    "offset_map_schema",
    "plan_groups",
    "plan_replay",
]

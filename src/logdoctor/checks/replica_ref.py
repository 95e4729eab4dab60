"""A partition replica as a cross-broker rule judges it: a scan's PartitionReport, or a row of the census
(which scans each broker alone on the executors and judges their rows together: checks.consumer_groups,
checks.transaction_state, checks.share_groups)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Judged", "ReplicaRef"]


class Judged(Protocol):
    """What a finding of a cross-broker rule names of the replica it is about."""

    path: str
    log_dir: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class ReplicaRef:
    """A replica the census judges (its rows carry no PartitionReport)."""

    path: str
    log_dir: str
    topic: str
    partition: int

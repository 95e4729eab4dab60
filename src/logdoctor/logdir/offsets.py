"""A partition's log start offset and local log start offset, as the broker computes them when it loads
the log, and the offsets a set of ranges leaves uncovered (pure: no I/O).

K:core/src/main/scala/kafka/log/LogManager.scala loadLog: the log start offset comes from the log dir's
``log-start-offset-checkpoint`` entry, 0 when the partition has none (``getOrDefault(tp, 0L)``).
K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogLoader.java load: the new log start
offset is ``isRemoteLogEnabled ? logStartOffsetCheckpoint : Math.max(logStartOffsetCheckpoint, first
segment's base offset)``: with remote storage the offsets below the first local segment are in the
remote tier and stay part of the log. K:core/src/main/scala/kafka/log/UnifiedLog.scala (constructor):
``localLogStartOffset = max(logStartOffset, first local segment's base offset)``, and without remote
storage ``logStartOffset = localLogStartOffset``. A log with no segment starts empty at the checkpoint
(LogLoader.recoverLog opens a segment at ``logStartOffsetCheckpoint``), as does a log whose end is below
the checkpoint (recoverLog deleteSegmentsIfLogStartGreaterThanLogEnd deletes every segment).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["log_start_offsets", "uncovered"]


def log_start_offsets(
    checkpoint: int | None, first_base_offset: int | None, remote_log_enabled: bool
) -> tuple[int | None, int | None]:
    """``(log start offset, local log start offset)`` of one partition.

    ``checkpoint``: its log-start-offset-checkpoint entry (None: no entry, or an unreadable file, which
    the broker reads as empty); ``first_base_offset``: its first local segment (None: no segment);
    ``remote_log_enabled``: UnifiedLog.isRemoteLogEnabled for it (:mod:`logdoctor.checks.tiered`).
    Without a segment both are the checkpoint (None when there is none either).
    """
    if first_base_offset is None:
        return checkpoint, checkpoint
    cp = 0 if checkpoint is None else checkpoint
    local = max(cp, first_base_offset)
    return (cp if remote_log_enabled else local), local


def uncovered(start: int, end: int, held: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges ``[a, b)`` of ``[start, end)`` that none of the ranges ``held`` (each ``[a, b)``) holds."""
    gaps: list[tuple[int, int]] = []
    at = start
    for a, b in sorted(held):
        if a > at:
            gaps.append((at, min(a, end)))
        at = max(at, b)
        if at >= end:
            break
    if at < end:
        gaps.append((at, end))
    return gaps

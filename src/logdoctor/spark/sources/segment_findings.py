"""The findings of a ``kafka-log-segments`` row: the scan's findings of the segment's partition folder (local
files only), and ``LOG_CORRUPT`` from what reading the segment itself found.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logdoctor.logdir.refs import SegmentRef


def partition_findings(log_dir: str, partition_dir: str, now_ms: int | None = None) -> list[Any] | None:
    """The scan's findings for one partition folder (logdoctor.checks, default depth); None if it fails.

    Checkpoint values come from the log dir as the scanner reads them (an unreadable checkpoint
    counts as empty, as LogManager.loadLogs does).
    """
    import time

    try:
        from logdoctor.checks.access import BrokerUser
        from logdoctor.checks.context import Depth, PartitionTask, ScanOptions
        from logdoctor.checks.partition import check_partition
        from logdoctor.logdir.model import LogDir
        from logdoctor.logdir.names import (
            CLEAN_SHUTDOWN_FILE,
            LOG_START_OFFSET_CHECKPOINT,
            RECOVERY_POINT_CHECKPOINT,
            REPLICATION_OFFSET_CHECKPOINT,
            parse_partition_dir,
        )

        name = os.path.basename(partition_dir.rstrip(os.sep))
        parsed = parse_partition_dir(name)
        if parsed is None:
            return None
        ld = LogDir(log_dir)

        def cp(which: str) -> int | None:
            read = ld.checkpoint(which)
            if read.error is not None or read.problems or parsed.is_metadata:
                return None
            return read.get(parsed.topic, parsed.partition)

        user = BrokerUser.owner_of(log_dir)
        options = ScanOptions(Depth.DEFAULT, now_ms or int(time.time() * 1000), user)
        task = PartitionTask(
            log_dir=log_dir,
            path=partition_dir,
            name=name,
            topic=parsed.topic,
            partition=parsed.partition,
            kind=parsed.kind.value,
            recovery_point=cp(RECOVERY_POINT_CHECKPOINT),
            log_start_checkpoint=cp(LOG_START_OFFSET_CHECKPOINT),
            high_watermark=cp(REPLICATION_OFFSET_CHECKPOINT),
            clean_shutdown=os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))
            and not parsed.is_metadata,
            broker_user=user,
            options=options,
        )
        return list(check_partition(task).findings)
    except Exception:  # the read's own findings still stand
        return None


def segment_findings(
    seg: SegmentRef,
    error: Any,
    valid_bytes: int,
    scan_findings: list[Any] | None = None,
    crc_mismatches: Sequence[Any] = (),
) -> list[dict[str, str]]:
    """Findings of one segment: the scan's findings about its files, plus LOG_CORRUPT from the read itself
    when the scan did not report it (or could not run): the framing error, and the batches left out alone
    for their CRC (``crc_mismatches``), as the scan reports a CRC mismatch."""
    prefix = os.path.join(os.path.dirname(seg.path), f"{seg.base_offset:020d}.")
    out = [
        {"code": f.code, "severity": f.severity.label, "message": f.message}
        for f in scan_findings or ()
        if f.path.startswith(prefix)
    ]
    if (error is not None or crc_mismatches) and not any(f["code"] == "LOG_CORRUPT" for f in out):
        parts = [c.describe() for c in crc_mismatches]
        if error is not None:
            parts.append(
                f"{error}; {seg.size - valid_bytes} bytes after the last valid batch (valid {valid_bytes})"
            )
        out.append({"code": "LOG_CORRUPT", "severity": "error", "message": "; ".join(parts)})
    return out

"""How full each scanned log dir's disk is: ``LOG_DIR_NEARLY_FULL`` from ``scan`` (the census makes the
same finding with the fleet's view, :mod:`logdoctor.spark.census_rules`).

A full disk takes the log dir offline: the broker's next write fails with an ``IOException`` and
``LogManager.handleLogDirFailure`` stops using the dir (with one log dir, the broker stops). The figures
are ``df``'s (:mod:`logdoctor.logdir.disk`): warning from 85 % ``Use%``, error from 95 %.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from logdoctor.checks import catalog
from logdoctor.checks.context import PartitionReport, ScanOptions
from logdoctor.checks.findings import Finding, Severity
from logdoctor.checks.scan_report import LogDirReport
from logdoctor.logdir.disk import DiskUsage, disk_usage, human_bytes

NEARLY_FULL_WARN = 0.85
NEARLY_FULL_ERROR = 0.95

__all__ = ["NEARLY_FULL_ERROR", "NEARLY_FULL_WARN", "check_disks"]


def move_margin(nbytes: int) -> int:
    """The room a move-partition copy needs beyond the bytes copied: 64 MiB or 5 %, as the procedure's own
    check asks (repair.procedures.common.space_margin; a test keeps both equal)."""
    return max(64 << 20, nbytes * 5 // 100)


def _device(path: str) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def check_disks(
    reports: Sequence[LogDirReport], partitions: Sequence[PartitionReport], options: ScanOptions
) -> list[Finding]:
    """Record each log dir's disk on its report (``disk``) and find the nearly full ones.

    The fix moves the log dir's biggest partition to the least full other log dir given that lies on
    another file system (``move-partition``, the broker stopped), else points to retention."""
    usage: dict[str, DiskUsage] = {}
    for rep in reports:
        rep.disk = usage[rep.path] = disk_usage(rep.path, options.simulated_disks)
    biggest: dict[str, PartitionReport] = {}
    for p in partitions:
        if p.kind != "log" or p.topic == "__cluster_metadata":
            continue
        cur = biggest.get(p.log_dir)
        if cur is None or p.bytes > cur.bytes:
            biggest[p.log_dir] = p
    out: list[Finding] = []
    for rep in reports:
        u = usage[rep.path]
        used = u.used_fraction
        if used is None or used < NEARLY_FULL_WARN:
            continue
        big = biggest.get(rep.path)
        # only a log dir on another (real) file system frees space on this one, and only one with room
        # for the partition: a simulated disk says nothing of where a folder really lies
        others = [
            o
            for o in reports
            if o.path != rep.path
            and (usage[o.path].used_fraction or 1.0) < NEARLY_FULL_WARN
            and _device(o.path) is not None
            and _device(o.path) != _device(rep.path)
            and big is not None
            and (usage[o.path].available_bytes or 0) >= big.bytes + move_margin(big.bytes)
        ]
        target = min(others, key=lambda o: usage[o.path].used_fraction or 1.0, default=None)
        if target is not None and big is not None:
            tp = f"{big.topic}-{big.partition}"
            fix = catalog.command_phrase(
                f"Move a large partition ({tp}, {human_bytes(big.bytes)}) to {target.path}, on another file "
                f"system ({usage[target.path].used_percent}% used, "
                f"{human_bytes(usage[target.path].available_bytes)} free), with the broker stopped: "
                "{command} prints the plan and whether it fits, add --apply to make it; or use "
                "kafka-reassign-partitions with log dirs (KIP-113) while it runs.",
                ["logdoctor", "move-partition", tp, "--from", rep.path, "--to", target.path],
            )
        else:
            fix = catalog.command_phrase(
                "Add a log dir on another disk, lower retention ({command} shows what retention deletes), or "
                "reassign partitions to other brokers.",
                ["logdoctor", "retention", rep.path],
            )
        out.append(
            catalog.make(
                "LOG_DIR_NEARLY_FULL",
                rep.path,
                severity=Severity.ERROR if used >= NEARLY_FULL_ERROR else None,
                logdir=rep.path,
                used=f"{u.used_percent}%",
                available=human_bytes(u.available_bytes),
                total=human_bytes(u.total_bytes),
                disk_source=u.source,
                fix=fix,
            )
        )
    return out

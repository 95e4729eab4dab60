"""How full a log dir's file system is, with the one definition every command uses: df's.

``df`` prints ``Use% = used / (used + available)``, rounded up, where ``used = (f_blocks - f_bfree)``
and ``available = f_bavail`` blocks: the root-reserved blocks count neither as used nor as available,
so a file system that a non-root broker can no longer write to shows 100%. Size is ``f_blocks``.

The figures always come from ``statvfs`` of the log dir's real path: nothing found beside a log dir
changes them. The one other source is explicit and in-process: a caller (the demo, a test) passes
``simulated`` disks to :func:`disk_usage` (through ``ScanOptions.simulated_disks``), keyed by the log
dir's absolute path; no file, option or environment variable a user could leave behind turns it on.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """The file system holding ``path``, in bytes, as ``df -B1`` would print it."""

    path: str
    total_bytes: int | None
    used_bytes: int | None
    available_bytes: int | None
    source: str  # "statvfs" | "simulated" | "unavailable"

    @property
    def used_percent(self) -> int | None:
        """df's ``Use%``: ``ceil(100 * used / (used + available))``; None when unknown."""
        if self.used_bytes is None or self.available_bytes is None:
            return None
        denominator = self.used_bytes + self.available_bytes
        if denominator <= 0:
            return None
        return math.ceil(100 * self.used_bytes / denominator)

    @property
    def used_fraction(self) -> float | None:
        """``used / (used + available)`` as a fraction (the unrounded ``Use%``)."""
        if self.used_bytes is None or self.available_bytes is None:
            return None
        denominator = self.used_bytes + self.available_bytes
        return self.used_bytes / denominator if denominator > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "total_bytes": self.total_bytes,
            "used_bytes": self.used_bytes,
            "available_bytes": self.available_bytes,
            "used_percent": self.used_percent,
            "source": self.source,
        }

    def line(self) -> str:
        if self.total_bytes is None:
            return f"{self.path}: disk usage unavailable"
        return (
            f"{self.path}: {self.used_bytes:,} of {self.total_bytes:,} bytes used "
            f"({self.used_percent}%, as df prints it), {self.available_bytes:,} available"
        )


@dataclass(frozen=True, slots=True)
class SimulatedDisk:
    """A disk as ``df -B1`` would print it, for a log dir that is not on it (the demo fleet, tests)."""

    total_bytes: int
    available_bytes: int
    used_bytes: int | None = None  # None: total - available

    def usage(self, path: str) -> DiskUsage:
        used = self.total_bytes - self.available_bytes if self.used_bytes is None else self.used_bytes
        return DiskUsage(path, self.total_bytes, used, self.available_bytes, "simulated")


def disk_usage(path: str, simulated: Mapping[str, SimulatedDisk] | None = None) -> DiskUsage:
    """Disk usage of the file system holding ``path`` (a log dir, or any path on that file system).

    ``statvfs`` of the real path, else "unavailable"; ``simulated`` (an explicit in-process argument,
    keyed by absolute path) replaces it for the paths it names.
    """
    if simulated:
        disk = simulated.get(os.path.abspath(path))
        if disk is not None:
            return disk.usage(path)
    try:
        st = os.statvfs(os.path.realpath(path))
    except OSError:
        return DiskUsage(path, None, None, None, "unavailable")
    return DiskUsage(
        path,
        st.f_blocks * st.f_frsize,
        (st.f_blocks - st.f_bfree) * st.f_frsize,
        st.f_bavail * st.f_frsize,
        "statvfs",
    )


__all__ = ["DiskUsage", "SimulatedDisk", "disk_usage"]


def human_bytes(n: float) -> str:
    """A size as people read it, in binary units: ``"512 B"``, ``"15.0 GiB"`` (the one formatter of sizes
    of every text: findings, the export's summary, the report)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TiB"  # pragma: no cover - the loop returns at TiB

"""How full a log dir's file system is, with the one definition every command uses: df's.

``df`` prints ``Use% = used / (used + available)``, rounded up, where ``used = (f_blocks - f_bfree)``
and ``available = f_bavail`` blocks: the root-reserved blocks count neither as used nor as available,
so a file system that a non-root broker can no longer write to shows 100%. Size is ``f_blocks``.

Sample fleets (``logdoctor.sample.fleet``) describe simulated disks in a ``df.json`` beside the log
dirs: ``{"<log dir name>": {"total_bytes": N, "available_bytes": M, "used_bytes": U}}`` (``used_bytes``
optional: ``total - available`` when absent). A real log dir never has one; when it does not, the
numbers come from ``statvfs`` of the log dir's real path.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

DF_JSON = "df.json"


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """The file system holding ``path``, in bytes, as ``df -B1`` would print it."""

    path: str
    total_bytes: int | None
    used_bytes: int | None
    available_bytes: int | None
    source: str  # "statvfs" | "df.json" | "unavailable"

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


def _from_df_json(log_dir: str) -> DiskUsage | None:
    parent = os.path.dirname(os.path.abspath(log_dir))
    df_path = os.path.join(parent, DF_JSON)
    if not os.path.isfile(df_path):
        return None
    try:
        with open(df_path, encoding="utf-8") as fh:
            entry = json.load(fh).get(os.path.basename(os.path.abspath(log_dir)))
        if not isinstance(entry, dict):
            return None
        total = int(entry["total_bytes"])
        available = int(entry["available_bytes"])
        used = int(entry.get("used_bytes", total - available))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return DiskUsage(log_dir, total, used, available, DF_JSON)


def disk_usage(path: str) -> DiskUsage:
    """Disk usage of the file system holding ``path`` (a log dir, or any path on that file system).

    ``df.json`` beside a sample log dir wins; else ``statvfs`` of the real path; else "unavailable".
    """
    simulated = _from_df_json(path)
    if simulated is not None:
        return simulated
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


__all__ = ["DF_JSON", "DiskUsage", "disk_usage"]

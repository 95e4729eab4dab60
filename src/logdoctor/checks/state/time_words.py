"""Timestamps and durations as a finding's text words them: a timestamp in ISO 8601, UTC, to the
millisecond ("none" for no timestamp, "out of range" for one no date holds); a duration in its largest
unit of seconds, minutes, hours and days."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "none"
    try:
        return (
            datetime.fromtimestamp(ms / 1000, tz=UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    except (OverflowError, OSError, ValueError):
        return "out of range"


def duration(ms: int) -> str:
    s = abs(ms) // 1000
    if s >= 86400:
        return f"{s / 86400:.1f} days"
    if s >= 3600:
        return f"{s / 3600:.1f} hours"
    if s >= 60:
        return f"{s / 60:.1f} minutes"
    return f"{s} s"

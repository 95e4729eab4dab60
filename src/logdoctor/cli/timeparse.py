"""Moments given on the command line (--now, --at): epoch milliseconds or ISO-8601."""

from __future__ import annotations

import datetime as dt
import time

# --- times ------------------------------------------------------------------------------------


def parse_epoch_ms(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 (UTC when it names no zone); ValueError when neither."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def parse_now(text: str | None) -> int:
    """--now: epoch milliseconds, or ISO-8601; default: the current time."""
    if text is None:
        return int(time.time() * 1000)
    try:
        return parse_epoch_ms(text)
    except ValueError:
        from logdoctor.cli.error_lines import usage_error  # typer: only on this error path

        usage_error(f"--now wants epoch ms or ISO-8601, got {text!r}")


__all__ = [
    "parse_epoch_ms",
    "parse_now",
]

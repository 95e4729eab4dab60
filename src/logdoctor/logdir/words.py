"""How a text for people words a count: ``counted`` (a count and its noun agreeing). The one such helper of
every text, the CLI's lines and the census's summary alike; sizes have theirs in
:func:`logdoctor.logdir.disk.human_bytes`."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 finding``, ``2 findings``, ``1,024 log dirs``: a count and its noun, agreeing."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"

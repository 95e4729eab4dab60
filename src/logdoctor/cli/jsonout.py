"""The --json output of the report commands: one JSON document on stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

# --- JSON ---------------------------------------------------------------------------------------


def print_json(obj: Any, *, indent: int = 1, default: Callable[[Any], Any] | None = None) -> None:
    """One JSON document on stdout (the ``--json`` of the report commands)."""
    sys.stdout.write(json.dumps(obj, indent=indent, default=default) + "\n")


__all__ = [
    "print_json",
]

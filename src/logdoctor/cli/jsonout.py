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


def json_rows(obj: dict[str, Any]) -> str:
    """``obj`` as one JSON document laid out for reports of 50,000 partitions: each key of ``obj`` on a
    line of its own, each element of a list value on a line of its own, compact (``json.dumps``'s
    separators). Only a document without indentation is encoded by Python's C encoder; ``indent=1`` is
    its pure-Python encoder, ~5x slower (1.7 s for the 71 MB of 50,000 partitions). The same JSON value
    as :func:`print_json` gives, one partition or finding per line."""
    encode = json.JSONEncoder().encode
    lines = ["{"]
    last = len(obj) - 1
    for i, (key, value) in enumerate(obj.items()):
        end = "," if i < last else ""
        if isinstance(value, list) and value:
            lines.append(f" {encode(key)}: [")
            lines.append(",\n".join(["  " + encode(v) for v in value]))
            lines.append(f" ]{end}")
        else:
            lines.append(f" {encode(key)}: {encode(value)}{end}")
    lines.append("}")
    return "\n".join(lines)


def print_json_rows(obj: dict[str, Any]) -> None:
    """:func:`json_rows` on stdout (``scan --json``)."""
    sys.stdout.write(json_rows(obj) + "\n")


__all__ = [
    "json_rows",
    "print_json",
    "print_json_rows",
]

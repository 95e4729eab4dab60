"""The --json output of the report commands: one JSON document on stdout."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
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
    return "".join(_json_rows_pieces(obj))


# The elements of a list are encoded and written this many at a time: the 59 MB of 50,000 partitions as
# one string, then that string with its newline, then its bytes, were three allocations of that size
_ROWS_BATCH = 1000


def _json_rows_pieces(obj: dict[str, Any]) -> Iterator[str]:
    """:func:`json_rows`'s text in pieces of at most ``_ROWS_BATCH`` elements of a list."""
    encode = json.JSONEncoder().encode
    yield "{"
    last = len(obj) - 1
    for i, (key, value) in enumerate(obj.items()):
        end = "," if i < last else ""
        if isinstance(value, list) and value:
            yield f"\n {encode(key)}: [\n"
            for start in range(0, len(value), _ROWS_BATCH):
                if start:
                    yield ",\n"
                yield ",\n".join(["  " + encode(v) for v in value[start : start + _ROWS_BATCH]])
            yield f"\n ]{end}"
        else:
            yield f"\n {encode(key)}: {encode(value)}{end}"
    yield "\n}"


def print_json_rows(obj: dict[str, Any]) -> None:
    """:func:`json_rows` on stdout (``scan --json``), written as it is encoded."""
    write = sys.stdout.write
    for piece in _json_rows_pieces(obj):
        write(piece)
    write("\n")


__all__ = [
    "json_rows",
    "print_json",
    "print_json_rows",
]

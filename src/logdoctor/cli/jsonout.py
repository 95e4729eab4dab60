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


def json_rows(obj: dict[str, Any], *, shared_last: str | None = None) -> str:
    """``obj`` as one JSON document laid out for reports of 50,000 partitions: each key of ``obj`` on a
    line of its own, each element of a list value on a line of its own, compact (``json.dumps``'s
    separators). Only a document without indentation is encoded by Python's C encoder; ``indent=1`` is
    its pure-Python encoder, ~5x slower (1.7 s for the 71 MB of 50,000 partitions). The same JSON value
    as :func:`print_json` gives, one partition or finding per line.

    ``shared_last``: a key that elements of the lists may have last whose value is often one object
    shared by many elements (``scan --json``: ``topic_config``, one per topic, shared by its partitions):
    each such object is encoded once and its text reused. The text is the same as without it."""
    return "".join(_json_rows_pieces(obj, shared_last))


# The elements of a list are encoded and written this many at a time: the 59 MB of 50,000 partitions as
# one string, then that string with its newline, then its bytes, were three allocations of that size
_ROWS_BATCH = 1000


def _json_rows_pieces(obj: dict[str, Any], shared_last: str | None = None) -> Iterator[str]:
    """:func:`json_rows`'s text in pieces of at most ``_ROWS_BATCH`` elements of a list."""
    encoder = json.JSONEncoder()
    encode = encoder.encode
    if shared_last is not None:
        encode = _SharedLast(encoder, shared_last).encode
    yield "{"
    last = len(obj) - 1
    for i, (key, value) in enumerate(obj.items()):
        end = "," if i < last else ""
        if isinstance(value, list) and value:
            yield f"\n {encoder.encode(key)}: [\n"
            for start in range(0, len(value), _ROWS_BATCH):
                if start:
                    yield ",\n"
                yield ",\n".join(["  " + encode(v) for v in value[start : start + _ROWS_BATCH]])
            yield f"\n ]{end}"
        else:
            yield f"\n {encoder.encode(key)}: {encoder.encode(value)}{end}"
    yield "\n}"


class _SharedLast:
    """``encoder.encode`` for the elements of :func:`json_rows`' lists, with the value of ``key`` encoded
    once per object when it is an element's last key. In ``scan --json`` of 50,000 partitions each
    partition's ``topic_config`` (its topic's retention settings, the same object for all its partitions)
    was three quarters of the 59 MB, encoded again for every partition: 0.61 s of encoding, 0.30 s with it
    encoded once per topic. The element without that key is encoded by the same encoder and the value's
    text appended after its last member, with the encoder's separators: the text ``encode`` makes."""

    def __init__(self, encoder: json.JSONEncoder, key: str) -> None:
        self._encode = encoder.encode
        self._key = key
        self._member = f"{encoder.item_separator}{encoder.encode(key)}{encoder.key_separator}"
        self._first = f"{{{encoder.encode(key)}{encoder.key_separator}"
        # by id(): each value is held by the document being encoded (alive for the whole encoding, so
        # no other object takes its id), and a shared value is one object
        self._texts: dict[int, str] = {}

    def encode(self, element: Any) -> str:
        if not isinstance(element, dict) or not element or next(reversed(element)) != self._key:
            return self._encode(element)
        value = element[self._key]
        text = self._texts.get(id(value))
        if text is None:
            text = self._texts[id(value)] = self._encode(value)
        rest = dict(element)
        del rest[self._key]
        if not rest:
            return f"{self._first}{text}}}"
        return f"{self._encode(rest)[:-1]}{self._member}{text}}}"


def print_json_rows(obj: dict[str, Any], *, shared_last: str | None = None) -> None:
    """:func:`json_rows` on stdout (``scan --json``), written as it is encoded."""
    write = sys.stdout.write
    for piece in _json_rows_pieces(obj, shared_last):
        write(piece)
    write("\n")


__all__ = [
    "json_rows",
    "print_json",
    "print_json_rows",
]

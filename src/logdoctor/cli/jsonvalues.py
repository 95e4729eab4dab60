"""JSON for programs: plain JSON values of the project's objects (dataclasses, enums, bytes as base64)
and a JSON Lines writer. No rich here: ``dump --json`` and ``scan --json`` print without it
(dump's text sink shows decoded values with :func:`compact_json` too)."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import sys
from collections.abc import Mapping
from typing import IO, Any

__all__ = ["JsonLinesWriter", "b64", "compact_json", "to_jsonable"]


def b64(data: bytes | bytearray | memoryview | None) -> str | None:
    """Base64 of ``data`` (None stays None: a null key or value is not an empty one)."""
    if data is None:
        return None
    return base64.b64encode(bytes(data)).decode("ascii")


def to_jsonable(obj: Any) -> Any:
    """Turn dataclasses, enums, bytes, tuples and mappings into plain JSON values (recursively)."""
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, enum.Enum):
        label = getattr(obj, "label", None)
        return label if isinstance(label, str) else obj.name.lower()
    if isinstance(obj, bytes | bytearray | memoryview):
        return b64(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "_asdict"):
        return to_jsonable(obj._asdict())
    return str(obj)


class JsonLinesWriter:
    """Writes one JSON object per line; flushes per object only when the stream is interactive."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self._interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.count = 0

    def write(self, obj: Mapping[str, Any]) -> None:
        self.stream.write(compact_json(obj))
        self.stream.write("\n")
        self.count += 1
        if self._interactive:
            self.stream.flush()


def compact_json(value: Any) -> str:
    """``value`` as one line of compact JSON (a JSON Lines object; to_jsonable only for what JSON cannot
    hold natively: bytes, dataclasses, ...)."""
    return json.dumps(
        value, separators=(",", ":"), ensure_ascii=False, check_circular=False, default=to_jsonable
    )

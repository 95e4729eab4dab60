"""Rendering helpers shared by the commands: JSON Lines for programs, aligned rich text for people.

JSON Lines: one compact object per line, bytes as base64 (standard alphabet, padded), enums as
their lowercase names, dataclasses as objects. Nothing here knows about Kafka formats beyond that.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "Column",
    "JsonLinesWriter",
    "StreamTable",
    "b64",
    "make_console",
    "print_fields",
    "print_table",
    "text_preview",
    "to_jsonable",
]


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
        self.stream.write(
            json.dumps(obj, separators=(",", ":"), ensure_ascii=False, check_circular=False, default=_default)
        )
        self.stream.write("\n")
        self.count += 1
        if self._interactive:
            self.stream.flush()


def _default(obj: Any) -> Any:
    """json.dumps hook: called only for what JSON cannot hold natively (bytes, dataclasses, ...)."""
    out = to_jsonable(obj)
    if out is obj:  # pragma: no cover - to_jsonable always converts what reaches here
        raise TypeError(f"not JSON serializable: {type(obj).__name__}")
    return out


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console for plain, aligned output: no markup or highlighting surprises in data."""
    return Console(
        file=file if file is not None else (sys.stderr if stderr else sys.stdout),
        markup=False,
        highlight=False,
        emoji=False,
        soft_wrap=True,
    )


def text_preview(data: bytes | memoryview | None, limit: int = 200) -> str:
    """Bytes as text for a terminal: UTF-8 when it decodes cleanly, else hex; long values cut."""
    if data is None:
        return "null"
    raw = bytes(data[: limit + 1]) if len(data) > limit else bytes(data)
    cut = len(data) > limit
    try:
        text = raw[:limit].decode("utf-8")
        printable = all(c.isprintable() or c in "\t" for c in text)
    except UnicodeDecodeError:
        printable = False
    if printable:
        out = repr(text)
    else:
        out = "0x" + raw[: limit // 2].hex()
        cut = cut or len(raw) > limit // 2
    return out + ("..." if cut else "")


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """A column of a streamed table: header, width (characters) and alignment."""

    header: str
    width: int
    right: bool = True


class StreamTable:
    """A table printed row by row with fixed widths (no buffering: a segment can have millions of rows).

    Widths come from the caller (it knows the largest offset of a segment, etc.); a longer value just
    widens its own row. The header is printed before the first row, dimmed.
    """

    def __init__(self, console: Console, columns: Sequence[Column], *, indent: str = "") -> None:
        self.console = console
        self.columns = list(columns)
        self.indent = indent
        self._header_done = False

    def _line(self, cells: Sequence[str]) -> str:
        parts = []
        for col, cell in zip(self.columns, cells, strict=True):
            parts.append(cell.rjust(col.width) if col.right else cell.ljust(col.width))
        return (self.indent + "  ".join(parts)).rstrip()

    def header(self) -> None:
        if not self._header_done:
            self._header_done = True
            self.console.print(Text(self._line([c.header for c in self.columns]), style="bold dim"))

    def row(self, cells: Sequence[Any], *, style: str | None = None, tail: str = "") -> None:
        self.header()
        line = self._line([str(c) for c in cells])
        if tail:
            line = f"{line}  {tail}"
        self.console.print(Text(line, style=style or ""))


def print_table(
    console: Console,
    title: str | None,
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    right: Sequence[bool] | None = None,
) -> None:
    """A small boxed rich table (checkpoints, snapshots, properties): rows are buffered."""
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for i, h in enumerate(headers):
        table.add_column(h, justify="right" if right and right[i] else "left", header_style="bold dim")
    for r in rows:
        table.add_row(*(str(c) for c in r))
    console.print(table)


def print_fields(console: Console, fields: Mapping[str, Any], *, indent: str = "  ") -> None:
    """``key: value`` lines with the keys aligned."""
    if not fields:
        return
    width = max(len(k) for k in fields)
    for k, v in fields.items():
        console.print(Text(f"{indent}{k.ljust(width)}  {v}"))

"""rich's text off a terminal, without importing rich: the small tables and ``key: value`` lines of
``logdoctor dump`` written to a pipe or a file (an operator's ``for f in */*checkpoint; do logdoctor
dump "$f"; done > out.txt``), where rich's import and console cost more than the dump itself (~25 ms of a
~75 ms run; BENCHMARKS.md, "CLI start").

Only the cases whose layout is plain arithmetic are taken: the stream is not a terminal and nothing in
the environment makes rich treat it as one or narrows it (``TTY_COMPATIBLE``, ``FORCE_COLOR``,
``COLUMNS``), and every text is printable ASCII (no tab, control character or wide character, whose
layout and escapes are rich's). Anything else answers None and the caller prints through rich as before.
``tests/cli/test_plain.py`` compares these lines with rich's (``cli.render.print_table``,
``print_fields`` on a console of ``cli.output.text_console``) for generated tables and every real file.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["Column", "field_lines", "is_plain_stream", "table_lines"]

WIDE = 10_000  # the width rich is given off a terminal (cli.output): no line is cut or wrapped
_ASCII_PRINTABLE = re.compile(r"[\x20-\x7e]*")
_RICH_ENVIRONMENT = ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS")


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """A column of a streamed table (dump's rows): header, width (characters) and alignment."""

    header: str
    width: int
    right: bool = True


def is_plain_stream(stream: IO[str]) -> bool:
    """True when rich would write to ``stream`` as to a file: no terminal, no colour, width WIDE."""
    if any(name in os.environ for name in _RICH_ENVIRONMENT):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # a closed stream: let rich say what it says
        return False


def _plain(texts: Sequence[str]) -> bool:
    return all(_ASCII_PRINTABLE.fullmatch(t) for t in texts)


def table_lines(
    title: str | None, headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[bool] | None
) -> list[str] | None:
    """The lines ``cli.render.print_table`` prints off a terminal (a rich Table with no box and no edge:
    cells padded to their column's width, columns two spaces apart, the title on its own line, left), or
    None where the layout is rich's to make."""
    cells = [[str(c) for c in r] for r in rows]
    texts = [*headers, *(c for r in cells for c in r)]
    if title:
        texts.append(title)
    if not _plain(texts) or any(len(r) != len(headers) for r in cells):
        return None
    if any(t[:1] == " " or t[-1:] == " " for t in [*headers, *(c for r in cells for c in r)]):
        return None  # rich trims and re-pads a cell's outer spaces by its justification
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    if 0 in widths or sum(widths) + 2 * (len(widths) - 1) > WIDE or (title and len(title) > WIDE):
        return None  # rich gives an empty column a width of its own
    justify = [bool(right and right[i]) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, justify, strict=True)
        )

    out = [title] if title else []
    out.append(line(headers))
    out.extend(line(r) for r in cells)
    return out


def field_lines(fields: Mapping[str, Any], *, indent: str = "  ") -> list[str] | None:
    """The lines ``cli.render.print_fields`` prints off a terminal (keys aligned), or None where the
    layout is rich's to make."""
    if not fields:
        return []
    width = max(len(k) for k in fields)
    out = [f"{indent}{k.ljust(width)}  {v}" for k, v in fields.items()]
    if not _plain(out) or any(len(x) > WIDE for x in out):
        return None
    return out

"""Text output for people, the same in every command: one console factory and one escape for names.

- :func:`printable`: a folder or file name (any text from the data) with its control characters
  shown as escapes (``\\x1b``, ``\\r``, ``\\n``, ...; an undecodable byte of a name as ``\\xNN``), so an
  ESC sequence in a topic folder's name cannot move the cursor, recolour or rewrite the operator's
  screen. Every console of :func:`text_console` applies it to all the text it prints (rich's own styling
  and cursor control excepted); what is written without rich (error lines, dump's rows) calls it.
- :func:`text_console`: full width when the output is not a terminal (a file, a pipe: ``retention ... >
  ticket.txt`` keeps whole segment names and timestamps; rich would cut at 80 columns), the terminal's
  width otherwise, ``COLUMNS`` when set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderHook
from rich.segment import Segment

from logdoctor.cli.escape import _CONTROL_BUT_NEWLINE, printable
from logdoctor.cli.plain import WIDE  # the width of text written to a file or a pipe: no line is cut

__all__ = ["WIDE", "escape_console", "printable", "text_console"]


class _Escaped:
    """A renderable whose text segments have their control characters escaped."""

    __slots__ = ("renderable",)

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, con: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for seg in con.render(self.renderable, options):
            if seg.control is None and _CONTROL_BUT_NEWLINE.search(seg.text):
                yield Segment(printable(seg.text, keep_newlines=True), seg.style)
            else:
                yield seg


class _EscapeHook(RenderHook):
    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Escaped(r) for r in renderables]


def escape_console(con: Console) -> Console:
    """``con`` escaping control characters in everything it prints; full width off a terminal."""
    if not con.is_terminal and "COLUMNS" not in os.environ:
        con.width = WIDE
    con.push_render_hook(_EscapeHook())
    return con


def text_console(*, stderr: bool = False, file: IO[str] | None = None, **options: Any) -> Console:
    """The console of a command's text output (``stderr`` for messages beside data on stdout)."""
    return escape_console(Console(stderr=stderr, file=file, **options))

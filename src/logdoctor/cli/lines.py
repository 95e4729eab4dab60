"""Lines of text for people, each with a style: written through rich on a terminal, and as they are off
one, without importing rich (~20 ms of a ~300 ms ``repair --apply``; BENCHMARKS.md, "Repair").

A command's report of its plan and run (``repair``, ``move-partition``, ``sync-replica``:
:mod:`logdoctor.cli.plan_output`, :mod:`logdoctor.cli.run_status`) is whole lines of text, each of one
style. :func:`lines_for` gives :class:`PlainLines` when the stream is one rich writes as a file
(:func:`logdoctor.cli.plain.is_plain_stream`: no terminal, colour or width in the environment), and
:class:`RichLines` over :func:`logdoctor.cli.output.text_console` otherwise. :class:`PlainLines` writes
a line itself only when it is printable ASCII (and newlines); any other line goes through rich, so that
its escapes (:func:`logdoctor.cli.escape.printable`) and layout are rich's. ``tests/cli/test_lines.py``
compares both on generated texts and on the plans and runs of real commands.
"""

from __future__ import annotations

import re
import sys
import textwrap
from typing import IO, Any, Protocol

from logdoctor.cli.plain import WIDE, is_plain_stream

__all__ = ["EXAMPLES", "Lines", "PlainLines", "RichLines", "lines_for", "wrap"]

EXAMPLES = 3  # of many items of one kind (findings, actions, paths), how many are shown in full

_PLAIN = re.compile(r"[\x20-\x7e\n]*")


class Lines(Protocol):
    """Where a command's lines for people go."""

    @property
    def width(self) -> int:
        """The width text is wrapped to (:func:`wrap`)."""
        ...

    def line(self, text: str = "", style: str = "") -> None:
        """``text`` (newlines allowed) and a newline, in rich's ``style`` where styles are shown."""
        ...

    def spans(self, *parts: tuple[str, str]) -> None:
        """One line of several ``(text, style)`` parts."""
        ...


class RichLines:
    """Lines through a rich console (a terminal: its width, colours, escapes)."""

    __slots__ = ("console",)

    def __init__(self, console: Any) -> None:
        self.console = console

    @property
    def width(self) -> int:
        return int(self.console.width)

    def line(self, text: str = "", style: str = "") -> None:
        from rich.text import Text

        self.console.print(Text(text, style=style), soft_wrap=True)

    def spans(self, *parts: tuple[str, str]) -> None:
        from rich.text import Text

        text = Text()
        for part, style in parts:
            text.append(part, style=style)
        self.console.print(text, soft_wrap=True)


class PlainLines:
    """Lines written to a stream rich would treat as a file: no styles, no escapes to make, width
    :data:`~logdoctor.cli.plain.WIDE`. A line that is not printable ASCII goes through rich."""

    __slots__ = ("_rich", "stream")

    width = WIDE

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self._rich: RichLines | None = None

    def line(self, text: str = "", style: str = "") -> None:
        if _PLAIN.fullmatch(text):
            self._write(text)
            return
        self._through_rich().line(text, style)

    def spans(self, *parts: tuple[str, str]) -> None:
        text = "".join(part for part, _style in parts)
        if _PLAIN.fullmatch(text):
            self._write(text)
            return
        self._through_rich().spans(*parts)

    def _write(self, text: str) -> None:
        # flushed as rich flushes each print: the plan is out before the run writes (kill -9, a crash)
        # and before any line on stderr
        self.stream.write(text + "\n")
        self.stream.flush()

    def _through_rich(self) -> RichLines:
        if self._rich is None:
            from logdoctor.cli.output import text_console

            self._rich = RichLines(text_console(file=self.stream))
        return self._rich


def lines_for(stream: IO[str] | None = None) -> PlainLines | RichLines:
    """The lines of a command's text output to ``stream`` (standard output when None)."""
    out = sys.stdout if stream is None else stream
    if is_plain_stream(out):
        return PlainLines(out)
    from logdoctor.cli.output import text_console

    return RichLines(text_console(file=stream))


def wrap(out: Lines, text: str, indent: str, style: str = "", first: str | None = None) -> None:
    """``text`` wrapped to ``out``'s width under ``indent``, one line of ``style`` (words and paths are
    never cut)."""
    body = textwrap.fill(
        text,
        width=max(40, out.width),
        initial_indent=first if first is not None else indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    out.line(body, style)

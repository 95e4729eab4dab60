"""cli.lines: a command's lines for people are the same bytes whether rich writes them or not.

Off a terminal :class:`PlainLines` writes printable ASCII lines itself, without importing rich; every
other line goes through rich. Compared here with :class:`RichLines` over the console the commands use
off a terminal (``cli.output.text_console``: width WIDE, escapes) on generated texts, styles, several
spans and wrapped text. tests/repair/test_plan_lines.py compares whole commands.
"""

from __future__ import annotations

import io
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.cli.lines import PlainLines, RichLines, lines_for, wrap
from logdoctor.cli.output import text_console

STYLES = st.sampled_from(["", "bold", "dim", "yellow", "red", "bold red", "green", "cyan"])
# printable ASCII and newlines most of the time (PlainLines' own lines), any text at times (rich's)
TEXTS = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.just("\n"), max_size=300),
    st.text(max_size=120),
    st.sampled_from(
        ["", " ", "  x  ", "\n", "a\n\nb\n", "[bold]x[/bold]", ":thumbs_up: [red]", "é", "\x1b[2J"]
    ),
)


def _both(write) -> tuple[str, str]:
    plain, rich = io.StringIO(), io.StringIO()
    write(PlainLines(plain))
    write(RichLines(text_console(file=rich)))
    return plain.getvalue(), rich.getvalue()


@settings(max_examples=tiers.examples(300), deadline=None)
@given(st.lists(st.tuples(TEXTS, STYLES), max_size=6))
def test_lines_are_rich_s_lines(lines: list[tuple[str, str]]) -> None:
    def write(out) -> None:
        for text, style in lines:
            out.line(text, style)
        out.line()

    plain, rich = _both(write)
    assert plain == rich


@settings(max_examples=tiers.examples(200), deadline=None)
@given(st.lists(st.tuples(TEXTS, STYLES), min_size=1, max_size=4))
def test_spans_are_rich_s_spans(parts: list[tuple[str, str]]) -> None:
    plain, rich = _both(lambda out: out.spans(*parts))
    assert plain == rich


@settings(max_examples=tiers.examples(200), deadline=None)
@given(TEXTS, st.sampled_from(["", "  ", "      "]), STYLES, st.sampled_from([None, "why: ", "    note: "]))
def test_wrapped_text_is_rich_s(text: str, indent: str, style: str, first: str | None) -> None:
    plain, rich = _both(lambda out: wrap(out, text, indent, style, first))
    assert plain == rich


def test_markup_and_emoji_codes_are_printed_as_they_are() -> None:
    """A path is text, never rich markup: a backup dir named ``[bold]x`` or ``:thumbs_up:`` prints so."""
    for text in ("backup dir: /data/[bold]x[/bold]", "journal: /data/:thumbs_up:/j"):
        plain, rich = _both(lambda out, t=text: out.line(t, "bold"))
        assert plain == rich == text + "\n"


def test_plain_lines_flush_each_line_as_rich_does() -> None:
    """The plan is on its way before the run writes: each line is flushed (a kill -9 after it keeps it)."""
    flushed: list[str] = []

    class Stream(io.StringIO):
        def flush(self) -> None:
            flushed.append(self.getvalue())

    s = Stream()
    out = PlainLines(s)
    out.line("one")
    out.spans(("[1] ", "bold"), ("two", ""))
    assert flushed == ["one\n", "one\n[1] two\n"]


def test_off_a_terminal_no_rich_is_imported() -> None:
    code = (
        "import sys\n"
        "from logdoctor.cli.lines import lines_for, wrap\n"
        "out = lines_for()\n"
        "out.line('plan', 'bold'); out.spans(('[1] ', 'bold'), ('x', '')); wrap(out, 'why ' * 50, '  ')\n"
        "print(type(out).__name__, any(m == 'rich' or m.startswith('rich.') for m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin"}
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "PlainLines False"
    # a line rich must write (a control character, escaped) brings rich in, in order with the others
    code = code.replace("'plan', 'bold'", "'plan\\x1b', 'bold'")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin"}
    )
    assert done.stdout.splitlines()[0] == "plan\\x1b"
    assert done.stdout.splitlines()[1] == "[1] x"
    assert done.stdout.splitlines()[-1] == "PlainLines True"


def test_a_terminal_or_a_width_in_the_environment_is_rich_s(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert isinstance(lines_for(io.StringIO()), RichLines)
    monkeypatch.delenv("COLUMNS")
    assert isinstance(lines_for(io.StringIO()), PlainLines)

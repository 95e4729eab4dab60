"""``cli.plain`` lays out dump's small tables and ``key: value`` lines off a terminal as rich does, without
importing rich: its lines equal rich's (``cli.render.print_table`` / ``print_fields`` on the console every
command prints through) for generated tables and for every real small file, it declines (None) whatever
rich lays out by rules of its own, and a text ``dump`` of a checkpoint into a pipe imports no rich."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import realworld
import tiers
from logdoctor.cli import output
from logdoctor.cli.plain import WIDE, field_lines, is_plain_stream, table_lines
from logdoctor.cli.render import make_console, print_fields, print_table
from logdoctor.formats.checkpoint import OffsetCheckpoint, write_offset_checkpoint


@pytest.fixture(autouse=True)
def _off_a_terminal() -> Iterator[None]:
    """rich's width off a terminal is WIDE unless COLUMNS is set (xdist workers set it)."""
    with pytest.MonkeyPatch.context() as mp:
        for name in ("COLUMNS", "TTY_COMPATIBLE", "FORCE_COLOR"):
            mp.delenv(name, raising=False)
        yield


def _rich_table(title: str | None, headers: list[str], rows: list[list[object]], right: list[bool]) -> str:
    buf = io.StringIO()
    print_table(make_console(file=buf), title, headers, rows, right=right)
    return buf.getvalue()


def _rich_fields(fields: dict[str, str]) -> str:
    buf = io.StringIO()
    print_fields(make_console(file=buf), fields, indent="  ")
    return buf.getvalue()


def _joined(lines: list[str] | None) -> str | None:
    return None if lines is None else "".join(f"{x}\n" for x in lines)


ascii_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
cell = st.one_of(ascii_text, st.integers(-(2**63), 2**63 - 1))


@st.composite
def tables(draw: st.DrawFn) -> tuple[str | None, list[str], list[list[object]], list[bool]]:
    columns = draw(st.integers(1, 5))
    headers = draw(st.lists(ascii_text, min_size=columns, max_size=columns))
    rows = draw(st.lists(st.lists(cell, min_size=columns, max_size=columns), max_size=6))
    right = draw(st.lists(st.booleans(), min_size=columns, max_size=columns))
    title = draw(st.one_of(st.none(), ascii_text))
    return title, headers, rows, right


@settings(max_examples=tiers.examples(300), deadline=None)
@given(tables())
def test_a_table_of_printable_ascii_is_laid_out_as_rich_lays_it_out(
    table: tuple[str | None, list[str], list[list[object]], list[bool]],
) -> None:
    title, headers, rows, right = table
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("COLUMNS", raising=False)
        lines = table_lines(title, headers, rows, right)
        assume(lines is not None)  # declined: rich prints it (too many declines fail the health check)
        assert _joined(lines) == _rich_table(title, headers, rows, right)


@settings(max_examples=tiers.examples(300), deadline=None)
@given(st.dictionaries(ascii_text.filter(bool), ascii_text, max_size=6))
def test_fields_of_printable_ascii_are_laid_out_as_rich_lays_them_out(fields: dict[str, str]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("COLUMNS", raising=False)
        lines = field_lines(fields, indent="  ")
        assume(lines is not None)
        assert _joined(lines) == _rich_fields(fields)


@pytest.mark.parametrize("text", ["a\tb", "caf\u00e9", "\u65e5\u672c", "esc\x1b[2J", "line\nbreak", "\x7f"])
def test_what_rich_lays_out_by_its_own_rules_is_declined(text: str) -> None:
    assert table_lines(None, ["h"], [[text]], [False]) is None
    assert table_lines(text, ["h"], [["x"]], [False]) is None
    assert table_lines(None, [text], [["x"]], [False]) is None
    assert field_lines({"k": text}) is None
    assert field_lines({text: "v"}) is None


def test_wider_than_rich_is_given_is_declined() -> None:
    assert table_lines(None, ["h"], [["x" * (WIDE + 1)]], [False]) is None
    assert field_lines({"k": "x" * WIDE}) is None
    assert output.WIDE == WIDE


def test_only_a_stream_rich_takes_for_a_file_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe, open(os.devnull, "w") as devnull:
        os.close(read)
        assert is_plain_stream(pipe) and is_plain_stream(devnull) and is_plain_stream(io.StringIO())
        primary, secondary = pty.openpty()
        with os.fdopen(secondary, "w") as terminal:
            assert not is_plain_stream(terminal)
        os.close(primary)
        for name, value in (("COLUMNS", "80"), ("TTY_COMPATIBLE", "1"), ("FORCE_COLOR", "1")):
            with monkeypatch.context() as mp:
                mp.setenv(name, value)
                assert not is_plain_stream(pipe)


def _small_real_files() -> list[Path]:
    root = realworld.require()
    names = (
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
        "leader-epoch-checkpoint",
        "meta.properties",
        "partition.metadata",
        "quorum-state",
    )
    found = [
        p for p in sorted(root.rglob("*")) if p.is_file() and (p.name in names or p.suffix == ".snapshot")
    ]
    assert len(found) > 50
    return found


def _dump_text(files: list[Path], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "logdoctor.cli.main", "dump", *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
    )


def test_every_real_small_file_dumps_as_through_rich() -> None:
    """The same dump of every real checkpoint, epoch checkpoint, properties, metadata, quorum state and
    snapshot file, into a pipe: plain (this module) against rich (TTY_COMPATIBLE=0: rich's own "not a
    terminal", which cli.plain leaves to rich)."""
    files = _small_real_files()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TTY_COMPATIBLE", "FORCE_COLOR")}
    plain = _dump_text(files, env)
    through_rich = _dump_text(files, {**env, "TTY_COMPATIBLE": "0"})
    assert plain.stdout.count("Dumping ") > 0.9 * len(files)  # the others are errors (empty files), on stderr
    assert plain.stdout.count("  version 0, ") > 100 and plain.stdout.count("[cluster.id]") > 5
    assert (plain.returncode, plain.stdout, plain.stderr) == (
        through_rich.returncode,
        through_rich.stdout,
        through_rich.stderr,
    )


def test_a_text_dump_of_a_checkpoint_into_a_pipe_imports_no_rich(tmp_path: Path) -> None:
    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint.write_bytes(write_offset_checkpoint(OffsetCheckpoint(0, [("orders", 3, 42), ("o", 12, 7)])))
    code = (
        "import json, sys\n"
        f"sys.argv = ['logdoctor', 'dump', {str(checkpoint)!r}]\n"
        "from logdoctor.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    modules = {m.split(".")[0] for m in json.loads(done.stderr.strip().splitlines()[-1])}
    # nor the fsync pool's threads (logdir.atomic loads them on the first write)
    assert not modules & {"typer", "click", "rich", "pydantic", "concurrent", "tempfile"}
    assert done.stdout.splitlines()[2:] == [
        "topic   partition  offset",
        "orders          3      42",
        "o              12       7",
        "  summary: 2 entries; 0 findings",
    ]

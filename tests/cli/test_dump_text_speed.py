"""Text output of ``logdoctor dump`` costs no more than --json (issue 17: it was 5x slower, one rich
render per line). The count test is exact: rich is called a few times, never once per row. The two sinks'
times are measured by benchmarks/bench_dump.py (BENCHMARKS.md), not here: a timed test fails on a loaded
machine whatever the code does."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest
from rich.console import Console

import realworld
from logdoctor.cli import commands  # noqa: F401
from logdoctor.cli.dump import DumpOptions, TextSink, dump_one

METADATA_LOG = "kraft-3.5-greenlemont-n1/__cluster_metadata-0/00000000000000000000.log"


def test_rows_are_not_rendered_one_by_one_by_rich(monkeypatch):
    path = realworld.require() / METADATA_LOG
    calls = {"n": 0}
    real = Console.print

    def counting(self, *args, **kwargs):
        calls["n"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Console, "print", counting)
    opts = DumpOptions(deep=True, print_data=True)
    buf = io.StringIO()
    with redirect_stdout(buf):
        sink = TextSink(opts)
        dump_one(path, opts, sink)
        sink.close()
    lines = buf.getvalue().splitlines()
    assert len(lines) > 50_000  # every batch and record
    assert calls["n"] < 10, calls  # a header, a summary: never one call per row
    assert lines[0].startswith("Dumping ") and "summary:" in lines[-1]


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"plain",
        b"tab\there",
        b"new\nline",
        "ünïcödé".encode(),
        b"\x00\x01binary",
        b"x" * 200,
        b"x" * 201,
        b"\xff" * 150,
        b"\xff" * 99,
        ("a" * 199 + "é").encode(),
        b'{"json": 1}' * 30,
    ],
)
def test_fast_preview_is_render_text_preview(data):
    from logdoctor.cli.dump.text import _preview
    from logdoctor.cli.render import text_preview

    assert _preview(data) == text_preview(data)

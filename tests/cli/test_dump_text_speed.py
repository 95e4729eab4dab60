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
    ("data", "expected"),
    [
        (None, "null"),
        (b"", "''"),
        (b"plain", "'plain'"),
        (b"tab\there", repr("tab\there")),
        (b"new\nline", "0x" + b"new\nline".hex()),
        ("ünïcödé".encode(), repr("ünïcödé")),
        (b"\x00\x01binary", "0x" + b"\x00\x01binary".hex()),
        (b"x" * 200, repr("x" * 200)),
        (b"x" * 201, repr("x" * 200) + "..."),
        (b"\xff" * 150, "0x" + "ff" * 100 + "..."),
        (b"\xff" * 99, "0x" + "ff" * 99),
        (("a" * 199 + "é").encode(), "0x" + "61" * 100 + "..."),  # the 200th byte cuts é: not UTF-8
        (b'{"json": 1}' * 30, repr(('{"json": 1}' * 30)[:200]) + "..."),
    ],
)
def test_preview_is_text_when_printable_else_hex_and_cut(data, expected):
    from logdoctor.cli.dump.text import _preview

    assert _preview(data) == expected

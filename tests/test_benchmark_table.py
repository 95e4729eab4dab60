"""BENCHMARKS.md as today's figures: the rows a benchmark prints (`benchmarks/_common.py` `TableRows`) and
their replacement by "what" (`benchmarks/update_table.py`), and the file's own form (a table per area,
seven cells a row, each "what" once)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))  # _common's own imports, as the benchmarks run it
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


update_table = _load("update_table")

PAGE = """# Benchmarks

Text that names `| a | b |` inline stays.

## Scan

| what | figure | anchor (same run) | ratio | command | load | commit |
|---|---|---|---|---|---|---|
| `scan --deep` of 1 GiB | 0.22 s | `cat` 0.22 s | 1.00x | `bench_disk_speed.py --gb 1` | 1.2 | 5372f0e |
| `scan --quick` of 50,000 empty partitions | 1.03 s | `find` 0.30 s | 3.50x | `x` | 1.6 | 5372f0e |

Goals: met.

## Other

| codec | measurement | throughput |
|---|---|---|
| none | `scan --deep` of 1 GiB | 6 GB/s |
"""


def test_a_row_replaces_the_row_of_the_same_what_and_nothing_else() -> None:
    new = "| `scan --deep` of 1 GiB | 0.20 s | `cat` 0.21 s | 0.95x | `bench_disk_speed.py` | 0.4 | abc1234 |"
    text, missing = update_table.replace_rows(PAGE, ["some output line", new])
    assert missing == []
    before, after = PAGE.split("\n"), text.split("\n")
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert len(changed) == 1
    assert after[changed[0]] == new
    assert "| `scan --quick` of 50,000 empty partitions | 1.03 s |" in text
    assert "| none | `scan --deep` of 1 GiB | 6 GB/s |" in text  # a table of another form is not touched


def test_a_row_of_no_table_is_reported_and_left_out() -> None:
    row = "| `repair --apply` of 1 GiB | 0.29 s | `cat` 0.22 s | 1.31x | `x` | 1.2 | 5372f0e |"
    text, missing = update_table.replace_rows(PAGE, [row])
    assert missing == ["`repair --apply` of 1 GiB"]
    assert text == PAGE


def test_header_and_separator_rows_are_no_rows() -> None:
    header = "| what | figure | anchor (same run) | ratio | command | load | commit |"
    assert update_table.cells(header) is None
    assert update_table.cells("|---|---|---|---|---|---|---|") is None
    assert update_table.replace_rows(PAGE, [header, "|---|---|---|---|---|---|---|"]) == (PAGE, [])


def test_an_escaped_pipe_stays_in_its_cell() -> None:
    row = "| `scan --quick` of 50,000 empty partitions | 1.00 s | `find` 0.30 s | 3.3x | `a \\| b` | 1 | c |"
    assert update_table.cells(row)[4] == "`a \\| b`"
    text, missing = update_table.replace_rows(PAGE, [row])
    assert missing == [] and row in text.split("\n")


def test_only_the_rows_under_the_marker_are_taken_from_a_benchmarks_output() -> None:
    row = "| `scan --deep` of 1 GiB | 0.20 s | `cat` 0.21 s | 0.95x | `x` | 0.4 | abc1234 |"
    own = "| 4 MiB segments, kafka-local, local store | 75,434,436 | 0.17 | 443 | cp -r | 0.08 | 2.19x |"
    output = f"| run | a | b | c | d | e | f |\n{own}\n\n{update_table.MARKER} (...):\n{row}\n\n{own}\n"
    assert update_table.printed_rows(output) == [row]
    assert update_table.printed_rows(f"{own}\n{row}\n") == [own, row]  # a file of rows


def test_a_what_given_twice_in_the_page_is_an_error() -> None:
    dup = PAGE.replace("Goals: met.", "| `scan --deep` of 1 GiB | 1 | 2 | 3 | 4 | 5 | 6 |")
    with pytest.raises(ValueError, match="scan --deep"):
        update_table.replace_rows(dup, [])


def test_the_rows_a_benchmark_prints_replace_their_rows(tmp_path: Path, monkeypatch, capsys) -> None:
    common = _load("_common")
    monkeypatch.setattr(sys, "argv", [str(BENCH / "bench_disk_speed.py"), "--gb", "1"])
    rows = common.TableRows()
    rows.add("`scan --deep` of 1 GiB", "0.20 s", "`cat` 0.21 s", common.ratio(0.20, 0.21))
    rows.add("a figure no table has", "1 s")
    rows.print()
    out = capsys.readouterr().out
    printed = [line for line in out.splitlines() if update_table.cells(line) is not None]
    assert len(printed) == 2
    what, figure, anchor, r, command, load, commit = update_table.cells(printed[0])
    assert (what, figure, anchor, r) == ("`scan --deep` of 1 GiB", "0.20 s", "`cat` 0.21 s", "0.95x")
    assert command == "`.venv/bin/python benchmarks/bench_disk_speed.py --gb 1`"
    assert " / " in load and commit not in ("", "?")
    page, rows_file = tmp_path / "BENCHMARKS.md", tmp_path / "rows.txt"
    page.write_text(PAGE)
    rows_file.write_text(out)
    assert update_table.main([str(rows_file), "--file", str(page)]) == 1  # the second row has no table
    assert "a figure no table has" in capsys.readouterr().err
    text = page.read_text()
    assert printed[0] in text.split("\n") and "| `scan --deep` of 1 GiB | 0.22 s |" not in text


def test_benchmarks_md_is_tables_of_current_figures_each_what_once() -> None:
    text = (REPO / "BENCHMARKS.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert rows
    for line in rows:  # every table of the page is of the one form
        assert len(update_table._SPLIT.split(line.strip()[1:-1])) == update_table.CELLS, line
    assert update_table.replace_rows(text, []) == (text, [])  # no "what" twice
    headers = [line for line in rows if line.startswith("| what |")]
    assert len(headers) == text.count("\n## ")  # one table per area

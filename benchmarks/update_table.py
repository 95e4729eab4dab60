"""Put a benchmark run's rows into BENCHMARKS.md: each printed row replaces the row of the same "what" (its
first cell) in BENCHMARKS.md's tables of ``| what | figure | anchor (same run) | ratio | command | load |
commit |``.

    .venv/bin/python benchmarks/bench_help.py --partitions 50000 | tee /tmp/rows.txt
    .venv/bin/python benchmarks/update_table.py /tmp/rows.txt        # or: ... | update_table.py -

The rows taken are those under the line ``BENCHMARKS.md rows`` a benchmark prints before them (up to the
next blank line), or every such row of the input when it has no such line (a file of rows). A row whose
"what" is in no table is named on stderr and left out (add it to its table by hand once: the area is the
reader's call), and the exit status is 1; a "what" that two rows of BENCHMARKS.md share is an error,
nothing is written.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

CELLS = 7  # what, figure, anchor (same run), ratio, command, load, commit
MARKER = "BENCHMARKS.md rows"  # the line a benchmark prints above its rows (_common.TableRows)
BENCHMARKS = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
_SPLIT = re.compile(r"(?<!\\)\|")


def cells(line: str) -> list[str] | None:
    """The cells of a table row of BENCHMARKS.md's form (seven, stripped), else None; a header row
    ("what") or a separator row is not a row."""
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|") and len(s) > 1):
        return None
    parts = [c.strip() for c in _SPLIT.split(s[1:-1])]
    if len(parts) != CELLS or parts[0] == "what" or set(parts[0]) <= set("-: "):
        return None
    return parts


def printed_rows(output: str) -> list[str]:
    """The rows of a benchmark's output: those under a :data:`MARKER` line, up to the next blank line; every
    row of ``output`` if it has no such line."""
    lines = output.splitlines()
    if not any(line.startswith(MARKER) for line in lines):
        return [line for line in lines if cells(line) is not None]
    rows, under = [], False
    for line in lines:
        if line.startswith(MARKER):
            under = True
        elif not line.strip():
            under = False
        elif under and cells(line) is not None:
            rows.append(line)
    return rows


def replace_rows(text: str, rows: list[str]) -> tuple[str, list[str]]:
    """``text`` with each of ``rows`` in place of the row of the same "what", and the "what"s of the rows
    that match none. Raises ValueError when a "what" is the key of two rows of ``text``."""
    lines = text.split("\n")
    where: dict[str, int] = {}
    for i, line in enumerate(lines):
        c = cells(line)
        if c is None:
            continue
        if c[0] in where:
            raise ValueError(f"two rows of BENCHMARKS.md are {c[0]!r} (lines {where[c[0]] + 1} and {i + 1})")
        where[c[0]] = i
    missing = []
    for row in rows:
        c = cells(row)
        if c is None:
            continue
        if c[0] in where:
            lines[where[c[0]]] = row.strip()
        else:
            missing.append(c[0])
    return "\n".join(lines), missing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", help="a file of the benchmark's output, or - for stdin")
    ap.add_argument("--file", type=Path, default=BENCHMARKS, help="the markdown file to update")
    args = ap.parse_args(argv)
    source = sys.stdin.read() if args.rows == "-" else Path(args.rows).read_text()
    rows = printed_rows(source)
    try:
        text, missing = replace_rows(args.file.read_text(), rows)
    except ValueError as e:
        print(f"update_table: {e}", file=sys.stderr)
        return 2
    args.file.write_text(text)
    print(f"update_table: {len(rows) - len(missing)} row(s) replaced in {args.file}", file=sys.stderr)
    for what in missing:
        print(f"update_table: no row {what!r} in {args.file}: add it to its table by hand", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

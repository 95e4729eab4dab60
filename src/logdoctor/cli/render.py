"""Rendering helpers shared by the commands: aligned rich text for people (JSON Lines for programs is
:mod:`logdoctor.cli.jsonvalues`, without rich). Nothing here knows about Kafka formats."""

from __future__ import annotations

import collections
import dataclasses
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from logdoctor.cli.lines import EXAMPLES, RichLines, wrap

__all__ = [
    "FindingGroup",
    "group_findings",
    "make_console",
    "print_fields",
    "print_table",
    "render_findings",
]


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console for plain, aligned output: no markup or highlighting surprises in data; control
    characters escaped and full width off a terminal (:mod:`logdoctor.cli.output`)."""
    from logdoctor.cli.output import escape_console

    return escape_console(
        Console(
            file=file if file is not None else (sys.stderr if stderr else sys.stdout),
            markup=False,
            highlight=False,
            emoji=False,
            soft_wrap=True,
        )
    )


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


# --- findings for people: grouped by code, wrapped to the terminal ------------------------------------

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
_SEVERITY_RANK = {"error": 2, "warning": 1, "info": 0}


def _attr(f: Any, name: str) -> Any:
    return f.get(name) if isinstance(f, Mapping) else getattr(f, name, None)


def severity_label(f: Any) -> str:
    s = _attr(f, "severity")
    label = getattr(s, "label", s)
    return str(label).lower()


def partition_of(path: str) -> str | None:
    """The ``<topic>-<partition>`` folder a finding's path lies in (None: the log dir level)."""
    from logdoctor.logdir.names import parse_partition_dir

    for part in reversed(Path(path).parts):
        if parse_partition_dir(part) is not None:
            return part
    return None


@dataclasses.dataclass(slots=True)
class FindingGroup:
    """The findings of one severity and code, in their original order."""

    severity: str
    code: str
    items: list[Any]

    def partitions(self) -> collections.Counter[str]:
        return collections.Counter(p for f in self.items if (p := partition_of(_attr(f, "path"))) is not None)


def group_findings(findings: Iterable[Any]) -> list[FindingGroup]:
    """Findings grouped by (severity, code): worst severity first, then in order of first appearance."""
    groups: dict[tuple[str, str], FindingGroup] = {}
    for f in findings:
        key = (severity_label(f), str(_attr(f, "code")))
        groups.setdefault(key, FindingGroup(*key, [])).items.append(f)
    return sorted(groups.values(), key=lambda g: -_SEVERITY_RANK.get(g.severity, 0))


def wrapped(console: Console, text: str, indent: str, style: str = "", first: str | None = None) -> None:
    """``text`` wrapped to the console's width under ``indent`` (words and paths are never cut)."""
    wrap(RichLines(console), text, indent, style, first)


def _where(f: Any) -> str:
    pos = _attr(f, "position")
    return str(_attr(f, "path")) + (f"@{pos}" if pos is not None else "")


def _ref_key(ref: Any) -> tuple[str, str, Any]:
    return (str(_attr(ref, "code")), str(_attr(ref, "path")), _attr(ref, "position"))


def split_consequences(findings: Iterable[Any]) -> tuple[list[Any], dict[tuple[str, str, Any], list[Any]]]:
    """(the findings that are no other's consequence, each root's consequences by its key). A consequence
    whose cause is not among ``findings`` stays a root."""
    items = list(findings)
    keys = {_ref_key(f) for f in items if not _attr(f, "caused_by")}
    roots: list[Any] = []
    under: dict[tuple[str, str, Any], list[Any]] = collections.defaultdict(list)
    for f in items:
        cause = _attr(f, "caused_by")
        if cause and _ref_key(cause) in keys:
            under[_ref_key(cause)].append(f)
        else:
            roots.append(f)
    return roots, under


def _consequences(console: Console, items: list[Any]) -> None:
    if not items:
        return
    console.print(Text(f"  consequences of it ({len(items)}), handled with it:", style="dim"), soft_wrap=True)
    for c in items:
        wrapped(
            console,
            f"{severity_label(c).upper()} {_attr(c, 'code')} {_where(c)}: {_attr(c, 'message')}",
            "      ",
            "dim",
            first="    - ",
        )


def _one(console: Console, f: Any, fix_label: str = "fix: ") -> None:
    head = Text()
    label = severity_label(f)
    head.append(f"{label.upper():7} ", style=_SEVERITY_STYLE.get(label, ""))
    head.append(f"{_attr(f, 'code')} ", style="bold")
    head.append(_where(f))
    console.print(head, soft_wrap=True)  # never wrapped: the path stays one piece to copy
    wrapped(console, str(_attr(f, "message")), "  ")
    fix = _attr(f, "fix_command") or _attr(f, "fix")
    wrapped(console, str(fix), "       ", "cyan", first="  " + fix_label)


def render_findings(console: Console, findings: Iterable[Any], *, verbose: bool = False) -> None:
    """Findings for people (scan, retention, repair, census): every finding's severity, code, where,
    message and fix, grouped by code; a code found many times shows its count, the partitions it is in
    and the first examples (``verbose`` lists every one; JSON output always keeps every finding). A
    finding caused by another (``caused_by``, checks.consequences) is listed under its cause."""
    roots, under = split_consequences(findings)
    for g in group_findings(roots):
        if verbose or len(g.items) <= EXAMPLES + 1:
            for f in g.items:
                _one(console, f)
                _consequences(console, under.get(_ref_key(f), []))
            continue
        parts = g.partitions()
        dirs = {str(_attr(f, "log_dir") or "") for f in g.items} - {""}
        head = Text()
        head.append(f"{g.severity.upper():7} ", style=_SEVERITY_STYLE.get(g.severity, ""))
        head.append(f"{g.code}: ", style="bold")
        where = f" in {len(parts)} partition(s)" if parts else ""
        where += f" of {len(dirs)} log dir(s)" if len(dirs) > 1 else ""
        head.append(f"{len(g.items)} findings{where}")
        console.print(head, soft_wrap=True)
        if parts and parts.most_common(1)[0][1] > 1:
            top = ", ".join(f"{p} ({n})" for p, n in parts.most_common(5))
            more = f", and {len(parts) - 5} more" if len(parts) > 5 else ""
            wrapped(console, f"most in: {top}{more}", "    ", first="  ")
        for f in g.items[:EXAMPLES]:
            console.print(Text("  " + _where(f)), soft_wrap=True)  # never wrapped: paths to copy
        console.print(
            Text(
                f"  ... and {len(g.items) - EXAMPLES} more "
                "(--verbose lists every one, --json keeps them all)",
                style="dim",
            ),
            soft_wrap=True,
        )
        wrapped(console, str(_attr(g.items[0], "message")), "    ", first="  the first: ")
        fixes = {str(_attr(f, "fix_command") or _attr(f, "fix")) for f in g.items}
        fix = str(_attr(g.items[0], "fix_command") or _attr(g.items[0], "fix"))
        label = "  fix: " if len(fixes) == 1 else "  fix (the first's; each finding names its own): "
        wrapped(console, fix, "       ", "cyan", first=label)
        caused = sum(len(under.get(_ref_key(f), [])) for f in g.items)
        if caused:
            console.print(
                Text(
                    f"  + {caused} consequence(s) of these, handled with them (--verbose lists each under "
                    "its cause)",
                    style="dim",
                ),
                soft_wrap=True,
            )

"""Help that reads like kafka-dump-log's: metavars (``LOGDIR...``, ``FILE``, ``N``), never Python types.

Typer prints each parameter's Python type (``<bool>`` on ``--help`` itself, ``<list[Path]>``,
``<int range>``) and the usage line ``{log_dirs}...``. :func:`humanize` rewrites the parameters of a
command once, before its help or a usage error is printed: flags show no value; an option shows its
metavar (given by the command, else derived from its type and name); an argument shows its metavar
(``LOGDIR...``, ``[DIR]``) in the usage line and the table.

:func:`fold_long_words`: a word wider than its column (``min.cleanable.dirty.ratio``, an option's long
name at 80 columns) goes on over the next lines of its cell, never cut with "…" (rich's default for a
table column).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

__all__ = ["argument_metavar", "fold_long_words", "humanize", "option_metavar"]

_ARGUMENT_NAMES = {
    "log_dirs": "LOGDIR",
    "files": "FILE",
    "paths": "PATH",
    "partitions": "TOPIC-PARTITION",
    "partition": "TOPIC-PARTITION",
    "out": "DIR",
}


def _annotation(param: Any) -> Any:
    desc = getattr(param, "type_descriptor", None)
    return getattr(desc, "annotation", None)


def _is_path(param: Any) -> bool:
    desc = getattr(param, "type_descriptor", None)
    if desc is not None and getattr(desc, "is_path", False):
        return True
    ann = _annotation(param)
    return ann is Path or (isinstance(ann, type) and issubclass(ann, Path))


def _choices(param: Any) -> list[str] | None:
    desc = getattr(param, "type_descriptor", None)
    if desc is not None and getattr(desc, "is_choice", False):
        return [c.value if isinstance(c, enum.Enum) else str(c) for c in desc.choices or ()]
    choices = getattr(getattr(param, "type", None), "choices", None)
    return [str(c) for c in choices] if choices else None


def option_metavar(param: Any) -> str:
    """The value placeholder of an option with no metavar of its own."""
    choices = _choices(param)
    if choices:
        return "|".join(choices)
    longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    word = longs[0].lstrip("-").split("-")[-1].upper() if longs else "VALUE"
    if _is_path(param):
        return word if word in ("FILE", "DIR", "JOURNAL") else "PATH"
    ann = _annotation(param)
    if ann is int or getattr(param, "param_type_name", "") == "int":
        return "N"
    return word


def argument_metavar(param: Any) -> str:
    """The placeholder of a positional argument (no ``...``; that depends on nargs)."""
    return _ARGUMENT_NAMES.get(param.name, (param.name or "ARG").upper().rstrip("S"))


def humanize(params: list[Any]) -> list[Any]:
    """Rewrite ``params`` (click parameters of one command) for help and usage lines; idempotent."""
    for p in params:
        if getattr(p, "_logdoctor_humanized", False):
            continue
        p._logdoctor_humanized = True
        if p.param_type_name == "argument":
            _humanize_argument(p)
        elif p.param_type_name == "option":
            _humanize_option(p)
    return params


def _humanize_option(p: Any) -> None:
    if getattr(p, "is_flag", False) or getattr(p, "count", False):
        p.display_type_rich = lambda ctx: None
        p.display_type = lambda ctx: ""
        return
    if p.metavar is None:
        p.metavar = option_metavar(p)
    metavar = p.metavar
    many = getattr(p, "multiple", False)
    shown = f"{metavar} (repeatable)" if many else metavar
    p.display_type_rich = lambda ctx: shown
    p.display_type = lambda ctx: shown
    bounds = p._get_number_range_help_str() if hasattr(p, "_get_number_range_help_str") else None
    if bounds:  # typer's "x>=1" names the value x: name it by its metavar ("N>=1")
        named = bounds.replace("x", metavar)
        p._get_number_range_help_str = lambda: named


def _humanize_argument(p: Any) -> None:
    name = p.metavar if p.metavar is not None else argument_metavar(p)
    many = p.nargs != 1
    label = name + ("..." if many else "")
    p.metavar = label  # the help table shows the metavar as the argument's name
    usage = label if p.required else f"[{name}]" + ("..." if many else "")
    p.display_type_rich = lambda ctx: None
    p.display_type = lambda ctx: ""
    p._rich_display_name = lambda: label
    p._usage_display_name = lambda: usage


def fold_long_words() -> None:
    """The tables of typer's rich help (options, arguments, commands) fold a word wider than its column
    onto the next lines instead of cutting it with an ellipsis: a rich ``Column`` cuts by default
    (``overflow="ellipsis"``), so at 80 columns ``--help`` printed ``min.cleanable.dirty.ra…``. A column
    of option names never wraps (at 80 columns rich split ``--max-partition-byte s``: the help column
    beside it gives up the width instead). Only columns that wrap are changed (a ``no_wrap`` column keeps
    rich's cut), and the texts of an option's help cell (a ``Columns`` of its own, whose inner table would
    cut them); the words, and the layout of every help that fitted, are the same. Idempotent; typer's
    module is changed in this process only."""
    from typer import rich_utils

    if getattr(rich_utils.Table, "_logdoctor_folds", False):
        return

    class FoldingTable(rich_utils.Table):  # type: ignore[name-defined,misc]
        _logdoctor_folds = True

        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            super().add_row(*renderables, **kwargs)
            for column, cell in zip(self.columns, renderables, strict=False):
                if str(getattr(cell, "plain", "")).startswith("-"):  # an option's names: never split
                    column.no_wrap = True
            for column in self.columns:
                if not column.no_wrap:
                    column.overflow = "fold"
            for cell in renderables:  # an option's help: its texts laid out by a Columns of their own
                for text in getattr(cell, "renderables", ()):
                    if getattr(text, "overflow", "") is None:
                        text.overflow = "fold"

    rich_utils.Table = FoldingTable

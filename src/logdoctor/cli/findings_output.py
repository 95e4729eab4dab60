"""Findings for people (scan, retention, census), the --verbose option that lists every one and the --html
report of scan and census."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:  # rich is imported by what prints (a --json run prints no finding with it)
    from rich.console import Console

# --- findings -----------------------------------------------------------------------------------


def render_findings(console: Console, findings: Iterable[Any], *, verbose: bool = False) -> None:
    """Each finding of scan or retention, grouped by code (:func:`logdoctor.cli.render.render_findings`)."""
    from logdoctor.cli import render

    render.render_findings(console, findings, verbose=verbose)


VerboseOption = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        help="List every finding and action (by default what repeats many times is summarised).",
    ),
]
HtmlOption = Annotated[
    Path | None,
    typer.Option(
        "--html", metavar="FILE", help="Also write a self-contained HTML report (opens offline) to FILE."
    ),
]


__all__ = [
    "HtmlOption",
    "VerboseOption",
    "render_findings",
]

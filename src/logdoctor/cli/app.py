"""The `logdoctor` Typer application. Every command module imports :data:`app` from here and adds
its command to it; :mod:`logdoctor.cli.commands` is the one place that lists (imports) them and
orders the help; :mod:`logdoctor.cli.main` is the entry point."""

from __future__ import annotations

from typing import Annotated

import typer

from logdoctor.cli.common import LogdoctorGroup

app = typer.Typer(
    name="logdoctor",
    cls=LogdoctorGroup,
    help="Read, check, repair and extract Apache Kafka broker log directories, offline.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(given: bool) -> None:
    """``logdoctor --version``: the installed package's version (its metadata, as pip shows it)."""
    if given:
        from importlib.metadata import version

        typer.echo(f"logdoctor {version('kafka-logdoctor')}")
        raise typer.Exit(0)


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Read, check, repair and extract Apache Kafka broker log directories, offline."""

"""The `logdoctor` Typer application. Every command module imports :data:`app` from here and adds
its command to it; :mod:`logdoctor.cli.commands` is the one place that lists (imports) them and
orders the help; :mod:`logdoctor.cli.main` is the entry point."""

from __future__ import annotations

import typer

from logdoctor.cli.common import LogdoctorGroup

app = typer.Typer(
    name="logdoctor",
    cls=LogdoctorGroup,
    help="Read, check, repair and extract Apache Kafka broker log directories, offline.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Read, check, repair and extract Apache Kafka broker log directories, offline."""

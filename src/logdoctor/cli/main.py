"""The `logdoctor` command: one sub-command module per command, wired here."""

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


def _register() -> None:
    # Each command module adds itself to `app`; imported lazily so `--help` stays fast.
    from logdoctor.cli import commands  # noqa: F401


def main() -> None:
    _register()
    app()


if __name__ == "__main__":
    main()

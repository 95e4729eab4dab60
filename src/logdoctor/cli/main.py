"""The `logdoctor` command's entry point: the app (:mod:`logdoctor.cli.app`) with every command of
:mod:`logdoctor.cli.commands` registered."""

from __future__ import annotations

from logdoctor.cli.app import app

__all__ = ["app", "main"]


def _register() -> None:
    # Importing the list of commands registers each on `app` (and orders the help).
    from logdoctor.cli import commands  # noqa: F401


def main() -> None:
    _register()
    app()


if __name__ == "__main__":
    main()

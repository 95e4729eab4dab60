"""The `logdoctor` command's entry point: the app (:mod:`logdoctor.cli.app`) with the command it
runs loaded (:mod:`logdoctor.cli.registry`), or, for ``--help``, every command's summary."""

from __future__ import annotations

import sys

from logdoctor.cli.app import app

__all__ = ["app", "main"]


def _register() -> None:
    """Every command (tests, and anyone driving the app with a CliRunner)."""
    from logdoctor.cli import registry

    registry.load_all()


def main() -> None:
    try:
        from logdoctor.cli import registry

        entry = registry.find(sys.argv[1] if len(sys.argv) > 1 else None)
        if entry is not None:
            registry.load(entry)
        else:
            registry.add_summaries()
    except KeyboardInterrupt:  # Ctrl-C while the command's modules load (a command's own: cli.interrupts)
        sys.stderr.write("interrupted: logdoctor was stopped before it started\n")
        raise SystemExit(130) from None
    app()


if __name__ == "__main__":
    main()

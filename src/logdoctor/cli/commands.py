"""Every command registered on the app (tests and the Python API import this; the `logdoctor`
entry point loads only the command it runs: :mod:`logdoctor.cli.registry`)."""

from __future__ import annotations

from logdoctor.cli.app import app
from logdoctor.cli.registry import COMMANDS, HELP_ORDER, load_all, order_commands

__all__ = ["COMMANDS", "HELP_ORDER", "app", "order_commands"]

load_all()

"""Imports every command module so each registers itself on the Typer app (order = help order)."""

from __future__ import annotations

from logdoctor.cli import (  # noqa: F401
    census,
    demo,
    dump,
    export,
    move_partition,
    repair,
    retention,
    scan,
    sync_replica,
)

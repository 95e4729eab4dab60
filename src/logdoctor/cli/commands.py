"""Imports every command module so each registers itself on the Typer app, then puts the commands in
the order an operator needs them, grouped in ``logdoctor --help``: first look, then fix, then extract.

The imports are sorted (the import sorter wants that); the order of the help is :data:`HELP_ORDER`.
"""

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
from logdoctor.cli.app import app

# (help panel, commands in order): typer prints the panels in the order of their first command.
HELP_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Inspect", ("dump", "scan", "retention")),
    ("Fix (broker stopped)", ("repair", "move-partition", "sync-replica")),
    ("Extract with Spark", ("export", "census", "demo")),
)


def order_commands() -> None:
    """Sort the registered commands by :data:`HELP_ORDER` and give each its help panel.

    A command missing from HELP_ORDER keeps its place after the listed ones, in the default panel.
    Every command gets :class:`~logdoctor.cli.common.LogdoctorCommand` (usage errors exit 64; help reads
    like kafka-dump-log's) unless it names a class of its own.
    """
    from logdoctor.cli.common import LogdoctorCommand

    rank = {name: i for i, name in enumerate(n for _, names in HELP_ORDER for n in names)}
    panel = {name: title for title, names in HELP_ORDER for name in names}
    for info in app.registered_commands:
        if info.name in panel and not isinstance(info.rich_help_panel, str):  # unset: a typer Default
            info.rich_help_panel = panel[info.name]
        if not (isinstance(info.cls, type) and issubclass(info.cls, LogdoctorCommand)):
            info.cls = LogdoctorCommand  # every command: usage errors exit 64, help without types
    app.registered_commands.sort(key=lambda info: rank.get(info.name or "", len(rank)))


order_commands()

"""The one list of `logdoctor`'s commands: name, module, help panel and one-line summary, in the
order an operator needs them (first look, then fix, then extract).

``logdoctor COMMAND ...`` imports only that command's module (each module adds its command to the
app of :mod:`logdoctor.cli.app` when imported); ``logdoctor --help`` imports none of them and lists
each command by the summary kept here (``tests/cli/test_startup.py`` checks every summary is the
first line of its command's own help, and which modules ``--help`` imports). That keeps the start-up
of an operator's loop over thousands of files to the CLI framework's own import.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CommandEntry:
    name: str
    module: str  # under logdoctor.cli
    panel: str
    summary: str
    # under logdoctor.cli: a module whose run_fast(args) runs a call of files and on/off flags without
    # the CLI framework (logdoctor.cli.fast), or None
    fast: str | None = None


INSPECT, FIX, EXTRACT = "Inspect", "Fix (broker stopped)", "Extract with Spark"

COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry(
        "dump",
        "dump.command",
        INSPECT,
        "Dump log-dir files like Kafka's DumpLogSegments, and more.",
        fast="dump.fast",
    ),
    CommandEntry(
        "scan",
        "scan",
        INSPECT,
        "Check log dirs offline for every failure the broker would hit at startup or later.",
        fast="scan_fast",
    ),
    CommandEntry(
        "retention",
        "retention",
        INSPECT,
        "Simulate Kafka's retention (log start offset, size, time) like UnifiedLog.deleteOldSegments.",
    ),
    CommandEntry(
        "schemas",
        "schemas",
        INSPECT,
        "List the Schema Registry of the _schemas topic: ids, subjects, versions, deletes, GUIDs, configs.",
    ),
    CommandEntry(
        "repair",
        "repair",
        FIX,
        "Repair what `scan` finds: indexes, torn tails, checkpoints, orphans, permissions.",
        fast="repair_fast",
    ),
    CommandEntry(
        "move-partition",
        "move_partition",
        FIX,
        "Move partitions to another log dir of the same (stopped) broker: folders and checkpoint entries.",
    ),
    CommandEntry(
        "sync-replica",
        "sync_replica",
        FIX,
        "Bring a follower that fell out of the ISR back from the leader's copy (both brokers stopped).",
    ),
    CommandEntry(
        "restore",
        "restore",
        FIX,
        "Restore tiered partitions, or their lost remote log metadata, from the remote tier.",
    ),
    CommandEntry(
        "rebuild-quorum",
        "rebuild_quorum",
        FIX,
        "Rebuild lost KRaft controllers from the brokers' copies of the metadata log.",
    ),
    CommandEntry(
        "export",
        "export",
        EXTRACT,
        "Export the records of Kafka log dirs to Parquet (one row per record, Spark's Kafka columns first).",
    ),
    CommandEntry(
        "replay",
        "replay",
        EXTRACT,
        "Replay log dirs' records into a live cluster, exactly once and resumable (plan unless --apply).",
    ),
    CommandEntry(
        "inventory",
        "inventory",
        EXTRACT,
        "Collect one broker's inventory (offsets, disks, findings) for the fleet census; read only.",
    ),
    CommandEntry(
        "census",
        "census",
        EXTRACT,
        "Fleet census: replica offsets and lag across brokers, disk use per log dir, findings and fixes.",
    ),
    CommandEntry(
        "demo",
        "demo",
        EXTRACT,
        "Generate a 4-broker sample fleet with planted faults, inventory each, run the census, show fixes.",
    ),
)

# (help panel, commands in order): typer prints the panels in the order of their first command.
HELP_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (panel, tuple(c.name for c in COMMANDS if c.panel == panel)) for panel in (INSPECT, FIX, EXTRACT)
)

_BY_NAME = {c.name: c for c in COMMANDS}


def find(name: str | None) -> CommandEntry | None:
    return _BY_NAME.get(name or "")


def load(entry: CommandEntry) -> None:
    """Import the command's module: it adds its command to the app."""
    importlib.import_module(f"logdoctor.cli.{entry.module}")
    order_commands()


def load_fast(entry: CommandEntry) -> Any:
    """The command's module that runs a call of files and flags without the CLI framework (``fast``)."""
    assert entry.fast is not None
    return importlib.import_module(f"logdoctor.cli.{entry.fast}")


def load_all() -> None:
    for entry in COMMANDS:
        importlib.import_module(f"logdoctor.cli.{entry.module}")
    order_commands()


def add_summaries() -> None:
    """For ``--help`` (or a usage error) without importing any command: each command is listed with
    its summary and panel, as a command without options; running it is never reached."""
    from logdoctor.cli.app import app

    known = {info.name for info in app.registered_commands}
    for entry in COMMANDS:
        if entry.name not in known:
            app.command(entry.name, help=entry.summary, rich_help_panel=entry.panel)(_not_loaded)
    order_commands()


def _not_loaded() -> None:  # pragma: no cover - main() loads a command before running it
    raise RuntimeError("a command was run without its module")


def order_commands() -> None:
    """Sort the registered commands by :data:`COMMANDS` and give each its help panel.

    A command missing from the list keeps its place after the listed ones, in the default panel.
    Every command gets :class:`~logdoctor.cli.common.LogdoctorCommand` (usage errors exit 64; help reads
    like kafka-dump-log's) unless it names a class of its own.
    """
    from logdoctor.cli.app import app
    from logdoctor.cli.common import LogdoctorCommand

    rank = {c.name: i for i, c in enumerate(COMMANDS)}
    for info in app.registered_commands:
        entry = _BY_NAME.get(info.name or "")
        if entry is not None and not isinstance(info.rich_help_panel, str):  # unset: a typer Default
            info.rich_help_panel = entry.panel
        if not (isinstance(info.cls, type) and issubclass(info.cls, LogdoctorCommand)):
            info.cls = LogdoctorCommand  # every command: usage errors exit 64, help without types
    app.registered_commands.sort(key=lambda info: rank.get(info.name or "", len(rank)))

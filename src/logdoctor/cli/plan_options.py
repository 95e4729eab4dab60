"""The options of the commands that plan and apply (repair, move-partition, sync-replica)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from logdoctor.cli.run_status import one_mode  # typer-free: repair_run's too

# --- plans and runs (repair, move-partition, sync-replica) ----------------------------------------

ApplyOption = Annotated[bool, typer.Option("--apply", help="Make the changes (default: print the plan).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
AllowUnfinishedOption = Annotated[
    bool,
    typer.Option(
        "--allow-unfinished-journal",
        help="Apply although another run of the same log dir is unfinished (its journal neither applied to "
        "its end nor rolled back); that journal can then no longer be resumed or rolled back.",
    ),
]


def journal_options(what: str, backup_dir: str) -> tuple[Any, Any, Any]:
    """The ``--resume JOURNAL``, ``--rollback JOURNAL`` and ``--backup-dir DIR`` options of a command that
    runs ``what`` (``backup_dir``: the help of its --backup-dir, what goes there)."""
    resume = Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="JOURNAL",
            help=f"Finish an interrupted {what} (prints its steps; --apply runs them).",
        ),
    ]
    rollback = Annotated[
        Path | None,
        typer.Option(
            "--rollback", metavar="JOURNAL", help=f"Undo a {what} (prints its steps; --apply runs them)."
        ),
    ]
    backup = Annotated[Path | None, typer.Option("--backup-dir", metavar="DIR", help=backup_dir)]
    return resume, rollback, backup


__all__ = [
    "AllowUnfinishedOption",
    "ApplyOption",
    "JsonOption",
    "journal_options",
    "one_mode",
]

"""How an applied, resumed or rolled-back run ended, and what planning or applying raised, as one
stderr line and its exit code."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from logdoctor.cli.error_lines import fail, os_error, refused, tool_failure, usage_error
from logdoctor.cli.exit_codes import (
    EX_CANTCREAT,
    EX_DATAERR,
    EX_FAILED,
    EX_NOINPUT,
    EX_REFUSED,
    EX_TEMPFAIL,
    EX_USAGE,
)
from logdoctor.cli.lines import Lines

if TYPE_CHECKING:
    from pathlib import Path


def one_mode(planning: bool, resume_journal: Path | None, rollback_journal: Path | None) -> bool:
    """Exactly one of: plan (and maybe apply), ``--resume JOURNAL``, ``--rollback JOURNAL``."""
    return sum((planning, resume_journal is not None, rollback_journal is not None)) == 1


def print_run_status(out: Lines, command: str, result: Any, code: int) -> None:
    """The outcome of an applied, resumed or rolled-back run, and how to finish or undo a broken one."""
    out.line()
    out.line(
        f"{result.status}: {result.steps_run} of {result.steps_total} step(s) run",
        "green" if code == 0 else "bold red",
    )
    if result.error:
        out.line(f"error: {result.error}", "red")
        out.line(
            f"Finish it with `logdoctor {command} --resume {result.journal} --apply` or undo it with "
            f"`logdoctor {command} --rollback {result.journal} --apply` (each prints its steps without "
            "--apply)."
        )


def print_run_paths(out: Lines, result: Any) -> None:
    """Where a run left the originals (backup dir) and its journal."""
    if result.journal:
        out.line(f"backup dir: {result.backup_dir}")
        out.line(f"journal:    {result.journal}")


@contextmanager
def run_errors(
    command: str, usage: tuple[type[BaseException], ...], refusals: tuple[type[BaseException], ...]
) -> Iterator[None]:
    """Map what planning or applying raises to one stderr line and its exit code (:class:`ExitCode`).

    A path that is not a log dir -> 64 (66 when missing); ``usage`` -> 64; a broker holding the lock ->
    75; no space -> 73 (a disk that filled during the run and whose undo failed too: 2, the line names the
    run's files on disk); a log dir changed since planning -> 65; other ``refusals`` -> 78 (all four:
    nothing written); what the file system refuses (read-only, no space: 73; permission: 77; I/O error:
    74; :func:`os_error`), one line; any other exception -> 70. ``typer.Exit`` passes through (typer is
    not imported here: a command run without the framework never imports it).
    """
    from logdoctor.errors import BrokerRunningError
    from logdoctor.logdir.recognize import NotALogDirError
    from logdoctor.repair.apply import PlanChangedError
    from logdoctor.repair.backup import NoSpaceError, PartlyWrittenError
    from logdoctor.repair.journal import EmptyJournalError

    try:
        yield
    except NotALogDirError as e:
        fail(f"error: {e}", EX_NOINPUT if e.missing else EX_USAGE)
    except EmptyJournalError as e:
        # nothing to resume or roll back: the run changed nothing (it stopped before its commit point)
        fail(
            f"note: {e}; nothing to resume or roll back, the log dirs are as that run found them "
            f"(plan and apply the {command} again)",
            0,
        )
    except usage as e:
        usage_error(str(e))
    except BrokerRunningError as e:
        refused(str(e), EX_TEMPFAIL)
    except PartlyWrittenError as e:  # the disk filled and the undo failed too: files of the run stay
        fail(f"failed (files of this run are in the log dirs): {e}", EX_FAILED)
    except NoSpaceError as e:
        refused(str(e), EX_CANTCREAT)
    except PlanChangedError as e:
        refused(str(e), EX_DATAERR)
    except refusals as e:
        refused(str(e), EX_REFUSED)
    except OSError as e:  # a read-only file system, no space, permission: before anything was written
        said = os_error(e)
        if said is None:
            tool_failure(command, e)
        refused(said[0], said[1])
    except Exception as e:  # a bug or an environment failure
        typer = sys.modules.get("typer")  # imported by the typer command, or by an error line on its way
        if typer is not None and isinstance(e, typer.Exit):
            raise
        tool_failure(command, e)


__all__ = [
    "one_mode",
    "print_run_paths",
    "print_run_status",
    "run_errors",
]

"""The checks of a command's inputs and outputs before anything is read or written."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from logdoctor.cli.error_lines import fail, usage_error
from logdoctor.cli.exit_codes import EX_CANTCREAT, EX_IOERR, EX_NOINPUT, EX_NOPERM

if TYPE_CHECKING:
    from logdoctor.checks.topic_config import ConfigInputs

P = TypeVar("P", str, Path)

# --- inputs and outputs ---------------------------------------------------------------------------

#: the refusal of an empty folder given as a log dir to a command that judges one (``require_log_dirs``)
EMPTY_DIR_REFUSAL = (
    "{path}: no log dir here: an empty folder (an unmounted mount point, or a log.dirs entry the broker "
    "has not started with yet), nothing to check; give the log dir itself (a broker writes "
    "meta.properties and its checkpoint files into each log dir at its first start)"
)


def require_log_dirs(paths: Iterable[str | os.PathLike[str]], *, refuse_empty: bool = False) -> None:
    """Refuse, before anything is read, a LOGDIR argument that is not a log dir (or an empty folder).

    What each path is comes from :func:`logdoctor.logdir.recognize.recognize`: a missing path exits 66;
    a file, a partition folder, a folder holding log dirs or any other folder exits 64 with what it is
    and what to give instead; a log dir this user may not list exits 77 (nothing in it can be checked;
    what the broker's own user may read is what the scan's PERMISSION_DENIED findings are about).
    Nothing is scanned, so no advice is printed for what is not a log dir.

    ``refuse_empty``: an empty folder exits 64 too, "no log dir here" as ``export`` says of it (a command
    that judges a log dir's health: an unmounted mount point is empty, and must not pass as a clean log
    dir). Commands that write into a log dir (a move's or a restore's destination) accept one.
    """
    from logdoctor.logdir.recognize import PathKind, recognize

    for path in paths:
        r = recognize(path)
        if r.kind is PathKind.MISSING:
            fail(f"error: {r.refusal()}", EX_NOINPUT)
        if not r.is_log_dir:
            usage_error(r.refusal())
        if refuse_empty and r.kind is PathKind.EMPTY_DIR:
            usage_error(EMPTY_DIR_REFUSAL.format(path=os.fspath(path)))
        if not os.access(path, os.R_OK | os.X_OK):
            fail(
                f"error: {os.fspath(path)}: permission denied: this user cannot list the log dir "
                "(run logdoctor as the broker's user or as root)",
                EX_NOPERM,
            )


def leave_out_own(paths: Iterable[P]) -> list[P]:
    """``paths`` without logdoctor's own folders (a backup dir, an export's output, recognised by their
    marker files: :func:`logdoctor.logdir.discovery.leave_out_own`), a ``note:`` line on stderr for each
    one left out; a usage error (64) when nothing else is left."""
    from logdoctor.logdir.discovery import leave_out_own as own

    items = list(paths)
    kept, notes = own([os.fspath(p) for p in items])
    if not notes:
        return items
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    keep = set(kept)
    left = [p for p in items if os.fspath(p) in keep]
    if not left:
        usage_error("no log dir given besides logdoctor's own folders")
    return left


def require_inputs_exist(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Exit 66 (EX_NOINPUT) at the first input path that does not exist (local paths only)."""
    for path in paths:
        p = os.fspath(path)
        if "://" not in p and not os.path.lexists(p):
            fail(f"error: {p}: no such file or directory", EX_NOINPUT)


def require_input_file(path: str | os.PathLike[str], what: str) -> None:
    """A file the command reads (a journal, ...): exit 66 when it does not exist or is a directory."""
    if not os.path.exists(path):
        fail(f"error: {what} {os.fspath(path)}: no such file", EX_NOINPUT)
    if os.path.isdir(path):
        fail(f"error: {what} {os.fspath(path)} is a directory, not a file", EX_NOINPUT)


def refuse_overlapping_outputs(
    outputs: Iterable[str | os.PathLike[str] | None], inputs: Iterable[str | os.PathLike[str]]
) -> None:
    """Exit 73 (nothing written or deleted) when an output is at, inside or above an input.

    Uses :func:`logdoctor.logdir.outputs.check_output_location`, the rule every writing command shares.
    """
    outs = [out for out in outputs if out is not None]
    if not outs:  # nothing written: the rule's module is not even imported
        return
    from logdoctor.errors import OutputOverlapsInputError
    from logdoctor.logdir.outputs import check_output_location

    ins = list(inputs)
    try:
        for out in outs:
            check_output_location(out, ins)
    except OutputOverlapsInputError as e:
        fail(f"refused: {e}", EX_CANTCREAT)


def read_config_inputs(
    topic_config: list[str] | None,
    server_properties: Path | None,
    retention_ms: int | None = None,
    retention_bytes: int | None = None,
) -> ConfigInputs:
    """ConfigInputs from the options, or one error line naming the bad option or file: a bad value 64
    (usage), a missing --server-properties file 66 (no input), an unreadable one 77, an I/O error 74."""
    from logdoctor.checks.topic_config import config_inputs

    try:
        return config_inputs(
            topic_config=topic_config or [],
            server_properties=server_properties,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
        )
    except OSError as e:  # the file named: missing or a folder 66, unreadable 77, else an I/O error 74
        code = (
            EX_NOINPUT
            if isinstance(e, FileNotFoundError | IsADirectoryError | NotADirectoryError)
            else EX_NOPERM
            if isinstance(e, PermissionError)
            else EX_IOERR
        )
        fail(f"error: --server-properties {server_properties}: {e.strerror or e}", code)
    except ValueError as e:
        where = (
            f"{server_properties}: "
            if server_properties is not None and "--topic-config" not in str(e)
            else ""
        )
        usage_error(f"{where}{e}")


__all__ = [
    "leave_out_own",
    "read_config_inputs",
    "refuse_overlapping_outputs",
    "require_input_file",
    "require_inputs_exist",
    "require_log_dirs",
]

"""One line on stderr and an exit code: usage errors, refusals, tool failures, what the file system
refused."""

from __future__ import annotations

import errno
import os
from typing import NoReturn

from logdoctor.cli.exit_codes import EX_CANTCREAT, EX_IOERR, EX_NOPERM, EX_SOFTWARE, EX_USAGE

# --- error lines (stderr) -----------------------------------------------------------------------


def fail(line: str, code: int) -> NoReturn:
    """Print one line on stderr (control characters of the names in it escaped) and exit with ``code``."""
    import typer  # on this error path only: a command run without the framework never imports it

    from logdoctor.cli.escape import printable

    typer.echo(printable(line, keep_newlines=True), err=True)
    raise typer.Exit(code)


def usage_error(message: str) -> NoReturn:
    """``error: MESSAGE`` and exit 64."""
    fail(f"error: {message}", EX_USAGE)


def refused(message: str, code: int) -> NoReturn:
    """A refusal before anything was written (lock held, no space, unexpected state)."""
    fail(f"refused (nothing written): {message}", code)


def tool_failure(command: str, e: BaseException) -> NoReturn:
    """A bug or an environment failure, never a finding: one line and exit 70."""
    fail(f"logdoctor {command} failed: {type(e).__name__}: {e}", EX_SOFTWARE)


_CANNOT_WRITE = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})
_DENIED = frozenset({errno.EACCES, errno.EPERM})


def os_error(e: OSError) -> tuple[str, int] | None:
    """What the file system refused, as ``(PATH: reason, exit code)``: a read-only file system or no
    space 73, permission denied 77, an I/O error 74; None for any other OSError (a tool failure, 70)."""
    if e.errno in _CANNOT_WRITE:
        code = EX_CANTCREAT
    elif e.errno in _DENIED:
        code = EX_NOPERM
    elif e.errno == errno.EIO:
        code = EX_IOERR
    else:
        return None
    reason = e.strerror or os.strerror(e.errno or 0)
    where = os.fsdecode(e.filename) if e.filename is not None else None
    if where is None:  # pyarrow: "Failed to open local file '/x'. Detail: [errno 30] Read-only file system"
        import re

        m = re.search(r"'([^']+)'", str(e))
        where = m.group(1) if m else None
        reason = os.strerror(e.errno or 0)
    return (f"{where}: {reason}" if where else reason), code


__all__ = [
    "fail",
    "os_error",
    "refused",
    "tool_failure",
    "usage_error",
]

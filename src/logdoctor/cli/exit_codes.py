"""Every exit code of every command: fsck's 0-2 for the data, BSD sysexits.h for the rest."""

from __future__ import annotations

import enum

# --- exit codes ---------------------------------------------------------------------------------


class ExitCode(enum.IntEnum):
    """Every exit code of every command (docs/exit-codes.md has the same table; a test checks both).

    0-2 follow fsck (what the data is like); 64 and up follow BSD sysexits.h (what went wrong with the
    call or the tool), so a script can tell bad data (2) from a bad call (64) or a tool failure (70).
    """

    OK = 0  # clean (info only); a plan printed; a run completed
    WARNINGS = 1  # warnings only (dump, scan, retention, census); export, replay: corrupt ranges skipped
    ERRORS = 2  # errors in the data; repair and procedures: a step failed or findings remain
    USAGE = 64  # EX_USAGE: a bad call (unknown option, a path that is not a log dir, no command)
    CHANGED = 65  # EX_DATAERR: a file not as the plan or journal records it; a journal finished or superseded
    NO_INPUT = 66  # EX_NOINPUT: an input (log dir, file, journal) does not exist, or is a directory
    UNAVAILABLE = 69  # EX_UNAVAILABLE: Spark cannot start (no Java 17+)
    SOFTWARE = 70  # EX_SOFTWARE: a bug or an environment failure of the tool
    CANT_CREATE = 73  # EX_CANTCREAT: no space, read-only, an output that exists or overlaps an input
    IO_ERROR = 74  # EX_IOERR: reading a file failed
    LOCKED = 75  # EX_TEMPFAIL: a broker (or another logdoctor run) holds a log dir's lock: try again later
    NO_PERMISSION = 77  # EX_NOPERM: a file cannot be read
    REFUSED = 78  # EX_CONFIG: refused, the log dirs' state does not allow it (the message says why)
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it: Ctrl-C (one line says what it left)

    @property
    def meaning(self) -> str:
        return _MEANING[self]


_MEANING = {
    ExitCode.OK: "clean (info only); a plan printed; a run completed",
    ExitCode.WARNINGS: "warnings only; `export` and `replay`: done (or planned), but ranges of the input "
    "left out (a torn tail, a CRC-bad batch: each named)",
    ExitCode.ERRORS: "errors found in the data; repair/procedures: a step failed or findings remain",
    ExitCode.USAGE: (
        "bad call: unknown or missing option, a path that is not a log dir (for `scan` and `export`, an "
        'empty folder too: "no log dir here", as an unmounted mount point is), no command; replay: an '
        "option's value that is one of its options (`--groups --apply`), a client setting the client library "
        "refuses"
    ),
    ExitCode.CHANGED: "refused (nothing written): a file is not as the plan or the journal recorded it "
    "(changed since planning or since the run), the journal was rolled back already, or another run's "
    "journal of the log dir is unfinished or later (the message names the file or journal)",
    ExitCode.NO_INPUT: "an input (log dir, file, journal) does not exist, or is a folder where a file is "
    "needed",
    ExitCode.UNAVAILABLE: "Spark cannot start (no Java 17+, or its launcher's JVM exits before it answers); "
    "replay: the target cluster does not answer one of its clients (nothing listens, or security settings "
    "that do not fit the listener), before anything is written, or stops answering for `--timeout` while it "
    "runs (each request retried until then; what was committed stays)",
    ExitCode.SOFTWARE: "a bug or an environment failure of logdoctor",
    ExitCode.CANT_CREATE: "refused (nothing written): not enough space, a read-only file system, an output "
    "that exists (not this command's), or an output at, inside or above an input",
    ExitCode.IO_ERROR: "reading a file failed (I/O error)",
    ExitCode.LOCKED: "refused (nothing written): a broker holds a log dir's .lock, or another logdoctor run "
    "writes to the log dir",
    ExitCode.NO_PERMISSION: "a file cannot be read or written (permission denied)",
    ExitCode.REFUSED: "refused (nothing written): the log dirs' state does not allow it, or a replay's plan "
    "has conflicts (the message says why); replay `--apply` with `--groups`: a group not committed after its "
    "records were replayed, because it has active members on the target or is at an offset there that no "
    "replay committed (`GROUP_COMMITTED_ON_TARGET`; `--groups-overwrite` moves it where the plan showed it)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C): one line says what was stopped and, for a run that writes, "
    "its journal and the commands that finish or undo it",
}

# the sysexits-style names the commands use (aliases of ExitCode members)
EX_OK = ExitCode.OK
EX_WARNINGS = ExitCode.WARNINGS
EX_DATA = ExitCode.ERRORS
EX_FAILED = ExitCode.ERRORS
EX_USAGE = ExitCode.USAGE
EX_DATAERR = ExitCode.CHANGED
EX_NOINPUT = ExitCode.NO_INPUT
EX_UNAVAILABLE = ExitCode.UNAVAILABLE
EX_SOFTWARE = ExitCode.SOFTWARE
EX_CANTCREAT = ExitCode.CANT_CREATE
EX_IOERR = ExitCode.IO_ERROR
EX_TEMPFAIL = ExitCode.LOCKED
EX_NOPERM = ExitCode.NO_PERMISSION
EX_REFUSED = ExitCode.REFUSED


__all__ = [
    "EX_CANTCREAT",
    "EX_DATA",
    "EX_DATAERR",
    "EX_FAILED",
    "EX_IOERR",
    "EX_NOINPUT",
    "EX_NOPERM",
    "EX_OK",
    "EX_REFUSED",
    "EX_SOFTWARE",
    "EX_TEMPFAIL",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "EX_WARNINGS",
    "ExitCode",
]

"""What one file's dump carries along: options, findings, the failure that stopped it; sibling files."""

from __future__ import annotations

import errno
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logdoctor.cli.dump.kinds import FileInfo
from logdoctor.cli.dump.options import DumpOptions
from logdoctor.cli.exit_codes import EX_DATA, EX_IOERR, EX_NOINPUT, EX_NOPERM, EX_OK, EX_WARNINGS
from logdoctor.errors import FormatError
from logdoctor.logdir.files import read_file

if TYPE_CHECKING:  # a dump of a small file makes no finding: the checks' catalog is not loaded for it
    from logdoctor.checks.index_findings import Finding


class DumpFailure(Exception):
    """A file that cannot be dumped (further): one line for stderr and an exit code."""

    def __init__(self, line: str, code: int, position: int | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.code = code
        self.position = position


def os_failure(path: Path, e: OSError) -> DumpFailure:
    if isinstance(e, PermissionError) or e.errno in (errno.EACCES, errno.EPERM):
        return DumpFailure(f"{path}: permission denied", EX_NOPERM)
    if isinstance(e, IsADirectoryError) or e.errno == errno.EISDIR:
        return DumpFailure(f"{path}: is a directory, not a file (give the files to dump)", EX_NOINPUT)
    if isinstance(e, FileNotFoundError) or e.errno == errno.ENOENT:
        return DumpFailure(f"{path}: no such file", EX_NOINPUT)
    return DumpFailure(f"{path}: {e.strerror or e}", EX_IOERR)


def format_failure(path: Path, e: FormatError) -> DumpFailure:
    if e.source is None:
        e.with_source(str(path))
    return DumpFailure(str(e), EX_DATA, e.position)


# Each dumper yields plain dicts (the JSON objects, each with a "type"); the sinks show them.
Event = dict[str, Any]


#: the partition (remote tier and local log) of each remote segment named through its partition folder, by
#: the segment's location (cli.dump.remote fills it): where dump finds the markers that end its transactions
PARTITIONS: dict[str, Any] = {}


@dataclass(slots=True)
class FileContext:
    """One file being dumped: its kind, the options, and what the dump found on the way."""

    path: Path
    info: FileInfo
    opts: DumpOptions
    findings: list[Finding] = field(default_factory=list)
    failure: DumpFailure | None = None
    warnings: list[str] = field(default_factory=list)
    # what the dump says of a file that is as the broker left it, not a finding (the summary's ``note``)
    notes: list[str] = field(default_factory=list)
    # a segment of the remote tier (--remote-storage): its ref, ``path`` then only its object's name
    remote: Any = None
    # the sink takes a batch's record lines as one ``record_lines`` event (text: cli.dump.text), written by
    # formats.record_lines where it can; otherwise one ``record`` event a record
    record_lines: bool = False

    @property
    def file(self) -> str:
        return self.remote.path if self.remote is not None else str(self.path)


def sibling(path: Path, suffix: str) -> Path:
    """The file of the same segment with another suffix (``00..42.log`` -> ``00..42.index``)."""
    stem = path.name.split(".", 1)[0]
    return path.with_name(stem + suffix)


def read_optional(path: Path) -> bytes | None:
    """The whole file, or None when it cannot be read (a missing index is not an error here)."""
    try:
        return read_file(path)
    except OSError:
        return None


def file_event(ctx: FileContext, size: int, **fields: Any) -> Event:
    """The ``file`` event that opens a file's dump (``fields`` follow in their order)."""
    return {"type": "file", "file": ctx.file, "kind": ctx.info.kind.value, "size": size, **fields}


def summary_event(ctx: FileContext, **fields: Any) -> Event:
    """The ``summary`` event that closes a file's dump (of a ``-stray`` folder's file: its note says so)."""
    stray = stray_note(ctx.path) if ctx.remote is None else None
    if stray is not None:
        fields["note"] = f"{stray} {fields['note']}" if fields.get("note") else stray
    return {"type": "summary", "file": ctx.file, "kind": ctx.info.kind.value, **fields}


def stray_note(path: Path) -> str | None:
    """What a file of a ``<topic>-<p>.<uuid>-stray`` folder is, or None for any other file."""
    from logdoctor.logdir.names import DirKind, parse_partition_dir

    folder = parse_partition_dir(path.parent.name)
    if folder is None or folder.kind is not DirKind.STRAY:
        return None
    return (
        f"{path.parent.name} is a -stray folder: a replica of {folder.topic}-{folder.partition} that KRaft "
        "moved aside (no longer assigned to this broker, or of a topic id the metadata does not have; "
        "K:storage/.../log/LogManager.java isStrayReplica); the broker never serves it: not the live copy."
    )


def finish_file(sink: Any, ctx: FileContext, where: Any) -> int:
    """End one dumped file on ``sink`` (its warnings, its end, its failure named by ``where``) and give its
    exit code: the worst of its findings' (warnings 1, errors 2) and its failure's."""
    for w in ctx.warnings:
        sink.warning(w)
    sink.end_file(ctx)
    code = EX_OK
    if ctx.findings:
        from logdoctor.checks.index_findings import Severity

        if any(f.severity is Severity.WARNING for f in ctx.findings):
            code = EX_WARNINGS
        if any(f.severity is Severity.ERROR for f in ctx.findings):
            code = EX_DATA
    if ctx.failure is not None:
        sink.error(where, ctx.failure)
        code = max(code, ctx.failure.code)
    return code

"""``logdoctor dump FILE...``: every file of a log dir, for people (aligned text) and scripts (JSON Lines).

The anchor is Kafka's DumpLogSegments (K:core/src/main/scala/kafka/tools/DumpLogSegments.scala):
the kind of a file is decided by its name; ``.log`` and KRaft ``.checkpoint`` files are walked batch
by batch (``--deep`` for every record, ``--print-data`` for keys, values and headers), indexes are
listed and, with ``--verify-index``, checked against the log (``--verify-index-only``: the same
without listing the entries, as DumpLogSegments' option of that name), producer snapshots and
transaction indexes listed. Beyond it: every other file of a log dir (checkpoints, leader-epoch-checkpoint,
partition.metadata, meta.properties, quorum-state, .kafka_cleanshutdown, .lock), seeking with the
indexes (``--offsets``, ``--timestamps``), decoders picked by folder name, typed control records,
JSON Lines, and one-line errors naming the file and position with the other files still dumped.

The package: ``command`` (the typer command), ``fast`` (a call of files and flags only, without the
CLI framework), ``kinds`` (file kind by name), ``options`` (--offsets, --timestamps, --decoder),
``context`` (one file's state, failures), ``decoders``, ``log`` (segments and KRaft snapshots),
``indexes``, ``small_files`` (snapshots, checkpoints, properties, markers), ``sink`` (JSON Lines)
and ``text`` (aligned text); this module drives them (:func:`run`) and imports no CLI framework.

Exit codes (fsck-like): 0 clean, 1 warnings, 2 data errors (bad bytes, index mismatches),
64 usage, 66 missing input or a directory, 74 I/O error, 77 permission denied.
"""

from __future__ import annotations

import errno
import importlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from logdoctor.cli.dump.context import (
    DumpFailure,
    Event,
    FileContext,
    finish_file,
    format_failure,
    os_failure,
)
from logdoctor.cli.dump.decoders import features_read_once
from logdoctor.cli.dump.kinds import FileKind, classify
from logdoctor.cli.dump.options import DumpOptions
from logdoctor.cli.dump.sink import JsonSink, Sink
from logdoctor.cli.dump.text import TextSink
from logdoctor.cli.exit_codes import EX_NOINPUT, EX_OK, EX_SOFTWARE, EX_USAGE
from logdoctor.errors import FormatError, TruncatedError
from logdoctor.logdir.files import file_kind
from logdoctor.logdir.names import parse_partition_dir

if TYPE_CHECKING:
    from logdoctor.logdir.remote_store import RemoteOptions

__all__ = [
    "DUMPERS",
    "DumpFailure",
    "DumpOptions",
    "FileKind",
    "JsonSink",
    "Sink",
    "TextSink",
    "dump_one",
    "dumper",
    "run",
]

# Each kind's dumper as (module of this package, function): imported when a file of that kind is
# dumped, so `dump` of a checkpoint file never imports the record and index code (numpy).
DUMPERS: dict[FileKind, tuple[str, str]] = {
    FileKind.LOG: ("log", "dump_log"),
    FileKind.KRAFT_SNAPSHOT: ("log", "dump_log"),
    FileKind.OFFSET_INDEX: ("indexes", "dump_offset_index"),
    FileKind.TIME_INDEX: ("indexes", "dump_time_index"),
    FileKind.TXN_INDEX: ("indexes", "dump_txn_index"),
    FileKind.PRODUCER_SNAPSHOT: ("small_files", "dump_producer_snapshot"),
    FileKind.OFFSET_CHECKPOINT: ("small_files", "dump_offset_checkpoint"),
    FileKind.LEADER_EPOCH_CHECKPOINT: ("small_files", "dump_leader_epoch_checkpoint"),
    FileKind.PARTITION_METADATA: ("small_files", "dump_partition_metadata"),
    FileKind.META_PROPERTIES: ("small_files", "dump_meta_properties"),
    FileKind.QUORUM_STATE: ("small_files", "dump_quorum_state"),
    FileKind.CLEAN_SHUTDOWN: ("small_files", "dump_clean_shutdown"),
    FileKind.LOCK: ("small_files", "dump_lock"),
}


def dumper(kind: FileKind) -> Callable[[FileContext], Iterator[Event]]:
    """The function that dumps files of ``kind`` (its module imported on first use)."""
    module, function = DUMPERS[kind]
    fn: Callable[[FileContext], Iterator[Event]] = getattr(
        importlib.import_module(f"{__name__}.{module}"), function
    )
    return fn


def _not_followed(path: Path) -> DumpFailure | None:
    """A file that is never opened: a symlink, a FIFO, socket or device, or a file in a partition folder
    reached through a symlink (never followed: dump the file by its real path)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None  # missing or unreachable: reported as before
    if stat.S_ISLNK(mode):
        return DumpFailure(
            f"{path}: a symlink to {os.readlink(path)}, not followed (dump the file by its real path, "
            f"{os.path.realpath(path)})",
            EX_NOINPUT,
        )
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return DumpFailure(
            f"{path}: a {file_kind(mode)}, not a regular file: not opened (reading a FIFO blocks)", EX_NOINPUT
        )
    folder = path.absolute().parent
    if os.path.islink(folder) and parse_partition_dir(folder.name) is not None:
        return DumpFailure(
            f"{path}: its partition folder {folder} is a symlink to {os.readlink(folder)}, not followed "
            f"(dump the file by its real path, {os.path.realpath(path)})",
            EX_NOINPUT,
        )
    return None


def dump_one(path: Path, opts: DumpOptions, sink: Sink) -> int:
    """Dump one file into ``sink``; return its exit code (errors go to the sink as one line)."""
    refused = _not_followed(path)
    if refused is not None:
        sink.error(path, refused)
        return refused.code
    info = classify(path.name)
    if info is None:
        if path.is_dir():
            failure = os_failure(path, IsADirectoryError(errno.EISDIR, "is a directory"))
        elif not os.path.lexists(path):  # nothing there: missing (66), whatever its name
            failure = os_failure(path, FileNotFoundError(errno.ENOENT, "no such file"))
        else:
            failure = DumpFailure(
                f"{path}: unknown file kind (decided by the name, as DumpLogSegments does): "
                "not a segment file, "
                "snapshot, index, checkpoint or other log-dir file",
                EX_USAGE,
            )
        sink.error(path, failure)
        return failure.code
    ctx = FileContext(path, info, opts, record_lines=sink.takes_record_lines)
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if path.exists() and not _readable(path):
            raise PermissionError(errno.EACCES, "permission denied")
        if info.kind in _MUST_NOT_BE_EMPTY and path.stat().st_size == 0:
            raise TruncatedError(
                f"a {info.kind.value} file", source=str(path), position=0, found="an empty file"
            )
        for ev in dumper(info.kind)(ctx):
            sink.event(ev)
    except FormatError as e:
        ctx.failure = format_failure(path, e)
    except OSError as e:
        ctx.failure = os_failure(path, e)
    except Exception as e:  # a bug must not stop the other files: one line, exit 70 (EX_SOFTWARE)
        ctx.failure = DumpFailure(f"{path}: internal error: {type(e).__name__}: {e}", EX_SOFTWARE)
    return finish_file(sink, ctx, path)


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK)


# Files the broker cannot read when empty (an empty .log, index or offset checkpoint is normal).
_MUST_NOT_BE_EMPTY = frozenset(
    {FileKind.META_PROPERTIES, FileKind.PARTITION_METADATA, FileKind.QUORUM_STATE, FileKind.PRODUCER_SNAPSHOT}
)


def run(files: list[str], opts: DumpOptions, *, json_out: bool, remote: RemoteOptions | None = None) -> int:
    """Dump ``files`` (paths; with ``remote``, remote segment objects or partition folders) to stdout as
    aligned text or JSON Lines; return the exit code (the worst file's). A closed pipe (``| head``) ends
    the run quietly with 0, as ``cat`` does."""
    sink: Sink = JsonSink() if json_out else TextSink(opts)
    code = EX_OK
    try:
        with features_read_once():  # a log dir's metadata log replayed once for all its files
            if remote is not None:
                from logdoctor.cli.dump.remote import dump_remote, remote_segments

                for item in remote_segments(list(files), remote):
                    if isinstance(item, DumpFailure):
                        sink.error(Path(str(item)), item)
                        code = max(code, item.code)
                    else:
                        code = max(code, dump_remote(item, opts, sink))
            for path in files if remote is None else ():
                code = max(code, dump_one(Path(path), opts, sink))
    except BrokenPipeError:  # `| head`: stop quietly
        sys.stderr.close()
        return EX_OK
    finally:
        if "logdoctor.cli.dump.typed" in sys.modules:  # the registries read for typed values
            sys.modules["logdoctor.cli.dump.typed"].forget_registries()
    sink.close()
    return code

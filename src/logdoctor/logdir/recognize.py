"""What a path given as LOGDIR is: a log dir, a partition folder, a folder holding log dirs, or none.

Every command that takes log dirs asks :func:`recognize` (through :func:`require_log_dir`) before it
reads anything, because the advice that follows depends on it: scanned as a log dir, a partition
folder's ``.log``, index and snapshot files are "unknown files" whose fix is to remove them, and
``/etc`` or a source tree gets advice to move its files away. A path that is not a log dir is refused
with a message that says what it is and what to give instead; it is never given advice.

The rules are the broker's (K:core/src/main/scala/kafka/log/LogManager.scala loadLogs and
LocalLog.parseTopicPartitionName): a log dir is recognised by what the broker writes at its root
(``meta.properties``, the offset checkpoint files, ``bootstrap.checkpoint`` or their ``.tmp``
leftovers; ``.lock`` and ``.kafka_cleanshutdown`` only when nothing else is there, other tools use
``.lock`` too) or by a folder named ``<topic>-<partition>``
that holds files a partition has (segment files, snapshots, ``leader-epoch-checkpoint``,
``partition.metadata``, ``quorum-state``). A partition folder is a folder holding such files and no
log-dir file. An empty folder is accepted as a log dir the broker has not used yet (a new entry of
``log.dirs`` stays empty until the broker first starts; ``kafka-storage format`` writes only
``meta.properties``). A folder's own name proves nothing: log dirs are often called ``kafka-logs-0``,
which parses as a partition folder name.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from logdoctor.errors import LogDirError
from logdoctor.logdir.names import (
    LOGDOCTOR_MARKER_FILES,
    REMOTE_LOG_INDEX_CACHE_DIR,
    PartitionDirName,
    PartitionFileKind,
    RootEntryKind,
    classify_partition_file,
    classify_root_entry,
    logdoctor_folder,
    logdoctor_output,
    parse_partition_dir,
)

__all__ = [
    "NotALogDirError",
    "PathKind",
    "Recognition",
    "first_partition_file",
    "log_dir_evidence",
    "own_output",
    "recognize",
    "require_log_dir",
    "within_logdoctor_folder",
]

_SEARCH_DEPTH = 2  # how far below a folder to look for log dirs (broker folder / fleet folder)
_SEARCH_LIMIT = 200  # folders examined at most while looking for log dirs below a path
_PARTITION_PROBES = 16  # partition-named subfolders opened at most to find a partition file
_EXAMPLES = 4  # entries named in a refusal


class PathKind(enum.StrEnum):
    LOG_DIR = "log-dir"
    EMPTY_DIR = "empty-dir"  # accepted as a log dir the broker has not used yet
    PARTITION_DIR = "partition-dir"  # holds a partition's files (named <topic>-<p>, or not)
    HOLDS_LOG_DIRS = "holds-log-dirs"  # a broker or fleet folder: log dirs lie below it
    OTHER_DIR = "other-dir"
    FILE = "file"
    MISSING = "missing"


# files only the broker writes at a log dir's root
_ROOT_MARKERS = frozenset(
    {
        RootEntryKind.META_PROPERTIES,
        RootEntryKind.OFFSET_CHECKPOINT,
        RootEntryKind.BOOTSTRAP_CHECKPOINT,
        RootEntryKind.TMP,
    }
)
# names other tools use too (pytest keeps a .lock in its temp folders): evidence only when the folder
# holds nothing else
_WEAK_MARKERS = frozenset(
    {RootEntryKind.LOCK, RootEntryKind.CLEAN_SHUTDOWN, RootEntryKind.REMOTE_LOG_INDEX_CACHE}
)


@dataclass(frozen=True, slots=True)
class Recognition:
    """What ``path`` is, why we think so, and where its log dir(s) are when it is not one."""

    path: str
    kind: PathKind
    evidence: str
    log_dir: str | None = None  # PARTITION_DIR: the folder holding it
    partition: PartitionDirName | None = None  # PARTITION_DIR named <topic>-<p>
    log_dirs: tuple[str, ...] = ()  # HOLDS_LOG_DIRS: the log dirs found below

    @property
    def is_log_dir(self) -> bool:
        """A log dir, or an empty folder (a log dir the broker has not used yet)."""
        return self.kind in (PathKind.LOG_DIR, PathKind.EMPTY_DIR)

    def refusal(self) -> str:
        """Why this path is not accepted as a log dir, and what to give instead (one paragraph)."""
        p = self.path
        if self.kind is PathKind.MISSING:
            return f"{p}: no such file or directory"
        if self.kind is PathKind.FILE:
            return f"{p} is a file, not a log dir (to read one file of a log dir: logdoctor dump {p})"
        if self.kind is PathKind.PARTITION_DIR:
            if self.partition is None:
                return (
                    f"{p} holds a partition's files ({self.evidence}) but is not named <topic>-<partition> "
                    f"nor inside a log dir: it is not a log dir (to read its files: logdoctor dump {p}/*)"
                )
            return (
                f"{p} is a partition folder ({self.partition.topic} partition {self.partition.partition}; "
                f"{self.evidence}), not a log dir; its log dir is {self.log_dir}: give that "
                f"(or read the partition's files with logdoctor dump {p}/*.log)"
            )
        if self.kind is PathKind.HOLDS_LOG_DIRS:
            shown = _examples(self.log_dirs)
            return f"{p} is not a log dir but holds {len(self.log_dirs)} log dir(s) ({shown}): give those"
        return (
            f"{p} is not a Kafka log dir: {self.evidence} (a log dir holds meta.properties, checkpoint "
            "files or <topic>-<partition> folders)"
        )


def _examples(names: Sequence[str]) -> str:
    """The first :data:`_EXAMPLES` of ``names``, and ``...`` when there are more."""
    return ", ".join(names[:_EXAMPLES]) + (", ..." if len(names) > _EXAMPLES else "")


class NotALogDirError(LogDirError):
    """A path given as a log dir is not one (``.recognition`` says what it is)."""

    def __init__(self, recognition: Recognition) -> None:
        self.recognition = recognition
        super().__init__(recognition.refusal())

    @property
    def missing(self) -> bool:
        return self.recognition.kind is PathKind.MISSING


def _listing(path: str) -> list[os.DirEntry[str]] | None:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return None


def _is_dir(e: Any) -> bool:
    try:
        return e.is_dir()
    except OSError:
        return False


def first_partition_file(entries: Iterable[Any]) -> str | None:
    """The name of the first file among ``entries`` (objects with ``.name`` and ``.is_dir()``: an
    ``os.DirEntry`` or a :class:`logdoctor.logdir.storage.Entry`) that Kafka writes in a partition
    folder, else None."""
    for e in entries:
        if classify_partition_file(e.name).kind is not PartitionFileKind.UNKNOWN and not _is_dir(e):
            return e.name
    return None


def _partition_file(folder: str) -> str | None:
    """The name of the first file Kafka writes in a partition folder found in ``folder``, else None."""
    try:
        with os.scandir(folder) as it:  # stops at the first partition file, not at the end of the folder
            return first_partition_file(it)
    except OSError:
        return None


def _log_dir_evidence(path: str, entries: list[os.DirEntry[str]]) -> str | None:
    """Why ``path`` is a log dir (a marker file, or a partition folder with a partition file), else None."""
    return log_dir_evidence(entries, lambda e: _partition_file(e.path))


def log_dir_evidence(entries: Sequence[Any], partition_file: Callable[[Any], str | None]) -> str | None:
    """Why a folder holding ``entries`` is a log dir, else None: the rule of :func:`recognize` over any
    listing (``.name`` and ``.is_dir()`` per entry); ``partition_file(entry)`` names the first partition
    file in that subfolder (:func:`first_partition_file` of its listing), or None."""
    probes = 0
    weak = []
    # a folder is a marker only as the index cache (classify_root_entry): the files and that folder alone
    # sorted and classified, not each of 50,000 partition folders
    marks = []
    for e in entries:
        is_dir = _is_dir(e)
        if not is_dir or e.name == REMOTE_LOG_INDEX_CACHE_DIR:
            marks.append((e.name, is_dir))
    marks.sort(key=itemgetter(0))
    for name, is_dir in marks:
        if is_dir:
            weak.append(name)
            continue
        root = classify_root_entry(name, False)
        if root.kind in _ROOT_MARKERS:
            return f"has {name}"
        if root.kind in _WEAK_MARKERS:
            weak.append(name)
    if weak and len(weak) == len(entries):
        return f"has {', '.join(weak)} and nothing else"
    for e in sorted(entries, key=lambda e: e.name):
        if probes >= _PARTITION_PROBES:
            break
        if e.is_symlink() or not _is_dir(e) or parse_partition_dir(e.name) is None:
            continue  # a symlinked folder is never followed out of the log dir
        probes += 1
        found = partition_file(e)
        if found is not None:
            return f"has the partition folder {e.name} (with {found})"
    return None


def _logdoctor_folder(path: str, entries: Sequence[Any]) -> str | None:
    """Why ``path`` (listed as ``entries``) is a folder logdoctor wrote, else None."""
    files = (e.name for e in entries if not _is_dir(e))
    return logdoctor_folder(os.path.basename(path.rstrip(os.sep)), files)


def within_logdoctor_folder(
    path: str, entries: Sequence[Any] | None = None, *, by_name: bool = True
) -> str | None:
    """Why the local folder ``path`` (listed as ``entries``) is, or lies within, a folder logdoctor wrote
    (a backup dir's ``files/<n>-<log dir>`` holds partition folders, as a log dir does), else None. The
    folders above are probed for the marker files by name (a few stats, no listing). ``by_name=False``:
    by the marker files alone (:func:`logdoctor.logdir.names.logdoctor_output`), a name proving nothing."""
    p = os.path.abspath(path)
    if entries is not None and by_name:
        why = _logdoctor_folder(p, entries)
        if why is not None:
            return f"{why}: {p}"
    for level in range(_SEARCH_DEPTH + 1):
        if level or entries is None or not by_name:
            present = [n for n in LOGDOCTOR_MARKER_FILES if os.path.isfile(os.path.join(p, n))]
            name = os.path.basename(p.rstrip(os.sep))
            why = logdoctor_folder(name, present) if by_name else logdoctor_output(present)
            if why is not None:
                return f"{why}: {p}"
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return None


def own_output(path: str) -> str | None:
    """Why the local folder ``path`` is, or lies within, a folder logdoctor wrote, by its marker files
    alone (a backup dir's journal and README, an export's ``_SUCCESS``; a name proves nothing), looking up
    to two levels above it (a backup dir's ``files/<n>-<log dir>``); else None."""
    return within_logdoctor_folder(path, by_name=False)


def _find_log_dirs(path: str) -> list[str]:
    """Log dirs up to ``_SEARCH_DEPTH`` levels below ``path`` (``_SEARCH_LIMIT`` folders at most)."""
    found: list[str] = []
    budget = _SEARCH_LIMIT
    frontier = [path]
    for _ in range(_SEARCH_DEPTH):
        below: list[str] = []
        for folder in frontier:
            entries = _listing(folder) or []
            for e in sorted(entries, key=lambda e: e.name):
                if budget <= 0 or not _is_dir(e) or e.name.startswith("."):
                    continue
                budget -= 1
                sub = _listing(e.path)
                if sub is None or _logdoctor_folder(e.path, sub) is not None:
                    continue  # logdoctor's own backup or export: never a log dir, nothing searched below
                if _log_dir_evidence(e.path, sub) is not None:
                    found.append(e.path)
                else:
                    below.append(e.path)
        frontier = below
    return found


def recognize(path: str | os.PathLike[str], *, look_below: bool = True) -> Recognition:
    """Say what ``path`` is (never raises; reads directory listings only, a few folders deep at most).

    ``look_below=False`` skips the search for log dirs below a folder that is none (HOLDS_LOG_DIRS is
    then reported as OTHER_DIR): for callers that only ask "is this a log dir?" while walking a tree.
    """
    p = os.fspath(path)
    if not os.path.lexists(p):
        return Recognition(p, PathKind.MISSING, "it does not exist")
    if not os.path.isdir(p):
        return Recognition(p, PathKind.FILE, "a file")
    entries = _listing(p)
    if entries is None:
        # unreadable: the scan says why (PERMISSION_DENIED); its name is all we can go by
        return Recognition(p, PathKind.LOG_DIR, "cannot be listed; taken as a log dir")
    if not entries:
        return Recognition(p, PathKind.EMPTY_DIR, "an empty folder")
    own = within_logdoctor_folder(p, entries)
    if own is not None:
        return Recognition(p, PathKind.OTHER_DIR, f"it is {own}, not a log dir")
    evidence = _log_dir_evidence(p, entries)
    if evidence is not None:
        return Recognition(p, PathKind.LOG_DIR, evidence)
    part_files = sorted(
        e.name
        for e in entries
        if not _is_dir(e) and classify_partition_file(e.name).kind is not PartitionFileKind.UNKNOWN
    )
    if part_files:
        shown = _examples(part_files)
        real = os.path.abspath(p)
        name = parse_partition_dir(os.path.basename(real.rstrip(os.sep)))
        return Recognition(
            p, PathKind.PARTITION_DIR, f"it holds {shown}", log_dir=os.path.dirname(real), partition=name
        )
    below = _find_log_dirs(p) if look_below else []
    if below:
        return Recognition(p, PathKind.HOLDS_LOG_DIRS, "log dirs lie below it", log_dirs=tuple(below))
    names = sorted(e.name for e in entries)
    shown = _examples(names)
    return Recognition(
        p,
        PathKind.OTHER_DIR,
        f"it holds {len(names)} {'entry' if len(names) == 1 else 'entries'} ({shown}), none a Kafka file",
    )


def require_log_dir(path: str | os.PathLike[str]) -> Recognition:
    """:func:`recognize` ``path``; raise :class:`NotALogDirError` unless it is a log dir (or empty)."""
    r = recognize(path)
    if not r.is_log_dir:
        raise NotALogDirError(r)
    return r

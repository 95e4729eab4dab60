"""Which partitions a list of paths names: log dirs (or folders holding them), partition folders, .log files.

Paths are local paths or URIs of a file system pyarrow opens (:mod:`logdoctor.logdir.storage`). The
answer is a list of :class:`~logdoctor.logdir.refs.PartitionRef` values. A local log dir or partition
folder is read through the model (:class:`logdoctor.logdir.model.LogDir` /
:class:`~logdoctor.logdir.model.Partition`, which produce the refs), so local discovery follows exactly
the rules every command uses; a folder at a URI is listed through its storage with the same naming
rules (:mod:`logdoctor.logdir.names`) and the same log-dir test (:mod:`logdoctor.logdir.recognize`).
"""

from __future__ import annotations

import errno
import glob
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from logdoctor.logdir.names import (
    DirKind,
    FileState,
    SegmentFileType,
    logdoctor_folder,
    logdoctor_output,
    parse_partition_dir,
    parse_segment_file,
)
from logdoctor.logdir.read_errors import DiscoveryError, InputNotFoundError, InputPermissionError
from logdoctor.logdir.refs import PartitionRef, segment_refs
from logdoctor.logdir.storage import LOCAL, Entry, Storage, is_uri

if TYPE_CHECKING:
    from logdoctor.logdir.read_options import ReadOptions

__all__ = [
    "DiscoveryError",
    "InputNotFoundError",
    "discover",
    "find_log_dirs",
    "is_log_dir",
    "leave_out_own",
    "log_dir_partitions",
    "split_paths",
]

_MAX_SEARCH_DEPTH = 4


def _denied(exc: OSError) -> bool:
    return isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM)


#: what a partition folder this user cannot list is said as (the read plan names it as not read)
UNLISTABLE = "permission denied: this user cannot list the folder (run as the broker's user or as root)"


def _file_systems(opts: ReadOptions | None) -> tuple[tuple[str, str], ...]:
    """The file systems' options of a read (``s3.region``, ``s3.endpoint``: :meth:`Storage.of`)."""
    return () if opts is None else opts.storage


def split_paths(paths: str | Sequence[str] | None, opts: ReadOptions | None = None) -> list[str]:
    """``"a,b"`` or ``["a", "b"]`` -> ["a", "b"]; globs are expanded, order kept.

    A glob in a URI (``s3://bucket/brokers/*/kafka-logs``) is matched against the file system's
    listings (``opts``: a read's options, for ``s3.region`` / ``s3.endpoint``)."""
    if paths is None:
        return []
    items = [paths] if isinstance(paths, str) else list(paths)
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            part = part.strip()
            if not part:
                continue
            if is_uri(part) and glob.has_magic(part.split("://", 1)[1].split("?", 1)[0]):
                try:
                    storage, pattern = Storage.of(part, _file_systems(opts))
                    matches = storage.glob(pattern)
                except (OSError, ValueError) as exc:
                    raise DiscoveryError(f"{part}: {exc}") from exc
                if not matches:
                    raise DiscoveryError(f"no file or folder matches {part!r}")
                out.extend(matches)
            elif glob.has_magic(part):
                matches = sorted(glob.glob(part))
                if not matches:
                    raise DiscoveryError(f"no file or folder matches {part!r}")
                out.extend(matches)
            else:
                out.append(part)
    return out


def leave_out_own(items: Sequence[str], opts: ReadOptions | None = None) -> tuple[list[str], list[str]]:
    """(``items`` without logdoctor's own folders, a note for each one left out). A folder logdoctor wrote
    (a backup dir of ``repair``, ``move-partition`` or ``sync-replica``, or anything inside one; an
    export's output) is recognised by its marker files (its journal and README, ``_SUCCESS``), never by its
    name alone, and is no input: a glob of log dirs that matches an old backup beside them
    (``kafka-logs-*`` and ``kafka-logs-0.logdoctor-backup-<time>``) reads the log dirs. Missing paths
    and files are kept (the caller says what they are)."""
    kept: list[str] = []
    notes: list[str] = []
    for item in items:
        why = None
        try:
            storage, loc = Storage.of(item, _file_systems(opts))
            if storage.is_local:
                from logdoctor.logdir.recognize import own_output

                if os.path.isdir(loc):
                    why = own_output(loc)
            elif (entry := storage.info(loc)) is not None and entry.is_dir():
                why = logdoctor_output(e.name for e in storage.list(loc) if not e.is_dir())
        except (OSError, ValueError):
            why = None
        if why is None:
            kept.append(item)
        else:
            notes.append(f"left out {item}: it is {why}, not a log dir")
    return kept, notes


# --- listings -----------------------------------------------------------------------------------------


def _segment_logs(partition_dir: str, storage: Storage) -> list[tuple[int, str, int | None]]:
    """(base offset, location, size) of the live ``.log`` files of a remote partition folder, in order."""
    try:
        entries = [e for e in storage.list(partition_dir) if e.is_regular_file()]
    except OSError as exc:
        raise DiscoveryError(f"cannot list {partition_dir}: {exc.strerror or exc}") from exc
    logs: list[tuple[int, str, int | None]] = []
    for entry in entries:
        parsed = parse_segment_file(entry.name)
        if (
            parsed is None
            or parsed.file_type is not SegmentFileType.LOG
            or parsed.state is not FileState.LIVE
        ):
            continue
        logs.append((parsed.base_offset, storage.join(partition_dir, entry.name), entry.size))
    logs.sort(key=lambda item: (item[0], item[1]))
    return logs


def _partition_ref(partition_dir: str, log_dir: str, storage: Storage) -> PartitionRef | None:
    """The ref of the folder ``partition_dir`` (None when its name is no topic-partition folder's)."""
    parsed = parse_partition_dir(storage.basename(partition_dir))
    if parsed is None:
        return None
    if storage.is_local:
        from logdoctor.logdir.model import Partition

        try:
            return Partition(None, Path(partition_dir), parsed).ref(log_dir)
        except OSError as exc:
            raise DiscoveryError(f"cannot list {partition_dir}: {exc.strerror or exc}") from exc
    segments = segment_refs(
        log_dir, parsed.topic, parsed.partition, _segment_logs(partition_dir, storage), storage
    )
    return PartitionRef(
        log_dir, parsed.topic, parsed.partition, partition_dir, parsed.kind.value, segments, storage
    )


def _subdirs(path: str, storage: Storage = LOCAL) -> list[str]:
    try:
        return sorted(e.name for e in storage.list(path) if e.is_dir())
    except OSError:
        return []


def _remote_evidence(storage: Storage, path: str, entries: Sequence[Entry]) -> str | None:
    """Why the remote folder ``path`` (listed as ``entries``) is a log dir, by the local rule."""
    from logdoctor.logdir.recognize import first_partition_file, log_dir_evidence

    def partition_file(entry: Entry) -> str | None:
        try:
            return first_partition_file(storage.list(storage.join(path, entry.name)))
        except OSError:
            return None

    return log_dir_evidence(entries, partition_file) if entries else None


def is_log_dir(path: str, storage: Storage = LOCAL) -> bool:
    """A folder with meta.properties, a checkpoint file, or a topic-partition folder holding partition
    files: the rule every command shares (:func:`logdoctor.logdir.recognize.recognize`)."""
    if not storage.is_local:
        try:
            return _remote_evidence(storage, path, storage.list(path)) is not None
        except OSError:
            return False
    from logdoctor.logdir.recognize import PathKind, recognize

    return recognize(path, look_below=False).kind is PathKind.LOG_DIR


def _is_partition_dir(path: str, storage: Storage) -> bool:
    parsed = parse_partition_dir(storage.basename(path))
    if parsed is None:
        return False
    if storage.is_local:
        from logdoctor.logdir.model import Partition

        try:
            has_segments = bool(Partition(None, Path(path), parsed).segments)
        except OSError as exc:
            if _denied(exc):
                raise InputPermissionError(f"{path}: {UNLISTABLE}") from exc
            raise DiscoveryError(f"cannot list {path}: {exc.strerror or exc}") from exc
    else:
        has_segments = bool(_segment_logs(path, storage))
    return has_segments or not is_log_dir(path, storage)


def find_log_dirs(path: str, depth: int = 0, storage: Storage | None = None) -> list[str]:
    """Log dirs at or under ``path`` (a broker folder may hold several; searched a few levels deep).

    ``path`` is a local path or a URI (resolved with :meth:`Storage.of` when ``storage`` is None)."""
    if storage is None:
        storage, path = Storage.of(path)
    if is_log_dir(path, storage):
        return [path]
    if depth >= _MAX_SEARCH_DEPTH:
        return []
    out: list[str] = []
    for name in _subdirs(path, storage):
        sub = storage.join(path, name)
        if _logdoctor_folder(sub, storage) is None:  # logdoctor's backup or export: nothing below it
            out.extend(find_log_dirs(sub, depth + 1, storage))
    return out


def _logdoctor_folder(path: str, storage: Storage) -> str | None:
    """Why ``path`` is a folder logdoctor wrote (:func:`logdoctor.logdir.names.logdoctor_folder`)."""
    try:
        files = [e.name for e in storage.list(path) if not e.is_dir()]
    except OSError:
        return None
    return logdoctor_folder(storage.basename(path), files)


def log_dir_partitions(
    log_dir: str, kinds: Iterable[str] = (DirKind.LOG.value,), storage: Storage = LOCAL
) -> list[PartitionRef]:
    """Refs of the partition folders of ``log_dir`` whose kind is one of ``kinds``, sorted by name.

    A local log dir is the model's (:meth:`logdoctor.logdir.model.LogDir.partition_refs`: folders, not
    symlinks to them); a remote one is listed through ``storage``."""
    wanted = set(kinds)
    if storage.is_local:
        from logdoctor.logdir.model import LogDir

        model = LogDir(log_dir)
        try:
            folders = [p for p in (*model.partitions, *model.orphan_partitions) if p.kind.value in wanted]
        except OSError:
            return []
        folders.sort(key=lambda p: p.name)
        out: list[PartitionRef] = []
        for p in folders:
            try:
                out.append(p.ref(log_dir))
            except OSError as exc:
                if not _denied(exc):
                    raise DiscoveryError(f"cannot list {p.path}: {exc.strerror or exc}") from exc
                # one folder this user cannot list: the others are read, this one named (issue 59 item 8)
                out.append(
                    PartitionRef(
                        log_dir, p.topic, p.partition, str(p.path), p.kind.value, unreadable=UNLISTABLE
                    )
                )
        return out
    refs = (
        _partition_ref(storage.join(log_dir, name), log_dir, storage) for name in _subdirs(log_dir, storage)
    )
    return [ref for ref in refs if ref is not None and ref.kind in wanted]


def _merge(prev: PartitionRef, ref: PartitionRef) -> PartitionRef:
    """Two refs of one partition folder (single files named one by one) as one."""
    segs = {s.path: s for s in (*prev.segments, *ref.segments)}
    return PartitionRef(
        prev.log_dir,
        prev.topic,
        prev.partition,
        prev.path,
        prev.kind,
        tuple(sorted(segs.values(), key=lambda s: s.base_offset)),
        prev.storage,
    )


def discover(paths: str | Sequence[str] | None, opts: ReadOptions | None = None) -> list[PartitionRef]:
    """Partitions named by PATHS: log dirs (or folders holding them), partition folders, .log files.

    A log dir contributes its ``<topic>-<p>`` folders (not ``-delete``/``-future``/``-stray`` ones,
    which the broker does not serve); a partition folder or .log file named directly is read
    whatever its kind; logdoctor's own folders (a backup dir, an export's output) are left out
    (:func:`leave_out_own`). The same file named twice is read once. Each path is a local path or a URI
    (``opts``: a read's options, for the file system's ``s3.region`` / ``s3.endpoint``).
    Raises :class:`DiscoveryError` (:class:`InputNotFoundError` for a path that does not exist).
    """
    items = split_paths(paths, opts)
    if not items:
        raise DiscoveryError("no path given: load(PATH) with a log dir, a partition folder or a .log file")
    items, left_out = leave_out_own(items, opts)
    if not items:
        raise DiscoveryError("; ".join(left_out) + ": no other path given")
    out: dict[tuple[str, str], PartitionRef] = {}

    def add(ref: PartitionRef | None) -> None:
        if ref is None:
            return
        st = ref.storage
        key = (st.fs_uri, os.path.abspath(ref.path) if st.is_local else ref.path)
        prev = out.get(key)
        out[key] = ref if prev is None else _merge(prev, ref)

    for item in items:
        try:
            storage, loc = Storage.of(item, _file_systems(opts))
            path = os.path.normpath(loc) if storage.is_local else loc
            entry = storage.info(path)
        except (OSError, ValueError) as exc:
            if isinstance(exc, OSError) and _denied(exc):
                raise InputPermissionError(f"{item}: permission denied") from exc
            raise DiscoveryError(f"{item}: {getattr(exc, 'strerror', None) or exc}") from exc
        if entry is None:
            raise InputNotFoundError(f"{item}: no such file or folder")
        if not entry.is_dir():
            parsed = parse_segment_file(storage.basename(path))
            if parsed is None or parsed.file_type is not SegmentFileType.LOG:
                raise DiscoveryError(f"{item}: not a segment .log file (expected <20-digit base offset>.log)")
            part_dir = storage.dirname(path)
            ref = _partition_ref(part_dir, storage.dirname(part_dir), storage)
            if ref is None:
                raise DiscoveryError(
                    f"{item}: its folder is not a topic-partition folder (<topic>-<partition>)"
                )
            only = [s for s in ref.segments if storage.same(s.path, path)]
            add(PartitionRef(ref.log_dir, ref.topic, ref.partition, ref.path, ref.kind, tuple(only), storage))
        elif _is_partition_dir(path, storage):
            add(_partition_ref(path, storage.dirname(path), storage))
        else:
            log_dirs = find_log_dirs(path, storage=storage)
            if not log_dirs:
                raise DiscoveryError(f"{item}: no Kafka log dir, partition folder or .log file found there")
            for ld in log_dirs:
                for ref in log_dir_partitions(ld, storage=storage):
                    add(ref)
    return sorted(out.values(), key=lambda r: (r.log_dir, r.topic, r.partition))

"""The backup dir: where originals, removed bytes and staged new contents are kept.

Layout (default ``<parent>/.logdoctor-backups/<first log dir's name>.logdoctor-backup-<UTC time to the
nanosecond>Z-<pid>/`` (:func:`default_backup_dir`), beside the log dir in a hidden folder, never inside a
partition folder or a log dir where the broker would see it)::

    journal.jsonl                      the journal (first record: the plan)
    README.txt                         what this folder is and how to resume / roll back
    staged/steps.bin                   new contents of ``write`` steps, written before any change
                                       (one after the other; each step names its offset and size)
    files/<n>-<log dir name>/<rel>     originals replaced or removed (same relative path)
    tails/<n>-<log dir name>/<rel>.<size>.tail   bytes a truncation removed (from byte <size> on)

Durable copies: write, fsync the file, fsync its folder. Moves into the backup are renames when
the backup is on the same file system, else copy + fsync + verify + unlink.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from logdoctor.errors import LogDoctorError
from logdoctor.logdir import sparse
from logdoctor.logdir.atomic import SyncBarrier, fsync_dir, naming
from logdoctor.logdir.files import open_regular
from logdoctor.logdir.names import BACKUP_DIR_INFIX, BACKUPS_FOLDER

SPACE_MARGIN_BYTES = 4 << 20  # journal, README, folder entries
_CHUNK = 4 << 20


class NoSpaceError(LogDoctorError):
    """The backup dir (or a log dir) lacks the free space a repair needs."""


class PartlyWrittenError(NoSpaceError):
    """A file system filled up while a run wrote and undoing the run failed too: files of the run stay in
    the log dirs (``left``: those on disk), which its journal's ``--resume`` or ``--rollback`` finish or undo
    (issue 48: the line said "refused (nothing written)")."""

    def __init__(self, message: str, left: list[str]) -> None:
        super().__init__(message)
        self.left = left


def unique_stamp(ms: int | None = None) -> str:
    """``<UTC time>.<nanoseconds>Z-<pid>``: the moment ``ms`` (now when None) to the nanosecond (the
    sub-millisecond digits from the clock), and this process: no two runs on one host share it."""
    ns = time.time_ns()
    if ms is not None:
        ns = ms * 1_000_000 + ns % 1_000_000
    moment = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
    return f"{moment.strftime('%Y%m%dT%H%M%S')}.{ns % 1_000_000_000:09d}Z-{os.getpid()}"


def default_backup_dir(log_dir: str | os.PathLike[str], ms: int | None = None) -> str:
    """``<parent>/.logdoctor-backups/<log dir name>.logdoctor-backup-<unique stamp>``: beside the log dir
    (on its file system: moves into it are renames), in a hidden folder that no glob of log dirs matches
    (``kafka-logs-*``, ``broker-*/kafka-logs-*``), under a name no other run takes (:func:`unique_stamp`)."""
    p = os.path.abspath(os.fspath(log_dir)).rstrip(os.sep)
    parent, name = os.path.split(p)
    return os.path.join(parent, BACKUPS_FOLDER, f"{name or 'root'}{BACKUP_DIR_INFIX}{unique_stamp(ms)}")


def relative_to_log_dir(path: str, log_dirs: list[str]) -> tuple[str, str]:
    """(label of the log dir holding ``path``: ``<n>-<its name>``, path relative to it)."""
    for i, d in enumerate(log_dirs):
        root = os.path.abspath(d).rstrip(os.sep)
        if path == root or path.startswith(root + os.sep):
            return f"{i}-{os.path.basename(root) or 'root'}", path[len(root) + 1 :] or "."
    raise ValueError(f"{path} is not inside any of {log_dirs}")


def sha256_file(path: str | os.PathLike[str], start: int = 0, length: int | None = None) -> str:
    """The sha256 of the file's bytes ``[start, start + length)``; holes hash as the zeros they read
    as, without being read (logdir/sparse.py)."""
    import hashlib  # here: a dry run hashes nothing (its OpenSSL binding is ~2 ms of import, issue 35)

    h = hashlib.sha256()
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        end = size if length is None else min(size, start + length)
        pos = start
        for a, b in sparse.data_extents(fd, start, end):
            sparse.feed_zeros(h.update, a - pos)
            while a < b:
                chunk = os.pread(fd, min(_CHUNK, b - a), a)
                if not chunk:
                    break
                h.update(chunk)
                a += len(chunk)
            pos = b
        sparse.feed_zeros(h.update, max(0, end - pos))
    finally:
        os.close(fd)
    return h.hexdigest()


def sha256_bytes(data: bytes | memoryview) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def makedirs_durable(path: str | os.PathLike[str]) -> None:
    """mkdir -p, fsyncing each parent whose entry was created."""
    p = Path(path)
    missing = []
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, 0o700)
        fsync_dir(d.parent)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_durable(
    path: str | os.PathLike[str], data: bytes | memoryview, barrier: SyncBarrier | None = None
) -> None:
    """Create/replace ``path`` (a backup file, never a live one) and make it durable: now, or (with
    ``barrier``) when the barrier is flushed (the file and its folder are registered in it)."""
    with naming(path):
        makedirs_durable(Path(path).parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            write_all(fd, data)
            if barrier is None:
                os.fsync(fd)
        finally:
            os.close(fd)
        if barrier is None:
            fsync_dir(Path(path).parent)
        else:
            barrier.file(path)
            barrier.folder(Path(path).parent)


def copy_file_durable(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> str:
    """Copy bytes and permission bits, fsync; returns the sha256 of what was copied (verified).
    Holes stay holes (a sparse segment's backup takes the blocks of its data only)."""
    import hashlib

    h = hashlib.sha256()
    copy_range_durable(src, dst, 0, None, h.update, keep_mode=True)
    digest = h.hexdigest()
    if sha256_file(dst) != digest:
        raise OSError(errno.EIO, f"copy of {src} to {dst} does not read back the same")
    return digest


def copy_range_durable(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    start: int,
    length: int | None,
    update: Callable[[bytes | memoryview], object] | None = None,
    *,
    keep_mode: bool = False,
) -> None:
    """Write ``src``'s bytes ``[start, start + length)`` (to its end: None) as the whole new file ``dst`` (a
    truncation's tail), holes kept as holes, fsynced with its folder. ``update`` (a hash's) sees every byte;
    ``keep_mode``: ``dst`` gets ``src``'s permission bits."""
    with naming(dst):
        makedirs_durable(Path(dst).parent)
        fin = open_regular(src)
        try:
            fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                sparse.copy_range_sparse(fin, fout, start, length, update=update)
                os.fsync(fout)
            finally:
                os.close(fout)
            mode = stat.S_IMODE(os.fstat(fin).st_mode)
        finally:
            os.close(fin)
        if keep_mode:
            os.chmod(dst, mode)
        fsync_dir(Path(dst).parent)


def copy_tree_durable(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> dict[str, str]:
    """Copy a folder (files and sub-folders, no symlinks followed); {relative path: sha256}."""
    src, dst = os.fspath(src), os.fspath(dst)
    hashes: dict[str, str] = {}
    makedirs_durable(dst)
    os.chmod(dst, stat.S_IMODE(os.stat(src).st_mode))
    for folder, dirs, files in os.walk(src):
        rel = os.path.relpath(folder, src)
        out = os.path.join(dst, rel) if rel != "." else dst
        for d in sorted(dirs):
            target = os.path.join(out, d)
            os.makedirs(target, exist_ok=True)
            os.chmod(target, stat.S_IMODE(os.stat(os.path.join(folder, d)).st_mode))
        for f in sorted(files):
            s = os.path.join(folder, f)
            if os.path.islink(s):
                raise OSError(errno.ELOOP, f"{s} is a symlink: not copied")
            hashes[os.path.normpath(os.path.join(rel, f))] = copy_file_durable(s, os.path.join(out, f))
        fsync_dir(out)
    return hashes


def tree_hashes(root: str | os.PathLike[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    root = os.fspath(root)
    for folder, _dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        for f in files:
            out[os.path.normpath(os.path.join(rel, f))] = sha256_file(os.path.join(folder, f))
    return out


def move_durable(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Move a file or folder: rename when possible, else copy + fsync + verify + delete the source."""
    src, dst = os.fspath(src), os.fspath(dst)
    makedirs_durable(Path(dst).parent)
    try:
        os.rename(src, dst)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        partial = dst + ".partial"
        is_dir = os.path.isdir(src)
        if is_dir:
            shutil.rmtree(partial, ignore_errors=True)
            match = copy_tree_durable(src, partial) == tree_hashes(src)
        else:
            match = copy_file_durable(src, partial) == sha256_file(src)
        if not match:
            raise OSError(errno.EIO, f"copy of {src} does not match it") from None
        os.rename(partial, dst)
        fsync_dir(Path(dst).parent)
        if is_dir:
            shutil.rmtree(src)
        else:
            os.unlink(src)
    fsync_dir(Path(dst).parent)
    fsync_dir(Path(src).parent)


def existing(path: str | os.PathLike[str]) -> str:
    """``path``, or its nearest parent that exists (where a file system can be asked about it)."""
    p = Path(path)
    while not p.exists():
        p = p.parent
    return str(p)


def same_device(a: str, b: str) -> bool:
    """Would a rename from ``a`` to (a path under) ``b`` work? ``b`` may not exist yet."""
    try:
        return os.stat(a).st_dev == os.stat(existing(b)).st_dev
    except OSError:
        return False


def free_bytes(path: str | os.PathLike[str]) -> int:
    st = os.statvfs(existing(path))
    return st.f_bavail * st.f_frsize


README_TEXT = """This folder was written by `logdoctor repair`. Do not put it inside a Kafka log dir.

journal.jsonl  what was planned and done, step by step (the first line is the whole plan)
staged/        new file contents (steps.bin: every write step's bytes), written before any change
files/         the original files that were replaced or removed, under <n>-<log dir>/<relative path>
tails/         the bytes removed by truncations (<relative path>.<size>.tail starts at byte <size>)

Resume an interrupted repair:   logdoctor repair --resume {journal} --apply
Undo everything it did:          logdoctor repair --rollback {journal} --apply
(Without --apply each prints the steps it would run and writes nothing.)
"""


__all__ = [
    "NoSpaceError",
    "copy_file_durable",
    "copy_range_durable",
    "copy_tree_durable",
    "default_backup_dir",
    "existing",
    "free_bytes",
    "makedirs_durable",
    "move_durable",
    "relative_to_log_dir",
    "same_device",
    "sha256_bytes",
    "sha256_file",
    "tree_hashes",
    "unique_stamp",
    "write_all",
    "write_durable",
]

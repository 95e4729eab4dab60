"""Crash-safe file replacement, the way Kafka writes its checkpoints.

K:server-common/src/main/java/org/apache/kafka/server/common/CheckpointFile.java writes
``<name>.tmp``, flushes and fsyncs it, then ``Utils.atomicMoveWithFallback`` renames it over
the target and fsyncs the parent directory. We do the same, with a unique temp name (so two
writers never share one) and keeping the replaced file's owner and permission bits, since a
repair usually runs as root on files owned by the broker's user.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a barrier first syncs: a read-only command never loads the pool
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["SyncBarrier", "atomic_write", "fsync_dir", "naming", "write_temp"]

_DEFAULT_MODE = 0o644


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory so a rename/create inside it survives a crash."""
    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def naming(path: str | os.PathLike[str]) -> Iterator[None]:
    """An OSError raised inside without a file name (``os.write`` on a full disk) gets ``path``: every
    error about a write names the file it was writing."""
    try:
        yield
    except OSError as e:
        if e.filename is not None or e.errno is None:
            raise
        raise OSError(e.errno, e.strerror or os.strerror(e.errno), os.fspath(path)) from e


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes | bytearray | memoryview,
    *,
    mode: int | None = None,
    uid: int | None = None,
    gid: int | None = None,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old or the new file, never a mix.

    Temp file in the same folder, write, fsync, chmod/chown like the file it replaces (``mode``
    overrides the permission bits; a new file gets ``mode`` or 0o644; ``uid``/``gid`` override the
    owner, so a new index file is born owned by the broker's user), rename over the target, fsync
    the folder. On any error the temp file is removed and the target is untouched.

    ``before_rename`` is called once the temp file is written and fsynced, just before the rename
    (the repair engine's crash tests stop the process there).
    """
    target = Path(path)
    tmp_name = write_temp(target, data, mode=mode, uid=uid, gid=gid, sync=True)
    try:
        if before_rename is not None:
            before_rename()
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(target.parent)


def write_temp(
    path: str | os.PathLike[str],
    data: bytes | bytearray | memoryview,
    *,
    mode: int | None = None,
    uid: int | None = None,
    gid: int | None = None,
    sync: bool = True,
) -> str:
    """The first half of :func:`atomic_write`: ``data`` in a new temp file beside ``path``
    (``.<name>.<random>.tmp``), with the replaced file's (or the given) mode and owner, fsynced unless
    ``sync`` is False (the caller then fsyncs it, e.g. through a :class:`SyncBarrier`, before renaming
    it). Returns the temp file's path; on any error it is removed."""
    target = Path(path)
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    import tempfile  # on the first write: a read-only command never loads it

    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with naming(target), os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
            perm = stat.S_IMODE(st.st_mode) if st is not None else _DEFAULT_MODE
            os.fchmod(f.fileno(), mode if mode is not None else perm)
            owner = (
                uid if uid is not None else st.st_uid if st is not None else -1,
                gid if gid is not None else st.st_gid if st is not None else -1,
            )  # -1: left as it is
            if owner != (-1, -1) and owner != (os.geteuid(), os.getegid()):
                # Only root (or the owner, for the group) may do this; a non-root user replacing
                # a file of someone else can't keep the owner, and that is not worth failing for.
                with contextlib.suppress(PermissionError):
                    os.fchown(f.fileno(), *owner)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    return tmp_name


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with naming(path):
            os.fsync(fd)
    finally:
        os.close(fd)


class SyncBarrier:
    """Durability for a group of writes at once, instead of one fsync after each write: each file
    registered is fsynced from a pool of threads as soon as it is registered (``os.fsync`` releases the
    GIL: the disk writes a file while the caller goes on with the next one or checks this one, and the
    file system commits its journal for several fsyncs at a time); :meth:`flush` waits for them all, then
    fsyncs the registered folders. Whoever registers a path relies on it being durable only once
    ``flush`` returned. A context manager (the threads end with it)."""

    THREADS = 4

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []
        self.folders: dict[str, None] = {}
        self.later: dict[str, None] = {}
        self._lock = threading.Lock()  # registrations may come from several threads (not a flush)

    def file(self, path: str | os.PathLike[str]) -> None:
        """fsync ``path`` (a file) now, in the background."""
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.THREADS, thread_name_prefix="fsync")
            self._pending.append(self._pool.submit(_fsync_path, os.fspath(path)))

    def folder(self, path: str | os.PathLike[str]) -> None:
        """fsync the folder ``path`` at the next :meth:`flush`."""
        with self._lock:
            self.folders[os.fspath(path)] = None

    def file_at_flush(self, path: str | os.PathLike[str]) -> None:
        """fsync the file ``path`` once at the next :meth:`flush`, however often it is registered (a file
        appended to between flushes: every append registered is durable once the flush returned)."""
        with self._lock:
            self.later[os.fspath(path)] = None

    def flush(self) -> None:
        """Wait for every registered file's fsync (the first error raised), then fsync every registered
        folder; forget them."""
        with self._lock:
            later = list(self.later)
            self.later.clear()
        for path in later:
            self.file(path)
        pending, self._pending = self._pending, []
        for f in pending:
            f.result()
        folders = list(self.folders)
        self.folders.clear()
        if len(folders) > 1:
            for path in folders:
                self.file(path)
            pending, self._pending = self._pending, []
            for f in pending:
                f.result()
        elif folders:
            _fsync_path(folders[0])

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> SyncBarrier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

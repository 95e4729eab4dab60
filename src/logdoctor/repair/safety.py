"""Where a repair may write, and when it must refuse to run at all.

- Containment: every path a step touches must lie inside one of the plan's log dirs or its
  backup dir, after resolving symlinks of every folder on the way; the file itself must not be a
  symlink (a symlink pointing out of the log dir is a finding, never a path to write through).
  Names that come from file contents (checkpoint entries, ``..``, absolute paths) are never
  turned into paths: the planner only uses names it listed with scandir.
- The broker lock: a log dir whose ``.lock`` another process holds (a running broker,
  K:server-common/.../util/FileLock.java) is never repaired; the check only probes the lock.
- The backup dir may not be inside a log dir (the broker would see it as a partition folder)
  nor contain one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from logdoctor.errors import BrokerRunningError, LogDoctorError
from logdoctor.logdir.lock import lock_file_problem, lock_holder


class UnsafePathError(LogDoctorError):
    """A step would touch a path outside the log dirs and the backup dir, or through a symlink."""


class BackupLocationError(LogDoctorError):
    """The backup dir is inside a log dir, or a log dir is inside it."""


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_inside(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> str:
    """The real path of ``path`` when it lies inside one of ``roots``; else UnsafePathError.

    The folder part is resolved (symlinked folders pointing out are caught); the last component
    must not be a symlink itself. ``..`` components are refused outright.
    """
    p = os.fspath(path)
    if not os.path.isabs(p):
        raise UnsafePathError(f"{p}: not an absolute path")
    if ".." in p.split(os.sep):
        raise UnsafePathError(f"{p}: contains '..'")
    folder, name = os.path.split(os.path.normpath(p))
    real = os.path.join(_real(folder), name)
    if os.path.islink(real):
        raise UnsafePathError(f"{p} is a symlink (to {os.readlink(real)}): never written through")
    for root in roots:
        r = _real(root)
        if _inside(real, r):
            return real
    raise UnsafePathError(f"{p} resolves to {real}, outside the log dirs and the backup dir")


def is_contained(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]) -> bool:
    try:
        resolve_inside(path, roots)
    except UnsafePathError:
        return False
    return True


def refuse_if_locked(log_dirs: Iterable[str | os.PathLike[str]]) -> None:
    """BrokerRunningError when any log dir's lock is held by another process; UnsafePathError when a
    ``.lock`` is a FIFO or symlink (it can be neither probed nor taken). Writes nothing."""
    for d in log_dirs:
        problem = lock_file_problem(d)
        if problem is not None:
            raise UnsafePathError(
                f"{os.path.join(os.fspath(d), '.lock')} is {problem}, not a regular file: whether a broker "
                f"holds the lock of {d} cannot be known, nor can the repair take it; stop the broker, move "
                "the .lock aside (the broker creates a new one) and repair again"
            )
        holder = lock_holder(d)
        if holder is not None:
            who = f" by pid {holder.pid}" if holder.pid > 0 else ""
            raise BrokerRunningError(
                f"{os.path.join(os.fspath(d), '.lock')} is locked{who}: a broker is running on {d}; "
                "stop it before repairing"
            )


def check_backup_location(
    backup_dir: str | os.PathLike[str], log_dirs: Iterable[str | os.PathLike[str]]
) -> None:
    b = _real(backup_dir)
    for d in log_dirs:
        r = _real(d)
        if _inside(b, r):
            raise BackupLocationError(
                f"backup dir {backup_dir} is inside log dir {d}: the broker would see it; "
                "put it beside the log dir"
            )
        if _inside(r, b):
            raise BackupLocationError(f"log dir {d} is inside the backup dir {backup_dir}")


__all__ = [
    "BackupLocationError",
    "UnsafePathError",
    "check_backup_location",
    "is_contained",
    "refuse_if_locked",
    "resolve_inside",
]

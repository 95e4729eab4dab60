"""Detect (and take) the broker's lock on ``<log dir>/.lock``.

The broker locks each log dir with K:server-common/src/main/java/org/apache/kafka/server/util/FileLock.java:
``FileChannel.open(.lock, CREATE, READ, WRITE).tryLock()``. On Linux the JDK implements
``tryLock()`` (position 0, size Long.MAX_VALUE, exclusive) as a POSIX record lock,
``fcntl(fd, F_SETLK, {F_WRLCK, SEEK_SET, start=0, len=0})`` (len 0 = whole file), not flock(2):
verified with ``strace -e fcntl,flock`` on OpenJDK 17 running that exact call. flock(2) locks and
fcntl locks do not see each other on Linux, so the probe for a broker must be an fcntl one.

Probing must never disturb a broker's lock. We only ask (``F_OFD_GETLK``/``F_GETLK``), never set,
so nothing is ever taken or released. We prefer open-file-description locks (Linux >= 3.15):
they conflict with the broker's classic POSIX locks in both directions, and unlike classic locks
they belong to our open file, so opening and closing the probe's fd cannot drop a lock this
process holds through :func:`hold_lock`, and a probe in the same process still sees our own lock.

Another process may hold ``.lock`` with flock(2) instead (a script, a wrapper, a second copy of
logdoctor from before it took both): on a local Linux file system flock locks and fcntl locks do not
see each other, so the probe asks both. flock has no "get". When no fcntl lock is held, the probe tries
``flock(LOCK_SH | LOCK_NB)`` on its own fresh open file and releases it at once: only an exclusive
flock refuses it, and no probe ever takes an exclusive one, so two probes never see each other's
moment as a holder, however long either is preempted inside it (with exclusive moments, 1.5-5% of
probes from two processes probing in a loop did, and on a loaded core a moment outlasted any retry).
The refusal is tried again after 0.5, 2, 8 and 32 ms (:func:`_try_flock`) before it counts.

A shared holder lets the probe's shared flock through, so it is read from ``/proc/locks``: a FLOCK
lock on the file held by another process. Another probe's shared moment shows there too, for a few
microseconds, so a shared holder counts only when the same process holds it at every look over
~0.7 s (:data:`_SHARED_HOLDER_DELAYS`); no shared lock costs one read of ``/proc/locks``. Without a
readable ``/proc/locks`` the probe falls back to an exclusive try with retries. The holder's pid comes
from ``/proc/locks`` when the kernel shows it. :func:`hold_lock` takes both kinds, so neither a broker
nor a flock user can take the dir while we repair; its exclusive flock waits out a probe's shared
moment with the same retries.

A ``.lock`` that is not a regular file (a FIFO, a symlink: never followed) is neither probed nor
taken: :func:`lock_file_problem` says what it is, :func:`lock_holder` answers None without opening
it, :func:`hold_lock` refuses. Opening a FIFO read-only would block until a writer comes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from logdoctor.errors import BrokerRunningError
from logdoctor.logdir.files import NotRegularFileError, file_kind
from logdoctor.logdir.names import LOCK_FILE

__all__ = [
    "LockInfo",
    "LogDirBusyError",
    "hold_dir_lock",
    "hold_lock",
    "is_locked",
    "lock_file_problem",
    "lock_holder",
]

# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (+ padding)
_FLOCK = struct.Struct("@hhqqi4x")
_F_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", None)
_F_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)


@dataclass(slots=True)
class LockInfo:
    """Who holds a conflicting lock: ``pid`` is -1 for an OFD lock (the kernel doesn't say)."""

    pid: int
    exclusive: bool


def _get_lock(fd: int) -> LockInfo | None:
    query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    if _F_OFD_GETLK is not None:
        try:
            answer = fcntl.fcntl(fd, _F_OFD_GETLK, query)
        except OSError as e:  # kernel without OFD locks
            if e.errno != errno.EINVAL:
                raise
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    else:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    l_type, _whence, _start, _len, pid = _FLOCK.unpack(answer)
    if l_type == fcntl.F_UNLCK:
        return None
    return LockInfo(pid, l_type == fcntl.F_WRLCK)


def _flock_pid(fd: int) -> int:
    """The pid /proc/locks gives for a FLOCK lock on ``fd``'s file; -1 when it cannot say."""
    held = _flock_holders(fd)
    return max(held) if held else -1


_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
#: a file system without flock(2) (on this file, or on folders: some network file systems)
_NO_FLOCK = (errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP)
# how long to wait before each new try when a flock conflicts: a probe's own flock (another run's
# probe) lasts microseconds, so a conflict that outlasts these ~43 ms is a holder's
_FLOCK_RETRY_DELAYS = (0.0005, 0.002, 0.008, 0.032)


def _try_flock(fd: int, operation: int, delays: tuple[float, ...] = _FLOCK_RETRY_DELAYS) -> bool:
    """``flock(fd, operation | LOCK_NB)``: True when taken; False when another open file holds a
    conflicting lock through every try, one more after each of ``delays`` (module docstring). Other
    errors are raised."""
    for delay in (*delays, None):
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno not in _BUSY:
                raise
        if delay is None:
            return False
        time.sleep(delay)
    raise AssertionError("unreachable")


def _flock_holders(fd: int) -> set[int] | None:
    """The pids (-1 where the kernel hides it) that ``/proc/locks`` shows holding a FLOCK lock on
    ``fd``'s file, waiters left out; None when ``/proc/locks`` cannot be read."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            return {
                int(fields[4]) if fields[4].isdigit() and int(fields[4]) > 0 else -1
                for fields in (line.split() for line in f)
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == dev
            }
    except OSError:
        return None


# when to look again at a shared flock seen in /proc/locks: another probe's moment lasts microseconds
# (or as long as that probe is preempted inside it), a holder's as long as it runs (module docstring)
_SHARED_HOLDER_DELAYS = (0.0005, 0.002, 0.008, 0.032, 0.128, 0.512)


def _shared_holder(fd: int) -> int | None:
    """The pid of a process that holds a shared flock on ``fd``'s file at every look (None: none)."""
    held = _flock_holders(fd)
    if held is None:  # no /proc/locks: an exclusive try, retried, tells a holder from a moment
        if _try_flock(fd, fcntl.LOCK_EX):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        return _flock_pid(fd)
    for delay in _SHARED_HOLDER_DELAYS:
        if not held:
            return None
        time.sleep(delay)
        held &= _flock_holders(fd) or set()
    return next(iter(sorted(held, reverse=True)), None)


def _get_flock(fd: int) -> LockInfo | None:
    """A flock(2) lock another open file holds on ``fd``'s file (ours is a fresh open file, so a lock
    :func:`hold_lock` holds in this process is seen too)."""
    try:
        if not _try_flock(fd, fcntl.LOCK_SH):  # only an exclusive holder refuses it (module docstring)
            return LockInfo(_flock_pid(fd), True)
        fcntl.flock(fd, fcntl.LOCK_UN)
        pid = _shared_holder(fd)
    except OSError as e:
        if e.errno in _NO_FLOCK:
            return None
        raise
    return None if pid is None else LockInfo(pid, False)


_NO_FOLLOW = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def lock_file_problem(log_dir: str | os.PathLike[str]) -> str | None:
    """What ``<log_dir>/.lock`` is when it exists and is not a regular file ("a FIFO", "a symlink to
    X"); None when it is missing or a regular file."""
    path = Path(log_dir) / LOCK_FILE
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        try:
            return f"a symlink to {os.readlink(path)}"
        except OSError:
            return "a symlink"
    return f"a {file_kind(mode)}"


def _check_regular(fd: int, path: Path) -> None:
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFileError(errno.EINVAL, f"a {file_kind(mode)}, not a regular file", str(path))


def lock_holder(log_dir: str | os.PathLike[str]) -> LockInfo | None:
    """The lock another owner holds on ``<log_dir>/.lock`` (None: free, no ``.lock`` file, or a
    ``.lock`` that is not a regular file: see :func:`lock_file_problem`)."""
    path = Path(log_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | _NO_FOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # a symlink: never followed
            return None
        raise
    try:
        _check_regular(fd, path)
    except NotRegularFileError:
        return None
    try:
        holder = _get_lock(fd)
        return holder if holder is not None else _get_flock(fd)
    finally:
        os.close(fd)


def is_locked(log_dir: str | os.PathLike[str]) -> bool:
    """True when a broker (or :func:`hold_lock`, in any process) holds the log dir's lock."""
    return lock_holder(log_dir) is not None


class LogDirBusyError(BrokerRunningError):
    """Another logdoctor run holds the log dir's own lock (:func:`hold_dir_lock`)."""


# the log dirs whose own lock this process holds: real path -> [fd, depth]
_dir_locks: dict[str, list[int]] = {}


@contextlib.contextmanager
def hold_dir_lock(log_dir: str | os.PathLike[str]) -> Iterator[None]:
    """logdoctor's own lock on a log dir, so that two writing runs never overlap: ``flock(2)`` on the
    folder itself (nothing is created in it; the kernel drops the lock when the process dies; a broker
    never sees it). A writing command takes it before its planning scan and keeps it to its end;
    :func:`hold_lock` takes it too. Reentrant within a process. :class:`LogDirBusyError` (a
    BrokerRunningError: exit 75) when another process holds it; a file system without flock on
    folders (some network file systems) runs without it."""
    key = os.path.realpath(log_dir)
    held = _dir_locks.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
        return
    fd = os.open(key, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in _BUSY:
            pid = _flock_pid(fd)
            os.close(fd)
            who = f" (pid {pid})" if pid > 0 else ""
            raise LogDirBusyError(
                f"{log_dir} is being changed by another logdoctor run{who}: wait for it to end, "
                "then plan again"
            ) from None
        if e.errno not in (*_NO_FLOCK, errno.EBADF):
            os.close(fd)
            raise
    _dir_locks[key] = [fd, 1]
    try:
        yield
    finally:
        del _dir_locks[key]
        os.close(fd)


@contextlib.contextmanager
def hold_lock(log_dir: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the log dir's lock as a broker would, so no broker starts on it while we repair, and
    logdoctor's own (:func:`hold_dir_lock`).

    Creates ``.lock`` when missing (as FileLock does). Raises :class:`BrokerRunningError` when
    another process holds it, :class:`NotRegularFileError` when ``.lock`` is a symlink or not a
    regular file. A broker's ``tryLock`` fails while we hold it.
    """
    with hold_dir_lock(log_dir), _hold_broker_lock(log_dir) as path:
        yield path


@contextlib.contextmanager
def _hold_broker_lock(log_dir: str | os.PathLike[str]) -> Iterator[Path]:
    path = Path(log_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NO_FOLLOW, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularFileError(errno.ELOOP, "a symlink, not followed", str(path)) from None
        raise
    _check_regular(fd, path)
    try:
        request = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        try:
            if _F_OFD_SETLK is not None:
                fcntl.fcntl(fd, _F_OFD_SETLK, request)
            else:
                fcntl.fcntl(fd, fcntl.F_SETLK, request)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EAGAIN):
                holder = _get_lock(fd)
                who = f" (pid {holder.pid})" if holder is not None and holder.pid > 0 else ""
                raise BrokerRunningError(
                    f"{path} is locked by another process{who}: is a broker running on {log_dir}?"
                ) from e
            raise
        try:
            taken = _try_flock(fd, fcntl.LOCK_EX)  # a scan's probe of this .lock at this moment is waited out
        except OSError as e:
            if e.errno not in _NO_FLOCK:
                raise
            taken = True  # no flock on this file system: the fcntl lock alone
        if not taken:
            pid = _flock_pid(fd)
            who = f" (pid {pid})" if pid > 0 else ""
            raise BrokerRunningError(
                f"{path} is locked with flock(2) by another process{who}: is a broker or another "
                f"tool running on {log_dir}?"
            )
        yield path
    finally:
        os.close(fd)  # closing the only fd of an OFD lock (and of our flock) releases it

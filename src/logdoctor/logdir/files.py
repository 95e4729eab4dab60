"""Low-level read helpers: whole files, byte ranges and read-only memory maps.

Every read of the logdir layer goes through here, so a caller (or a test) can see exactly what
is read and when. Maps are read-only (``ACCESS_READ``): an offline tool never writes through a
map, and a broker's files are never modified by reading them.

Only regular files are read, and never through a symlink: the name is ``lstat``-ed first (a FIFO,
socket or device is not even opened: opening a FIFO for reading blocks until a writer comes, a
tape device rewinds), then opened with ``O_NOFOLLOW | O_NONBLOCK`` (a symlink or FIFO swapped in
since the ``lstat`` fails or returns at once instead of being followed or blocking) and checked
again with ``fstat``. Anything else raises :class:`NotRegularFileError`, an ``OSError``.

Reads leave the page cache as they found it when the command asks (:mod:`logdoctor.logdir.page_cache`)
and are paced to ``--max-read-rate`` (:mod:`logdoctor.logdir.read_rate`; a mapped file is paced by its
reader, as it touches the pages).
"""

from __future__ import annotations

import errno
import mmap
import os
import stat

from logdoctor.logdir import page_cache, read_rate

__all__ = [
    "NotRegularFileError",
    "file_kind",
    "map_file",
    "open_regular",
    "read_fd",
    "read_file",
    "read_range",
]

_EMPTY = memoryview(b"")
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


class NotRegularFileError(OSError):
    """Not opened: a symlink (never followed) or not a regular file (FIFO, socket, device, folder)."""


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: "regular file", "symlink", "FIFO", "folder", ..."""
    return next((kind for test, kind in _FILE_KINDS if test(mode)), "file of unknown type")


_FILE_KINDS = (
    (stat.S_ISREG, "regular file"),
    (stat.S_ISLNK, "symlink"),
    (stat.S_ISDIR, "folder"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def _refuse(path: str | os.PathLike[str], mode: int) -> NotRegularFileError:
    kind = file_kind(mode)
    if stat.S_ISLNK(mode):
        return NotRegularFileError(errno.ELOOP, "a symlink, not followed", os.fspath(path))
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    return NotRegularFileError(code, f"a {kind}, not a regular file: not opened", os.fspath(path))


# the files of a segment a running broker renames for deletion (LogSegment.changeFileSuffixes) and removes
# file.delete.delay.ms later: a segment listed a moment ago is read under its new name meanwhile
_RENAMED_FOR_DELETION = (".log", ".index", ".timeindex", ".txnindex")
_DELETED_SUFFIX = ".deleted"


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only fd of the regular file ``path`` (not through a final symlink); see the module doc.

    A segment file (``.log``, ``.index``, ``.timeindex``, ``.txnindex``) gone since it was listed but
    present as ``<name>.deleted`` is opened there: the same file, renamed by a running broker's
    retention or log cleaner (the bytes of a renamed file are unchanged). Otherwise FileNotFoundError."""
    try:
        return _open_regular(path)
    except FileNotFoundError:
        name = os.fspath(path)
        if not isinstance(name, str) or not name.endswith(_RENAMED_FOR_DELETION):
            raise
        try:
            return _open_regular(name + _DELETED_SUFFIX)
        except FileNotFoundError:
            pass
        raise


def _open_regular(path: str | os.PathLike[str]) -> int:
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as e:
        if e.errno == errno.ELOOP:  # replaced by a symlink since the lstat
            raise _refuse(path, stat.S_IFLNK) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, end: int | None = None) -> bytes:
    """Everything from ``fd``'s position to the end (one read when the size is right); with ``end``, to
    ``end`` bytes at most (a file read as of its size when listed: bytes appended since are not read)."""
    size = os.fstat(fd).st_size
    if end is not None:
        size = min(size, end)
    guard = page_cache.guard(fd, size)
    if guard is not None:
        guard.note(0, size)
    chunks = []
    left = end  # bytes still to read up to ``end`` (None: to the file's end)
    try:
        while True:
            chunk = os.read(fd, max(size, 1 << 16) if left is None else min(max(size, 1 << 16), left))
            read_rate.pace(len(chunk))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            if left is not None:
                left -= len(chunk)
                if left <= 0:
                    return b"".join(chunks)
            size = 1 << 16  # it grew: read on to the end
    finally:
        if guard is not None:
            guard.close()


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The whole file (for small files: checkpoints, properties, indexes)."""
    fd = open_regular(path)
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def read_range(path: str | os.PathLike[str], start: int, length: int | None = None) -> bytes:
    """``length`` bytes from ``start`` (to the end when None) with one positioned read."""
    fd = open_regular(path)
    try:
        # never more than the file holds: a length from a hostile index entry (2**40) would otherwise be
        # allocated whole by pread before reading the few bytes there are (issue 31)
        left = max(0, os.fstat(fd).st_size - max(0, start))
        length = left if length is None else min(length, left)
        if length <= 0:
            return b""
        guard = page_cache.guard(fd, length)
        if guard is None:
            got = os.pread(fd, length, start)
        else:
            guard.note(start, length)
            try:
                got = os.pread(fd, length, start)
            finally:
                guard.close()
        read_rate.pace(len(got))
        return got
    finally:
        os.close(fd)


def map_file(path: str | os.PathLike[str], end: int | None = None) -> memoryview:
    """A read-only memoryview of the whole file, backed by mmap (pages load on first touch); with ``end``,
    of its first ``end`` bytes at most (a segment as of its size when listed: a running broker's appends
    since are not read, as Kafka's FileRecords.slice reads up to the size taken when its read began).

    An empty file gives an empty view (mmap of length 0 is an error). The map stays alive as
    long as the view (or a slice of it) does, and is unmapped when the last one is released.
    """
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size if end is None else min(os.fstat(fd).st_size, end)
        if size <= 0:
            return _EMPTY
        attach = page_cache.watch_mapping(fd, size)
        mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        if attach is not None:
            attach(mm)
        return memoryview(mm)
    finally:
        os.close(fd)  # the map keeps its own reference to the file

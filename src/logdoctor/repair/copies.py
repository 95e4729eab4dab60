"""Durable, verified copies of folders (partition folders) and files: copy with fsync, checksums
(BLAKE2b), verify. Used by the engine's ``copy-tree`` operation and the operator procedures.

Every file is copied in large chunks while its source bytes are hashed, fsynced, given the source's
permission bits, owner (when allowed) and timestamps (the ``.log`` mtime is what time retention
falls back to when a segment has no timestamps, K:storage/.../log/LogSegment.java largestTimestamp),
then read back and compared. Folders are fsynced after their entries. ``progress`` callbacks get
the number of bytes just copied, for a progress bar.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from logdoctor.logdir.atomic import fsync_dir
from logdoctor.logdir.files import open_regular
from logdoctor.repair.backup import write_all

if TYPE_CHECKING:  # imported where a copy is hashed: a dry run hashes nothing (issue 35)
    import hashlib

HASH_NAME = "blake2b-256"
CHUNK = 8 << 20

Progress = Callable[[int], None]


class CopyMismatchError(OSError):
    """A copy does not read back as the bytes that were copied."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EIO, message)


def _hasher() -> hashlib.blake2b:
    import hashlib

    return hashlib.blake2b(digest_size=32)


def file_checksum(path: str | os.PathLike[str], progress: Progress | None = None) -> str:
    """BLAKE2b-256 of a file's bytes (hex)."""
    h = _hasher()
    with open(open_regular(path), "rb", buffering=0) as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            if progress is not None:
                progress(len(chunk))
    return h.hexdigest()


def _walk_files(root: str) -> Iterator[tuple[str, str]]:
    """(relative path, absolute path) of every regular file under ``root``, sorted; symlinks refused.

    A regular file as ``root`` is one entry, ``"."``; a missing ``root`` has none."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        yield ".", root
        return
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        rel_folder = os.path.relpath(folder, root)
        for name in sorted(files):
            p = os.path.join(folder, name)
            if os.path.islink(p):
                raise OSError(errno.ELOOP, f"{p} is a symlink: not copied")
            yield os.path.normpath(os.path.join(rel_folder, name)), p


def tree_checksums(root: str | os.PathLike[str], progress: Progress | None = None) -> dict[str, str]:
    """{relative path: checksum} of every file under ``root``."""
    return {rel: file_checksum(p, progress) for rel, p in _walk_files(os.fspath(root))}


def tree_size(root: str | os.PathLike[str]) -> int:
    return sum(st.st_size for _, st in _walk_stats(root))


def fingerprint(root: str | os.PathLike[str]) -> dict[str, list[int]]:
    """{relative path: [size, mtime_ns]}: a cheap "has it changed" record (reads no contents)."""
    return {rel: [st.st_size, st.st_mtime_ns] for rel, st in _walk_stats(root)}


def identity(root: str | os.PathLike[str]) -> dict[str, list[int]]:
    """{relative path: [device, inode, size, mtime_ns]}: the very files, not just equal ones."""
    return {rel: [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns] for rel, st in _walk_stats(root)}


def _walk_stats(root: str | os.PathLike[str]) -> Iterator[tuple[str, os.stat_result]]:
    return ((rel, os.lstat(p)) for rel, p in _walk_files(os.fspath(root)))


def _copy_meta(src_st: os.stat_result, dst: str) -> None:
    """The source's mode, owner (when allowed) and times (the mtime last: it is what retention reads)."""
    os.chmod(dst, stat.S_IMODE(src_st.st_mode))
    if (src_st.st_uid, src_st.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):
            os.chown(dst, src_st.st_uid, src_st.st_gid)
    os.utime(dst, ns=(src_st.st_atime_ns, src_st.st_mtime_ns))


def copy_file(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], *, progress: Progress | None = None
) -> str:
    """Copy one file durably (``dst`` must not exist); returns the checksum of the source bytes.

    The copy is read back and compared before returning (CopyMismatchError otherwise).
    """
    h = _hasher()
    fd_in = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd_in)
        fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            while chunk := os.read(fd_in, CHUNK):
                h.update(chunk)
                write_all(fd_out, chunk)
                if progress is not None:
                    progress(len(chunk))
            os.fsync(fd_out)
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)
    digest = h.hexdigest()
    if file_checksum(dst) != digest:
        raise CopyMismatchError(f"the copy {dst} of {src} does not read back the same")
    _copy_meta(st, os.fspath(dst))
    return digest


def copy_tree(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    after_first_file: Callable[[], None] | None = None,
) -> dict[str, str]:
    """Copy a folder (files and sub-folders) to ``dst`` (must not exist); {relative path: checksum}.

    Every file and folder is fsynced; folder modes, owners and mtimes follow the source.
    ``after_first_file`` runs once after the first file is copied (crash tests: a half-done copy).
    A regular file as ``src`` is copied with :func:`copy_file` (its parent fsynced): {".": checksum}.
    """
    src, dst = os.fspath(src), os.fspath(dst)
    if os.path.isfile(src) and not os.path.islink(src):
        digest = copy_file(src, dst, progress=progress)
        fsync_dir(os.path.dirname(os.path.abspath(dst)))
        if after_first_file is not None:
            after_first_file()
        return {".": digest}
    out: dict[str, str] = {}
    folders: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(src):
        dirs.sort()
        rel = os.path.relpath(folder, src)
        target = dst if rel == "." else os.path.join(dst, rel)
        os.mkdir(target, 0o700)
        fsync_dir(os.path.dirname(target))
        folders.append((folder, target))
        for name in sorted(files):
            s = os.path.join(folder, name)
            if os.path.islink(s):
                raise OSError(errno.ELOOP, f"{s} is a symlink: not copied")
            out[os.path.normpath(os.path.join(rel, name))] = copy_file(
                s, os.path.join(target, name), progress=progress
            )
            if after_first_file is not None:
                after_first_file()
                after_first_file = None
        fsync_dir(target)
    for folder, target in reversed(folders):  # children first: setting a mtime must come last
        _copy_meta(os.stat(folder), target)
        fsync_dir(target)
    return out


def verify_tree(root: str | os.PathLike[str], expected: dict[str, str]) -> list[str]:
    """What differs between ``root`` and ``expected`` checksums: missing, extra and changed files."""
    root = os.fspath(root)
    if not os.path.isdir(root) and not (os.path.isfile(root) and set(expected) == {"."}):
        return [f"{root} is missing"]
    problems: list[str] = []
    actual = {rel: p for rel, p in _walk_files(root)}
    for rel in sorted(set(expected) - set(actual)):
        problems.append(f"{os.path.join(root, rel)} is missing")
    for rel in sorted(set(actual) - set(expected)):
        problems.append(f"{os.path.join(root, rel)} was not in the source")
    for rel in sorted(set(actual) & set(expected)):
        if file_checksum(actual[rel]) != expected[rel]:
            problems.append(f"{os.path.join(root, rel)} differs from the source ({HASH_NAME})")
    return problems


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove a folder (or file) if present, and fsync its parent."""
    p = os.fspath(path)
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.unlink(p)
    else:
        return
    fsync_dir(os.path.dirname(p))


def rename_durable(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Rename, then fsync the folder of ``dst`` and (when another) the folder of ``src``."""
    src, dst = os.fspath(src), os.fspath(dst)
    os.rename(src, dst)
    fsync_dir(os.path.dirname(dst))
    if os.path.dirname(src) != os.path.dirname(dst):
        fsync_dir(os.path.dirname(src))


def same_file_system(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether a rename from ``a`` into folder ``b`` stays on one file system (``st_dev`` equal)."""
    return os.stat(a).st_dev == os.stat(b).st_dev


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged writer may still use on the file system of ``path`` (statvfs)."""
    st = os.statvfs(Path(path))
    return st.f_bavail * st.f_frsize


__all__ = [
    "CHUNK",
    "HASH_NAME",
    "CopyMismatchError",
    "Progress",
    "copy_file",
    "copy_tree",
    "file_checksum",
    "fingerprint",
    "free_bytes",
    "identity",
    "remove_tree",
    "rename_durable",
    "same_file_system",
    "tree_checksums",
    "tree_size",
    "verify_tree",
]

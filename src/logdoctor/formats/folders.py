"""Many folders of one parent listed at once: each one's stat and entry names (a scan of 50,000 partitions).

:func:`list_folders` is ``_speedups.list_folders`` (one C call for every folder: no ``os.DirEntry`` or
``stat_result`` made) or, without the extension (``LOGDOCTOR_PURE_PYTHON=1``, not built), its pure-Python
twin :func:`list_folders_py`, which gives the same result (tests/formats/test_list_folders.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import NamedTuple

from logdoctor.formats import extension

__all__ = ["FolderStat", "Listed", "list_folders", "list_folders_py"]

#: one folder: ``(st_mode, st_uid, st_gid, entry names)`` (names in readdir order, without "." and
#: ".."), or the errno of the open, stat or read that failed
Listed = tuple[int, int, int, list[str]] | int

_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class FolderStat(NamedTuple):
    """The fields of a folder's stat that access checks read (checks.access.missing_access)."""

    st_mode: int
    st_uid: int
    st_gid: int


def list_folders_py(root: str, names: Sequence[str]) -> list[Listed]:
    """Each folder ``root/name`` opened (symlinks followed), stat'ed and listed; its errno when one of these
    fails. OSError when ``root`` cannot be opened."""
    root_fd = os.open(root, _FLAGS)
    out: list[Listed] = []
    try:
        for name in names:
            try:
                fd = os.open(name, _FLAGS, dir_fd=root_fd)
            except OSError as e:
                out.append(e.errno)
                continue
            try:
                st = os.fstat(fd)
                listed = os.listdir(fd)
            except OSError as e:
                out.append(e.errno)
                continue
            finally:
                os.close(fd)
            out.append((st.st_mode, st.st_uid, st.st_gid, listed))
    finally:
        os.close(root_fd)
    return out


def _choose() -> Callable[[str, Sequence[str]], list[Listed]]:
    ext = extension.load()
    fn = getattr(ext, "list_folders", None) if ext is not None else None
    return fn if fn is not None else list_folders_py


list_folders: Callable[[str, Sequence[str]], list[Listed]] = _choose()

"""Low-level read helpers: whole files, byte ranges and read-only memory maps.

Every read of the logdir layer goes through here, so a caller (or a test) can see exactly what
is read and when. Maps are read-only (``ACCESS_READ``): an offline tool never writes through a
map, and a broker's files are never modified by reading them.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

__all__ = ["map_file", "read_file", "read_range"]

_EMPTY = memoryview(b"")


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The whole file (for small files: checkpoints, properties, indexes)."""
    with open(path, "rb") as f:
        return f.read()


def read_range(path: str | os.PathLike[str], start: int, length: int | None = None) -> bytes:
    """``length`` bytes from ``start`` (to the end when None) with one positioned read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if length is None:
            length = max(0, os.fstat(fd).st_size - start)
        return os.pread(fd, length, start) if length > 0 else b""
    finally:
        os.close(fd)


def map_file(path: str | os.PathLike[str]) -> memoryview:
    """A read-only memoryview of the whole file, backed by mmap (pages load on first touch).

    An empty file gives an empty view (mmap of length 0 is an error). The map stays alive as
    long as the view (or a slice of it) does, and is unmapped when the last one is released.
    """
    fd = os.open(Path(path), os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return _EMPTY
        return memoryview(mmap.mmap(fd, size, access=mmap.ACCESS_READ))
    finally:
        os.close(fd)  # the map keeps its own reference to the file

"""Holes in files: where a (possibly sparse) file holds data, so that nothing reads or copies a hole.

A hostile or damaged ``.log`` can be a few real bytes followed by gigabytes of hole (``truncate -s``,
a file system that lost its extents). Reading the hole costs the time and, through a map, the memory
of real zeros (the audit of issue 24: ``scan --quick`` of a 10 GiB hole took 48 s and 10.5 GB). The
kernel says where the data is with ``lseek(SEEK_DATA)``/``lseek(SEEK_HOLE)`` (Linux >= 3.1 on
ext4, xfs, btrfs, tmpfs, ...); where it cannot (``EINVAL``: a file system without it), the whole
range is data, which is always right, only slower.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

__all__ = ["copy_range_sparse", "data_bytes", "data_extents", "feed_zeros", "is_sparse"]

_SEEK_DATA = getattr(os, "SEEK_DATA", None)
_SEEK_HOLE = getattr(os, "SEEK_HOLE", None)
_CHUNK = 8 * 1024 * 1024


def is_sparse(st: os.stat_result) -> bool:
    """True when the file has fewer blocks allocated than its size needs (it has holes)."""
    blocks = getattr(st, "st_blocks", None)
    return blocks is not None and blocks * 512 < st.st_size


def data_extents(fd: int, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of the file at ``fd`` that hold data, in order; everything else in
    ``[start, end)`` is a hole (reads as zeros). The file's offset is left at an unspecified place."""
    size = os.fstat(fd).st_size
    end = size if end is None else min(end, size)
    if start >= end:
        return []
    if _SEEK_DATA is None or _SEEK_HOLE is None:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        try:
            data = os.lseek(fd, pos, _SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:  # no data from pos on: a hole up to the end
                break
            if e.errno in (errno.EINVAL, errno.EOPNOTSUPP):
                return [(start, end)] if not out else [*out, (pos, end)]
            raise
        if data >= end:
            break
        hole = min(os.lseek(fd, data, _SEEK_HOLE), end)
        out.append((data, hole))
        pos = hole
    return out


def data_bytes(fd: int, start: int = 0, end: int | None = None) -> int:
    """How many bytes of ``[start, end)`` hold data (the rest is holes)."""
    return sum(b - a for a, b in data_extents(fd, start, end))


def copy_range_sparse(
    fin: int,
    fout: int,
    start: int = 0,
    length: int | None = None,
    to: int = 0,
    update: Callable[[bytes | memoryview], object] | None = None,
) -> int:
    """Copy ``length`` bytes of ``fin`` from ``start`` (to its end when None) into ``fout`` at ``to``,
    keeping holes as holes: only the data extents are read and written (``pread``/``pwrite`` at their
    offsets), then ``fout`` is sized to ``to + length``. ``update`` (a hash's) sees every byte of the
    range in order, holes as zeros, without reading them. Returns the data bytes copied."""
    size = os.fstat(fin).st_size
    end = size if length is None else min(size, start + length)
    copied = 0
    pos = start
    for a, b in data_extents(fin, start, end):
        if update is not None:
            feed_zeros(update, a - pos)
        at = a
        while at < b:
            chunk = os.pread(fin, min(_CHUNK, b - at), at)
            if not chunk:
                raise OSError(errno.EIO, f"the file shrank while it was copied (at byte {at})")
            view = memoryview(chunk)
            off = to + at - start
            while view:
                n = os.pwrite(fout, view, off)
                view, off = view[n:], off + n
            if update is not None:
                update(chunk)
            at += len(chunk)
            copied += len(chunk)
        pos = b
    if update is not None:
        feed_zeros(update, end - pos)
    os.ftruncate(fout, to + end - start)
    return copied


_ZEROS = bytes(_CHUNK)


def feed_zeros(update: Callable[[bytes | memoryview], object], n: int) -> None:
    """``update`` with ``n`` zero bytes (a hole's contents), a chunk at a time."""
    view = memoryview(_ZEROS)
    while n > 0:
        k = min(n, _CHUNK)
        update(view[:k])
        n -= k

"""Reading a segment's ``.log`` by byte ranges, and walking its batches from a position.

A :class:`LogReader` hands out ranges of a memory-mapped (or in-memory) ``.log`` and counts them, so
callers and tests can see that a seek touched a small part of a large segment. It has the reading
interface of :class:`logdoctor.logdir.storage.RangeReader` (``read_at(offset, length)``, ``size``),
which is all :mod:`logdoctor.logdir.seek` needs: a local map and a remote file are read alike.
:func:`iter_batches_from` walks batches from a batch boundary in growing windows.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from typing import Protocol

from logdoctor.errors import CorruptRecordError, TruncatedError
from logdoctor.formats.record_types import LOG_OVERHEAD, entry_length
from logdoctor.formats.records import ZERO_PROBE_BYTES, Batch, iter_batches, zero_run
from logdoctor.logdir import read_rate
from logdoctor.logdir.files import map_file

__all__ = ["DEFAULT_WINDOW", "MAX_WINDOW", "ByteReader", "LogReader", "RangedLogReader", "iter_batches_from"]

#: First read window of a walk (doubles while the walk goes on, up to MAX_WINDOW).
DEFAULT_WINDOW = 16 * 1024
MAX_WINDOW = 16 * 1024 * 1024


class ByteReader(Protocol):
    """What seeking reads through: :class:`LogReader` (local, mapped) or a storage ``RangeReader``."""

    size: int

    def read_at(self, offset: int, length: int) -> bytes | memoryview: ...


class LogReader:
    """Byte-range reads of one ``.log`` (memory-mapped, zero copy) that count what they hand out.

    ``bytes_read`` is the sum of the lengths of every range returned by :meth:`read`: the pages a
    walk can touch. ``distinct_bytes_read`` counts each byte of the file once however often it was
    handed out (a seek and the walk after it read some ranges twice): never more than ``size``.
    Build one over a path (mmap) or over an in-memory buffer (tests, Spark tasks).
    """

    #: a read of the whole rest costs nothing (a map): :func:`iter_batches_from`'s ``window=None`` does it
    whole_reads = True

    def __init__(self, data: memoryview | bytes, *, source: str | None = None) -> None:
        self._view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        self.source = source
        self.size = len(self._view)
        self.bytes_read = 0
        self.reads = 0
        self._ranges: list[list[int]] = []  # merged [start, end) of what was read, sorted

    @property
    def distinct_bytes_read(self) -> int:
        return sum(e - s for s, e in self._ranges)

    def _note(self, start: int, end: int) -> None:
        if start >= end:
            return
        rs = self._ranges
        if rs and rs[-1][0] <= start <= rs[-1][1]:  # the common case: reading on from the last range
            rs[-1][1] = max(rs[-1][1], end)
            return
        i = bisect.bisect_left(rs, [start, start])
        if i > 0 and rs[i - 1][1] >= start:
            i -= 1
            start = rs[i][0]
        j = i
        while j < len(rs) and rs[j][0] <= end:
            end = max(end, rs[j][1])
            j += 1
        rs[i:j] = [[start, end]]

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> LogReader:
        return cls(map_file(path), source=str(path))

    def read(self, position: int, length: int) -> memoryview:
        """Up to ``length`` bytes from ``position`` (fewer at the end of the file)."""
        position = max(0, min(position, self.size))
        end = min(self.size, position + max(0, length))
        self.bytes_read += end - position
        if read_rate.limited() is None:
            self._note(position, end)
        else:  # --max-read-rate: the bytes handed out for the first time are those the walk reads from disk
            before = self.distinct_bytes_read
            self._note(position, end)
            read_rate.pace(self.distinct_bytes_read - before)
        self.reads += 1
        return self._bytes(position, end)

    def _bytes(self, position: int, end: int) -> memoryview:
        return self._view[position:end]

    def read_at(self, offset: int, length: int) -> memoryview:
        """:meth:`read` with the argument order of :class:`~logdoctor.logdir.storage.RangeReader`."""
        return self.read(offset, length)

    def release(self) -> None:
        """Drop this reader's reference to the map (views already handed out stay valid)."""
        self._view = memoryview(b"")


class RangedLogReader(LogReader):
    """A :class:`LogReader` over a reader by byte ranges (``size``, ``read_at``: a remote segment's original
    bytes): each read is a ranged read of what it asks for, and :func:`iter_batches_from` walks it in
    windows even when asked for the whole rest at once, so that a segment is never held whole (issue 48: an
    Aiven segment of one chunk declaring 1 GiB). The caller closes ``ranged``."""

    whole_reads = False

    def __init__(self, ranged: ByteReader, *, source: str | None = None) -> None:
        super().__init__(b"", source=source)
        self._ranged = ranged
        self.size = ranged.size

    def _bytes(self, position: int, end: int) -> memoryview:
        return memoryview(self._ranged.read_at(position, end - position) if end > position else b"")


def iter_batches_from(
    reader: LogReader,
    position: int = 0,
    *,
    end: int | None = None,
    window: int | None = DEFAULT_WINDOW,
    verify_crc: bool = False,
) -> Iterator[Batch]:
    """Walk the batches of ``reader`` from ``position`` (a batch boundary) to ``end``.

    Reads windows of ``window`` bytes (doubling as the walk goes on) so that a walk that stops early
    reads little; ``window=None`` maps the whole rest in one read. Batch positions are file
    positions. Raises what :func:`iter_batches` raises (TruncatedError at a torn tail, ...), with
    positions in the file; a batch cut by a window edge is not an error, it is read again whole.
    """
    end = reader.size if end is None else min(end, reader.size)
    pos = position
    if window is None and not reader.whole_reads:
        window = MAX_WINDOW
    win = (end - pos) if window is None else window
    while pos < end:
        length = min(max(win, LOG_OVERHEAD), end - pos)
        buf = reader.read(pos, length)
        at_end = pos + length >= end
        last_end = pos
        try:
            for batch in iter_batches(buf, source=reader.source, base_position=pos, verify_crc=verify_crc):
                last_end = batch.position + batch.size
                yield batch
        except TruncatedError:
            if at_end:
                raise
            # A batch straddles the window edge: batches are contiguous, so it starts where the last
            # one yielded ended. Read again from there with a window that holds it whole.
            head = reader.read(last_end, LOG_OVERHEAD) if last_end + LOG_OVERHEAD <= end else b""
            need = entry_length(head) if len(head) == LOG_OVERHEAD else 0
            if last_end == pos and need <= length:
                raise  # nothing fits even in a window this large: the error is real
            big = _ranged_batch(reader, last_end, need, end, verify_crc)
            if big is not None:
                yield big
                pos = last_end + need
                continue
            pos = last_end
            win = min(max(win * 2, need), max(MAX_WINDOW, need))
            continue
        except CorruptRecordError as exc:
            if not at_end and exc.position is not None and exc.found and exc.found.startswith("zero-filled"):
                # a zero run at a window's edge: named over the rest of the file, not of the window
                rest = end - exc.position
                exc.found = zero_run(reader.read(exc.position, min(rest, ZERO_PROBE_BYTES)), rest)
                exc.args = (exc._render(),)
            raise
        if last_end <= pos:
            return  # an empty range
        pos = last_end
        win = min(win * 2, MAX_WINDOW)


def _ranged_batch(reader: LogReader, position: int, size: int, end: int, verify_crc: bool) -> Batch | None:
    """A v2 batch of ``size`` bytes at ``position``, larger than any window, of a reader by byte ranges
    (``whole_reads`` False: a remote segment): made over :class:`~logdoctor.formats.ranged_bytes.RangedBytes`
    so that its CRC and records are read a window at a time and the batch is never held whole (issue 57
    item 6). None for any other (read whole, as before): a mapped file, a batch within a window, one that
    runs past ``end``, or an entry that is not magic 2. Its header is checked as every batch's is
    (``RecordBatchV2.parse_ranged``); ``verify_crc``: its CRC too, as ``iter_batches`` checks it."""
    from logdoctor.formats.batch_v2 import MAGIC_VALUE_V2, RecordBatchV2
    from logdoctor.formats.ranged_bytes import RangedBytes

    if reader.whole_reads or size <= MAX_WINDOW or position + size > end:
        return None
    magic = reader.read(position + 16, 1)
    if len(magic) != 1 or magic[0] != MAGIC_VALUE_V2:
        return None
    batch = RecordBatchV2.parse_ranged(
        RangedBytes(reader.read, position, size), source=reader.source, base_position=position
    )
    if verify_crc:
        batch.ensure_valid()
    return batch

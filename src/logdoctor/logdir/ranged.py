"""The record batches of a segment read by byte ranges, for files that are not mapped (object stores, HDFS).

:func:`iter_ranged_batches` yields the batches :func:`logdoctor.formats.records.iter_batches` yields
over the whole file from ``start`` and raises the same errors at the same positions, but reads only
the bytes it walks: chunks that grow from ``first_chunk`` to ``max_chunk`` bytes, each cut at the end
of the last whole batch in it (a batch that straddles a chunk's end is completed by the next read, its
bytes read once). Memory holds a chunk or two, never the whole segment. With ``stop`` no batch that
starts at or after it is read; with ``hint`` (a position past which no batch is probably wanted, from
the offset index) and ``hint_offset``, reads stop at ``hint`` unless the batch there is not a v2 batch
with a base offset >= ``hint_offset`` (checked with one 17-byte read), so that ``endingOffsets`` reads
no chunk past the records it needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from logdoctor.errors import CorruptRecordError, TruncatedError
from logdoctor.formats.record_types import LOG_ENTRY_HEAD, LOG_OVERHEAD
from logdoctor.formats.records import HEADER_SIZE_UP_TO_MAGIC as _PROBE  # ... and the magic byte at 16
from logdoctor.formats.records import MIN_ENTRY_SIZE, iter_batches

__all__ = ["FIRST_CHUNK", "MAX_CHUNK", "iter_ranged_batches"]

FIRST_CHUNK = 1024 * 1024
MAX_CHUNK = 32 * 1024 * 1024


def _whole_entries_end(buf: memoryview, buf_pos: int, pos: int, soft_end: int) -> tuple[int, int | None]:
    """(end of the whole entries in ``buf`` from file position ``pos``, stopping at ``soft_end``; the
    size field of the entry there when its header is in ``buf``, else None)."""
    have_end = buf_pos + len(buf)
    q = pos
    while q < soft_end and q + LOG_OVERHEAD <= have_end:
        _, size = LOG_ENTRY_HEAD.unpack_from(buf, q - buf_pos)
        if size < MIN_ENTRY_SIZE or q + LOG_OVERHEAD + size > have_end:
            return q, size
        q += LOG_OVERHEAD + size
    if q + LOG_OVERHEAD <= have_end:
        return q, LOG_ENTRY_HEAD.unpack_from(buf, q - buf_pos)[1]
    return q, None


def _rest_is_zero(reader: Any, start: int, size: int, step: int) -> bool:
    pos = start
    while pos < size:
        data = reader.read_at(pos, min(step, size - pos))
        if not data or data.count(0) != len(data):
            return False
        pos += len(data)
    return True


def iter_ranged_batches(
    reader: Any,
    *,
    source: str | None = None,
    start: int = 0,
    stop: int | None = None,
    verify_crc: bool = False,
    first_chunk: int | None = None,
    max_chunk: int | None = None,
    hint: int | None = None,
    hint_offset: int | None = None,
) -> Iterator[Any]:
    """Batches of the file open in ``reader`` (``.size``, ``.read_at(offset, length)``, e.g. a
    :class:`logdoctor.logdir.storage.RangeReader`) from ``start``; see the module doc."""
    max_chunk = MAX_CHUNK if max_chunk is None else max_chunk
    first_chunk = min(max_chunk, FIRST_CHUNK if first_chunk is None else first_chunk)
    size = reader.size
    limit = size if stop is None else min(stop, size)
    buf = memoryview(b"")
    buf_pos = start
    pos = start
    chunk = max(_PROBE, first_chunk)
    hint_live = hint is not None and hint_offset is not None
    while pos < limit:
        have_end = buf_pos + len(buf)
        if hint_live and pos >= hint:  # type: ignore[operator]
            hint_live = False
            at = pos - buf_pos
            head = bytes(buf[at : at + _PROBE]) if pos + _PROBE <= have_end else reader.read_at(pos, _PROBE)
            if len(head) == _PROBE and head[16] == 2 and LOG_ENTRY_HEAD.unpack_from(head)[0] >= hint_offset:  # type: ignore[operator]
                return  # a v2 batch past the records wanted: read no further
        soft_end = min(limit, hint) if hint_live else limit  # type: ignore[type-var]
        q, entry_size = _whole_entries_end(buf, buf_pos, pos, soft_end)
        if q > pos:  # whole entries: the parser's errors there are the file's
            yield from iter_batches(
                buf,
                source=source,
                start=pos - buf_pos,
                end=q - buf_pos,
                verify_crc=verify_crc,
                base_position=buf_pos,
            )
            pos = q
            continue
        if pos >= soft_end:
            continue  # at the hint: probe it
        if entry_size is not None and entry_size < MIN_ENTRY_SIZE:
            # a corrupt size, or a zero-filled tail: the parser says which, as over the whole file
            offset = LOG_ENTRY_HEAD.unpack_from(buf, pos - buf_pos)[0]
            if offset == 0 and entry_size == 0 and have_end < size:
                if size - pos > max_chunk:
                    here = bytes(buf[pos - buf_pos :])
                    zero = here.count(0) == len(here) and _rest_is_zero(reader, have_end, size, max_chunk)
                    raise CorruptRecordError(
                        "a batch (offset, size >= 14)",
                        source=source,
                        position=pos,
                        found=(
                            f"a zero-filled tail of {size - pos} bytes"
                            if zero
                            else "zero-filled bytes (offset 0, size 0) followed by non-zero data"
                        ),
                    )
                buf = memoryview(bytes(buf[pos - buf_pos :]) + reader.read_at(have_end, size - have_end))
                buf_pos = pos
            yield from _until(
                iter_batches(
                    buf, source=source, start=pos - buf_pos, verify_crc=verify_crc, base_position=buf_pos
                ),
                limit,
            )
            return  # not reached: the parser raised
        need_end = pos + LOG_OVERHEAD + entry_size if entry_size is not None else pos + _PROBE
        if need_end > size or have_end >= size:
            # the file ends inside this entry: the parser's TruncatedError, over the bytes to the end
            if size - have_end > max_chunk:
                raise TruncatedError(
                    f"an entry of {need_end - pos} bytes",
                    source=source,
                    position=pos,
                    found=f"{size - pos} bytes to the end",
                )
            buf = memoryview(bytes(buf[pos - buf_pos :]) + reader.read_at(have_end, size - have_end))
            buf_pos = pos
            yield from _until(
                iter_batches(buf, source=source, start=0, verify_crc=verify_crc, base_position=buf_pos), limit
            )
            return
        bound = min(limit, hint) if hint_live else limit  # type: ignore[type-var]
        new_end = min(size, max(need_end, min(pos + chunk, bound)))
        data = reader.read_at(have_end, new_end - have_end)
        if len(data) != new_end - have_end:  # the file is shorter than it was: what is there
            size = have_end + len(data)
            limit = min(limit, size)
        rest = buf[pos - buf_pos :]
        buf = memoryview(bytes(rest) + data) if len(rest) else memoryview(data)
        buf_pos = pos
        chunk = min(max_chunk, chunk * 2)


def _until(batches: Iterator[Any], limit: int) -> Iterator[Any]:
    for batch in batches:
        if batch.position >= limit:
            return
        yield batch

"""A run of batches decoded to record columns, a batch that does not decode left out and named (the batches
after it still read), and a gzip or zstd batch larger than a window (a decompression bomb) decoded a window
of records at a time, never whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from logdoctor.spark.sources.columns import undecodable_batch


class _Window:
    """One window of a batch's records (``record_windows``): the batch's fields, its own record count."""

    __slots__ = ("_batch", "record_count")

    def __init__(self, batch: Any, record_count: int) -> None:
        self._batch = batch
        self.record_count = record_count

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)


def _decode(batches: list, path: str, bad: list[dict[str, Any]] | None = None) -> Iterator[tuple[list, Any]]:
    """Decode ``batches`` to columns: (batches, their columns) parts. A batch that does not decode (a
    CRC-valid batch whose records are garbage: bad varint lengths, a payload that is not its codec's) is
    left out, and named in ``bad``; the batches after it are still read (issue 24: export stopped at the
    first such batch and said nothing). A gzip or zstd batch whose records are more than a window (a
    decompression bomb) gives a part per window, never decompressed whole."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.batch_v2 import SectionTooLargeError
    from logdoctor.formats.records import decode_columns

    try:
        cols = decode_columns(batches)
        if len(cols) == sum(b.record_count for b in batches):
            yield batches, cols
            return
    except (FormatError, SectionTooLargeError):
        pass
    good: list = []
    for b in batches:  # decode one at a time: keep every batch that decodes
        try:
            c = decode_columns([b])
            if len(c) != b.record_count:
                raise ValueError(f"{len(c)} records decoded where the batch header says {b.record_count}")
        except SectionTooLargeError:
            if good:
                yield good, decode_columns(good)
                good = []
            yield from _decode_windows(b, path, bad)
            continue
        except (FormatError, ValueError) as exc:
            if bad is not None:
                bad.append(undecodable_batch(b, path, exc))
            continue
        good.append(b)
    if good:
        yield good, decode_columns(good)


def _decode_windows(b: Any, path: str, bad: list[dict[str, Any]] | None) -> Iterator[tuple[list, Any]]:
    """A large gzip or zstd batch a window of records at a time; a bad record ends it (named in ``bad``)."""
    from logdoctor.errors import FormatError
    from logdoctor.formats.columns import columns_of_records

    try:
        for records in b.record_windows():
            cols = columns_of_records(records, b.timestamp_type)
            yield [_Window(b, len(records))], cols
    except FormatError as exc:
        if bad is not None:
            bad.append(undecodable_batch(b, path, exc))

"""The text lines ``dump --deep`` prints for a batch's records, written by the C extension in one call per
batch (``_speedups.record_lines``): no Record object, no event and no string per field, which were most of
a text dump's time (issue 71: ``dump --deep`` against Kafka's DumpLogSegments --deep-iteration).

:func:`record_lines` answers None whenever the batch is to be printed record by record by the Python path
(``cli.dump.text``'s ``_record``), which stays the reference: no extension (``LOGDOCTOR_PURE_PYTHON``), not
a v2 batch of a buffer in memory, a control batch, a count the batch's check refuses, a section past the
window or a codec frame left to ``codecs``, a record that does not decode, a header key that is not
printable ASCII. ``tests/cli/test_dump_record_lines.py`` compares both paths on what real brokers wrote.
"""

from __future__ import annotations

from typing import NamedTuple

from logdoctor.errors import FormatError
from logdoctor.formats import native
from logdoctor.formats.batch_v2 import RecordBatchV2
from logdoctor.formats.ranged_bytes import RangedBytes
from logdoctor.formats.record_types import Batch, Compression

__all__ = ["RecordLines", "available", "record_lines"]


class RecordLines(NamedTuple):
    """A batch's record lines (each ending with a newline, printable ASCII), how many records, the first
    and last record offsets, and the (offset, next offset) pairs inside the batch that are not
    consecutive."""

    text: str
    count: int
    first_offset: int
    last_offset: int
    gaps: list[tuple[int, int]]


def available() -> bool:
    """Whether the C extension writes the lines (else every batch goes through the Python path)."""
    return native.speedups is not None and hasattr(native.speedups, "record_lines")


def record_lines(batch: Batch, transaction_result: str | None = None) -> RecordLines | None:
    """The record lines of ``batch`` as ``dump --deep`` prints them (without --print-data or a decoder),
    ``transaction_result`` the outcome of its transaction; None: print it through the Python path."""
    speedups = native.speedups
    if speedups is None or not isinstance(batch, RecordBatchV2) or batch.is_control:
        return None
    buf = batch.buffer
    if isinstance(buf, RangedBytes):
        return None
    section = None
    try:
        batch.check_count()
        if batch.compression not in (Compression.NONE, Compression.LZ4):
            section = batch.small_section()  # gzip, snappy, zstd: decompressed by codecs, one window
            if section is None:
                return None
    except FormatError:
        return None  # the Python path raises it where it prints
    got = speedups.record_lines(buf, batch._start, section, transaction_result)
    return None if got is None else RecordLines(*got)

"""--deep: every record of every batch decoded, as ``dump --deep`` and a consumer decode them.

The broker's recovery checks only CRCs (K:storage/.../log/LogSegment.java recover:
``batch.ensureValid()``), so a batch whose CRC matches but whose records do not decode (lengths that
do not fit, bytes left over, a negative count: damage whose CRC was recomputed, or a tool that wrote
the segment) is kept and served, and every consumer that fetches it fails with InvalidRecordException
(K:clients/.../record/DefaultRecordBatch.java iterator, DefaultRecord.java readFrom). This finds them
in a segment buffer the walk has framed (``WalkResult.positions``).

Uncompressed v2 batches are checked in C without the GIL and without building a Python object
(``_speedups.check_records_v2``; its twin ``v2_twin.check_records_py``); the batches it leaves aside
(compressed, v0/v1, or one whose records fail) go through ``batch.records()``, the decoder ``dump
--deep`` uses (compressed records a window at a time: memory bounded by the window), so the scan and
the dump agree on every batch and say the same about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logdoctor.errors import FormatError
from logdoctor.formats import batch_v2
from logdoctor.formats.record_types import entry_length
from logdoctor.formats.records import iter_batches


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A batch whose CRC matches and whose records do not decode."""

    position: int
    base_offset: int | None  # None: a v0/v1 compressed wrapper (its first offset needs its records)
    last_offset: int
    error: str  # what the decoder says (the same text as ``dump --deep``)


def undecodable_batches(
    mv: memoryview, positions: Sequence[int], valid_bytes: int, source: str | None = None
) -> list[Undecodable]:
    """The batches at ``positions`` (the walk's, in ``mv``, the file ``source``) whose records do not
    decode. Batches past ``valid_bytes`` (after the walk's first damage) count only when their CRC
    matches: a CRC mismatch is reported as such already."""
    check = batch_v2.DECODERS.check_records
    out: list[Undecodable] = []
    i, n = 0, len(positions)
    while i < n:
        i, _code, _at, _index = check(mv, positions, i, n)
        if i >= n:
            break
        pos = positions[i]
        i += 1
        if pos + 18 <= len(mv) and mv[pos + 16] < 2 and not mv[pos + 17] & 0x07:
            continue  # an uncompressed v0/v1 message: the walk read all of it (one record, no lengths inside)
        found = _decode(mv, pos, valid_bytes, source)
        if found is not None:
            out.append(found)
    return out


def _decode(mv: memoryview, pos: int, valid_bytes: int, source: str | None) -> Undecodable | None:
    """The batch at ``pos`` decoded as ``dump --deep`` decodes it (``batch.records()``)."""
    if pos + 12 > len(mv):
        return None
    size = entry_length(mv, pos)
    try:
        b = next(iter_batches(mv, source=source, start=pos, end=pos + size), None)
    except FormatError:  # the walk framed it: only a buffer that changed underneath gets here
        return None
    if b is None or (pos + size > valid_bytes and b.compute_crc() != b.stored_crc):
        return None
    try:
        for _ in b.records():
            pass
    except FormatError as e:
        first = b.base_offset if b.magic >= 2 else None
        return Undecodable(pos, first, b.last_offset, str(e))
    return None

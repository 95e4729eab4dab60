"""The scan's view of one .log: offsets, timestamps, CRCs and the first damage, over the batch walk of
logdoctor.formats.records (whole v2 batches made in C, nothing decompressed). It follows what the
broker's recovery does (K:storage/.../log/LogSegment.java recover, K:clients/.../record/
FileLogInputStream.java nextBatch): a partial entry at the end is where the valid data stops, a size
below 14 bytes is corrupt, the first CRC mismatch is where the broker would truncate the segment.
Unlike the broker it keeps walking after a CRC mismatch (the framing is intact) to count further
damage and to learn the real offsets. (It replaced checks/logwalk.py, a second header walker: this
one is faster, see BENCHMARKS.md.)

Invariants: :func:`walk` never raises on bad data (what stops it is a :class:`Damage`); ``valid_bytes``,
``valid_records`` and ``valid_last_offset`` are what the broker's recovery keeps (everything before the
first damage); the C fast lane (:mod:`logdoctor.checks.state.fast_lane`) takes only the batches the
Python loop would take without a finding, with the same figures, and stops before anything else, which the
loop walks; past the first bad entry a sparse file's holes are zeros, never read.
"""

from __future__ import annotations

import functools
from array import array
from dataclasses import dataclass, field

from logdoctor.checks.state import fast_lane
from logdoctor.checks.state.fast_lane import _FAST_CHUNK, _fast_lane
from logdoctor.checks.undecodable import Undecodable
from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats.crc import CRC32C_EXTENSION
from logdoctor.formats.records import RECORD_BATCH_OVERHEAD, iter_batches

V2_HEADER = RECORD_BATCH_OVERHEAD
_CRC_START_V2 = 21  # the v2 crc covers attributes..end (DefaultRecordBatch)


@dataclass(slots=True)
class Damage:
    """The first place the walk found bad bytes. ``kind``: crc, truncated, zero_tail, corrupt, order."""

    kind: str
    position: int
    message: str


@dataclass(slots=True)
class WalkResult:
    size: int = 0
    batches: int = 0
    valid_bytes: int = 0  # bytes before the first damage (what recovery would keep)
    first_offset: int | None = None  # first batch's first offset (None: unknown, v0/v1 wrapper)
    first_batch_last_offset: int | None = None
    last_offset: int | None = None  # last offset of the last batch walked
    valid_last_offset: int | None = None  # last offset before the first damage (what recovery keeps)
    max_timestamp: int = -1  # like LogSegment.recover: max of batch max timestamps
    offset_of_max_timestamp: int = -1
    max_timestamp_valid_prefix: int = -1  # the same, before the first damage
    crc_errors: int = 0
    records: int = 0  # records of every batch walked (a v0/v1 compressed wrapper: its offsets)
    valid_records: int = 0  # the same, before the first damage (what recovery keeps)
    damage: list[Damage] = field(default_factory=list)
    positions: array | None = None  # batch start positions (with_positions=True)
    last_offsets: array | None = None  # their last offsets
    magics: set[int] = field(default_factory=set)
    # batches whose CRC matches and whose records do not decode (with_positions: the --deep walk)
    undecodable: list[Undecodable] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.damage


def walk(
    buf: memoryview | bytes,
    base_offset: int = 0,
    *,
    verify_crc: bool = True,
    with_positions: bool = False,
    stop_at_damage: bool = False,
    data_extents: list[tuple[int, int]] | None = None,
) -> WalkResult:
    """Walk every batch of a segment buffer (formats.records.iter_batches); never raises on bad data.

    ``base_offset`` is accepted for the callers' sake: the first batch is checked against it by them.
    ``data_extents`` (a sparse file's, logdir/sparse.py) are the only ranges read past the first bad
    entry (to tell a zero-filled tail): holes are zeros without being read.
    """
    mv = memoryview(buf)
    n = len(mv)
    res = WalkResult(size=n)
    positions = lasts = None
    if with_positions:
        positions, lasts = res.positions, res.last_offsets = array("q"), array("q")
    crc32c = CRC32C_EXTENSION.crc32c
    prev_last: int | None = None
    max_ts = max_ts_off = -1
    batches = crc_errors = 0
    first_crc: Damage | None = None
    stop: Damage | None = None
    magics: set[int] = set()
    pos = 0  # where the next entry starts (the end of the last one walked)
    fast = _fast_lane if fast_lane.FAST_WALK is not None else None
    out = bytearray(16 * _FAST_CHUNK) if fast is not None and with_positions else None
    try:
        while True:
            # the C fast lane while nothing is damaged: the batches the loop below would take without a
            # finding, the same figures; it stops before anything else, which the loop below walks
            while fast is not None and first_crc is None and pos < n:
                pos2, nb, recs, first_base, first_last, last, max_ts, max_ts_off = fast(
                    mv,
                    pos,
                    n,
                    verify_crc,
                    prev_last is not None,
                    prev_last or 0,
                    max_ts,
                    max_ts_off,
                    out,
                    _FAST_CHUNK,
                )
                if not nb:
                    break
                if batches == 0:
                    res.first_offset, res.first_batch_last_offset = first_base, first_last
                if positions is not None:
                    positions.frombytes(memoryview(out)[: 8 * nb])  # type: ignore[arg-type]
                    lasts.frombytes(memoryview(out)[8 * _FAST_CHUNK : 8 * (_FAST_CHUNK + nb)])  # type: ignore
                magics.add(2)
                res.records += recs
                res.valid_records += recs
                res.max_timestamp_valid_prefix = max_ts
                res.valid_last_offset = last
                res.valid_bytes = pos2
                prev_last, batches, pos = last, batches + nb, pos2
            if pos >= n:
                break
            for b in iter_batches(mv, start=pos, verify_crc=False):
                end = pos + b.size
                magic = b.magic
                if magic == 2:
                    first = b.base_offset
                    # Java's long arithmetic: base + delta wraps around (a fuzzed base offset near 2^63
                    # made a Python int too big for the positions array: OverflowError)
                    last = b.last_offset
                    batch_max_ts = b.max_timestamp
                    if verify_crc and crc32c(mv[pos + _CRC_START_V2 : end]) != b.stored_crc:
                        crc_errors += 1
                        if first_crc is None:
                            first_crc = Damage(
                                "crc",
                                pos,
                                f"CRC mismatch in the v2 batch at position {pos} (offsets "
                                f"{first}..{last}): stored {b.stored_crc:#010x}, computed "
                                f"{b.compute_crc():#010x}",
                            )
                else:
                    last = b.last_offset
                    # a wrapper's first offset needs decompression
                    first = None if b.is_compressed else last
                    batch_max_ts = b.max_timestamp if magic == 1 else -1
                    if verify_crc and (computed := b.compute_crc()) != b.stored_crc:
                        crc_errors += 1
                        if first_crc is None:
                            first_crc = Damage(
                                "crc",
                                pos,
                                f"CRC mismatch in the v{magic} message at position {pos} (offset {last}): "
                                f"stored {b.stored_crc:#010x}, computed {computed:#010x}",
                            )
                lower = first if first is not None else last
                if prev_last is not None and lower <= prev_last:
                    stop = Damage(
                        "order",
                        pos,
                        f"offsets go backwards: the batch at position {pos} starts at offset {lower} but "
                        f"the previous batch ended at {prev_last}",
                    )
                    break
                if batches == 0:
                    res.first_offset = first
                    res.first_batch_last_offset = last
                if magic == 2:
                    count = max(0, b.record_count)
                elif first is not None:
                    count = 1
                else:  # a compressed wrapper: its inner messages end at ``last``, after the previous entry
                    count = last - prev_last if prev_last is not None else 1
                res.records += count
                magics.add(magic)
                if batch_max_ts > max_ts:
                    max_ts, max_ts_off = batch_max_ts, last
                if positions is not None:
                    positions.append(pos)
                    lasts.append(last)  # type: ignore[union-attr]
                if first_crc is None:
                    res.valid_bytes = end
                    res.valid_records += count
                    res.max_timestamp_valid_prefix = max_ts
                    res.valid_last_offset = last
                elif stop_at_damage:
                    break
                prev_last = last
                batches += 1
                pos = end
                if fast is not None and first_crc is None:
                    break  # back to the fast lane
            else:
                break  # the end of the buffer
            if stop is not None or first_crc is not None:
                break  # the loop above stopped the walk (or, with stop_at_damage, found the damage)
    except FormatError as e:
        stop = _damage_at(mv, pos, n, e, data_extents)
    if first_crc is None:
        res.valid_bytes = stop.position if stop is not None else pos
    res.batches = batches
    res.last_offset = prev_last
    res.max_timestamp = max_ts
    res.offset_of_max_timestamp = max_ts_off
    res.crc_errors = crc_errors
    res.magics = magics
    res.damage.extend(d for d in (first_crc, stop) if d is not None)
    return res


#: the piece :func:`_all_zero` copies and compares with zeros: it stays in the core's cache between the copy
#: and the compare (256 KiB: 0.75 ms per 16 MiB, as numpy's ``any`` without its ~45 ms import)
_ZERO_PIECE = 256 << 10


@functools.cache
def _zero_piece() -> bytes:
    return bytes(_ZERO_PIECE)


def _all_zero(mv: memoryview, pos: int, n: int, extents: list[tuple[int, int]] | None) -> bool:
    """``mv[pos:n]`` is all zero: a piece at a time, each copied and compared with zeros (memcpy and memcmp;
    stops at the first piece with a byte that is not), and for a sparse file only its data extents (a hole
    reads as zeros)."""
    if extents is None:
        ranges = [(pos, n)]
    else:
        ranges = [(max(a, pos), min(b, n)) for a, b in extents if b > pos and a < n]
    zeros = _zero_piece()
    for a, b in ranges:
        for at in range(a, b, _ZERO_PIECE):
            piece = bytes(mv[at : min(b, at + _ZERO_PIECE)])
            if piece != (zeros if len(piece) == _ZERO_PIECE else bytes(len(piece))):
                return False
    return True


def _damage_at(
    mv: memoryview, pos: int, n: int, error: FormatError, extents: list[tuple[int, int]] | None = None
) -> Damage:
    """The entry at ``pos`` stopped the walk: a zero-filled tail, a torn last entry, or bad framing."""
    if _all_zero(mv, pos, n, extents):
        return Damage(
            "zero_tail",
            pos,
            f"zero-filled tail: the last {n - pos} bytes from position {pos} are all zero (preallocated or "
            "never written before a crash)",
        )
    if isinstance(error, TruncatedError):
        return Damage(
            "truncated",
            pos,
            f"truncated entry at position {pos}: {n - pos} bytes left where {error.expected} should be "
            "(a partial write at the end of the segment)",
        )
    return Damage(
        "corrupt",
        pos,
        f"corrupt entry at position {pos}: expected {error.expected} at position {error.position}, found "
        f"{error.found} (CorruptRecordException)",
    )

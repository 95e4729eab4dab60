"""Walk the batches of one ``.log`` segment for the scan: offsets, timestamps, CRCs, damage.

This is the scan's hot path, so it reads only batch headers with precompiled structs over one
buffer (mmap for large files) and checks CRCs with the C-backed crc32c / zlib over zero-copy slices;
records are never decoded. The full decoder is :mod:`logdoctor.formats.records`.

It follows what the broker's recovery does (K:storage/.../log/LogSegment.java recover,
K:clients/.../record/FileLogInputStream.java nextBatch): a partial entry at the end is where the
valid data stops, a size below 14 bytes (LegacyRecord.RECORD_OVERHEAD_V0) is corrupt, and the first
CRC mismatch is where the broker would truncate the segment. Unlike the broker we keep walking after
a CRC mismatch (the framing is intact) to count further damage and to learn the real offsets.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from array import array
from dataclasses import dataclass, field

import crc32c as _crc32c
import numpy as np

# v0/v1 log entry: offset, size, crc, magic, attributes [, timestamp]; v2 batch header (61 bytes)
_ENTRY = struct.Struct(">qiIbb")  # 18 bytes: enough for magic 0/1 and to read the magic of v2
_V1_TS = struct.Struct(">q")
_V2 = struct.Struct(">qiibIhiqqqhii")
LOG_OVERHEAD = 12
MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0: smaller size fields are corrupt
V2_HEADER = 61
_CRC_START_V2 = 21  # crc covers attributes..end (DefaultRecordBatch)
_CRC_START_V01 = 16  # crc covers magic..end (LegacyRecord)
MMAP_THRESHOLD = 64 * 1024 * 1024


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
    damage: list[Damage] = field(default_factory=list)
    positions: array | None = None  # batch start positions (with_positions=True)
    last_offsets: array | None = None  # their last offsets
    magics: set[int] = field(default_factory=set)

    @property
    def clean(self) -> bool:
        return not self.damage


def read_buffer(path: str | os.PathLike[str]) -> tuple[memoryview, object | None]:
    """The whole file as a memoryview (mmap for large files). Close the returned handle when done."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size >= MMAP_THRESHOLD:
            # MAP_POPULATE: fault the whole file in at once instead of page by page during the walk
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(f.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
            return memoryview(mm), mm
        return memoryview(f.read()), None


def release(view: memoryview, handle: object | None) -> None:
    view.release()
    if handle is not None:
        handle.close()  # type: ignore[attr-defined]


def walk(
    buf: memoryview | bytes,
    base_offset: int,
    *,
    verify_crc: bool = True,
    with_positions: bool = False,
    stop_at_damage: bool = False,
) -> WalkResult:
    """Walk every batch header of a segment buffer; never raises on bad data."""
    mv = memoryview(buf)
    n = len(mv)
    res = WalkResult(size=n)
    if with_positions:
        res.positions = array("q")
        res.last_offsets = array("q")
    unpack_entry = _ENTRY.unpack_from
    unpack_v2 = _V2.unpack_from
    unpack_ts = _V1_TS.unpack_from
    crc32c = _crc32c.crc32c
    crc32 = zlib.crc32
    pos = 0
    prev_last: int | None = None  # the first batch is checked against the base offset by the caller
    max_ts = -1
    max_ts_off = -1
    batches = 0
    crc_errors = 0
    first_crc: Damage | None = None
    magics: set[int] = set()
    positions_append = res.positions.append if res.positions is not None else None
    lasts_append = res.last_offsets.append if res.last_offsets is not None else None
    stop: Damage | None = None
    while pos < n:
        if n - pos < LOG_OVERHEAD:
            stop = _tail_damage(mv, pos, n, "a 12-byte entry header (offset, size)")
            break
        if n - pos >= 18:
            offset, size, crc, magic, attrs = unpack_entry(mv, pos)
        else:
            offset, size = struct.unpack_from(">qi", mv, pos)
            crc = magic = attrs = 0
        if size < MIN_ENTRY_SIZE:
            if size == 0 and offset == 0 and not np.frombuffer(mv, np.uint8, offset=pos).any():
                stop = Damage(
                    "zero_tail",
                    pos,
                    f"zero-filled tail: the last {n - pos} bytes from position {pos} are all zero "
                    "(preallocated or never written before a crash)",
                )
            else:
                stop = Damage(
                    "corrupt",
                    pos,
                    f"entry size {size} at position {pos} is below the minimum {MIN_ENTRY_SIZE} "
                    "(CorruptRecordException)",
                )
            break
        end = pos + LOG_OVERHEAD + size
        if end > n:
            stop = _tail_damage(mv, pos, n, f"a {LOG_OVERHEAD + size}-byte entry (size field {size})")
            break
        if magic == 2:
            if size + LOG_OVERHEAD < V2_HEADER:
                stop = Damage(
                    "corrupt",
                    pos,
                    f"v2 batch at position {pos} is {size + LOG_OVERHEAD} bytes, "
                    f"smaller than its {V2_HEADER}-byte header",
                )
                break
            (first, _len, _ple, _m, crc, _attrs2, last_delta, _bts, batch_max_ts, _pid, _pep, _bseq, _cnt) = (
                unpack_v2(mv, pos)
            )
            last = first + last_delta
            if verify_crc and crc32c(mv[pos + _CRC_START_V2 : end]) != crc:
                crc_errors += 1
                if first_crc is None:
                    first_crc = Damage(
                        "crc",
                        pos,
                        f"CRC mismatch in the v2 batch at position {pos} (offsets {first}..{last}): stored "
                        f"{crc:#010x}, computed {crc32c(mv[pos + _CRC_START_V2 : end]):#010x}",
                    )
        elif magic == 0 or magic == 1:
            first = None  # a compressed wrapper's first inner offset needs decompression
            last = offset
            if attrs & 0x07 == 0:
                first = offset
            batch_max_ts = unpack_ts(mv, pos + 18)[0] if magic == 1 and size >= 22 else -1
            if verify_crc and crc32(mv[pos + _CRC_START_V01 : end]) != crc:
                crc_errors += 1
                if first_crc is None:
                    first_crc = Damage(
                        "crc",
                        pos,
                        f"CRC mismatch in the v{magic} message at position {pos} (offset {offset}): stored "
                        f"{crc:#010x}, computed {crc32(mv[pos + _CRC_START_V01 : end]):#010x}",
                    )
        else:
            stop = Damage("corrupt", pos, f"unknown magic {magic} at position {pos + 16} (entry at {pos})")
            break
        lower = first if first is not None else last
        if prev_last is not None and lower <= prev_last:
            stop = Damage(
                "order",
                pos,
                f"offsets go backwards: the batch at position {pos} starts at offset {lower} but the "
                f"previous batch ended at {prev_last}",
            )
            break
        if batches == 0:
            res.first_offset = first
            res.first_batch_last_offset = last
        magics.add(magic)
        if batch_max_ts > max_ts:
            max_ts = batch_max_ts
            max_ts_off = last
        if positions_append is not None:
            positions_append(pos)
            lasts_append(last)  # type: ignore[misc]
        if first_crc is None:
            res.valid_bytes = end
            res.max_timestamp_valid_prefix = max_ts
            res.valid_last_offset = last
        elif stop_at_damage:
            break
        prev_last = last
        batches += 1
        pos = end
    if stop is not None and first_crc is None:
        res.valid_bytes = stop.position
    elif first_crc is None:
        res.valid_bytes = pos
    res.batches = batches
    res.last_offset = prev_last
    res.max_timestamp = max_ts
    res.offset_of_max_timestamp = max_ts_off
    res.crc_errors = crc_errors
    res.magics = magics
    if first_crc is not None:
        res.damage.append(first_crc)
    if stop is not None:
        res.damage.append(stop)
    return res


def _tail_damage(mv: memoryview, pos: int, n: int, wanted: str) -> Damage:
    if not np.frombuffer(mv, np.uint8, offset=pos).any():
        return Damage(
            "zero_tail", pos, f"zero-filled tail: the last {n - pos} bytes from position {pos} are all zero"
        )
    return Damage(
        "truncated",
        pos,
        f"truncated entry at position {pos}: {n - pos} bytes left where {wanted} should be "
        "(a partial write at the end of the segment)",
    )

"""Walking the entries of a log segment (or any buffer of record batches / message sets).

The walk reads only the 12-byte log overhead (offset, size) and the magic byte of each entry, like
Kafka's FileLogInputStream.nextBatch (K:clients/src/main/java/org/apache/kafka/common/record/
FileLogInputStream.java), and hands the entry to the v2 batch parser or to the legacy (v0/v1)
one. Nothing is decompressed. Where Kafka stops silently (a partial batch at the end) this module
raises TruncatedError so a caller can tell "end of data" from "torn tail"; scan_batches() is the
never-raising form that recovery uses (valid bytes + the error that stopped it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import CorruptRecordError, CrcMismatchError, FormatError, TruncatedError
from logdoctor.formats.batch_v2 import (
    HEADER,
    MAGIC_VALUE_V2,
    RECORD_BATCH_OVERHEAD,
    RecordBatchV2,
    check_v2_size,
    walk_v2,
)
from logdoctor.formats.columns import RecordColumns, decode_columns
from logdoctor.formats.lazy_numpy import np
from logdoctor.formats.record_types import (
    LOG_ENTRY_HEAD,
    LOG_OVERHEAD,
    MAGIC_POSITION,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Batch,
    Compression,
    Header,
    Record,
    RecordSpec,
    TimestampType,
    entry_length,
)
from logdoctor.formats.v2_twin import _byte_view

__all__ = [
    "HEADER_SIZE_UP_TO_MAGIC",
    "LOG_OVERHEAD",
    "MAGIC_POSITION",
    "MIN_ENTRY_SIZE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "Batch",
    "Compression",
    "CrcSkip",
    "Header",
    "Record",
    "RecordBatchV2",
    "RecordColumns",
    "RecordSpec",
    "ScanResult",
    "TimestampType",
    "consecutive_offsets_error",
    "decode_columns",
    "iter_batches",
    "scan_batches",
    "skip_crc_mismatches",
    "zero_run",
]

# LegacyRecord.RECORD_OVERHEAD_V0: the smallest size field any entry can have; FileLogInputStream
# throws CorruptRecordException("Found record size %d smaller than minimum record overhead (14)").
MIN_ENTRY_SIZE = 14
# Records.HEADER_SIZE_UP_TO_MAGIC: offset + size + 4 bytes + magic.
HEADER_SIZE_UP_TO_MAGIC = MAGIC_POSITION + 1

_V2_MIN_SIZE = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # the smallest v2 size field (check_v2_size)
_WALK_CHUNK = 64  # batches made per call of the C walker (iter_batches stays lazy)


#: how much of a zero-filled run the walker reads to name it: a hostile file can be a few bytes and then
#: gigabytes of hole, whose reading costs the time and (through a map) the memory of real zeros (issue 24)
ZERO_PROBE_BYTES = 1 << 20


def zero_run(mv: memoryview | bytes, remaining: int) -> str:
    """What the zero header at ``mv[0]`` starts: a zero-filled tail, zeros then data, or (past the
    probe) a zero-filled run whose end was not read."""
    probe = mv[: min(remaining, ZERO_PROBE_BYTES)]
    if np.frombuffer(probe, dtype=np.uint8).any():
        return "zero-filled bytes (offset 0, size 0) followed by non-zero data"
    if remaining <= ZERO_PROBE_BYTES:
        return f"a zero-filled tail of {remaining} bytes"
    return (
        f"zero-filled bytes (offset 0, size 0): the first {ZERO_PROBE_BYTES} of the {remaining} bytes left "
        "are zero (the rest was not read)"
    )


def iter_batches(
    buf,
    *,
    source: str | None = None,
    start: int = 0,
    end: int | None = None,
    verify_crc: bool = False,
    base_position: int = 0,
) -> Iterator[Batch]:
    """Yield the batches (v2) and entries (v0/v1) of ``buf[start:end]`` without decompressing.

    ``base_position`` is the file position of ``buf[0]``: batch positions and error positions
    are file positions. Raises TruncatedError for a partial final entry (at its start),
    CorruptRecordError for a size field < 14, a v2 size < 61, an unknown magic or a zero-filled
    tail (offset 0 and size 0, as preallocated or crashed files have), and with ``verify_crc``
    whatever ``ensure_valid()`` raises.
    """
    mv = _byte_view(buf)
    limit = len(mv) if end is None else min(end, len(mv))
    pos = start
    unpack_head = LOG_ENTRY_HEAD.unpack_from
    unpack_header = HEADER.unpack_from
    while pos < limit:
        if walk_v2 is not None:  # whole v2 batches, a chunk at a time, made in C
            chunk, next_pos = walk_v2(mv, pos, limit, source, base_position, _WALK_CHUNK)
            if chunk:
                for batch in chunk:
                    if verify_crc:
                        batch.ensure_valid()
                    yield batch
                pos = next_pos
                continue
        remaining = limit - pos
        where = base_position + pos
        if remaining < LOG_OVERHEAD:
            raise TruncatedError(
                "a 12-byte entry header (offset, size)",
                source=source,
                position=where,
                found=f"{remaining} bytes at the end",
            )
        offset, size = unpack_head(mv, pos)
        if size < MIN_ENTRY_SIZE:
            if offset == 0 and size == 0:
                raise CorruptRecordError(
                    "a batch (offset, size >= 14)",
                    source=source,
                    position=where,
                    found=zero_run(mv[pos:limit], remaining),
                )
            raise CorruptRecordError(
                f"an entry size >= {MIN_ENTRY_SIZE} (minimum record overhead)",
                source=source,
                position=where + 8,
                found=f"size {size}",
            )
        if size > remaining - LOG_OVERHEAD:
            raise TruncatedError(
                f"an entry of {size + LOG_OVERHEAD} bytes",
                source=source,
                position=where,
                found=f"{remaining} bytes to the end",
            )
        magic = mv[pos + MAGIC_POSITION]
        if magic == MAGIC_VALUE_V2:
            if size < _V2_MIN_SIZE:
                check_v2_size(size, source=source, position=where)
            batch: Batch = RecordBatchV2(
                mv, pos, unpack_header(mv, pos), source=source, base_position=base_position
            )
        elif magic < MAGIC_VALUE_V2:
            batch = _legacy_entry(mv, pos, source, base_position)
        else:
            # ByteBufferLogInputStream: "Invalid magic found in record"
            raise CorruptRecordError(
                "magic 0, 1 or 2", source=source, position=where + MAGIC_POSITION, found=f"magic {magic}"
            )
        if verify_crc:
            batch.ensure_valid()
        yield batch
        pos += size + LOG_OVERHEAD


_legacy: Any = None  # logdoctor.formats.legacy, imported by the first message set read


def _legacy_entry(mv: memoryview, pos: int, source: str | None, base_position: int) -> Batch:
    global _legacy
    if _legacy is None:  # imported at the first message set, then kept (an import per message: 5 us each)
        from logdoctor.formats import legacy as _legacy
    try:
        batch = _legacy.parse_legacy_entry(mv[: pos + entry_length(mv, pos)], pos, source=source)
    except FormatError as exc:
        if base_position and exc.position is not None:
            exc.position += base_position
            exc.args = (exc._render(),)
        raise
    if base_position:
        batch.position += base_position
    return batch


@dataclass(slots=True)
class ScanResult:
    """What a walk found: the good batches, the bytes they cover, and what stopped it."""

    batches: list[Batch] = field(default_factory=list)
    valid_bytes: int = 0  # from ``start`` to the end of the last good batch
    error: FormatError | None = None

    @property
    def valid_end(self) -> int:
        """File position just after the last good batch (0 when there is none)."""
        return self.batches[-1].position + self.batches[-1].size if self.batches else 0


def scan_batches(
    buf,
    *,
    source: str | None = None,
    verify_crc: bool = True,
    start: int = 0,
    end: int | None = None,
    base_position: int = 0,
) -> ScanResult:
    """Walk like iter_batches but never raise on bad bytes: stop at the first problem and say it."""
    result = ScanResult()
    valid = 0
    try:
        for batch in iter_batches(
            buf, source=source, start=start, end=end, verify_crc=verify_crc, base_position=base_position
        ):
            result.batches.append(batch)
            valid += batch.size
    except FormatError as exc:
        result.error = exc
    result.valid_bytes = valid
    return result


@dataclass(frozen=True, slots=True)
class CrcSkip:
    """A batch left out alone: its CRC does not match but the framing goes on intact after it."""

    position: int  # file position of the batch
    size: int  # its bytes, log overhead included
    base_offset: int | None
    last_offset: int
    stored_crc: int
    computed_crc: int

    def describe(self, source: str | None = None) -> str:
        where = f"{source}: " if source else ""
        first = "?" if self.base_offset is None else str(self.base_offset)
        return (
            f"{where}batch at position {self.position} (offsets {first}..{self.last_offset}, "
            f"{self.size} bytes): "
            f"CRC mismatch: stored {self.stored_crc:#010x}, computed {self.computed_crc:#010x}"
        )


def skip_crc_mismatches(batches: Iterator[Batch], skipped: list[CrcSkip]) -> Iterator[Batch]:
    """The CRC-valid batches of ``batches`` (a walk made with ``verify_crc=False``), leaving out alone each
    batch whose CRC does not match where the framing is intact after it: the walk reads the next entry
    (or ends cleanly) right after it. Those are appended to ``skipped``. Where the framing breaks right
    after a CRC-bad batch, the batch is where the damage starts: its CrcMismatchError is raised, as a
    walk with ``verify_crc=True`` raises it (the valid bytes end before it). Other errors pass through.

    A flipped byte inside a batch changes its CRC, not its size field: the next batch is where the size
    says, and its records are intact. The broker's recovery (``LogSegment.recover``) truncates at the first
    bad batch because it must keep the log's offsets contiguous; a reader that names what it left out can
    go on (issue 31)."""
    suspect: tuple[Batch, CrcMismatchError] | None = None
    try:
        for batch in batches:
            if suspect is not None:
                skipped.append(_crc_skip(*suspect))
                suspect = None
            try:
                batch.ensure_valid()
            except CrcMismatchError as exc:
                suspect = (batch, exc)
                continue
            yield batch
    except FormatError as exc:
        if suspect is not None:
            raise suspect[1] from exc
        raise
    if suspect is not None:
        skipped.append(_crc_skip(*suspect))


def _crc_skip(batch: Batch, exc: CrcMismatchError) -> CrcSkip:
    return CrcSkip(
        position=int(batch.position),
        size=int(batch.size),
        base_offset=None if batch.base_offset is None else int(batch.base_offset),
        last_offset=int(batch.last_offset),
        stored_crc=int(exc.stored),
        computed_crc=int(exc.computed),
    )


def consecutive_offsets_error(
    buf, base_offset: int, *, source: str | None = None, base_position: int = 0
) -> CorruptRecordError | None:
    """The first batch of ``buf`` (whole v2 batches, as a walk framed them) whose offsets do not follow on:
    the first must start at ``base_offset`` (the segment's, from its file name), each next one right after
    the previous batch's last offset, and each batch's record count must fit its offset range
    (:meth:`RecordBatchV2.check_count`, the header part). None when every batch follows on.

    Kafka assigns a log's offsets one after another (LogValidator: "Inconsistent batch offset range and
    count"; UnifiedLog.append: "Out of order offsets found"), and a topic with remote storage is never
    compacted (UnifiedLog.isRemoteLogEnabled), so a segment of the remote tier holds every offset of its
    range once, in order. What this checks is outside each batch's CRC (base offset) or inside it (count,
    last offset delta): a segment that fails it would give a log whose offsets go backwards or skip
    (issue 48: restore wrote one). Reads the batch headers only."""
    expected = base_offset
    for batch in iter_batches(buf, source=source, base_position=base_position):
        if not isinstance(batch, RecordBatchV2):  # a v0/v1 entry: its first offset needs its records
            expected = batch.last_offset + 1
            continue
        if batch.base_offset != expected:
            return CorruptRecordError(
                f"a batch starting at offset {expected} (right after the previous batch)"
                if expected != base_offset
                else f"a first batch starting at the segment's base offset {base_offset}",
                source=source,
                position=batch.position,
                found=f"base offset {batch.base_offset} (offsets {batch.base_offset}..{batch.last_offset})",
            )
        if batch.partition_leader_epoch < -1:  # RecordBatchV2.check_count's rule
            return CorruptRecordError(
                "a partition leader epoch >= 0, or -1 (RecordBatch.NO_PARTITION_LEADER_EPOCH)",
                source=source,
                position=batch.position + 12,
                found=f"{batch.partition_leader_epoch} (offsets {batch.base_offset}..{batch.last_offset})",
            )
        count, delta = batch.record_count, batch.last_offset_delta
        if count != delta + 1:
            return CorruptRecordError(
                "a record count that agrees with the batch's offset range "
                "(Kafka's LogValidator: Inconsistent batch offset range and count)",
                source=source,
                position=batch.position,
                found=f"record count {count}, offsets {batch.base_offset}..{batch.last_offset}",
            )
        expected = batch.last_offset + 1
    return None

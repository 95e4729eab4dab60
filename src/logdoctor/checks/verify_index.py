"""Verify a segment's ``.index`` and ``.timeindex`` against its ``.log``: every entry, every kind of mismatch.

The anchor is Kafka's ``DumpLogSegments --verify-index-only`` (K:core/src/main/scala/kafka/tools/
DumpLogSegments.scala, ``dumpIndex`` / ``dumpTimeIndex``), which reports:

- offset index "Mismatches": the last offset of the first batch at the entry's position differs
  from the entry's offset;
- time index "indexed offsets are not found in the log": the first batch whose last offset is >=
  the entry's offset does not end exactly at it (or there is none);
- time index "timestamp mismatch": the entry's timestamp differs from that batch's max timestamp;
- time index "out of order timestamp": an entry's timestamp is not above the previous one;
- and, for the log itself, "Found N invalid bytes at the end".

Both tools stop at the first slot ``i > 0`` whose offset equals the base offset (the zero tail of a
preallocated index, see :func:`logdoctor.formats.index.real_entry_count`).

Where we differ from DumpLogSegments, on purpose, so that valid broker-written indexes are not
called broken:

- first-offset entries (Kafka up to 1.1): before KAFKA-6264 (2.0) an offset-index entry held the
  FIRST offset of the batch at its position, or of an append's first batch, the message's offset
  for a v0/v1 message set (K:core/src/main/scala/kafka/log/LogSegment.scala at 1.1.1, ``append``:
  ``offsetIndex.append(firstOffset, physicalPosition)``; ``recover``: ``batch.baseOffset``). Any
  offset of the batch at the position (after the previous batch's last offset, up to its own) is
  accepted: a lookup through it (the last entry <= the target, then the log read forward from its
  position) finds every offset from the entry's on, as :mod:`logdoctor.checks.index_cross_check`
  (``scan --deep``) has it. An entry at or before the previous batch's last offset is a mismatch.

- append chunks (KAFKA-806): before that fix (Feb 2025) a live append of several batches in one
  call added ONE offset-index entry: the last offset of the whole chunk at the position of its
  first batch (K:storage/.../log/LogSegment.java ``append``). DumpLogSegments reports such an
  entry as a mismatch. We accept it when the batches from the entry's position reach exactly the
  entry's offset before the next entry's position (the chunk is contiguous and ends at a batch
  boundary); the entry is then annotated, not reported.
- record offsets in the time index: brokers of the 2.x era (observed in real 2.1-2.7 logs, see
  KAFKA-16310 on ``offsetOfMaxTimestamp`` being a record offset rather than the batch's last
  offset) wrote the offset of the record carrying the max timestamp, which can be inside a batch.
  DumpLogSegments reports it as "not found"; we accept any offset that lies inside the batch.

And we report more: entries whose position is past the log's end or inside a batch, entries out of
order in the offset index, offsets before the segment's base offset, a partial trailing slot,
non-zero bytes after the zero tail, and each era's sanity-check verdict.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from logdoctor.checks.catalog import FindingCode  # the dump's codes live in the one catalog
from logdoctor.errors import FormatError
from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    IndexKind,
    SanityEra,
    offset_index_array,
    real_entry_count,
    sanity_check,
    time_index_array,
    zero_tail_is_clean,
)
from logdoctor.formats.lazy_numpy import np
from logdoctor.formats.record_types import NO_TIMESTAMP
from logdoctor.formats.records import Batch
from logdoctor.logdir.reader import LogReader, iter_batches_from

from .index_findings import Finding, Severity

__all__ = [
    "Finding",
    "FindingCode",
    "LogLayout",
    "Severity",
    "scan_log_layout",
    "verify_offset_index",
    "verify_time_index",
]


@dataclass(slots=True)
class LogLayout:
    """Batch boundaries of a log, as parallel lists in file order (no records decoded)."""

    positions: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    last_offsets: list[int] = field(default_factory=list)
    max_timestamps: list[int] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)
    valid_bytes: int = 0
    size: int = 0
    error: FormatError | None = None

    def describe(self, i: int) -> dict[str, Any]:
        b = self.batches[i]
        return {
            "position": b.position,
            "base_offset": b.base_offset,
            "last_offset": b.last_offset,
            "max_timestamp": b.max_timestamp,
        }


def scan_log_layout(reader: LogReader) -> LogLayout:
    """Walk every batch header of the log (stops at the first bad batch, keeps what came before)."""
    layout = LogLayout(size=reader.size)
    try:
        for b in iter_batches_from(reader, 0, window=None):
            layout.positions.append(b.position)
            layout.ends.append(b.position + b.size)
            layout.last_offsets.append(b.last_offset)
            layout.max_timestamps.append(b.max_timestamp)
            layout.batches.append(b)
            layout.valid_bytes = b.position + b.size
    except FormatError as e:
        layout.error = e
    # The lookups bisect last_offsets: offsets only grow in a valid log. Where they do not (reported by the
    # log dump, not here), DumpLogSegments' walk from the offset index's position may find another batch.
    return layout


def _file_findings(
    kind: IndexKind,
    data: bytes | memoryview,
    base_offset: int,
    file: str | None,
    n_real: int,
    preallocated: bool,
) -> list[Finding]:
    """What the whole file shows: a partial last entry, non-zero bytes after the zero tail, and the
    broker's sanity check (2.0 on) of the file, or of its ``n_real`` entries when it is the active
    segment's preallocated working copy (``preallocated``: checks.preallocated_index, the rule scan and dump
    share)."""
    entry_size = OFFSET_ENTRY_SIZE if kind is IndexKind.OFFSET else TIME_ENTRY_SIZE
    out: list[Finding] = []
    rest = len(data) % entry_size
    if rest:
        out.append(
            Finding(
                FindingCode.INDEX_PARTIAL_ENTRY,
                Severity.ERROR,
                file,
                f"{rest} trailing bytes after the last whole {entry_size}-byte entry "
                f"(file length {len(data)})",
                log={"position": len(data) - rest},
            )
        )
    whole = len(data) - rest
    if n_real * entry_size < whole and not zero_tail_is_clean(memoryview(data)[:whole], entry_size):
        tail = np.frombuffer(data, dtype=np.uint8, count=whole)[n_real * entry_size :]
        first = int(np.flatnonzero(tail)[0]) + n_real * entry_size
        out.append(
            Finding(
                FindingCode.INDEX_GARBAGE_AFTER_ZERO_SLOT,
                Severity.WARNING,
                file,
                f"slot {n_real} is a zero slot (the end of the entries for Kafka) but non-zero bytes follow "
                f"at byte {first}",
                slot=n_real,
            )
        )
    verdict = sanity_check(
        kind,
        data[: n_real * entry_size] if preallocated else data,
        base_offset,
        SanityEra.KAFKA_2_0,
        source=file,
    )
    if not verdict.passed:
        message = f"sanity check fails ({verdict.exception}): {verdict.message}"
        out.append(Finding(FindingCode.INDEX_SANITY_CHECK_FAILED, Severity.ERROR, file, message))
    return out


def verify_offset_index(
    data: bytes | memoryview,
    base_offset: int,
    layout: LogLayout,
    *,
    file: str | None = None,
    annotations: dict[int, dict[str, Any]] | None = None,
    preallocated: bool = False,
) -> list[Finding]:
    """Check every real entry of an offset index against the log's batches (``preallocated``: the active
    segment's preallocated working copy, whose sanity is that of its entries).

    ``annotations`` (if given) receives, per slot, what the log holds for entries that are valid
    but not one-batch entries (pre-KAFKA-806 append chunks).
    """
    findings: list[Finding] = []
    n = real_entry_count(data, OFFSET_ENTRY_SIZE)
    arr = offset_index_array(data, strict=False)[:n]
    rel = arr["relative_offset"].astype(np.int64).tolist()
    pos = arr["position"].astype(np.int64).tolist()
    log_end_offset = layout.last_offsets[-1] if layout.last_offsets else None
    prev_off: int | None = None
    prev_pos: int | None = None
    for i in range(n):
        offset, position = base_offset + rel[i], pos[i]
        entry = {"offset": offset, "position": position}

        def add(
            code: FindingCode, message: str, log: dict[str, Any] | None = None, *, _i=i, _e=entry
        ) -> None:
            findings.append(Finding(code, Severity.ERROR, file, message, _i, _e, log))

        if prev_off is not None and (offset <= prev_off or position <= prev_pos):
            add(
                FindingCode.INDEX_OUT_OF_ORDER,
                f"entry ({offset}, {position}) does not follow the previous entry ({prev_off}, {prev_pos}): "
                "offsets and positions must both increase",
                {"previous_offset": prev_off, "previous_position": prev_pos},
            )
        prev_off, prev_pos = offset, position
        if offset < base_offset:
            add(
                FindingCode.INDEX_OFFSET_NOT_IN_LOG, f"offset {offset} is below the base offset {base_offset}"
            )
            continue
        if position < 0:
            # the entry's position is a signed 32-bit int (K:storage/src/main/java/org/apache/kafka/storage/
            # internals/log/OffsetIndex.java, relative offset then physical position): no batch is there
            add(
                FindingCode.INDEX_POSITION_NEGATIVE,
                f"position {position} is negative: before the log's first byte, no batch starts there",
                {"valid_bytes": layout.valid_bytes, "size": layout.size},
            )
            continue
        if position >= layout.valid_bytes:
            where = "log size" if layout.error is None else "end of the valid batches"
            add(
                FindingCode.INDEX_POSITION_BEYOND_LOG,
                f"position {position} is at or past the {where} ({layout.valid_bytes})",
                {"valid_bytes": layout.valid_bytes, "size": layout.size},
            )
            continue
        j = bisect.bisect_left(layout.positions, position)
        if j == len(layout.positions) or layout.positions[j] != position:
            k = bisect.bisect_right(layout.positions, position) - 1
            add(
                FindingCode.INDEX_POSITION_NOT_BATCH_START,
                f"position {position} is inside the batch at {layout.positions[k]}, not at a batch start",
                layout.describe(k),
            )
            continue
        first_last = layout.last_offsets[j]
        if first_last == offset:
            continue
        if (layout.last_offsets[j - 1] if j > 0 else base_offset - 1) < offset < first_last:
            continue  # a first-offset entry (up to Kafka 1.1): see the module doc
        if log_end_offset is not None and offset > log_end_offset:
            add(
                FindingCode.INDEX_OFFSET_NOT_IN_LOG,
                f"offset {offset} is past the log's last offset {log_end_offset} "
                f"(index offset {offset}, log offset {first_last})",
                layout.describe(j),
            )
            continue
        if first_last < offset:
            # A pre-KAFKA-806 append chunk? The batches from here must end exactly at `offset`
            # before the next entry's position.
            next_pos = pos[i + 1] if i + 1 < n else None
            m = j
            while (
                m + 1 < len(layout.positions)
                and layout.last_offsets[m] < offset
                and (next_pos is None or layout.ends[m] < next_pos)
            ):
                m += 1
            if layout.last_offsets[m] == offset and (next_pos is None or layout.ends[m] <= next_pos):
                if annotations is not None:
                    annotations[i] = {
                        "append_chunk_batches": m - j + 1,
                        "first_batch_last_offset": first_last,
                    }
                continue
        add(
            FindingCode.INDEX_OFFSET_MISMATCH,
            f"index offset {offset}, log offset {first_last}: the batch at position {position} holds "
            f"{layout.batches[j].base_offset}..{first_last}",
            layout.describe(j),
        )
    return findings + _file_findings(IndexKind.OFFSET, data, base_offset, file, n, preallocated)


def verify_time_index(
    data: bytes | memoryview,
    base_offset: int,
    layout: LogLayout,
    *,
    file: str | None = None,
    preallocated: bool = False,
) -> list[Finding]:
    """Check every real entry of a time index against the log's batches (see the module doc;
    ``preallocated`` as for :func:`verify_offset_index`)."""
    findings: list[Finding] = []
    n = real_entry_count(data, TIME_ENTRY_SIZE)
    arr = time_index_array(data, strict=False)[:n]
    ts_list = arr["timestamp"].astype(np.int64).tolist()
    rel = arr["relative_offset"].astype(np.int64).tolist()
    prev_ts = NO_TIMESTAMP
    prev_off: int | None = None
    for i in range(n):
        ts, offset = ts_list[i], base_offset + rel[i]
        entry = {"timestamp": ts, "offset": offset}

        def add(
            code: FindingCode, message: str, log: dict[str, Any] | None = None, *, _i=i, _e=entry
        ) -> None:
            findings.append(Finding(code, Severity.ERROR, file, message, _i, _e, log))

        if i > 0 and prev_ts >= ts:
            add(
                FindingCode.TIME_INDEX_OUT_OF_ORDER,
                f"index timestamp {ts}, previously indexed timestamp {prev_ts}",
                {"previous_timestamp": prev_ts},
            )
        elif prev_off is not None and offset < prev_off:
            add(
                FindingCode.TIME_INDEX_OUT_OF_ORDER,
                f"index offset {offset} is below the previous entry's offset {prev_off}",
                {"previous_offset": prev_off},
            )
        prev_ts, prev_off = ts, offset
        k = bisect.bisect_left(layout.last_offsets, offset)
        if offset < base_offset or k == len(layout.last_offsets):
            add(
                FindingCode.TIME_INDEX_OFFSET_NOT_IN_LOG,
                f"indexed offset {offset}, found log offset -1 (no batch reaches it)",
                {"log_last_offset": layout.last_offsets[-1] if layout.last_offsets else None},
            )
            continue
        batch = layout.batches[k]
        if batch.last_offset != offset:
            try:
                inside = batch.base_offset <= offset
            except FormatError:
                inside = False
            if not inside:
                add(
                    FindingCode.TIME_INDEX_OFFSET_NOT_IN_LOG,
                    f"indexed offset {offset}, found log offset {batch.last_offset}: no batch holds it",
                    layout.describe(k),
                )
                continue
        log_ts = _batch_max_timestamp(batch)
        if log_ts != ts:
            add(
                FindingCode.TIME_INDEX_TIMESTAMP_MISMATCH,
                f"index timestamp {ts}, log timestamp {log_ts} "
                f"(batch {batch.base_offset}..{batch.last_offset})",
                layout.describe(k) | {"max_timestamp": log_ts},
            )
    return findings + _file_findings(IndexKind.TIME, data, base_offset, file, n, preallocated)


def _batch_max_timestamp(batch: Batch) -> int:
    """DumpLogSegments takes the max over the batch's records; for v2 that is the header's field."""
    if batch.magic >= 2:
        return batch.max_timestamp
    try:
        return max((r.timestamp for r in batch.records()), default=NO_TIMESTAMP)
    except FormatError:
        return batch.max_timestamp

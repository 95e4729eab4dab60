"""Rebuild a segment's ``.index``, ``.timeindex`` and ``.txnindex`` the way Kafka's recovery does.

K: storage/.../log/LogSegment.java (``recover``), ProducerStateManager.java / ProducerAppendInfo.java
(transactions, ``lastStableOffset``), LogLoader.java (``recoverSegment``), TimeIndex.java
(``maybeAppend``).

What ``LogSegment.recover`` does, and so what :func:`rebuild_indexes` does:

- Walk the batches from position 0; for each: ``ensureValid`` (CRC), offset in the index's int32
  range; if the batch's max timestamp is above the max so far, remember it with the batch's
  *last* offset (the "shallow" offset of the max timestamp).
- When ``validBytes - lastIndexEntry > index.interval.bytes`` (strictly greater), append
  (batch last offset, batch start position) to the offset index and
  ``maybeAppend(maxTimestampSoFar, its offset)`` to the time index, then ``lastIndexEntry =
  validBytes``. Both counters start at 0, so the first batch never gets an entry.
- ``TimeIndex.maybeAppend`` only appends when the timestamp is greater than the last entry's
  (initially -1), so all-v0 segments have an empty time index.
- v2 batches with a producer id update producer state (:mod:`logdoctor.formats.producer_state`,
  ``Origin.RECOVER``: a non-transactional batch inside an open transaction or a control record of
  an unknown type stops the walk there, where Kafka's load fails). An aborted transaction is
  appended to the txn index with ``lastStableOffset`` = the first offset of the earliest ongoing
  transaction of *another* producer (ProducerStateManager.lastStableOffset /
  findNextIncompleteTxn), or the marker offset + 1 when there is none. A marker for a producer
  without an ongoing transaction (an empty transaction) writes nothing. LogLoader rebuilds
  producer state up to the segment's base offset before recovering it; pass the transactions
  still open at that point as ``open_transactions`` (e.g. from the producer snapshot plus earlier segments, or
  :attr:`RebuiltIndexes.open_transactions` of the previous segment).
- The first invalid batch (bad CRC, size < 14, zero-filled tail, torn tail) stops the walk:
  ``valid_bytes`` is where recovery truncates the ``.log``. An invalid transaction marker
  (InvalidRecordException) stops it too, but *after* ``validBytes`` already counted that batch,
  exactly as in Kafka.
- At the end: ``timeIndex.maybeAppend(maxTimestampSoFar, offset, skipFullCheck=true)`` (the
  entry a normal close writes), then both indexes are trimmed to their entries.

Speed: runs of plain v2 batches (no control batch with a producer id, no non-transactional batch of
a producer with an open transaction, valid CRC, offsets in range) are handled by one C call,
``_speedups.recover_v2``, which applies exactly the steps above without making Batch objects; every
other entry (legacy v0/v1, transaction markers, anything invalid) goes through the Python walk below,
which is the reference and raises the error. :data:`FAST_LANE` is that C call, chosen once at import
(None without the C extension: the Python walk alone); tests/formats/test_recovery_twins.py checks
that both give the same bytes and errors.

Output size: **trimmed** (``trimToValidSize``), what ``recover`` leaves on disk. When the broker
then opens the last segment as the active one, LogLoader calls ``resizeIndexes(segment.index.bytes)``,
which regrows its two index files to 10 MiB of zero tail; use ``index.write_offset_index(...,
size=index.preallocated_size(8))`` for that form.

Broker-written indexes can legitimately differ from rebuilt ones. During live appends, before
KAFKA-806 (fixed Feb 2025), ``LogSegment.append`` added at most *one* entry per append call
(``largestOffset`` of the whole chunk, position of its first batch), and a chunk (a produce
request's records, a follower fetch, a cleaner pass) may hold many batches; the time index of
live appends before KIP-734-era changes could also point at a record's exact offset inside a
batch. Across broker restarts the live counter ``bytesSinceLastIndexEntry`` starts again at 0
(it lives in memory) and every clean close appends the max timestamp to the time index, so a
segment written over several sessions has other offset entries and extra time entries. Such an
index is still correct as long as each entry is consistent with the log: its
position is the start of a batch at or before the batch ending at its offset, and its timestamp
is a batch max timestamp seen up to that offset. Compare broker-written indexes with the log for
consistency, and compare rebuilt ones byte for byte only where the broker's index was itself
built by recovery or one batch per append.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import CorruptRecordError, FormatError
from logdoctor.formats import native
from logdoctor.formats.index import (
    AbortedTxn,
    OffsetEntry,
    TimeEntry,
    write_offset_index,
    write_time_index,
    write_txn_index,
)
from logdoctor.formats.producer_state import Origin, ProducerState
from logdoctor.formats.record_types import Batch
from logdoctor.formats.records import iter_batches

DEFAULT_INDEX_INTERVAL_BYTES = 4096
_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_V2_HEADER = 61  # RECORD_BATCH_OVERHEAD

FAST_LANE: Any = native.recover_v2
"""The C fast lane (``_speedups.recover_v2``), chosen once at import; None: the Python walk alone."""


@dataclass(slots=True)
class RebuiltIndexes:
    """The three index files recovery would write (trimmed), and what the walk found."""

    offset_index: bytes
    time_index: bytes
    txn_index: bytes
    valid_bytes: int
    error: FormatError | None
    offset_entries: list[OffsetEntry] = field(default_factory=list)
    time_entries: list[TimeEntry] = field(default_factory=list)
    aborted_txns: list[AbortedTxn] = field(default_factory=list)
    batch_count: int = 0
    max_timestamp: int = -1  # maxTimestampSoFar (-1: none)
    offset_of_max_timestamp: int = -1
    next_offset: int | None = None  # last offset of the last valid batch + 1
    open_transactions: dict[int, int] = field(default_factory=dict)  # producer id -> first offset
    leader_epochs: list[tuple[int, int]] = field(default_factory=list)  # (epoch, start offset) assigned

    @property
    def truncated(self) -> bool:
        return self.error is not None


def rebuild_indexes(
    log: bytes | bytearray | memoryview,
    base_offset: int,
    *,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    source: str | None = None,
    open_transactions: Mapping[int, int] | None = None,
    latest_leader_epoch: int | None = None,
    crc_checked_until: int = 0,
) -> RebuiltIndexes:
    """Rebuild the indexes of the segment ``log`` (a whole ``.log`` file) as ``LogSegment.recover``.

    ``open_transactions`` maps producer id -> first offset of its transaction still open at the
    segment's base offset; ``latest_leader_epoch`` is the leader-epoch cache's latest epoch before
    this segment. Never raises on bad bytes: the walk stops and ``error`` says why.

    ``crc_checked_until``: the bytes before this position are whole v2 batches whose CRC-32C was
    checked already (``checks.state.fast_lane.crc_checked_prefix`` checks them on every core): the C lane does
    not check them again. Pass only what that function returns; 0 (the default) checks every batch.

    Runs of plain v2 batches go through the C fast lane (``_speedups.recover_v2``: header, CRC and
    index arithmetic without Batch objects); everything else (legacy entries, transaction markers,
    bad bytes) through the Python walk, which is the reference, with byte-identical results (tests
    compare the two).
    """
    state = _Recovery(base_offset, index_interval_bytes, source, open_transactions, latest_leader_epoch)
    state.crc_checked_until = crc_checked_until
    error: FormatError | None = None
    try:
        if (
            FAST_LANE is None
            or not isinstance(base_offset, int)
            or not isinstance(index_interval_bytes, int)
            or not _INT64_MIN <= base_offset <= _INT64_MAX
        ):
            for batch in iter_batches(log, source=source, verify_crc=True):
                state.step(batch)
        else:
            _walk_fast(state, log)
    except FormatError as exc:
        error = exc
    return state.result(error)


class _Recovery:
    """The state of LogSegment.recover's walk over one segment (and the producer state it updates)."""

    __slots__ = (
        "aborted",
        "base_offset",
        "count",
        "crc_checked_until",
        "epochs",
        "interval",
        "last_index_entry",
        "last_time",
        "latest_epoch",
        "max_ts",
        "max_ts_offset",
        "next_offset",
        "offsets",
        "producers",
        "source",
        "times",
        "valid_bytes",
    )

    def __init__(
        self,
        base_offset: int,
        interval: int,
        source: str | None,
        open_transactions: Mapping[int, int] | None,
        latest_leader_epoch: int | None,
    ) -> None:
        self.base_offset = base_offset
        self.interval = interval
        self.source = source
        self.offsets: list[OffsetEntry] = []
        self.times: list[TimeEntry] = []
        self.aborted: list[AbortedTxn] = []
        self.epochs: list[tuple[int, int]] = []
        # the producer state recover updates (its open transactions, for the C lane too)
        self.producers = ProducerState(open_transactions)
        self.latest_epoch = latest_leader_epoch
        self.valid_bytes = 0
        self.last_index_entry = 0
        self.max_ts, self.max_ts_offset = -1, -1
        self.last_time = (-1, base_offset)  # TimeIndex.lastEntry after reset: (NO_TIMESTAMP, baseOffset)
        self.count = 0
        self.next_offset: int | None = None
        self.crc_checked_until = 0

    def time_maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp > self.last_time[0]:
            self.times.append(TimeEntry(timestamp, offset))
            self.last_time = (timestamp, offset)

    def step(self, batch: Batch) -> None:
        """One batch that passed ensureValid; raises FormatError where recover stops."""
        source = self.source
        last = batch.last_offset
        relative = last - self.base_offset
        if relative < 0 or relative > _INT32_MAX:
            # LogSegmentOffsetOverflowException: LogLoader splits the segment instead.
            raise CorruptRecordError(
                f"a last offset within int32 of the base offset {self.base_offset}",
                source=source,
                position=batch.position,
                found=f"offset {last}",
            )
        if batch.max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_offset = batch.max_timestamp, last
        if self.valid_bytes - self.last_index_entry > self.interval:
            offsets = self.offsets
            if offsets and last <= offsets[-1].offset:
                raise CorruptRecordError(
                    f"an offset above the last indexed offset {offsets[-1].offset}",
                    source=source,
                    position=batch.position,
                    found=f"offset {last}",
                )
            offsets.append(OffsetEntry(last, self.valid_bytes))
            self.time_maybe_append(self.max_ts, self.max_ts_offset)
            self.last_index_entry = self.valid_bytes
        self.valid_bytes += batch.size
        self.count += 1
        self.next_offset = last + 1
        if batch.magic >= 2:
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (self.latest_epoch is None or epoch > self.latest_epoch):
                self.epochs.append((epoch, batch.base_offset))
                self.latest_epoch = epoch
            completed = self.producers.append(batch, Origin.RECOVER, source=source)
            if completed is not None:
                # LogSegment.updateProducerState: the LSO after it goes into the index with an aborted one
                lso = self.producers.complete(completed)
                if completed.aborted:
                    txn = completed
                    self.aborted.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))

    def fast(self, buf: memoryview, pos: int, limit: int) -> int:
        """Run the C lane from ``pos``; returns where it stopped (an entry for the Python walk)."""
        latest = self.latest_epoch
        # the C lane compares an int32 epoch with it: clamp without changing any comparison
        latest_c = -1 if latest is None or latest < -1 else min(latest, _INT32_MAX)
        interval = min(max(self.interval, -1), 2**62)  # valid_bytes - last_index_entry is in 0..2**62
        n_epochs = len(self.epochs)
        (
            pos,
            self.valid_bytes,
            self.last_index_entry,
            self.max_ts,
            self.max_ts_offset,
            last_time_ts,
            count,
            last,
        ) = FAST_LANE(
            buf,
            pos,
            limit,
            self.base_offset,
            interval,
            self.valid_bytes,
            self.last_index_entry,
            self.max_ts,
            self.max_ts_offset,
            self.last_time[0],
            bool(self.offsets),
            self.offsets[-1].offset if self.offsets else 0,
            latest_c,
            self.producers.current,
            self.producers.ongoing,
            self.offsets,
            self.times,
            self.epochs,
            self.crc_checked_until,
        )
        if count:
            self.count += count
            self.next_offset = last + 1
            if len(self.epochs) > n_epochs:
                self.latest_epoch = self.epochs[-1][0]
            if last_time_ts != self.last_time[0]:
                self.last_time = (self.times[-1].timestamp, self.times[-1].offset)
        return pos

    def result(self, error: FormatError | None) -> RebuiltIndexes:
        self.time_maybe_append(self.max_ts, self.max_ts_offset)  # the final append of recover (skipFullCheck)
        return RebuiltIndexes(
            offset_index=write_offset_index(self.offsets, self.base_offset),
            time_index=write_time_index(self.times, self.base_offset),
            txn_index=write_txn_index(self.aborted),
            valid_bytes=self.valid_bytes,
            error=error,
            offset_entries=self.offsets,
            time_entries=self.times,
            aborted_txns=self.aborted,
            batch_count=self.count,
            max_timestamp=self.max_ts,
            offset_of_max_timestamp=self.max_ts_offset,
            next_offset=self.next_offset,
            open_transactions=dict(self.producers.current),
            leader_epochs=self.epochs,
        )


def _walk_fast(state: _Recovery, log: bytes | bytearray | memoryview) -> None:
    """Alternate the C lane (runs of plain v2 batches) and the Python walk (whatever stops it)."""
    mv = log if isinstance(log, memoryview) else memoryview(log)
    if mv.ndim != 1 or mv.format != "B":
        mv = mv.cast("B")
    limit = len(mv)
    pos = 0
    while pos < limit:
        pos = state.fast(mv, pos, limit)
        if pos >= limit:
            break
        # The entry at pos needs the Python walk. A whole v2 batch (what walk_v2 frames) is walked
        # alone, so that no Batch objects are made past it; anything else with the rest of the buffer
        # (same errors and positions), until a v2 batch the C lane might take again.
        end = None
        if limit - pos >= _V2_HEADER and mv[pos + 16] == 2:
            length = int.from_bytes(mv[pos + 8 : pos + 12], "big", signed=True)
            if _V2_HEADER - 12 <= length <= limit - pos - 12:
                end = pos + 12 + length
        for batch in iter_batches(mv, source=state.source, start=pos, end=end, verify_crc=True):
            state.step(batch)
            pos = batch.position + batch.size
            if batch.magic >= 2 and not batch.is_control:
                break
        else:
            if end is None:
                return


__all__ = ["DEFAULT_INDEX_INTERVAL_BYTES", "RebuiltIndexes", "rebuild_indexes"]

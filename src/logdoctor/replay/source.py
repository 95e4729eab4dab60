"""The records a replay sends, read from log dirs without Spark: every record once, in offset order, as a
consumer of the read options' isolation level reads them.

The same logdir-level read path every output plans with (``export``'s executors read a slice of a segment
the same way, ``logdoctor.spark.sources.slice_reader``): the read plan
(:func:`logdoctor.logdir.read_plan.plan_read`: discovery, the remote tier, the topics, what is not read
once), the outcome of every transaction from its markers
(:func:`logdoctor.logdir.transactions.partition_transactions` and ``segment_views``: ``read_committed``
by default, so the records of aborted and open transactions are left out, and everything at or above the
last stable offset), each segment's batches walked once as every reader walks them
(:class:`logdoctor.logdir.batch_walk.BatchAdmission`, :class:`logdoctor.logdir.read_plan.OffsetOrder`,
CRC-bad batches left out alone and named: ``skip_crc_mismatches``). Control records are never replayed.
A partition is read one batch at a time: memory is bounded by the largest batch, never by the input.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from logdoctor.errors import FormatError
from logdoctor.logdir.batch_walk import SKIP, BatchAdmission, resolve_range
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.logdir.refs import PartitionRef, SegmentRef
from logdoctor.logdir.transactions import (
    PartitionTransactions,
    SegmentTransactions,
    partition_transactions,
    segment_views,
)

__all__ = ["BATCH_OVERHEAD", "PartitionSource", "SourceRecord"]

#: the bytes of a v2 batch's header (K:clients/.../record/DefaultRecordBatch.java RECORD_BATCH_OVERHEAD):
#: a batch holding one record alone is this plus the record (what max.message.bytes is compared with)
BATCH_OVERHEAD = 61


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One record to replay, as the source's consumer reads it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    #: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)
    timestamp_type: int = 0

    @property
    def size(self) -> int:
        """Key, value and headers' bytes (what the bytes of a replay count)."""
        n = len(self.key or b"") + len(self.value or b"")
        for k, v in self.headers:
            n += len(k.encode()) + len(v or b"")
        return n

    @property
    def batch_bytes(self) -> int:
        """The bytes of an uncompressed v2 batch holding this record alone, an upper bound of its record's
        varints included (K:clients/.../record/DefaultRecord.java sizeInBytes): what the target broker
        compares with ``max.message.bytes`` when the producer sends it alone and uncompressed."""
        n = 1 + 10 + 5 + 5 + 5 + len(self.key or b"") + 5 + len(self.value or b"") + 5
        for k, v in self.headers:
            n += 5 + len(k.encode()) + 5 + len(v or b"")
        return BATCH_OVERHEAD + 5 + n


@dataclass
class PartitionSource:
    """One source partition's records to replay (see the module doc). ``problems``: what was not read once
    (damage, a CRC-bad batch, a batch going back), one line each, filled as :meth:`records` reads."""

    ref: PartitionRef
    opts: ReadOptions
    start: int | None = None
    end: int | None = None
    txns: PartitionTransactions | None = None
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, ref: PartitionRef, opts: ReadOptions) -> PartitionSource:
        rng = resolve_range(ref, opts)
        start, end = rng.start_offset, rng.end_offset
        txns = partition_transactions(ref, start=start, end=end) if ref.segments else None
        return cls(ref, opts, start, end, txns)

    def records(self, from_offset: int | None = None) -> Iterator[SourceRecord]:
        """Every record to replay at or after ``from_offset`` (None: from the range's start), in offset
        order, each offset at most once."""
        ref = self.ref
        if not ref.segments or self.txns is None:
            return
        self.problems.clear()
        start = self.start
        if from_offset is not None:
            start = from_offset if start is None else max(start, from_offset)
        views = segment_views(
            self.txns, ref.segments, self.opts.isolation_level, self.opts.upto_high_watermark
        )
        last = -1  # the last offset yielded: never one twice, across segments too
        for seg, view in zip(ref.segments, views, strict=True):
            end = self.end
            if seg.remote is not None:  # up to its own last offset, and where the local log takes over
                caps = [c for c in (seg.remote.local_from, end) if c is not None]
                if seg.remote.end_offset is not None:
                    caps.append(seg.remote.end_offset + 1)
                end = min(caps) if caps else None
            if start is not None and seg.next_base_offset is not None and seg.next_base_offset <= start:
                continue
            if end is not None and seg.base_offset >= end:
                continue
            for rec in self._segment(seg, view, start, end):
                if rec.offset > last:
                    last = rec.offset
                    yield rec

    def _segment(
        self, seg: SegmentRef, view: SegmentTransactions, start: int | None, end: int | None
    ) -> Iterator[SourceRecord]:
        from logdoctor.formats.records import CrcSkip, skip_crc_mismatches
        from logdoctor.logdir.seek import seek_offset, segment_batches

        read_from = seek_offset(seg, start) if start is not None and start > seg.base_offset else 0
        walk = segment_batches(seg, read_from, verify_crc=False)
        skipped: list[CrcSkip] = []
        batches = skip_crc_mismatches(walk, skipped) if self.opts.verify_crc else walk
        # each offset once, the range, the isolation level; control records are never replayed
        admission = BatchAdmission(seg, start, end, view, False, skipped)
        verdict = admission.verdict
        stable_end = view.stable_end
        try:
            for batch in batches:
                v = verdict(batch)
                if v:
                    if v == SKIP:
                        continue
                    break  # past the range's end, or at or above the LSO (or the high watermark)
                ts_type = int(batch.timestamp_type)
                try:
                    for r in batch.records():
                        if start is not None and r.offset < start:
                            continue
                        if (end is not None and r.offset >= end) or (
                            stable_end is not None and r.offset >= stable_end
                        ):
                            break
                        yield SourceRecord(
                            r.offset,
                            r.timestamp,
                            None if r.key is None else bytes(r.key),
                            None if r.value is None else bytes(r.value),
                            tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers),
                            ts_type,
                        )
                except FormatError as exc:
                    self.problems.append(
                        f"{seg.path}@{batch.position}: offsets {batch.base_offset}-{batch.last_offset} not "
                        f"replayed: its records do not decode: {exc}"
                    )
        except FormatError as exc:
            self.problems.append(f"{seg.path}: its batches stop here: {exc}")
        except OSError as exc:
            if seg.ranged:
                raise  # a remote read failed: never lose records silently
            self.problems.append(f"{seg.path}: not read: {exc}")
        finally:
            batches.close()
            walk.close()
        self.problems.extend(c.describe(seg.path) + ": not replayed" for c in skipped)
        self.problems.extend(admission.order.problems)


def single_replicas(
    refs: Sequence[PartitionRef],
) -> tuple[list[PartitionRef], dict[tuple[str, int], list[str]]]:
    """``refs`` with each (topic, partition) once, and those found in several log dirs (a replay writes a
    partition once: which copy is the operator's choice)."""
    seen: dict[tuple[str, int], list[PartitionRef]] = {}
    for ref in refs:
        seen.setdefault((ref.topic, ref.partition), []).append(ref)
    out = [v[0] for v in seen.values() if len(v) == 1]
    several = {k: sorted({r.log_dir for r in v}) for k, v in seen.items() if len(v) > 1}
    return out, several

"""One walk of a segment's batches as every reader walks them: the offset range the options ask for, and per
batch whether it is read.

Every reader of records without a consumer of its own (``export``'s executors,
``logdoctor.spark.sources.slice_reader.read_slice``; ``replay``'s source,
``logdoctor.replay.source.PartitionSource``) resolves its range with :func:`resolve_range` and asks a
:class:`BatchAdmission` about each batch it walks, so that the rules are written once:

- the range follows Spark's Kafka source: ``startingOffsets`` is inclusive, ``endingOffsets`` exclusive,
  -2 is earliest and -1 latest; a timestamp T stands for the first offset whose record timestamp is >= T
  (Kafka's ListOffsets by timestamp: :func:`logdoctor.logdir.seek.offset_for_timestamp`);
- each offset is read once (:class:`logdoctor.logdir.read_plan.OffsetOrder`; a batch left out alone for its
  CRC, ``logdoctor.formats.records.skip_crc_mismatches``, is named to it first: no gap);
- a batch wholly below the range's start is skipped, one starting at or past its end ends the walk;
- a batch at or above the last stable offset (or the high watermark) is never decoded
  (:class:`logdoctor.logdir.transactions.SegmentTransactions`); nor a control batch unless asked for, nor
  under ``read_committed`` an aborted transaction's batch, nor in a cut (:mod:`logdoctor.logdir.cut`) a
  transaction still open at its moment or a non-transactional data batch whose max timestamp is past it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.logdir.read_options import EARLIEST, LATEST, ReadOptions
from logdoctor.logdir.read_plan import OffsetOrder
from logdoctor.logdir.refs import PartitionRef, SegmentRef
from logdoctor.logdir.seek import offset_for_timestamp
from logdoctor.logdir.transactions import ABORTED_CODE, READ_COMMITTED, SegmentTransactions

__all__ = ["END", "SKIP", "TAKE", "UNSTABLE", "BatchAdmission", "PartitionRange", "resolve_range"]


@dataclass(frozen=True, slots=True)
class PartitionRange:
    start_offset: int | None  # inclusive
    end_offset: int | None  # exclusive


def resolve_range(ref: PartitionRef, opts: ReadOptions) -> PartitionRange:
    """[start, end) of ``ref`` the options ask for (None: unbounded), see the module doc."""
    segs = ref.segments
    start: int | None = None
    end: int | None = None
    s_ts = opts.starting_timestamps.get(ref.topic, ref.partition)
    if s_ts is not None:
        found = offset_for_timestamp(segs, s_ts)
        start = found if found is not None else _log_end_bound(segs)
    else:
        s = opts.starting_offsets.get(ref.topic, ref.partition)
        if s is not None and s >= 0:
            start = s
        elif s == LATEST:
            start = _log_end_bound(segs)
    e_ts = opts.ending_timestamps.get(ref.topic, ref.partition)
    if e_ts is not None:
        end = offset_for_timestamp(segs, e_ts)
    else:
        e = opts.ending_offsets.get(ref.topic, ref.partition)
        if e is not None and e >= 0:
            end = e
        elif e == EARLIEST:
            end = segs[0].base_offset if segs else 0
    return PartitionRange(start, end)


def _log_end_bound(segs: Sequence[SegmentRef]) -> int:
    """An offset past every record (used for 'latest' as a start): no row will be read."""
    return 2**63 - 1 if segs else 0


#: :meth:`BatchAdmission.verdict`: read the batch
TAKE = 0
#: leave the batch out and go on to the next one
SKIP = 1
#: the batch starts at or past the range's end: nothing after it is read (named to the OffsetOrder)
END = 2
#: the batch starts at or above the last stable offset (or the high watermark): never decoded; what comes
#: after it is not either, the caller stops or walks on (for its own bookkeeping) as it needs
UNSTABLE = 3


class BatchAdmission:
    """Whether each batch of one segment's walk is read (see the module doc): :meth:`verdict` per batch, in
    the order of the walk. ``crc_skipped``: the list ``skip_crc_mismatches`` fills as the walk goes (the
    batches left out alone before each one are named to :attr:`order` first); ``txn``: the segment's view
    of the partition's transactions (None: no transactions to mind)."""

    __slots__ = (
        "_crc",
        "_cut_at",
        "_drop_aborted",
        "_end",
        "_include_control",
        "_stable_end",
        "_start",
        "_told",
        "_txn",
        "order",
    )

    def __init__(
        self,
        seg: SegmentRef,
        start: int | None,
        end: int | None,
        txn: SegmentTransactions | None,
        include_control: bool,
        crc_skipped: Sequence[Any] = (),
    ) -> None:
        self.order = OffsetOrder(seg)
        self._start = start
        self._end = end
        self._txn = txn
        self._stable_end = None if txn is None else txn.stable_end
        self._cut_at = None if txn is None else txn.cut_at
        self._drop_aborted = txn is not None and txn.isolation == READ_COMMITTED and bool(txn.spans)
        self._include_control = include_control
        self._crc = crc_skipped
        self._told = 0

    def verdict(self, batch: Any) -> int:
        """:data:`TAKE`, :data:`SKIP`, :data:`END` or :data:`UNSTABLE` for the next batch of the walk."""
        end = self._end
        if end is not None and batch.last_offset >= end and batch.base_offset >= end:
            self.order.beyond(batch)
            return END
        crc = self._crc
        if self._told < len(crc):  # batches left out alone before this one: named, no gap
            order = self.order
            told = self._told
            while told < len(crc):
                order.passed(crc[told].last_offset)
                told += 1
            self._told = told
        if not self.order.admit(batch):
            return SKIP
        start = self._start
        if start is not None and batch.last_offset < start:
            return SKIP
        stable_end = self._stable_end
        if stable_end is not None and batch.base_offset >= stable_end:
            return UNSTABLE
        if batch.is_control:
            return TAKE if self._include_control else SKIP
        if not batch.is_transactional:
            cut_at = self._cut_at
            return SKIP if cut_at is not None and batch.max_timestamp > cut_at else TAKE
        if self._drop_aborted and self._txn.result_of(batch.producer_id, batch.base_offset) >= ABORTED_CODE:  # type: ignore[union-attr]
            return SKIP  # read_committed: an aborted transaction's batch is never decoded (a cut: nor open)
        return TAKE

"""What a consumer would have read: the outcome of every transaction of a partition, from its markers.

One walk of a partition's batch headers, remote tier first, then the log dir's segments, each offset once
(as the readers read them), finds every transaction and how it ended. It reads what the readers read:
damage that breaks a segment's framing ends that segment's batches and the walk goes on at the next
segment (:attr:`PartitionTransactions.error` names the first such damage), as the rows do, so that every
intact marker still decides its transaction. Its rules are Kafka's producer state's, the one model of
:mod:`logdoctor.formats.producer_state` appended with ``Origin.READ`` (a batch whose CRC fails neither opens
nor ends a transaction, as every reader leaves it out; an unknown control type ends nothing):

- a transactional data batch of a producer with no transaction open starts one at its base offset
  (``appendDataBatch``, ``currentTxnFirstOffset``); a data batch without the transactional bit starts none;
- the next control batch of that producer ends it, whether or not its transactional bit is set
  (``append`` asks ``batch.isControlBatch()`` alone), at the control batch's base offset, from its first
  record as the batch's iterator gives it: ``committed`` for a COMMIT marker, ``aborted`` for an ABORT
  marker, whatever the marker's producer epoch. A control batch with no record ends nothing (``append``:
  "an empty control batch means the entire transaction has been cleaned from the log");
- a marker whose header Kafka's validation refuses (its record count does not fit its offset range, e.g.
  a ``lastOffsetDelta`` of -1: K:storage/.../internals/log/LogValidator.java ``validateBatch``;
  :meth:`logdoctor.formats.batch_v2.RecordBatchV2.check_count`) still decides its transaction as the
  producer state does, and is named (:attr:`PartitionTransactions.invalid_markers`): every reader that
  says what it read names it (``export``: a skipped range and exit 1; ``scan --deep``:
  ``LOG_RECORDS_UNDECODABLE``), never a silent cut;
- the marker's producer epoch is not compared: with transaction version 2 (KIP-890) the coordinator
  bumps the epoch at every transaction end and writes the marker with the bumped epoch; the broker checks
  that a marker's epoch is not below the producer's (ProducerAppendInfo.checkProducerEpoch), so a marker in
  a log always has an epoch at or above its data's, and Kafka's consumer matches markers by producer id
  alone (K:clients/.../consumer/internals/CompletedFetch.java: ``abortedProducerIds``, ``isBatchAborted``);
- a transaction with no marker up to the log end is ``open``. The first offset of the earliest open one is
  the partition's first unstable offset, and the last stable offset (LSO) the broker gives
  ``read_committed`` consumers is the lower of it and the high watermark
  (K:storage/.../internals/log/UnifiedLog.java ``lastStableOffset``/``fetchLastStableOffsetMetadata``).

A ``read_committed`` consumer (K:clients/.../consumer/internals/CompletedFetch.java with the broker's
``UnifiedLog.collectAbortedTransactions``) gets every data record below the LSO that is not in an aborted
transaction, and never a control record; ``read_uncommitted`` gets every data record. The markers are the
only source here: a ``.txnindex`` is read by the scan, which compares it with what the markers say
(``TXN_INDEX_MISMATCH``), never instead of them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from logdoctor.errors import FormatError
from logdoctor.formats.producer_state import Origin, ProducerState, crc_ok
from logdoctor.logdir.coordinator import CoordinatorDecisions
from logdoctor.logdir.refs import PartitionRef, SegmentRef

__all__ = [
    "ABORTED",
    "ABORTED_CODE",
    "COMMITTED",
    "ISOLATION_LEVELS",
    "OPEN",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "RESULTS",
    "UPTO",
    "InvalidMarker",
    "LeftOut",
    "PartitionTransactions",
    "SegmentTransactions",
    "Transaction",
    "count_left_out",
    "describe_without_marker",
    "partition_transactions",
    "segment_views",
]

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
#: the values of Kafka's consumer config ``isolation.level`` (ConsumerConfig.ISOLATION_LEVEL_CONFIG)
ISOLATION_LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)
#: how far a partition is read: its log end, or its checkpointed high watermark (what a consumer could fetch)
UPTO = ("log-end", "high-watermark")

COMMITTED, ABORTED, OPEN = "committed", "aborted", "open"
#: the ``transaction_result`` values, by code (0: not transactional, null)
RESULTS = (None, COMMITTED, ABORTED, OPEN)
_CODE = {COMMITTED: 1, ABORTED: 2, OPEN: 3}
#: the result code of an aborted transaction's batches (what read_committed leaves out)
ABORTED_CODE = _CODE[ABORTED]
_AFTER_CUT = 4  # count_left_out's own code: a transaction committed after a cut's moment
_NEVER = 2**63 - 1


@dataclass(slots=True)
class Transaction:
    """One transaction of a producer in a partition: its data from ``first_offset`` (its first batch's
    base offset) to ``last_offset`` (its last data batch's last offset), ended by the marker at
    ``marker_offset`` (None: open), and the data records it holds."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    records: int = 0
    #: its data records in the range read (:func:`partition_transactions` ``start``/``end``)
    in_range: int = 0
    marker_offset: int | None = None
    marker_epoch: int | None = None
    #: its marker's timestamp (the partition leader's clock when it wrote it; -1: no marker)
    marker_timestamp: int = -1
    result: str = OPEN
    #: the producer's last write to it (its last data batch's max timestamp: ProducerStateEntry.lastTimestamp)
    last_timestamp: int = -1
    #: who decided a transaction left without a marker (the coordinator's state, or the read's policy:
    #: :mod:`logdoctor.logdir.coordinator`); None: its marker did, or it is open
    decided_by: str | None = None
    #: committed after a cut's moment (logdoctor.logdir.cut): read as open at that moment, left out
    after_cut: bool = False

    @property
    def end(self) -> int:
        """The last offset that belongs to it (its marker's; past everything while open)."""
        return _NEVER if self.marker_offset is None else self.marker_offset

    def without_marker_json(self) -> dict[str, object]:
        """A transaction left without a marker, as every summary gives it (``records``: those in the range
        read; ``result``: ``open``, or as decided, by ``decided_by``)."""
        return {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "first_offset": self.first_offset,
            "records": self.in_range,
            "result": self.result,
            "decided_by": self.decided_by,
        }

    def to_json(self) -> dict[str, object]:
        return {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "records": self.records,
            "marker_offset": self.marker_offset,
            "marker_epoch": self.marker_epoch,
            "result": self.result,
            "last_timestamp": self.last_timestamp,
            "decided_by": self.decided_by,
        }


@dataclass(slots=True)
class LeftOut:
    """What a consumer of one isolation level is not given, counted over the offsets read."""

    aborted: int = 0  # data records of aborted transactions below the stable end
    open: int = 0  # data records of open transactions
    above_stable: int = 0  # other data records at or above the LSO (committed, plain, aborted there)
    above_high_watermark: int = 0  # data records at or above the high watermark (counted always)
    #: data records below the LSO that a cut (logdoctor.logdir.cut) leaves out: plain ones past its moment,
    #: those of transactions committed after it (the cut's own count: at or above the LSO they are counted
    #: there)
    after_cut: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "aborted": self.aborted,
            "open": self.open,
            "above_last_stable_offset": self.above_stable,
            "above_high_watermark": self.above_high_watermark,
        }


@dataclass(frozen=True, slots=True)
class InvalidMarker:
    """A control batch whose header Kafka's validation refuses, which still decided its transaction (the
    module doc): where it is and why."""

    path: str
    position: int
    size: int
    base_offset: int
    last_offset: int
    error: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(slots=True)
class PartitionTransactions:
    """The transactions of one partition (first offset order) and the offsets that bound what a consumer
    reads: log end, first unstable offset, high watermark (None: not known or none)."""

    log_dir: str
    topic: str
    partition: int
    transactions: list[Transaction] = field(default_factory=list)
    log_end_offset: int | None = None
    high_watermark: int | None = None
    #: the first damage that ended a segment's batches (the walk went on at the next segment, as the rows do)
    error: str | None = None
    #: the base offset of the segment that damage cut first (its markers after the damage are not known)
    damaged_from: int | None = None
    #: the markers Kafka's validation refuses that decided their transaction (named by every reader)
    invalid_markers: list[InvalidMarker] = field(default_factory=list)
    #: the newest record timestamp of the partition (the last moment its log shows; -1: none)
    newest_timestamp: int = -1
    #: a cut's moment (logdoctor.logdir.cut) and the first offset past it: the partition's first
    #: non-transactional data batch whose max timestamp is past it, lowered to the first offset of each
    #: transaction not committed at that moment (None: no cut, or nothing past it)
    cut_at: int | None = None
    cut_end: int | None = None
    #: the data records in the range read of non-transactional batches whose max timestamp is past the cut
    cut_plain_after: int = 0

    @property
    def first_unstable_offset(self) -> int | None:
        return min((t.first_offset for t in self.transactions if t.result == OPEN), default=None)

    def last_stable_offset(self, upto_high_watermark: bool = False) -> int | None:
        """The LSO: the first unstable offset, capped by the high watermark when reading up to it
        (None: nothing caps the partition, every offset is stable)."""
        bounds = [self.first_unstable_offset]
        if upto_high_watermark:
            bounds.append(self.high_watermark)
        present = [b for b in bounds if b is not None]
        return min(present) if present else None

    def stable_end(self, isolation: str, upto_high_watermark: bool) -> int | None:
        """Offsets at or above this are left out (None: none)."""
        if isolation == READ_COMMITTED:
            return self.last_stable_offset(upto_high_watermark)
        return self.high_watermark if upto_high_watermark else None

    def open_transactions(self) -> list[Transaction]:
        return [t for t in self.transactions if t.result == OPEN]

    def decided(self) -> list[Transaction]:
        """The transactions left without a marker that the coordinator's state or the read's policy
        decided (:mod:`logdoctor.logdir.coordinator`)."""
        return [t for t in self.transactions if t.decided_by is not None]


@dataclass(slots=True)
class SegmentTransactions:
    """What a reader of one segment needs (picklable, small): the transactions whose offsets overlap the
    segment, as (producer id, first offset, end offset, result code) sorted by first offset, and the offset
    at and above which records are left out (None: none)."""

    isolation: str
    spans: tuple[tuple[int, int, int, int], ...] = ()
    stable_end: int | None = None
    #: a cut's moment: a non-transactional data batch whose max timestamp is past it is left out
    cut_at: int | None = None
    _index: dict[int, tuple[list[int], list[tuple[int, int]]]] | None = field(
        default=None, repr=False, compare=False
    )

    def result_of(self, producer_id: int, base_offset: int) -> int:
        """The result code of the transactional batch of ``producer_id`` at ``base_offset`` (0: none known;
        :data:`RESULTS`); a control batch gets the result its marker records."""
        index = self._index
        if index is None:
            index = {}
            for pid, first, end, code in self.spans:
                firsts, rest = index.setdefault(pid, ([], []))
                firsts.append(first)
                rest.append((end, code))
            self._index = index
        entry = index.get(producer_id)
        if entry is None:
            return 0
        i = bisect.bisect_right(entry[0], base_offset) - 1
        if i >= 0 and base_offset <= entry[1][i][0]:
            return entry[1][i][1]
        return 0

    def results(
        self, producer_ids: Sequence[int], base_offsets: Sequence[int], flags: Sequence[int]
    ) -> list[int]:
        """The result code of each batch (0: not transactional). ``flags``: 1 transactional."""
        return [
            self.result_of(pid, base) if flag & 1 else 0
            for pid, base, flag in zip(producer_ids, base_offsets, flags, strict=True)
        ]


def _refused_header(batch: object) -> str | None:
    """Why Kafka's validation refuses the batch's header (its count against its offset range, its leader
    epoch: :meth:`~logdoctor.formats.batch_v2.RecordBatchV2.check_count`), None when it does not."""
    try:
        batch.check_count()  # type: ignore[attr-defined]
    except FormatError as exc:
        return str(exc)
    return None


def _read_high_watermark(ref: PartitionRef) -> int | None:
    """The partition's entry of its log dir's ``replication-offset-checkpoint`` (None: none, unreadable)."""
    from logdoctor.formats.checkpoint import parse_offset_checkpoint
    from logdoctor.logdir.names import REPLICATION_OFFSET_CHECKPOINT

    storage = ref.storage
    try:
        data = storage.read(storage.join(ref.log_dir, REPLICATION_OFFSET_CHECKPOINT))
        cp = parse_offset_checkpoint(data)
    except (OSError, FormatError, ValueError):
        return None
    for topic, partition, offset in cp.entries:
        if topic == ref.topic and partition == ref.partition:
            return offset
    return None


def _segment_cap(seg: SegmentRef) -> int | None:
    """Offsets at and after this are not read from ``seg`` (a remote segment's part the local log holds)."""
    return None if seg.remote is None else seg.remote.read_end()


def _walk(
    segments: Sequence[SegmentRef], damage: list[tuple[SegmentRef, str]] | None = None
) -> Iterator[tuple[SegmentRef, object]]:
    """Every batch of the partition once, in offset order, with its segment, headers only (no CRC: the
    callers check the CRC of the few batches that change a transaction's state, as the readers leave a
    batch whose CRC does not match out alone). A segment's batches stop at its first framing damage (or a
    file that cannot be read), appended to ``damage``, and the walk goes on at the next segment, as the
    readers' rows do (:mod:`logdoctor.spark.sources.slice_reader`). A batch whose header's offset range is
    impossible (its last offset below its base) stands at its base offset, as Kafka's producer state takes
    it."""
    from logdoctor.logdir.seek import segment_batches

    next_offset = -1
    for seg in segments:
        cap = _segment_cap(seg)
        walk = segment_batches(seg, 0, verify_crc=False)
        try:
            for batch in walk:
                base, last = batch.base_offset, batch.last_offset  # type: ignore[attr-defined]
                if cap is not None and base >= cap:
                    break
                top = max(base, last)
                if top < next_offset:
                    continue  # a second copy of offsets read already
                next_offset = top + 1
                yield seg, batch
        except (FormatError, OSError) as exc:
            if damage is not None:
                damage.append((seg, str(exc)))
        finally:
            walk.close()


def partition_transactions(
    ref: PartitionRef,
    *,
    high_watermark: bool = True,
    start: int | None = None,
    end: int | None = None,
    decisions: CoordinatorDecisions | None = None,
    cut_at: int | None = None,
) -> PartitionTransactions:
    """Every transaction of ``ref`` (its segments, the remote tier's first) from its markers, wherever
    they are (a marker past ``end`` too); the log end offset the walk reached and the checkpointed high
    watermark (``high_watermark``: read it). Each transaction counts its records in [start, end).
    ``decisions``: the read plan's (:attr:`logdoctor.logdir.read_plan.ReadPlan.decisions`): a transaction
    left without a marker is then what a consumer of the restarted cluster reads of it (committed,
    aborted, or still open); None: open, as the markers alone say. ``cut_at``: a cut's moment, and
    :attr:`~PartitionTransactions.cut_end` the first non-transactional data batch past it
    (:func:`logdoctor.logdir.cut.apply_cut` then marks the transactions past it)."""
    out = PartitionTransactions(ref.log_dir, ref.topic, ref.partition, cut_at=cut_at)
    if high_watermark and ref.segments and not all(s.remote is not None for s in ref.segments):
        out.high_watermark = _read_high_watermark(ref)
    state = ProducerState()
    ongoing: dict[int, Transaction] = {}
    leo: int | None = None
    damage: list[tuple[SegmentRef, str]] = []
    try:
        for seg, batch in _walk(ref.segments, damage):
            b = batch
            last = b.last_offset  # type: ignore[attr-defined]
            leo = max(b.base_offset, last) + 1  # type: ignore[attr-defined]
            if b.max_timestamp > out.newest_timestamp:  # type: ignore[attr-defined]
                out.newest_timestamp = b.max_timestamp  # type: ignore[attr-defined]
            if (
                cut_at is not None
                and b.max_timestamp > cut_at  # type: ignore[attr-defined]
                and not b.is_control  # type: ignore[attr-defined]
                and not b.is_transactional  # type: ignore[attr-defined]
            ):
                if out.cut_end is None:
                    out.cut_end = b.base_offset  # type: ignore[attr-defined]
                out.cut_plain_after += _records_in(b, start, end)
            pid = b.producer_id if b.magic >= 2 else -1  # type: ignore[attr-defined]
            if pid < 0:
                continue  # no producer id: no transaction state to change
            control = b.is_control  # type: ignore[attr-defined]
            completed = state.append(b, Origin.READ)  # type: ignore[arg-type]
            if control:
                refused = _refused_header(b)
                if refused is not None and crc_ok(b):  # type: ignore[arg-type]
                    out.invalid_markers.append(
                        InvalidMarker(seg.path, b.position, b.size, b.base_offset, b.last_offset, refused)  # type: ignore[attr-defined]
                    )
            if completed is not None:
                state.complete(completed)
                txn = ongoing.pop(pid)
                txn.marker_offset = completed.last_offset
                txn.marker_epoch = b.producer_epoch  # type: ignore[attr-defined]
                txn.marker_timestamp = b.max_timestamp  # type: ignore[attr-defined]
                txn.result = ABORTED if completed.aborted else COMMITTED
                continue
            first = state.current.get(pid) if not control and b.is_transactional else None  # type: ignore[attr-defined]
            if first is None:
                continue
            txn = ongoing.get(pid)
            if txn is None:
                txn = ongoing[pid] = Transaction(pid, b.producer_epoch, first, last)  # type: ignore[attr-defined]
                out.transactions.append(txn)
            txn.last_offset = last
            txn.last_timestamp = b.max_timestamp  # type: ignore[attr-defined]
            txn.records += b.record_count  # type: ignore[attr-defined]
            txn.in_range += _records_in(b, start, end)
    except (FormatError, OSError) as exc:
        damage.append((seg, str(exc)))
    if damage:
        out.damaged_from = damage[0][0].base_offset
        out.error = damage[0][1]
    out.log_end_offset = leo
    out.transactions.sort(key=lambda t: t.first_offset)
    if decisions is not None:
        for txn in out.open_transactions():
            decided = decisions.decide(ref.log_dir, ref.topic, ref.partition, txn.producer_id)
            if decided is not None:
                txn.result, txn.decided_by = decided
    return out


def describe_without_marker(t: Mapping[str, Any]) -> str:
    """One line for a transaction left without a marker (:meth:`Transaction.without_marker_json`): the
    summaries of export and replay alike."""
    head = f"producer {t['producer_id']} epoch {t['producer_epoch']}, first offset {t['first_offset']}"
    if t["result"] == OPEN:
        return (
            f"open transaction: {head}, {t['records']:,} record(s): read_committed stops at its first offset "
            "(--open-transactions abort reads past it)"
        )
    records = f"{t['records']:,} record(s)"
    return f"transaction without a marker: {head}, {records} {t['result']} ({t['decided_by']})"


def segment_views(
    txns: PartitionTransactions, segments: Sequence[SegmentRef], isolation: str, upto_high_watermark: bool
) -> list[SegmentTransactions]:
    """One :class:`SegmentTransactions` per segment (in order): the transactions overlapping it (a sweep
    over both lists, in offset order) and the stable end."""
    stable_end = txns.stable_end(isolation, upto_high_watermark)
    ts = txns.transactions
    out: list[SegmentTransactions] = []
    active: list[Transaction] = []
    i = 0
    for k, seg in enumerate(segments):
        lo = seg.base_offset
        hi = seg.next_base_offset if seg.next_base_offset is not None else _NEVER
        if seg.remote is not None and _segment_cap(seg) is not None:
            hi = min(hi, _segment_cap(seg))  # type: ignore[type-var]
        if k + 1 < len(segments):
            hi = max(hi, segments[k + 1].base_offset)  # overlapping copies: read once, keep them labelled
        while i < len(ts) and ts[i].first_offset < hi:
            active.append(ts[i])
            i += 1
        active = [t for t in active if t.end >= lo]
        spans = tuple(
            (t.producer_id, t.first_offset, t.end, _CODE[OPEN if t.after_cut else t.result])
            for t in active
            if t.first_offset < hi
        )
        out.append(SegmentTransactions(isolation, spans, stable_end, txns.cut_at))
    return out


def count_left_out(
    ref: PartitionRef,
    txns: PartitionTransactions,
    upto_high_watermark: bool,
    start: int | None = None,
    end: int | None = None,
) -> LeftOut:
    """What a ``read_committed`` consumer is not given of the data records in [start, end) of ``ref``
    (``txns``: its :func:`partition_transactions`), per record: the aborted ones below the LSO, the open
    transactions' ones, the others at or above the LSO, and (whatever the level) those at or above the
    high watermark. Only the batches from the lowest of the LSO and the high watermark on are walked again:
    the aborted transactions' counts below them come from ``txns``."""
    counts = LeftOut()
    lso = txns.last_stable_offset(upto_high_watermark)
    hw = txns.high_watermark
    cut_at = txns.cut_at
    counts.aborted = sum(t.in_range for t in txns.transactions if t.result == ABORTED)
    counts.after_cut = txns.cut_plain_after + sum(t.in_range for t in txns.transactions if t.after_cut)
    bounds = [b for b in (lso, hw) if b is not None]
    if not bounds or txns.log_end_offset is None or min(bounds) >= txns.log_end_offset:
        return counts
    tail_from = min(bounds)
    spans = SegmentTransactions(
        READ_COMMITTED,
        tuple(
            (t.producer_id, t.first_offset, t.end, _AFTER_CUT if t.after_cut else _CODE[t.result])
            for t in txns.transactions
        ),
    )
    segs = [
        s
        for k, s in enumerate(ref.segments)
        if k + 1 == len(ref.segments) or ref.segments[k + 1].base_offset > tail_from
    ]
    try:
        for _seg, b in _walk(segs):
            if b.magic >= 2 and b.is_control:  # type: ignore[attr-defined]
                continue
            if b.last_offset < tail_from:  # type: ignore[attr-defined]
                continue
            flags = 1 if b.magic >= 2 and b.is_transactional and b.producer_id >= 0 else 0  # type: ignore[attr-defined]
            code = spans.results([b.producer_id], [b.base_offset], [flags])[0]  # type: ignore[attr-defined]
            if hw is not None:
                counts.above_high_watermark += _records_in(b, _max(start, hw), end)
            if lso is not None:
                n = _records_in(b, _max(start, lso), end)
                if code == _CODE[OPEN]:
                    counts.open += n
                else:
                    counts.above_stable += n
                    if code == _CODE[ABORTED]:
                        counts.aborted -= n  # left out for the LSO, counted there
                    elif code == _AFTER_CUT or (code == 0 and _past(b, cut_at)):
                        counts.after_cut -= n  # likewise
    except (FormatError, OSError):
        pass  # counted up to the damage (the walk of partition_transactions names it)
    return counts


def _past(batch: object, cut_at: int | None) -> bool:
    return cut_at is not None and batch.max_timestamp > cut_at  # type: ignore[attr-defined]


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


def _records_in(batch: object, start: int | None, end: int | None) -> int:
    """The records of ``batch`` in [start, end): its record count when it lies wholly inside, else its
    records' own offsets (a batch cut by the range)."""
    base, last = batch.base_offset, batch.last_offset  # type: ignore[attr-defined]
    if (start is not None and last < start) or (end is not None and base >= end):
        return 0
    if (start is None or base >= start) and (end is None or last < end):
        return batch.record_count  # type: ignore[attr-defined]
    try:
        return sum(
            1
            for r in batch.records()  # type: ignore[attr-defined]
            if (start is None or r.offset >= start) and (end is None or r.offset < end)
        )
    except FormatError:
        return 0

"""A transaction-consistent cut (``--cut-at T`` of ``export`` and ``replay``, option ``cutAt``): every
partition's records up to one moment, a transaction in all of its partitions or in none.

A data record is in the cut at ``T`` (epoch ms, inclusive) iff it is one ``read_committed`` reads
(:mod:`logdoctor.logdir.transactions`) and

- it is not transactional and its batch's max timestamp is at or below ``T`` (the batch header's, the
  one timestamp a batch is cut by: with ``LogAppendTime`` every record of it has it; with ``CreateTime``
  the producer's clock decides), or
- its transaction committed at or before ``T``. A transaction's moment is one for all of its partitions:
  the coordinator decides it once (PrepareCommit, K:transaction-coordinator/.../TransactionMetadata.java)
  and then each partition's leader writes the marker at its own clock
  (K:core/.../server/KafkaApis.scala handleWriteTxnMarkersRequest; the control batch's timestamp is the
  leader's ``time.milliseconds()``, K:clients/.../record/MemoryRecords.java withEndTransactionMarker),
  so the moment taken is its **earliest** marker's timestamp, the closest the logs come to the decision.
  The markers of one transaction are found across partitions by producer id and the marker's epoch: with
  transaction version 2 (KIP-890) the coordinator bumps the epoch at every transaction's end and writes
  the markers with it (a marker's epoch is its data's + 1), so that pair names one transaction. With
  transaction version 1 (the marker's epoch is its data's) one epoch spans the producer's transactions
  and the logs do not say which markers belong together: each partition's transaction is taken at its own
  marker, exact unless the markers of one transaction lie on both sides of ``T``: a producer whose
  markers lie on both sides of ``T`` is named in the summary (:func:`straddling`);
- a transaction whose coordinator's last state is PrepareCommit (``__transaction_state`` among the inputs:
  the commit decided, its markers not all written, as when the cluster died between the two) is taken at
  that state's ``transaction_last_update_timestamp_ms``, the decision itself (its epoch the markers' epoch:
  K:core/.../coordinator/transaction/TransactionMetadata.scala prepareAbortOrCommit), in every partition it
  lists: those left without a marker (which that state commits, :mod:`logdoctor.logdir.coordinator`) and
  those holding its marker (its epoch; under transaction version 1 the producer's last transaction there,
  marked at or after the decision), so the partitions the markers reached and those they did not agree;
- aborted transactions are never read; a transaction without a marker that ``--open-transactions``
  commits has no moment and is outside the cut; one left open holds the partition at its first offset,
  as ``read_committed`` does.

Each partition's cut end offset (:attr:`~logdoctor.logdir.transactions.PartitionTransactions.cut_end`) is
the first offset past the cut: the first non-transactional data batch past ``T`` or the first offset of a
transaction not committed at ``T``, whichever comes first (None: the log end). A consumer group's offset
past it is clamped to it (``replay --groups``). Records of the cut can lie past it (a transaction that
committed by ``T`` after one that did not): the readers read them, the group resumes before them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from logdoctor.logdir.coordinator import CoordinatorDecisions
from logdoctor.logdir.refs import PartitionRef
from logdoctor.logdir.transactions import (
    COMMITTED,
    PartitionTransactions,
    Transaction,
    partition_transactions,
)

__all__ = ["apply_cut", "cut_moments", "straddling"]


def _marked(t: Transaction) -> bool:
    return t.result == COMMITTED and t.marker_offset is not None and t.marker_epoch is not None


def _moments(partitions: Iterable[PartitionTransactions]) -> dict[tuple[int, int], int]:
    """(producer id, marker epoch) -> the earliest marker of that transaction version 2 transaction."""
    moments: dict[tuple[int, int], int] = {}
    for p in partitions:
        for t in p.transactions:
            if _marked(t) and t.marker_epoch > t.producer_epoch:  # type: ignore[operator]
                key = (t.producer_id, t.marker_epoch)
                moments[key] = min(moments.get(key, t.marker_timestamp), t.marker_timestamp)  # type: ignore[index]
    return moments


def cut_moments(refs: Sequence[PartitionRef]) -> dict[tuple[int, int], int]:
    """The moment of every transaction version 2 transaction of ``refs`` (the read plan's partitions:
    one walk of each one's batch headers), what each partition's cut is taken by (:func:`apply_cut`)."""
    return _moments(partition_transactions(r, high_watermark=False) for r in refs if r.segments)


def apply_cut(p: PartitionTransactions, decisions: CoordinatorDecisions | None) -> PartitionTransactions:
    """``p`` (walked with a cut's moment) with every committed transaction not in the cut marked (the
    module doc; ``decisions``: the read plan's, with the :func:`cut_moments` of every partition read) and
    its ``cut_end`` lowered to the first such transaction or one not committed. Without a cut, ``p``."""
    cut_at = p.cut_at
    if cut_at is None:
        return p
    moments = decisions.cut_moments if decisions is not None else {}
    last = {t.producer_id: t for t in p.transactions}
    for t in p.transactions:
        decided = _decided_at(p, t, last[t.producer_id] is t, decisions)
        if decided is not None:
            if decided <= cut_at:
                continue
            t.after_cut = True
        elif _marked(t):
            if moments.get((t.producer_id, t.marker_epoch), t.marker_timestamp) <= cut_at:  # type: ignore[arg-type]
                continue
            t.after_cut = True
        elif t.result != COMMITTED and 0 <= t.marker_timestamp <= cut_at:
            continue  # aborted at or before the moment: never read, nothing held back
        elif t.result == COMMITTED:
            t.after_cut = True  # committed without a marker (the coordinator's state): no moment
        if p.cut_end is None or t.first_offset < p.cut_end:
            p.cut_end = t.first_offset
    return p


def _decided_at(
    p: PartitionTransactions, t: Transaction, last: bool, decisions: CoordinatorDecisions | None
) -> int | None:
    """When the coordinator decided to commit ``t``, where its last state is that decision (PrepareCommit;
    the module doc); None: the markers decide."""
    if decisions is None or t.result != COMMITTED:
        return None
    prepared = decisions.prepared_commit(p.log_dir, p.topic, p.partition, t.producer_id)
    if prepared is None:
        return None
    at = prepared.last_update_timestamp
    if t.marker_offset is None:
        return at  # committed by that state
    if t.marker_epoch != prepared.producer_epoch:
        return None  # another transaction's marker (transaction version 2: each its own epoch)
    if t.marker_epoch > t.producer_epoch or (last and t.marker_timestamp >= at):
        return at
    return None  # version 1: an earlier transaction of the same epoch


def straddling(partitions: Iterable[PartitionTransactions], cut_at: int) -> set[tuple[int, int]]:
    """(producer id, epoch) of each transaction version 1 producer whose commit markers lie on both sides
    of ``cut_at`` (the module doc: a transaction of it may straddle the moment)."""
    sides: dict[tuple[int, int], set[bool]] = {}
    for p in partitions:
        for t in p.transactions:
            if _marked(t) and t.marker_epoch == t.producer_epoch:
                sides.setdefault((t.producer_id, t.producer_epoch), set()).add(t.marker_timestamp <= cut_at)
    return {key for key, side in sides.items() if len(side) == 2}

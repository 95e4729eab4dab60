"""TRANSACTION_HANGING: transactions still open after the transaction timeout, from the log and producer
snapshots as the broker loads them.

The producer state a starting broker loads (K:storage/.../log/UnifiedLog.java rebuildProducerState,
ProducerStateManager.truncateAndReload / loadFromSnapshot): the latest producer snapshot at or below the
log end offset, then the batches from its offset to the log end, appended with ``Origin.LOAD``
(:mod:`logdoctor.formats.producer_state`: a batch Kafka's load refuses leaves the state unknown here).
Without any snapshot after a clean shutdown the broker loads nothing (it writes empty snapshots: the
upgrade path); after an unclean one it replays from the log start.

A transaction is late (ProducerStateManager.hasLateTransaction) when the time since its producer's last
write exceeds ``transaction.max.timeout.ms`` (broker config, 900000 by default) plus
``LATE_TRANSACTION_BUFFER_MS`` (5 minutes), judged here at the partition's newest record timestamp (the
broker judges it at its clock; offline, the newest record is the last moment the log shows). The last
stable offset is the first offset of the earliest open transaction (``firstUnstableOffset``; the high
watermark taken as the log end, as once the followers caught up); everything from there to the log end is
invisible to ``read_committed`` consumers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from logdoctor.checks.catalog.transactions import ABORT_COMMAND
from logdoctor.checks.state.partition import PartitionState
from logdoctor.checks.state.time_words import duration, iso
from logdoctor.errors import FormatError
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.formats.producer_state import (
    DEFAULT_TRANSACTION_MAX_TIMEOUT_MS,
    Origin,
    ProducerState,
    is_late,
)
from logdoctor.formats.record_types import Batch

__all__ = [
    "OpenTransaction",
    "check_hanging",
    "check_txn_index",
    "open_transactions",
]


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_timestamp: int  # the producer's last write (ProducerStateEntry.lastTimestamp)


def open_transactions(st: PartitionState) -> list[OpenTransaction] | None:
    """The transactions open in the producer state the broker loads (first offset order); None when it
    cannot be known here (no log end, an unreadable snapshot or batch). With ``keep_producers`` the whole
    producer state goes into the report (``PartitionReport.producers``). Replayed once per partition
    (:attr:`PartitionState.open_txns`)."""
    from logdoctor.checks.state.partition import NOT_REPLAYED

    if st.open_txns is NOT_REPLAYED:
        st.open_txns = _replay_producer_state(st)
    return st.open_txns  # type: ignore[no-any-return]


def _replay_producer_state(st: PartitionState) -> list[OpenTransaction] | None:
    leo = st.log_end_offset
    if leo is None or not st.segments:
        return None
    state = ProducerState()
    # ProducerStateManager.truncateAndReload deletes the snapshots at or below the log start offset (the
    # checkpoint's entry, 0 without one: what LogLoader passes) and above the log end, then loads the latest
    # left (K:storage/.../log/ProducerStateManager.java). Producer id expiry (``isProducerExpired``) is not
    # applied: it depends on the broker's clock at its next start, and never drops a producer with an open
    # transaction, the only state the findings here judge.
    log_start = st.task.log_start_checkpoint or 0
    snaps = [(off, p) for off, p in st.partition.producer_snapshot_files if log_start < off <= leo]
    if snaps:
        off, path = snaps[-1]
        data = st.read_small(path, "the broker cannot load producer state")
        if data is None:
            return None
        try:
            state = ProducerState.from_snapshot(parse_producer_snapshot(data, source=path))
        except FormatError:
            return None  # PRODUCER_SNAPSHOT_CORRUPT says it
        start = off
    elif st.task.clean_shutdown:
        start = leo  # the upgrade path: empty snapshots, nothing loaded
    else:
        start = st.segments[0].base_offset
    try:
        for b in _batches(st, start) if start < leo else ():
            if b.base_offset >= leo:
                break
            completed = state.append(b, Origin.LOAD)
            if completed is not None:
                state.complete(completed)
    except FormatError:
        return None  # the broker's load fails there too (ProducerStateError), or the batch is unreadable
    producers = state.producers
    if st.task.keep_producers:
        st.rep.producers = {
            pid: (
                p.producer_epoch,
                p.last_timestamp,
                -1 if p.current_txn_first_offset is None else p.current_txn_first_offset,
            )
            for pid, p in producers.items()
        }
    out = [
        OpenTransaction(pid, p.producer_epoch, p.current_txn_first_offset, p.last_timestamp)
        for pid, p in producers.items()
        if p.current_txn_first_offset is not None
    ]
    return sorted(out, key=lambda t: t.first_offset)


def _batches(st: PartitionState, start: int) -> Iterator[Batch]:
    segs = st.segments
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
        if nxt is not None and nxt <= start:
            continue
        for b in seg.batches():
            if b.last_offset >= start:
                yield b


def check_hanging(st: PartitionState) -> None:
    """One TRANSACTION_HANGING per late open transaction of the partition."""
    txns = open_transactions(st)
    if not txns:
        return
    leo = st.log_end_offset
    assert leo is not None
    lso = txns[0].first_offset
    data_above = control_above = 0
    newest = max((i.true_largest_ts for i in st.infos.values() if i.true_largest_ts is not None), default=-1)
    try:
        for b in _batches(st, lso):
            if b.base_offset >= leo:
                break
            newest = max(newest, b.max_timestamp)
            if b.is_control:
                control_above += b.record_count
            else:
                data_above += b.record_count
    except FormatError:
        pass  # counted up to the unreadable batch (LOG_CORRUPT says where)
    timeout, source = st.task.transaction_timeout or (DEFAULT_TRANSACTION_MAX_TIMEOUT_MS, "Kafka's default")
    for t in txns:
        idle = newest - t.last_timestamp
        if not is_late(t.last_timestamp, newest, timeout):
            continue
        seg = st.segments[st.segment_index(t.first_offset)]
        st.make(
            "TRANSACTION_HANGING",
            str(seg.log_path),
            offset=t.first_offset,
            topic=st.task.topic,
            partition=st.task.partition,
            producer_id=t.producer_id,
            producer_epoch=t.producer_epoch,
            first_offset=t.first_offset,
            open_for=duration(idle),
            last_timestamp_iso=iso(t.last_timestamp),
            newest_timestamp_iso=iso(newest),
            timeout_ms=timeout,
            timeout_source=source,
            last_stable_offset=lso,
            records_above=data_above,
            offsets_above=leo - lso,
            log_end_offset=leo,
            details={
                "topic": st.task.topic,
                "partition": st.task.partition,
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "first_offset": t.first_offset,
                "last_stable_offset": lso,
                "log_end_offset": leo,
                "records_above": data_above,
                "control_records_above": control_above,
                "offsets_above": leo - lso,
                "last_timestamp": t.last_timestamp,
                "newest_timestamp": newest,
                "transaction_max_timeout_ms": timeout,
                "timeout_source": source,
                "command_for_running_cluster": ABORT_COMMAND.format(
                    topic=st.task.topic, partition=st.task.partition, first_offset=t.first_offset
                ),
            },
        )


def check_txn_index(st: PartitionState, *, every_partition: bool = False) -> None:
    """INDEX_CORRUPT for a ``.txnindex`` that the markers of the log contradict.

    A segment's transaction index lists the aborted transactions whose ABORT marker is in that segment:
    producer id, first offset, the marker's offset and the LSO after it (K:storage/.../log/LogSegment.java
    updateTxnIndex, ProducerStateManager.completeTxn, TransactionIndex.java). The broker hands those
    entries to ``read_committed`` consumers (UnifiedLog.collectAbortedTransactions), which skip exactly the
    transactions listed: an entry whose marker offset holds a COMMIT marker, or a first offset that is not
    the transaction's, makes them skip committed records; an ABORT marker the index lacks makes them read
    aborted ones. Only what the log contradicts is reported (the cleaner removes markers; an entry whose
    marker is gone is not contradicted). ``logdoctor export`` and ``dump`` take outcomes from the markers
    (logdoctor.logdir.transactions), never from this index. Read at the default depth where a ``.txnindex``
    has entries, at ``--deep`` for every partition. Repair rebuilds the index from the log (INDEX_CORRUPT).
    """
    from logdoctor.checks.indexes import report_corrupt
    from logdoctor.formats.index import TXN_ENTRY_SIZE, IndexKind, parse_txn_index
    from logdoctor.logdir.transactions import ABORTED, partition_transactions

    indexed = {}
    for seg in st.segments:
        path = seg.txnindex_file
        if path is None or path in st.unreadable:
            continue
        data = st.read_small(path, "the broker cannot open this index (LogLoader: 'Could not read file')")
        if data is None or len(data) % TXN_ENTRY_SIZE:
            continue  # INDEX_CORRUPT says it already
        indexed[seg.base_offset] = (seg, path, data)
    if not indexed or (not every_partition and not any(len(d) for _, _, d in indexed.values())):
        return  # nothing to compare (Kafka writes a .txnindex only for a segment that has one)
    if any(
        f.code == "INDEX_CORRUPT" and f.path in {p for _, p, _ in indexed.values()} for f in st.rep.findings
    ):
        return  # one finding per file: the index is rebuilt whole anyway
    try:
        txns = partition_transactions(st.partition.ref(), high_watermark=False)
    except OSError:
        return
    by_marker = {t.marker_offset: t for t in txns.transactions if t.marker_offset is not None}
    bases = [s.base_offset for s in st.segments]
    for i, seg in enumerate(st.segments):
        entry = indexed.get(seg.base_offset)
        if entry is None:
            continue
        _seg, path, data = entry
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if txns.damaged_from is not None and seg.base_offset >= txns.damaged_from:
            break  # damage cut this segment: its markers are not all known (nor what later ones end)
        entries = parse_txn_index(data, strict=False, source=path)
        problems: list[str] = []
        for e in entries:
            t = by_marker.get(e.last_offset)
            if t is None:
                continue  # no marker there now (cleaned away): nothing contradicts it
            if t.result != ABORTED:
                problems.append(
                    f"it lists producer {e.producer_id}'s transaction {e.first_offset}..{e.last_offset} as "
                    f"aborted, but the marker at offset {e.last_offset} is a COMMIT marker"
                )
            elif t.producer_id != e.producer_id or t.first_offset != e.first_offset:
                problems.append(
                    f"its entry for the ABORT marker at offset {e.last_offset} says producer {e.producer_id} "
                    f"from offset {e.first_offset}, the log says producer {t.producer_id} from offset "
                    f"{t.first_offset}"
                )
        listed = {e.last_offset for e in entries}
        for t in txns.transactions:
            m = t.marker_offset
            if (
                t.result == ABORTED
                and m is not None
                and m >= seg.base_offset
                and (nxt is None or m < nxt)
                and m not in listed
            ):
                problems.append(
                    f"it lacks the transaction of producer {t.producer_id} from offset {t.first_offset} that "
                    f"the ABORT marker at offset {m} ends"
                )
        if problems:
            shown = "; ".join(problems[:3]) + (
                f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            )
            report_corrupt(
                st,
                seg,
                path,
                IndexKind.TXN,
                data,
                f"{path} disagrees with the transaction markers of the log: {shown}; read_committed "
                "consumers are told which transactions were aborted from this index",
                None,
                extra={"disagreements": len(problems)},
            )

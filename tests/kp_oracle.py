"""Facts about real segments read with kafka-python (an implementation this project did not write),
for tests that would otherwise hard-code values read off a run of our own code."""

from __future__ import annotations

from pathlib import Path

from kafka.record import MemoryRecords


def record_timestamps(log: Path) -> list[int]:
    """Every record timestamp of a .log, in file order, as kafka-python decodes them."""
    out: list[int] = []
    records = MemoryRecords(log.read_bytes())
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        out.extend(r.timestamp for r in batch)
    return out


def max_timestamp(log: Path) -> int:
    """The largest record timestamp of a .log (what a correct time index's last entry holds)."""
    return max(record_timestamps(log))


def batches(data: bytes) -> list[tuple[int, int, int, int]]:
    """(position, size, last offset, max timestamp) of each batch kafka-python reads, in file order,
    stopping at the first batch it cannot read or whose CRC fails."""
    out: list[tuple[int, int, int, int]] = []
    records = MemoryRecords(data)
    pos = 0
    while records.has_next():
        try:
            batch = records.next_batch()
        except Exception:  # kafka-python's own corrupt-record errors
            break
        if batch is None or not batch.validate_crc():
            break
        size = 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
        if batch.magic >= 2:
            last, max_ts = batch.last_offset, batch.max_timestamp
        else:  # a v0/v1 entry: its (wrapper) offset is the last inner offset
            inner = list(batch)
            last, max_ts = inner[-1].offset, max(r.timestamp for r in inner)
        out.append((pos, size, last, max_ts))
        pos += size
    return out


def recovered_indexes(
    data: bytes, interval: int = 4096
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The (offset, position) and (timestamp, offset) entries LogSegment.recover writes for a segment,
    applied by hand to kafka-python's batches: an offset entry for a batch when more than ``interval``
    bytes were read since the last entry (never for the first batch), a time entry at the same moment
    and once at the end, each only when the largest timestamp so far grew past the previous entry's
    (K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java recover,
    TimeIndex.maybeAppend)."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    since_last = 0
    max_ts, max_ts_offset = -1, -1

    def time_append() -> None:
        if max_ts_offset >= 0 and (not times or max_ts > times[-1][0]):
            times.append((max_ts, max_ts_offset))

    for pos, size, last, ts in batches(data):
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last
        if since_last > interval:
            offsets.append((last, pos))
            time_append()
            since_last = 0
        since_last += size
    time_append()
    return offsets, times


def transactional_batches(logs: list[Path]) -> list[tuple[int, int, int, bool, bool, int | None, list[int]]]:
    """(base offset, last offset, producer id, transactional, control, control type, record offsets) of every
    v2 batch of ``logs`` (one partition's segments in offset order), as kafka-python decodes them: the
    control type from the control record's key (version int16, type int16; ControlRecordType.java)."""
    out = []
    for log in logs:
        records = MemoryRecords(log.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            if batch.magic < 2:
                out.append((batch.base_offset, batch.last_offset, -1, False, False, None,
                            [r.offset for r in batch]))  # fmt: skip
                continue
            recs = list(batch)
            ctype = None
            if batch.is_control_batch and recs:
                ctype = int.from_bytes(recs[0].key[2:4], "big")
            out.append((batch.base_offset, batch.last_offset, batch.producer_id, batch.is_transactional,
                        batch.is_control_batch, ctype, [r.offset for r in recs]))  # fmt: skip
    return out


def consumer_view(logs: list[Path]) -> tuple[dict[int, str | None], list[int], int | None]:
    """What Kafka's consumers read of one partition, computed here as Kafka's own components do, from
    kafka-python's decoding: ({data offset: committed|aborted|open|None}, the offsets a read_committed
    consumer returns in order, the LSO).

    The broker side as ProducerStateManager/ProducerAppendInfo keep it (a transactional data batch of a
    producer with no ongoing transaction opens one at its base offset; a COMMIT/ABORT marker of that
    producer completes it; the aborted ones are (producer id, first offset), as the .txnindex and
    UnifiedLog.collectAbortedTransactions give them; the first unstable offset is the first offset of the
    earliest still ongoing one), then the consumer side as CompletedFetch.nextFetchedRecord walks batches
    below the LSO: aborted transactions whose first offset <= the batch's last offset put their producer
    in abortedProducerIds, an ABORT marker takes it out, a transactional batch of a producer in the set
    is skipped, control batches are never returned."""
    batches = transactional_batches(logs)
    ongoing: dict[int, int] = {}
    aborted: list[tuple[int, int]] = []  # (first offset, producer id)
    label_first: dict[tuple[int, int], str] = {}
    txn_of_batch: dict[int, tuple[int, int]] = {}  # batch base -> (pid, first)
    for base, _last, pid, txn, control, ctype, _offs in batches:
        if not txn or pid < 0:
            continue
        if control:
            first = ongoing.pop(pid, None)
            if first is not None:
                result = "committed" if ctype == 1 else "aborted"
                label_first[(pid, first)] = result
                if result == "aborted":
                    aborted.append((first, pid))
            continue
        first = ongoing.setdefault(pid, base)
        txn_of_batch[base] = (pid, first)
    lso = min(ongoing.values()) if ongoing else None
    labels: dict[int, str | None] = {}
    for base, _last, _pid, _txn, control, _ctype, offs in batches:
        if control:
            continue
        key = txn_of_batch.get(base)
        result = None if key is None else label_first.get(key, "open")
        for o in offs:
            labels[o] = result
    # CompletedFetch, fetching from the log start with the broker's aborted transactions, up to the LSO
    pending = sorted(aborted)
    aborted_pids: set[int] = set()
    returned: list[int] = []
    for base, last, pid, txn, control, ctype, offs in batches:
        if lso is not None and base >= lso:
            break
        while pending and pending[0][0] <= last:
            aborted_pids.add(pending.pop(0)[1])
        if control:
            if ctype == 0:
                aborted_pids.discard(pid)
            continue
        if txn and pid in aborted_pids:
            continue
        returned.extend(o for o in offs if lso is None or o < lso)
    return labels, returned, lso

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

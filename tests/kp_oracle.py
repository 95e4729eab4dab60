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

"""An independent decoder for the Spark tests: kafka-python's MemoryRecords over whole .log files."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from kafka.record import MemoryRecords

from logdoctor.logdir.names import parse_partition_dir


def records_of(
    log: Path, *, include_control: bool = False
) -> Iterator[tuple[str, int, int, int, bytes | None, bytes | None]]:
    """(topic, partition, offset, timestamp, key, value) of every record kafka-python finds in ``log``."""
    folder = parse_partition_dir(log.parent.name)
    assert folder is not None, log
    data = log.read_bytes()
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        if getattr(batch, "is_control_batch", False) and not include_control:
            continue
        for rec in batch:
            key = None if rec.key is None else bytes(rec.key)
            value = None if rec.value is None else bytes(rec.value)
            yield folder.topic, folder.partition, rec.offset, rec.timestamp, key, value


def digest(rows: Iterable[tuple]) -> tuple[int, str]:
    """Count and an order-independent SHA-256 over (topic, partition, offset, key, value)."""
    lines = []
    for topic, partition, offset, key, value in rows:
        k = "-" if key is None else bytes(key).hex()
        v = "-" if value is None else bytes(value).hex()
        lines.append(f"{topic}\t{partition}\t{offset}\t{k}\t{v}")
    lines.sort()
    h = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return len(lines), h

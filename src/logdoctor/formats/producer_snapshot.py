"""Producer-state snapshots (``<20-digit offset>.snapshot``).

K: storage/src/main/resources/message/ProducerSnapshot.json, ProducerStateManager.java
(readSnapshot / writeSnapshot); the 0.11 Scala schema (PidSnapshotMapSchema) is the same layout.

Layout (big-endian): int16 version (1), uint32 CRC-32C of every byte after the CRC (bytes 6..end),
int32 entry count, then 46-byte entries: int64 producerId, int16 epoch, int32 lastSequence,
int64 lastOffset, int32 offsetDelta, int64 timestamp, int32 coordinatorEpoch,
int64 currentTxnFirstOffset (-1: no ongoing transaction). An empty table is the 10-byte file
``00 01 <crc> 00 00 00 00``. The broker's CRC covers everything after the CRC field, trailing
bytes included, so they are kept in ``trailing`` (normally empty) for byte-exact writing.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from logdoctor.errors import CrcMismatchError, FormatError, TruncatedError, UnsupportedError
from logdoctor.formats.crc import crc32c
from logdoctor.formats.lazy_numpy import np

PRODUCER_SNAPSHOT_VERSION = 1
HEADER_SIZE = 10  # version, crc, count
CRC_POSITION = 2
ENTRIES_POSITION = 6  # PRODUCER_ENTRIES_OFFSET: where the CRC'd bytes start
ENTRY_SIZE = 46

_ENTRY_LAYOUT: list[tuple[str, str]] = [
    ("producer_id", ">i8"),
    ("producer_epoch", ">i2"),
    ("last_sequence", ">i4"),
    ("last_offset", ">i8"),
    ("offset_delta", ">i4"),
    ("timestamp", ">i8"),
    ("coordinator_epoch", ">i4"),
    ("current_txn_first_offset", ">i8"),
]
_FIELDS: tuple[str, ...] = tuple(name for name, _ in _ENTRY_LAYOUT)
#: one entry as a struct: snapshots of up to _SMALL producers (most) are read with it, not numpy (whose
#: import and per-call cost dominate there; a scan of small partitions then never imports it)
_ENTRY = struct.Struct(">" + "".join({">i2": "h", ">i4": "i", ">i8": "q"}[t] for _, t in _ENTRY_LAYOUT))
_SMALL = 64
assert _ENTRY.size == ENTRY_SIZE


@functools.cache
def _entry_dtype() -> np.dtype:
    """One entry as a numpy structured dtype, made on first use (numpy is imported only then:
    :mod:`logdoctor.formats.lazy_numpy`)."""
    dtype = np.dtype(_ENTRY_LAYOUT)
    assert dtype.itemsize == ENTRY_SIZE
    return dtype


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer of the snapshot (ProducerSnapshot.ProducerEntry)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1 when none

    @property
    def has_ongoing_txn(self) -> bool:
        return self.current_txn_first_offset >= 0

    @property
    def first_sequence(self) -> int:
        """BatchMetadata.firstSeq: lastSeq - offsetDelta (wrapping as Kafka's DefaultRecordBatch does)."""
        seq = self.last_sequence - self.offset_delta
        return seq + 2**31 if seq < 0 else seq


@dataclass(slots=True)
class ProducerSnapshot:
    version: int
    entries: list[ProducerSnapshotEntry]
    crc: int | None = None  # as stored (None for a snapshot built in memory)
    trailing: bytes = field(default=b"")

    def ongoing_transactions(self) -> dict[int, int]:
        """producer id -> first offset of its ongoing transaction (what recovery seeds from)."""
        return {e.producer_id: e.current_txn_first_offset for e in self.entries if e.has_ongoing_txn}


def parse_producer_snapshot(
    data: bytes | memoryview, *, source: str | None = None, verify_crc: bool = True
) -> ProducerSnapshot:
    """Parse a ``.snapshot``; a bad CRC raises CrcMismatchError (position 2, the CRC field)."""
    buf = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    n = len(buf)
    if n < 2:
        raise TruncatedError("int16 snapshot version", source=source, position=0, found=f"{n} bytes")
    (version,) = struct.unpack_from(">h", buf, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise UnsupportedError(
            f"producer snapshot version {PRODUCER_SNAPSHOT_VERSION}",
            source=source,
            position=0,
            found=str(version),
        )
    if n < HEADER_SIZE:
        raise TruncatedError(
            "a 10-byte header (version, crc, entry count)", source=source, position=n, found=f"{n} bytes"
        )
    stored_crc, count = struct.unpack_from(">Ii", buf, CRC_POSITION)
    if count < 0:
        raise FormatError(
            "a non-negative entry count", source=source, position=ENTRIES_POSITION, found=str(count)
        )
    end = HEADER_SIZE + count * ENTRY_SIZE
    if end > n:
        raise TruncatedError(
            f"{count} entries of {ENTRY_SIZE} bytes",
            source=source,
            position=HEADER_SIZE + ((n - HEADER_SIZE) // ENTRY_SIZE) * ENTRY_SIZE,
            found=f"{n - HEADER_SIZE} bytes of entries",
        )
    if verify_crc:
        computed = crc32c(buf[ENTRIES_POSITION:])
        if computed != stored_crc:
            raise CrcMismatchError(
                stored_crc, computed, source=source, position=CRC_POSITION, what="snapshot"
            )
    if count <= _SMALL:
        entries = [ProducerSnapshotEntry(*row) for row in _ENTRY.iter_unpack(buf[HEADER_SIZE:end])]
    else:
        arr = np.frombuffer(buf, dtype=_entry_dtype(), count=count, offset=HEADER_SIZE)
        cols = [arr[name].astype(np.int64).tolist() for name in _FIELDS]
        entries = [ProducerSnapshotEntry(*row) for row in zip(*cols, strict=True)]
    return ProducerSnapshot(version, entries, stored_crc, bytes(buf[end:]))


def write_producer_snapshot(snapshot: ProducerSnapshot | Iterable[ProducerSnapshotEntry]) -> bytes:
    """The ``.snapshot`` bytes with a freshly computed CRC (entry order kept)."""
    if isinstance(snapshot, ProducerSnapshot):
        entries, version, trailing = snapshot.entries, snapshot.version, snapshot.trailing
    else:
        entries, version, trailing = list(snapshot), PRODUCER_SNAPSHOT_VERSION, b""
    arr = np.zeros(len(entries), dtype=_entry_dtype())
    for name in _FIELDS:
        arr[name] = np.array([getattr(e, name) for e in entries], dtype=np.int64)
    body = struct.pack(">i", len(entries)) + arr.tobytes() + trailing
    return struct.pack(">hI", version, crc32c(body)) + body


__all__ = [
    "PRODUCER_SNAPSHOT_VERSION",
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "parse_producer_snapshot",
    "write_producer_snapshot",
]

"""Lookups in the bytes of a segment's sparse indexes: offset -> position, timestamp -> offset.

Pure functions over index bytes (no file, no log): the one place both ``dump --offsets/--timestamps``
and the Spark data sources look targets up (:mod:`logdoctor.logdir.seek` checks the answers against
the log and walks from there).

Only the *usable* entries take part: the real entries (before a preallocated zero tail; a partial
trailing entry is ignored, as the broker rounds the length down) up to the first that breaks the
order the broker appends in (``OffsetIndex.append`` refuses an offset that does not grow,
``TimeIndex.maybeAppend`` a timestamp or offset that goes down; K:storage/.../log/OffsetIndex.java,
TimeIndex.java) or that points outside the segment. A corrupt index only costs a longer walk.

The two rules (K:storage/src/main/java/org/apache/kafka/storage/internals/log/):

- by offset, :meth:`IndexEntries.floor`: the last entry whose offset is <= the target, as
  ``OffsetIndex.lookup``. An entry (L, P) says "the batch at P ends at L" (or, for indexes written by
  live appends before KAFKA-806, "the append chunk starting at P ends at L"): every offset > L is at
  or after P, so a walk from P cannot miss the target.
- by timestamp, :meth:`IndexEntries.below`: the last entry whose timestamp is *strictly* below the
  target, where ``TimeIndex.lookup`` (used by ``LogSegment.findOffsetByTimestamp``) takes the last
  one <= the target. Either start is followed by a walk to the first record whose timestamp is >= the
  target (``FileRecords.searchForTimestamp``), so the start only has to be at or before that record.
  An entry (T, O) holds the running maximum: every record up to O's batch has a timestamp <= T. With
  T < target none of them can be the answer, whatever O is. With T == target (Kafka's ``<=``) the
  start is right only if O's batch is the *first* to carry T: LogSegment.append and recover move
  maxTimestampAndOffsetSoFar only on a strictly greater timestamp, so Kafka's own entries are such,
  but an index rebuilt by another tool, or hand-made, need not be, and an earlier batch holding a
  record at exactly T would then be skipped. The strict rule needs only the running maximum; it
  reads at most one index interval more, and gives the same answer as Kafka on Kafka's indexes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from logdoctor.formats.index import (
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    offset_index_array,
    real_entry_count,
    slot_count,
    time_index_array,
)
from logdoctor.formats.lazy_numpy import np

__all__ = ["IndexEntries", "offset_entries", "time_entries"]


@functools.cache
def _empty() -> np.ndarray:
    """The empty int64 column every empty :class:`IndexEntries` shares (numpy imported on first use)."""
    return np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class IndexEntries:
    """Usable entries of one index as two int64 arrays: ``keys`` (offsets of an offset index,
    timestamps of a time index: sorted) and ``values`` (positions, or offsets), absolute.

    ``complete`` (time index): trimmed, with no entry dropped for breaking the order (the broker's
    ``largestTimestamp`` of the segment is then the last key).
    """

    keys: np.ndarray = field(default_factory=_empty)
    values: np.ndarray = field(default_factory=_empty)
    complete: bool = False

    def __len__(self) -> int:
        return len(self.keys)

    def __bool__(self) -> bool:
        return len(self.keys) > 0

    def pairs(self) -> list[tuple[int, int]]:
        """(key, value) of every usable entry, in order."""
        return list(zip(self.keys.tolist(), self.values.tolist(), strict=True))

    def _at(self, i: int) -> tuple[int, int] | None:
        return (int(self.keys[i]), int(self.values[i])) if i >= 0 else None

    def floor(self, key: int) -> tuple[int, int] | None:
        """The last entry whose key is <= ``key`` (``OffsetIndex.lookup``); None when every key is above."""
        return self._at(int(np.searchsorted(self.keys, key, side="right")) - 1)

    def below(self, key: int) -> tuple[int, int] | None:
        """The last entry whose key is < ``key`` (the time rule of the module doc); None when none is."""
        return self._at(int(np.searchsorted(self.keys, key, side="left")) - 1)

    @property
    def last(self) -> tuple[int, int] | None:
        return self._at(len(self.keys) - 1)


def _prefix(ok: np.ndarray) -> int:
    """Length of the leading run of True in ``ok``."""
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if len(bad) else len(ok)


def offset_entries(
    data: bytes | memoryview | None,
    base_offset: int,
    *,
    log_size: int | None = None,
    next_base_offset: int | None = None,
    source: str | None = None,
) -> IndexEntries:
    """(absolute offset, position) entries of an ``.index`` usable for seeking (module doc).

    Offsets and positions must grow strictly, offsets lie in [base_offset, next_base_offset) and
    positions in [0, log_size) when those are known; the first entry that does not ends the usable part.
    """
    if not data:
        return IndexEntries()
    n = real_entry_count(data, OFFSET_ENTRY_SIZE)
    if n == 0:
        return IndexEntries()
    arr = offset_index_array(data[: n * OFFSET_ENTRY_SIZE], strict=False, source=source)
    rel = arr["relative_offset"].astype(np.int64)
    pos = arr["position"].astype(np.int64)
    off = rel + base_offset
    ok = (rel >= 0) & (pos >= 0)
    if log_size is not None:
        ok &= pos < log_size
    if next_base_offset is not None:
        ok &= off < next_base_offset
    ok[1:] &= (off[1:] > off[:-1]) & (pos[1:] > pos[:-1])
    k = _prefix(ok)
    return IndexEntries(off[:k], pos[:k], k == n)


def time_entries(
    data: bytes | memoryview | None, base_offset: int, *, source: str | None = None
) -> IndexEntries:
    """(timestamp, absolute offset) entries of a ``.timeindex`` usable for seeking (module doc).

    Timestamps and offsets must never go down; the first entry that does ends the usable part.
    ``complete``: the file is trimmed (no zero-padded tail, whole entries) and no entry was dropped.
    """
    if not data:
        return IndexEntries()
    n = real_entry_count(data, TIME_ENTRY_SIZE)
    if n == 0:
        return IndexEntries()
    trimmed = n == slot_count(data, TIME_ENTRY_SIZE) and len(data) % TIME_ENTRY_SIZE == 0
    arr = time_index_array(data[: n * TIME_ENTRY_SIZE], strict=False, source=source)
    ts = arr["timestamp"].astype(np.int64)
    off = arr["relative_offset"].astype(np.int64) + base_offset
    ok = np.ones(n, dtype=bool)
    ok[1:] = (ts[1:] >= ts[:-1]) & (off[1:] >= off[:-1])
    k = _prefix(ok)
    return IndexEntries(ts[:k], off[:k], trimmed and k == n)

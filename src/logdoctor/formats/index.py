"""Segment index files: ``.index`` (offsets), ``.timeindex`` (timestamps), ``.txnindex`` (aborted txns).

Layouts (big-endian; K: storage/.../log/OffsetIndex.java, TimeIndex.java, AbortedTxn.java):

- ``.index``: int32 relative offset, int32 position (8 bytes). The offset is the last offset of a
  batch (or of an append chunk, see :mod:`logdoctor.formats.recovery`), the position where it starts.
- ``.timeindex``: int64 timestamp, int32 relative offset (12 bytes).
- ``.txnindex``: int16 version (0), int64 producerId, int64 firstOffset, int64 lastOffset,
  int64 lastStableOffset (34 bytes). Never preallocated.

How many entries are real. The broker preallocates a new ``.index``/``.timeindex`` to
``segment.index.bytes`` (10 MiB) rounded down to the entry size and trims it on close or roll
(AbstractIndex.trimToValidSize). When it opens an existing file it takes *every* slot as an entry
(``entries = length / entrySize``, AbstractIndex.createMappedBuffer), so after an unclean shutdown
the zero tail counts as entries and the "last entry" is an all-zero slot, i.e. (baseOffset, 0) for
the offset index and (0, baseOffset) for the time index. DumpLogSegments, reading such a file,
stops at the first slot ``i > 0`` whose offset equals the base offset ("since it is a sparse file,
in the event of a crash there may be many zero entries"). :func:`slot_count` is the broker's count,
:func:`real_entry_count` the DumpLogSegments one.

Sanity checks changed over time; :func:`sanity_check` evaluates them as each era's broker would.

The parsers read big buffers with numpy and up to 4,096 entries with struct; :func:`real_entry_count` runs in
C where the extension is built; the writers and :func:`columns` (the fields of whole entries as columns of
ints, for the checks of a good index) need no numpy, so that `repair`, `move-partition` and `sync-replica`
never import it. Bad bytes raise the typed errors of :mod:`logdoctor.errors` naming the source and the byte
position.
"""

from __future__ import annotations

import enum
import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from logdoctor.errors import TruncatedError, UnsupportedError
from logdoctor.formats import extension
from logdoctor.formats.lazy_numpy import np

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
TXN_ENTRY_SIZE = 34
ABORTED_TXN_VERSION = 0
#: segment.index.bytes default (LogConfig / ServerLogConfigs): 10 MiB.
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

#: each index's entry layout, as the fields of a numpy structured dtype (:func:`_dtype`)
_FIELDS: dict[int, list[tuple[str, str]]] = {
    OFFSET_ENTRY_SIZE: [("relative_offset", ">i4"), ("position", ">i4")],
    TIME_ENTRY_SIZE: [("timestamp", ">i8"), ("relative_offset", ">i4")],
    TXN_ENTRY_SIZE: [
        ("version", ">i2"),
        ("producer_id", ">i8"),
        ("first_offset", ">i8"),
        ("last_offset", ">i8"),
        ("last_stable_offset", ">i8"),
    ],
}
_TXN_NAMES = tuple(name for name, _ in _FIELDS[TXN_ENTRY_SIZE])


@functools.cache
def _dtype(entry_size: int) -> np.dtype:
    """The structured dtype of one entry, made on first use (so that numpy is imported only then:
    :mod:`logdoctor.formats.lazy_numpy`)."""
    dtype = np.dtype(_FIELDS[entry_size])
    assert dtype.itemsize == entry_size
    return dtype


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    """One ``.index`` slot with its absolute offset."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class TimeEntry:
    """One ``.timeindex`` slot with its absolute offset."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One ``.txnindex`` entry (Kafka's AbortedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = ABORTED_TXN_VERSION


def preallocated_size(entry_size: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE) -> int:
    """Size of a freshly created index: ``max_index_size`` rounded down to ``entry_size``."""
    return entry_size * (max_index_size // entry_size)


def _check_whole(data: bytes | memoryview, entry_size: int, what: str, source: str | None) -> int:
    n = len(data)
    if n % entry_size:
        raise TruncatedError(
            f"{what} of whole {entry_size}-byte entries",
            source=source,
            position=n - n % entry_size,
            found=f"{n % entry_size} trailing bytes (file length {n})",
        )
    return n // entry_size


def _entries(data: bytes | memoryview, entry_size: int, what: str, strict: bool, source: str | None) -> int:
    """The whole entries of ``data``: a partial trailing entry is a TruncatedError when ``strict``, else
    left out as the broker does (it rounds the length down)."""
    return _check_whole(data, entry_size, what, source) if strict else len(data) // entry_size


def _view(data: bytes | memoryview, dtype: np.dtype, count: int) -> np.ndarray:
    return np.frombuffer(data, dtype=dtype, count=count)


def offset_index_array(
    data: bytes | memoryview, *, strict: bool = True, source: str | None = None
) -> np.ndarray:
    """The ``.index`` slots as a structured array (``relative_offset``, ``position``), no copy.

    ``strict=False`` ignores a partial trailing entry as the broker does (it rounds the length down).
    """
    count = _entries(data, OFFSET_ENTRY_SIZE, "offset index", strict, source)
    return _view(data, _dtype(OFFSET_ENTRY_SIZE), count)


def time_index_array(
    data: bytes | memoryview, *, strict: bool = True, source: str | None = None
) -> np.ndarray:
    """The ``.timeindex`` slots as a structured array (``timestamp``, ``relative_offset``), no copy."""
    count = _entries(data, TIME_ENTRY_SIZE, "time index", strict, source)
    return _view(data, _dtype(TIME_ENTRY_SIZE), count)


def txn_index_array(
    data: bytes | memoryview, *, strict: bool = True, source: str | None = None
) -> np.ndarray:
    """The ``.txnindex`` entries as a structured array; versions other than 0 raise UnsupportedError.

    TransactionIndex reads entries while at least 34 bytes remain, so the broker silently skips a
    partial tail; ``strict=True`` reports it as a TruncatedError instead.
    """
    count = _entries(data, TXN_ENTRY_SIZE, "transaction index", strict, source)
    arr = _view(data, _dtype(TXN_ENTRY_SIZE), count)
    # Kafka reads the version as the first *byte* of the int16 (AbortedTxn.version uses buffer.get)
    # and rejects it when > 0; we accept only the exact int16 0 that it writes.
    bad = np.flatnonzero(arr["version"] != ABORTED_TXN_VERSION)
    if bad.size:
        i = int(bad[0])
        raise UnsupportedError(
            f"aborted transaction version {ABORTED_TXN_VERSION}",
            source=source,
            position=i * TXN_ENTRY_SIZE,
            found=f"version {int(arr['version'][i])}",
        )
    return arr


#: up to this many entries :func:`parse_offset_index` and :func:`parse_time_index` unpack with struct: a
#: command that reads a few entries (a last entry, a trimmed index of a small segment) imports no numpy
#: (~45 ms); a bigger index is read as a numpy column, faster per entry
_SMALL_PARSE = 4096


def parse_offset_index(
    data: bytes | memoryview, base_offset: int, *, strict: bool = True, source: str | None = None
) -> list[OffsetEntry]:
    """Every ``length // 8`` slot of a ``.index`` (a preallocated zero tail included)."""
    if len(data) <= _SMALL_PARSE * OFFSET_ENTRY_SIZE:
        whole = memoryview(data)[: _entries(data, OFFSET_ENTRY_SIZE, "offset index", strict, source) * 8]
        return [OffsetEntry(base_offset + r, p) for r, p in struct.iter_unpack(">ii", whole)]
    arr = offset_index_array(data, strict=strict, source=source)
    rel = arr["relative_offset"].astype(np.int64).tolist()
    pos = arr["position"].astype(np.int64).tolist()
    return [OffsetEntry(base_offset + r, p) for r, p in zip(rel, pos, strict=True)]


def parse_time_index(
    data: bytes | memoryview, base_offset: int, *, strict: bool = True, source: str | None = None
) -> list[TimeEntry]:
    """Every ``length // 12`` slot of a ``.timeindex`` (a preallocated zero tail included)."""
    if len(data) <= _SMALL_PARSE * TIME_ENTRY_SIZE:
        whole = memoryview(data)[: _entries(data, TIME_ENTRY_SIZE, "time index", strict, source) * 12]
        return [TimeEntry(t, base_offset + r) for t, r in struct.iter_unpack(">qi", whole)]
    arr = time_index_array(data, strict=strict, source=source)
    ts = arr["timestamp"].astype(np.int64).tolist()
    rel = arr["relative_offset"].astype(np.int64).tolist()
    return [TimeEntry(t, base_offset + r) for t, r in zip(ts, rel, strict=True)]


def parse_txn_index(
    data: bytes | memoryview, *, strict: bool = True, source: str | None = None
) -> list[AbortedTxn]:
    """The entries of a ``.txnindex``."""
    arr = txn_index_array(data, strict=strict, source=source)
    cols = [arr[name].astype(np.int64).tolist() for name in _TXN_NAMES]
    return [AbortedTxn(pid, first, last, lso, ver) for ver, pid, first, last, lso in zip(*cols, strict=True)]


def _column(
    code: str, values: list[int], what: str = "a value outside the int64 range", error: type = OverflowError
) -> bytes:
    """``values`` as big-endian fields of the struct ``code`` ("h", "i", "q"); ``error(what)`` when one does
    not fit."""
    try:
        return struct.pack(f">{len(values)}{code}", *values)
    except struct.error:
        raise error(what) from None


def _interleave(columns: list[tuple[bytes, int]], n: int) -> bytes:
    """``n`` entries from their fields' columns (big-endian bytes and field width each), each byte of a
    field put in place by one strided slice assignment (C loops: no numpy, whose import costs a `repair`
    more than writing its indexes)."""
    entry = sum(width for _, width in columns)
    out = bytearray(entry * n)
    at = 0
    for col, width in columns:
        for k in range(width):
            out[at + k :: entry] = col[k::width]
        at += width
    return bytes(out)


def columns(data: bytes | memoryview, fields: tuple[tuple[str, int], ...]) -> tuple[tuple[int, ...], ...]:
    """The whole entries of ``data`` as one tuple of Python ints per field (``fields``: each field's
    struct code and width, big-endian, in entry order): the inverse of :func:`_interleave`, without
    numpy (for the checks of whole indexes, ``checks.indexes.whole_index_ok``)."""
    entry = sum(width for _, width in fields)
    n = len(data) // entry
    raw = bytes(data[: n * entry])
    out = []
    at = 0
    for code, width in fields:
        col = bytearray(width * n)
        for k in range(width):
            col[k::width] = raw[at + k :: entry]
        out.append(struct.unpack(f">{n}{code}", col))
        at += width
    return tuple(out)


def _relative(offsets: list[int], base_offset: int) -> bytes:
    what = f"offset outside the int32 range relative to base offset {base_offset}"
    return _column("i", [o - base_offset for o in offsets], what, ValueError)


def write_offset_index(entries: Iterable[OffsetEntry], base_offset: int, *, size: int | None = None) -> bytes:
    """Bytes of a ``.index`` holding ``entries``; ``size`` pads with zero slots (e.g. preallocation).

    Raises ValueError when an entry does not fit (relative offset or position outside int32).
    """
    entries = list(entries)
    what = "index position outside the int32 range"
    positions = _column("i", [e.position for e in entries], what, ValueError)
    rel = _relative([e.offset for e in entries], base_offset)
    return _pad(_interleave([(rel, 4), (positions, 4)], len(entries)), size, OFFSET_ENTRY_SIZE)


def write_time_index(entries: Iterable[TimeEntry], base_offset: int, *, size: int | None = None) -> bytes:
    """Bytes of a ``.timeindex`` holding ``entries``; ``size`` pads with zero slots."""
    entries = list(entries)
    timestamps = _column("q", [e.timestamp for e in entries])
    rel = _relative([e.offset for e in entries], base_offset)
    return _pad(_interleave([(timestamps, 8), (rel, 4)], len(entries)), size, TIME_ENTRY_SIZE)


def write_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """Bytes of a ``.txnindex`` holding ``entries``."""
    entries = list(entries)
    # the int16 version wraps (as a cast to the field would); the int64 fields raise OverflowError
    versions = _column("h", [(e.version + 2**15) % 2**16 - 2**15 for e in entries])
    cols = [(versions, 2)]
    cols += [(_column("q", [getattr(e, name) for e in entries]), 8) for name in _TXN_NAMES[1:]]
    return _interleave(cols, len(entries))


def _pad(raw: bytes, size: int | None, entry_size: int) -> bytes:
    if size is None:
        return raw
    if size < len(raw) or size % entry_size:
        raise ValueError(f"size {size} must be a multiple of {entry_size} and at least {len(raw)}")
    return raw + bytes(size - len(raw))


def slot_count(data: bytes | memoryview, entry_size: int) -> int:
    """The entries the broker assumes when it opens an index: ``length // entry_size``."""
    return len(data) // entry_size


def real_entry_count(data: bytes | memoryview, entry_size: int) -> int:
    """Entries before the trailing zero slots of a preallocated (untrimmed) index.

    DumpLogSegments' rule: stop at the first slot ``i > 0`` whose relative offset is 0 (an offset
    equal to the base offset can only be a zero slot, the first batch is never indexed). Slot 0 is
    not counted either when it is all zero bytes. A ``.txnindex`` (34) is never preallocated: every
    whole entry is real.
    """
    if entry_size == TXN_ENTRY_SIZE:
        return len(data) // TXN_ENTRY_SIZE
    speedups = _speedups()
    if speedups is not None and entry_size in (OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE):
        # the same rule over the whole buffer in C (formats/_speedups.c), without importing numpy (~45 ms of
        # a `repair` or `move-partition` that reads one index)
        return int(speedups.index_real_entries(data, entry_size))
    return real_entry_count_numpy(data, entry_size)


@functools.cache
def _speedups() -> Any:
    """The C extension, or None (not built, or ``LOGDOCTOR_PURE_PYTHON``)."""
    return extension.load()


def real_entry_count_numpy(data: bytes | memoryview, entry_size: int) -> int:
    """:func:`real_entry_count` of a ``.index`` (8) or ``.timeindex`` (12) with numpy: where the C extension
    is not there, and the twin its C form is tested against (tests/checks/test_index_c.py)."""
    if entry_size == OFFSET_ENTRY_SIZE:
        arr = _view(data, _dtype(OFFSET_ENTRY_SIZE), len(data) // 8)
        rel = arr["relative_offset"]
        first_zero_slot = arr.size > 0 and rel[0] == 0 and arr["position"][0] == 0
    elif entry_size == TIME_ENTRY_SIZE:
        arr = _view(data, _dtype(TIME_ENTRY_SIZE), len(data) // 12)
        rel = arr["relative_offset"]
        first_zero_slot = arr.size > 0 and rel[0] == 0 and arr["timestamp"][0] == 0
    else:
        raise ValueError(f"unknown index entry size {entry_size}")
    if arr.size == 0 or first_zero_slot:
        return 0
    zeros = np.flatnonzero(rel[1:] == 0)
    return int(zeros[0]) + 1 if zeros.size else int(arr.size)


def zero_tail_is_clean(data: bytes | memoryview, entry_size: int) -> bool:
    """True when every byte after the real entries is zero (a plain preallocated tail)."""
    start = real_entry_count(data, entry_size) * entry_size
    tail = np.frombuffer(data, dtype=np.uint8)[start:]
    return not tail.any()


# --- sanity checks as each Kafka era evaluated them -------------------------------------------------


class SanityEra(enum.Enum):
    """Kafka versions whose index sanity checks differ.

    K: core/src/main/scala/kafka/log/OffsetIndex.scala at each tag (the check moved to
    storage/.../OffsetIndex.java in 3.5).
    """

    #: 0.8.x-1.0.x: ``require(entries == 0 || lastOffset > baseOffset)`` ("no larger than"),
    #: an IllegalArgumentException ("requirement failed: ...").
    KAFKA_0_8 = "0.8"
    #: 1.1.x (KAFKA-6324): the same condition (fails when lastOffset <= baseOffset), now a
    #: CorruptIndexException ("no greater than").
    KAFKA_1_1 = "1.1"
    #: 2.0.0 on (KAFKA-7076, commit 2db7eb7, first released in 2.0.0): fails only when
    #: lastOffset < baseOffset ("less than"), so an all-zero padded index passes.
    KAFKA_2_0 = "2.0"


class IndexKind(enum.Enum):
    OFFSET = "offset"
    TIME = "time"
    TXN = "txn"


@dataclass(frozen=True, slots=True)
class SanityVerdict:
    """What one era's ``sanityCheck()`` says about an index file: ``message is None`` means it passes."""

    era: SanityEra
    exception: str | None  # Java exception class that era throws, None when it passes
    message: str | None

    @property
    def passed(self) -> bool:
        return self.message is None


def _era_exception(era: SanityEra) -> str:
    return "IllegalArgumentException" if era is SanityEra.KAFKA_0_8 else "CorruptIndexException"


def _size_problem(what: str, name: str, length: int, entry_size: int, era: SanityEra) -> str | None:
    """The sanity check's message for a length that is not a multiple of the entry size (None when it is)."""
    if length % entry_size == 0:
        return None
    old = era is SanityEra.KAFKA_0_8
    prefix, rule = ("requirement failed: ", "not positive or not") if old else ("", "neither positive nor")
    found = f"found {length} bytes which is {rule} a multiple of {entry_size}."
    return f"{prefix}{what} {name} is corrupt, {found}"


#: how each era words a last offset it refuses (no larger / no greater: also one equal to the base offset)
_LAST_OFFSET_WORDS = {
    SanityEra.KAFKA_0_8: "no larger than",
    SanityEra.KAFKA_1_1: "no greater than",
    SanityEra.KAFKA_2_0: "less than",
}


def _offset_index_check(data: bytes | memoryview, base_offset: int, era: SanityEra, name: str) -> str | None:
    length = len(data)
    entries = length // OFFSET_ENTRY_SIZE
    if entries:
        rel = int.from_bytes(data[(entries - 1) * 8 : (entries - 1) * 8 + 4], "big", signed=True)
        last = base_offset + rel
        if last < base_offset or (last == base_offset and era is not SanityEra.KAFKA_2_0):
            prefix = "requirement failed: " if era is SanityEra.KAFKA_0_8 else ""
            return (
                f"{prefix}Corrupt index found, index file ({name}) has non-zero size but the last offset is "
                f"{last} which is {_LAST_OFFSET_WORDS[era]} the base offset {base_offset}."
            )
    return _size_problem("Index file", name, length, OFFSET_ENTRY_SIZE, era)


def _time_index_check(data: bytes | memoryview, base_offset: int, era: SanityEra, name: str) -> str | None:
    # The time index exists from 0.10.1; its conditions never changed, only the exception and wording.
    length = len(data)
    entries = length // TIME_ENTRY_SIZE
    old = era is SanityEra.KAFKA_0_8
    prefix = "requirement failed: " if old else ""
    if entries:
        first_ts = int.from_bytes(data[0:8], "big", signed=True)
        at = (entries - 1) * TIME_ENTRY_SIZE
        last_ts = int.from_bytes(data[at : at + 8], "big", signed=True)
        last_off = base_offset + int.from_bytes(data[at + 8 : at + 12], "big", signed=True)
        if last_ts < first_ts:
            word = "no larger than" if old else "less than"
            return (
                f"{prefix}Corrupt time index found, time index file ({name}) has non-zero size but the last "
                f"timestamp is {last_ts} which is {word} the first timestamp {first_ts}"
            )
        if last_off < base_offset:
            word = "smaller than" if old else "less than"
            return (
                f"{prefix}Corrupt time index found, time index file ({name}) has non-zero size but the last "
                f"offset is {last_off} which is {word} the first offset {base_offset}"
            )
    return _size_problem("Time index file", name, length, TIME_ENTRY_SIZE, era)


def _txn_index_check(data: bytes | memoryview, base_offset: int, name: str) -> str | None:
    # TransactionIndex.sanityCheck (0.11 on): every aborted txn must end at or after the start offset.
    arr = np.frombuffer(data, dtype=_dtype(TXN_ENTRY_SIZE), count=len(data) // TXN_ENTRY_SIZE)
    bad = np.flatnonzero(arr["last_offset"] < base_offset)
    if bad.size:
        e = arr[int(bad[0])]
        return (
            f"Last offset of aborted transaction AbortedTxn(version={int(e['version'])}, "
            f"producerId={int(e['producer_id'])}, firstOffset={int(e['first_offset'])}, "
            f"lastOffset={int(e['last_offset'])}, lastStableOffset={int(e['last_stable_offset'])}) in index "
            f"{name} is less than start offset {base_offset}"
        )
    return None


def sanity_check(
    kind: IndexKind, data: bytes | memoryview, base_offset: int, era: SanityEra, *, source: str | None = None
) -> SanityVerdict:
    """Evaluate ``sanityCheck()`` of the given index kind as a broker of ``era`` would.

    The file is opened the broker's way (every ``length // entrySize`` slot is an entry, so a
    zero tail makes the last entry an all-zero slot). Never raises on bad bytes: the verdict carries
    the message that era's broker would throw, with ``source`` in place of the absolute path.
    """
    name = source or "<buffer>"
    if kind is IndexKind.OFFSET:
        message = _offset_index_check(data, base_offset, era, name)
    elif kind is IndexKind.TIME:
        message = _time_index_check(data, base_offset, era, name)
    else:
        message = _txn_index_check(data, base_offset, name)
    if message is None:
        return SanityVerdict(era, None, None)
    exception = "CorruptIndexException" if kind is IndexKind.TXN else _era_exception(era)
    return SanityVerdict(era, exception, message)


def sanity_check_all_eras(
    kind: IndexKind, data: bytes | memoryview, base_offset: int, *, source: str | None = None
) -> dict[SanityEra, SanityVerdict]:
    """:func:`sanity_check` for every era, e.g. to tell which broker versions would reject a file."""
    return {era: sanity_check(kind, data, base_offset, era, source=source) for era in SanityEra}


__all__ = [
    "ABORTED_TXN_VERSION",
    "DEFAULT_MAX_INDEX_SIZE",
    "OFFSET_ENTRY_SIZE",
    "TIME_ENTRY_SIZE",
    "TXN_ENTRY_SIZE",
    "AbortedTxn",
    "IndexKind",
    "OffsetEntry",
    "SanityEra",
    "SanityVerdict",
    "TimeEntry",
    "columns",
    "offset_index_array",
    "parse_offset_index",
    "parse_time_index",
    "parse_txn_index",
    "preallocated_size",
    "real_entry_count",
    "real_entry_count_numpy",
    "sanity_check",
    "sanity_check_all_eras",
    "slot_count",
    "time_index_array",
    "txn_index_array",
    "write_offset_index",
    "write_time_index",
    "write_txn_index",
    "zero_tail_is_clean",
]

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.errors import FormatError, TruncatedError, UnsupportedError
from logdoctor.formats import index as ix
from logdoctor.formats.index import (
    AbortedTxn,
    IndexKind,
    OffsetEntry,
    SanityEra,
    TimeEntry,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
BASE = st.integers(0, 2**62)


@st.composite
def offset_entries(draw):
    base = draw(BASE)
    rels = draw(st.lists(INT32, max_size=40))
    positions = draw(st.lists(INT32, min_size=len(rels), max_size=len(rels)))
    return base, [OffsetEntry(base + r, p) for r, p in zip(rels, positions, strict=True)]


@given(offset_entries())
def test_offset_index_round_trip_and_layout(case):
    base, entries = case
    data = ix.write_offset_index(entries, base)
    # independent layout check with struct
    expected = b"".join(struct.pack(">ii", e.offset - base, e.position) for e in entries)
    assert data == expected
    assert ix.parse_offset_index(data, base) == entries


@given(BASE, st.lists(st.tuples(INT64, INT32), max_size=40))
def test_time_index_round_trip_and_layout(base, raw):
    entries = [TimeEntry(ts, base + rel) for ts, rel in raw]
    data = ix.write_time_index(entries, base)
    assert data == b"".join(struct.pack(">qi", ts, rel) for ts, rel in raw)
    assert ix.parse_time_index(data, base) == entries


@given(st.lists(st.tuples(INT64, INT64, INT64, INT64), max_size=30))
def test_txn_index_round_trip_and_layout(raw):
    entries = [AbortedTxn(*t) for t in raw]
    data = ix.write_txn_index(entries)
    assert data == b"".join(struct.pack(">hqqqq", 0, *t) for t in raw)
    assert ix.parse_txn_index(data) == entries


@given(st.binary(max_size=300), BASE)
def test_arbitrary_bytes_parse_or_raise_typed(data, base):
    for parse in (
        lambda: ix.parse_offset_index(data, base, source="f.index"),
        lambda: ix.parse_time_index(data, base, source="f.timeindex"),
        lambda: ix.parse_txn_index(data, source="f.txnindex"),
    ):
        try:
            parse()
        except FormatError as exc:
            assert exc.source is not None
            assert exc.position is not None and 0 <= exc.position <= len(data)
    # the scan functions never raise
    ix.real_entry_count(data, 8)
    ix.real_entry_count(data, 12)
    for kind in IndexKind:
        ix.sanity_check_all_eras(kind, data, base)


def test_partial_entry_is_typed_error_with_position():
    data = ix.write_offset_index([OffsetEntry(105, 4200)], 100) + b"\x00\x01\x02"
    with pytest.raises(TruncatedError) as err:
        ix.parse_offset_index(data, 100, source="00000000000000000100.index")
    assert err.value.position == 8 and err.value.source == "00000000000000000100.index"
    # the broker rounds the length down: lenient mode does the same
    assert ix.parse_offset_index(data, 100, strict=False) == [OffsetEntry(105, 4200)]
    with pytest.raises(TruncatedError) as err:
        ix.parse_time_index(b"\x00" * 13, 0, source="x.timeindex")
    assert err.value.position == 12
    with pytest.raises(TruncatedError) as err:
        ix.parse_txn_index(b"\x00" * 40, source="x.txnindex")
    assert err.value.position == 34


def test_txn_index_unknown_version_names_entry():
    good = ix.write_txn_index([AbortedTxn(1, 2, 3, 4)])
    bad = bytearray(good * 2)
    bad[34:36] = struct.pack(">h", 1)
    with pytest.raises(UnsupportedError) as err:
        ix.parse_txn_index(bytes(bad), source="t.txnindex")
    assert err.value.position == 34 and "version 1" in str(err.value)


def test_preallocated_sizes_match_kafka_rounding():
    # roundDownToExactMultiple(10 MiB, entrySize)
    assert ix.preallocated_size(8) == 10485760
    assert ix.preallocated_size(12) == 10485756  # as the MANIFEST's git blobs of real files say


def test_real_entry_count_on_untrimmed_index():
    base = 1000
    entries = [OffsetEntry(1050, 4100), OffsetEntry(1090, 8300), OffsetEntry(1130, 12500)]
    data = ix.write_offset_index(entries, base, size=ix.preallocated_size(8))
    assert len(data) == 10485760
    assert ix.slot_count(data, 8) == 1310720  # what the broker assumes on open
    assert ix.real_entry_count(data, 8) == 3  # what DumpLogSegments shows
    assert ix.zero_tail_is_clean(data, 8)
    assert ix.real_entry_count(bytes(ix.preallocated_size(8)), 8) == 0
    assert ix.real_entry_count(b"", 8) == 0
    times = [TimeEntry(1_700_000_000_000, 1050), TimeEntry(1_700_000_000_500, 1130)]
    tdata = ix.write_time_index(times, base, size=12 * 100)
    assert ix.real_entry_count(tdata, 12) == 2
    assert ix.real_entry_count(bytes(1200), 12) == 0
    dirty = bytearray(data[:800])
    dirty[-1] = 7
    assert not ix.zero_tail_is_clean(bytes(dirty), 8)


def test_sanity_check_eras_on_zero_padded_index():
    """The field report: an unclean shutdown leaves the preallocated index untrimmed, so the last
    slot is zero -> last offset == base offset. 0.10 and 1.1 reject it, 2.0+ (KAFKA-7076) accepts."""
    base = 8365023
    data = ix.write_offset_index([OffsetEntry(base + 40, 4100)], base, size=8 * 64)
    verdicts = ix.sanity_check_all_eras(IndexKind.OFFSET, data, base, source="/kafka-logs/t-0/x.index")
    old = verdicts[SanityEra.KAFKA_0_8]
    assert not old.passed and old.exception == "IllegalArgumentException"
    assert (
        f"has non-zero size but the last offset is {base} which is no larger than the base offset {base}."
        in old.message
    )
    assert old.message.startswith("requirement failed: Corrupt index found")
    mid = verdicts[SanityEra.KAFKA_1_1]
    assert mid.exception == "CorruptIndexException" and "no greater than" in mid.message
    assert verdicts[SanityEra.KAFKA_2_0].passed
    # a trimmed index passes everywhere
    trimmed = ix.write_offset_index([OffsetEntry(base + 40, 4100)], base)
    assert all(v.passed for v in ix.sanity_check_all_eras(IndexKind.OFFSET, trimmed, base).values())
    # an entry below the base offset fails everywhere, a bad length too
    below = ix.write_offset_index([OffsetEntry(base - 1, 0)], base)
    assert not any(v.passed for v in ix.sanity_check_all_eras(IndexKind.OFFSET, below, base).values())
    odd = ix.sanity_check(IndexKind.OFFSET, b"\x00" * 12, 0, SanityEra.KAFKA_2_0)
    assert "found 12 bytes which is neither positive nor a multiple of 8" in odd.message


def test_sanity_check_zero_padded_time_index_fails_in_every_era():
    base = 0
    data = ix.write_time_index([TimeEntry(1_600_000_000_000, 5)], base, size=12 * 10)
    for verdict in ix.sanity_check_all_eras(IndexKind.TIME, data, base).values():
        assert not verdict.passed
        assert "the last timestamp is 0" in verdict.message
    # an all-zero preallocated time index passes (first == last == 0)
    assert all(v.passed for v in ix.sanity_check_all_eras(IndexKind.TIME, bytes(120), 0).values())


def test_txn_index_sanity_check():
    data = ix.write_txn_index([AbortedTxn(7, 10, 20, 21), AbortedTxn(8, 1, 5, 6)])
    verdict = ix.sanity_check(IndexKind.TXN, data, 10, SanityEra.KAFKA_2_0, source="t.txnindex")
    assert not verdict.passed and "lastOffset=5" in verdict.message and "start offset 10" in verdict.message
    assert ix.sanity_check(IndexKind.TXN, data, 5, SanityEra.KAFKA_2_0).passed


def test_writer_rejects_unrepresentable_entries():
    with pytest.raises(ValueError):
        ix.write_offset_index([OffsetEntry(2**31 + 10, 0)], 0)
    with pytest.raises(ValueError):
        ix.write_offset_index([OffsetEntry(1, 0)], 0, size=12)


def _numpy_bytes(entry_size: int, columns: dict[str, list[int]], n: int) -> bytes:
    """What the writers wrote with numpy before they were written without it (a structured array of the
    entry's big-endian fields, each column cast from int64): the oracle of the numpy-free writers."""
    import numpy as np

    arr = np.zeros(n, dtype=np.dtype(ix._FIELDS[entry_size]))
    for name, values in columns.items():
        if n:
            arr[name] = np.array(values, dtype=np.int64)
    return arr.tobytes()


@given(offset_entries(), st.integers(0, 3))
def test_offset_index_writer_matches_numpy(case, pad):
    base, entries = case
    expected = _numpy_bytes(
        8, {"relative_offset": [e.offset - base for e in entries], "position": [e.position for e in entries]},
        len(entries),
    )
    assert ix.write_offset_index(entries, base) == expected
    size = 8 * (len(entries) + pad)
    assert ix.write_offset_index(entries, base, size=size) == expected + bytes(8 * pad)


@given(BASE, st.lists(st.tuples(INT64, INT32), max_size=80))
def test_time_index_writer_matches_numpy(base, raw):
    entries = [TimeEntry(ts, base + rel) for ts, rel in raw]
    expected = _numpy_bytes(
        12, {"timestamp": [t for t, _ in raw], "relative_offset": [r for _, r in raw]}, len(raw)
    )
    assert ix.write_time_index(entries, base) == expected


@given(st.lists(st.tuples(st.integers(-(2**15), 2**15 - 1), INT64, INT64, INT64, INT64), max_size=30))
def test_txn_index_writer_matches_numpy(raw):
    entries = [AbortedTxn(pid, first, last, lso, version) for version, pid, first, last, lso in raw]
    names = ("version", "producer_id", "first_offset", "last_offset", "last_stable_offset")
    expected = _numpy_bytes(34, {name: [t[i] for t in raw] for i, name in enumerate(names)}, len(raw))
    assert ix.write_txn_index(entries) == expected


@given(BASE, st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40))
def test_writers_reject_what_numpy_rejected(base, rel, position):
    """Out of int32 range: a relative offset or position raises ValueError (the ranges were checked
    before numpy's cast), in range the bytes are written."""
    fits = -(2**31) <= rel < 2**31 and -(2**31) <= position < 2**31
    if fits:
        ix.write_offset_index([OffsetEntry(base + rel, position)], base)
    else:
        with pytest.raises(ValueError):
            ix.write_offset_index([OffsetEntry(base + rel, position)], base)
    if -(2**31) <= rel < 2**31:
        ix.write_time_index([TimeEntry(position, base + rel)], base)
    else:
        with pytest.raises(ValueError):
            ix.write_time_index([TimeEntry(position, base + rel)], base)
    with pytest.raises(OverflowError):
        ix.write_time_index([TimeEntry(2**63, base + 1)], base)


@given(st.binary(max_size=400), st.sampled_from([((("i", 4), ("i", 4)), 8), ((("q", 8), ("i", 4)), 12)]))
def test_columns_match_numpy(data, layout):
    import numpy as np

    fields, size = layout
    names = ["a", "b"]
    dtype = np.dtype([(name, f">i{width}") for name, (_, width) in zip(names, fields, strict=True)])
    arr = np.frombuffer(data[: len(data) // size * size], dtype=dtype)
    assert ix.columns(data, fields) == tuple(tuple(arr[name].astype(np.int64).tolist()) for name in names)


def _parsed_or_error(parse, data: bytes, strict: bool):  # type: ignore[no-untyped-def]
    try:
        return parse(data, 1_000, strict=strict, source="x.index")
    except TruncatedError as e:
        return ("TruncatedError", str(e), e.position)


@settings(max_examples=tiers.examples(300), deadline=None)
@given(data=st.binary(max_size=400), strict=st.booleans())
def test_small_indexes_parse_with_struct_as_with_numpy(data: bytes, strict: bool) -> None:
    """Up to ``_SMALL_PARSE`` entries the offset and time index parsers unpack with struct (no numpy import);
    the entries, signs and the error of a partial trailing entry are the numpy path's."""
    for parse in (ix.parse_offset_index, ix.parse_time_index):
        small = _parsed_or_error(parse, data, strict)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(ix, "_SMALL_PARSE", -1)
            assert _parsed_or_error(parse, data, strict) == small

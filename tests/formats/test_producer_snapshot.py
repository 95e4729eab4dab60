from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from logdoctor.errors import CrcMismatchError, FormatError, TruncatedError, UnsupportedError
from logdoctor.formats import producer_snapshot as ps
from logdoctor.formats.producer_snapshot import ProducerSnapshotEntry

I16 = st.integers(-(2**15), 2**15 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)
ENTRY = st.builds(ProducerSnapshotEntry, I64, I16, I32, I64, I32, I64, I32, I64)


def _independent(entries) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(
        struct.pack(
            ">qhiqiqiq",
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for e in entries
    )
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


@given(st.lists(ENTRY, max_size=12))
def test_round_trip_against_independent_layout(entries):
    data = ps.write_producer_snapshot(entries)
    assert data == _independent(entries)
    parsed = ps.parse_producer_snapshot(data)
    assert parsed.entries == entries and parsed.version == 1
    assert ps.write_producer_snapshot(parsed) == data


def test_empty_snapshot_is_ten_bytes():
    data = ps.write_producer_snapshot([])
    assert len(data) == 10 and data[:2] == b"\x00\x01" and data[6:] == b"\x00\x00\x00\x00"


def test_ongoing_transactions_and_first_sequence():
    e = ProducerSnapshotEntry(7, 0, 11, 11, 2, 1, -1, 5)
    idle = ProducerSnapshotEntry(8, 0, -1, -1, 0, -1, -1, -1)
    snap = ps.parse_producer_snapshot(ps.write_producer_snapshot([e, idle]))
    assert snap.ongoing_transactions() == {7: 5}
    assert e.first_sequence == 9
    assert ProducerSnapshotEntry(1, 0, 1, 0, 3, 0, 0, -1).first_sequence == 2**31 - 2  # wraps like Kafka


def test_corruption_is_typed_with_position():
    data = bytearray(ps.write_producer_snapshot([ProducerSnapshotEntry(1, 0, 1, 1, 0, 1, -1, -1)]))
    bad = bytearray(data)
    bad[20] ^= 1
    with pytest.raises(CrcMismatchError) as err:
        ps.parse_producer_snapshot(bytes(bad), source="00000000000000000009.snapshot")
    assert err.value.position == 2 and err.value.source == "00000000000000000009.snapshot"
    assert ps.parse_producer_snapshot(bytes(bad), verify_crc=False).entries[0].last_sequence == 1 + 2**24
    with pytest.raises(TruncatedError) as err:
        ps.parse_producer_snapshot(bytes(data[:-5]), source="s")
    assert err.value.position == 10
    wrong_version = b"\x00\x02" + bytes(data[2:])
    with pytest.raises(UnsupportedError):
        ps.parse_producer_snapshot(wrong_version)
    with pytest.raises(TruncatedError):
        ps.parse_producer_snapshot(b"\x00")
    negative = bytes(data[:6]) + struct.pack(">i", -1)
    with pytest.raises(FormatError):
        ps.parse_producer_snapshot(negative)


@given(st.binary(max_size=150))
def test_arbitrary_bytes_typed(data):
    try:
        ps.parse_producer_snapshot(data, source="s")
    except FormatError as exc:
        assert exc.source == "s" and exc.position is not None and 0 <= exc.position <= len(data)

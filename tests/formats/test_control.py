"""Control records: every real control record parses and re-encodes to its own bytes; built
markers and KRaft records round trip; kafka-python reads our transaction markers."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch

import realworld
from logdoctor.errors import CorruptRecordError, FormatError, UnsupportedError
from logdoctor.formats import control as c
from logdoctor.formats.records import RecordSpec, iter_batches
from logdoctor.formats.writer import build_record_batch


def test_real_control_records_round_trip(realworld_dir) -> None:
    seen: Counter[str] = Counter()
    for suffix in (".log", ".checkpoint"):
        for path in realworld.files(suffix=suffix):
            for batch in iter_batches(path.read_bytes(), source=str(path)):
                if batch.magic < 2 or not batch.is_control:
                    continue
                for rec in batch.records():
                    parsed = c.parse_control_record(
                        rec.key, rec.value, source=str(path), position=batch.position
                    )
                    assert parsed.control_type is not c.ControlType.UNKNOWN
                    assert c.build_control_key(parsed.control_type, version=parsed.key_version) == rec.key
                    assert c.encode_control_value(parsed.value) == rec.value
                    seen[parsed.control_type.name] += 1
    # KRaft metadata logs hold leader changes; snapshots start and end with header/footer
    assert seen["LEADER_CHANGE"] > 0 and seen["SNAPSHOT_HEADER"] > 0 and seen["SNAPSHOT_FOOTER"] > 0, seen


@given(st.booleans(), st.integers(-(2**31), 2**31 - 1))
def test_end_txn_marker_round_trip_and_kafka_python(committed: bool, epoch: int) -> None:
    key, value = c.build_end_txn_marker(committed, epoch)
    parsed = c.parse_control_record(key, value)
    assert parsed.value == c.EndTxnMarker(committed, epoch)
    data = build_record_batch(
        [RecordSpec(key=key, value=value, timestamp=5)],
        base_offset=10,
        is_control=True,
        is_transactional=True,
        producer_id=4,
        producer_epoch=1,
    )
    (kp,) = list(KpBatch(data))
    assert (kp.version, kp.type, kp.commit, kp.abort) == (
        0,
        int(parsed.control_type),
        committed,
        not committed,
    )


uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
tags = st.lists(
    st.tuples(st.integers(0, 50), st.binary(max_size=5)), max_size=2, unique_by=lambda t: t[0]
).map(lambda ts: tuple(sorted(ts)))
lc_voters = st.lists(st.builds(c.LeaderChangeVoter, st.integers(-1, 2**31 - 1), uuids, tags), max_size=3).map(
    tuple
)
endpoints = st.lists(
    st.builds(c.Endpoint, st.text(max_size=5), st.text(max_size=10), st.integers(0, 65535), tags), max_size=2
).map(tuple)
voters = st.lists(
    st.builds(
        c.Voter,
        st.integers(0, 2**31 - 1),
        uuids,
        endpoints,
        st.builds(c.KRaftVersionFeature, st.integers(0, 5), st.integers(0, 5), tags),
        tags,
    ),
    max_size=3,
).map(tuple)
values = st.one_of(
    st.builds(c.LeaderChangeMessage, st.just(1), st.integers(-1, 2**31 - 1), lc_voters, lc_voters, tags),
    st.builds(c.SnapshotHeaderRecord, st.just(0), st.integers(-1, 2**50), tags),
    st.builds(c.SnapshotFooterRecord, st.just(0), tags),
    st.builds(c.KRaftVersionRecord, st.just(0), st.integers(0, 3), tags),
    st.builds(c.VotersRecord, st.just(0), voters, tags),
)


@settings(deadline=None)
@given(values)
def test_kraft_control_values_round_trip(value) -> None:
    spec = c.control_record_spec(value, timestamp=7)
    data = build_record_batch([spec], base_offset=0, is_control=True)
    (batch,) = iter_batches(data, verify_crc=True)
    (rec,) = batch.records()
    parsed = c.parse_control_record(rec.key, rec.value)
    assert parsed.control_type is value.control_type
    assert parsed.value == value
    # every strict prefix of the value is corrupt, never an untyped error
    for cut in range(len(rec.value)):
        with pytest.raises(CorruptRecordError):
            c.parse_control_record(rec.key, rec.value[:cut])


def test_leader_change_v0_has_no_directory_ids() -> None:
    msg = c.LeaderChangeMessage(
        0, 3, (c.LeaderChangeVoter(1), c.LeaderChangeVoter(3)), (c.LeaderChangeVoter(3),)
    )
    raw = c.encode_control_value(msg)
    # int16 version, int32 leader, compact array (n+1) of [int32 id, no tags], twice, then no tags
    assert raw == bytes.fromhex("000000000003030000000100000000030002000000030000")
    assert c.parse_control_value(c.ControlType.LEADER_CHANGE, raw) == msg


def test_bad_control_records() -> None:
    with pytest.raises(CorruptRecordError):
        c.parse_control_record(b"\x00\x00", b"")
    with pytest.raises(CorruptRecordError):
        c.parse_control_record(b"\xff\xff\x00\x00", b"")  # negative key version
    with pytest.raises(CorruptRecordError):
        c.parse_control_record(c.build_control_key(c.ControlType.COMMIT), b"\x00\x00\x00")
    with pytest.raises(CorruptRecordError):
        c.parse_control_record(c.build_control_key(c.ControlType.ABORT), b"\xff\xff\x00\x00\x00\x00")
    with pytest.raises(UnsupportedError):
        c.parse_control_record(c.build_control_key(c.ControlType.SNAPSHOT_FOOTER), b"\x00\x07\x00")
    with pytest.raises(FormatError):  # trailing bytes
        c.parse_control_record(c.build_control_key(c.ControlType.SNAPSHOT_FOOTER), b"\x00\x00\x00\x00")
    unknown = c.parse_control_record(b"\x00\x00\x00\x63", b"anything")
    assert unknown.control_type is c.ControlType.UNKNOWN and unknown.type_id == 99 and unknown.value is None
    # a higher marker version is read as version 0 (EndTransactionMarker.deserializeValue)
    assert c.parse_control_record(
        b"\x00\x00\x00\x01", b"\x00\x05\x00\x00\x00\x09extra"
    ).value == c.EndTxnMarker(True, 9, 5)

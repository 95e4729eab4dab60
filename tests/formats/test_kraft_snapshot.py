from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import realworld
from logdoctor.errors import CorruptRecordError, FormatError
from logdoctor.formats import kraft_snapshot as ks
from logdoctor.formats.control import SnapshotFooterRecord, SnapshotHeaderRecord, control_record_spec
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.records import iter_batches
from logdoctor.formats.writer import build_record_batch


def _snapshot(values: list[bytes], *, header=True, footer=True) -> bytes:
    out = b""
    offset = 0
    if header:
        out += build_record_batch(
            [control_record_spec(SnapshotHeaderRecord(0, 1_700_000_000_000, ()), timestamp=5)],
            base_offset=0,
            is_control=True,
        )
        offset = 1
    if values:
        out += build_record_batch([RecordSpec(value=v, timestamp=5) for v in values], base_offset=offset)
        offset += len(values)
    if footer:
        out += build_record_batch(
            [control_record_spec(SnapshotFooterRecord(0, ()), timestamp=5)],
            base_offset=offset,
            is_control=True,
        )
    return out


def test_names():
    sid = ks.parse_snapshot_name("00000000000000871246-0000000002.checkpoint")
    assert sid == ks.SnapshotId(871246, 2)
    assert ks.snapshot_file_name(sid) == "00000000000000871246-0000000002.checkpoint"
    assert ks.parse_snapshot_name("bootstrap.checkpoint") is None
    assert ks.parse_snapshot_name("0-0.checkpoint") is None


@given(st.lists(st.binary(min_size=1, max_size=40), max_size=10))
def test_parse_synthetic(values):
    data = _snapshot(values)
    snap = ks.parse_kraft_snapshot(data, name="00000000000000000011-0000000001.checkpoint")
    assert snap.snapshot_id == ks.SnapshotId(11, 1)
    assert snap.header is not None and snap.header.last_contained_log_timestamp == 1_700_000_000_000
    assert snap.footer is not None
    assert [r.value for r in snap.records] == values
    assert [r.offset for r in snap.records] == list(range(1, 1 + len(values)))
    assert ks.write_kraft_snapshot(snap) == data


def test_header_and_footer_required():
    with pytest.raises(FormatError) as err:
        ks.parse_kraft_snapshot(_snapshot([b"a"], header=False), source="s.checkpoint")
    assert err.value.position == 0 and err.value.source == "s.checkpoint"
    data = _snapshot([b"a"], footer=False)
    with pytest.raises(FormatError) as err:
        ks.parse_kraft_snapshot(data)
    assert err.value.position == len(data)
    with pytest.raises(FormatError):
        ks.parse_kraft_snapshot(b"")


def test_corrupt_batch_is_typed():
    data = bytearray(_snapshot([b"abc"]))
    data[-3] ^= 0x55
    with pytest.raises(CorruptRecordError) as err:
        ks.parse_kraft_snapshot(bytes(data), source="s")
    assert err.value.source == "s" and err.value.position is not None


@pytest.mark.realworld
@pytest.mark.parametrize("path", realworld.params(list(realworld.files(suffix=".checkpoint"))))
def test_real_snapshots(path):
    data = path.read_bytes()
    snap = ks.parse_kraft_snapshot(data, name=path.name, source=str(path))
    assert snap.header is not None and snap.footer is not None and snap.records
    if path.name == ks.BOOTSTRAP_FILE_NAME:
        assert snap.snapshot_id is None
    else:
        assert snap.snapshot_id is not None
        # every record offset is below the snapshot's (exclusive) end offset
        assert all(r.offset < snap.snapshot_id.end_offset for r in snap.records)
    # rebuild every batch with the batch writer from the parsed fields: same bytes
    for batch in iter_batches(data):
        specs = [
            RecordSpec(
                key=r.key,
                value=r.value,
                timestamp=r.timestamp,
                headers=r.headers,
                offset_delta=r.offset - batch.base_offset,
            )
            for r in batch.records()
        ]
        rebuilt = build_record_batch(
            specs,
            base_offset=batch.base_offset,
            compression=batch.compression,
            partition_leader_epoch=batch.partition_leader_epoch,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_control=batch.is_control,
            is_transactional=batch.is_transactional,
            last_offset_delta=batch.last_offset - batch.base_offset,
        )
        assert rebuilt == bytes(batch.raw())
    assert ks.write_kraft_snapshot(snap) == data

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logdoctor.errors import FormatError, TruncatedError
from logdoctor.formats import partition_metadata as pm


def test_kafka_layout_without_final_newline():
    data = b"version: 0\ntopic_id: crCKTd0wTl6bQClKBtax4Q"
    meta = pm.parse_partition_metadata(data)
    assert (meta.version, meta.topic_id) == (0, "crCKTd0wTl6bQClKBtax4Q")
    assert pm.write_partition_metadata(meta) == data
    # Kafka's Uuid text is URL-safe base64 of the 16 bytes, no padding
    assert pm.uuid_to_kafka(meta.topic_uuid) == meta.topic_id


@given(st.uuids().filter(lambda u: u.int != 0), st.integers(0, 5))
def test_round_trip(topic, version):
    meta = pm.PartitionMetadata(version, pm.uuid_to_kafka(topic))
    parsed = pm.parse_partition_metadata(pm.write_partition_metadata(meta))
    assert parsed == meta and parsed.topic_uuid == topic


def test_errors_name_line_position():
    with pytest.raises(TruncatedError) as err:
        pm.parse_partition_metadata(b"", source="p/partition.metadata")
    assert err.value.position == 0 and err.value.source == "p/partition.metadata"
    with pytest.raises(TruncatedError):
        pm.parse_partition_metadata(b"version: 0\n")
    with pytest.raises(FormatError) as err:
        pm.parse_partition_metadata(b"version: 0\ntopic_id: nope", source="x")
    assert err.value.position == 11
    with pytest.raises(FormatError) as err:
        pm.parse_partition_metadata(b"version: 0\ntopic_id: " + pm.ZERO_UUID.encode(), source="x")
    assert "non-zero" in str(err.value)
    with pytest.raises(FormatError):
        pm.parse_partition_metadata(b"version:0\ntopic_id: crCKTd0wTl6bQClKBtax4Q")  # ':\s+' needs a space
    with pytest.raises(FormatError):
        pm.parse_partition_metadata(b"version: -1\ntopic_id: crCKTd0wTl6bQClKBtax4Q")


def test_trailing_bytes_after_line_two_are_kept():
    data = b"version: 0\ntopic_id: crCKTd0wTl6bQClKBtax4Q\n"
    meta = pm.parse_partition_metadata(data)
    assert meta.trailing == b"\n" and pm.write_partition_metadata(meta) == data


def test_uuid_helpers_reject_non_uuid_text():
    assert pm.uuid_from_kafka("AAAAAAAAAAAAAAAAAAAAAA") == uuid.UUID(int=0)
    assert pm.uuid_from_kafka("short") is None and pm.uuid_from_kafka("+" * 22) is None


@given(st.binary(max_size=100))
def test_arbitrary_bytes_typed(data):
    try:
        pm.parse_partition_metadata(data, source="f")
    except FormatError as exc:
        assert exc.source == "f" and exc.position is not None and 0 <= exc.position <= len(data)

"""The framing of each internal topic, the embedded consumer protocol, and decoder selection."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberAssignment_v0,
    ConsumerProtocolMemberMetadata_v0,
)

import tiers
from logdoctor.errors import CorruptRecordError, TruncatedError, UnsupportedError
from logdoctor.formats.internal import (
    decode_consumer_offsets,
    decode_metadata_record,
    decode_transaction_log,
    decoder_by_name,
    decoder_for_topic,
    encode_consumer_offsets,
    encode_metadata_record,
    encode_transaction_log,
)
from logdoctor.formats.internal.consumer_protocol import decode_assignment, decode_subscription


def _kstr(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def test_offset_commit_v1_by_hand() -> None:
    key = struct.pack(">h", 1) + _kstr("g") + _kstr("t") + struct.pack(">i", 3)
    value = struct.pack(">hq", 1, 42) + _kstr("meta") + struct.pack(">qq", 1000, 2000)
    d = decode_consumer_offsets(key, value)
    assert d == {"type": "OffsetCommit", "key_version": 1,
                 "key": {"group": "g", "topic": "t", "partition": 3}, "version": 1,
                 "value": {"offset": 42, "metadata": "meta", "commit_timestamp": 1000,
                           "expire_timestamp": 2000}}
    assert encode_consumer_offsets(d) == (key, value)


def test_offset_commit_v4_is_flexible() -> None:
    key = struct.pack(">h", 1) + _kstr("g") + _kstr("t") + struct.pack(">i", 0)
    value = struct.pack(">hqi", 4, 7, 5) + b"\x01" + struct.pack(">q", 99) + b"\x00"
    d = decode_consumer_offsets(key, value)
    # topicId (tag 0, v4+: Kafka 4.1's OffsetCommitValue.json) absent: the zero uuid
    assert d["value"] == {"offset": 7, "leader_epoch": 5, "metadata": "", "commit_timestamp": 99,
                          "topic_id": "AAAAAAAAAAAAAAAAAAAAAA"}


def test_offset_commit_v4_topic_id_tag_is_named() -> None:
    """Kafka 4.1+ writes the topic id of every commit as tag 0 (OffsetCommitValue.json, KIP-848)."""
    key = struct.pack(">h", 1) + _kstr("g") + _kstr("t") + struct.pack(">i", 0)
    topic_id = bytes(range(1, 17))
    value = (struct.pack(">hqi", 4, 7, 5) + b"\x01" + struct.pack(">q", 99)
             + b"\x01" + b"\x00" + b"\x10" + topic_id)  # 1 tagged field: tag 0, 16 bytes
    d = decode_consumer_offsets(key, value)
    assert d["value"]["topic_id"] == base64.urlsafe_b64encode(topic_id).decode().rstrip("=")
    assert "_unknown_tagged_fields" not in d["value"]
    assert encode_consumer_offsets(d) == (key, value)


def test_tombstone_has_no_value() -> None:
    key = struct.pack(">h", 2) + _kstr("grp")
    d = decode_consumer_offsets(key, None)
    assert d == {"type": "GroupMetadata", "key_version": 2, "key": {"group": "grp"}, "version": None,
                 "value": None}
    assert encode_consumer_offsets(d) == (key, None)


def _group_value(subscription: bytes, assignment: bytes, protocol_type: str = "consumer") -> bytes:
    member = (_kstr("m1") + _kstr("client") + _kstr("/10.0.0.1") + struct.pack(">ii", 300000, 10000)
              + struct.pack(">i", len(subscription)) + subscription
              + struct.pack(">i", len(assignment)) + assignment)
    return (struct.pack(">h", 1) + _kstr(protocol_type) + struct.pack(">i", 3) + _kstr("range") + _kstr("m1")
            + struct.pack(">i", 1) + member)


def test_consumer_protocol_matches_kafka_python_v0_structs() -> None:
    sub = ConsumerProtocolMemberMetadata_v0(0, ["a", "b"], b"ud").encode()
    asg = ConsumerProtocolMemberAssignment_v0(0, [("a", [0, 2]), ("b", [1])], b"").encode()
    key = struct.pack(">h", 2) + _kstr("grp")
    value = _group_value(sub, asg)
    d = decode_consumer_offsets(key, value)
    member = d["value"]["members"][0]
    assert member["subscription"] == {"version": 0, "topics": ["a", "b"], "user_data": "dWQ="}
    assert member["assignment"] == {"version": 0, "user_data": "",
                                    "assigned_partitions": [{"topic": "a", "partitions": [0, 2]},
                                                            {"topic": "b", "partitions": [1]}]}
    assert encode_consumer_offsets(d) == (key, value)


def test_other_protocol_types_keep_their_bytes() -> None:
    sub = ConsumerProtocolMemberMetadata_v0(0, ["a"], b"").encode()
    d = decode_consumer_offsets(struct.pack(">h", 2) + _kstr("g"), _group_value(sub, b"", "connect"))
    assert isinstance(d["value"]["members"][0]["subscription"], str)  # base64, no decoding known


def test_newer_consumer_protocol_version_keeps_the_unknown_tail() -> None:
    raw = struct.pack(">h", 9) + struct.pack(">i", 1) + _kstr("t") + b"\xff\xff\xff\xff"
    raw += struct.pack(">i", 0) + struct.pack(">i", 4) + b"\xff\xff" + b"EXTRA"
    d = decode_subscription(raw)
    assert d["version"] == 9 and d["topics"] == ["t"] and d["generation_id"] == 4 and d["rack_id"] is None
    assert d["trailing_bytes"] == "RVhUUkE="
    with pytest.raises(TruncatedError):
        decode_assignment(b"\x00")


@settings(max_examples=tiers.examples(200), deadline=None)
@given(txn_id=st.text(max_size=30), pid=st.integers(-1, 2**62), epoch=st.integers(-1, 32767),
       status=st.integers(0, 7), version=st.integers(0, 1), prev=st.integers(-1, 2**62),
       parts=st.one_of(st.none(), st.lists(
           st.tuples(st.text(max_size=10), st.lists(st.integers(0, 1000), max_size=4)), max_size=3)))
def test_transaction_log_round_trip(txn_id, pid, epoch, status, version, prev, parts) -> None:
    value = {"producer_id": pid, "producer_epoch": epoch, "transaction_timeout_ms": 60000,
             "transaction_status": status,
             "transaction_partitions": None if parts is None else [
                 {"topic": t, "partition_ids": p} for t, p in parts],
             "transaction_last_update_timestamp_ms": 5, "transaction_start_timestamp_ms": 4}
    if version == 1:
        value.update(previous_producer_id=prev, next_producer_id=-1, client_transaction_version=2)
    key, raw = encode_transaction_log({"key_version": 0, "key": {"transactional_id": txn_id},
                                       "version": version, "value": value})
    assert key == struct.pack(">h", 0) + _kstr(txn_id)
    d = decode_transaction_log(key, raw)
    assert d["type"] == "TransactionLog" and d["key"]["transactional_id"] == txn_id
    assert d["value"]["transaction_status_name"] in ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                                     "CompleteCommit", "CompleteAbort", "Dead",
                                                     "PrepareEpochFence")
    assert {k: d["value"][k] for k in value} == value
    assert encode_transaction_log(d) == (key, raw)
    assert decode_transaction_log(key, None)["value"] is None


def test_transaction_log_value_v0_layout() -> None:
    raw = struct.pack(">hqhib", 0, 77, 3, 60000, 1) + struct.pack(">i", 1) + _kstr("t")
    raw += struct.pack(">iii", 2, 0, 1) + struct.pack(">qq", 10, 9)
    d = decode_transaction_log(struct.pack(">h", 0) + _kstr("tx"), raw)["value"]
    assert d["producer_id"] == 77 and d["transaction_status_name"] == "Ongoing"
    assert d["transaction_partitions"] == [{"topic": "t", "partition_ids": [0, 1]}]


def test_metadata_record_topic_by_hand() -> None:
    raw = b"\x01\x02\x00" + b"\x04foo" + bytes(range(16)) + b"\x00"
    d = decode_metadata_record(raw)
    assert d == {"type": "TopicRecord", "api_key": 2, "version": 0, "frame_version": 1,
                 "data": {"name": "foo", "topic_id": "AAECAwQFBgcICQoLDA0ODw"}}
    assert encode_metadata_record({"type": "TopicRecord", "version": 0, "data": d["data"]}) == raw


@pytest.mark.parametrize("raw,error,position", [
    (b"", TruncatedError, 0),
    (b"\x00\x02\x00", UnsupportedError, 0),  # frame version 0: KRaft 2.8 preview
    (b"\x01\x63\x00\x00", UnsupportedError, 1),  # unknown record type 99
    (b"\x01\x02\x05\x00", UnsupportedError, 2),  # TopicRecord v5
    (b"\x01\x02\x00\x04fo", TruncatedError, 4),
    (b"\x01\x02\x00\x01" + bytes(16) + b"\x00\x00", CorruptRecordError, 21),  # garbage after the record
])
def test_metadata_record_errors(raw: bytes, error: type, position: int) -> None:
    with pytest.raises(error) as err:
        decode_metadata_record(raw, source="m.log")
    assert type(err.value) is error and err.value.position == position and err.value.source == "m.log"


@pytest.mark.parametrize("key,value,error,position", [
    (None, None, CorruptRecordError, 0),
    (b"\x00", None, TruncatedError, 0),
    (b"\x00\x63", None, UnsupportedError, 0),
    (b"\x00\x01\x00\x05ab", None, TruncatedError, 4),
    (b"\x00\x02\x00\x01g", b"\x00\x09", UnsupportedError, 2),
    (b"\x00\x02\x00\x01g", b"\x00", TruncatedError, 0),
])
def test_consumer_offsets_errors(key, value, error, position) -> None:
    with pytest.raises(error) as err:
        decode_consumer_offsets(key, value)
    assert type(err.value) is error and err.value.position == position


def test_decoder_selection() -> None:
    assert decoder_for_topic("__consumer_offsets") is decode_consumer_offsets
    assert decoder_for_topic("__consumer_offsets-17") is decode_consumer_offsets
    assert decoder_for_topic("__transaction_state-3") is decode_transaction_log
    assert decoder_for_topic("orders-0") is None and decoder_for_topic("orders") is None
    meta = decoder_for_topic("__cluster_metadata-0")
    assert meta is not None and meta(None, b"\x01\x14\x00\x00")["type"] == "NoOpRecord"
    assert decoder_by_name("none") is None
    assert decoder_by_name("auto", "__transaction_state-0") is decode_transaction_log
    assert decoder_by_name("consumer-offsets") is decode_consumer_offsets
    with pytest.raises(ValueError):
        decoder_by_name("bogus")

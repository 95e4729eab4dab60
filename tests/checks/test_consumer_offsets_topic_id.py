"""Kafka 4.1+ commits carry the topic id (OffsetCommitValue v4 tag 0, ../shared/kafka-schemas-4.2): the
replay keeps it, and an out-of-range commit made for an earlier topic of the same name says so (a consumer
fetching by topic id gets no offset for it: OffsetMetadataManager.isMismatchedTopicId)."""

from __future__ import annotations

import base64
import struct

import pytest

import kafka_schemas as ks
from logdoctor.checks.consumer_groups import OutOfRange, finding, replay_records

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

_GROUP = "group-coordinator/src/main/resources/common/message"
OLD = base64.urlsafe_b64encode(bytes([1]) * 16).decode().rstrip("=")
NEW = base64.urlsafe_b64encode(bytes([2]) * 16).decode().rstrip("=")


def _commit(offset: int, topic_id: str) -> tuple[bytes, bytes]:
    key_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _GROUP / "OffsetCommitKey.json"))
    value_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _GROUP / "OffsetCommitValue.json"))
    key = struct.pack(">h", 1) + ks.write(key_spec, {"group": "g", "topic": "orders", "partition": 0}, 0)
    value = {"offset": offset, "leader_epoch": 3, "metadata": "", "commit_timestamp": 99,
             "topic_id": topic_id}
    return key, struct.pack(">h", 4) + ks.write(value_spec, value, 4)


def test_the_replay_keeps_the_topic_id() -> None:
    key, value = _commit(10, OLD)
    zero_key, zero_value = _commit(11, "AAAAAAAAAAAAAAAAAAAAAA")
    got = replay_records([(0, -1, False, key, value, -1)], "co-0")
    assert got[("g", "orders", 0)].topic_id == OLD
    got = replay_records([(0, -1, False, zero_key, zero_value, -1)], "co-0")
    assert got[("g", "orders", 0)].topic_id is None  # no topic id: the zero uuid


def test_an_out_of_range_commit_for_an_earlier_topic_says_so() -> None:
    key, value = _commit(10, OLD)
    commit = replay_records([(0, -1, False, key, value, -1)], "co-0")[("g", "orders", 0)]
    earlier = finding(OutOfRange(commit, 100, 200, topic_id=NEW), "/d/orders-0", "/d")
    assert earlier.details["commit_for_earlier_topic"] is True
    assert (earlier.details["commit_topic_id"], earlier.details["topic_id"]) == (OLD, NEW)
    assert f"earlier topic of this name, id {OLD}" in earlier.message
    same = finding(OutOfRange(commit, 100, 200, topic_id=OLD), "/d/orders-0", "/d")
    assert same.details["commit_for_earlier_topic"] is False and "earlier topic" not in same.message

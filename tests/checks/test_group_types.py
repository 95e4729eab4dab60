"""The group type of each committed offset (the inventory's and census's ``group_type``): the kind of the
group's last metadata record in ``__consumer_offsets``, records written from Kafka 4.2's JSON files
(tests/kafka_schemas.py): GroupMetadataKey 2 classic, ConsumerGroupMetadataKey 3 consumer (KIP-848, a regex
subscription too), ShareGroupMetadataKey 11 share, StreamsGroupMetadataKey 17 streams (KIP-1071)."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
from logdoctor.checks.consumer_groups import commit_rows
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

_GROUP = "group-coordinator/src/main/resources/common/message"


def _record(name: str, key: dict[str, Any], value: dict[str, Any] | None, rng: random.Random,
            version: int = 0) -> tuple[bytes, bytes | None]:
    key_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _GROUP / f"{name}Key.json"))
    value_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _GROUP / f"{name}Value.json"))
    k = struct.pack(">h", key_spec.raw["apiKey"]) + ks.write(key_spec, key, 0)
    if value is None:
        return k, None
    v = {**ks.random_value(value_spec, version, rng), **value}
    return k, struct.pack(">h", version) + ks.write(value_spec, v, version)


def _commit(group: str, offset: int, rng: random.Random) -> tuple[bytes, bytes | None]:
    return _record("OffsetCommit", {"group": group, "topic": "orders", "partition": 0},
                   {"offset": offset, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA"}, rng, version=4)


def test_commit_rows_name_each_groups_type(tmp_path: Path) -> None:
    rng = random.Random(9)
    records = [
        _record("StreamsGroupMetadata", {"group_id": "streams-app"}, {}, rng),
        _commit("streams-app", 3, rng),
        _record("ConsumerGroupMetadata", {"group_id": "regex-app"}, {}, rng),
        _record("ConsumerGroupRegularExpression",
                {"group_id": "regex-app", "regular_expression": "ord.*"}, {}, rng),
        _commit("regex-app", 4, rng),
        _record("GroupMetadata", {"group": "classic-app"}, {"protocol_type": "consumer", "members": []}, rng,
                version=3),
        _commit("classic-app", 5, rng),
        _record("ShareGroupMetadata", {"group_id": "gone"}, {}, rng),
        _record("ShareGroupMetadata", {"group_id": "gone"}, None, rng),  # deleted: its type is unknown
        _commit("gone", 6, rng),
        _commit("no-metadata", 7, rng),
    ]
    folder = tmp_path / "kafka-logs" / "__consumer_offsets-0"
    folder.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    (folder / "00000000000000000000.log").write_bytes(build_record_batch(specs, base_offset=0))
    report = scan([tmp_path / "kafka-logs"], ScanOptions(), jobs=1)
    rows = {r["group"]: r["group_type"] for r in commit_rows(report.partitions)}
    assert rows == {"streams-app": "streams", "regex-app": "consumer", "classic-app": "classic",
                    "gone": None, "no-metadata": None}

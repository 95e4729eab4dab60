"""The census's ``consumer_groups`` table lists streams groups (KIP-1071) and regex-subscribed KIP-848
groups by name with their ``group_type``, from log dirs and from their inventories; records written from
Kafka 4.2's JSON files (tests/kafka_schemas.py)."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import kafka_schemas as ks
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import build_inventory, write_inventory
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.spark.census import run_census

pytestmark = [
    pytest.mark.spark,
    pytest.mark.usefixtures("small_census_confs"),
    pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42),
]

_GROUP = "group-coordinator/src/main/resources/common/message"
NOW = 1_790_000_000_000


def _record(name: str, key: dict[str, Any], value: dict[str, Any], rng: random.Random,
            version: int = 0) -> tuple[bytes, bytes]:
    key_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _GROUP / f"{name}Key.json"))
    value_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _GROUP / f"{name}Value.json"))
    k = struct.pack(">h", key_spec.raw["apiKey"]) + ks.write(key_spec, key, 0)
    v = {**ks.random_value(value_spec, version, rng), **value}
    return k, struct.pack(">h", version) + ks.write(value_spec, v, version)


def _log_dir(root: Path) -> Path:
    rng = random.Random(10)
    commit = {"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "offset": 2}
    records = [
        _record("StreamsGroupMetadata", {"group_id": "word-count"}, {}, rng),
        _record("OffsetCommit", {"group": "word-count", "topic": "orders", "partition": 0}, commit, rng, 4),
        _record("ConsumerGroupMetadata", {"group_id": "by-regex"}, {}, rng),
        _record("ConsumerGroupRegularExpression", {"group_id": "by-regex", "regular_expression": "o.*"}, {},
                rng),
        _record("OffsetCommit", {"group": "by-regex", "topic": "orders", "partition": 0}, commit, rng, 4),
    ]
    folder = root / "__consumer_offsets-0"
    folder.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    (folder / "00000000000000000000.log").write_bytes(build_record_batch(specs, base_offset=0))
    return root


def _types(folder: str) -> set[tuple[str, str | None]]:
    return {(r["group"], r["group_type"]) for r in pq.read_table(folder).to_pylist()}


def test_streams_and_regex_groups_in_the_census(spark, tmp_path: Path) -> None:
    logs = _log_dir(tmp_path / "kafka-logs")
    expected = {("word-count", "streams"), ("by-regex", "consumer")}
    from_dirs = run_census(spark, [str(logs)], tmp_path / "from-dirs", now_ms=NOW)
    assert _types(from_dirs.tables["consumer_groups"]) == expected
    inv = tmp_path / "inv.parquet"
    write_inventory(build_inventory([str(logs)], Depth.DEFAULT, now_ms=NOW), str(inv))
    from_inv = run_census(spark, [str(inv)], tmp_path / "from-inv", now_ms=NOW)
    assert _types(from_inv.tables["consumer_groups"]) == expected

"""SHARE_GROUP_BEHIND_LOG_START: a share group's start offset (replayed from ``__share_group_state`` as
ShareCoordinatorShard.replay does: a snapshot replaces, an update's start offset -1 keeps the old one, a null
value deletes) below its partition's log start. Records are written from Kafka 4.2's JSON files
(tests/kafka_schemas.py); the partition is found by its topic id (partition.metadata)."""

from __future__ import annotations

import base64
import random
import struct
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

_SHARE = "share-coordinator/src/main/resources/common/message"
TOPIC_ID = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")


def _record(name: str, group: str, start: int | None, rng: random.Random) -> tuple[bytes, bytes | None]:
    key_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _SHARE / f"{name}Key.json"))
    value_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / _SHARE / f"{name}Value.json"))
    key = struct.pack(">h", key_spec.raw["apiKey"]) + ks.write(
        key_spec, {"group_id": group, "topic_id": TOPIC_ID, "partition": 0}, 0
    )
    if start is None:
        return key, None
    value: dict[str, Any] = {**ks.random_value(value_spec, 0, rng), "start_offset": start}
    return key, struct.pack(">h", 0) + ks.write(value_spec, value, 0)


def _log_dir(tmp_path: Path, records: list[tuple[bytes, bytes | None]]) -> Path:
    root = tmp_path / "kafka-logs"
    state = root / "__share_group_state-0"
    state.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    (state / "00000000000000000000.log").write_bytes(build_record_batch(specs, base_offset=0))
    orders = root / "orders-0"
    orders.mkdir()
    (orders / "partition.metadata").write_text(f"version: 0\ntopic_id: {TOPIC_ID}\n")
    data = [RecordSpec(value=b"x", timestamp=1_700_000_000_000) for _ in range(10)]
    (orders / "00000000000000000050.log").write_bytes(build_record_batch(data, base_offset=50))
    (root / "log-start-offset-checkpoint").write_text("0\n1\norders 0 50\n")
    return root


def test_a_share_group_behind_the_log_start(tmp_path: Path) -> None:
    rng = random.Random(7)
    records = [
        _record("ShareSnapshot", "late", 5, rng),
        _record("ShareUpdate", "late", -1, rng),  # -1: the start offset stays 5
        _record("ShareSnapshot", "fine", 20, rng),
        _record("ShareUpdate", "fine", 55, rng),  # moved on: inside the log
        _record("ShareSnapshot", "gone", 1, rng),
        _record("ShareSnapshot", "gone", None, rng),  # deleted
    ]
    root = _log_dir(tmp_path, records)
    findings = scan([root], ScanOptions(), jobs=1).findings
    found = [f for f in findings if f.code == "SHARE_GROUP_BEHIND_LOG_START"]
    assert [(f.details["group"], f.details["share_partition_start_offset"], f.details["log_start_offset"],
             f.details["offsets_never_delivered"]) for f in found] == [("late", 5, 50, 45)]
    (f,) = found
    assert f.path == str(root / "orders-0") and f.details["share_group_state_record_offset"] == 0
    assert "45 offsets" in f.message and f.severity.label == "warning"


def test_4_0_share_group_state_is_read_too(tmp_path: Path) -> None:
    """Kafka 4.0's ShareSnapshotValue layout (SnapshotEpoch uint16, no timestamps) counts the same."""
    rng = random.Random(8)
    key, _ = _record("ShareSnapshot", "old", None, rng)
    spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / "_4.0.0" / _SHARE / "ShareSnapshotValue.json"))
    value = struct.pack(">h", 0) + ks.write(spec, {**ks.random_value(spec, 0, rng), "start_offset": 10}, 0)
    root = _log_dir(tmp_path, [(key, value)])
    found = [f for f in scan([root], ScanOptions(), jobs=1).findings
             if f.code == "SHARE_GROUP_BEHIND_LOG_START"]
    assert [(f.details["group"], f.details["offsets_never_delivered"]) for f in found] == [("old", 40)]

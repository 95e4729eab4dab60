"""A log dir holding ``__share_group_state-0`` with records written from Kafka 4.2.0's JSON definitions
(tests/kafka_schemas.py) and, optionally, a ``__cluster_metadata-0`` finalizing metadata.version and
share.version: the input of the tests that the cluster's feature levels reach the share-group decoders."""

from __future__ import annotations

import base64
import random
import struct
import types
from pathlib import Path
from typing import Any

import kafka_schemas as ks
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.sample.kraft import write_metadata_log

SHARE = "share-coordinator/src/main/resources/common/message"
TOPIC_ID = base64.urlsafe_b64encode(bytes(range(16))).decode().rstrip("=")


def share_snapshot(group: str, start: int, seed: int = 1) -> tuple[bytes, bytes]:
    """(key, value) of a ShareSnapshot record of Kafka 4.2.0's layout (SnapshotEpoch int32, timestamps)."""
    key_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / SHARE / "ShareSnapshotKey.json"))
    value_spec = ks.Spec(ks.load_path(ks.SCHEMAS_42 / SHARE / "ShareSnapshotValue.json"))
    key = struct.pack(">h", key_spec.raw["apiKey"]) + ks.write(
        key_spec, {"group_id": group, "topic_id": TOPIC_ID, "partition": 0}, 0)
    value: dict[str, Any] = {**ks.random_value(value_spec, 0, random.Random(seed)), "start_offset": start}
    return key, struct.pack(">h", 0) + ks.write(value_spec, value, 0)


def share_state_log_dir(root: Path, records: list[tuple[bytes, bytes]], *, share_version: int | None,
                        metadata_version: int = 28) -> Path:
    """``root`` with ``__share_group_state-0`` holding ``records``; with a metadata log (metadata.version,
    share.version when not None) unless ``share_version`` is None. Returns the segment."""
    state = root / "__share_group_state-0"
    state.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    segment = state / "00000000000000000000.log"
    segment.write_bytes(build_record_batch(specs, base_offset=0))
    if share_version is not None:
        recs = [{"type": "FeatureLevelRecord", "version": 0,
                 "data": {"name": name, "feature_level": level}}
                for name, level in (("metadata.version", metadata_version), ("share.version", share_version))]
        write_metadata_log(types.SimpleNamespace(log_dirs={1: [root]}), 1, records=recs)  # type: ignore[arg-type]
    return segment

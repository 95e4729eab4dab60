"""`logdoctor dump` of the newer internal topics (KIP-932 __share_group_state, KIP-405
__remote_log_metadata) and of records newer than our tables: typed fields, or "unknown type N,
version V" with the raw bytes; the dump never stops on them."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from typer.testing import CliRunner

from logdoctor.cli.commands import app
from logdoctor.formats.internal import encode_remote_log_metadata, encode_share_group_state
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

TOPIC_ID = "S2kwl2mvSCasFtxUPkayPw"


def _segment(folder: Path, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    folder.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    path = folder / "00000000000000000000.log"
    path.write_bytes(build_record_batch(specs, base_offset=0))
    return path


def _dump(path: Path) -> list[dict]:
    r = CliRunner().invoke(app, ["dump", "--json", "--print-data", str(path)])
    assert r.exit_code in (0, 1), r.output
    return [o for o in (json.loads(line) for line in r.stdout.splitlines() if line.strip()) if "decoded" in o]


def test_share_group_state_records(tmp_path):
    snapshot = {
        "key_version": 0,
        "key": {"group_id": "g1", "topic_id": TOPIC_ID, "partition": 3},
        "version": 0,
        "value": {
            "snapshot_epoch": 1,
            "state_epoch": 2,
            "leader_epoch": 5,
            "start_offset": 100,
            "state_batches": [
                {"first_offset": 100, "last_offset": 120, "delivery_state": 2, "delivery_count": 1}
            ],
        },
    }
    unknown_key = struct.pack(">h", 7) + b"future"
    path = _segment(
        tmp_path / "__share_group_state-0",
        [encode_share_group_state(snapshot), (unknown_key, struct.pack(">h", 0))],
    )
    first, second = _dump(path)
    assert first["decoder"] == "share-group-state"
    assert first["decoded"]["type"] == "ShareSnapshot"
    assert first["decoded"]["value"]["state_batches"][0]["last_offset"] == 120
    assert second["decoded"]["type"] == "unknown type 7, version 0"
    assert second["decoded"]["raw_key"]


def test_remote_log_metadata_records(tmp_path):
    rec = {
        "type": "RemoteLogSegmentMetadataRecord",
        "version": 0,
        "data": {
            "remote_log_segment_id": {
                "topic_id_partition": {"name": "orders", "id": TOPIC_ID, "partition": 0},
                "id": TOPIC_ID,
            },
            "start_offset": 0,
            "end_offset": 99,
            "broker_id": 1,
            "max_timestamp_ms": 5,
            "event_timestamp_ms": 6,
            "segment_leader_epochs": [{"leader_epoch": 0, "offset": 0}],
            "segment_size_in_bytes": 1234,
            "custom_metadata": None,
            "remote_log_segment_state": 1,
        },
    }
    newer = bytes([1, 9, 0, 0])  # frame 1, api key 9, version 0
    path = _segment(
        tmp_path / "__remote_log_metadata-0", [(None, encode_remote_log_metadata(rec)), (None, newer)]
    )
    first, second = _dump(path)
    assert first["decoder"] == "remote-log-metadata"
    assert first["decoded"]["data"]["end_offset"] == 99
    assert first["decoded"]["data"]["remote_log_segment_id"]["topic_id_partition"]["name"] == "orders"
    assert second["decoded"]["type"] == "unknown type 9, version 0"

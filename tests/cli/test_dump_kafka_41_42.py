"""Log dirs as Kafka 4.0 to 4.2 write them: `dump` decodes their share-group state, streams group and
regex group records by name, and `scan` reports no damage for them.

The records are built from Kafka's own JSON definitions (../shared/kafka-schemas-4.2, tests/kafka_schemas.py's
generic writer, which shares no code with logdoctor): ShareSnapshotValue / ShareUpdateValue in their 4.0.0,
4.1.1 and 4.2.0 layouts (all version 0), the 4.1 ShareGroupMetadataValue, the StreamsGroup* records
(types 17, 19-23) and ConsumerGroupRegularExpression (16).
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import kafka_schemas as ks
from logdoctor.cli.commands import app
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

pytestmark = pytest.mark.skipif(not ks.available_42(), reason=ks.SKIP_REASON_42)

_MESSAGE = "src/main/resources/common/message"


def _spec(path: Path) -> ks.Spec:
    return ks.Spec(ks.load_path(path))


def _record(key_path: Path, value_path: Path, rng: random.Random,
            **fields: Any) -> tuple[bytes, bytes, dict[str, Any], dict[str, Any]]:
    """(key, value, key fields, value fields) of a random record of a 4.1+ key spec (the key's apiKey
    is the record type, key version 0) and a value spec, value version 0."""
    key_spec, value_spec = _spec(key_path), _spec(value_path)
    k = ks.random_value(key_spec, 0, rng)
    v = {**ks.random_value(value_spec, 0, rng), **fields}
    key = struct.pack(">h", key_spec.raw["apiKey"]) + ks.write(key_spec, k, 0)
    return key, struct.pack(">h", 0) + ks.write(value_spec, v, 0), k, v


def _segment(folder: Path, records: list[tuple[bytes, bytes]]) -> Path:
    folder.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    path = folder / "00000000000000000000.log"
    path.write_bytes(build_record_batch(specs, base_offset=0))
    return path


def _dump(path: Path) -> list[dict[str, Any]]:
    r = CliRunner().invoke(app, ["dump", "--json", "--print-data", str(path)])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip().startswith("{")]


def _share_state_records(rng: random.Random) -> list[tuple[str, bytes, bytes, dict[str, Any]]]:
    """(release, key, value, value fields) of snapshot and update records of every layout."""
    out = []
    share = ks.SCHEMAS_42 / "share-coordinator" / _MESSAGE
    for release, folder in (("4.0.0", ks.SCHEMAS_42 / "_4.0.0/share-coordinator" / _MESSAGE),
                            ("4.1.1", ks.SCHEMAS_42 / "_4.1.1/share-coordinator" / _MESSAGE),
                            ("4.2.0", share)):
        for name in ("ShareSnapshot", "ShareUpdate"):
            key, value, _k, v = _record(share / f"{name}Key.json", folder / f"{name}Value.json", rng)
            out.append((release, key, value, v))
    return out


def test_dump_reads_share_group_state_of_every_layout(tmp_path: Path) -> None:
    rng = random.Random(50)
    records = _share_state_records(rng)
    path = _segment(tmp_path / "__share_group_state-0", [(k, v) for _r, k, v, _f in records])
    lines = [o for o in _dump(path) if "decoded" in o]
    assert len(lines) == len(records)
    for (release, _k, _v, fields), line in zip(records, lines, strict=True):
        decoded = line["decoded"]
        assert decoded["type"] in ("ShareSnapshot", "ShareUpdate"), decoded
        assert release in decoded["layout"].split("/")
        for name, value in fields.items():
            assert decoded["value"][name] == value, (release, name)


def test_scan_of_share_group_state_of_4_1_and_4_2_has_no_damage(tmp_path: Path) -> None:
    records = _share_state_records(random.Random(51))
    _segment(tmp_path / "__share_group_state-0", [(k, v) for _r, k, v, _f in records])
    r = CliRunner().invoke(app, ["scan", "--json", "--deep", str(tmp_path)])
    report = json.loads(r.stdout[r.stdout.index("{"):])
    codes = {f["code"] for f in report["findings"] if "__share_group_state" in (f.get("path") or "")}
    # no index: the test wrote only the .log; RETENTION_DUE, a note: the records' timestamps are older than
    # the 7 days of retention.ms that apply (ShareCoordinatorService sets cleanup.policy=delete, no retention)
    assert codes <= {"INDEX_MISSING", "RETENTION_DUE"}, report["findings"]
    assert not [f for f in report["findings"] if f["severity"] == "error"]


def test_dump_names_streams_and_regex_groups(tmp_path: Path) -> None:
    rng = random.Random(52)
    group = ks.SCHEMAS_42 / "group-coordinator" / _MESSAGE
    names = ["ConsumerGroupRegularExpression", "StreamsGroupMetadata", "StreamsGroupMemberMetadata",
             "StreamsGroupTargetAssignmentMetadata", "StreamsGroupTargetAssignmentMember",
             "StreamsGroupCurrentMemberAssignment", "StreamsGroupTopology", "ShareGroupMetadata",
             "ShareGroupStatePartitionMetadata"]
    built = [_record(group / f"{n}Key.json", group / f"{n}Value.json", rng) for n in names]
    path = _segment(tmp_path / "__consumer_offsets-0", [(k, v) for k, v, _kf, _vf in built])
    lines = [o for o in _dump(path) if "decoded" in o]
    assert [o["decoded"]["type"] for o in lines] == names
    for (_k, _v, key_fields, value_fields), line in zip(built, lines, strict=True):
        assert line["decoded"]["key"]["group_id"] == key_fields["group_id"]
        for name, value in value_fields.items():
            assert line["decoded"]["value"][name] == value, (line["decoded"]["type"], name)

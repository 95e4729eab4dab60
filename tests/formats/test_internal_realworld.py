"""The internal-topic decoders on every record of the real log dirs.

Keys and values come from kafka-python's record reader (independent of our own), values are
checked three ways: typed fields (never hex), byte-exact re-encoding, and facts that can be
checked without our decoder (topic folders and partition.metadata ids, the group -> partition
hash, log end offsets).
"""

from __future__ import annotations

import collections
import io
import re
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.schemas.fields.struct import StructField
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatch

import realworld
from logdoctor.formats.internal import (
    decode_consumer_offsets,
    decode_metadata_record,
    encode_consumer_offsets,
    encode_metadata_record,
)
from logdoctor.formats.internal.protocol import ArrayOf, StructType, uuid_from_text
from logdoctor.formats.internal.schemas import METADATA_RECORDS

pytestmark = pytest.mark.realworld


def _files(pattern: str) -> list[Path]:
    if not realworld.available():
        return []
    return [p for p in realworld.files() if re.search(pattern, str(p)) and p.stat().st_size > 0]


OFFSETS_FILES = _files(r"/__consumer_offsets-\d+/\d{20}\.log$")
METADATA_FILES = _files(r"/__cluster_metadata-0/\d{20}(-\d{10}\.checkpoint|\.log)$")


def _records(path: Path) -> list[tuple[bytes | None, bytes | None, int]]:
    """(key, value, offset) of every data record, control batches skipped (kafka-python)."""
    out = []
    mr = MemoryRecords(path.read_bytes())
    while True:
        batch = mr.next_batch()
        if batch is None:
            return out
        if getattr(batch, "is_control_batch", False):
            continue
        out.extend((r.key, r.value, r.offset) for r in batch)


def _assert_typed(value: Any, where: str) -> None:
    """No field is left as raw bytes: bytes fields are base64 text, everything else typed."""
    if isinstance(value, dict):
        for k, v in value.items():
            _assert_typed(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _assert_typed(v, f"{where}[{i}]")
    else:
        assert value is None or isinstance(value, bool | int | float | str), (where, type(value))
        assert not isinstance(value, bytes | bytearray | memoryview), where


# ------------------------------------------------------------------------------------------------
# kafka-python's own JSON-schema engine as an oracle for the field values


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _type_name(t: Any) -> str:
    if isinstance(t, ArrayOf):
        return "[]" + _type_name(t.element)
    return t.name if isinstance(t, StructType) else t


def _field_json(f: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": _camel(f.name), "type": _type_name(f.type), "versions": str(f.versions)}
    if not f.nullable.empty:
        d["nullableVersions"] = str(f.nullable)
    if f.tag is not None:
        d["tag"] = f.tag
        d["taggedVersions"] = str(f.tagged)
    elem = f.type.element if isinstance(f.type, ArrayOf) else f.type
    if isinstance(elem, StructType):
        d["fields"] = [_field_json(x) for x in elem.fields]
    return d


@cache
def _oracle(api_key: int) -> StructField:
    m = METADATA_RECORDS[api_key]
    return StructField({"name": m.name, "type": "data", "validVersions": str(m.valid_versions),
                        "flexibleVersions": str(m.flexible_versions),
                        "fields": [_field_json(f) for f in m.fields]})


def _to_oracle_form(value: Any, t: Any) -> Any:
    if value is None:
        return None
    if isinstance(t, ArrayOf):
        return [_to_oracle_form(v, t.element) for v in value]
    if isinstance(t, StructType):
        return {f.name: _to_oracle_form(value[f.name], f.type) for f in t.fields if f.name in value}
    if t == "uuid":  # kafka-python reads the zero uuid as None
        return uuid.UUID(bytes=uuid_from_text(value)) if value != "AAAAAAAAAAAAAAAAAAAAAA" else None
    return value


# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", realworld.params(METADATA_FILES))
def test_every_metadata_record_decodes_typed_and_round_trips(path: Path) -> None:
    records = _records(path)
    assert records, "a non-empty metadata segment/snapshot has data records"
    seen_values: set[bytes] = set()
    for _key, value, offset in records:
        assert value is not None
        decoded = decode_metadata_record(value, source=str(path))
        assert decoded["frame_version"] == 1
        _assert_typed(decoded, f"{path.name}@{offset}")
        assert encode_metadata_record(decoded) == value, f"offset {offset}: {decoded}"
        if value in seen_values:
            continue
        seen_values.add(value)
        # Independent interpretation of the same bytes by kafka-python's schema engine.
        message = METADATA_RECORDS[decoded["api_key"]]
        assert value[1] < 0x80 and value[2] < 0x80  # one-byte api key and version: the body starts at 3
        if not message.fields:
            assert value[3:] == b"\x00" and decoded["data"] == {}  # just an empty tagged-field section
            continue
        theirs = _oracle(decoded["api_key"]).decode(io.BytesIO(value[3:]), version=decoded["version"],
                                                      compact=True, tagged=True)
        ours = _to_oracle_form(decoded["data"], message.struct)
        for name, their_value in theirs.items():
            assert ours[name] == their_value, (offset, name)


@pytest.mark.parametrize("path", realworld.params(OFFSETS_FILES))
def test_every_consumer_offsets_record_decodes_typed_and_round_trips(path: Path) -> None:
    records = _records(path)
    assert records
    for key, value, offset in records:
        decoded = decode_consumer_offsets(key, value, source=str(path))
        _assert_typed(decoded, f"{path.name}@{offset}")
        assert decoded["type"] in ("OffsetCommit", "GroupMetadata")
        assert encode_consumer_offsets(decoded) == (key, value), f"offset {offset}"
        if decoded["type"] == "GroupMetadata" and value is not None:
            group = decoded["value"]
            if group["protocol_type"] == "consumer":
                for member in group["members"]:
                    # The consumer protocol bytes are decoded, not left as base64.
                    assert isinstance(member["subscription"], dict), member
                    assert member["subscription"]["topics"], member
                    if member["assignment"]:
                        assert isinstance(member["assignment"], dict), member


def test_record_counts_cover_the_real_types(realworld_dir: Path) -> None:
    meta = collections.Counter()
    for path in METADATA_FILES:
        for _k, value, _o in _records(path):
            d = decode_metadata_record(value)
            meta[d["type"], d["version"]] += 1
    offsets = collections.Counter()
    for path in OFFSETS_FILES:
        for key, value, _o in _records(path):
            d = decode_consumer_offsets(key, value)
            offsets[d["type"], d["version"]] += 1
    # The real data has these record types and versions (each one decoded above).
    for expected in [("TopicRecord", 0), ("PartitionRecord", 0), ("PartitionRecord", 2),
                     ("PartitionChangeRecord", 0), ("PartitionChangeRecord", 2), ("RegisterBrokerRecord", 2),
                     ("RegisterBrokerRecord", 3), ("BrokerRegistrationChangeRecord", 1),
                     ("FeatureLevelRecord", 0), ("ProducerIdsRecord", 0), ("ConfigRecord", 0),
                     ("ZkMigrationStateRecord", 0), ("NoOpRecord", 0), ("RegisterControllerRecord", 0),
                     ("BeginTransactionRecord", 0), ("EndTransactionRecord", 0)]:
        assert meta[expected] > 0, expected
    for expected in [("OffsetCommit", 1), ("OffsetCommit", 3), ("OffsetCommit", 4), ("OffsetCommit", None),
                     ("GroupMetadata", 1), ("GroupMetadata", 2), ("GroupMetadata", 3),
                     ("GroupMetadata", None)]:
        assert offsets[expected] > 0, expected


# ------------------------------------------------------------------------------------------------
# Plausibility against facts read without our decoder


def _log_dir_of(path: Path) -> Path:
    return path.parent.parent


def _topic_folders(log_dir: Path) -> dict[str, set[int]]:
    topics: dict[str, set[int]] = collections.defaultdict(set)
    for d in log_dir.iterdir():
        m = re.fullmatch(r"(.+)-(\d+)", d.name)
        if d.is_dir() and m and not d.name.startswith("__cluster_metadata"):
            topics[m.group(1)].add(int(m.group(2)))
    return topics


def _partition_metadata_id(folder: Path) -> str | None:
    p = folder / "partition.metadata"
    if not p.is_file():
        return None
    m = re.search(r"topic_id:\s*(\S+)", p.read_text())
    return m.group(1) if m else None


def _metadata_log_dirs() -> list[Path]:
    return sorted({_log_dir_of(p) for p in METADATA_FILES})


@pytest.mark.parametrize("log_dir", realworld.params(_metadata_log_dirs()))
def test_topic_and_partition_records_match_the_topic_folders(log_dir: Path) -> None:
    topics: dict[str, str] = {}
    removed: set[str] = set()
    partitions: set[tuple[str, int]] = set()
    features: dict[str, int] = {}
    for path in sorted((log_dir / "__cluster_metadata-0").iterdir()):
        if path not in METADATA_FILES:
            continue
        for _k, value, _o in _records(path):
            d = decode_metadata_record(value)
            data = d["data"]
            if d["type"] == "TopicRecord":
                topics[data["name"]] = data["topic_id"]
            elif d["type"] == "RemoveTopicRecord":
                removed.add(data["topic_id"])
            elif d["type"] == "PartitionRecord":
                partitions.add((data["topic_id"], data["partition_id"]))
            elif d["type"] == "FeatureLevelRecord":
                features[data["name"]] = data["feature_level"]
    assert "metadata.version" in features and 1 <= features["metadata.version"] < 100, features
    checked = 0
    for topic, parts in _topic_folders(log_dir).items():
        if topic not in topics:
            continue  # e.g. a topic whose TopicRecord was compacted into an older, absent snapshot
        topic_id = topics[topic]
        for partition in parts:
            folder_id = _partition_metadata_id(log_dir / f"{topic}-{partition}")
            if folder_id is not None:
                assert folder_id == topic_id, (topic, partition)
                checked += 1
            assert (topic_id, partition) in partitions, (topic, partition)
    # the manifest (written when the data was fetched, not by this code) says which dirs hold topics
    # besides the metadata log: there at least one topic id was compared, elsewhere there is none
    entry = next(e for e in realworld.manifest()["entries"] if e["name"] == log_dir.name)
    if set(entry["topics"]) - {"__cluster_metadata"}:
        assert checked > 0, "no topic id was compared with partition.metadata"
    else:
        assert checked == 0 and not _topic_folders(log_dir)


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def _log_end_offset(folder: Path) -> int:
    """The partition's log end offset, read with kafka-python (and segment file names)."""
    leo = 0
    for seg in sorted(folder.glob("*.log")):
        leo = max(leo, int(seg.stem))
        try:
            mr = MemoryRecords(seg.read_bytes())
            while (batch := mr.next_batch()) is not None:
                if isinstance(batch, DefaultRecordBatch):
                    leo = max(leo, batch.next_offset)
                else:
                    for r in batch:
                        leo = max(leo, r.offset + 1)
        except Exception:  # a torn tail: the valid prefix counts
            pass
    return leo


def _high_watermarks(log_dir: Path) -> dict[tuple[str, int], int]:
    """replication-offset-checkpoint: version, count, then "topic partition offset" lines."""
    p = log_dir / "replication-offset-checkpoint"
    out: dict[tuple[str, int], int] = {}
    if p.is_file():
        for line in p.read_text().splitlines()[2:]:
            parts = line.split()
            if len(parts) == 3:
                out[parts[0], int(parts[1])] = int(parts[2])
    return out


def _offset_bound(folder: Path, high_watermarks: dict[tuple[str, int], int]) -> int | None:
    """The highest offset a consumer could have reached: log end offset or checkpointed high watermark."""
    topic, partition = folder.name.rsplit("-", 1)
    hw = high_watermarks.get((topic, int(partition)))
    has_segments = folder.is_dir() and any(folder.glob("*.log"))
    if not has_segments:
        return hw  # some shared log dirs lack the segments of user topics
    leo = _log_end_offset(folder)
    return leo if hw is None else max(leo, hw)


def _check_offsets_file(path: Path) -> int:
    """Assert the plausibility facts of one __consumer_offsets segment; return how many commits
    could be compared with a log end offset / high watermark."""
    partition = int(path.parent.name.rsplit("-", 1)[1])
    log_dir = _log_dir_of(path)
    bounds: dict[Path, int | None] = {}
    high_watermarks = _high_watermarks(log_dir)
    compared = 0
    for key, value, offset in _records(path):
        d = decode_consumer_offsets(key, value)
        group = d["key"]["group"]
        # GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % 50 partitions (the default).
        h = _java_string_hash(group)
        h = 0 if h == 0x80000000 else abs(h - (1 << 32) if h & 0x80000000 else h)
        assert h % 50 == partition, (group, offset)
        if d["type"] != "OffsetCommit" or d["value"] is None:
            continue
        v = d["value"]
        assert v["offset"] >= -1 and 1_300_000_000_000 < v["commit_timestamp"] < 2_100_000_000_000
        folder = log_dir / f"{d['key']['topic']}-{d['key']['partition']}"
        if folder not in bounds:
            bounds[folder] = _offset_bound(folder, high_watermarks)
        if bounds[folder] is not None:
            assert v["offset"] <= bounds[folder], (folder.name, v["offset"], bounds[folder])
            compared += 1
    return compared


@pytest.mark.parametrize("path", realworld.params(OFFSETS_FILES))
def test_consumer_offsets_keys_and_offsets_are_plausible(path: Path) -> None:
    _check_offsets_file(path)


def test_many_offset_commits_are_compared_with_the_partition_end(realworld_dir: Path) -> None:
    compared = sum(_check_offsets_file(p) for p in OFFSETS_FILES)
    print("offset commits compared with a log end offset or high watermark:", compared)
    assert compared > 1000

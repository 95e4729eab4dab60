"""Our internal-record decoders against Kafka's own JSON message definitions (../shared/kafka-schemas).

tests/kafka_schemas.py reads and writes records from Kafka's JSON specs alone. For every record type
and every version those files define (metadata, consumer offsets incl. KIP-848/932 group records,
transaction state, share group state, remote log metadata, the consumer protocol), random records
written by that reader-writer must decode with our decoders to the same fields, and ours must
encode what it reads back the same; every metadata and consumer offsets record of ../shared/realworld
must decode the same both ways.
"""

from __future__ import annotations

import base64
import random
import struct
from pathlib import Path
from typing import Any

import pytest

import kafka_schemas as ks
import realworld
from logdoctor.formats.internal import (
    decode_consumer_offsets,
    decode_lenient,
    decode_metadata_record,
    decode_remote_log_metadata,
    decode_share_group_state,
    decode_transaction_log,
    encode_consumer_offsets,
    encode_metadata_record,
    encode_remote_log_metadata,
    encode_share_group_state,
    encode_transaction_log,
)
from logdoctor.formats.internal.protocol import read_message
from logdoctor.formats.internal.schemas import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION

SAMPLES = 25  # random records per (type, version)
_EXTRA = {"transaction_status_name"}  # convenience fields our decoders add


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _strip(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items() if k not in _EXTRA}
    if isinstance(d, list):
        return [_strip(v) for v in d]
    return d


def _framed_cases() -> list:
    if not ks.available():
        return [pytest.param(None, id="no-schemas", marks=pytest.mark.skip(reason=ks.SKIP_REASON))]
    out = []
    for folder in ("metadata", "storage"):
        for p in sorted((ks.SCHEMAS / folder).glob("*.json")):
            spec = ks.load(f"{folder}/{p.name}")
            if "apiKey" in spec:
                out.append(pytest.param(f"{folder}/{p.name}", id=f"{folder}/{p.stem}"))
    return out


_FRAMED = {
    "metadata": (decode_metadata_record, encode_metadata_record),
    "storage": (lambda v, **kw: decode_remote_log_metadata(None, v, **kw), encode_remote_log_metadata),
}


@pytest.mark.parametrize("rel", _framed_cases())
def test_framed_records_every_version(rel: str) -> None:
    spec = ks.Spec(ks.load(rel))
    decode, encode = _FRAMED[rel.split("/")[0]]
    rng = random.Random(rel)
    api_key = spec.raw["apiKey"]
    for version in spec.all_versions():
        for _ in range(SAMPLES):
            value = ks.random_value(spec, version, rng)
            data = _uvarint(1) + _uvarint(api_key) + _uvarint(version) + ks.write(spec, value, version)
            ours = decode(data)
            assert (ours["api_key"], ours["version"]) == (api_key, version)
            assert ours["data"] == value, (rel, version)
            assert encode(ours) == data  # our writer gives Kafka's bytes back
            again, end = ks.read(spec, data, version, pos=len(data) - len(ks.write(spec, value, version)))
            assert again == value and end == len(data)


def _coordinator_cases() -> list:
    if not ks.available():
        return [pytest.param(None, None, id="no-schemas", marks=pytest.mark.skip(reason=ks.SKIP_REASON))]
    out = []
    for folder in ("group-coordinator", "transaction-coordinator", "share-coordinator"):
        for p in sorted((ks.SCHEMAS / folder).glob("*Key.json")):
            value = p.with_name(p.name.replace("Key.json", "Value.json"))
            out.append(pytest.param(f"{folder}/{p.name}", f"{folder}/{value.name}", id=f"{folder}/{p.stem}"))
    return out


_COORDINATOR = {
    "group-coordinator": (
        lambda k, v: decode_consumer_offsets(k, v, decode_protocol=False),
        encode_consumer_offsets,
    ),
    "transaction-coordinator": (decode_transaction_log, encode_transaction_log),
    "share-coordinator": (decode_share_group_state, encode_share_group_state),
}


@pytest.mark.parametrize(("key_rel", "value_rel"), _coordinator_cases())
def test_coordinator_records_every_version(key_rel: str, value_rel: str) -> None:
    key_spec, value_spec = ks.Spec(ks.load(key_rel)), ks.Spec(ks.load(value_rel))
    decode, encode = _COORDINATOR[key_rel.split("/")[0]]
    rng = random.Random(key_rel)
    for record_type in key_spec.all_versions():  # the key's version is the record type
        for version in value_spec.all_versions():
            for _ in range(SAMPLES):
                k = ks.random_value(key_spec, record_type, rng)
                v = ks.random_value(value_spec, version, rng)
                key = struct.pack(">h", record_type) + ks.write(key_spec, k, record_type)
                value = struct.pack(">h", version) + ks.write(value_spec, v, version)
                ours = decode(key, value)
                assert (ours["key_version"], ours["version"]) == (record_type, version)
                assert ours["key"] == k and _strip(ours["value"]) == v, (key_rel, record_type, version)
                assert encode(ours) == (key, value)
            tomb = decode(struct.pack(">h", record_type) + ks.write(key_spec, k, record_type), None)
            assert tomb["value"] is None


@pytest.mark.parametrize(
    ("rel", "ours"),
    [
        ("clients/ConsumerProtocolSubscription.json", CONSUMER_PROTOCOL_SUBSCRIPTION),
        ("clients/ConsumerProtocolAssignment.json", CONSUMER_PROTOCOL_ASSIGNMENT),
    ],
    ids=["subscription", "assignment"],
)
def test_consumer_protocol_every_version(rel, ours) -> None:
    ks.require()
    spec = ks.Spec(ks.load(rel))
    rng = random.Random(rel)
    for version in spec.all_versions():
        for _ in range(SAMPLES):
            value = ks.random_value(spec, version, rng)
            data = ks.write(spec, value, version)
            assert read_message(ours, data, version)[0] == value


def test_every_schema_file_is_covered() -> None:
    """Each record spec of the files has a decoder here (control records, QuorumStateData and the
    producer snapshot are file formats with their own parsers and tests)."""
    ks.require()
    names = {rel for rel in ks.all_specs()}
    covered = {c.values[0] for c in _framed_cases()} | {x for c in _coordinator_cases() for x in c.values}
    covered |= {"clients/ConsumerProtocolSubscription.json", "clients/ConsumerProtocolAssignment.json"}
    others = {
        "clients/KRaftVersionRecord.json",
        "clients/LeaderChangeMessage.json",
        "clients/SnapshotFooterRecord.json",
        "clients/SnapshotHeaderRecord.json",
        "clients/VotersRecord.json",
        "raft/QuorumStateData.json",
        "storage/ProducerSnapshot.json",
    }
    assert names - covered == others


# --- every real record ------------------------------------------------------------------------------


def _metadata_values(log_dir: Path):  # (file, value) of every metadata record
    from logdoctor.formats.records import iter_batches

    mdir = log_dir / "__cluster_metadata-0"
    files = (
        sorted(mdir.glob("*.log"))
        + sorted(mdir.glob("*.checkpoint"))
        + sorted(log_dir.glob("bootstrap.checkpoint"))
    )
    for f in files:
        for b in iter_batches(f.read_bytes()):
            if b.is_control:
                continue
            for r in b.records():
                yield f, bytes(r.value)


def _by_api_key() -> dict[int, ks.Spec]:
    out = {}
    for p in sorted((ks.SCHEMAS / "metadata").glob("*.json")):
        spec = ks.load(f"metadata/{p.name}")
        out[spec["apiKey"]] = ks.Spec(spec)
    return out


def _kraft_dirs() -> list:
    if not realworld.available():
        return realworld.params([])
    return [
        pytest.param(realworld.REALWORLD / e["name"], id=e["name"])
        for e in realworld.manifest()["entries"]
        if e["has"]["__cluster_metadata_data"]
    ]


@pytest.mark.parametrize("log_dir", _kraft_dirs())
def test_every_real_metadata_record_agrees_with_the_schemas(log_dir: Path) -> None:
    ks.require()
    specs = _by_api_key()
    n = 0
    for f, value in _metadata_values(log_dir):
        r = ks._In(value)
        frame, api_key, version = r.uvarint(), r.uvarint(), r.uvarint()
        assert frame == 1
        theirs, end = ks.read(specs[api_key], value, version, pos=r.pos)
        assert end == len(value)
        ours = decode_metadata_record(value, source=str(f))
        assert (ours["api_key"], ours["version"]) == (api_key, version)
        assert ours["data"] == theirs, (f, api_key, version)
        n += 1
    assert n > 0


def _group_specs() -> dict[int, tuple[ks.Spec, ks.Spec]]:
    out = {}
    for p in sorted((ks.SCHEMAS / "group-coordinator").glob("*Key.json")):
        key = ks.Spec(ks.load(f"group-coordinator/{p.name}"))
        value = ks.Spec(ks.load(f"group-coordinator/{p.name.replace('Key.json', 'Value.json')}"))
        for t in key.all_versions():
            out[t] = (key, value)
    return out


def _offsets_logs() -> list:
    if not realworld.available():
        return realworld.params([])
    return realworld.params(
        [
            p
            for p in realworld.files(".log")
            if p.parent.name.startswith("__consumer_offsets-") and p.stat().st_size
        ]
    )


@pytest.mark.parametrize("path", _offsets_logs())
def test_every_real_consumer_offsets_record_agrees_with_the_schemas(path: Path) -> None:
    ks.require()
    from logdoctor.errors import FormatError
    from logdoctor.formats.records import iter_batches

    specs = _group_specs()
    n = 0
    try:
        batches = list(iter_batches(path.read_bytes()))
    except FormatError:
        pytest.skip("damaged log (the damage tests cover it)")
    for b in batches:
        if b.is_control:
            continue
        for rec in b.records():
            key, value = bytes(rec.key), None if rec.value is None else bytes(rec.value)
            record_type = struct.unpack(">h", key[:2])[0]
            key_spec, value_spec = specs[record_type]
            their_key, _ = ks.read(key_spec, key, record_type, pos=2)
            ours = decode_consumer_offsets(key, value, decode_protocol=False)
            assert ours["key"] == their_key
            if value is not None:
                version = struct.unpack(">h", value[:2])[0]
                their_value, end = ks.read(value_spec, value, version, pos=2)
                assert end == len(value) and ours["value"] == their_value, (path, rec.offset)
            n += 1
    assert n > 0


def test_newer_types_decode_as_unknown_with_raw_bytes() -> None:
    """A record type or version newer than the schema files: 'unknown type N, version V', no error."""
    value = _uvarint(1) + _uvarint(200) + _uvarint(0) + b"\x00"
    out = decode_lenient(
        lambda k, v, source=None: decode_metadata_record(v, source=source), "cluster-metadata", None, value
    )
    assert out["type"] == "unknown type 200, version 0"
    assert out["raw_value"] == base64.b64encode(value).decode()
    key = struct.pack(">h", 99) + b"abc"
    out = decode_lenient(decode_consumer_offsets, "consumer-offsets", key, struct.pack(">h", 7) + b"x")
    assert (out["type"], out["record_type"], out["version"]) == ("unknown type 99, version 7", 99, 7)
    # a known type at a version beyond the files
    key, _ = encode_share_group_state(
        {"key_version": 0, "key": {"group_id": "g", "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 0}}
    )
    out = decode_lenient(decode_share_group_state, "share-group-state", key, struct.pack(">h", 5))
    assert out["type"] == "unknown type 0, version 5"

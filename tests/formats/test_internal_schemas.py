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
from functools import cache
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


def _id(path: Path) -> str:
    return f"{ks.release_of(path)}:{_folder(path)}/{path.stem}"


def _folder(path: Path) -> str:
    """The Kafka module a spec file belongs to (metadata, storage, group-coordinator, ...; a jar's too)."""
    return ks.module_of(path)


def _framed_cases() -> list:
    if not ks.available():
        return [pytest.param(None, id="no-schemas", marks=pytest.mark.skip(reason=ks.SKIP_REASON))]
    out = []
    for p in ks.every_spec_file():
        if _folder(p) in ("metadata", "storage") and "apiKey" in ks.load_path(p):
            out.append(pytest.param(p, id=_id(p)))
    return out


_FRAMED = {
    "metadata": (decode_metadata_record, encode_metadata_record),
    "storage": (lambda v, **kw: decode_remote_log_metadata(None, v, **kw), encode_remote_log_metadata),
}


@cache
def _tagged_names() -> frozenset[str]:
    """snake_case names of every tagged field of every spec file (both folders): the only fields a
    newer layout may add to what an older release's file gives (at their defaults)."""
    names: set[str] = set()

    def walk(fields: list[dict[str, Any]], common: dict[str, Any]) -> None:
        for f in fields:
            if f.get("taggedVersions"):
                names.add(ks.snake(f["name"]))
            t = f["type"][2:] if f["type"].startswith("[]") else f["type"]
            walk(f.get("fields") or common.get(t, []), {})

    for p in ks.every_spec_file():
        spec = ks.load_path(p)
        walk(spec["fields"], {c["name"]: c["fields"] for c in spec.get("commonStructs", [])})
    return frozenset(names)


def _same(ours: Any, theirs: Any, where: str = "") -> None:
    """``ours`` decodes to ``theirs``: the same fields and values, except tagged fields a newer release
    added, which an older release's record lacks (ours holds them at their default)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        extra = set(ours) - set(theirs) - _EXTRA
        assert extra <= _tagged_names(), (where, extra)
        for k, v in theirs.items():
            _same(ours.get(k, KeyError), v, f"{where}.{k}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, where


@pytest.mark.parametrize("path", _framed_cases())
def test_framed_records_every_version(path: Path) -> None:
    spec = ks.Spec(ks.load_path(path))
    decode, encode = _FRAMED[_folder(path)]
    rng = random.Random(str(path.relative_to(path.parents[2])))
    api_key = spec.raw["apiKey"]
    for version in spec.all_versions():
        for _ in range(SAMPLES):
            value = ks.random_value(spec, version, rng)
            data = _uvarint(1) + _uvarint(api_key) + _uvarint(version) + ks.write(spec, value, version)
            ours = decode(data)
            assert (ours["api_key"], ours["version"], ours["type"]) == (api_key, version, spec.name)
            _same(ours["data"], value, f"{path.name} v{version}")
            assert encode(ours) == data  # our writer gives Kafka's bytes back
            again, end = ks.read(spec, data, version, pos=len(data) - len(ks.write(spec, value, version)))
            assert again == value and end == len(data)


_COORDINATOR_FOLDERS = ("group-coordinator", "transaction-coordinator", "share-coordinator")


def _key_for(value: Path) -> Path | None:
    """The key spec of a value spec: beside it, else 4.2.0's, else the reference's (a file of
    kafka-schemas-4.2/_4.0.0 or _4.1.1 holds only the value that changed)."""
    name = value.name.replace("Value.json", "Key.json")
    folder = _folder(value)
    if "!/" in str(value):  # inside a release's jar: the key is beside it
        return value.with_name(name) if value.with_name(name) in ks.every_spec_file() else None
    for candidate in (
        value.with_name(name),
        ks.SCHEMAS_42 / folder / "src/main/resources/common/message" / name,
        ks.SCHEMAS / folder / name,
    ):
        if candidate.is_file():
            return candidate
    return None


def _coordinator_cases() -> list:
    if not ks.available():
        return [pytest.param(None, None, id="no-schemas", marks=pytest.mark.skip(reason=ks.SKIP_REASON))]
    out = []
    for p in ks.every_spec_file():
        if _folder(p) in _COORDINATOR_FOLDERS and p.name.endswith("Value.json"):
            out.append(pytest.param(_key_for(p), p, id=_id(p)))
    return out


_COORDINATOR = {
    "group-coordinator": (
        lambda k, v: decode_consumer_offsets(k, v, decode_protocol=False),
        encode_consumer_offsets,
    ),
    "transaction-coordinator": (decode_transaction_log, encode_transaction_log),
    "share-coordinator": (decode_share_group_state, encode_share_group_state),
}
# 4.1+ calls record type 0 LegacyOffsetCommit; we name both offset commit types OffsetCommit
_TYPE_NAMES = {"LegacyOffsetCommit": "OffsetCommit"}


@pytest.mark.parametrize(("key_path", "value_path"), _coordinator_cases())
def test_coordinator_records_every_version(key_path: Path, value_path: Path) -> None:
    """Records of every coordinator record type and version of every release's file decode to the
    fields Kafka's JSON gives (the key's int16 prefix is the record type: its version in 4.0's files,
    its ``apiKey`` with key version 0 in 4.1+'s)."""
    assert key_path is not None, f"no key spec for {value_path}"
    key_spec, value_spec = ks.Spec(ks.load_path(key_path)), ks.Spec(ks.load_path(value_path))
    decode, encode = _COORDINATOR[_folder(value_path)]
    rng = random.Random(str(value_path.relative_to(value_path.parents[2])))
    if "apiKey" in key_spec.raw:
        types = [(key_spec.raw["apiKey"], 0)]
    else:
        types = [(t, t) for t in key_spec.all_versions()]
    release = ks.release_of(value_path)
    base = value_spec.name[: -len("Value")]
    for record_type, key_version in types:
        for version in value_spec.all_versions():
            for _ in range(SAMPLES):
                k = ks.random_value(key_spec, key_version, rng)
                v = ks.random_value(value_spec, version, rng)
                key = struct.pack(">h", record_type) + ks.write(key_spec, k, key_version)
                value = struct.pack(">h", version) + ks.write(value_spec, v, version)
                ours = decode(key, value)
                assert (ours["key_version"], ours["version"]) == (record_type, version)
                assert ours["type"] == _TYPE_NAMES.get(base, base)
                assert ours["key"] == k
                _same(ours["value"], v, f"{value_path.name} v{version} ({release})")
                if "layout" in ours:  # a layout Kafka changed under the same version: this release's
                    assert release in ours["layout"].split("/"), (ours["layout"], release)
                assert encode(ours) == (key, value)
            tomb = decode(struct.pack(">h", record_type) + ks.write(key_spec, k, key_version), None)
            assert tomb["value"] is None


def _protocol_cases() -> list:
    if not ks.available():
        return [pytest.param(None, id="no-schemas", marks=pytest.mark.skip(reason=ks.SKIP_REASON))]
    return [pytest.param(p, id=_id(p)) for p in ks.every_spec_file() if p.stem.startswith("ConsumerProtocol")]


@pytest.mark.parametrize("path", _protocol_cases())
def test_consumer_protocol_every_version(path: Path) -> None:
    ours = {"ConsumerProtocolSubscription": CONSUMER_PROTOCOL_SUBSCRIPTION,
            "ConsumerProtocolAssignment": CONSUMER_PROTOCOL_ASSIGNMENT}[path.stem]
    spec = ks.Spec(ks.load_path(path))
    rng = random.Random(path.name)
    for version in spec.all_versions():
        for _ in range(SAMPLES):
            value = ks.random_value(spec, version, rng)
            data = ks.write(spec, value, version)
            assert read_message(ours, data, version)[0] == value


# file formats with their own parsers and tests, not internal-topic records
_OTHERS = {
    "KRaftVersionRecord", "LeaderChangeMessage", "SnapshotFooterRecord", "SnapshotHeaderRecord",
    "VotersRecord", "QuorumStateData", "ProducerSnapshot", "EndTxnMarker",
}


def test_every_schema_file_is_covered() -> None:
    """Each record spec of both folders is decoded by the tests above (control records, the
    QuorumStateData file and the producer snapshot have their own parsers and tests), and the
    generated layout tables (kafka_layouts.py) name every file: a new file fails here."""
    ks.require()
    files = set(ks.every_spec_file())
    covered = {c.values[0] for c in _framed_cases()} | {x for c in _coordinator_cases() for x in c.values}
    covered |= {c.values[0] for c in _protocol_cases()}
    assert {p for p in files - covered if p.stem not in _OTHERS} == set()
    assert {p.stem for p in files - covered} <= _OTHERS
    from logdoctor.formats.internal.kafka_layouts import LAYOUTS

    generated = {f for lays in LAYOUTS.values() for lay in lays for f in lay.files}
    assert {ks.layout_file_name(p) for p in files} - generated == set()


def test_kafka_42_schemas_are_among_the_cases() -> None:
    """The 4.1/4.2 files are present and tested (else the canary would pass on 4.0 alone), and so are the
    files inside the jars of 4.3.1 and 4.4.0."""
    if not ks.available_42():
        pytest.skip(ks.SKIP_REASON_42)
    ks.require_jars()
    cases = {c.values[-1] for c in _framed_cases() + _coordinator_cases()}
    releases = {ks.release_of(p) for p in cases}
    assert {"4.0-SNAPSHOT", "4.0.0", "4.1.1", "4.2.0", "trunk-4425e97", *ks.JAR_RELEASES} <= releases


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
        _same(ours["data"], theirs, f"{f} {api_key} v{version}")
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
                assert end == len(value), (path, rec.offset)
                _same(ours["value"], their_value, f"{path} {rec.offset}")
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

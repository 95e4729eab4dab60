"""A small generic reader and writer driven by Kafka's own JSON message definitions (tests only).

It reads ../shared/kafka-schemas and ../shared/kafka-schemas-4.2 in place, and the specs inside the jars of
the Kafka releases the tests install (.tools/kafka/VERSION/lib, with zipfile) (Kafka's ``*.json`` message
specs, with their ``//`` license comments) and interprets them the way Kafka's message generator does
(MessageDataGenerator, FieldSpec): per-field ``versions``, ``nullableVersions``,
``taggedVersions``/``tag``, ``default``, the message's ``flexibleVersions`` (compact lengths and
tagged-field sections), big-endian fixed types, ``uuid`` as 16 bytes. It shares no code with
logdoctor.formats.internal, so our decoders are checked against an independent reading of Kafka's
definitions.

Values: field names in snake_case (``LeaderEpoch`` -> ``leader_epoch``), uuids in Kafka's text form
(URL-safe base64, no padding), bytes/records as standard base64.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

SCHEMAS = Path(
    os.environ.get(
        "LOGDOCTOR_KAFKA_SCHEMAS", Path(__file__).resolve().parent.parent.parent / "shared" / "kafka-schemas"
    )
)
SKIP_REASON = (
    f"realworld: no Kafka JSON schemas at {SCHEMAS} (../shared/kafka-schemas exists only in the workspace)"
)
# Kafka 4.1.1/4.2.0 (and 4.0.0 / later trunk files under _4.0.0, _4.1.1, _stored-apache-kafka-trunk): see
# its README.md. Same layout as Kafka's tree (metadata/src/main/resources/common/metadata/X.json).
SCHEMAS_42 = Path(os.environ.get("LOGDOCTOR_KAFKA_SCHEMAS_42", SCHEMAS.parent / "kafka-schemas-4.2"))
SKIP_REASON_42 = (
    f"realworld: no Kafka 4.1/4.2 JSON schemas at {SCHEMAS_42} (../shared/kafka-schemas-4.2 exists only in"
    " the workspace)"
)
# release label of each folder (as the README of kafka-schemas-4.2 names them)
RELEASE_FOLDERS = {"_4.0.0": "4.0.0", "_4.1.1": "4.1.1", "_stored-apache-kafka-trunk": "trunk-4425e97"}
RELEASES = ("4.0-SNAPSHOT", "4.0.0", "4.1.1", "4.2.0", "trunk-4425e97")  # oldest first
_REPO = Path(__file__).resolve().parents[1]
#: The Kafka releases whose specs are read from their jars, as scripts/gen_kafka_layouts.py reads them
#: (JAR_RELEASES there); a spec inside a jar is addressed as ``<jar path>!/<entry>``
#: (``.tools/kafka/4.3.1/lib/kafka-metadata-4.3.1.jar!/common/metadata/RegisterBrokerRecord.json``).
KAFKA = Path(os.environ.get("LOGDOCTOR_KAFKA_TOOLS", _REPO / ".tools" / "kafka"))
JAR_RELEASES = ("4.3.1", "4.4.0")
JAR_MODULES = ("clients", "group-coordinator", "share-coordinator", "transaction-coordinator", "metadata",
               "raft", "storage")
#: kafka-clients' specs that are on disk (the rest are RPCs and clients' own data)
CLIENTS_ON_DISK = frozenset({
    "ConsumerProtocolAssignment", "ConsumerProtocolSubscription", "EndTxnMarker", "KRaftVersionRecord",
    "LeaderChangeMessage", "SnapshotFooterRecord", "SnapshotHeaderRecord", "VotersRecord",
})
MAX = 0x7FFF
_FIXED = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}


def available() -> bool:
    return SCHEMAS.is_dir()


def require() -> Path:
    if not available():
        pytest.skip(SKIP_REASON)
    return SCHEMAS


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def versions(text: str | None) -> tuple[int, int]:
    if text is None or text == "none":
        return (0, -1)
    if text.endswith("+"):
        return (int(text[:-1]), MAX)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


def fversions(f: dict[str, Any]) -> tuple[int, int]:
    """A field's versions; a tagged-only field gives its taggedVersions (FieldSpec)."""
    return versions(f.get("versions") or f.get("taggedVersions"))


def _in(v: int, rng: tuple[int, int]) -> bool:
    return rng[0] <= v <= rng[1]


@cache
def load(relpath: str) -> dict[str, Any]:
    """One spec file (``metadata/PartitionRecord.json``), comments stripped."""
    return load_path(SCHEMAS / relpath)


@cache
def load_path(path: Path) -> dict[str, Any]:
    """One spec file by its path, comments stripped; ``<jar>!/<entry>``: the entry inside that jar."""
    jar, sep, entry = str(path).partition("!/")
    if sep:
        text = _jar_json_texts(jar)[entry]
    else:
        text = path.read_text()
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


@cache
def _jar_json_texts(jar: str) -> dict[str, str]:
    """Every ``.json`` entry of ``jar`` by its name, read with one opening of the jar (its central
    directory, thousands of entries in the clients jar, parsed once: not once per spec)."""
    with zipfile.ZipFile(jar) as archive:
        return {n: archive.read(n).decode("utf-8") for n in archive.namelist() if n.endswith(".json")}


def jar_of(release: str, module: str) -> Path:
    return KAFKA / release / "lib" / f"kafka-{module}-{release}.jar"


def jars_available(release: str | None = None) -> bool:
    """Whether the jars of ``release`` (None: of every release of :data:`JAR_RELEASES`) are installed."""
    return all(jar_of(r, m).is_file() for r in ((release,) if release else JAR_RELEASES) for m in JAR_MODULES)


def require_jars(release: str | None = None) -> None:
    if not jars_available(release):
        pytest.skip(f"required: Kafka {release or ', '.join(JAR_RELEASES)}'s jars in {KAFKA}: run bash "
                    "scripts/ensure-kafka.sh (make test does)")


@cache
def jar_spec_files(release: str) -> tuple[Path, ...]:
    """``<jar>!/<entry>`` of every on-disk spec inside ``release``'s jars (not the RPCs'), () when they are
    not installed."""
    if not jars_available(release):
        return ()
    out: list[Path] = []
    for module in JAR_MODULES:
        jar = jar_of(release, module)
        for entry in sorted(_jar_json_texts(str(jar))):
            path = Path(f"{jar}!/{entry}")
            spec = load_path(path)
            if spec.get("type") in ("request", "response", "header"):
                continue
            if module == "clients" and spec["name"] not in CLIENTS_ON_DISK:
                continue
            out.append(path)
    return tuple(out)


def jar_file(release: str, name: str) -> Path:
    """``<jar>!/<entry>`` of message ``name``'s spec in ``release``'s jars (the test skips with a
    ``required:`` reason when they are not installed)."""
    require_jars(release)
    for path in jar_spec_files(release):
        if path.stem == name:
            return path
    raise FileNotFoundError(f"no spec of {name} in Kafka {release}'s jars")


def available_42() -> bool:
    return SCHEMAS_42.is_dir()


def release_of(path: Path) -> str:
    """The Kafka release a spec file is from ("4.0-SNAPSHOT", "4.0.0", "4.1.1", "4.2.0", "trunk-4425e97",
    and "4.3.1", "4.4.0" for a spec inside a release's jar)."""
    jar, sep, _ = str(path).partition("!/")
    if sep:
        return Path(jar).parent.parent.name
    if path.is_relative_to(SCHEMAS_42):
        first = path.relative_to(SCHEMAS_42).parts[0]
        return RELEASE_FOLDERS.get(first, "4.2.0")
    return "4.0-SNAPSHOT"


def module_of(path: Path) -> str:
    """The Kafka module a spec file belongs to (metadata, storage, group-coordinator, ...)."""
    jar, sep, _ = str(path).partition("!/")
    if sep:
        found = re.fullmatch(r"kafka-(.+)-\d+\.\d+\.\d+\.jar", Path(jar).name)
        assert found, path
        return found.group(1)
    base = next(b for b in (SCHEMAS_42, SCHEMAS) if path.is_relative_to(b))
    for part in path.relative_to(base).parts:
        if part in JAR_MODULES:
            return part
    raise AssertionError(path)


def every_spec_file() -> list[Path]:
    """Every JSON spec of ../shared/kafka-schemas and ../shared/kafka-schemas-4.2 (those present), then the
    on-disk specs of the jars of every release of :data:`JAR_RELEASES` that is installed."""
    return [*_shared_spec_files(), *(p for r in JAR_RELEASES for p in jar_spec_files(r))]


@cache
def _shared_spec_files() -> tuple[Path, ...]:
    out: list[Path] = []
    for root in (SCHEMAS, SCHEMAS_42):
        if root.is_dir():
            out += sorted(root.rglob("*.json"))
    return tuple(out)


def layout_file_name(path: Path) -> str:
    """How the generated tables name a spec file: relative to ../shared, or for a spec inside a jar of the
    project's .tools/kafka ``.tools/kafka/V/lib/JAR!/ENTRY``."""
    jar, sep, entry = str(path).partition("!/")
    if sep:
        return f"{Path(jar).relative_to(_REPO)}!/{entry}"
    return str(path.relative_to(SCHEMAS.parent))


def path_of_layout_file(name: str) -> Path:
    """The file a generated layout names (the inverse of :func:`layout_file_name`; :func:`load_path`
    reads either)."""
    if name.startswith(".tools/kafka/"):
        return _REPO / name
    return SCHEMAS.parent / name


def all_specs() -> dict[str, dict[str, Any]]:
    """relative path -> spec, for every JSON file."""
    return {
        str(p.relative_to(SCHEMAS)): load(str(p.relative_to(SCHEMAS)))
        for p in sorted(SCHEMAS.rglob("*.json"))
    }


class Spec:
    """A message spec with its common structs resolved."""

    def __init__(self, spec: dict[str, Any]):
        self.raw = spec
        self.name = spec["name"]
        self.valid = versions(spec["validVersions"])
        self.flexible = versions(spec.get("flexibleVersions"))
        self.common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}

    def fields_of(self, f: dict[str, Any]) -> list[dict[str, Any]]:
        if "fields" in f:
            return f["fields"]
        t = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        return self.common[t]

    def all_versions(self) -> range:
        return range(self.valid[0], self.valid[1] + 1)


def _default(f: dict[str, Any], spec: Spec, version: int) -> Any:
    t = f["type"]
    d = f.get("default")
    if t.startswith("[]"):
        return None if d == "null" else []
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if isinstance(d, int):
            return d
        return int(d, 0) if d not in (None, "") else 0
    if t == "float64":
        return float(d) if d not in (None, "") else 0.0
    if t == "bool":
        return d == "true" if isinstance(d, str) else bool(d)
    if t == "uuid":
        return "AAAAAAAAAAAAAAAAAAAAAA"
    if t in ("string", "bytes", "records"):
        return None if d == "null" else (d or "")
    # a struct
    if d == "null":
        return None
    return {
        snake(x["name"]): _default(x, spec, version) for x in spec.fields_of(f) if _in(version, fversions(x))
    }


# --- reader -----------------------------------------------------------------------------------------


class _In:
    def __init__(self, data: bytes, pos: int = 0, end: int | None = None):
        self.data, self.pos, self.end = data, pos, len(data) if end is None else end

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise ValueError(f"need {n} bytes at {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def fixed(self, t: str) -> Any:
        fmt = _FIXED[t]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7


def read(spec: Spec, data: bytes, version: int, pos: int = 0) -> tuple[dict[str, Any], int]:
    r = _In(data, pos)
    value = _read_struct(spec, r, spec.raw["fields"], version, _in(version, spec.flexible))
    return value, r.pos


def _read_struct(spec: Spec, r: _In, fields: list[dict], version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged: dict[int, dict] = {}
    for f in fields:
        if not _in(version, fversions(f)):
            continue
        if flexible and _in(version, versions(f.get("taggedVersions"))):
            tagged[int(f["tag"])] = f
            out[snake(f["name"])] = _default(f, spec, version)
            continue
        out[snake(f["name"])] = _read_value(spec, r, f, version, flexible)
    if flexible:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            payload_end = r.pos + size
            f = tagged.get(tag)
            if f is None:
                raw = r.take(size)
                out.setdefault("_unknown_tagged_fields", []).append(
                    {"tag": tag, "data": base64.b64encode(raw).decode()}
                )
                continue
            sub = _In(r.data, r.pos, payload_end)
            if _is_struct(f) and _in(version, versions(f.get("nullableVersions"))) and sub.uvarint() == 0:
                out[snake(f["name"])] = None
            elif _is_struct(f):
                out[snake(f["name"])] = _read_struct(spec, sub, spec.fields_of(f), version, True)
            else:
                out[snake(f["name"])] = _read_value(spec, sub, f, version, True)
            if sub.pos != payload_end:
                raise ValueError(f"tag {tag}: {payload_end - sub.pos} bytes left")
            r.pos = payload_end
    return out


def _is_struct(f: dict) -> bool:
    t = f["type"]
    return not t.startswith("[]") and t not in _FIXED and t not in ("uuid", "string", "bytes", "records")


def _length(r: _In, flexible: bool, short: bool) -> int:
    if flexible:
        return r.uvarint() - 1
    return r.fixed("int16" if short else "int32")


def _read_value(spec: Spec, r: _In, f: dict, version: int, flexible: bool, t: str | None = None) -> Any:
    t = t or f["type"]
    nullable = _in(version, versions(f.get("nullableVersions")))
    if t in _FIXED:
        return r.fixed(t)
    if t == "uuid":
        return base64.urlsafe_b64encode(r.take(16)).decode().rstrip("=")
    if t == "string":
        n = _length(r, flexible, True)
        if n < 0:
            assert nullable and n == -1, f["name"]
            return None
        return r.take(n).decode("utf-8")
    if t in ("bytes", "records"):
        n = _length(r, flexible, False)
        if n < 0:
            assert nullable and n == -1, f["name"]
            return None
        return base64.b64encode(r.take(n)).decode()
    if t.startswith("[]"):
        n = _length(r, flexible, False)
        if n < 0:
            assert nullable and n == -1, f["name"]
            return None
        elem = t[2:]
        if elem in _FIXED or elem in ("uuid", "string", "bytes", "records"):
            return [
                _read_value(spec, r, {"name": f["name"], "type": elem}, version, flexible) for _ in range(n)
            ]
        return [_read_struct(spec, r, spec.fields_of(f), version, flexible) for _ in range(n)]
    if nullable and r.fixed("int8") < 0:
        return None
    return _read_struct(spec, r, spec.fields_of(f), version, flexible)


# --- writer -----------------------------------------------------------------------------------------


def _uvarint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def write(spec: Spec, value: dict[str, Any], version: int) -> bytes:
    out = bytearray()
    _write_struct(spec, out, spec.raw["fields"], value, version, _in(version, spec.flexible))
    return bytes(out)


def metadata_record_43(name: str, version: int, **fields: Any) -> bytes:
    """A KRaft metadata record value written from Kafka 4.3.1's definition of ``name`` (inside its
    kafka-metadata jar; the test skips with a ``required:`` reason without it): frame version 1, api key,
    version (uvarints), then the struct with ``fields`` over the spec's defaults."""
    spec = Spec(load_path(jar_file("4.3.1", name)))
    value = {snake(f["name"]): _default(f, spec, version) for f in spec.raw["fields"]
             if _in(version, fversions(f))}
    value.update(fields)
    out = bytearray()
    for v in (1, spec.raw["apiKey"], version):
        _uvarint(out, v)
    return bytes(out) + write(spec, value, version)


def _write_struct(
    spec: Spec, out: bytearray, fields: list[dict], value: dict, version: int, flexible: bool
) -> None:
    tagged = []
    for f in fields:
        if not _in(version, fversions(f)):
            continue
        v = value[snake(f["name"])]
        if flexible and _in(version, versions(f.get("taggedVersions"))):
            if v == _default(f, spec, version):
                continue
            payload = bytearray()
            if _is_struct(f):
                if _in(version, versions(f.get("nullableVersions"))):
                    _uvarint(payload, 0 if v is None else 1)
                if v is not None:
                    _write_struct(spec, payload, spec.fields_of(f), v, version, True)
            else:
                _write_value(spec, payload, f, v, version, True)
            tagged.append((int(f["tag"]), bytes(payload)))
            continue
        _write_value(spec, out, f, v, version, flexible)
    if flexible:
        _uvarint(out, len(tagged))
        for tag, payload in sorted(tagged):
            _uvarint(out, tag)
            _uvarint(out, len(payload))
            out += payload


def _write_length(out: bytearray, n: int, flexible: bool, short: bool) -> None:
    if flexible:
        _uvarint(out, n + 1)
    else:
        out += struct.pack(">h" if short else ">i", n)


def _write_value(
    spec: Spec, out: bytearray, f: dict, v: Any, version: int, flexible: bool, t: str | None = None
) -> None:
    t = t or f["type"]
    if t in _FIXED:
        out += struct.pack(_FIXED[t], v)
    elif t == "uuid":
        out += base64.urlsafe_b64decode(v + "==")
    elif t == "string":
        if v is None:
            _write_length(out, -1, flexible, True)
        else:
            raw = v.encode()
            _write_length(out, len(raw), flexible, True)
            out += raw
    elif t in ("bytes", "records"):
        if v is None:
            _write_length(out, -1, flexible, False)
        else:
            raw = base64.b64decode(v)
            _write_length(out, len(raw), flexible, False)
            out += raw
    elif t.startswith("[]"):
        if v is None:
            _write_length(out, -1, flexible, False)
            return
        _write_length(out, len(v), flexible, False)
        elem = t[2:]
        for item in v:
            if elem in _FIXED or elem in ("uuid", "string", "bytes", "records"):
                _write_value(spec, out, {"name": f["name"], "type": elem}, item, version, flexible)
            else:
                _write_struct(spec, out, spec.fields_of(f), item, version, flexible)
    else:
        if _in(version, versions(f.get("nullableVersions"))):
            if v is None:
                out.append(0xFF)
                return
            out.append(1)
        _write_struct(spec, out, spec.fields_of(f), v, version, flexible)


# --- random values ------------------------------------------------------------------------------------

_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def random_value(
    spec: Spec, version: int, rng: Any, fields: list[dict] | None = None, depth: int = 0
) -> dict:
    """A random value of every field the version has (tagged ones sometimes left at their default)."""
    out: dict[str, Any] = {}
    for f in spec.raw["fields"] if fields is None else fields:
        if not _in(version, fversions(f)):
            continue
        name = snake(f["name"])
        if (
            _in(version, versions(f.get("taggedVersions")))
            and _in(version, spec.flexible)
            and rng.random() < 0.3
        ):
            out[name] = _default(f, spec, version)
            continue
        out[name] = _random_field(spec, f, version, rng, depth)
    return out


def _random_field(spec: Spec, f: dict, version: int, rng: Any, depth: int, t: str | None = None) -> Any:
    t = t or f["type"]
    if (
        _in(version, versions(f.get("nullableVersions")))
        and rng.random() < 0.2
        and t not in _FIXED
        and t != "uuid"
    ):
        return None
    if t == "bool":
        return rng.random() < 0.5
    if t == "float64":
        return rng.uniform(-1e6, 1e6)
    if t == "uint16":
        return rng.randrange(0, 1 << 16)
    if t == "uint32":
        return rng.randrange(0, 1 << 32)
    if t in _RANGES:
        b = _RANGES[t]
        return rng.randrange(-(1 << b), 1 << b)
    if t == "uuid":
        return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")
    if t == "string":
        return "".join(rng.choice("abcdefgh-_.éxyz") for _ in range(rng.randrange(0, 12)))
    if t in ("bytes", "records"):
        return base64.b64encode(rng.randbytes(rng.randrange(0, 10))).decode()
    if t.startswith("[]"):
        elem = t[2:]
        n = rng.randrange(0, 3 if depth < 2 else 1)
        if elem in _FIXED or elem in ("uuid", "string", "bytes", "records"):
            return [
                _random_field(spec, {"name": f["name"], "type": elem}, version, rng, depth + 1)
                for _ in range(n)
            ]
        return [random_value(spec, version, rng, spec.fields_of(f), depth + 1) for _ in range(n)]
    return random_value(spec, version, rng, spec.fields_of(f), depth + 1)


def txn_record(
    tid: str, pid: int, epoch: int, status: int, start_ms: int, timeout_ms: int = 60000
) -> tuple[bytes, bytes]:
    """A ``__transaction_state`` record (TransactionLogKey/Value version 0 from Kafka's JSON schemas) of
    transactional id ``tid``: producer ``pid`` at ``epoch`` in ``status`` (1 Ongoing, 4 CompleteCommit, 5
    CompleteAbort), listing billing-0 (../shared/forensics' transactional partition)."""
    key_spec = Spec(load("transaction-coordinator/TransactionLogKey.json"))
    value_spec = Spec(load("transaction-coordinator/TransactionLogValue.json"))
    key = struct.pack(">h", 0) + write(key_spec, {"transactional_id": tid}, 0)
    value = {
        "producer_id": pid,
        "producer_epoch": epoch,
        "transaction_timeout_ms": timeout_ms,
        "transaction_status": status,
        "transaction_partitions": [{"topic": "billing", "partition_ids": [0]}],
        "transaction_last_update_timestamp_ms": start_ms,
        "transaction_start_timestamp_ms": start_ms,
    }
    return key, struct.pack(">h", 0) + write(value_spec, value, 0)

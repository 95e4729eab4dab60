#!/usr/bin/env python3
"""Generate src/logdoctor/formats/internal/kafka_layouts.py from Kafka's JSON message definitions.

Usage::

    python scripts/gen_kafka_layouts.py [--shared ../shared] [--kafka .tools/kafka] [--check]

It reads, in place (never copied into the repo), the JSON message specs of every Kafka release it knows:

- the workspace's (``../shared/kafka-schemas``: apache/kafka 1eb7644, 4.0.0-SNAPSHOT;
  ``../shared/kafka-schemas-4.2``: 4.2.0, with ``_4.0.0``/``_4.1.1`` for files that changed in between
  and ``_stored-apache-kafka-trunk`` for UnregisterControllerRecord from a later trunk);
- the released jars of every 4.x release the tests install (:data:`JAR_RELEASES`: 4.3.1 and 4.4.0, from
  Maven Central by scripts/ensure-kafka.sh into ``.tools/kafka/VERSION/lib``): the specs travel inside
  them (``kafka-group-coordinator-V.jar!/common/message/*.json``, ``kafka-metadata-V.jar!/common/metadata/``,
  ``kafka-storage-V.jar!/message/`` ...), read with zipfile; each jar's sha256 must be the one
  brokers/jars.lock pins, so the committed module is reproducible from the lock.

and writes one Python table of every distinct layout of every message: each version, each field
(snake_case), nullable and tagged versions, tags, defaults, and the release(s) and file(s) the layout was
read from. A message whose layout changed under the same version (the 4.0 -> 4.1 share-group records)
gets one entry per layout, oldest first. Interpreted as Kafka's message generator does
(K: generator/src/main/java/org/apache/kafka/message/FieldSpec.java, MessageSpec.java).

The jars made the project's hand-written statement of Kafka 4.3's delta (scripts/kafka_schema_supplement.py:
RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3, KIP-1066) unnecessary: 4.3.1's and 4.4.0's own
files give the same layouts (checked before it was dropped; the generated tables name the jars' files).

``--check`` exits 1 when the committed module differs from what the JSON files give (CI / tests). Without
the jars (or ../shared) there is nothing to check against: it exits 2 naming what is missing (the tests
skip with a ``required:`` reason, a failure in CI).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src" / "logdoctor" / "formats" / "internal" / "kafka_layouts.py"

# (release label, folder relative to the shared folder, skip sub-folders starting with "_", provenance)
ROOTS: tuple[tuple[str, str, bool, str], ...] = (
    ("4.0-SNAPSHOT", "kafka-schemas", False, "apache/kafka 1eb7644 (4.0.0-SNAPSHOT, 2024-10)"),
    ("4.0.0", "kafka-schemas-4.2/_4.0.0", False, "apache/kafka tag 4.0.0 (985bc995, 2025-03-14)"),
    ("4.1.1", "kafka-schemas-4.2/_4.1.1", False, "apache/kafka tag 4.1.1 (be816b82, 2025-10-26)"),
    ("4.2.0", "kafka-schemas-4.2", True, "apache/kafka tag 4.2.0-rc1 (6eef6636, 2026-01-19)"),
    ("trunk-4425e97", "kafka-schemas-4.2/_stored-apache-kafka-trunk", False,
     "apache/kafka trunk 4425e970 (metadata.version 4.4-IV2)"),
)
#: (release, provenance) of the releases read from their jars (.tools/kafka/RELEASE/lib), oldest first: every
#: 4.x release the tests install (brokers/RELEASE/pom.xml). 3.9.1, installed for ZooKeeper mode, is not
#: read: a 3.9 broker writes nothing the 4.0-SNAPSHOT files lack, and its jars hold a share-group preview
#: layout (ShareGroupPartitionMetadataValue) no 4.x broker reads (the canary test checks it holds no record
#: type or version the tables miss).
JAR_RELEASES: tuple[tuple[str, str], ...] = (
    ("4.3.1", "Apache Kafka 4.3.1, the jars Maven Central serves (org.apache.kafka, brokers/jars.lock)"),
    ("4.4.0", "Apache Kafka 4.4.0, the jars Maven Central serves (org.apache.kafka, brokers/jars.lock)"),
)
#: the jars of Kafka's modules whose JSON specs define what a broker writes in a log dir
JAR_MODULES = ("clients", "group-coordinator", "share-coordinator", "transaction-coordinator", "metadata",
               "raft", "storage")
#: kafka-clients also carries the RPCs' and clients' own data: of its specs, the ones on disk (the KRaft
#: control records, the transaction marker, the consumer protocol embedded in __consumer_offsets), the
#: same ones ../shared holds. Another ``*Record`` there trips the canary test (tests/formats).
CLIENTS_ON_DISK = frozenset({
    "ConsumerProtocolAssignment", "ConsumerProtocolSubscription", "EndTxnMarker", "KRaftVersionRecord",
    "LeaderChangeMessage", "SnapshotFooterRecord", "SnapshotHeaderRecord", "VotersRecord",
})
LOCK = REPO / "brokers" / "jars.lock"
_PRIMITIVES = {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string",
               "bytes", "records"}
_INTS = {"int8", "int16", "uint16", "int32", "uint32", "int64"}


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def parse(text: str) -> dict[str, Any]:
    """One JSON spec's text, its ``//`` license comment lines dropped."""
    return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))


def load(path: Path) -> dict[str, Any]:
    return parse(path.read_text())


def spec_files(shared: Path) -> list[tuple[tuple[str, ...], str, Path]]:
    """(releases, path relative to the shared folder, file) of every JSON spec of ../shared, oldest release
    first.

    kafka-schemas-4.2/README.md: ``_4.1.1`` holds the 4.1.1 files that changed again in 4.2, so a
    4.2.0 file without a ``_4.1.1`` counterpart is 4.1.1's file too."""
    out = []
    in_411 = {str(p.relative_to(shared / "kafka-schemas-4.2/_4.1.1"))
              for p in (shared / "kafka-schemas-4.2/_4.1.1").rglob("*.json")}
    for release, folder, skip_underscore, _ in ROOTS:
        root = shared / folder
        if not root.is_dir():
            raise MissingSources(f"gen_kafka_layouts: no folder {root} (../shared: only in the workspace)")
        for p in sorted(root.rglob("*.json")):
            rel = p.relative_to(root)
            if skip_underscore and rel.parts[0].startswith("_"):
                continue
            releases = (release,)
            if release == "4.2.0" and str(rel) not in in_411:
                releases = ("4.1.1", "4.2.0")
            out.append((releases, str(p.relative_to(shared)), p))
    return out


class MissingSources(Exception):
    """The JSON files to generate from are not here (../shared, or a release's jars): exit status 2."""


def _locked(lock: Path) -> dict[tuple[str, str], str]:
    """(release, jar name) -> sha256, from brokers/jars.lock."""
    out = {}
    for line in lock.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and not line.startswith("#"):
            out[(parts[0], parts[2])] = parts[1]
    return out


def jar_name(release: str, module: str) -> str:
    return f"kafka-{module}-{release}.jar"


def missing_jars(kafka: Path) -> list[str]:
    """The jars :func:`jar_specs` needs that ``kafka`` (.tools/kafka) does not hold, as paths."""
    return [str(kafka / release / "lib" / jar_name(release, module))
            for release, _ in JAR_RELEASES for module in JAR_MODULES
            if not (kafka / release / "lib" / jar_name(release, module)).is_file()]


def jar_specs(kafka: Path, lock: Path = LOCK) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    """(releases, file, spec) of the on-disk specs inside the jars of :data:`JAR_RELEASES`, the file named
    ``.tools/kafka/RELEASE/lib/JAR!/ENTRY`` (its path from the repo root when ``kafka`` is the project's).
    Each jar is checked against brokers/jars.lock first."""
    missing = missing_jars(kafka)
    if missing:
        raise MissingSources(f"gen_kafka_layouts: no {missing[0]} (and {len(missing) - 1} more): "
                             "run bash scripts/ensure-kafka.sh (make test does)")
    pinned = _locked(lock)
    shown = Path(".tools/kafka") if kafka.resolve() == (REPO / ".tools" / "kafka").resolve() else kafka
    out = []
    for release, _ in JAR_RELEASES:
        for module in JAR_MODULES:
            jar = kafka / release / "lib" / jar_name(release, module)
            digest = hashlib.sha256(jar.read_bytes()).hexdigest()
            if pinned.get((release, jar.name)) != digest:
                pin = pinned.get((release, jar.name), "nothing")
                raise SystemExit(f"gen_kafka_layouts: {jar} has sha256 {digest}, brokers/jars.lock pins "
                                 f"{pin}: run bash scripts/ensure-kafka.sh")
            with zipfile.ZipFile(jar) as archive:
                for entry in sorted(n for n in archive.namelist() if n.endswith(".json")):
                    spec = parse(archive.read(entry).decode("utf-8"))
                    if spec.get("type") in ("request", "response", "header"):
                        continue
                    if module == "clients" and spec["name"] not in CLIENTS_ON_DISK:
                        continue
                    out.append(((release,), f"{shown / release / 'lib' / jar.name}!/{entry}", spec))
    return out


def specs(shared: Path, kafka: Path = REPO / ".tools" / "kafka") -> list[tuple[tuple[str, ...], str, dict]]:
    """(releases, file, spec) of every JSON spec: ../shared's (:func:`spec_files`, oldest release first),
    then the jars' (:func:`jar_specs`)."""
    return [*((releases, rel, load(path)) for releases, rel, path in spec_files(shared)), *jar_specs(kafka)]


def _default(f: dict[str, Any], t: str) -> str | None:
    """Python source of a field's typed default, or None where the spec gives none (FieldSpec)."""
    if "default" not in f or f["default"] is None:  # JSON null: no default (the empty struct etc.)
        return None
    d = f["default"]
    if d == "null":
        return "None"
    if t in _INTS:
        return repr(int(str(d).strip(), 0))
    if t == "bool":
        return repr(d if isinstance(d, bool) else str(d).strip() == "true")
    if t == "float64":
        return repr(float(d))
    if t == "string":
        return repr(str(d))
    return None  # uuid / bytes / arrays / structs: only "null" is meaningful


def _type_src(f: dict[str, Any], common: dict[str, list[dict[str, Any]]], indent: int) -> str:
    t = f["type"]
    element = t[2:] if t.startswith("[]") else t
    if element in _PRIMITIVES:
        inner = repr(element)
    else:
        fields = f.get("fields") if "fields" in f else common[element]
        inner = f"_s({element!r}, {_fields_src(fields, common, indent + 4)})"
    return f"_a({inner})" if t.startswith("[]") else inner


def _fields_src(fields: list[dict[str, Any]], common: dict[str, list[dict[str, Any]]], indent: int) -> str:
    if not fields:
        return "()"
    pad = " " * indent
    lines = ["("]
    for f in fields:
        versions = f.get("versions") or f.get("taggedVersions")
        args = [repr(snake(f["name"])), _type_src(f, common, indent + 4), repr(versions)]
        if f.get("nullableVersions"):
            args.append(f"nullable={f['nullableVersions']!r}")
        if f.get("taggedVersions"):
            args.append(f"tagged={f['taggedVersions']!r}")
            args.append(f"tag={int(f['tag'])}")
        element = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        default = _default(f, "array" if f["type"].startswith("[]") else element)
        if default is not None:
            args.append(f"default={default}")
        lines.append(f"{pad}    _f({', '.join(args)}),")
    lines.append(f"{pad})")
    return "\n".join(lines)


def layout_src(spec: dict[str, Any]) -> str:
    """The Python expression of one spec's layout (without its sources)."""
    common = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
    api_key = spec.get("apiKey")
    return (
        f"_m({spec['name']!r}, {spec.get('type', 'data')!r}, {api_key!r}, {spec['validVersions']!r}, "
        f"{spec.get('flexibleVersions', 'none')!r}, {_fields_src(spec['fields'], common, 8)})"
    )


HEADER = '''\
"""GENERATED by scripts/gen_kafka_layouts.py from Kafka's JSON message definitions: do not edit.

Every distinct layout of every message spec in ../shared/kafka-schemas and ../shared/kafka-schemas-4.2 and
in the jars of Kafka 4.3.1 and 4.4.0 the tests install (files named ``.tools/kafka/V/lib/JAR!/ENTRY``),
oldest first, with the releases and files it was read from (the JSON files are not in this repo).
Field names are the specs' names in snake_case; versions, nullable and tagged versions, tags and
defaults as in the specs (K: generator/src/main/java/org/apache/kafka/message/FieldSpec.java).
Regenerate with ``python scripts/gen_kafka_layouts.py``; tests/formats/test_kafka_layouts.py checks it.
"""

# ruff: noqa: E501

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logdoctor.formats.internal.protocol import (
    _NO_DEFAULT,
    NONE,
    ArrayOf,
    Field,
    Message,
    StructType,
    Versions,
)


@dataclass(frozen=True, slots=True)
class Layout:
    """One layout of a message spec: ``kind`` is the spec's ``type`` (metadata, coordinator-key,
    coordinator-value, data), ``api_key`` its apiKey (None in 4.0's coordinator specs, whose record
    type is the key's version), ``releases`` the Kafka releases whose file has this layout and
    ``files`` those files (relative to ../shared; ``.tools/kafka/V/lib/JAR!/ENTRY`` for a spec inside a
    release's jar)."""

    message: Message
    kind: str
    api_key: int | None
    releases: tuple[str, ...]
    files: tuple[str, ...]


def _v(text: str | None) -> Versions:
    return Versions.parse(text) if text else NONE


def _f(name: str, type_: Any, versions: str, *, nullable: str | None = None, tagged: str | None = None,
       tag: int | None = None, default: Any = _NO_DEFAULT) -> Field:
    return Field(name, type_, _v(versions), _v(nullable), _v(tagged), tag, default)


def _a(element: Any) -> ArrayOf:
    return ArrayOf(element)


def _s(name: str, fields: tuple[Field, ...]) -> StructType:
    return StructType(name, fields)


def _m(name: str, kind: str, api_key: int | None, valid: str, flexible: str,
       fields: tuple[Field, ...]) -> tuple[Message, str, int | None]:
    return Message(name, _v(valid), _v(flexible), fields, api_key), kind, api_key


def _l(built: tuple[Message, str, int | None], releases: tuple[str, ...], files: tuple[str, ...]) -> Layout:
    return Layout(built[0], built[1], built[2], releases, files)


'''


def generate(shared: Path, kafka: Path = REPO / ".tools" / "kafka") -> str:
    by_name: dict[str, list[tuple[str, list[str], list[str]]]] = {}  # name -> [(src, releases, files)]
    for file_releases, rel, spec in specs(shared, kafka):
        src = layout_src(spec)
        entries = by_name.setdefault(spec["name"], [])
        for existing_src, releases, files in entries:
            if existing_src == src:
                releases.extend(r for r in file_releases if r not in releases)
                files.append(rel)
                break
        else:
            entries.append((src, list(file_releases), [rel]))
    out = [HEADER]
    out.append("#: release label -> where its JSON files come from\nSOURCES: dict[str, str] = {\n")
    for release, folder, _skip, provenance in ROOTS:
        out.append(f"    {release!r}: {f'{provenance}, ../shared/{folder}'!r},\n")
    for release, provenance in JAR_RELEASES:
        where = f"{provenance}, .tools/kafka/{release}/lib/kafka-*-{release}.jar"
        out.append(f"    {release!r}: {where!r},\n")
    out.append("}\n\n#: message name -> its layouts, oldest first\n")
    out.append("LAYOUTS: dict[str, tuple[Layout, ...]] = {\n")
    for name in sorted(by_name):
        out.append(f"    {name!r}: (\n")
        for src, releases, files in by_name[name]:
            out.append(f"        _l({src}, {tuple(releases)!r}, {tuple(files)!r}),\n")
        out.append("    ),\n")
    out.append("}\n")
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--kafka", type=Path, default=REPO / ".tools" / "kafka",
                        help="the installed Kafka releases (scripts/ensure-kafka.sh), VERSION/lib/*.jar")
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed module is stale")
    args = parser.parse_args(argv)
    try:
        text = generate(args.shared, args.kafka)
    except MissingSources as e:
        print(e, file=sys.stderr)
        return 2
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"gen_kafka_layouts: {OUT} is not what the JSON files give; regenerate it", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"gen_kafka_layouts: wrote {OUT} ({text.count('_l(_m(')} layouts of {text.count(': (')} messages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

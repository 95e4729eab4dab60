"""The typed records set of ../shared/typed (a log dir with ``_schemas`` and typed topics, and
facts/records.jsonl: every record as independent decoders decoded it): where it is, the registry its
``_schemas`` facts hold, each record's raw key and value read by the project's batch reader, and the facts.

Outside the workspace (no ../shared/typed) the tests that need it skip with a ``realworld:`` reason, which CI
turns into a failure (tests/conftest.py).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import realworld
import typed_facts
from logdoctor.formats.records import iter_batches
from logdoctor.formats.registry.store import RegisteredSchema, SchemaReference, SchemaRegistry

REPO_ROOT = Path(__file__).resolve().parents[2]
TYPED = realworld.TYPED
SKIP_REASON = realworld.TYPED_SKIP_REASON


def require() -> Path:
    return realworld.require_typed()


def facts() -> tuple[dict, ...]:
    """Every line of facts/records.jsonl (tests/typed_facts.py)."""
    return typed_facts.records()


def topic_facts(topic: str) -> list[dict]:
    return [r for r in facts() if r["topic"] == topic]


@cache
def registry() -> SchemaRegistry:
    """The schemas of the ``_schemas`` facts by hand (the last SCHEMA value of each subject and version; ids
    with every subject-version that registered them). Status is not needed by the decoders."""
    reg = SchemaRegistry()
    for r in topic_facts("_schemas"):
        key, value = r["key_decoded"], r["value_decoded"]
        if key.get("keytype") != "SCHEMA" or not value:
            continue
        refs = tuple(
            SchemaReference(x["name"], x["subject"], x["version"]) for x in value.get("references", [])
        )
        sid = value["id"]
        known = reg.schemas.get(sid)
        versions = ((value["subject"], value["version"]),)
        if known is not None:
            versions = tuple(dict.fromkeys((*known.versions, *versions)))
        reg.schemas[sid] = RegisteredSchema(
            id=sid,
            schema_type=value.get("schemaType", "AVRO"),
            schema=value["schema"],
            references=refs,
            subject=known.subject if known else value["subject"],
            version=known.version if known else value["version"],
            versions=versions,
        )
    return reg


@cache
def raw_records(topic: str) -> dict[tuple[int, int], tuple[bytes | None, bytes | None]]:
    """(partition, offset) -> (key, value) of every data record of ``topic``, read by the project's reader."""
    out: dict[tuple[int, int], tuple[bytes | None, bytes | None]] = {}
    logs = require() / "kafka-logs"
    for folder in sorted(logs.glob(f"{topic}-*")):
        partition = int(folder.name.rsplit("-", 1)[1])
        for segment in sorted(folder.glob("*.log")):
            for batch in iter_batches(memoryview(segment.read_bytes()), source=str(segment)):
                if batch.is_control:
                    continue
                for r in batch.records():
                    key = None if r.key is None else bytes(r.key)
                    value = None if r.value is None else bytes(r.value)
                    out[(partition, r.offset)] = (key, value)
    return out


def unframe(value: bytes) -> tuple[int, bytes]:
    """Confluent's prefix frame taken off: (schema id, payload)."""
    assert value[0] == 0, "not a prefix-framed value"
    return int.from_bytes(value[1:5], "big"), value[5:]


def message_indexes(payload: bytes) -> tuple[list[int], bytes]:
    """Protobuf's message-index array (zig-zag varints: count, then indexes; ``00`` alone = ``[0]``) taken
    off the payload: (indexes, the protobuf bytes)."""
    pos = 0

    def zigzag() -> int:
        nonlocal pos
        result = shift = 0
        while True:
            byte = payload[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return (result >> 1) ^ -(result & 1)

    count = zigzag()
    indexes = [zigzag() for _ in range(count)] if count else [0]
    return indexes, payload[pos:]


def canonical(value: object) -> str:
    """The README's canonical JSON of one value (keys sorted, no spaces, non-ASCII as is)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

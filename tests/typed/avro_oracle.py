"""The typed developers' set (../shared/typed) for the Avro tests: its registry as facts/records.jsonl gives
it, its records' raw bytes (read with the project's batch reader), and the canonical JSON of the set's
README ("Canonical JSON") computed from Arrow values, driven by the writer schema's JSON text (not by the
decoder's own type tree)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import realworld
import typed_facts
from logdoctor.formats.records import iter_batches
from logdoctor.formats.registry.store import (
    HARD_DELETED,
    LIVE,
    SOFT_DELETED,
    RegisteredSchema,
    SchemaReference,
    SchemaRegistry,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
TYPED = realworld.TYPED
SKIP_REASON = realworld.TYPED_SKIP_REASON
_STATUS = {"live": LIVE, "soft_deleted": SOFT_DELETED, "hard_deleted": HARD_DELETED}


def require() -> Path:
    return realworld.require_typed()


def facts() -> tuple[dict, ...]:
    """Every line of facts/records.jsonl (tests/typed_facts.py)."""
    return typed_facts.records()


@cache
def registry() -> SchemaRegistry:
    """Every schema id of ``_schemas`` (its first SCHEMA record's value in facts/records.jsonl) with the
    status facts/counts.json gives it."""
    counts = json.loads((require() / "facts" / "counts.json").read_text())
    status = {int(k): v["status"] for k, v in counts["registry"]["schemas"].items()}
    reg = SchemaRegistry()
    for r in facts():
        v = r["value_decoded"]
        if r["topic"] != "_schemas" or not isinstance(v, dict) or "schema" not in v:
            continue
        refs = tuple(SchemaReference(x["name"], x["subject"], x["version"]) for x in v.get("references", ()))
        if v["id"] not in reg.schemas:
            reg.schemas[v["id"]] = RegisteredSchema(
                v["id"],
                v.get("schemaType", "AVRO"),
                v["schema"],
                refs,
                v["subject"],
                v["version"],
                ((v["subject"], v["version"]),),
                _STATUS.get(status.get(v["id"], "live"), LIVE),
            )
    return reg


def records(topic: str) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) of every data record of ``topic``, in partition and offset order."""
    for d in sorted(
        (require() / "kafka-logs").glob(f"{topic}-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])
    ):
        if d.name.rsplit("-", 1)[0] != topic:
            continue
        partition = int(d.name.rsplit("-", 1)[1])
        for segment in sorted(d.glob("*.log")):
            for batch in iter_batches(memoryview(segment.read_bytes())):
                if batch.is_control:
                    continue
                for r in batch.records():
                    key = None if r.key is None else bytes(r.key)
                    value = None if r.value is None else bytes(r.value)
                    yield partition, r.offset, key, value


def framed(data: bytes | None) -> tuple[int, bytes] | None:
    """(schema id, payload) of Confluent's framing (byte 0, 4-byte big-endian id), else None."""
    if data is None or len(data) < 5 or data[0] != 0:
        return None
    return int.from_bytes(data[1:5], "big"), data[5:]


# -- canonical JSON of an Arrow value, by the Avro writer schema -----------------------------------------


def canonical(schema: Any, value: Any, named: dict[str, Any] | None = None, namespace: str = "") -> Any:
    """The README's canonical JSON data of ``value`` (from ``to_pylist()`` of the decoder's array) under
    the Avro schema JSON ``schema`` (named types registered in ``named`` as they are met)."""
    if named is None:
        named = {}
        _register(schema, named, "")
    if value is None:
        return None
    if isinstance(schema, list):
        non_null = [b for b in schema if b != "null"]
        if len(schema) == 2 and len(non_null) == 1:
            return canonical(non_null[0], value, named, namespace)
        (branch_name, branch_value), *rest = [(k, v) for k, v in value.items() if v is not None]
        assert not rest, value
        for b in non_null:
            if _branch_name(b, named, namespace) == branch_name:
                return canonical(b, branch_value, named, namespace)
        raise AssertionError(f"no branch {branch_name} in {schema}")
    if isinstance(schema, str):
        if schema in ("bytes",):
            return value.hex()
        if schema in ("null", "boolean", "int", "long", "float", "double", "string"):
            return value
        return canonical(named[_full(schema, namespace)], value, named, namespace)
    t = schema["type"]
    if isinstance(t, (dict, list)):
        return canonical(t, value, named, namespace)
    logical = schema.get("logicalType")
    if t in ("record", "enum", "fixed"):
        namespace = _full(schema["name"], schema.get("namespace", namespace)).rpartition(".")[0]
    if t == "record":
        return {f["name"]: canonical(f["type"], value[f["name"]], named, namespace) for f in schema["fields"]}
    if t == "array":
        return [canonical(schema["items"], v, named, namespace) for v in value]
    if t == "map":
        return {k: canonical(schema["values"], v, named, namespace) for k, v in value}
    if logical == "decimal" and t in ("bytes", "fixed"):
        assert isinstance(value, decimal.Decimal)
        return f"{value:f}"
    if logical in ("timestamp-millis",) and t == "long":
        assert value.tzinfo is not None
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if logical == "date" and t == "int":
        return value.isoformat()
    if t in ("bytes", "fixed"):
        return value.hex()
    return value  # enum symbols, uuid strings, ints, strings...


def _register(schema: Any, named: dict[str, Any], namespace: str) -> None:
    """Every named type ``schema`` defines, by full name."""
    if isinstance(schema, list):
        for b in schema:
            _register(b, named, namespace)
    if not isinstance(schema, dict):
        return
    t = schema["type"]
    if t in ("record", "enum", "fixed"):
        full = _full(schema["name"], schema.get("namespace", namespace))
        named[full] = schema
        namespace = full.rpartition(".")[0]
    for f in schema.get("fields", ()):
        _register(f["type"], named, namespace)
    for key in ("items", "values"):
        if key in schema:
            _register(schema[key], named, namespace)
    if isinstance(t, (dict, list)):
        _register(t, named, namespace)


def _full(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _branch_name(branch: Any, named: dict[str, Any], namespace: str) -> str:
    if isinstance(branch, str):
        return branch.rsplit(".", 1)[-1]
    t = branch["type"]
    if t in ("record", "enum", "fixed"):
        return branch["name"].rsplit(".", 1)[-1]
    return t if isinstance(t, str) else _branch_name(t, named, namespace)

"""../shared/typed's facts as the typed tables' oracle: its records (facts/records.jsonl, decoded by the
Apache ``avro`` package, protoc-compiled classes, json + jsonschema: none of them the project's decoders), its
counts, and typed-table rows turned into the README's canonical JSON to compare with them.

Canonical JSON (the README's "Canonical JSON"): decimals as strings with the schema's scale, bytes as
lowercase hex, timestamps ``YYYY-MM-DDTHH:MM:SS.mmmZ``, dates ``YYYY-MM-DD``, times ``HH:MM:SS.mmm``, maps as
objects with string keys, Protobuf's unset oneof members left out, uint64 as integers.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

import realworld

#: the oneof members of the Protobuf messages of the typed set (payments-value): only the set one appears
ONEOF_MEMBERS = frozenset({"card", "iban", "wallet"})


def logs() -> Path:
    return realworld.require_typed() / "kafka-logs"


@cache
def records() -> tuple[dict[str, Any], ...]:
    with open(realworld.require_typed() / "facts" / "records.jsonl", encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f)


@cache
def counts() -> dict[str, Any]:
    return json.loads((realworld.require_typed() / "facts" / "counts.json").read_text())


def data_records(topic: str | None = None) -> list[dict[str, Any]]:
    """The facts of the data topics' records (not ``_schemas``), of ``topic`` when given."""
    return [r for r in records() if r["topic"] != "_schemas" and (topic is None or r["topic"] == topic)]


def topics() -> list[str]:
    return sorted({r["topic"] for r in data_records()})


def _iso_ms(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _is_bytes(t: pa.DataType) -> bool:
    """Binary of any layout (a Delta table reads back as binary_view)."""
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)


def canonical(value: Any, t: pa.DataType) -> Any:
    """An Arrow value (``to_pylist``'s Python value) of type ``t`` as canonical JSON."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        out = {}
        for f in t:
            v = value.get(f.name)
            if f.name in ONEOF_MEMBERS and v is None:
                continue
            out[f.name] = canonical(v, f.type)
        return out
    if pa.types.is_map(t):
        return {str(k): canonical(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return [canonical(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t):
        return _iso_ms(value)
    if pa.types.is_date(t):
        return value.isoformat()
    if pa.types.is_time(t):
        return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if _is_bytes(t):
        return value.hex()
    if pa.types.is_decimal(t):
        assert isinstance(value, decimal.Decimal)
        return int(value) if t.scale == 0 and t.precision == 20 else f"{value:.{t.scale}f}"
    return value


def row_value(row: dict[str, Any], schema: pa.Schema, fields: list[str] | None) -> Any:
    """The canonical value of a typed-table row: its value columns (those of ``fields``, the writer's,
    when given: the table's other columns, of other writers, must be null), or its ``value`` column."""
    names = [f.name for f in schema if f.name != "kafka"]
    if names == ["value"]:
        return canonical(row["value"], schema.field("value").type)
    if fields is None:
        fields = names
    others = [n for n in names if n not in fields and row[n] is not None]
    assert not others, f"columns of other writers set: {others}"
    return {n: canonical(row[n], schema.field(n).type) for n in fields}


def key_value(row: dict[str, Any], schema: pa.Schema) -> Any:
    """The canonical ``kafka.key``: a decoded key, or the raw key's UTF-8 text (facts give plain keys so)."""
    t = schema.field("kafka").type.field("key").type
    key = row["kafka"]["key"]
    if _is_bytes(t):
        return None if key is None else key.decode("utf-8")
    return canonical(key, t)


def _cdc_value(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return format(value, "f")  # the column's scale: Arrow's decimal keeps it
    if isinstance(value, dt.datetime):
        return _iso_ms(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _cdc_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cdc_value(v) for v in value]
    return value


def cdc_canonical(table: pa.Table) -> bytes:
    """A CDC table's rows (``after``'s columns, not the provenance column ``kafka``), sorted by primary key
    ``id``, as the README's canonical JSON lines ("Final table")."""
    columns = [n for n in table.column_names if n != "kafka"]
    rows = sorted(table.select(columns).to_pylist(), key=lambda r: r["id"])
    dumps = json.dumps
    lines = [dumps(_cdc_value(r), sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in rows]
    return "".join(line + "\n" for line in lines).encode()


def cdc_final(topic: str) -> tuple[bytes, str]:
    """facts/cdc's final table of ``topic`` (its bytes) and its SHA-256."""
    facts = realworld.require_typed() / "facts" / "cdc"
    sha = (facts / f"{topic}.final.sha256").read_text().split()[0]
    return (facts / f"{topic}.final.jsonl").read_bytes(), sha

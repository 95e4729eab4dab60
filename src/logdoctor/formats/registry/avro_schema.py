"""An Avro writer schema of the registry, parsed with its references, as a tree of :class:`Node` with the
Arrow type of each node (the type mapping of docs/typed-tables.md).

References are resolved as Confluent's ``AbstractSchemaProvider.resolveReferences`` does
(github:confluentinc/schema-registry, client/src/main/java/io/confluent/kafka/schemaregistry/
AbstractSchemaProvider.java): depth first, a reference's own references before it, into one ordered map
reference name -> schema text; ``AvroSchema``'s constructor (client/.../avro/AvroSchema.java) then parses
every text of that map with one ``Schema.Parser``, in the map's order, and the schema itself last, so the
schema may use every named type the referenced texts define. Here fastavro's ``parse_schema`` plays the
parser, one ``named_schemas`` dict the parser's names. ``AvroSchema.getParser`` validates defaults only
for a schema being registered, never for one read back: a registered schema with a bad default parses.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro
import pyarrow as pa

from logdoctor.formats.registry.arrow_union import decimal_type
from logdoctor.formats.registry.results import SchemaError
from logdoctor.formats.registry.store import RegisteredSchema, SchemaReference, SchemaRegistry

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_PRIMITIVE_ARROW = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
#: logical type -> (underlying Avro types it applies to, Arrow type); decimal and uuid on fixed aside
_LOGICAL_ARROW = {
    "timestamp-millis": (("long",), pa.timestamp("us", tz="UTC")),
    "timestamp-micros": (("long",), pa.timestamp("us", tz="UTC")),
    "timestamp-nanos": (("long",), pa.timestamp("ns", tz="UTC")),
    "local-timestamp-millis": (("long",), pa.timestamp("us")),
    "local-timestamp-micros": (("long",), pa.timestamp("us")),
    "local-timestamp-nanos": (("long",), pa.timestamp("ns")),
    "date": (("int",), pa.date32()),
    "time-millis": (("int",), pa.time32("ms")),
    "time-micros": (("long",), pa.time64("us")),
    "uuid": (("string", "fixed"), pa.string()),
}
#: the Avro properties Kafka Connect's AvroData writes, kept as Arrow field metadata
CONNECT_PROPERTIES = ("connect.name", "connect.version", "connect.parameters")


@dataclass(eq=False, slots=True)
class Node:
    """One Avro type of the writer schema: ``kind`` is the Avro type (``record``, ``union``, ``int``...) or
    ``json`` where a record recurses into itself (``target`` is that record's node; the value is held as a
    JSON string). ``logical``: a logical type that applies (``decimal``, ``timestamp-millis``...)."""

    kind: str
    arrow: pa.DataType
    metadata: dict[bytes, bytes] = field(default_factory=dict)
    name: str | None = None  # a named type's full name
    logical: str | None = None
    precision: int = 0
    scale: int = 0
    size: int = 0  # fixed
    symbols: tuple[str, ...] = ()  # enum
    items: Node | None = None  # array items, map values
    branches: tuple[Node, ...] = ()  # union
    fields: tuple[tuple[str, Node], ...] = ()  # record
    target: Node | None = None  # json: the record recursed into
    nullable_branch: int = -1  # union [null, T]: the index of T; -1 for any other union
    aliases: tuple[str, ...] = ()  # a named type's aliases (full names)
    #: record: per field, (has a default, the default's JSON value) and the field's aliases
    defaults: tuple[tuple[bool, Any], ...] = ()
    field_aliases: tuple[tuple[str, ...], ...] = ()
    enum_default: str | None = None  # enum: the symbol a reader uses for a writer's unknown one

    @property
    def min_size(self) -> int:
        """The fewest bytes a value of this type takes (0 for null, an empty record...)."""
        if self.kind == "fixed":
            return self.size
        if self.kind == "record":
            return sum(f.min_size for _, f in self.fields)
        return {"float": 4, "double": 8, "null": 0}.get(self.kind, 1)


def resolved_references(registry: SchemaRegistry, schema: RegisteredSchema) -> dict[str, str]:
    """Reference name -> schema text of every schema ``schema`` references, directly or not, in the order
    ``AbstractSchemaProvider.resolveReferences`` puts them (a reference's own references first)."""
    out: dict[str, str] = {}
    _resolve(registry, schema.references, out, (schema.id,), schema.id)
    return out


def _resolve(
    registry: SchemaRegistry,
    references: tuple[SchemaReference, ...],
    out: dict[str, str],
    chain: tuple[int, ...],
    top: int,
) -> None:
    for ref in references:
        found = registry.subject_version(ref.subject, ref.version)
        if found is None:
            raise SchemaError(
                f"schema id {top}: no schema for reference {ref.name!r} (subject {ref.subject!r} "
                f"version {ref.version})"
            )
        if found.id in chain:
            raise SchemaError(f"schema id {top}: references form a cycle through schema id {found.id}")
        _resolve(registry, found.references, out, (*chain, found.id), top)
        out[ref.name] = found.schema


def parse(registry: SchemaRegistry, schema: RegisteredSchema) -> tuple[Any, dict[str, Any]]:
    """The writer schema parsed by fastavro after its references: (parsed schema, named types by full
    name). Raises :class:`SchemaError` when a text does not parse."""
    named: dict[str, Any] = {}
    try:
        for text in [*resolved_references(registry, schema).values(), schema.schema]:  # the schema last
            parsed = fastavro.parse_schema(
                json.loads(text), named, _write_hint=False, _ignore_default_error=True
            )
    except SchemaError:
        raise
    except Exception as e:  # fastavro's SchemaParseException, UnknownType, json's errors...
        raise SchemaError(f"schema id {schema.id}: {type(e).__name__}: {e}") from e
    return parsed, named


def connect_metadata(schema: Any) -> dict[bytes, bytes]:
    """``connect.name``, ``connect.version`` and ``connect.parameters`` (JSON) of a schema's properties."""
    if not isinstance(schema, Mapping):
        return {}
    return {
        key.encode(): (
            v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        ).encode()
        for key in CONNECT_PROPERTIES
        if key in schema
        for v in (schema[key],)
    }


def build(parsed: Any, named: Mapping[str, Any]) -> Node:
    """The node tree of a parsed schema (named types looked up in ``named``)."""
    return _Builder(named).node(parsed, ())


class _Builder:
    def __init__(self, named: Mapping[str, Any]) -> None:
        self.named = named

    def node(self, schema: Any, stack: tuple[tuple[str, Node], ...]) -> Node:
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return Node(schema, _PRIMITIVE_ARROW[schema])
            for name, enclosing in stack:
                if name == schema:
                    return Node("json", pa.string(), dict(enclosing.metadata), name=name, target=enclosing)
            return self.node(self.named[schema], stack)
        if isinstance(schema, list):
            return self.union(schema, stack)
        kind = schema["type"]
        if kind == "record" or kind == "error":
            return self.record(schema, stack)
        if kind == "enum":
            default = schema.get("default")
            return Node(
                "enum",
                pa.string(),
                connect_metadata(schema),
                name=schema["name"],
                symbols=tuple(schema["symbols"]),
                aliases=_aliases(schema),
                enum_default=default if isinstance(default, str) else None,
            )
        if kind in ("array", "map"):  # a map's keys are strings
            items = self.node(schema["items" if kind == "array" else "values"], stack)
            arrow = (
                pa.list_(_field("item", items))
                if kind == "array"
                else pa.map_(pa.string(), _field("value", items))
            )
            return Node(kind, arrow, connect_metadata(schema), items=items)
        if kind == "fixed":
            node = Node(
                "fixed",
                pa.binary(),
                connect_metadata(schema),
                name=schema["name"],
                size=schema["size"],
                aliases=_aliases(schema),
            )
            return self.logical(node, schema)
        if kind in PRIMITIVES:
            return self.logical(Node(kind, _PRIMITIVE_ARROW[kind], connect_metadata(schema)), schema)
        if isinstance(kind, (dict, list)) or kind in self.named:  # {"type": {...}} or {"type": "a.Name"}
            return self.node(kind, stack)
        raise SchemaError(f"unknown Avro type {kind!r}")

    def logical(self, node: Node, schema: Mapping[str, Any]) -> Node:
        """The logical type of a primitive or fixed, where the spec says it applies; else the node as is
        (an unknown or misplaced logical type is ignored, as the Avro spec says)."""
        logical = schema.get("logicalType")
        if logical == "decimal" and node.kind in ("bytes", "fixed"):
            precision, scale = schema.get("precision"), schema.get("scale", 0)
            fits = node.kind == "bytes" or (
                isinstance(precision, int) and precision <= len(str(2 ** (8 * node.size - 1) - 1)) - 1
            )
            if (
                isinstance(precision, int)
                and isinstance(scale, int)
                and 0 < precision <= 76
                and 0 <= scale <= precision
                and fits
            ):
                node.logical, node.precision, node.scale = "decimal", precision, scale
                node.arrow = decimal_type(precision, scale)
            return node
        if logical == "uuid" and node.kind == "fixed" and node.size != 16:
            return node
        if logical in _LOGICAL_ARROW and node.kind in _LOGICAL_ARROW[logical][0]:
            node.logical, node.arrow = logical, _LOGICAL_ARROW[logical][1]
        return node

    def record(self, schema: Mapping[str, Any], stack: tuple[tuple[str, Node], ...]) -> Node:
        node = Node(
            "record", pa.struct([]), connect_metadata(schema), name=schema["name"], aliases=_aliases(schema)
        )
        inner = (*stack, (schema["name"], node))
        fields = tuple((f["name"], self.node(f["type"], inner)) for f in schema["fields"])
        node.fields = fields
        node.defaults = tuple(("default" in f, f.get("default")) for f in schema["fields"])
        node.field_aliases = tuple(tuple(f.get("aliases") or ()) for f in schema["fields"])
        node.arrow = pa.struct([_field(name, f) for name, f in fields])
        return node

    def union(self, schema: list, stack: tuple[tuple[str, Node], ...]) -> Node:
        branches = tuple(self.node(b, stack) for b in schema)
        kinds = [b.kind for b in branches]
        if len(branches) == 2 and kinds.count("null") == 1:
            at = 1 - kinds.index("null")
            t = branches[at]
            return Node("union", t.arrow, dict(t.metadata), branches=branches, nullable_branch=at)
        names = branch_names(branches)
        fields = [_field(name, b) for name, b in zip(names, branches, strict=True) if b.kind != "null"]
        return Node("union", pa.struct(fields), {}, branches=branches)


def _field(name: str, node: Node) -> pa.Field:
    """The Arrow field of a node named ``name``, its Connect properties as the field's metadata."""
    return pa.field(name, node.arrow, metadata=node.metadata or None)


def _aliases(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """A named type's aliases as full names: a bare alias takes the type's namespace (the Avro spec)."""
    name = schema["name"]
    namespace = name.rsplit(".", 1)[0] if "." in name else ""
    return tuple(
        a if "." in a or not namespace else f"{namespace}.{a}"
        for a in schema.get("aliases") or ()
        if isinstance(a, str)
    )


def branch_names(branches: tuple[Node, ...]) -> list[str]:
    """The field name of each union branch: the primitive's name, ``array``, ``map``, a named type's short
    name (its full name where two branches share a short name)."""
    short = [b.name.rsplit(".", 1)[-1] if b.name else b.kind for b in branches]
    return [
        s if short.count(s) == 1 or b.name is None else b.name for s, b in zip(short, branches, strict=True)
    ]

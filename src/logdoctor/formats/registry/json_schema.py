"""JSON Schema payloads of one registered schema decoded into Arrow (type mapping of docs/typed-tables.md).

A payload is UTF-8 JSON (:mod:`.json_text`), validated against the schema by ``jsonschema`` with the draft
the schema's ``$schema`` names (draft-07 when it names none, as Confluent's ``JsonSchema.rawSchema`` in
confluentinc/schema-registry json-schema-provider), its ``$ref`` to other registered schemas resolved by
``referencing`` from the schema's references (each under its reference name, also as ``./name``, as
``JsonSchema.loadLatestDraft`` maps them). Confluent's ``AbstractKafkaJsonSchemaDeserializer`` validates only
with ``json.fail.invalid.schema=true``; here every value is validated, and one that fails is
``decode_error_schema_mismatch``, like invalid JSON (``decode_error_truncated`` when the text ends early).

The Arrow type is read off the schema: an object with ``properties`` is a struct (properties in schema
order; properties the schema does not name are dropped); an object with only ``additionalProperties`` a map
of strings; ``integer`` int64; ``number`` float64; ``string`` (and an ``enum`` of strings) string;
``boolean`` bool; an array with one ``items`` schema a list; ``$ref`` / ``definitions`` / ``$defs``
resolved; ``"type": [T, "null"]`` and ``oneOf`` / ``anyOf`` of ``{"type": "null"}`` and one schema a nullable
T; anything else (mixed ``oneOf`` / ``anyOf`` / ``allOf``, no type, a recursion) the value as JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import SchemaError as JsonSchemaSchemaError

from logdoctor.formats.registry.json_text import NotJson, loads
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH
from logdoctor.formats.registry.results import Decoded, SchemaError
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

#: a JSON value -> the Python value of the Arrow type (raises _Mismatch)
Convert = Callable[[Any], Any]


class _Mismatch(ValueError):
    """A value the Arrow type cannot hold."""


class JsonSchemaDecoder:
    """The decoder of one registered JSON Schema."""

    def __init__(self, registry: SchemaRegistry, schema: RegisteredSchema):
        self._registry = registry
        self._schema = schema
        self.schema_id: int | None = schema.id
        self.field_metadata: dict[bytes, bytes] = {}
        root = _parse(schema.schema, schema.id)
        validator_class = validators.validator_for(root, default=Draft7Validator)
        try:
            validator_class.check_schema(root)
        except JsonSchemaSchemaError as e:
            raise SchemaError(f"schema id {schema.id}: not a valid JSON Schema: {e.message}") from None
        specification = referencing.jsonschema.specification_with(
            validator_class.META_SCHEMA.get("$schema", ""), default=referencing.jsonschema.DRAFT7
        )
        resources = referencing.Registry().with_resources(
            (uri, referencing.Resource.from_contents(contents, default_specification=specification))
            for uri, contents in _referenced(registry, schema)
        )
        root_resource = referencing.Resource.from_contents(root, default_specification=specification)
        self._validator = validator_class(root, registry=resources)
        self.record_name: str | None = root.get("title") if isinstance(root, dict) else None
        try:
            self.arrow_type, self._convert = _node(root, resources.resolver_with_root(root_resource), ())
        except referencing.exceptions.Unresolvable as e:
            raise SchemaError(f"schema id {schema.id}: unresolvable $ref: {e}") from None

    def __reduce__(self):
        return (JsonSchemaDecoder, (self._registry, self._schema))

    def decode(self, payloads: Sequence[bytes | memoryview]) -> Decoded:
        """Parse, validate and convert each payload (UTF-8 JSON)."""
        values: list[Any] = []
        reasons: list[str | None] = []
        is_valid = self._validator.is_valid
        convert = self._convert
        for payload in payloads:
            try:
                value = loads(payload)
                if not is_valid(value):
                    raise _Mismatch("fails validation")
                values.append(convert(value))
                reasons.append(None)
            except NotJson as e:
                values.append(None)
                reasons.append(e.reason)
            except (_Mismatch, referencing.exceptions.Unresolvable, RecursionError):
                values.append(None)
                reasons.append(DECODE_ERROR_SCHEMA_MISMATCH)
        return Decoded(pa.array(values, self.arrow_type), reasons)


def _parse(text: str, schema_id: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SchemaError(f"schema id {schema_id}: not JSON: {e}") from None


def _referenced(registry: SchemaRegistry, schema: RegisteredSchema) -> list[tuple[str, Any]]:
    """(URI, schema) of every schema ``schema`` references, transitively: each under its reference name, and
    also as ``./name`` for a relative name."""
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    pending = list(schema.references)
    while pending:
        ref = pending.pop()
        if ref.name in seen:
            continue
        seen.add(ref.name)
        target = registry.subject_version(ref.subject, ref.version)
        if target is None:
            raise SchemaError(
                f"schema id {schema.id}: reference {ref.name!r} names subject {ref.subject!r} version "
                f"{ref.version}, which the registry does not have"
            )
        contents = _parse(target.schema, target.id)
        out.append((ref.name, contents))
        if ":" not in ref.name and not ref.name.startswith("."):
            out.append(("./" + ref.name, contents))
        pending.extend(target.references)
    return out


# -- the Arrow type of a schema and the converter of its values --------------------------------------------


def _node(schema: Any, resolver: referencing.Resolver, path: tuple[int, ...]) -> tuple[pa.DataType, Convert]:
    """The Arrow type of ``schema`` and its converter. ``path``: the ids of the schemas from the root down
    (a ``$ref`` back to one of them is a recursion: JSON text)."""
    if not isinstance(schema, dict):  # true, false
        return pa.string(), _to_json_text
    if "$ref" in schema:
        resolved = resolver.lookup(schema["$ref"])
        if id(resolved.contents) in path:
            return pa.string(), _to_json_text
        return _node(resolved.contents, resolved.resolver, (*path, id(resolved.contents)))
    path = (*path, id(schema))
    for keyword in ("oneOf", "anyOf"):
        if keyword in schema:
            branches = [b for b in schema[keyword] if not _is_null(b)]
            if len(branches) == 1 and not _has_type_keywords(schema):  # every converter passes null on
                return _node(branches[0], resolver, path)
            return pa.string(), _to_json_text
    if "allOf" in schema:
        if len(schema["allOf"]) == 1 and not _has_type_keywords(schema):
            return _node(schema["allOf"][0], resolver, path)
        return pa.string(), _to_json_text
    types = schema.get("type")
    if isinstance(types, list):
        non_null = [t for t in types if t != "null"]
        if len(non_null) != 1:
            return pa.string(), _to_json_text
        types = non_null[0]
    if types is None:
        if "properties" in schema:
            types = "object"
        elif "items" in schema:
            types = "array"
        elif "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
            types = "string"
        else:
            return pa.string(), _to_json_text
    if types == "object":
        return _object(schema, resolver, path)
    if types == "array":
        items = schema.get("items")
        if not isinstance(items, dict | bool) or "prefixItems" in schema:
            return pa.string(), _to_json_text
        item_type, convert_item = _node(items, resolver, path)
        return pa.list_(item_type), _of(list, "not an array", lambda v: [convert_item(x) for x in v])
    scalar = _SCALARS.get(types)
    if scalar is None:
        return pa.string(), _to_json_text
    return scalar


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _has_type_keywords(schema: dict) -> bool:
    return any(k in schema for k in ("type", "properties", "items", "$ref"))


def _object(
    schema: dict, resolver: referencing.Resolver, path: tuple[int, ...]
) -> tuple[pa.DataType, Convert]:
    properties = schema.get("properties")
    if not properties:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            value_type, convert_value = _node(extra, resolver, path)
            pairs = _of(dict, "not an object", lambda v: [(k, convert_value(x)) for k, x in v.items()])
            return pa.map_(pa.string(), value_type), pairs
        return pa.string(), _to_json_text
    fields = []
    converters = []
    for name, sub in properties.items():
        arrow_type, convert = _node(sub, resolver, path)
        fields.append(pa.field(name, arrow_type))
        converters.append((name, convert))

    def convert_object(value: dict) -> Any:
        return {name: convert(value.get(name)) for name, convert in converters}

    return pa.struct(fields), _of(dict, "not an object", convert_object)


def _of(kind: type, mismatch: str, convert: Convert) -> Convert:
    """``convert`` of a value of JSON type ``kind`` (an object, an array); null passes, another type is
    a mismatch."""

    def checked(value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, kind):
            raise _Mismatch(mismatch)
        return convert(value)

    return checked


def _integer(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Mismatch("a boolean is no integer")
    if isinstance(value, float):  # 1.0 is an integer to JSON Schema (draft 4 and later)
        if not value.is_integer():
            raise _Mismatch("not an integer")
        value = int(value)
    if not isinstance(value, int) or not _INT64_MIN <= value <= _INT64_MAX:
        raise _Mismatch("not an int64")
    return value


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Mismatch("not a number")
    return float(value)


def _string(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _Mismatch("not a string")
    return value


def _boolean(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _Mismatch("not a boolean")
    return value


def _to_json_text(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_SCALARS: dict[str, tuple[pa.DataType, Convert]] = {
    "integer": (pa.int64(), _integer),
    "number": (pa.float64(), _number),
    "string": (pa.string(), _string),
    "boolean": (pa.bool_(), _boolean),
}

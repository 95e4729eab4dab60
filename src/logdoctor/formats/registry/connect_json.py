"""Kafka Connect ``JsonConverter`` values with ``schemas.enable=true``: ``{"schema": S, "payload": P}``, each
value carrying its own schema (apache/kafka connect/json ``JsonConverter.java``, ``JsonSchema.java``).

:func:`envelope_schema` names a value's schema (its canonical text: the groups of values of one schema);
:class:`ConnectJsonDecoder` decodes the values of one schema into Arrow (type mapping of
docs/typed-tables.md), as ``JsonConverter.toConnectData`` reads them:

- the envelope is a JSON object with exactly the two fields ``schema`` and ``payload``;
- schema types ``int8`` / ``int16`` / ``int32`` / ``int64`` (Arrow ints of the same widths; a value out of
  the width's range does not decode: the converter would wrap it), ``float`` / ``double`` (float32 /
  float64; also by ``Schema.Type``'s names ``float32`` / ``float64``), ``boolean``, ``string``, ``bytes``
  (base64), ``array``, ``map`` (string keys: a JSON object; other keys: an array of ``[key, value]``
  pairs), ``struct`` (``fields``, each named by ``field``);
- a null (or missing) value takes the schema's ``default`` when there is one (``replace.null.with.default``,
  true by default); else it is null when ``optional``, and does not decode when required;
- logical types by schema name: ``org.apache.kafka.connect.data.Decimal`` (bytes: base64 of the
  two's-complement big-endian unscaled value, ``parameters.scale``; or a JSON number, decimal.format=NUMERIC)
  as decimal128(38, scale) (precision from the ``connect.decimal.precision`` parameter when present;
  decimal256 beyond 38), ``Date`` (int32 days) date32, ``Time`` (int32 ms of the day) time32[ms],
  ``Timestamp`` (int64 ms) timestamp[us, UTC].

A schema's ``name``, ``version`` and ``parameters`` go into its Arrow field's metadata as
``connect.name``, ``connect.version`` and ``connect.parameters`` (JSON text, keys sorted), and a scalar
field's ``default`` as ``connect.default`` (its JSON text, as the schema writes it; :func:`field_default`
reads it back as a value of the field's Arrow type); the whole value's in
:attr:`ConnectJsonDecoder.field_metadata`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from logdoctor.formats.registry.json_text import NotJson, loads
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH
from logdoctor.formats.registry.results import Decoded, SchemaError

DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"

_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_INT_TYPES = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64()}
_TIMESTAMP_US = pa.timestamp("us", tz="UTC")
_MS_PER_DAY = 86_400_000
_EXACT = Context(prec=200)  # no rounding of a decimal of up to 76 digits (the default context keeps 28)

#: a JSON value (non-null) -> the Python value of the Arrow type (raises _Mismatch)
Convert = Callable[[Any], Any]


class _Mismatch(ValueError):
    """A payload value its schema does not read."""


def envelope_schema(value: bytes | memoryview | None) -> str | None:
    """The canonical text (keys sorted, no spaces) of the schema of a ``JsonConverter`` envelope; None when
    ``value`` is not JSON, not an envelope (an object of exactly ``schema`` and ``payload``), or its schema
    is null or not an object."""
    if value is None:
        return None
    try:
        parsed = loads(value, decimals=True)
    except NotJson:
        return None
    schema = _envelope(parsed)
    return None if schema is None else canonical(schema)


def canonical(schema: Any) -> str:
    """A Connect schema as text: keys sorted, no spaces (a number with a fraction written as a float)."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_number)


def _number(value: Any) -> float:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _envelope(parsed: Any) -> dict | None:
    if isinstance(parsed, dict) and len(parsed) == 2 and "payload" in parsed:
        schema = parsed.get("schema")
        if isinstance(schema, dict):
            return schema
    return None


class ConnectJsonDecoder:
    """The decoder of the ``JsonConverter`` envelopes of one schema (``schema_text``: its JSON)."""

    def __init__(self, schema_text: str):
        self._schema_text = schema_text
        try:
            schema = json.loads(schema_text, parse_float=Decimal)
        except json.JSONDecodeError as e:
            raise SchemaError(f"Connect schema is not JSON: {e}") from None
        if not isinstance(schema, dict):
            raise SchemaError("Connect schema is not a JSON object")
        self._schema = schema
        self.schema_id: int | None = None
        self.record_name: str | None = schema.get("name") if isinstance(schema.get("name"), str) else None
        self.arrow_type, self._convert = _node(schema)
        self.field_metadata: dict[bytes, bytes] = metadata(schema)

    def __reduce__(self):
        return (ConnectJsonDecoder, (self._schema_text,))

    def decode(self, payloads: Sequence[bytes | memoryview]) -> Decoded:
        """Decode each whole value (the envelope): its payload under this decoder's schema. A value whose
        envelope carries another schema is ``decode_error_schema_mismatch``."""
        values: list[Any] = []
        reasons: list[str | None] = []
        for payload in payloads:
            try:
                parsed = loads(payload, decimals=True)
                if _envelope(parsed) != self._schema:
                    raise _Mismatch("not an envelope of this schema")
                values.append(self._convert(parsed["payload"]))
                reasons.append(None)
            except NotJson as e:
                values.append(None)
                reasons.append(e.reason)
            except (_Mismatch, RecursionError):
                values.append(None)
                reasons.append(DECODE_ERROR_SCHEMA_MISMATCH)
        return Decoded(pa.array(values, self.arrow_type), reasons)


def metadata(schema: dict) -> dict[bytes, bytes]:
    """The Arrow field metadata of a Connect schema: its ``name``, ``version`` and ``parameters``."""
    out: dict[bytes, bytes] = {}
    if isinstance(schema.get("name"), str):
        out[b"connect.name"] = schema["name"].encode()
    if schema.get("version") is not None:
        out[b"connect.version"] = str(schema["version"]).encode()
    if isinstance(schema.get("parameters"), dict):
        parameters = schema["parameters"]
        text = json.dumps(parameters, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        out[b"connect.parameters"] = text.encode()
    if schema.get("default") is not None and schema.get("type") in _SCALARS:
        out[DEFAULT_KEY] = canonical(schema["default"]).encode()
    return out


#: the field metadata key of a scalar field's schema default (:func:`metadata`)
DEFAULT_KEY = b"connect.default"
_SCALARS = frozenset(
    ("int8", "int16", "int32", "int64", "float", "float32", "double", "float64", "boolean", "string", "bytes")
)


def field_default(field: pa.Field) -> tuple[bool, Any]:
    """Whether ``field`` (a column :func:`metadata` described) has a Connect schema default, and that default
    as a value of the field's Arrow type (as ``to_pylist`` gives it). The schema is rebuilt from the Arrow
    type and the ``connect.*`` metadata, and the default read as the decoder reads a null value of it
    (``JsonConverter.convertToConnect``: a null takes the schema's default)."""
    meta = field.metadata or {}
    text = meta.get(DEFAULT_KEY)
    kind = _connect_type(field.type)
    if text is None or kind is None:
        return False, None
    schema: dict[str, Any] = {"type": kind, "optional": True}
    if b"connect.name" in meta:
        schema["name"] = meta[b"connect.name"].decode()
    if b"connect.parameters" in meta:
        schema["parameters"] = json.loads(meta[b"connect.parameters"])
    try:
        schema["default"] = loads(text, decimals=True)
        arrow_type, convert = _node(schema)
    except (NotJson, SchemaError):
        return False, None
    if arrow_type != field.type:
        return False, None
    return True, convert(None)


def _connect_type(t: pa.DataType) -> str | None:
    """The Connect schema type of a scalar Arrow type of the mapping (logical types by their physical)."""
    for kind, arrow in _INT_TYPES.items():
        if t == arrow:
            return kind
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return "int32"
    if pa.types.is_timestamp(t):
        return "int64"
    if pa.types.is_decimal(t) or pa.types.is_binary(t):
        return "bytes"
    names = {pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.string(): "string"}
    return names.get(t)


# -- the Arrow type of a schema and the converter of its values --------------------------------------------


def _node(schema: Any) -> tuple[pa.DataType, Convert]:
    """The Arrow type of a Connect schema and the converter of its values (nulls and defaults included)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("type"), str):
        raise SchemaError(f"Connect schema without a type: {schema!r}")
    arrow_type, convert = _non_null(schema)
    optional = schema.get("optional") is True
    default = None
    if schema.get("default") is not None:
        try:
            default = convert(schema["default"])
        except _Mismatch as e:
            default_text = repr(schema["default"])
            raise SchemaError(f"Connect schema default {default_text} does not fit its type: {e}") from None

    def convert_nullable(value: Any) -> Any:
        if value is None:
            if default is not None:
                return default
            if optional:
                return None
            raise _Mismatch("null for a required value")
        return convert(value)

    return arrow_type, convert_nullable


def _non_null(schema: dict) -> tuple[pa.DataType, Convert]:
    kind = schema["type"]
    name = schema.get("name")
    if name == DECIMAL and kind == "bytes":
        return _decimal(schema)
    if name == DATE and kind == "int32":
        return pa.date32(), _checked_int(32)
    if name == TIME and kind == "int32":
        return pa.time32("ms"), _time
    if name == TIMESTAMP and kind == "int64":
        return _TIMESTAMP_US, _timestamp
    if kind in _INT_TYPES:
        return _INT_TYPES[kind], _checked_int(_INT_RANGES[kind])
    # JsonSchema.java writes "float" / "double"; Schema.Type's own names "float32" / "float64" are read too
    if kind in ("float", "float32"):
        return pa.float32(), _float
    if kind in ("double", "float64"):
        return pa.float64(), _float
    if kind == "boolean":
        return pa.bool_(), _boolean
    if kind == "string":
        return pa.string(), _string
    if kind == "bytes":
        return pa.binary(), _bytes
    if kind == "array":
        if not isinstance(schema.get("items"), dict):
            raise SchemaError("Connect array schema did not specify the element type")
        item_type, convert_item = _node(schema["items"])
        return pa.list_(item_type), _array(convert_item)
    if kind == "map":
        if not isinstance(schema.get("keys"), dict) or not isinstance(schema.get("values"), dict):
            raise SchemaError("Connect map schema did not specify the key and value types")
        key_type, convert_key = _node(schema["keys"])
        value_type, convert_value = _node(schema["values"])
        string_keys = schema["keys"]["type"] == "string"
        return pa.map_(key_type, value_type), _map(convert_key, convert_value, string_keys)
    if kind == "struct":
        return _struct(schema)
    raise SchemaError(f"unknown Connect schema type {kind!r}")


def _struct(schema: dict) -> tuple[pa.DataType, Convert]:
    fields_json = schema.get("fields")
    if not isinstance(fields_json, list):
        raise SchemaError("Connect struct schema's fields are not an array")
    fields: list[pa.Field] = []
    converters: list[tuple[str, Convert]] = []
    for field in fields_json:
        name = field.get("field") if isinstance(field, dict) else None
        if not isinstance(name, str):
            raise SchemaError("Connect struct schema's field name not specified properly")
        arrow_type, convert = _node(field)
        fields.append(pa.field(name, arrow_type, metadata=metadata(field) or None))
        converters.append((name, convert))

    def convert_struct(value: Any) -> dict:
        if not isinstance(value, dict):
            raise _Mismatch("a struct is not a JSON object")
        return {name: convert(value.get(name)) for name, convert in converters}

    return pa.struct(fields), convert_struct


def _decimal(schema: dict) -> tuple[pa.DataType, Convert]:
    parameters = schema.get("parameters") or {}
    try:
        scale = int(parameters["scale"])
        precision = int(parameters.get("connect.decimal.precision", 38))
    except (KeyError, TypeError, ValueError):
        raise SchemaError(f"Connect Decimal without a usable scale: {parameters!r}") from None
    if not 0 < precision <= 76 or not 0 <= scale <= precision:  # Arrow's decimal limits
        raise SchemaError(f"Connect Decimal of precision {precision}, scale {scale}: not an Arrow decimal")
    arrow_type = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    limit = 10**precision

    def convert(value: Any) -> Decimal:
        if isinstance(value, str):  # BASE64: the unscaled value, two's complement, big-endian
            unscaled = int.from_bytes(_base64(value), "big", signed=True)
        elif isinstance(value, int | Decimal) and not isinstance(value, bool):  # NUMERIC
            try:
                scaled = Decimal(value).scaleb(scale, context=_EXACT)
            except InvalidOperation:
                raise _Mismatch("not a decimal") from None
            if scaled != scaled.to_integral_value():
                raise _Mismatch(f"{value} has more than {scale} decimals")
            unscaled = int(scaled)
        else:
            raise _Mismatch("a Decimal is neither base64 bytes nor a number")
        if abs(unscaled) >= limit:
            raise _Mismatch(f"more than {precision} digits")
        return Decimal(unscaled).scaleb(-scale, context=_EXACT)

    return arrow_type, convert


def _checked_int(bits: int) -> Convert:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Mismatch("not an integer")
        if not low <= value <= high:
            raise _Mismatch(f"out of the int{bits} range")
        return value

    return convert


_int32 = _checked_int(32)
_int64 = _checked_int(64)


def _time(value: Any) -> int:
    ms = _int32(value)
    if not 0 <= ms < _MS_PER_DAY:
        raise _Mismatch("a Time is not within a day")
    return ms


def _timestamp(value: Any) -> int:
    micros = _int64(value) * 1000
    if not -(2**63) <= micros < 2**63:
        raise _Mismatch("a Timestamp out of Arrow's range")
    return micros


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise _Mismatch("not a number")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Mismatch("not a boolean")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise _Mismatch("not a string")
    return value


def _base64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Mismatch("bytes are not a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _Mismatch("bytes are not base64") from None


def _bytes(value: Any) -> bytes:
    return _base64(value)


def _array(convert_item: Convert) -> Convert:
    def convert(value: Any) -> list:
        if not isinstance(value, list):
            raise _Mismatch("an array is not a JSON array")
        return [convert_item(v) for v in value]

    return convert


def _map(convert_key: Convert, convert_value: Convert, string_keys: bool) -> Convert:
    def convert(value: Any) -> list:
        if string_keys:
            if not isinstance(value, dict):
                raise _Mismatch("a map with string keys is not a JSON object")
            return [(convert_key(k), convert_value(v)) for k, v in value.items()]
        if not isinstance(value, list):
            raise _Mismatch("a map with non-string keys is not a JSON array of pairs")
        pairs = []
        for entry in value:
            if not isinstance(entry, list) or len(entry) != 2:
                raise _Mismatch("a map entry is not a [key, value] pair")
            key = convert_key(entry[0])
            if key is None:
                raise _Mismatch("a null map key")
            pairs.append((key, convert_value(entry[1])))
        return pairs

    return convert

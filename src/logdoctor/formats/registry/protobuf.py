"""Protobuf payloads of one registered message decoded into Arrow (type mapping of docs/typed-tables.md).

The message classes come from protoc (:mod:`.protobuf_schema`); a payload (the bytes after the frame and the
message indexes) is parsed by protobuf's own parser (the upb backend), then the batch is read column by
column: each field of every message of the batch at once, into one Arrow array per field, nested messages,
repeated fields and maps through their children's arrays.

Values: a scalar of a field with no presence (proto3) is its default when unset; a field with presence
(a message, a oneof member, an ``optional`` proto3 or a proto2 scalar) is null when unset; an enum value is
its name (a number the enum does not name: the number as text); ``google.protobuf.Timestamp`` and
``Duration`` are microseconds (sub-microsecond nanos dropped; a value out of Arrow's range: null); the
wrappers ``google.protobuf.*Value`` are nullable scalars; ``Struct`` / ``Value`` / ``ListValue`` and a
message where a recursion starts are JSON text (protobuf's JSON mapping, fields by their ``.proto`` names).
Map entries are sorted by key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from logdoctor.formats.registry.decoder import (
    DECODE_ERROR_SCHEMA_MISMATCH,
    DECODE_ERROR_TRUNCATED,
    Decoded,
)
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

_TIMESTAMP_US = pa.timestamp("us", tz="UTC")
_DURATION_US = pa.duration("us")
_UINT64 = pa.decimal128(20, 0)
_MAX_SECONDS = 9_223_372_036_000  # |seconds| below this: microseconds fit in int64

_F = FieldDescriptor
_SCALARS: dict[int, pa.DataType] = {
    _F.TYPE_INT32: pa.int32(),
    _F.TYPE_SINT32: pa.int32(),
    _F.TYPE_SFIXED32: pa.int32(),
    _F.TYPE_INT64: pa.int64(),
    _F.TYPE_SINT64: pa.int64(),
    _F.TYPE_SFIXED64: pa.int64(),
    _F.TYPE_UINT32: pa.int64(),
    _F.TYPE_FIXED32: pa.int64(),
    _F.TYPE_UINT64: _UINT64,
    _F.TYPE_FIXED64: _UINT64,
    _F.TYPE_FLOAT: pa.float32(),
    _F.TYPE_DOUBLE: pa.float64(),
    _F.TYPE_BOOL: pa.bool_(),
    _F.TYPE_STRING: pa.string(),
    _F.TYPE_BYTES: pa.binary(),
}
_WRAPPERS = {
    "google.protobuf.DoubleValue": _F.TYPE_DOUBLE,
    "google.protobuf.FloatValue": _F.TYPE_FLOAT,
    "google.protobuf.Int64Value": _F.TYPE_INT64,
    "google.protobuf.UInt64Value": _F.TYPE_UINT64,
    "google.protobuf.Int32Value": _F.TYPE_INT32,
    "google.protobuf.UInt32Value": _F.TYPE_UINT32,
    "google.protobuf.BoolValue": _F.TYPE_BOOL,
    "google.protobuf.StringValue": _F.TYPE_STRING,
    "google.protobuf.BytesValue": _F.TYPE_BYTES,
}
_JSON_MESSAGES = frozenset({"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"})

#: values (Python scalars or messages) and a null mask (True = null; None: none) -> an Arrow array
Converter = Callable[[list, "np.ndarray | None"], pa.Array]


class ProtobufDecoder:
    """The decoder of one message (``message_indexes``) of a registered Protobuf schema."""

    def __init__(self, registry: SchemaRegistry, schema: RegisteredSchema, message_indexes: tuple[int, ...]):
        self._registry = registry
        self._schema = schema
        self.message_indexes = tuple(message_indexes)
        compiled = compile_schema(registry, schema)
        descriptor = compiled.message(self.message_indexes)
        self._class = compiled.message_class(self.message_indexes)
        self.schema_id: int | None = schema.id
        self.record_name: str | None = descriptor.full_name
        self.field_metadata: dict[bytes, bytes] = {}
        self.arrow_type, self._convert = _message_converter(descriptor, (descriptor.full_name,))

    def __reduce__(self):
        return (ProtobufDecoder, (self._registry, self._schema, self.message_indexes))

    def decode(self, payloads: Sequence[bytes | memoryview]) -> Decoded:
        """Parse each payload (the bytes after the message indexes) and read the batch into Arrow."""
        parse = self._class.FromString
        messages: list[Message | None] = []
        reasons: list[str | None] = []
        failed = False
        for payload in payloads:
            try:
                messages.append(parse(payload))
                reasons.append(None)
            except DecodeError:
                messages.append(None)
                truncated = ends_early(payload)
                reasons.append(DECODE_ERROR_TRUNCATED if truncated else DECODE_ERROR_SCHEMA_MISMATCH)
                failed = True
        mask = None
        if failed:
            mask = np.fromiter((m is None for m in messages), dtype=bool, count=len(messages))
            empty = self._class()
            messages = [empty if m is None else m for m in messages]
        return Decoded(self._convert(messages, mask), reasons)


def ends_early(payload: bytes | memoryview) -> bool:
    """Whether the wire format of ``payload`` ends inside a field (a tag, a varint, a fixed-width value, a
    length-delimited value or an open group): a payload cut short. Only the top level is walked: the cut is
    at the end, where the last top-level field is."""
    data = bytes(payload)
    end = len(data)
    pos = 0
    groups = 0
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag is None:
            return pos >= end
        wire_type = tag & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
            if value is None:
                return pos >= end
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            if length is None:
                return pos >= end
            pos += length
        elif wire_type == 5:
            pos += 4
        elif wire_type == 3:
            groups += 1
        elif wire_type == 4:
            groups -= 1
        else:
            return False
    return pos > end or groups > 0


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    """(value, next position); value None when the bytes end inside it (position = len) or it is longer
    than 10 bytes (position < len)."""
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            return None, pos
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
    return None, pos - 1


# -- Arrow types and converters, built once per message ----------------------------------------------------


def _message_converter(descriptor: Descriptor, path: tuple[str, ...]) -> tuple[pa.DataType, Converter]:
    """The struct type of ``descriptor`` and the converter of a list of its messages. ``path``: the messages
    from the top down to this one (a field of a message type on the path starts a recursion)."""
    fields: list[pa.Field] = []
    columns: list[Callable[[list], pa.Array]] = []
    for field in descriptor.fields:
        arrow_type, column = _field_column(field, path)
        fields.append(pa.field(field.name, arrow_type))
        columns.append(column)
    struct_type = pa.struct(fields)

    def convert(messages: list, mask: np.ndarray | None) -> pa.Array:
        if not fields:  # a message with no fields: an empty struct per message
            nulls = [False] * len(messages) if mask is None else mask.tolist()
            return pa.array([None if null else {} for null in nulls], struct_type)
        arrays = [column(messages) for column in columns]
        return pa.StructArray.from_arrays(
            arrays, fields=fields, mask=None if mask is None else pa.array(mask, pa.bool_())
        )

    return struct_type, convert


def _field_column(
    field: FieldDescriptor, path: tuple[str, ...]
) -> tuple[pa.DataType, Callable[[list], pa.Array]]:
    """The Arrow type of ``field`` and the function reading its column out of a list of messages."""
    get = attrgetter(field.name)
    if _is_map(field):
        return _map_column(field, path, get)
    value_type, convert = _value_converter(field, path)
    if field.is_repeated:
        list_type = pa.list_(value_type)

        def repeated(messages: list) -> pa.Array:
            containers = list(map(get, messages))
            lengths = np.fromiter(map(len, containers), dtype=np.int32, count=len(containers))
            offsets = np.zeros(len(containers) + 1, dtype=np.int32)
            np.cumsum(lengths, out=offsets[1:])
            values = [v for c in containers for v in c]
            return pa.ListArray.from_arrays(pa.array(offsets), convert(values, None), type=list_type)

        return list_type, repeated
    if field.has_presence:
        name = field.name

        def present(messages: list) -> pa.Array:
            mask = np.fromiter((not m.HasField(name) for m in messages), dtype=bool, count=len(messages))
            return convert(list(map(get, messages)), mask if mask.any() else None)

        return value_type, present

    def plain(messages: list) -> pa.Array:
        return convert(list(map(get, messages)), None)

    return value_type, plain


def _is_map(field: FieldDescriptor) -> bool:
    return (
        field.is_repeated
        and field.type == _F.TYPE_MESSAGE
        and field.message_type.GetOptions().map_entry
    )


def _map_column(field: FieldDescriptor, path: tuple[str, ...], get) -> tuple[pa.DataType, Callable]:
    entry = field.message_type
    key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
    key_type, key_convert = _value_converter(key_field, path)
    value_type, value_convert = _value_converter(value_field, path)
    map_type = pa.map_(key_type, value_type)

    def column(messages: list) -> pa.Array:
        offsets = np.zeros(len(messages) + 1, dtype=np.int32)
        keys: list = []
        values: list = []
        for i, m in enumerate(messages):
            container = get(m)
            ordered = sorted(container)
            keys.extend(ordered)
            values.extend(container[k] for k in ordered)
            offsets[i + 1] = len(keys)
        return pa.MapArray.from_arrays(
            pa.array(offsets), key_convert(keys, None), value_convert(values, None), type=map_type
        )

    return map_type, column


def _value_converter(field: FieldDescriptor, path: tuple[str, ...]) -> tuple[pa.DataType, Converter]:
    """The Arrow type of one value of ``field`` (an element when repeated) and its converter."""
    if field.type == _F.TYPE_ENUM:
        return pa.string(), _enum_converter(field)
    if field.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        message = field.message_type
        name = message.full_name
        if name == "google.protobuf.Timestamp":
            return _TIMESTAMP_US, _micros_converter(_TIMESTAMP_US)
        if name == "google.protobuf.Duration":
            return _DURATION_US, _micros_converter(_DURATION_US)
        if name in _WRAPPERS:
            scalar = _SCALARS[_WRAPPERS[name]]
            return scalar, _wrapper_converter(scalar)
        if name in _JSON_MESSAGES or name in path:
            return pa.string(), _json_converter
        return _message_converter(message, (*path, name))
    scalar = _SCALARS[field.type]
    if scalar == _UINT64:
        return scalar, _uint64_converter
    return scalar, _scalar_converter(scalar)


def _scalar_converter(arrow_type: pa.DataType) -> Converter:
    def convert(values: list, mask: np.ndarray | None) -> pa.Array:
        return pa.array(values, arrow_type, mask=mask)

    return convert


def _uint64_converter(values: list, mask: np.ndarray | None) -> pa.Array:
    return pa.array(values, pa.uint64(), mask=mask).cast(_UINT64)


def _enum_converter(field: FieldDescriptor) -> Converter:
    names = {v.number: v.name for v in field.enum_type.values}

    def convert(values: list, mask: np.ndarray | None) -> pa.Array:
        return pa.array([names.get(v) or str(v) for v in values], pa.string(), mask=mask)

    return convert


def _wrapper_converter(scalar: pa.DataType) -> Converter:
    inner = _uint64_converter if scalar == _UINT64 else _scalar_converter(scalar)

    def convert(values: list, mask: np.ndarray | None) -> pa.Array:
        return inner([v.value for v in values], mask)

    return convert


def _micros_converter(arrow_type: pa.DataType) -> Converter:
    def convert(values: list, mask: np.ndarray | None) -> pa.Array:
        n = len(values)
        seconds = np.fromiter((v.seconds for v in values), dtype=np.int64, count=n)
        nanos = np.fromiter((v.nanos for v in values), dtype=np.int64, count=n)
        in_range = np.abs(seconds) < _MAX_SECONDS
        micros = np.where(in_range, seconds, 0) * 1_000_000 + nanos // 1000
        if not in_range.all():
            mask = ~in_range if mask is None else mask | ~in_range
        return pa.array(micros, arrow_type, mask=mask)

    return convert


def _json_converter(values: list, mask: np.ndarray | None) -> pa.Array:
    return pa.array([_to_json(v) for v in values], pa.string(), mask=mask)


def _to_json(message: Any) -> str:
    value = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

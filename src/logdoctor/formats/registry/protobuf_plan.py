"""Protobuf payloads decoded by the C extension straight into Arrow column buffers (issue 76), for the
messages whose every field it covers; the Python reader (:mod:`.protobuf_columns`) reads the rest, and every
payload the C decoder refuses.

The plan (``_speedups.pb_plan``) is the message descriptor flattened depth first: one entry per field
instance (number, scalar kind, repeated, presence, parent, oneof, subtree end, first column, a message's
columns' end), a field of a message type followed by its own fields', a map by its entry's key and value.
``_speedups.pb_decode`` parses each payload by the Protobuf encoding spec (last value wins for a scalar seen
twice, repeated scalars packed or not, an embedded message seen twice merged, a oneof member clearing the
member before it, a map's equal keys the last one kept, unknown fields skipped) into per-field slots, then
writes one row of every column: a validity byte per row for a field with presence (a message, a oneof
member, a proto3 ``optional``), int32 / int64 / uint64 / float / double / bool values, int32 offsets and
bytes for strings, int32 offsets for lists and maps (a list of messages: its offsets, then a validity byte
per element). Enum numbers, ``uint64`` decimals, Timestamp / Duration microseconds and wrappers become their
Arrow types here, by :mod:`.protobuf_columns`' own converters.

The C decoder covers: every scalar type, open enums, strings (UTF-8 checked) and bytes, nested messages
(struct columns), repeated messages (lists of structs, elements read one by one with fresh slots), oneofs,
proto3 implicit presence and explicit presence, repeated scalars, maps of scalar keys to scalar or enum
values, Timestamp, Duration and the wrappers (repeated too). A message holding anything else (a map of
messages, a group, a required field, a closed enum, a recursion, ``Struct`` / ``Value`` / ``ListValue``) has
no plan: the Python reader reads it. A payload the C decoder refuses (anything protobuf's parser might read
otherwise: malformed wire format, a group, a string that is not UTF-8, an invalid Timestamp or Duration) is
read again by the Python reader, which gives today's value or reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from logdoctor.formats import extension
from logdoctor.formats.registry.protobuf_columns import (
    _DURATION_US,
    _JSON_MESSAGES,
    _SCALARS,
    _TIMESTAMP_US,
    _UINT64,
    _WRAPPERS,
    _enum_converter,
    _is_map,
    _micros,
)
from logdoctor.formats.registry.results import Payloads

_F = FieldDescriptor
# the C decoder's scalar kinds (_speedups.c, PB_*)
_KINDS = {
    _F.TYPE_INT32: 1, _F.TYPE_INT64: 2, _F.TYPE_UINT32: 3, _F.TYPE_UINT64: 4, _F.TYPE_SINT32: 5,
    _F.TYPE_SINT64: 6, _F.TYPE_FIXED32: 7, _F.TYPE_FIXED64: 8, _F.TYPE_SFIXED32: 9, _F.TYPE_SFIXED64: 10,
    _F.TYPE_FLOAT: 11, _F.TYPE_DOUBLE: 12, _F.TYPE_BOOL: 13, _F.TYPE_STRING: 14, _F.TYPE_BYTES: 15,
    _F.TYPE_ENUM: 16,
}  # fmt: skip
_MESSAGE, _MAP, _TIMESTAMP, _DURATION = 17, 18, 19, 20
_STRINGS = (_F.TYPE_STRING, _F.TYPE_BYTES)
#: the numpy type of a scalar's column in the C decoder's buffers
_DTYPES = {
    _F.TYPE_INT32: np.int32, _F.TYPE_SINT32: np.int32, _F.TYPE_SFIXED32: np.int32, _F.TYPE_ENUM: np.int32,
    _F.TYPE_INT64: np.int64, _F.TYPE_SINT64: np.int64, _F.TYPE_SFIXED64: np.int64, _F.TYPE_UINT32: np.int64,
    _F.TYPE_FIXED32: np.int64, _F.TYPE_UINT64: np.uint64, _F.TYPE_FIXED64: np.uint64,
    _F.TYPE_FLOAT: np.float32, _F.TYPE_DOUBLE: np.float64, _F.TYPE_BOOL: np.bool_,
}  # fmt: skip

#: the buffers of one call, the number of rows (values) and a null mask (True = null) -> an Arrow array
Builder = Callable[[list[bytes], int, "np.ndarray | None"], pa.Array]
#: payloads -> (one struct array, per payload whether protobuf rejected it)
Reader = Callable[[Sequence[bytes | memoryview]], tuple[pa.Array, list[bool]]]


class Unsupported(Exception):
    """A field the C decoder does not cover: the message is read by the Python reader."""


class _Plan:
    def __init__(self) -> None:
        self.entries: list[list[int]] = []
        self.columns = 0
        self.oneofs = 0

    def columns_of(self, count: int) -> int:
        self.columns += count
        return self.columns - count

    def entry(
        self, field: FieldDescriptor, kind: int, parent: int, oneof: int, col: int, presence: bool = True
    ) -> int:
        """A field's entry (its subtree ending right after it until :meth:`close`)."""
        present = int(presence and field.has_presence and not field.is_repeated and kind < _MESSAGE)
        index = len(self.entries)
        self.entries.append(
            [field.number, kind, int(field.is_repeated), present, parent, oneof, index + 1, col, col]
        )
        return index

    def close(self, index: int) -> None:
        """The end of a message's subtree: its entries and its columns so far."""
        self.entries[index][6] = len(self.entries)
        self.entries[index][8] = self.columns


def _valid(buffers: list[bytes], col: int) -> np.ndarray:
    return np.frombuffer(buffers[col], np.uint8).view(np.bool_)


def _mask_of(valid: np.ndarray, mask: np.ndarray | None) -> np.ndarray | None:
    nulls = ~valid if mask is None else ~valid | mask
    return nulls if nulls.any() else None


def _bitmap(mask: np.ndarray | None, n: int) -> tuple[pa.Buffer | None, int]:
    if mask is None:
        return None, 0
    return pa.py_buffer(np.packbits(~mask, bitorder="little")), int(mask.sum())


def _present(col: int, build: Builder) -> Builder:
    """``build`` with the rows whose validity column ``col`` says absent null too."""
    return lambda buffers, n, mask: build(buffers, n, _mask_of(_valid(buffers, col), mask))


def _list_of(col: int, element_type: pa.DataType, element_build: Builder) -> tuple[pa.DataType, Builder]:
    """A repeated field's list column: its offsets in buffer ``col`` (int32, one more than the rows), the
    elements built by ``element_build``."""
    list_type = pa.list_(element_type)

    def build_list(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
        offsets = np.frombuffer(buffers[col], np.int32)
        values = element_build(buffers, int(offsets[-1]), None)
        return pa.ListArray.from_arrays(pa.array(offsets), values, type=list_type)

    return list_type, build_list


def _scalar_builder(field: FieldDescriptor, col: int) -> tuple[pa.DataType, Builder]:
    """The values of a scalar (non-repeated, or a list's elements) whose buffers start at ``col``."""
    if field.type in _STRINGS:
        arrow_type = _SCALARS[field.type]

        def build_strings(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
            validity, nulls = _bitmap(mask, n)
            offsets, data = pa.py_buffer(buffers[col]), pa.py_buffer(buffers[col + 1])
            return pa.Array.from_buffers(arrow_type, n, [validity, offsets, data], null_count=nulls)

        return arrow_type, build_strings
    dtype = _DTYPES[field.type]
    if field.type == _F.TYPE_ENUM:
        convert = _enum_converter(field)

        def build_enum(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
            return convert(np.frombuffer(buffers[col], dtype), mask)

        return pa.string(), build_enum
    arrow_type = _SCALARS[field.type]
    if arrow_type == _UINT64:

        def build_uint64(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
            return pa.array(np.frombuffer(buffers[col], dtype), pa.uint64(), mask=mask).cast(_UINT64)

        return arrow_type, build_uint64

    def build(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
        return pa.array(np.frombuffer(buffers[col], dtype), arrow_type, mask=mask)

    return arrow_type, build


def _width(field: FieldDescriptor) -> int:
    """The buffers of one value of a scalar field."""
    return 2 if field.type in _STRINGS else 1


def _field(plan: _Plan, field: FieldDescriptor, parent: int, oneof: int, path: tuple[str, ...]) -> tuple[
    pa.DataType, Builder
]:  # fmt: skip
    """The entries of ``field`` added to ``plan``, and the builder of its array."""
    if field.type == _F.TYPE_GROUP or field.is_required:
        raise Unsupported(field.full_name)
    if field.type == _F.TYPE_ENUM and field.enum_type.is_closed:
        raise Unsupported(field.full_name)  # a closed enum keeps an unknown number as an unknown field
    if _is_map(field):
        entry = field.message_type
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        if value.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP) or (
            value.type == _F.TYPE_ENUM and value.enum_type.is_closed
        ):
            raise Unsupported(field.full_name)
        col = plan.columns_of(1)
        index = plan.entry(field, _MAP, parent, -1, col)
        key_col = plan.columns_of(_width(key))
        plan.entry(key, _KINDS[key.type], index, -1, key_col, presence=False)
        key_type, key_build = _scalar_builder(key, key_col)
        value_col = plan.columns_of(_width(value))
        plan.entry(value, _KINDS[value.type], index, -1, value_col, presence=False)
        value_type, value_build = _scalar_builder(value, value_col)
        plan.close(index)
        map_type = pa.map_(key_type, value_type)

        def build_map(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
            offsets = np.frombuffer(buffers[col], np.int32)
            count = int(offsets[-1])
            return pa.MapArray.from_arrays(
                pa.array(offsets),
                key_build(buffers, count, None),
                value_build(buffers, count, None),
                type=map_type,
            )

        return map_type, build_map
    if field.type == _F.TYPE_MESSAGE:
        message = field.message_type
        if message.full_name in _JSON_MESSAGES or message.full_name in path:
            raise Unsupported(field.full_name)
        if not field.is_repeated:
            return _message_field(plan, field, parent, oneof, path, -1)
        # a list of messages: its offsets, then each element's validity (always valid) and fields
        list_col = plan.columns_of(1)
        return _list_of(list_col, *_message_field(plan, field, parent, -1, path, list_col))
    kind = _KINDS.get(field.type)
    if kind is None:
        raise Unsupported(field.full_name)
    if field.is_repeated:
        col = plan.columns_of(1)
        plan.entry(field, kind, parent, -1, col)
        return _list_of(col, *_scalar_builder(field, plan.columns_of(_width(field))))
    presence = field.has_presence
    col = plan.columns_of(1 if presence else 0)
    value_col = plan.columns_of(_width(field))
    plan.entry(field, kind, parent, oneof, col if presence else value_col)
    arrow_type, build_value = _scalar_builder(field, value_col)
    return arrow_type, _present(col, build_value) if presence else build_value


def _message_field(
    plan: _Plan, field: FieldDescriptor, parent: int, oneof: int, path: tuple[str, ...], list_col: int
) -> tuple[pa.DataType, Builder]:
    """The entries of a field of a message type (a struct, a Timestamp or Duration, a wrapper; ``list_col``:
    the offsets column of a repeated one, -1 for one value), and the builder of its (elements') array."""
    message = field.message_type
    name = message.full_name
    col = plan.columns_of(1)
    at = col if list_col < 0 else list_col
    if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        timestamp = name == "google.protobuf.Timestamp"
        index = plan.entry(field, _TIMESTAMP if timestamp else _DURATION, parent, oneof, at)
        seconds, nanos = message.fields_by_name["seconds"], message.fields_by_name["nanos"]
        seconds_col = plan.columns_of(1)
        plan.entry(seconds, _KINDS[seconds.type], index, -1, seconds_col)
        nanos_col = plan.columns_of(1)
        plan.entry(nanos, _KINDS[nanos.type], index, -1, nanos_col)
        plan.close(index)
        arrow_type = _TIMESTAMP_US if timestamp else _DURATION_US

        def build_time(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
            s = np.frombuffer(buffers[seconds_col], np.int64)
            ns = np.frombuffer(buffers[nanos_col], np.int32).astype(np.int64)
            return _micros(s, ns, _mask_of(_valid(buffers, col), mask), arrow_type)

        return arrow_type, build_time
    index = plan.entry(field, _MESSAGE, parent, oneof, at)
    if name in _WRAPPERS:
        inner = message.fields_by_name["value"]
        arrow_type, inner_build = _field(plan, inner, index, -1, path)
        plan.close(index)
        return arrow_type, _present(col, inner_build)
    struct_type, build_struct = _message(plan, message, index, (*path, name))
    plan.close(index)
    return struct_type, _present(col, build_struct)


def _message(plan: _Plan, descriptor: Descriptor, parent: int, path: tuple[str, ...]) -> tuple[
    pa.StructType, Builder
]:  # fmt: skip
    fields: list[pa.Field] = []
    builders: list[Builder] = []
    oneofs: dict[str, int] = {}
    for field in descriptor.fields:
        oneof = -1
        if field.containing_oneof is not None:
            if field.containing_oneof.name not in oneofs:
                oneofs[field.containing_oneof.name] = plan.oneofs
                plan.oneofs += 1
            oneof = oneofs[field.containing_oneof.name]
        arrow_type, build = _field(plan, field, parent, oneof, path)
        fields.append(pa.field(field.name, arrow_type))
        builders.append(build)
    struct_type = pa.struct(fields)

    def build_struct(buffers: list[bytes], n: int, mask: np.ndarray | None) -> pa.Array:
        if not fields:  # a message with no fields: an empty struct per message
            nulls = [False] * n if mask is None else mask.tolist()
            return pa.array([None if null else {} for null in nulls], struct_type)
        arrays = [build(buffers, n, None) for build in builders]
        return pa.StructArray.from_arrays(
            arrays, fields=fields, mask=None if mask is None else pa.array(mask, pa.bool_())
        )

    return struct_type, build_struct


def plan_of(descriptor: Descriptor) -> tuple[Any, pa.StructType, Builder] | None:
    """The C decoder's plan of ``descriptor``, the struct type and the builder of its arrays; None when
    the extension is not built or a field is one the C decoder does not cover."""
    speedups = extension.load()
    if speedups is None or not hasattr(speedups, "pb_decode"):
        return None
    plan = _Plan()
    try:
        struct_type, build = _message(plan, descriptor, -1, (descriptor.full_name,))
    except Unsupported:
        return None
    compiled = speedups.pb_plan([tuple(e) for e in plan.entries], plan.columns, plan.oneofs)
    return compiled, struct_type, build


def fast_reader(descriptor: Descriptor, arrow_type: pa.DataType, read: Reader) -> Reader:
    """``read`` (the Python reader of ``descriptor``) with the C decoder in front when it covers the
    message: the payloads it refuses read by ``read``, their values put back in place."""
    found = plan_of(descriptor)
    if found is None or found[1] != arrow_type:
        return read
    compiled, _, build = found
    decode = extension.load().pb_decode  # type: ignore[union-attr]

    def read_fast(payloads: Sequence[bytes | memoryview]) -> tuple[pa.Array, list[bool]]:
        if isinstance(payloads, Payloads):  # spans of one buffer, read in place
            got = decode(compiled, None, payloads.data, payloads.starts, payloads.ends)
        else:
            got = decode(compiled, payloads)
        if got is None:  # a column past Arrow's 32-bit offsets, or a payload in pieces
            return read(payloads.as_list() if isinstance(payloads, Payloads) else payloads)
        buffers, refused_bytes = got
        n = len(payloads)
        refused = np.frombuffer(refused_bytes, np.uint8).view(np.bool_)
        if not refused.any():
            return build(buffers, n, None), [False] * n
        values = build(buffers, n, refused)
        again = np.flatnonzero(refused)
        more, rejected_more = read([payloads[i] for i in again])
        order = np.arange(n, dtype=np.int64)
        order[again] = n + np.arange(len(again), dtype=np.int64)
        values = pa.concat_arrays([values, more]).take(pa.array(order))
        rejected = [False] * n
        for i, r in zip(again.tolist(), rejected_more, strict=True):
            rejected[i] = r
        return values, rejected

    return read_fast

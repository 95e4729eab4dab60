"""Parsed Protobuf messages read into Arrow columns (type mapping of docs/typed-tables.md).

A batch is read in one pass: a function generated per message type (Python source compiled once) parses
each payload and at once reads every field of it, nested messages inline, into one Python list per leaf
column, as a hand-written parse-and-read loop would (reading a message right after parsing it, while its
bytes are in the CPU's cache, costs far less than a second pass over kept messages; protobuf's
``json_format.MessageToDict`` is about 4x slower than this whole pass). The lists then become Arrow
arrays. Repeated messages and maps with message values are read in a second pass over their elements by
the same kind of generated function. A field with presence is read only when set.

Values: a scalar of a field with no presence (proto3) is its default when unset; a field with presence
(a message, a oneof member, an ``optional`` proto3 or a proto2 scalar) is null when unset; an enum value is
its name (a number the enum does not name: the number as text); ``google.protobuf.Timestamp`` and
``Duration`` are microseconds (sub-microsecond nanos dropped toward zero, as protobuf's ``ToMicroseconds``);
the wrappers ``google.protobuf.*Value`` are nullable scalars; ``Struct`` / ``Value`` / ``ListValue`` and a
message where a recursion starts are JSON text (protobuf's JSON mapping, fields by their ``.proto`` names).
Map entries are sorted by key.

A ``Timestamp`` or ``Duration`` whose value protobuf calls invalid (:func:`_micros`: seconds out of range,
nanos out of range or of the wrong sign) is no value: the payload holding it, at any depth (in a JSON-text
field too, where protobuf's JSON mapping refuses it), is rejected (:func:`payload_reader`), found in the batch
by halving it.
"""

from __future__ import annotations

import json
import keyword
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError

_TIMESTAMP_US = pa.timestamp("us", tz="UTC")
_DURATION_US = pa.duration("us")
_UINT64 = pa.decimal128(20, 0)
# protobuf's valid values of the well-known time types: timestamp.proto ("Must be from 0001-01-01T00:00:00Z to
# 9999-12-31T23:59:59Z inclusive"; nanos "Must be from 0 to 999,999,999 inclusive") and duration.proto
# (seconds "Must be from -315,576,000,000 to +315,576,000,000 inclusive", nanos from -999,999,999 to
# +999,999,999, "For durations of one second or more, a non-zero value for the nanos field must be of the same
# sign as the seconds field"), as Java's Timestamps.checkValid / Durations.checkValid and Python's
# well_known_types (_CheckTimestampValid, _CheckDurationValid, which json_format applies) check them
_TIMESTAMP_SECONDS = (-62_135_596_800, 253_402_300_799)
_DURATION_SECONDS = 315_576_000_000
_MAX_NANOS = 999_999_999

#: per thread: how many invalid values the current read met (:func:`_micros`, :func:`_to_json`)
_invalid = threading.local()

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
#: the generated function's lists (by column number) -> an Arrow array
Finisher = Callable[[list[list]], pa.Array]


def payload_reader(
    descriptor: Descriptor, parse: Callable[[bytes | memoryview], Any], empty: Any
) -> tuple[pa.DataType, Callable[[Sequence[bytes | memoryview]], tuple[pa.Array, list[bool]]]]:
    """The struct type of ``descriptor`` and a function parsing payloads with ``parse`` into one struct array
    and, per payload, whether protobuf rejected it (then its value is null; ``empty`` stands in for it)."""
    code = _Code()
    code.namespace.update(parse=parse, empty=empty, DecodeError=DecodeError)
    struct_type, lines, _, finish = _struct(code, descriptor, (descriptor.full_name,), "m")
    # the payloads protobuf rejects (few): kept apart, told by identity after the pass
    loop = [
        "    for p in payloads:",
        "        try:",
        "            m = parse(p)",
        "        except DecodeError:",
        "            m = empty; rejected(p)",
    ]
    title = f"<protobuf payload reader of {descriptor.full_name}>"
    read = code.build(title, "payloads, rejected", loop, _indented(lines, 2))

    def run(payloads: Sequence[Any]) -> tuple[pa.Array, list[bool], int]:
        """The struct array, which payloads protobuf rejected, how many invalid values were met."""
        _invalid.count = 0
        bad: list = []
        columns = read(payloads, bad.append)
        if not bad:
            return finish(columns, None), [False] * len(payloads), _invalid.count
        bad_ids = set(map(id, bad))  # the same object twice: the same bytes, rejected twice
        rejected = [id(p) in bad_ids for p in payloads]
        return finish(columns, np.array(rejected, dtype=bool)), rejected, _invalid.count

    def holding_invalid(payloads: Sequence[Any], start: int) -> list[int]:
        """The positions (from ``start``) of the payloads holding an invalid value, in ``payloads``, which
        hold one at least: by halves (a few in a batch cost a few reads of it)."""
        if len(payloads) == 1:
            return [start]
        half = len(payloads) // 2
        found = []
        for part, at in ((payloads[:half], start), (payloads[half:], start + half)):
            if run(part)[2]:
                found.extend(holding_invalid(part, at))
        return found

    def decode(payloads: Sequence[bytes | memoryview]) -> tuple[pa.Array, list[bool]]:
        values, rejected, invalid = run(payloads)
        if invalid:
            # the payloads holding one: walked one by one (the walk follows the reader's choices), then read
            # again with them replaced by bytes protobuf rejects (null there); what the walk missed, if
            # anything, found by halves
            top = (descriptor.full_name,)
            found = {i for i, p in enumerate(payloads) if not rejected[i] and _holds_invalid(parse(p), top)}
            kept = [_REJECTED if i in found else p for i, p in enumerate(payloads)]
            values, rejected, invalid = run(kept)
            if invalid:
                found.update(holding_invalid(kept, 0))
                values, rejected, _ = run([_REJECTED if i in found else p for i, p in enumerate(payloads)])
        return values, rejected

    return struct_type, decode


#: bytes protobuf's parser rejects (wire type 7)
_REJECTED = b"\x0f"


def message_converter(descriptor: Descriptor, path: tuple[str, ...]) -> tuple[pa.DataType, Converter]:
    """The struct type of ``descriptor`` and the converter of a list of its (parsed) messages. ``path``: the
    messages from the top down to this one (a field of a message type on the path starts a recursion)."""
    code = _Code()
    struct_type, lines, _, finish = _struct(code, descriptor, path, "m")
    loop = ["    for m in messages:"]
    read = code.build(f"<protobuf reader of {descriptor.full_name}>", "messages", loop, _indented(lines, 2))

    def convert(messages: list, mask: np.ndarray | None) -> pa.Array:
        return finish(read(messages), mask)

    return struct_type, convert


class _Code:
    """The source of one generated reading function: its columns (lists ``c<n>``, appended to by ``a<n>``,
    extended by ``e<n>``, returned by number), its temporaries (``t<n>``) and the objects it names
    (``o<n>``: default values, functions)."""

    def __init__(self) -> None:
        self.count = 0
        self.temps = 0
        self.namespace: dict[str, Any] = {}

    def column(self) -> int:
        self.count += 1
        return self.count - 1

    def temp(self) -> str:
        self.temps += 1
        return f"t{self.temps}"

    def bind(self, obj: Any) -> str:
        name = f"o{len(self.namespace)}"
        self.namespace[name] = obj
        return name

    def build(
        self, title: str, argument: str, loop: list[str], body: list[str]
    ) -> Callable[[Any], list[list]]:
        setup = [f"    c{i} = []; a{i} = c{i}.append; e{i} = c{i}.extend" for i in range(self.count)]
        columns = ", ".join(f"c{i}" for i in range(self.count))
        source = "\n".join([f"def read({argument}):", *setup, *loop, *body, f"    return [{columns}]", ""])
        exec(compile(source, title, "exec"), self.namespace)
        return self.namespace["read"]


def _read(var: str, name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{var}.{name}"
    return f"getattr({var}, {name!r})"


#: what reads one field: its Arrow type, the lines reading its value, the lines appending what an absent
#: field holds (guarded by its presence), the function making its array (with a null mask)
_FieldCode = tuple[pa.DataType, list[str], list[str], Callable[[list[list], "np.ndarray | None"], pa.Array]]


def _indented(lines: list[str], depth: int = 1) -> list[str]:
    """``lines`` indented ``depth`` levels (2: in the body of the generated function's loop)."""
    return ["    " * depth + line for line in lines]


def _struct(code: _Code, descriptor: Descriptor, path: tuple[str, ...], var: str) -> _FieldCode:
    """The struct type of ``descriptor``, the lines reading every field of the message in ``var`` (a field
    with presence read only when set), the lines of an absent message, and the function making the struct
    array (with a null mask) of the lists they fill. Lines are indented from column 0."""
    fields: list[pa.Field] = []
    finishers: list[Finisher] = []
    lines: list[str] = []
    unset: list[str] = []
    oneofs: dict[str, tuple[str, int, list]] = {}
    for field in descriptor.fields:
        read = _read(var, field.name)
        arrow_type, field_lines, field_unset, finish = _field(code, field, path, read)
        oneof = field.containing_oneof
        if oneof is not None:  # the oneof's set member's name, one column for all its members
            if oneof.name not in oneofs:
                which = code.column()
                oneofs[oneof.name] = (code.temp(), which, [])
                temp = oneofs[oneof.name][0]
                lines.append(f"{temp} = {var}.WhichOneof({oneof.name!r}); a{which}({temp})")
                unset.append(f"a{which}(None)")
            temp, which, _ = oneofs[oneof.name]
            lines.extend([f"if {temp} == {field.name!r}:", *_indented(field_lines)])
            lines.extend(["else:", *_indented(field_unset)])
            unset.extend(field_unset)
            finishers.append(_with_which(finish, which, field.name, oneofs[oneof.name][2]))
        elif field.has_presence and not field.is_repeated:
            nulls = code.column()
            present = f"{var}.HasField({field.name!r})"
            lines.extend([f"if {present}:", f"    a{nulls}(False)", *_indented(field_lines)])
            lines.extend(["else:", f"    a{nulls}(True)", *_indented(field_unset)])
            unset.extend([f"a{nulls}(True)", *field_unset])
            finishers.append(_with_nulls(finish, nulls))
        else:
            lines.extend(field_lines)
            unset.extend(field_unset)
            finishers.append(_with_nulls(finish, None))
        fields.append(pa.field(field.name, arrow_type))
    struct_type = pa.struct(fields)
    counter = -1
    if not fields:  # something to count the messages by
        counter = code.column()
        lines.append(f"a{counter}(None)")
        unset.append(f"a{counter}(None)")

    def finish_struct(columns: list[list], mask: np.ndarray | None) -> pa.Array:
        if not fields:  # a message with no fields: an empty struct per message
            nulls = [False] * len(columns[counter]) if mask is None else mask.tolist()
            return pa.array([None if null else {} for null in nulls], struct_type)
        arrays = [finish(columns) for finish in finishers]
        return pa.StructArray.from_arrays(
            arrays, fields=fields, mask=None if mask is None else pa.array(mask, pa.bool_())
        )

    return struct_type, lines, unset, finish_struct


def _with_nulls(finish: Callable[[list[list], np.ndarray | None], pa.Array], nulls: int | None) -> Finisher:
    """``finish`` given the null mask of column ``nulls`` (None: a field with no presence, never null)."""

    def finish_nullable(columns: list[list]) -> pa.Array:
        if nulls is None:
            return finish(columns, None)
        mask = np.array(columns[nulls], dtype=bool)
        return finish(columns, mask if mask.any() else None)

    return finish_nullable


def _with_which(
    finish: Callable[[list[list], np.ndarray | None], pa.Array], which: int, name: str, last: list
) -> Finisher:
    """``finish`` of oneof member ``name``, null where column ``which`` (the set member) names another.
    ``last``: shared by the oneof's members, the last batch's column and its Arrow array (made once)."""

    def finish_member(columns: list[list]) -> pa.Array:
        names = columns[which]
        seen = last[0] if last else None
        if seen is None or seen[0] is not names:
            seen = (names, pa.array(names, pa.string()))
            last[:] = [seen]
        mask = pc.not_equal(seen[1], name).fill_null(True).to_numpy(zero_copy_only=False)
        return finish(columns, mask if mask.any() else None)

    return finish_member


def _field(code: _Code, field: FieldDescriptor, path: tuple[str, ...], read: str) -> _FieldCode:
    """How ``field`` is read (``read``: the expression of its value); see :data:`_FieldCode`."""
    if _is_map(field):
        return _map(code, field, path, read)
    if field.is_repeated:
        value_type, convert = _element_converter(field, path)
        lengths, elements = code.column(), code.column()
        list_type = pa.list_(value_type)
        x = code.temp()
        # a slice of a repeated field is made in C; iterating it goes through Python's Sequence methods
        lines = [f"{x} = {read}; a{lengths}(len({x})); e{elements}({x}[:])"]

        def finish_list(columns: list[list], mask: np.ndarray | None) -> pa.Array:
            return pa.ListArray.from_arrays(
                _offsets(columns[lengths]), convert(columns[elements], None), type=list_type
            )

        return list_type, lines, [f"a{lengths}(0)"], finish_list
    message = field.message_type if field.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP) else None
    name = message.full_name if message is not None else ""
    if message is not None and name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        arrow_type = _TIMESTAMP_US if name == "google.protobuf.Timestamp" else _DURATION_US
        seconds, nanos, x = code.column(), code.column(), code.temp()
        lines = [f"{x} = {read}; a{seconds}({x}.seconds); a{nanos}({x}.nanos)"]

        def finish_micros(columns: list[list], mask: np.ndarray | None) -> pa.Array:
            return _micros(columns[seconds], columns[nanos], mask, arrow_type)

        return arrow_type, lines, [f"a{seconds}(0); a{nanos}(0)"], finish_micros
    if message is not None and name in _WRAPPERS:
        scalar = _SCALARS[_WRAPPERS[name]]
        values = code.column()
        default = code.bind(message.fields_by_name["value"].default_value)
        finish = _finish_values(values, _scalar_converter(scalar))
        return scalar, [f"a{values}({read}.value)"], [f"a{values}({default})"], finish
    if message is not None and (name in _JSON_MESSAGES or name in path):
        values = code.column()
        to_json = code.bind(_to_json)
        finish = _finish_values(values, _scalar_converter(pa.string()))
        return pa.string(), [f"a{values}({to_json}({read}))"], [f"a{values}(None)"], finish
    if message is not None:
        x = code.temp()
        struct_type, lines, unset, finish_struct = _struct(code, message, (*path, name), x)
        return struct_type, [f"{x} = {read}", *lines], unset, finish_struct
    value_type, convert = _element_converter(field, path)
    values = code.column()
    default = code.bind(field.default_value)
    return value_type, [f"a{values}({read})"], [f"a{values}({default})"], _finish_values(values, convert)


def _finish_values(values: int, convert: Converter) -> Callable[[list[list], np.ndarray | None], pa.Array]:
    def finish(columns: list[list], mask: np.ndarray | None) -> pa.Array:
        return convert(columns[values], mask)

    return finish


def _is_map(field: FieldDescriptor) -> bool:
    return field.is_repeated and field.type == _F.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


def _map(code: _Code, field: FieldDescriptor, path: tuple[str, ...], read: str) -> _FieldCode:
    entry = field.message_type
    key_type, key_convert = _element_converter(entry.fields_by_name["key"], path)
    value_type, value_convert = _element_converter(entry.fields_by_name["value"], path)
    map_type = pa.map_(key_type, value_type)
    lengths, keys, values = code.column(), code.column(), code.column()
    x, k = code.temp(), code.temp()
    # the sorted keys, then the values by key (a protobuf map's dict() and items() go key by key through
    # Python's Mapping methods: slower)
    lines = [
        f"{x} = {read}",
        f"if {x}: {k} = sorted({x}); a{lengths}(len({k})); e{keys}({k}); "
        f"e{values}(map({x}.__getitem__, {k}))",
        f"else: a{lengths}(0)",
    ]

    def finish_map(columns: list[list], mask: np.ndarray | None) -> pa.Array:
        return pa.MapArray.from_arrays(
            _offsets(columns[lengths]),
            key_convert(columns[keys], None),
            value_convert(columns[values], None),
            type=map_type,
        )

    return map_type, lines, [f"a{lengths}(0)"], finish_map


def _offsets(lengths: list[int]) -> pa.Array:
    """The offsets of a list (or map) array of ``lengths``."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(np.array(lengths, dtype=np.int32), out=offsets[1:])
    return pa.array(offsets)


def _element_converter(field: FieldDescriptor, path: tuple[str, ...]) -> tuple[pa.DataType, Converter]:
    """The Arrow type of one value of ``field`` (an element when repeated) and its converter."""
    if field.type == _F.TYPE_ENUM:
        return pa.string(), _enum_converter(field)
    if field.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        message = field.message_type
        name = message.full_name
        if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            arrow_type = _TIMESTAMP_US if name == "google.protobuf.Timestamp" else _DURATION_US

            def convert_micros(values: list, mask: np.ndarray | None) -> pa.Array:
                seconds, nanos = [v.seconds for v in values], [v.nanos for v in values]
                return _micros(seconds, nanos, mask, arrow_type)

            return arrow_type, convert_micros
        if name in _WRAPPERS:
            scalar = _SCALARS[_WRAPPERS[name]]
            inner = _scalar_converter(scalar)

            def convert_wrapped(values: list, mask: np.ndarray | None) -> pa.Array:
                return inner([v.value for v in values], mask)

            return scalar, convert_wrapped
        if name in _JSON_MESSAGES or name in path:
            return pa.string(), _json_converter
        return message_converter(message, (*path, name))
    arrow_type = _SCALARS[field.type]
    return arrow_type, _scalar_converter(arrow_type)


def _scalar_converter(arrow_type: pa.DataType) -> Converter:
    if arrow_type == _UINT64:
        return _uint64_converter

    def convert(values: list, mask: np.ndarray | None) -> pa.Array:
        return pa.array(values, arrow_type, mask=mask)

    return convert


def _uint64_converter(values: list, mask: np.ndarray | None) -> pa.Array:
    return pa.array(values, pa.uint64(), mask=mask).cast(_UINT64)


def _enum_converter(field: FieldDescriptor) -> Converter:
    names = {v.number: v.name for v in field.enum_type.values}
    # the names by number, when the numbers are small and not negative: a take from them
    size = max(names) + 1 if names and min(names) >= 0 and max(names) < 4096 else 0
    table = pa.array([names.get(n) for n in range(size)], pa.string())
    gaps = size - len(names)

    def convert(values: list, mask: np.ndarray | None) -> pa.Array:
        if size:
            numbers = np.array(values, dtype=np.int64)
            if not len(numbers) or (numbers.min() >= 0 and numbers.max() < size):
                taken = table.take(pa.array(numbers))
                if not gaps or taken.null_count == 0:
                    return taken if mask is None else pc.if_else(pa.array(mask), None, taken)
        return pa.array([names.get(v) or str(v) for v in values], pa.string(), mask=mask)

    return convert


def _micros(seconds: list, nanos: list, mask: np.ndarray | None, arrow_type: pa.DataType) -> pa.Array:
    """Timestamps or durations (``arrow_type``) in microseconds; a value protobuf calls invalid (see
    ``_TIMESTAMP_SECONDS``) is counted in ``_invalid`` and null."""
    s = np.array(seconds, dtype=np.int64)
    n = np.array(nanos, dtype=np.int64)
    if arrow_type == _TIMESTAMP_US:
        valid = (s >= _TIMESTAMP_SECONDS[0]) & (s <= _TIMESTAMP_SECONDS[1]) & (n >= 0) & (n <= _MAX_NANOS)
    else:
        valid = (np.abs(s) <= _DURATION_SECONDS) & (np.abs(n) <= _MAX_NANOS) & ~((s > 0) & (n < 0))
        valid &= ~((s < 0) & (n > 0))
    # toward zero, as protobuf's ToMicroseconds (a Timestamp's nanos are never negative)
    micros = np.where(valid, s, 0) * 1_000_000 + np.where(n < 0, -(-n // 1000), n // 1000)
    if not valid.all():
        invalid = ~valid if mask is None else ~valid & ~mask
        _invalid.count = getattr(_invalid, "count", 0) + int(invalid.sum())
        mask = ~valid if mask is None else mask | ~valid
    return pa.array(micros, arrow_type, mask=mask)


def _valid_time(message: Any, name: str) -> bool:
    """Whether a ``Timestamp`` or ``Duration`` (``name``) holds a value protobuf calls valid (as
    :func:`_micros` checks)."""
    s, n = message.seconds, message.nanos
    if name == "google.protobuf.Timestamp":
        return _TIMESTAMP_SECONDS[0] <= s <= _TIMESTAMP_SECONDS[1] and 0 <= n <= _MAX_NANOS
    return abs(s) <= _DURATION_SECONDS and abs(n) <= _MAX_NANOS and not (s > 0 > n or s < 0 < n)


def _holds_invalid(message: Any, path: tuple[str, ...]) -> bool:
    """Whether a parsed message holds a value the reader counts invalid, at any depth: a time value
    (:func:`_micros`) or a message protobuf's JSON mapping refuses where the reader writes it as JSON text
    (:func:`_to_json`). ``path``: as the reader's (the message types from the top down to this one)."""
    for field, value in message.ListFields():
        if field.type not in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
            continue
        if _is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            if value_field.type not in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
                continue
            kind, values = value_field.message_type, list(value.values())
        else:
            kind, values = field.message_type, (list(value) if field.is_repeated else [value])
        name = kind.full_name
        if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            if not all(_valid_time(v, name) for v in values):
                return True
        elif name in _WRAPPERS:
            continue
        elif name in _JSON_MESSAGES or name in path:
            if any(_to_json(v) is None for v in values):
                return True
        elif any(_holds_invalid(v, (*path, name)) for v in values):
            return True
    return False


def _json_converter(values: list, mask: np.ndarray | None) -> pa.Array:
    return pa.array([_to_json(v) for v in values], pa.string(), mask=mask)


def _to_json(message: Any) -> str | None:
    """``message`` in protobuf's JSON mapping; None (counted in ``_invalid``) where the mapping refuses a
    value in it (an invalid Timestamp or Duration; an ``Any`` of a type the pool lacks)."""
    try:
        value = json_format.MessageToDict(message, preserving_proto_field_name=True)
    except (ValueError, TypeError, json_format.Error):
        _invalid.count = getattr(_invalid, "count", 0) + 1
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

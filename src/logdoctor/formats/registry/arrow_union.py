"""The table type of a topic's writer types, and a writer type's array cast to it.

A topic's values may be written with several schemas (versions of a subject, or schemas of several
subjects): the table has one type that every writer type resolves into, by the Avro specification's schema
resolution rules (https://avro.apache.org/docs/1.12.0/specification/#schema-resolution), read on Arrow
types:

- records (structs) resolve field by field, by name: the table's struct has every field of every writer, in
  the order first seen; a field a writer lacks is null in its rows (every field is nullable);
- a writer's int is promotable to long, float or double, a long to float or double, a float to double: the
  table has the widest of int32 -> int64 -> float32 -> float64 the writers use;
- arrays and maps resolve by their items and values; decimals of one scale resolve to the widest precision
  (decimal256 beyond 38);
- types that do not resolve into each other (a string and an int, two timestamps of other units...) are
  kept side by side as a union is in the type mapping: a struct of one field per branch, named by the type
  (``int``, ``long``, ``float``, ``double``, ``boolean``, ``string``, ``bytes``, ``array``, ``map``,
  ``record``, ``decimal``; Arrow's name of any other type), a value in the field of its branch. Such a
  struct's fields carry the metadata key :data:`BRANCH` (which tells them from a record's struct).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

#: the field metadata key marking the fields of a struct of branches (its value: the branch's class)
BRANCH = b"logdoctor.branch"
_NUMBERS = (pa.int32(), pa.int64(), pa.float32(), pa.float64())
_NAMES = {
    pa.int32(): "int",
    pa.int64(): "long",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    pa.string(): "string",
    pa.binary(): "bytes",
}


def decimal_type(precision: int, scale: int) -> pa.DataType:
    """Arrow's decimal of ``precision`` digits: decimal128 up to 38, decimal256 beyond."""
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def is_branches(t: pa.DataType) -> bool:
    """Whether ``t`` is a struct of branches made by :func:`union_type`."""
    return (
        pa.types.is_struct(t)
        and t.num_fields > 0
        and all(f.metadata is not None and BRANCH in f.metadata for f in t)
    )


def _class(t: pa.DataType) -> str:
    """The class of a type: types of one class resolve into one type; others become branches."""
    if pa.types.is_struct(t):
        return "record"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_list(t):
        return "array"
    if t in _NUMBERS:
        return "number"
    if pa.types.is_decimal(t):
        return f"decimal/{t.scale}"
    return str(t)


def union_type(types: Sequence[pa.DataType]) -> pa.DataType:
    """The type every one of ``types`` resolves into (the module's rules); ``pa.null()`` for none."""
    classes: dict[str, list[pa.DataType]] = {}
    for t in types:
        for branch in t if is_branches(t) else ():
            classes.setdefault(branch.metadata[BRANCH].decode(), []).append(branch.type)
        if not is_branches(t) and not pa.types.is_null(t):
            classes.setdefault(_class(t), []).append(t)
    merged = {c: _merge(c, ts) for c, ts in classes.items()}
    if not merged:
        return pa.null()
    if len(merged) == 1:
        return next(iter(merged.values()))
    names = [_branch_name(t) for t in merged.values()]
    return pa.struct(
        [
            pa.field(name if names.count(name) == 1 else str(t), t, metadata={BRANCH: c.encode()})
            for name, (c, t) in zip(names, merged.items(), strict=True)
        ]
    )


def union_fields(types: Sequence[pa.DataType]) -> list[pa.Field]:
    """The table's top-level columns for the struct ``types`` of a topic's writers."""
    t = union_type(types)
    return list(t) if pa.types.is_struct(t) else [pa.field("value", t)]


def _branch_name(t: pa.DataType) -> str:
    if t in _NAMES:
        return _NAMES[t]
    if pa.types.is_decimal(t):
        return "decimal"
    c = _class(t)
    return c if c in ("record", "map", "array") else str(t)


def _merge(c: str, types: list[pa.DataType]) -> pa.DataType:
    first = types[0]
    if all(t == first for t in types[1:]) and c != "record":
        return first
    if c == "number":
        return max(types, key=_NUMBERS.index)
    if c.startswith("decimal/"):
        return decimal_type(max(t.precision for t in types), first.scale)
    if c == "array":
        item = first.value_field
        return pa.list_(item.with_type(union_type([t.value_type for t in types])))
    if c == "map":
        keys = union_type([t.key_type for t in types])
        item = first.item_field
        return pa.map_(keys, item.with_type(union_type([t.item_type for t in types])))
    if c == "record":
        fields: dict[str, pa.Field] = {}
        field_types: dict[str, list[pa.DataType]] = {}
        for t in types:
            for f in t:
                fields.setdefault(f.name, f)
                field_types.setdefault(f.name, []).append(f.type)
        return pa.struct(
            [fields[name].with_type(union_type(ts)).with_nullable(True) for name, ts in field_types.items()]
        )
    return first  # one exact type


def cast_to(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` (of a writer's type) as ``target`` (a :func:`union_type` of that type and others): fields
    by name, a missing one null, numbers and decimals widened, a value of another class in its branch."""
    source = array.type
    if source == target and not pa.types.is_struct(source):
        return array
    if pa.types.is_null(source):
        return pa.nulls(len(array), target)
    if is_branches(target):
        return _to_branches(array, target)
    if pa.types.is_struct(target):
        children = [
            cast_to(array.field(f.name), f.type)
            if source.get_field_index(f.name) >= 0
            else pa.nulls(len(array), f.type)
            for f in target
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=null_mask(array))
    if pa.types.is_map(target):
        offsets, start, stop = rebased_offsets(array)
        return pa.MapArray.from_arrays(
            offsets,
            cast_to(array.keys.slice(start, stop - start), target.key_type),
            cast_to(array.items.slice(start, stop - start), target.item_type),
            type=target,
            mask=null_mask(array),
        )
    if pa.types.is_list(target):
        offsets, start, stop = rebased_offsets(array)
        values = cast_to(array.values.slice(start, stop - start), target.value_type)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=null_mask(array))
    # numbers: Avro's int/long -> float/double may round (safe=False), as the promotion does in Avro
    return pc.cast(array, target, safe=not (pa.types.is_integer(source) and pa.types.is_floating(target)))


def rebased_offsets(array: pa.Array) -> tuple[pa.Array, int, int]:
    """A list's or map's offsets from 0 (a slice's start at its values' start), and its values' range."""
    offsets = array.offsets.to_numpy()
    start, stop = int(offsets[0]), int(offsets[-1])
    return pa.array(offsets - start, pa.int32()), start, stop


def null_mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _to_branches(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` as ``target``'s struct of branches: each branch of it (a value not of branches: the branch
    of its class) in the target's branch of that class, null in the others."""
    if is_branches(array.type):
        parts = {f.metadata[BRANCH]: array.field(f.name) for f in array.type}
    else:
        parts = {_class(array.type).encode(): array}
    children = [
        cast_to(parts[f.metadata[BRANCH]], f.type)
        if f.metadata[BRANCH] in parts
        else pa.nulls(len(array), f.type)
        for f in target
    ]
    return pa.StructArray.from_arrays(children, fields=list(target), mask=null_mask(array))

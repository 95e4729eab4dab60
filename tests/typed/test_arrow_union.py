"""arrow_union: the table type of several writer types by Avro's resolution rules, and cast_to. The property
tests check every value of random struct arrays through to_pylist against an expectation written here from
the rules (not from the module's code)."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.formats.registry.arrow_union import BRANCH, cast_to, is_branches, union_fields, union_type

NUMBERS = [pa.int32(), pa.int64(), pa.float32(), pa.float64()]


@pytest.mark.parametrize(
    ("a", "b", "widest"),
    [
        (pa.int32(), pa.int64(), pa.int64()),
        (pa.int32(), pa.float32(), pa.float32()),
        (pa.int64(), pa.float32(), pa.float32()),  # Avro: long is promotable to float
        (pa.float32(), pa.float64(), pa.float64()),
        (pa.int64(), pa.int32(), pa.int64()),
        (pa.decimal128(10, 2), pa.decimal128(12, 2), pa.decimal128(12, 2)),
        (pa.decimal128(30, 2), pa.decimal256(40, 2), pa.decimal256(40, 2)),
        (pa.string(), pa.string(), pa.string()),
        (pa.null(), pa.date32(), pa.date32()),
    ],
)
def test_promotions(a: pa.DataType, b: pa.DataType, widest: pa.DataType) -> None:
    assert union_type([a, b]) == widest
    assert union_type([b, a]) == widest


def test_not_promotable_become_branches_named_by_type() -> None:
    t = union_type(
        [pa.string(), pa.int32(), pa.decimal128(5, 1), pa.decimal128(5, 2), pa.int64(), pa.binary()]
    )
    assert [f.name for f in t] == ["string", "long", "decimal128(5, 1)", "decimal128(5, 2)", "bytes"]
    assert [f.type for f in t] == [
        pa.string(),
        pa.int64(),
        pa.decimal128(5, 1),
        pa.decimal128(5, 2),
        pa.binary(),
    ]
    assert is_branches(t) and not is_branches(pa.struct([("string", pa.string())]))
    # branches of branches are flattened: the order of the union does not matter to the result's content
    assert union_type([union_type([pa.string(), pa.int32()]), pa.float64()]) == union_type(
        [pa.string(), pa.int32(), pa.float64()]
    )
    arr = cast_to(pa.array([1, None, 3], pa.int32()), t)
    assert arr.to_pylist() == [
        {"string": None, "long": 1, "decimal128(5, 1)": None, "decimal128(5, 2)": None, "bytes": None},
        None,
        {"string": None, "long": 3, "decimal128(5, 1)": None, "decimal128(5, 2)": None, "bytes": None},
    ]


def test_struct_fields_by_name_in_first_seen_order() -> None:
    v1 = pa.struct([("id", pa.int32()), ("name", pa.string())])
    v2 = pa.struct([("id", pa.int64()), ("coupon", pa.string()), ("name", pa.string())])
    t = union_type([v1, v2])
    assert t == pa.struct([("id", pa.int64()), ("name", pa.string()), ("coupon", pa.string())])
    assert union_fields([v1, v2]) == list(t)
    assert cast_to(pa.array([{"id": 1, "name": "a"}], v1), t).to_pylist() == [
        {"id": 1, "name": "a", "coupon": None}
    ]
    assert cast_to(pa.array([{"id": 2, "coupon": "c", "name": "b"}], v2), t).to_pylist() == [
        {"id": 2, "name": "b", "coupon": "c"}
    ]


def test_field_metadata_of_the_first_writer_kept() -> None:
    meta = {b"connect.name": b"io.debezium.time.Date"}
    v1 = pa.struct([pa.field("d", pa.int32(), metadata=meta)])
    v2 = pa.struct([pa.field("d", pa.int64())])
    assert union_type([v1, v2]).field("d").metadata == meta


def test_sliced_arrays_cast() -> None:
    t1 = pa.struct([("l", pa.list_(pa.int32())), ("m", pa.map_(pa.string(), pa.int32())), ("s", pa.string())])
    t2 = pa.struct([("l", pa.list_(pa.float64())), ("m", pa.map_(pa.string(), pa.string()))])
    rows = [
        {"l": [1], "m": [("a", 1)], "s": "x"},
        None,
        {"l": [2, 3], "m": [("b", 2), ("c", 3)], "s": None},
        {"l": None, "m": None, "s": "y"},
    ]
    arr = pa.array(rows, t1).slice(1, 3)
    out = cast_to(arr, union_type([t1, t2]))
    assert out.to_pylist() == [
        None,
        {
            "l": [2.0, 3.0],
            "m": [("b", {"int": 2, "string": None}), ("c", {"int": 3, "string": None})],
            "s": None,
        },
        {"l": None, "m": None, "s": "y"},
    ]


# -- properties ------------------------------------------------------------------------------------------

_LEAVES = [
    *NUMBERS,
    pa.bool_(),
    pa.string(),
    pa.binary(),
    pa.decimal128(6, 2),
    pa.decimal128(14, 2),
    pa.decimal128(9, 3),
    pa.date32(),
    pa.timestamp("us", tz="UTC"),
]
_NAMES = ["a", "b", "c", "d"]


def _structs(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(
        st.tuples(st.sampled_from(_NAMES), children), min_size=1, max_size=4, unique_by=lambda f: f[0]
    ).map(pa.struct)


_TYPES = st.recursive(
    st.sampled_from(_LEAVES),
    lambda children: st.one_of(
        children.map(pa.list_), children.map(lambda t: pa.map_(pa.string(), t)), _structs(children)
    ),
    max_leaves=8,
)
STRUCT_TYPES = _structs(_TYPES)


def _values(t: pa.DataType) -> st.SearchStrategy:
    if pa.types.is_struct(t):
        inner = st.fixed_dictionaries({f.name: _values(f.type) for f in t})
    elif pa.types.is_map(t):
        inner = st.dictionaries(st.text(max_size=3), _values(t.item_type), max_size=3).map(
            lambda d: list(d.items())
        )
    elif pa.types.is_list(t):
        inner = st.lists(_values(t.value_type), max_size=3)
    elif t == pa.int32():
        inner = st.integers(-(2**31), 2**31 - 1)
    elif t == pa.int64():
        inner = st.integers(-(2**63), 2**63 - 1)
    elif t == pa.float32():
        inner = st.floats(width=32, allow_nan=False)
    elif t == pa.float64():
        inner = st.floats(allow_nan=False)
    elif t == pa.bool_():
        inner = st.booleans()
    elif t == pa.string():
        inner = st.text(max_size=5)
    elif t == pa.binary():
        inner = st.binary(max_size=5)
    elif pa.types.is_decimal(t):
        limit = decimal.Decimal(10 ** (t.precision - t.scale)) - 1
        inner = st.decimals(
            min_value=-limit, max_value=limit, places=t.scale, allow_nan=False, allow_infinity=False
        )
    elif t == pa.date32():
        inner = st.dates()
    else:
        inner = st.datetimes(
            min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
        )
    return st.none() | inner


def _family(t: pa.DataType) -> object:
    """Which types the rules resolve into one another (written from the module's docstring)."""
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t):
        return "list"
    if pa.types.is_map(t):
        return "map"
    if t in NUMBERS:
        return "number"
    if pa.types.is_decimal(t):
        return ("decimal", t.scale)
    return t


def _expect(value: object, src: pa.DataType, dst: pa.DataType) -> object:
    """``value`` (to_pylist of type ``src``) as it must read after the cast into ``dst``."""
    if value is None:
        return None
    if pa.types.is_struct(dst) and dst.num_fields and all(f.metadata and BRANCH in f.metadata for f in dst):
        if pa.types.is_struct(src) and all(f.metadata and BRANCH in f.metadata for f in src):
            # a branch struct into a wider one: each branch into the branch of its family
            out = dict.fromkeys(f.name for f in dst)
            for f in src:
                if value[f.name] is not None:
                    (g,) = [g for g in dst if _family(g.type) == _family(f.type)]
                    out[g.name] = _expect(value[f.name], f.type, g.type)
            return out
        (branch,) = [f for f in dst if _family(f.type) == _family(src)]
        return {f.name: (_expect(value, src, f.type) if f.name == branch.name else None) for f in dst}
    if pa.types.is_struct(dst):
        return {
            f.name: _expect(value[f.name], src.field(f.name).type, f.type) if f.name in src.names else None
            for f in dst
        }
    if pa.types.is_map(dst):
        return [(k, _expect(v, src.item_type, dst.item_type)) for k, v in value]
    if pa.types.is_list(dst):
        return [_expect(v, src.value_type, dst.value_type) for v in value]
    if dst == pa.float32():
        return float(np.float32(value))
    if dst == pa.float64():
        return float(value)
    return value


def _names_kept(src: pa.DataType, dst: pa.DataType) -> bool:
    """Every field name of ``src`` (recursively) is in ``dst`` (directly, or in the struct's branch)."""
    if is_branches(dst) and not is_branches(src):
        return any(_family(f.type) == _family(src) and _names_kept(src, f.type) for f in dst)
    if pa.types.is_struct(src) and not is_branches(src):
        return all(f.name in dst.names and _names_kept(f.type, dst.field(f.name).type) for f in src)
    return True


@settings(max_examples=tiers.examples(200), deadline=None)
@given(st.data(), STRUCT_TYPES, STRUCT_TYPES)
def test_cast_to_the_union_keeps_every_value(data: st.DataObject, t: pa.DataType, u: pa.DataType) -> None:
    target = union_type([t, u])
    assert union_type([target, t]) == target  # the union already holds t
    for src in (t, u):
        assert _names_kept(src, target)
        rows = data.draw(st.lists(_values(src), max_size=6))
        arr = pa.array(rows, src)
        out = cast_to(arr, target)
        out.validate(full=True)
        assert out.type == target
        assert out.to_pylist() == [_expect(v, src, target) for v in arr.to_pylist()]


@settings(max_examples=tiers.examples(100), deadline=None)
@given(st.data(), STRUCT_TYPES, STRUCT_TYPES, STRUCT_TYPES)
def test_cast_through_a_union_then_a_wider_one(
    data: st.DataObject, t: pa.DataType, u: pa.DataType, w: pa.DataType
) -> None:
    """A table type widened by a later writer: the old table's array cast again keeps every value."""
    narrow, wide = union_type([t, u]), union_type([t, u, w])
    assert union_type([narrow, w]) == wide
    arr = pa.array(data.draw(st.lists(_values(t), max_size=5)), t)
    once = cast_to(arr, narrow)
    assert cast_to(once, wide).to_pylist() == [_expect(v, narrow, wide) for v in once.to_pylist()]


def test_a_time_is_written_to_delta_as_the_text_of_its_own_unit() -> None:
    """docs/typed-tables.md, "Per output": Delta (and a Spark DataFrame) hold a time as its text, with the
    fraction in the time's unit, as the typed frame's cast writes it (issue 77 item 5: documented as
    ``HH:MM:SS.fff`` while a microsecond time was written with six digits)."""
    import datetime as dt

    import pyarrow as pa

    from logdoctor.spark.typed import format_schema

    t = dt.time(1, 2, 3, 456789)
    table = pa.table(
        {
            "ms": pa.array([t.replace(microsecond=456000)], pa.time32("ms")),
            "us": pa.array([t], pa.time64("us")),
        }
    )
    for fmt in ("delta", "spark"):
        out = table.cast(format_schema(table.schema, fmt)).to_pylist()
        assert out == [{"ms": "01:02:03.456", "us": "01:02:03.456789"}]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "typed-tables.md").read_text()
    assert "`HH:MM:SS.fff` for a time in milliseconds" in docs and "`HH:MM:SS.ffffff` in microseconds" in docs

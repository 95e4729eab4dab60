"""Avro's schema resolution of old rows to the newest schema (issue 73), against fastavro's
``schemaless_reader(writer_schema, reader_schema)``, an independent implementation of the specification:
random schema evolutions that Avro says are compatible (fields added with defaults, dropped, renamed with an
alias, promoted, enum symbols added, a type made a union, a union widened or reordered), random values
written by fastavro with the writer schema, decoded by the project with the writer schema and resolved;
evolutions Avro refuses are named as incompatible; the ../shared/typed topics."""

from __future__ import annotations

import io
import json
import math
import struct
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiers
from logdoctor.formats.registry import avro
from logdoctor.formats.registry.avro import AvroDecoder
from logdoctor.formats.registry.avro_resolve import incompatibility, resolve
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

PRIMITIVES = ("int", "long", "float", "double", "string", "bytes", "boolean")
PROMOTE = {"int": ("long", "float", "double"), "long": ("float", "double"), "float": ("double",)}
PROMOTE |= {"string": ("bytes",), "bytes": ("string",)}


def _decoder(schema: Any, schema_id: int) -> AvroDecoder:
    reg = SchemaRegistry()
    reg.schemas[schema_id] = RegisteredSchema(schema_id, "AVRO", json.dumps(schema), ())
    return AvroDecoder(reg, reg.schemas[schema_id])


# -- random schemas, evolutions and values ---------------------------------------------------------------


@st.composite
def types(draw: st.DrawFn, depth: int, names: list[str]) -> Any:
    choices = ["prim"] * 4 + ["enum", "nullable", "union"] + (["array", "map", "record"] if depth < 2 else [])
    kind = draw(st.sampled_from(choices))
    if kind == "prim":
        return draw(st.sampled_from(PRIMITIVES))
    if kind == "enum":
        names.append(f"E{len(names)}")
        symbols = draw(st.lists(st.sampled_from("ABCDEFG"), min_size=1, max_size=4, unique=True))
        return {"type": "enum", "name": names[-1], "symbols": symbols}
    if kind == "nullable":
        return ["null", draw(st.sampled_from(PRIMITIVES))]
    if kind == "union":
        return ["null", "int", "string"]
    if kind == "array":
        return {"type": "array", "items": draw(types(depth + 1, names))}
    if kind == "map":
        return {"type": "map", "values": draw(types(depth + 1, names))}
    return draw(records(depth + 1, names))


@st.composite
def records(draw: st.DrawFn, depth: int, names: list[str]) -> Any:
    names.append(f"R{len(names)}")
    name = names[-1]
    n = draw(st.integers(1, 4))
    return {
        "type": "record",
        "name": name,
        "fields": [{"name": f"f{i}", "type": draw(types(depth, names))} for i in range(n)],
    }


_DEFAULTS = [
    ("string", "US"),
    ("int", 0),
    ("long", -7),
    ("double", 1.5),
    ("boolean", True),
    ("bytes", "\u00ff\u0001"),
    (["null", "string"], None),
    (["string", "null"], "x"),
    ({"type": "array", "items": "int"}, [1, 2]),
    ({"type": "map", "values": "long"}, {"a": 1}),
]


@st.composite
def evolved(draw: st.DrawFn, schema: Any, in_union: bool = False) -> Any:
    """A reader schema Avro says every value of ``schema`` resolves to."""
    if isinstance(schema, str):
        if schema in PROMOTE and draw(st.booleans()):
            return draw(st.sampled_from(PROMOTE[schema]))
        if not in_union and draw(st.integers(0, 5)) == 0:
            return ["null", schema]
        return schema
    if isinstance(schema, list):
        if schema == ["null", "int", "string"]:
            return draw(
                st.sampled_from(
                    [
                        schema,
                        ["string", "null", "int"],
                        ["null", "long", "string"],
                        ["null", "double", "bytes"],
                    ]
                )
            )
        return ["null", draw(evolved(schema[1], in_union=True))]
    kind = schema["type"]
    if kind == "enum":
        extra = [s for s in "HIJ" if draw(st.booleans())]
        return {**schema, "symbols": schema["symbols"] + extra}
    if kind == "array":
        return {**schema, "items": draw(evolved(schema["items"]))}
    if kind == "map":
        return {**schema, "values": draw(evolved(schema["values"]))}
    fields = []
    for f in schema["fields"]:
        op = draw(st.integers(0, 9))
        if op == 0 and len(fields) + 1 < len(schema["fields"]):
            continue  # dropped
        if op == 1:
            fields.append(
                {"name": f"renamed_{f['name']}", "aliases": [f["name"]], "type": draw(evolved(f["type"]))}
            )
        else:
            fields.append({"name": f["name"], "type": draw(evolved(f["type"]))})
    for i in range(draw(st.integers(0, 2))):
        t, default = draw(st.sampled_from(_DEFAULTS))
        fields.insert(draw(st.integers(0, len(fields))), {"name": f"added{i}", "type": t, "default": default})
    return {**schema, "fields": fields}


@st.composite
def values(draw: st.DrawFn, schema: Any, named: dict[str, Any]) -> Any:
    if isinstance(schema, list):
        return draw(values(draw(st.sampled_from(schema)), named))
    if isinstance(schema, str):
        if schema in named:
            return draw(values(named[schema], named))
        return draw(
            {
                "null": st.none(),
                "int": st.integers(-(2**31), 2**31 - 1),
                "long": st.integers(-(2**63), 2**63 - 1),
                "float": st.floats(width=32, allow_nan=False),
                "double": st.floats(allow_nan=False),
                "string": st.text(max_size=8),
                "bytes": st.binary(max_size=8),
                "boolean": st.booleans(),
            }[schema]
        )
    kind = schema["type"]
    if kind == "enum":
        named[schema["name"]] = schema
        return draw(st.sampled_from(schema["symbols"]))
    if kind == "array":
        return draw(st.lists(values(schema["items"], named), max_size=3))
    if kind == "map":
        return draw(st.dictionaries(st.text(max_size=4), values(schema["values"], named), max_size=3))
    named[schema["name"]] = schema
    return {f["name"]: draw(values(f["type"], named)) for f in schema["fields"]}


# -- the comparison ----------------------------------------------------------------------------------------


def plain(value: Any, schema: Any) -> Any:
    """The project's Arrow value (``to_pylist``) as fastavro gives it: a union's branch struct unwrapped,
    a map as a dict."""
    if value is None:
        return None
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1:
            return plain(value, branches[0])
        for b in branches:
            name = b if isinstance(b, str) else b["type"]
            if value.get(name) is not None:
                return plain(value[name], b)
        return None
    if isinstance(schema, str):
        return value
    kind = schema["type"]
    if kind == "array":
        return [plain(v, schema["items"]) for v in value]
    if kind == "map":
        return {k: plain(v, schema["values"]) for k, v in value}
    if kind == "record":
        return {f["name"]: plain(value[f["name"]], f["type"]) for f in schema["fields"]}
    return value


def _f32(x: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def same(got: Any, expected: Any) -> bool:
    """Equal, a float read as a reader's float (32 bits) where fastavro keeps the double."""
    if isinstance(expected, float):
        return isinstance(got, float) and (
            got == expected or got == _f32(expected) or math.isclose(got, expected, rel_tol=1e-6)
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(same(got[k], expected[k]) for k in expected)
        )
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(map(same, got, expected))
    if isinstance(got, bytes) and isinstance(expected, str):
        return got == expected.encode("latin-1")  # fastavro keeps a bytes default as its JSON text
    return got == expected and type(got) is type(expected)


def _check_pair(writer: Any, reader: Any, data: list[Any]) -> None:
    assert incompatibility(_decoder(writer, 1).root, _decoder(reader, 2).root) is None
    payloads = []
    for d in data:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), d)
        payloads.append(buf.getvalue())
    w, r = _decoder(writer, 1), _decoder(reader, 2)
    decoded = w.decode(payloads)
    assert decoded.reasons == [None] * len(payloads)
    got = resolve(decoded.values, w.root, r.root)
    assert got.type == r.arrow_type
    got.validate(full=True)
    parsed_w, parsed_r = fastavro.parse_schema(writer), fastavro.parse_schema(reader)
    for p, value in zip(payloads, got.to_pylist(), strict=True):
        try:
            expected = fastavro.schemaless_reader(io.BytesIO(p), parsed_w, parsed_r)
        except UnicodeDecodeError:  # bytes -> string that are not UTF-8: Java reads them with U+FFFD
            assert "\ufffd" in json.dumps(value, default=str, ensure_ascii=False)
            continue
        assert same(plain(value, reader), expected), (plain(value, reader), expected)


@pytest.mark.parametrize("columns", [True, False])
@settings(
    max_examples=tiers.examples(150),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_random_compatible_evolutions_read_as_fastavro_reads(
    columns: bool, data: st.DataObject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(avro, "COLUMNS_FROM", 0 if columns else 2**62)
    writer = data.draw(records(0, []))
    reader = data.draw(evolved(writer))
    rows = data.draw(st.lists(values(writer, {}), min_size=1, max_size=5))
    _check_pair(writer, reader, rows)


def test_the_issue_case_a_field_added_with_a_default() -> None:
    v1 = {
        "type": "record",
        "name": "Customer",
        "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}],
    }
    v2 = {
        **v1,
        "fields": [
            *v1["fields"],
            {"name": "country", "type": "string", "default": "US"},
            {"name": "score", "type": "int", "default": 0},
        ],
    }
    _check_pair(v1, v2, [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    w, r = _decoder(v1, 1), _decoder(v2, 2)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(v1), {"id": 1, "name": "a"})
    got = resolve(w.decode([buf.getvalue()]).values, w.root, r.root).to_pylist()
    assert got == [{"id": 1, "name": "a", "country": "US", "score": 0}]


@pytest.mark.parametrize(
    ("writer", "reader", "sample", "why"),
    [
        ("long", "int", 2**40, "does not resolve"),
        ("string", "int", "x", "does not resolve"),
        (
            {"type": "enum", "name": "E", "symbols": ["A", "B"]},
            {"type": "enum", "name": "E", "symbols": ["A"]},
            "B",
            "lacks B",
        ),
        (
            {"type": "record", "name": "R", "fields": []},
            {"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]},
            {},
            "no default",
        ),
        (
            {"type": "record", "name": "R", "fields": []},
            {"type": "record", "name": "S", "fields": []},
            {},
            "not the reader's",
        ),
        (
            {"type": "fixed", "name": "F", "size": 2},
            {"type": "fixed", "name": "F", "size": 3},
            b"ab",
            "bytes",
        ),
        (["null", "string"], "string", None, "null"),
    ],
)
def test_what_avro_refuses_is_incompatible(writer: Any, reader: Any, sample: Any, why: str) -> None:
    """Named as incompatible here; fastavro refuses to read the sample with that pair too."""
    w, r = _decoder(writer, 1), _decoder(reader, 2)
    found = incompatibility(w.root, r.root)
    assert found is not None and why in found
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), sample)
    with pytest.raises(fastavro.read.SchemaResolutionError):
        fastavro.schemaless_reader(
            io.BytesIO(buf.getvalue()), fastavro.parse_schema(writer), fastavro.parse_schema(reader)
        )


def test_an_enum_symbol_the_reader_lacks_takes_its_default() -> None:
    w_schema = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
    r_schema = {"type": "enum", "name": "E", "symbols": ["A", "Z"], "default": "Z"}
    _check_pair(w_schema, r_schema, ["A", "B", "C"])


def test_values_of_a_general_union_resolve_branch_by_branch() -> None:
    w_schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "u", "type": ["null", "int", "string", "bytes"]}],
    }
    r_schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["double", "null", "bytes"]}]}
    _check_pair(w_schema, r_schema, [{"u": None}, {"u": 3}, {"u": "é"}, {"u": b"\xff"}])


def test_pa_types_of_the_reader() -> None:
    r = _decoder({"type": "record", "name": "R", "fields": [{"name": "x", "type": "long"}]}, 2)
    assert r.arrow_type == pa.struct([("x", pa.int64())])


def test_a_union_branch_of_the_same_type_wins_over_a_promotion_as_in_java() -> None:
    """Java's ``ResolvingGrammarGenerator.bestBranch`` takes the reader's branch of the writer's own type
    before any promotion (an int into ``["double", "int"]`` stays an int); fastavro takes the first branch
    the value can be promoted to, the double: here Java is followed."""
    w = _decoder({"type": "record", "name": "R", "fields": [{"name": "u", "type": "int"}]}, 1)
    r_schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "double", "int"]}]}
    r = _decoder(r_schema, 2)
    got = resolve(w.decode([b"\x06"]).values, w.root, r.root).to_pylist()
    assert got == [{"u": {"double": None, "int": 3}}]

"""Hostile JSON values (issue 75 items 5 and 11, and its property test of the JSON decoders): a number no
value holds (an integer past Python's 4,300 digits; ``1e99999999999999999999`` read as a decimal) and a lone
UTF-16 surrogate escape (``"\\ud800"``) make a reason, never an exception, in the JSON Schema and Kafka
Connect JSON decoders, in ``dump --print-data`` and so in ``export --typed``. For any bytes, each decoder
gives a value or a reason, in bounded time, and agrees with the standard library's ``json`` (the oracle: what
it reads as Unicode text, the decoder decodes to the same value; what it refuses, the decoder refuses)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import crafted_topics as ct
import pytest
import typed_fuzz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.formats.registry.connect_json import ConnectJsonDecoder
from logdoctor.formats.registry.json_schema import JsonSchemaDecoder
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, REASONS
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

BIG_INT = b"1" * 5000
HUGE_EXPONENT = b"1e99999999999999999999"
LONE = (b'"a\\ud800"', b'"\\udc00b"', b'{"\\ud83d": 1}', b'["x", ["\\ud83d"]]')
PAIR = b'"\\ud83d\\ude00"'  # an emoji escaped as its surrogate pair: one character


def _json_schema(schema: object) -> JsonSchemaDecoder:
    return JsonSchemaDecoder(SchemaRegistry(), RegisteredSchema(1, "JSON", json.dumps(schema), (), "s", 1))


def _connect(connect_type: str) -> ConnectJsonDecoder:
    return ConnectJsonDecoder(json.dumps({"type": connect_type, "optional": True}))


def _envelope(connect_type: str, payload: bytes) -> bytes:
    return b'{"schema":{"type":"' + connect_type.encode() + b'","optional":true},"payload":' + payload + b"}"


@pytest.mark.parametrize("schema", [{}, {"type": "number"}, {"type": "integer"}, {"type": "string"}])
def test_json_schema_numbers_and_surrogates_are_reasons(schema) -> None:
    d = _json_schema(schema)
    got = d.decode([BIG_INT, b"[" + BIG_INT + b"]", *LONE, b"[" + BIG_INT])
    assert got.reasons[: 2 + len(LONE)] == [DECODE_ERROR_SCHEMA_MISMATCH] * (2 + len(LONE))
    assert got.reasons[-1] in REASONS  # cut short: truncated, never an exception
    if schema.get("type") in (None, "string"):
        out = d.decode([PAIR])
        assert out.reasons == [None] and "\U0001f600" in str(out.values[0].as_py())


def test_json_schema_number_past_a_double_is_infinity_as_jackson_reads_it() -> None:
    got = _json_schema({"type": "number"}).decode([HUGE_EXPONENT, b"-" + HUGE_EXPONENT])
    assert got.reasons == [None, None] and got.values.to_pylist() == [float("inf"), float("-inf")]


@pytest.mark.parametrize("connect_type", ["string", "float64", "int64"])
def test_connect_json_numbers_and_surrogates_are_reasons(connect_type: str) -> None:
    d = _connect(connect_type)
    payloads = [_envelope(connect_type, p) for p in (BIG_INT, HUGE_EXPONENT, *LONE)]
    got = d.decode(payloads)
    assert all(r in REASONS for r in got.reasons), got.reasons


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("json") / "kafka-logs"
    schema = {
        "type": "object",
        "title": "T",
        "properties": {"n": {"type": "number"}, "s": {"type": "string"}},
    }
    ct.write_partition(root, "_schemas", 0, [ct.schema_record("t-value", 1, 1, schema)])
    values = [b'{"n": ' + BIG_INT + b', "s": "a"}', b'{"n": 1, "s": "a\\ud800"}', b'{"n": 2, "s": "ok"}']
    ct.write_partition(root, "t", 0, [(b"k", ct.framed(1, v)) for v in values])
    envelopes = [
        _envelope("string", b'"a\\ud800"'),
        _envelope("float64", HUGE_EXPONENT),
        _envelope("string", b'"ok"'),
    ]
    ct.write_partition(root, "c", 0, [(b"k", e) for e in envelopes])
    return root


@pytest.mark.parametrize("topic", ["t", "c"])
def test_dump_prints_every_record(logs: Path, topic: str) -> None:
    r = CliRunner().invoke(app, ["dump", "--json", "--print-data", str(logs / f"{topic}-0" / ct.SEGMENT)])
    assert r.exit_code == 0, r.output  # was 70 after the first record
    records = [json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"type":"record"')]
    assert [e["offset"] for e in records] == [0, 1, 2]
    assert [e["decoded"].get("reason") is not None for e in records] == [True, True, False]
    assert records[2]["decoded"]["value"] in ({"n": 2.0, "s": "ok"}, "ok")


# --- the property: any bytes --------------------------------------------------------------------------

_SCHEMAS = [
    {},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {}}},
    {"type": "array", "items": {"type": "number"}},
    {"type": "string"},
]
_DECODERS = [_json_schema(s) for s in _SCHEMAS]
_SURROGATE = re.compile("[\ud800-\udfff]")
_texts = st.one_of(
    st.binary(max_size=200),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
        lambda kids: st.one_of(
            st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)
        ),
        max_leaves=12,
    ).map(lambda v: json.dumps(v).encode()),
)


def _mutate(data: bytes, cut: int, insert: bytes) -> bytes:
    at = cut % (len(data) + 1)
    return data[:at] + insert + data[at:]


REFUSED = object()


def _oracle(payload: bytes):
    """What ``json`` reads (REFUSED: it refuses the bytes, or their text is no Unicode)."""
    try:
        value = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError, int()'s digit limit
        return REFUSED
    return REFUSED if _SURROGATE.search(json.dumps(value, ensure_ascii=False)) else value


# 4 x FUZZ_EXAMPLES in `make fuzz`: one payload an example (tests/typed/typed_fuzz.py)
@settings(
    max_examples=typed_fuzz.examples(300, 4), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    _texts,
    st.integers(0, 300),
    st.sampled_from([b"", b'"\\ud800"', b"9" * 4400, b"1e99999999999999999999", b"[" * 3000, b"\xff", b'"']),
)
@typed_fuzz.timed
def test_any_bytes_give_a_value_or_a_reason(base: bytes, cut: int, insert: bytes) -> None:
    payload = _mutate(base, cut, insert)
    typed_fuzz.payloads(1)
    want = _oracle(payload)
    for schema, d in zip(_SCHEMAS, _DECODERS, strict=True):
        started = time.perf_counter()
        got = d.decode([payload])
        assert time.perf_counter() - started < 2.0
        assert got.reasons[0] is None or got.reasons[0] in REASONS
        if want is REFUSED:
            assert got.reasons[0] is not None, payload[:80]
        elif not schema and want is not None:  # any JSON: the value as its text, which json reads the same
            assert got.reasons[0] is None and json.loads(got.values[0].as_py()) == want
    envelope = b'{"schema":{"type":"string","optional":true},"payload":' + payload + b"}"
    started = time.perf_counter()
    got = _connect("string").decode([envelope])
    assert time.perf_counter() - started < 2.0
    assert got.reasons[0] is None or got.reasons[0] in REASONS
    if got.reasons[0] is None:
        assert want is not REFUSED and got.values[0].as_py() == want

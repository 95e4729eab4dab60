"""The Avro decoder's property (issue 75): for any bytes, with the registered Avro schemas of ../shared/typed
and random schemas, each of its two readers gives a value or a reason, never a traceback, in bounded time;
a payload it decodes, fastavro (an independent decoder) reads too, to the same value, using every byte."""

from __future__ import annotations

import io
import json
import math
import time
from typing import Any

import avro_oracle as oracle
import fastavro
import pytest
import typed_fuzz
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_avro_resolution import _decoder, plain, records, same, values

from logdoctor.formats.registry import avro
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED

REASONS = {None, DECODE_ERROR_TRUNCATED, DECODE_ERROR_SCHEMA_MISMATCH}
SETTINGS = settings(
    max_examples=typed_fuzz.examples(200),  # FUZZ_EXAMPLES in `make fuzz`
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@st.composite
def mutated(draw: st.DrawFn, valid: bytes) -> bytes:
    """A valid payload with bytes flipped, cut, inserted or repeated; or random bytes."""
    how = draw(st.sampled_from(["flip", "cut", "insert", "random", "as is"]))
    data = bytearray(valid)
    if how == "flip" and data:
        for _ in range(draw(st.integers(1, 3))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    elif how == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "insert":
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(min_size=1, max_size=10))
    elif how == "random":
        data = bytearray(draw(st.binary(max_size=64)))
    return bytes(data)


def _decode_both(decoder: Any, payloads: list[bytes], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    typed_fuzz.payloads(len(payloads))
    out = []
    for columns_from in (0, 2**62):
        monkeypatch.setattr(avro, "COLUMNS_FROM", columns_from)
        t = time.perf_counter()
        got = decoder.decode(payloads)
        assert time.perf_counter() - t < 10 + 0.01 * sum(map(len, payloads))
        assert set(got.reasons) <= REASONS
        assert len(got.values) == len(payloads)
        out.append((_rows(got.values), got.reasons))
    # the column decoder and the one-at-a-time reader agree on every value and on which payloads they
    # refuse; a payload damaged in two places may be refused for either damage (the column decoder checks
    # some values, UTF-8 and uuids among them, over the whole column after reading it: a truncation further
    # on is then found first), so the reasons of refused payloads need only both be reasons
    assert out[0][0] == out[1][0]
    assert [r is None for r in out[0][1]] == [r is None for r in out[1][1]]
    return out[0]


def _rows(values: Any) -> Any:
    """``values.to_pylist()`` with every NaN as the text ``"NaN"`` (NaN != NaN: two reads of one float
    payload would differ), or the Arrow array itself where a value has no Python form (a ``date`` past year
    9999 or before year 1, which Arrow's date32 holds and Python's ``datetime.date`` does not). Both found by
    `make fuzz`."""
    try:
        return _nan_free(values.to_pylist())
    except (OverflowError, ValueError):
        return values


def _nan_free(value: Any) -> Any:
    """``value`` with every float NaN as the text ``"NaN"``, so that equality sees two NaNs as one value."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [_nan_free(v) for v in value]
    if isinstance(value, dict):
        return {k: _nan_free(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_nan_free(v) for v in value)
    return value


def _as_java(value: Any, schema: Any) -> Any:
    """fastavro's value as Java's BinaryDecoder reads the same bytes: an ``int`` in 5 bytes whose last byte
    sets bits past 32 (``80 80 80 80 10``) wraps in Java's ``readInt`` (the shift overflows an int: 0, where
    fastavro reads 2147483648), a ``long`` in 10 bytes in ``readLong`` alike; the decoder reads as Java does
    (found by `make fuzz`). Any other value is fastavro's."""
    if isinstance(schema, list):
        if isinstance(value, int) and not isinstance(value, bool):
            kind = "long" if "long" in schema else "int" if "int" in schema else None
            return value if kind is None else _as_java(value, kind)
        return value
    if schema in ("int", "long") and isinstance(value, int) and not isinstance(value, bool):
        bits = 32 if schema == "int" else 64
        if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            return value
        raw = (2 * value if value >= 0 else -2 * value - 1) % 2**bits  # the varint, cut to Java's width
        return (raw >> 1) ^ -(raw & 1)
    if not isinstance(schema, dict):
        return value
    kind = schema["type"]
    if kind == "array" and isinstance(value, list):
        return [_as_java(v, schema["items"]) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _as_java(v, schema["values"]) for k, v in value.items()}
    if kind == "record" and isinstance(value, dict):
        return {f["name"]: _as_java(value.get(f["name"]), f["type"]) for f in schema["fields"]}
    return value


@SETTINGS
@given(data=st.data())
@typed_fuzz.timed
def test_any_bytes_of_a_random_schema(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = data.draw(records(0, []))
    parsed = fastavro.parse_schema(schema)
    payloads = []
    for value in data.draw(st.lists(values(schema, {}), min_size=1, max_size=4)):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, value)
        payloads.append(data.draw(mutated(buf.getvalue())))
    got, reasons = _decode_both(_decoder(schema, 1), payloads, monkeypatch)
    for p, value, reason in zip(payloads, got, reasons, strict=True):
        if reason is not None:
            continue
        stream = io.BytesIO(p)
        expected = _nan_free(_as_java(fastavro.schemaless_reader(stream, parsed, parsed), schema))
        assert stream.tell() == len(p)
        assert same(plain(value, schema), expected), (plain(value, schema), expected)


@pytest.mark.realworld
@SETTINGS
@given(data=st.data())
@typed_fuzz.timed
def test_any_bytes_of_the_registered_schemas(data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    oracle.require()
    registry = oracle.registry()
    ids = sorted(i for i, s in registry.schemas.items() if s.schema_type == "AVRO")
    schema_id = data.draw(st.sampled_from(ids))
    samples = _samples().get(schema_id) or [b""]
    payloads = [
        data.draw(mutated(data.draw(st.sampled_from(samples)))) for _ in range(data.draw(st.integers(1, 4)))
    ]
    decoder = avro.AvroDecoder(registry, registry.schemas[schema_id])
    _, reasons = _decode_both(decoder, payloads, monkeypatch)
    parsed = fastavro.parse_schema(json.loads(registry.schemas[schema_id].schema))
    # a uuid is a string to Java's generic reader (no conversion registered: the text as written), and to
    # the decoder; fastavro parses it into a UUID and refuses text that is none: read it as Java does. So
    # is every logical type (the int or long as written): a `date` before year 1 or past 9999 is valid
    # Avro, which Python's datetime cannot hold (found by `make fuzz`); only the bytes read are checked here
    from fastavro import _read as fast_read
    from fastavro import read as slow_read

    for readers in (slow_read.LOGICAL_READERS, fast_read.LOGICAL_READERS):
        for name in list(readers):
            monkeypatch.setitem(readers, name, lambda data, *_args: data)
    for p, reason in zip(payloads, reasons, strict=True):
        if reason is None:  # fastavro reads it too, every byte
            stream = io.BytesIO(p)
            fastavro.schemaless_reader(stream, parsed, parsed)
            assert stream.tell() == len(p)


_SAMPLES: dict[int, list[bytes]] = {}


def _samples() -> dict[int, list[bytes]]:
    if not _SAMPLES:
        for topic in ("orders", "mixed", "dbserver1.inventory.customers"):
            for _, _, key, value in oracle.records(topic):
                for data in (key, value):
                    f = oracle.framed(data)
                    if f is not None and len(_SAMPLES.setdefault(f[0], [])) < 20:
                        _SAMPLES[f[0]].append(f[1])
    return _SAMPLES

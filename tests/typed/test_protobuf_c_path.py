"""The C decoder of Protobuf payloads (formats/registry/protobuf_plan.py, ``_speedups.pb_decode``; issue 76)
against protobuf's own parser (the ``protobuf`` package, the independent decoder), on random messages of a
schema with every kind of field it covers (tests/typed/protobuf_every_kind.py), written by protobuf's own
classes, some merged end to end, mutated, and random bytes: where protobuf parses a payload the value is what
protobuf read (through the type mapping, as tests/typed/test_protobuf_property.py checks it), where it
refuses one the reason is truncated or schema mismatch; and the whole batch (values and reasons) is what the
Python reader alone gives, malformed payloads included (the C decoder refuses them and the Python reader
reads them).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import protobuf_every_kind as every
import pyarrow as pa
import pytest
import typed_fuzz
from hypothesis import given, settings
from hypothesis import strategies as st
from test_protobuf_property import check, mutated

from logdoctor.formats import extension
from logdoctor.formats.registry.protobuf import ProtobufDecoder
from logdoctor.formats.registry.protobuf_plan import plan_of
from logdoctor.formats.registry.protobuf_schema import compile_schema

pytestmark = pytest.mark.skipif(
    extension.load() is None or not hasattr(extension.load(), "pb_decode"),
    reason="the C extension is not built",
)


@pytest.fixture(scope="module")
def decoders() -> tuple[ProtobufDecoder, ProtobufDecoder, type]:
    """The decoder of ``every.All`` with the C decoder in front, the Python reader's alone, the class."""
    reg, schema = every.registry()
    fast = ProtobufDecoder(reg, schema, every.INDEXES)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOGDOCTOR_PURE_PYTHON", "1")
        slow = ProtobufDecoder(reg, schema, every.INDEXES)
    return fast, slow, compile_schema(reg, schema).message_class(list(every.INDEXES))


def test_the_c_decoder_reads_every_kind_of_field_it_covers(decoders) -> None:
    fast, slow, message_class = decoders
    assert fast._read.__name__ == "read_fast" and slow._read.__name__ != "read_fast"
    compiled, struct_type, _ = plan_of(message_class.DESCRIPTOR)
    assert struct_type == fast.arrow_type
    payloads = every.messages(message_class, 76, 120, invalid=0.0)
    # the C decoder reads every valid message itself (none left to the Python reader)
    _, refused = extension.load().pb_decode(compiled, payloads)
    assert not any(refused)
    check(fast, message_class, payloads)
    assert same(fast.decode(payloads).values, slow.decode(payloads).values)


def test_payloads_the_c_decoder_refuses_get_the_python_readers_value_or_reason(decoders) -> None:
    fast, slow, message_class = decoders
    valid = every.messages(message_class, 7, 40)
    # a string that is not UTF-8 (p_string is field 40), a group, a cut, a wire type 7, a bad packed length,
    # an invalid Timestamp (ts: seconds past 9999), a map entry holding an unknown field (upb moves the entry
    # to the message's unknown fields: not in the map)
    ts = message_class.DESCRIPTOR.fields_by_name["ts"].number
    p_string = message_class.DESCRIPTOR.fields_by_name["p_string"].number
    m_string = message_class.DESCRIPTOR.fields_by_name["m_string"].number
    odd = [
        _tag(p_string, 2) + b"\x05ab",
        _tag(p_string, 2) + b"\x02\xc3\x28",
        _tag(p_string, 3) + _tag(p_string, 4),
        valid[0][:-1] if valid[0] else b"\x08",
        b"\x0f",
        _tag(message_class.DESCRIPTOR.fields_by_name["r_fixed32"].number, 2) + b"\x03\x00\x00\x00",
        _tag(ts, 2) + b"\x06\x08\x80\xc0\xb0\xd6\xea\x07",
        _tag(m_string, 2) + b"\x07\x0a\x01a\x10\x02\x18\x05",
    ]
    batch = [p for pair in zip(valid, odd * 6, strict=False) for p in pair]
    a, b = fast.decode(batch), slow.decode(batch)
    assert a.reasons == b.reasons and same(a.values, b.values)
    assert sum(r is not None for r in a.reasons) >= 5
    check(fast, message_class, batch)


def same(a: pa.Array, b: pa.Array) -> bool:
    """The same Arrow type and values (NaN equal to NaN, -0.0 not equal to 0.0: floats by their repr)."""
    return a.type == b.type and _plain(a.to_pylist()) == _plain(b.to_pylist())


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _tag(number: int, wire_type: int) -> bytes:
    value, out = number << 3 | wire_type, bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@settings(max_examples=typed_fuzz.examples(25), deadline=None)
@given(data=st.data())
@typed_fuzz.timed
def test_the_c_decoder_agrees_with_protobuf_on_any_bytes(decoders, data) -> None:
    fast, slow, message_class = decoders
    seed = data.draw(st.integers(0, 2**32), label="seed")
    valid = every.messages(message_class, seed, 6, invalid=data.draw(st.sampled_from([0.0, 0.3])))
    source = st.one_of(
        st.sampled_from(valid), st.sampled_from(valid).flatmap(mutated), st.binary(max_size=200)
    )
    payloads = data.draw(st.lists(source, min_size=1, max_size=10), label="payloads")
    check(fast, message_class, payloads)
    a, b = fast.decode(payloads), slow.decode(payloads)
    assert a.reasons == b.reasons
    assert same(a.values, b.values)


def test_a_batch_of_the_c_decoder_has_the_python_readers_columns_exactly(decoders) -> None:
    """Column by column (types, nulls, values), on one batch of 600 random messages."""
    fast, slow, message_class = decoders
    payloads = every.messages(message_class, random.Random(3).randrange(2**32), 600, invalid=0.05)
    a, b = fast.decode(payloads), slow.decode(payloads)
    assert a.reasons == b.reasons
    for name in a.values.type.names:
        x, y = a.values.field(name), b.values.field(name)
        assert same(x, y), name
    assert np.array_equal(a.values.is_null(), b.values.is_null())

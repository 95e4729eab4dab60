"""The typed export's per-row writer lookup (logdoctor.spark.typed._Resolver) keeps the frames it has seen:
on ../shared/typed's ``payments`` values (Protobuf: message indexes ``[0]`` and ``[1]`` after the id) every
value resolves to the schema id and message-index path facts/records.jsonl gives, and a value whose
message indexes are cut short does not stand for the values of the same id after it."""

from __future__ import annotations

import struct
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

import tiers
import typed_facts as tf
from logdoctor.formats.registry.reasons import DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.writers import Resolved, writer_of
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.schemas_store import load_registry, store_records
from logdoctor.spark.typed import _Resolver


@cache
def _registry():
    return load_registry([str(tf.logs())]).registry


@cache
def _values(topic: str) -> dict[int, bytes | None]:
    [ref] = discover([str(tf.logs() / f"{topic}-0")])
    problems: list[str] = []
    out = {offset: value for offset, _key, value in store_records(ref, problems)}
    assert not problems
    return out


def test_payments_resolve_as_the_facts() -> None:
    registry = load_registry([str(tf.logs())]).registry
    values = _values("payments")
    facts = tf.data_records("payments")
    assert {tuple(f["message_indexes"]) for f in facts} == {(0,), (1,)}
    resolver = _Resolver(registry)
    offsets = sorted(values)
    got = resolver.column([values[o] for o in offsets], None)
    by_offset = dict(zip(offsets, got, strict=True))
    for fact in facts:
        r = by_offset[fact["offset"]]
        assert isinstance(r, Resolved), (fact["offset"], r)
        assert r.writer.schema_id == fact["schema_id"]
        assert list(r.writer.message_indexes) == fact["message_indexes"], fact["offset"]
        assert r.payload == 6 if fact["message_indexes"] == [0] else r.payload == 7


def test_cut_short_indexes_are_not_kept_for_the_next_values() -> None:
    registry = load_registry([str(tf.logs())]).registry
    value = _values("payments")[0]
    assert value is not None and value[:6] == b"\x00\x00\x00\x00\x04\x00"
    resolver = _Resolver(registry)
    cut = value[:5]  # the id, then nothing: the message indexes end early
    multi = value[:5] + b"\x04\x02\x00" + value[6:]  # [1, 0]: not kept (more than one index)
    got = resolver.column([cut, value, value, multi, cut], None)
    assert got[0] == DECODE_ERROR_TRUNCATED and got[4] == DECODE_ERROR_TRUNCATED
    assert isinstance(got[1], Resolved) and got[1].writer.message_indexes == (0,) and got[1].payload == 6
    assert got[2] == got[1]
    assert isinstance(got[3], Resolved) and got[3].writer.message_indexes == (1, 0) and got[3].payload == 8


def _real_values() -> list[bytes]:
    out = []
    for topic in ("payments", "orders", "mixed", "clicks"):
        out += [v for v in _values(topic).values() if v is not None][:60]
    return out


@settings(max_examples=tiers.examples(150), deadline=None)
@given(st.data())
def test_a_whole_column_resolves_as_writer_of_row_by_row(data: st.DataObject) -> None:
    """_Resolver.frames (the frames found over the whole column, in C where built, then writer_of once per
    distinct frame) gives every row what writer_of gives it alone: real values of ../shared/typed (Avro,
    Protobuf with paths [0] and [1], Connect JSON, no frame), cut short, with their message-index path
    replaced, with an id of another schema, with a schema-id header, and nulls."""
    from logdoctor.formats import native

    registry = _registry()
    real = _real_values()
    path = st.lists(st.integers(-3, 3), max_size=3).map(
        lambda ix: bytes([len(ix) * 2]) + bytes(i * 2 if i >= 0 else -2 * i - 1 for i in ix)
    )

    def mutate(t: tuple[int, int, int, bytes]) -> bytes:
        kind, pick, n, extra = t
        v = real[pick % len(real)]
        if kind == 1:
            return v[: n % (len(v) + 1)]
        if kind == 2 and v[:1] == b"\x00" and len(v) > 6:
            return v[:5] + extra + v[6:]
        if kind == 3 and v[:1] == b"\x00":
            return b"\x00" + struct.pack(">i", n % 6) + v[5:]
        return v

    element = st.one_of(
        st.none(), st.tuples(st.integers(0, 3), st.integers(0, 10**6), st.integers(0, 300), path).map(mutate)
    )
    header = st.one_of(
        st.none(),
        st.tuples(st.integers(0, 6), st.one_of(st.just(b""), path)).map(
            lambda t: b"\x00" + struct.pack(">i", t[0]) + t[1]
        ),
    )
    values = data.draw(st.lists(element, max_size=60))
    headers = data.draw(st.one_of(st.none(), st.lists(header, min_size=len(values), max_size=len(values))))
    want = [writer_of(v, None if headers is None else headers[i], registry) for i, v in enumerate(values)]
    for speedups in (native.speedups, None):
        saved, native.speedups = native.speedups, speedups
        try:
            assert _Resolver(registry).column(values, headers) == want
        finally:
            native.speedups = saved


@settings(max_examples=tiers.examples(60), deadline=None)
@given(st.data())
def test_payloads_as_spans_decode_as_the_same_bytes(data: st.DataObject) -> None:
    """A writer's payloads handed over as spans of one buffer (results.Payloads: the C Protobuf decoder and
    the Avro column decoder read them in place) decode to exactly what the same payloads as bytes give:
    real values of ../shared/typed's Protobuf and Avro writers, some cut short, in any order."""
    import numpy as np

    from logdoctor.formats.registry.results import Payloads
    from logdoctor.formats.registry.writers import Decoders

    registry = _registry()
    decoders = Decoders(registry)
    topic = data.draw(st.sampled_from(["payments", "orders"]))
    resolved = [(v, writer_of(v, None, registry)) for v in _values(topic).values() if v is not None]
    resolved = [(v, r) for v, r in resolved if isinstance(r, Resolved)]
    writer = data.draw(st.sampled_from(sorted({r.writer for _, r in resolved}, key=lambda w: w.sort_key())))
    mine = [v[r.payload :] for v, r in resolved if r.writer == writer]
    size = data.draw(st.sampled_from([(0, 20), (64, 130)]))  # the Avro decoder's rows and columns alike
    pick = st.tuples(st.integers(0, len(mine) - 1), st.integers(0, 400))
    picks = data.draw(st.lists(pick, min_size=size[0], max_size=size[1]))
    payloads = [mine[i][: None if cut > 200 else cut] for i, cut in picks]
    gap = data.draw(st.binary(max_size=3))  # bytes between the spans: never read
    buf, starts, ends = bytearray(gap), [], []
    for p in payloads:
        starts.append(len(buf))
        buf += p
        ends.append(len(buf))
        buf += gap
    spans = Payloads(bytes(buf), np.array(starts, np.int64), np.array(ends, np.int64))
    assert spans.as_list() == payloads
    dec = decoders.get(writer)
    want, got = dec.decode(payloads), dec.decode(spans)
    assert got.reasons == want.reasons
    assert got.values.equals(want.values)

"""The typed export's per-row writer lookup (logdoctor.spark.typed._Resolver) keeps the frames it has seen:
on ../shared/typed's ``payments`` values (Protobuf: message indexes ``[0]`` and ``[1]`` after the id) every
value resolves to the schema id and message-index path facts/records.jsonl gives, and a value whose
message indexes are cut short does not stand for the values of the same id after it."""

from __future__ import annotations

import typed_facts as tf
from logdoctor.formats.registry.reasons import DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.writers import Resolved
from logdoctor.logdir.discovery import discover
from logdoctor.logdir.schemas_store import load_registry, store_records
from logdoctor.spark.typed import _Resolver


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

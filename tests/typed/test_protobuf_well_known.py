"""Protobuf's well-known time types whose value protobuf calls invalid (issue 75, item 2).

A ``google.protobuf.Timestamp`` with nanos 1,500,000,000 was decoded 1.5 s later than its seconds say, with no
reason; one in a field rendered as JSON text (a recursion) raised protobuf's ValueError out of the decoder.
Protobuf's own rules are the oracle: its JSON mapping refuses exactly the invalid values
(``json_format.MessageToJson``: Python's ``_CheckTimestampValid`` / ``_CheckDurationValid``, the rules of
timestamp.proto and duration.proto, as Java's ``Timestamps.checkValid``), and ``ToMicroseconds`` gives the
value of a valid one.
"""

from __future__ import annotations

import random

import pytest
from google.protobuf import json_format

from logdoctor.formats.registry.protobuf import ProtobufDecoder
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

TEXT = """syntax = "proto3";
package wk;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message Event {
  string name = 1;
  google.protobuf.Timestamp at = 2;
  google.protobuf.Duration took = 3;
  repeated google.protobuf.Timestamp history = 4;
  map<string, google.protobuf.Duration> laps = 5;
  Event parent = 6;
  message Inner { google.protobuf.Timestamp seen = 1; }
  repeated Inner inners = 7;
}
"""

TS_MIN, TS_MAX = -62_135_596_800, 253_402_300_799
DU_MAX = 315_576_000_000

#: (seconds, nanos) of Timestamps: the edges of the range and past them
TIMESTAMPS = [
    (0, 0), (0, 1_500_000_000), (0, -1), (0, 999_999_999), (0, 1_000_000_000), (TS_MIN, 0), (TS_MIN - 1, 0),
    (TS_MAX, 999_999_999), (TS_MAX + 1, 0), (-1, 500), (10**13, 0), (-(2**63), 0), (2**63 - 1, 2**31 - 1),
]  # fmt: skip
#: (seconds, nanos) of Durations: signs, edges, past them
DURATIONS = [
    (0, 0), (1, -1), (-1, 1), (-1, -1), (0, -5), (0, 5), (0, -1_500), (-2, -999_999_999),
    (0, 1_000_000_000), (0, -1_000_000_000), (DU_MAX, 999_999_999), (DU_MAX + 1, 0), (-DU_MAX, -999_999_999),
    (-DU_MAX - 1, 0), (2**63 - 1, 0),
]  # fmt: skip


@pytest.fixture(scope="module")
def decoder() -> ProtobufDecoder:
    reg = SchemaRegistry()
    reg.schemas[1] = RegisteredSchema(1, "PROTOBUF", TEXT, (), "wk-value", 1, (("wk-value", 1),))
    return ProtobufDecoder(reg, reg.by_id(1), (0,))


@pytest.fixture(scope="module")
def event(decoder: ProtobufDecoder) -> type:
    return compile_schema(decoder._registry, decoder._schema).message_class([0])


def _protobuf_valid(message: object) -> bool:
    try:
        json_format.MessageToJson(message)
    except (ValueError, json_format.Error):
        return False
    return True


def _expected(message) -> dict | None:
    """What the decoder must give for ``message`` (None: the record is rejected), by protobuf's own API."""
    if not _protobuf_valid(message):
        return None
    return _plain(message)


def _plain(m) -> dict:
    return {
        "name": m.name,
        "at": m.at.ToMicroseconds() if m.HasField("at") else None,
        "took": m.took.ToMicroseconds() if m.HasField("took") else None,
        "history": [t.ToMicroseconds() for t in m.history],
        "laps": sorted((k, v.ToMicroseconds()) for k, v in m.laps.items()),
        "parent": None
        if not m.HasField("parent")
        else json_format.MessageToDict(m.parent, preserving_proto_field_name=True),
        "inners": [{"seen": i.seen.ToMicroseconds() if i.HasField("seen") else None} for i in m.inners],
    }


def _got(value: dict | None) -> dict | None:
    """The decoder's Arrow value in :func:`_plain`'s terms (timestamps and durations in microseconds)."""
    if value is None:
        return None
    import datetime as dt

    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

    def us_ts(v):
        return None if v is None else (v - epoch) // dt.timedelta(microseconds=1)

    def us_du(v):
        return None if v is None else v // dt.timedelta(microseconds=1)

    import json

    return {
        "name": value["name"],
        "at": us_ts(value["at"]),
        "took": us_du(value["took"]),
        "history": [us_ts(v) for v in value["history"]],
        "laps": sorted((k, us_du(v)) for k, v in value["laps"]),
        "parent": None if value["parent"] is None else json.loads(value["parent"]),
        "inners": [{"seen": us_ts(i["seen"])} for i in value["inners"]],
    }


def _messages(event: type) -> list:
    out = []
    for s, n in TIMESTAMPS:
        m = event(name="at")
        m.at.seconds, m.at.nanos = s, n
        out.append(m)
        m = event(name="history")
        m.history.add(seconds=1)
        m.history.add(seconds=s, nanos=n)
        out.append(m)
        m = event(name="inner")
        m.inners.add()
        seen = m.inners.add().seen
        seen.seconds, seen.nanos = s, n
        out.append(m)
        m = event(name="parent")  # the recursion: JSON text
        m.parent.at.seconds, m.parent.at.nanos = s, n
        out.append(m)
    for s, n in DURATIONS:
        m = event(name="took")
        m.took.seconds, m.took.nanos = s, n
        out.append(m)
        m = event(name="laps")
        m.laps["a"].seconds = 2
        m.laps["b"].seconds, m.laps["b"].nanos = s, n
        out.append(m)
    return out


def test_each_value_alone_is_rejected_exactly_where_protobuf_calls_it_invalid(decoder, event) -> None:
    invalid = 0
    for message in _messages(event):
        expected = _expected(message)
        out = decoder.decode([message.SerializeToString()])
        if expected is None:
            invalid += 1
            assert out.reasons == [DECODE_ERROR_SCHEMA_MISMATCH], message
            assert out.values.to_pylist() == [None]
        else:
            assert out.reasons == [None], message
            assert _got(out.values.to_pylist()[0]) == expected, message
    assert invalid == 4 * 8 + 2 * 7  # 8 invalid Timestamps, 7 invalid Durations


def test_the_issues_case_nanos_of_one_and_a_half_seconds(decoder, event) -> None:
    bad, good = event(name="x"), event(name="y")
    bad.at.seconds, bad.at.nanos = 1_700_000_000, 1_500_000_000
    good.at.seconds, good.at.nanos = 1_700_000_000, 500_000_000
    out = decoder.decode([bad.SerializeToString(), good.SerializeToString()])
    assert out.reasons == [DECODE_ERROR_SCHEMA_MISMATCH, None]
    assert _got(out.values.to_pylist()[1])["at"] == 1_700_000_000_500_000


def test_invalid_values_among_many_in_one_batch(decoder, event) -> None:
    """The batch is halved to find the payloads holding an invalid value: every other payload keeps its value,
    whatever the batch's size and the invalid ones' places."""
    messages = _messages(event)
    rng = random.Random(75)
    for size in (1, 2, 3, 17, 256):
        for _ in range(4):
            batch = [rng.choice(messages) for _ in range(size)]
            out = decoder.decode([m.SerializeToString() for m in batch])
            for message, reason, value in zip(batch, out.reasons, out.values.to_pylist(), strict=True):
                expected = _expected(message)
                assert reason == (DECODE_ERROR_SCHEMA_MISMATCH if expected is None else None)
                assert _got(value) == expected

"""Debezium's envelope, semantic types, placeholder forms and source positions on Arrow.

Expected values are written out by hand from Debezium's definitions (the Java classes cited in
logdoctor.formats.registry.debezium) and, for the placeholder's forms, from the constants of Debezium's own
tests (debezium-connector-postgres' DecoderDifferences.java).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal

import pyarrow as pa
import pytest

from logdoctor.formats.registry import debezium


def _field(name: str, typ: pa.DataType, semantic: str) -> pa.Field:
    return pa.field(name, typ, metadata={b"connect.name": semantic.encode(), b"connect.version": b"1"})


def _convert(typ: pa.DataType, semantic: str, values: list) -> tuple[pa.Field, list, int]:
    field, array, bad = debezium.convert_column(_field("c", typ, semantic), pa.array(values, typ))
    assert array.type == field.type
    return field, array.to_pylist(), bad


def test_is_envelope() -> None:
    value = pa.struct([("id", pa.int32())])
    source = pa.struct([("ts_ms", pa.int64())])
    fields = [
        pa.field("before", value),
        pa.field("after", value),
        pa.field("source", source),
        pa.field("op", pa.string()),
        pa.field("ts_ms", pa.int64()),
    ]
    assert debezium.is_envelope(fields)
    assert debezium.is_envelope(pa.struct(fields))
    assert not debezium.is_envelope(fields[:3] + fields[4:])  # no op
    assert not debezium.is_envelope([pa.field("before", pa.struct([("id", pa.int64())])), *fields[1:]])
    assert not debezium.is_envelope([pa.field("id", pa.int32()), pa.field("op", pa.string())])


def test_dates_and_times() -> None:
    field, values, _ = _convert(pa.int32(), "io.debezium.time.Date", [-4760, 0, None])
    assert field.type == pa.date32()
    assert [v.isoformat() if v else v for v in values] == ["1956-12-20", "1970-01-01", None]
    assert field.metadata[b"connect.name"] == b"io.debezium.time.Date"
    assert _convert(pa.int32(), "io.debezium.time.Time", [3_723_004])[1] == [time(1, 2, 3, 4000)]
    assert _convert(pa.int64(), "io.debezium.time.MicroTime", [3_723_000_005])[1] == [time(1, 2, 3, 5)]
    field, values, _ = _convert(pa.int64(), "io.debezium.time.NanoTime", [3_723_000_005_000])
    assert field.type == pa.time64("ns") and values == [time(1, 2, 3, 5)]
    assert _convert(pa.int64(), "io.debezium.time.MicroDuration", [1_500_000])[1] == [timedelta(seconds=1.5)]


@pytest.mark.parametrize(
    ("semantic", "raw"),
    [
        ("io.debezium.time.Timestamp", 1_600_045_064_587),
        ("io.debezium.time.MicroTimestamp", 1_600_045_064_587_000),
        ("io.debezium.time.NanoTimestamp", 1_600_045_064_587_000_999),
    ],
)
def test_timestamps(semantic: str, raw: int) -> None:
    field, values, _ = _convert(pa.int64(), semantic, [raw, None])
    assert field.type == pa.timestamp("us", tz="UTC")
    assert values == [datetime(2020, 9, 14, 0, 57, 44, 587000, tzinfo=UTC), None]


def test_nano_timestamp_before_the_epoch_floors() -> None:
    values = _convert(pa.int64(), "io.debezium.time.NanoTimestamp", [-1])[1]
    assert values == [datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]


def test_zoned_timestamp() -> None:
    texts = [
        "2011-12-03T10:15:30.030431+01:00",
        "2011-12-03T09:15:30Z",
        "2011-12-03T09:15:30.123456789Z",
        "not a time",
        "2011-12-03T09:15:30",  # no offset: not a ZonedTimestamp
        None,
    ]
    field, values, bad = _convert(pa.string(), "io.debezium.time.ZonedTimestamp", texts)
    assert field.type == pa.timestamp("us", tz="UTC")
    assert values == [
        datetime(2011, 12, 3, 9, 15, 30, 30431, tzinfo=UTC),
        datetime(2011, 12, 3, 9, 15, 30, tzinfo=UTC),
        datetime(2011, 12, 3, 9, 15, 30, 123456, tzinfo=UTC),
        None,
        None,
        None,
    ]
    assert bad == 2


VSD = pa.struct([("scale", pa.int32()), ("value", pa.binary())])


def test_variable_scale_decimal_as_decimal() -> None:
    # 12345 at scale 2 = 123.45; -1 (0xff) at scale 0; 0x0100 = 256 at scale 3 = 0.256
    values = [
        {"scale": 2, "value": b"\x30\x39"},
        {"scale": 0, "value": b"\xff"},
        {"scale": 3, "value": b"\x01\x00"},
    ]
    field, out, _ = _convert(VSD, "io.debezium.data.VariableScaleDecimal", [*values, None])
    assert field.type == pa.decimal128(38, 3)
    assert out == [Decimal("123.450"), Decimal("-1.000"), Decimal("0.256"), None]


def test_variable_scale_decimal_of_38_digits() -> None:
    digits = 12345678901234567890123456789012345678
    values = [{"scale": 0, "value": digits.to_bytes(16, "big", signed=True)}, {"scale": -3, "value": b"\x07"}]
    field, out, _ = _convert(VSD, "io.debezium.data.VariableScaleDecimal", values)
    assert field.type == pa.decimal128(38, 0)
    assert out == [Decimal(digits), Decimal(7000)]


def test_variable_scale_decimal_too_wide_is_its_string() -> None:
    huge = (10**40 + 1).to_bytes(17, "big", signed=True)
    values = [{"scale": 1, "value": huge}, {"scale": 2, "value": b"\x30\x39"}]
    field, out, _ = _convert(VSD, "io.debezium.data.VariableScaleDecimal", values)
    assert field.type == pa.string()
    assert out == ["1000000000000000000000000000000000000000.1", "123.45"]


def test_other_semantic_types_are_unchanged() -> None:
    for semantic in ("io.debezium.data.Json", "io.debezium.data.Uuid", "io.debezium.data.Enum"):
        field, out, _ = _convert(pa.string(), semantic, ['{"a":1}'])
        assert field.type == pa.string() and out == ['{"a":1}']


PLACEHOLDER = "__debezium_unavailable_value"
# DecoderDifferences.TOASTED_VALUE_NUMBER_STRING and TOASTED_VALUE_UUID_STRING
NUMBERS = [
    95,
    95,
    100,
    101,
    98,
    101,
    122,
    105,
    117,
    109,
    95,
    117,
    110,
    97,
    118,
    97,
    105,
    108,
    97,
    98,
    108,
    101,
    95,
]
NUMBERS += [118, 97, 108, 117, 101]
UUID = "b68a35a7-17ad-35b3-af2a-ae46edb4545a"


@pytest.mark.parametrize(
    ("typ", "placeholder", "other"),
    [
        (pa.string(), PLACEHOLDER, "x"),
        (pa.binary(), PLACEHOLDER.encode(), b"x"),
        (pa.list_(pa.string()), [PLACEHOLDER], ["x"]),
        (pa.list_(pa.string()), [UUID], ["x"]),
        (pa.list_(pa.binary()), [PLACEHOLDER.encode()], [b"x"]),
        (pa.list_(pa.int32()), NUMBERS, [1]),
        (pa.list_(pa.int64()), NUMBERS, NUMBERS[:-1]),
        (pa.map_(pa.string(), pa.string()), [(PLACEHOLDER, PLACEHOLDER)], [("a", "b")]),
    ],
)
def test_placeholder_forms(typ: pa.DataType, placeholder: object, other: object) -> None:
    test = debezium.placeholder_test(typ)
    assert test is not None
    as_arrow = pa.array([placeholder, other], typ).to_pylist()  # the values as the fold sees them
    assert [test(v) for v in as_arrow] == [True, False]


def test_no_placeholder_in_numbers() -> None:
    assert debezium.placeholder_test(pa.int64()) is None
    assert debezium.placeholder_test(pa.string(), "??")("??")


def test_position_keys() -> None:
    pg = {"connector": "postgresql", "lsn": 33040450, "sequence": '["33040316","33040450"]'}
    assert debezium.position_key(pg) == (33040316, 33040450)
    # a later transaction's change at a lower LSN, streamed after the first one committed, comes later
    later = {"connector": "postgresql", "lsn": 33040400, "sequence": '["33040500","33040400"]'}
    assert debezium.position_key(later) > debezium.position_key(pg)
    assert debezium.position_key({"connector": "postgresql", "lsn": 5, "sequence": None}) == (5, 5)
    assert debezium.position_key({"connector": "postgresql", "lsn": None, "sequence": None}) is None
    mysql = {"connector": "mysql", "file": "mysql-bin.000003", "pos": 154, "row": 1}
    assert debezium.position_key(mysql) < debezium.position_key(
        {**mysql, "file": "mysql-bin.000004", "pos": 4}
    )
    assert debezium.position_key({"connector": "oracle", "scn": "100", "commit_scn": "120"}) == (120, 100)
    sql = {
        "connector": "sqlserver",
        "change_lsn": "00000027:00000758:0003",
        "commit_lsn": "00000027:00000758:0005",
    }
    assert debezium.position_key(sql) == ("00000027:00000758:0005", "00000027:00000758:0003", 0)
    assert debezium.position_key({"connector": "mongodb", "ord": 1}) is None
    assert debezium.position_key(None) is None


def test_transaction_id() -> None:
    assert debezium.transaction_id({"txId": 769}, None) == "769"
    assert debezium.transaction_id({"txId": 769}, {"id": "769:33040450"}) == "769:33040450"
    assert debezium.transaction_id({"gtid": "abc:12"}, None) == "abc:12"
    assert debezium.transaction_id({}, None) is None

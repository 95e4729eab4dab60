"""The JSON Schema decoder: every record of ``clicks`` (schema id 5) equals facts/records.jsonl (decoded there
by json + jsonschema); crafted schemas for references, the type mapping, drafts, validation failures and
truncated text."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import typed_set

from logdoctor.formats.registry.decoder import decoder_for
from logdoctor.formats.registry.json_schema import JsonSchemaDecoder
from logdoctor.formats.registry.json_text import ends_early
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.results import SchemaError
from logdoctor.formats.registry.store import RegisteredSchema, SchemaReference, SchemaRegistry


def _json_schema(sid: int, schema: object, subject: str = "", refs=()) -> RegisteredSchema:
    subject = subject or f"s{sid}"
    return RegisteredSchema(sid, "JSON", json.dumps(schema), tuple(refs), subject, 1, ((subject, 1),))


def _registry_with(*schemas: RegisteredSchema) -> SchemaRegistry:
    reg = SchemaRegistry()
    for s in schemas:
        reg.schemas[s.id] = s
    return reg


def _payloads(*values: object) -> list[bytes]:
    return [json.dumps(v).encode() for v in values]


@pytest.mark.realworld
def test_clicks_every_record_equals_the_facts() -> None:
    registry = typed_set.registry()
    raw = typed_set.raw_records("clicks")
    facts = typed_set.topic_facts("clicks")
    assert len(facts) == 500
    payloads = []
    for fact in facts:
        assert fact["decode_status"] == "decoded"
        schema_id, payload = typed_set.unframe(raw[(fact["partition"], fact["offset"])][1])
        assert schema_id == fact["schema_id"] == 5
        payloads.append(payload)
    decoder = decoder_for(registry, registry.by_id(5))
    assert isinstance(decoder, JsonSchemaDecoder)
    out = decoder.decode(payloads)
    assert out.reasons == [None] * len(facts)
    # == compares 3 and 3.0 equal: the oracle keeps JSON's integers, a "number" column holds floats
    for got, fact in zip(out.values.to_pylist(), facts, strict=True):
        assert got == fact["value_decoded"]
    assert decoder.record_name == "Click"
    assert decoder.arrow_type == pa.struct(
        [
            ("click_id", pa.string()),
            ("ts", pa.int64()),
            ("user", pa.struct([("id", pa.int64()), ("name", pa.string()), ("tags", pa.list_(pa.string()))])),
            ("page", pa.struct([("url", pa.string()), ("referrer", pa.string())])),
            (
                "events",
                pa.list_(pa.struct([("type", pa.string()), ("x", pa.float64()), ("y", pa.float64())])),
            ),
            ("consent", pa.bool_()),
        ]
    )


@pytest.mark.realworld
def test_a_click_cut_at_every_byte_is_truncated() -> None:
    registry = typed_set.registry()
    fact = typed_set.topic_facts("clicks")[0]
    _, payload = typed_set.unframe(typed_set.raw_records("clicks")[(fact["partition"], fact["offset"])][1])
    decoder = JsonSchemaDecoder(registry, registry.by_id(5))
    out = decoder.decode([payload[:n] for n in range(len(payload))])
    assert out.reasons == [DECODE_ERROR_TRUNCATED] * len(payload)
    assert out.values.null_count == len(payload)


def test_values_failing_validation_or_not_json_are_a_mismatch() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0}, "s": {"type": "string"}},
        "required": ["n"],
    }
    reg = _registry_with(_json_schema(1, schema))
    decoder = JsonSchemaDecoder(reg, reg.by_id(1))
    payloads = [
        *_payloads({"n": 1, "s": "a"}, {"n": -1}, {"s": "no n"}, {"n": "1"}, {"n": 2.0}),
        b'{"n": 1} extra',
        b'{"n": 1]',
        b"\xff\xfe",
        '{"n": 3, "s": "é'.encode()[:-1],  # cut inside a UTF-8 character
        b'{"n": 1, "s": "\\u00',
    ]
    out = decoder.decode(payloads)
    mismatch, truncated = DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
    assert out.reasons == [None, mismatch, mismatch, mismatch, None, mismatch, mismatch, mismatch, truncated,
                           truncated]  # fmt: skip
    assert out.values.to_pylist()[0] == {"n": 1, "s": "a"}
    assert out.values.to_pylist()[4] == {"n": 2, "s": None}
    assert ends_early('{"a": [1, tr') and ends_early('{"a"') and ends_early("-") and not ends_early('{"a":1]')


def test_references_to_other_subjects_and_local_definitions_resolve() -> None:
    address = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"$ref": "#/definitions/zip"}},
        "definitions": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
    }
    person = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Person",
        "type": "object",
        "properties": {
            "home": {"$ref": "address.json"},
            "work": {"oneOf": [{"type": "null"}, {"$ref": "address.json"}]},
            "zips": {"type": "array", "items": {"$ref": "address.json#/definitions/zip"}},
            "tags": {"$ref": "#/definitions/tags"},
        },
        "definitions": {"tags": {"type": "object", "additionalProperties": {"type": "integer"}}},
    }
    reg = _registry_with(
        _json_schema(1, address, "address-value"),
        _json_schema(2, person, "person-value", [SchemaReference("address.json", "address-value", 1)]),
    )
    decoder = JsonSchemaDecoder(reg, reg.by_id(2))
    address_type = pa.struct([("city", pa.string()), ("zip", pa.string())])
    assert decoder.arrow_type == pa.struct(
        [
            ("home", address_type),
            ("work", address_type),
            ("zips", pa.list_(pa.string())),
            ("tags", pa.map_(pa.string(), pa.int64())),
        ]
    )
    out = decoder.decode(
        _payloads(
            {"home": {"city": "Oslo", "zip": "01234"}, "work": None, "zips": ["11111"], "tags": {"a": 1}},
            {"home": {"zip": "1"}},  # fails the referenced pattern
        )
    )
    assert out.reasons == [None, DECODE_ERROR_SCHEMA_MISMATCH]
    assert out.values.to_pylist()[0] == {
        "home": {"city": "Oslo", "zip": "01234"},
        "work": None,
        "zips": ["11111"],
        "tags": [("a", 1)],
    }
    missing = _registry_with(reg.by_id(2))
    with pytest.raises(SchemaError, match="address-value"):
        JsonSchemaDecoder(missing, reg.by_id(2))


def test_mixed_unions_untyped_values_and_recursion_are_json_text() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "anything": {},
            "maybe": {"type": ["integer", "null"]},
            "color": {"enum": ["red", "green"]},
            "tree": {"$ref": "#/$defs/node"},
        },
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "v": {"type": "number"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
    }
    reg = _registry_with(_json_schema(1, schema))
    decoder = JsonSchemaDecoder(reg, reg.by_id(1))
    assert decoder.arrow_type == pa.struct(
        [
            ("either", pa.string()),
            ("anything", pa.string()),
            ("maybe", pa.int64()),
            ("color", pa.string()),
            ("tree", pa.struct([("v", pa.float64()), ("kids", pa.list_(pa.string()))])),
        ]
    )
    out = decoder.decode(
        _payloads(
            {"either": 7, "anything": {"b": [1, "x"]}, "maybe": None, "color": "red",
             "tree": {"v": 1, "kids": [{"v": 2, "kids": []}]}},
            {"either": "seven", "color": "blue"},
        )
    )  # fmt: skip
    assert out.reasons == [None, DECODE_ERROR_SCHEMA_MISMATCH]
    assert out.values.to_pylist()[0] == {
        "either": "7",
        "anything": '{"b":[1,"x"]}',
        "maybe": None,
        "color": "red",
        "tree": {"v": 1.0, "kids": ['{"v":2,"kids":[]}']},
    }


def test_the_draft_the_schema_names_is_the_one_validating() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 5, "exclusiveMaximum": True}},
    }
    reg = _registry_with(_json_schema(1, draft4))
    out = JsonSchemaDecoder(reg, reg.by_id(1)).decode(_payloads({"n": 4}, {"n": 5}))
    assert out.reasons == [None, DECODE_ERROR_SCHEMA_MISMATCH]
    # the same keywords are no valid draft-07 schema (exclusiveMaximum is a number there)
    reg = _registry_with(_json_schema(2, {**draft4, "$schema": "http://json-schema.org/draft-07/schema#"}))
    with pytest.raises(SchemaError, match="schema id 2"):
        JsonSchemaDecoder(reg, reg.by_id(2))

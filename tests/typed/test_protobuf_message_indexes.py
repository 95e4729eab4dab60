"""Protobuf message indexes as Confluent's two serializers write them (issue 73).

confluent-kafka-python's own ``ProtobufSerializer`` (against its mock registry) writes the records, with the
classes protoc (grpcio-tools) generates at test time; logdoctor reads each one from its frame (the writer
schema and message-index path, :func:`~logdoctor.formats.registry.writers.writer_of`) with the registered
``.proto`` text, and its value must equal what confluent-kafka's own ``ProtobufDeserializer`` reads back.
Python's serializer counts the map-entry messages protoc synthesizes among the nested messages; Java's
(``ProtobufSchema.toMessageIndexes`` in confluentinc/schema-registry, which walks the ``.proto`` text's
message declarations) does not: the Java paths below are that walk, written out by hand for the same schema.
"""

from __future__ import annotations

import base64
import importlib
import json
import subprocess
import sys
from typing import Any

import crafted_topics as ct
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from typer.testing import CliRunner

from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.formats.registry.reasons import AMBIGUOUS_MESSAGE_INDEXES
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry
from logdoctor.formats.registry.writers import Decoders, Resolved, unbuildable_reason, writer_of

PROTO_NAME = "logdoctor_test_indexes.proto"
MODULE = "logdoctor_test_indexes_pb2"
TOPIC = "indexes"

# maps before, between and after nested messages, nested three levels deep; Two: an index path that names
# First as Python counts and Second as Java counts
PROTO = """syntax = "proto3";
package ldix;

enum Kind { KIND_UNSET = 0; KIND_A = 1; KIND_B = 2; }

message Top {
  string id = 1;
  map<string, int32> counts = 2;
  message Mid {
    message Leaf {
      string s = 1;
      Kind kind = 2;
      map<int32, string> names = 3;
    }
    map<string, Leaf> leaves = 1;
    int64 n = 2;
    Leaf first = 3;
  }
  Mid mid = 3;
}

message Plain {
  message Before { string b = 1; }
  map<string, string> tags = 1;
  message After { int32 a = 1; map<string, Before> befores = 2; }
  Before before = 2;
  After after = 3;
}

message Two {
  map<string, string> labels = 1;
  message First { string f = 1; }
  message Second { int64 s = 1; }
}
"""

#: message -> (the path Python's serializer writes, the path Java's serializer writes for it)
PATHS = {
    "ldix.Top": ((0,), (0,)),
    "ldix.Top.Mid": ((0, 1), (0, 0)),
    "ldix.Top.Mid.Leaf": ((0, 1, 0), (0, 0, 0)),  # the example
    "ldix.Plain": ((1,), (1,)),
    "ldix.Plain.Before": ((1, 0), (1, 0)),
    "ldix.Plain.After": ((1, 2), (1, 1)),
    "ldix.Two": ((2,), (2,)),
    "ldix.Two.First": ((2, 1), (2, 0)),
    "ldix.Two.Second": ((2, 2), (2, 1)),
}
#: the paths that name two messages: Python's First is Java's Second
AMBIGUOUS = {(2, 1): ("ldix.Two.Second", "ldix.Two.First")}


@pytest.fixture(scope="module")
def pb2(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The module protoc generates for :data:`PROTO`, imported."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    out = tmp_path_factory.mktemp("protoc")
    (out / PROTO_NAME).write_text(PROTO)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{out}", f"--python_out={out}", PROTO_NAME],
        check=True,
        cwd=out,
    )
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(MODULE)
    finally:
        sys.path.remove(str(out))


def _messages(pb2: Any) -> dict[str, list[Any]]:
    """A few values of every message (its full name -> instances), set and unset fields alike."""
    leaf = pb2.Top.Mid.Leaf
    leaves = [
        leaf(s="x", kind=pb2.KIND_A, names={3: "three", 1: "one"}),
        leaf(),
        leaf(s="é" * 40, kind=7, names={-5: ""}),
    ]
    mids = [
        pb2.Top.Mid(leaves={"b": leaves[0], "a": leaves[2]}, n=-(2**40), first=leaves[0]),
        pb2.Top.Mid(n=1),
        pb2.Top.Mid(leaves={"": leaves[1]}, first=leaf()),
    ]
    before = pb2.Plain.Before
    afters = [pb2.Plain.After(a=-3, befores={"k": before(b="v"), "j": before()}), pb2.Plain.After()]
    return {
        "ldix.Top": [
            pb2.Top(id="t1", counts={"z": 1, "a": -2}, mid=mids[0]),
            pb2.Top(),
            pb2.Top(mid=mids[1]),
        ],
        "ldix.Top.Mid": mids,
        "ldix.Top.Mid.Leaf": leaves,
        "ldix.Plain": [pb2.Plain(tags={"t": "u"}, before=before(b="b"), after=afters[0]), pb2.Plain()],
        "ldix.Plain.Before": [before(b="bb"), before()],
        "ldix.Plain.After": afters,
        "ldix.Two": [pb2.Two(labels={"l": "m"}), pb2.Two()],
        "ldix.Two.First": [pb2.Two.First(f="first")],
        "ldix.Two.Second": [pb2.Two.Second(s=2), pb2.Two.Second()],
    }


def _plain(message: Any) -> dict[str, Any]:
    """A parsed message as the decoder's Arrow value reads in Python (a map: its (key, value) pairs by key;
    an enum: its name, or its number as text; an unset message field: None)."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            out[field.name] = [
                (k, _plain(value[k]) if value_field.message_type is not None else value[k])
                for k in sorted(value)
            ]
        elif field.message_type is not None:
            out[field.name] = _plain(value) if message.HasField(field.name) else None
        elif field.enum_type is not None:
            number = field.enum_type.values_by_number.get(value)
            out[field.name] = number.name if number is not None else str(value)
        else:
            out[field.name] = value
    return out


def _serialized(pb2: Any) -> tuple[SchemaRegistryClient, dict[str, list[tuple[Any, bytes]]]]:
    """Every message of :func:`_messages` written by confluent-kafka's serializer (registered in its mock
    registry: one schema, the file, for all of them)."""
    client = SchemaRegistryClient.new_client({"url": "mock://logdoctor-indexes"})  # the mock registry
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    out: dict[str, list[tuple[Any, bytes]]] = {}
    for name, values in _messages(pb2).items():
        serializer = ProtobufSerializer(type(values[0]), client, {"use.deprecated.format": False})
        out[name] = [(v, serializer(v, ctx)) for v in values]
    return client, out


def _registry(text: str, schema_id: int) -> SchemaRegistry:
    reg = SchemaRegistry()
    subject = f"{TOPIC}-value"
    reg.schemas[schema_id] = RegisteredSchema(schema_id, "PROTOBUF", text, (), subject, 1, ((subject, 1),))
    return reg


def test_confluent_kafka_python_records_decode_as_its_deserializer_reads_them(pb2: Any) -> None:
    client, written = _serialized(pb2)
    ids = {client.get_latest_version(f"{TOPIC}-value").schema_id}
    assert len(ids) == 1
    (schema_id,) = ids
    # the schema the serializer registered is the file protoc compiles from the text, message for message
    registered = client.get_schema(schema_id)
    assert registered.schema_type == "PROTOBUF"
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(registered.schema_str))
    assert [m.name for m in fd.message_type] == ["Top", "Plain", "Two"]
    reg = _registry(PROTO, schema_id)
    decoders = Decoders(reg)
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    checked = 0
    for name, cases in written.items():
        python_path, _ = PATHS[name]
        deserializer = ProtobufDeserializer(type(cases[0][0]), {"use.deprecated.format": False}, client)
        for value, data in cases:
            resolved = writer_of(data, None, reg)
            assert isinstance(resolved, Resolved), name
            assert resolved.writer.schema_id == schema_id
            assert resolved.writer.message_indexes == python_path, name
            decoder = decoders.get(resolved.writer)
            if python_path in AMBIGUOUS:
                assert isinstance(decoder, Exception)
                assert unbuildable_reason(decoder) == AMBIGUOUS_MESSAGE_INDEXES
                java_name, python_name = AMBIGUOUS[python_path]
                assert java_name in str(decoder) and python_name in str(decoder)
                assert python_name == name
                continue
            assert not isinstance(decoder, Exception), decoder
            assert decoder.record_name == name
            out = decoder.decode([memoryview(data)[resolved.payload :]])
            assert out.reasons == [None]
            expected = _plain(deserializer(data, ctx))
            assert expected == _plain(value)
            assert out.values.to_pylist() == [expected], name
            checked += 1
    assert checked == sum(len(c) for n, c in written.items() if PATHS[n][0] not in AMBIGUOUS) == 19


def test_java_paths_of_the_same_schema_name_the_same_messages(pb2: Any) -> None:
    """The paths Java's serializer writes (map entries not counted) for the same payloads: the same values,
    except the path that names another message as Python counts."""
    _, written = _serialized(pb2)
    reg = _registry(PROTO, 1)
    decoders = Decoders(reg)
    for name, cases in written.items():
        _, java_path = PATHS[name]
        frame = b"\x00\x00\x00\x00\x01" + _zigzag_indexes(java_path)
        for value, data in cases:
            python_frame = writer_of(data, None, reg)
            assert isinstance(python_frame, Resolved)
            java_data = frame + data[python_frame.payload :]
            resolved = writer_of(java_data, None, reg)
            assert isinstance(resolved, Resolved) and resolved.writer.message_indexes == java_path
            decoder = decoders.get(resolved.writer)
            if java_path in AMBIGUOUS:
                assert unbuildable_reason(decoder) == AMBIGUOUS_MESSAGE_INDEXES  # type: ignore[arg-type]
                assert AMBIGUOUS[java_path][0] == name
                continue
            assert not isinstance(decoder, Exception), decoder
            assert decoder.record_name == name
            out = decoder.decode([memoryview(java_data)[resolved.payload :]])
            assert out.values.to_pylist() == [_plain(value)]


def _zigzag_indexes(path: tuple[int, ...]) -> bytes:
    """Confluent's message-index bytes (MessageIndexes.toByteArray): the count, then each index, as zigzag
    varints; the path ``[0]`` as the single byte 0."""
    if path == (0,):
        return b"\x00"
    out = bytearray()
    for n in (len(path), *path):
        z = (n << 1) ^ (n >> 63)
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
    return bytes(out)


def test_a_python_path_the_java_walk_cannot_take_is_no_longer_undecoded(pb2: Any) -> None:
    """Before: every record of Top.Mid.Leaf from Python's serializer ([0, 1, 0]) was ``no message``."""
    _, written = _serialized(pb2)
    value, data = written["ldix.Top.Mid.Leaf"][0]
    assert data[5:9] == b"\x06\x00\x02\x00"  # count 3, then 0, 1, 0 (zigzag)
    reg = _registry(PROTO, 1)
    resolved = writer_of(data, None, reg)
    assert isinstance(resolved, Resolved)
    decoder = Decoders(reg).get(resolved.writer)
    assert not isinstance(decoder, Exception), decoder
    assert decoder.decode([data[resolved.payload :]]).values.to_pylist() == [_plain(value)]


def test_dump_of_a_log_dir_names_the_messages_and_the_ambiguity(pb2: Any, tmp_path) -> None:
    """The whole offline path: ``_schemas`` replayed (the registered ``.proto`` text), the records as
    confluent-kafka's serializer wrote them, ``dump --print-data``."""
    client, written = _serialized(pb2)
    schema_id = client.get_latest_version(f"{TOPIC}-value").schema_id
    ct.write_partition(
        tmp_path, "_schemas", 0, [ct.schema_record(f"{TOPIC}-value", 1, schema_id, PROTO, "PROTOBUF")]
    )
    cases = [(name, value, data) for name, pairs in written.items() for value, data in pairs]
    segment = ct.write_partition(tmp_path, TOPIC, 0, [(None, data) for _, _, data in cases])
    result = CliRunner().invoke(app, ["dump", "--json", "--print-data", str(segment)])
    assert result.exit_code in (0, 1), result.output
    shown = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    records = [e["decoded"] for e in shown if e.get("type") == "record"]
    assert len(records) == len(cases)
    for (name, value, _), d in zip(cases, records, strict=True):
        python_path, _ = PATHS[name]
        if python_path in AMBIGUOUS:
            assert d["value"] is None and d["reason"] == AMBIGUOUS_MESSAGE_INDEXES, d
            assert "ldix.Two.First" in d["schema_error"] and "ldix.Two.Second" in d["schema_error"]
            continue
        assert "reason" not in d, (name, d)
        assert d["schema_id"] == schema_id
        assert d.get("message_indexes", [0]) == list(python_path)
        assert d["value"] == _as_dump(_plain(value)), (name, d["value"])


def _as_dump(value: Any) -> Any:
    """:func:`_plain`'s value as ``dump`` shows it (a map: an object with string keys; the schema has no
    other repeated field)."""
    if isinstance(value, dict):
        return {k: _as_dump(v) for k, v in value.items()}
    if isinstance(value, list):
        return {str(k): _as_dump(v) for k, v in value}
    return value


def test_the_exports_split_sends_the_ambiguous_records_to_undecoded(pb2: Any) -> None:
    """The export's own code without Spark (logdoctor.spark.typed: survey, plan, split), on a raw batch of
    the records: the table holds every unambiguous record, ``_undecoded`` the ambiguous ones, by reason."""
    from logdoctor.spark.schema import records_arrow_schema
    from logdoctor.spark.typed import TypedBatches, plan_topics, survey

    client, written = _serialized(pb2)
    schema_id = client.get_latest_version(f"{TOPIC}-value").schema_id
    reg = _registry(PROTO, schema_id)
    values = [data for pairs in written.values() for _, data in pairs]
    ambiguous = [PATHS[name][0] in AMBIGUOUS for name, pairs in written.items() for _ in pairs]
    schema = records_arrow_schema()
    given = {
        "topic": pa.array([TOPIC] * len(values), pa.string()),
        "partition": pa.array([0] * len(values), pa.int32()),
        "offset": pa.array(range(len(values)), pa.int64()),
        "value": pa.array(values, pa.binary()),
        "is_control": pa.array([False] * len(values)),
        "headers": pa.array([[]] * len(values), schema.field("headers").type),
    }
    rb = pa.RecordBatch.from_arrays(
        [given.get(f.name, pa.nulls(len(values), f.type)) for f in schema], schema=schema
    )
    plan = plan_topics(survey([rb], reg), reg)
    _, typed, bad = TypedBatches(plan).split(rb)
    assert bad is not None and typed is not None
    assert bad.column("reason").to_pylist() == [AMBIGUOUS_MESSAGE_INDEXES] * sum(ambiguous)
    assert bad.column("offset").to_pylist() == [i for i, a in enumerate(ambiguous) if a]
    assert typed.num_rows == len(values) - sum(ambiguous)


#: a schema with a map before two nested messages, as written by hand (``map<K, V>``) ...
MAP_TEXT = """syntax = "proto3";
package ldix2;

message T {
  map<string, string> labels = 1;
  message A { string a = 1; }
  message B { int64 b = 1; }
}
"""
#: ... and as Confluent's registry prints it when it was registered as a descriptor (confluent-kafka-python
#: registers a base64 FileDescriptorProto): the map-entry message written out (the form of
#: ProtobufSchemaTest's ``mapEntrySchemaString`` in confluentinc/schema-registry), which protoc alone refuses
ENTRY_TEXT = """syntax = "proto3";
package ldix2;

message T {
  repeated LabelsEntry labels = 1;

  message LabelsEntry {
    option map_entry = true;

    string key = 1;
    string value = 2;
  }
  message A {
    string a = 1;
  }
  message B {
    int64 b = 1;
  }
}
"""


def test_a_map_entry_the_registered_text_writes_out_is_counted_both_ways(tmp_path) -> None:
    """Java's count walks the text's messages: a written-out map entry is one of them, so Python's [0, 1]
    names ``A`` for both (no ambiguity), where the same schema written with ``map<...>`` is ambiguous."""
    (tmp_path / "logdoctor_test_indexes2.proto").write_text(MAP_TEXT)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
         "logdoctor_test_indexes2.proto"],
        check=True,
    )  # fmt: skip
    sys.path.insert(0, str(tmp_path))
    try:
        pb = sys.modules.get("logdoctor_test_indexes2_pb2") or importlib.import_module(
            "logdoctor_test_indexes2_pb2"
        )
    finally:
        sys.path.remove(str(tmp_path))
    client = SchemaRegistryClient.new_client({"url": "mock://logdoctor-indexes2"})
    ctx = SerializationContext(TOPIC, MessageField.VALUE)
    cases = [pb.T(labels={"k": "v", "a": ""}), pb.T.A(a="x"), pb.T.B(b=-7)]
    written = [
        (v, ProtobufSerializer(type(v), client, {"use.deprecated.format": False})(v, ctx)) for v in cases
    ]
    for text, ambiguous in ((ENTRY_TEXT, set()), (MAP_TEXT, {(0, 1)})):
        reg = _registry(text, 1)
        decoders = Decoders(reg)
        for value, data in written:
            resolved = writer_of(data, None, reg)
            assert isinstance(resolved, Resolved)
            decoder = decoders.get(resolved.writer)
            if resolved.writer.message_indexes in ambiguous:
                assert unbuildable_reason(decoder) == AMBIGUOUS_MESSAGE_INDEXES  # type: ignore[arg-type]
                continue
            assert not isinstance(decoder, Exception), decoder
            assert decoder.record_name == value.DESCRIPTOR.full_name
            out = decoder.decode([data[resolved.payload :]])
            assert out.values.to_pylist() == [_plain(value)]
    assert [writer_of(d, None, reg).writer.message_indexes for _, d in written] == [(0,), (0, 1), (0, 2)]  # type: ignore[union-attr]

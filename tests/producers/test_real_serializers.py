"""Topics written by the real producers, through a real registry: confluent-kafka's own Avro, Protobuf and
JSON Schema serializers, registering through confluent-kafka's ``SchemaRegistryClient`` on Apicurio Registry's
Confluent-compatible API (``/apis/ccompat/v7``), Apicurio keeping everything in its KafkaSQL journal on the
same real broker (issue 73, deliveries 1 and 3).

One Kafka 4.4.0 broker and one Apicurio Registry 3.3.3 for the module (tests/registry_server.py). The
registry's journal topic has a name of its own (``JOURNAL``), so that logdoctor finds it by its records. The
producers write values and keys under TopicNameStrategy, RecordNameStrategy and TopicRecordNameStrategy; the
subjects change through the registry as an operator changes them: a compatibility level set (the global
default is NONE), a schema evolved (and an incompatible one refused), versions and subjects soft- and
hard-deleted, an identical schema under another subject. Then the registry is restarted (it replays its
journal) and asked for every subject, version and id; then everything is stopped and the broker's log dir
alone must give:

- ``logdoctor schemas``: every (id, subject, version, type, deleted) the registry answers, and as hard-deleted
  exactly the versions the test hard-deleted, with the ids the registry returned to the serializers and the
  schema texts it serves;
- ``logdoctor export --typed``: every record's value and key as confluent-kafka's own deserializers read
  them (Avro's resolved to the subject's newest schema, as a reader with that schema reads it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafka_cluster import KafkaCluster, logdoctor_json
from registry_server import ApicurioRegistry, RegistryError

pytestmark = pytest.mark.kafka

JOURNAL = "registry-store"  # not Apicurio's default name: the journal is found by its records

USER_V1 = {
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}],
}  # fmt: skip
USER_V2 = {  # evolved: a field with a default (BACKWARD-compatible)
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "country", "type": "string", "default": "US"},
    ],
}  # fmt: skip
USER_BAD = {  # a new field without a default: refused under BACKWARD
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "age", "type": "int"},
    ],
}  # fmt: skip
CLICK = {"type": "record", "name": "Click", "namespace": "web", "fields": [{"name": "url", "type": "string"}]}
VIEW = {
    "type": "record", "name": "View", "namespace": "web",
    "fields": [{"name": "page", "type": "string"}, {"name": "ms", "type": "int"}],
}  # fmt: skip
EVENT = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Event", "type": "object",
    "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["kind", "n"],
}  # fmt: skip
SCRATCH_V1 = {"type": "record", "name": "Scratch", "fields": [{"name": "a", "type": "int"}]}
SCRATCH_V2 = {"type": "record", "name": "Scratch", "fields": [{"name": "b", "type": "string"}]}
GONE = {"type": "record", "name": "Gone", "fields": [{"name": "g", "type": "int"}]}
PURGED = {"type": "record", "name": "Purged", "fields": [{"name": "p", "type": "string"}]}


def _order_class():
    """A Protobuf message class made at run time (``shop.Order`` with a nested ``Line``), as protoc makes."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    order = fdp.message_type.add(name="Order")
    line = order.nested_type.add(name="Line")
    line.field.add(name="sku", number=1, type=9, label=1)
    line.field.add(name="qty", number=2, type=5, label=1)
    order.field.add(name="id", number=1, type=3, label=1)
    order.field.add(name="lines", number=2, type=11, label=3, type_name=".shop.Order.Line")
    order.field.add(name="note", number=3, type=9, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


class World:
    """What the module's producers did: the records each topic was sent, and the registry's answers."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sent: dict[str, list[dict[str, Any]]] = {}  # topic -> [{offset, key, value, raw_key, raw_value}]
        self.returned_ids: dict[
            tuple[str, int], int
        ] = {}  # (subject, version) -> id returned when registered
        self.hard_deleted: set[tuple[str, int]] = set()
        self.answers: dict[tuple[str, int], dict[str, Any]] = {}  # the registry's, after its restart
        self.by_id: dict[int, dict[str, Any]] = {}
        self.log_dir: Path | None = None
        self.header_framing = ""  # what the serializer said when asked for header framing


def _produce(
    cluster: KafkaCluster,
    world: World,
    topic: str,
    records: list[tuple[Any, Any, bytes | None, bytes | None]],
) -> None:
    offsets = cluster.produce(topic, [(k, v) for _, _, k, v in records])
    for offset, (key, value, raw_key, raw_value) in zip(offsets, records, strict=True):
        world.sent.setdefault(topic, []).append(
            {"offset": offset, "key": key, "value": value, "raw_key": raw_key, "raw_value": raw_value}
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    from confluent_kafka.schema_registry import (
        Schema,
        header_schema_id_serializer,
        record_subject_name_strategy,
        topic_record_subject_name_strategy,
    )
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    root = tmp_path_factory.mktemp("real-serializers")
    w = World(root)
    cluster = KafkaCluster(root / "kafka")
    cluster.start()
    registry = ApicurioRegistry(root / "registry", kafkasql=cluster.bootstrap, topic=JOURNAL)
    try:
        registry.start()
        sr = registry.client()
        for topic in ("users", "orders", "baskets", "events", "clicks", "gone"):
            cluster.create_topic(topic)

        def ser(serializer, obj, topic: str, field=MessageField.VALUE) -> bytes:
            return serializer(obj, SerializationContext(topic, field))

        key_ser = AvroSerializer(sr, json.dumps("string"))
        # TopicNameStrategy, Avro keys and values; v1, then a compatibility level and an evolution
        users_v1 = AvroSerializer(sr, json.dumps(USER_V1))
        v1 = [({"id": i, "name": f"user-{i}"}, f"k{i}") for i in range(5)]
        _produce(
            cluster,
            w,
            "users",
            [(k, v, ser(key_ser, k, "users", MessageField.KEY), ser(users_v1, v, "users")) for v, k in v1],
        )
        registry.request("PUT", "/config/users-value", {"compatibility": "BACKWARD"})
        with pytest.raises(Exception, match=r"409|ncompatible"):
            registry.client().register_schema("users-value", Schema(json.dumps(USER_BAD), "AVRO"))
        users_v2 = AvroSerializer(sr, json.dumps(USER_V2))
        v2 = [({"id": 10 + i, "name": f"user-{10 + i}", "country": "FR"}, f"k{10 + i}") for i in range(3)]
        _produce(
            cluster,
            w,
            "users",
            [(k, v, ser(key_ser, k, "users", MessageField.KEY), ser(users_v2, v, "users")) for v, k in v2],
        )
        # Protobuf values (TopicNameStrategy); the keys' schema is the users' key schema: the same id
        Order = _order_class()
        orders_ser = ProtobufSerializer(Order, sr, {"use.deprecated.format": False})
        orders = [Order(id=i, lines=[Order.Line(sku=f"s{i}", qty=i + 1)], note="n" * i) for i in range(4)]
        _produce(
            cluster,
            w,
            "orders",
            [
                (
                    f"o{o.id}",
                    o,
                    ser(key_ser, f"o{o.id}", "orders", MessageField.KEY),
                    ser(orders_ser, o, "orders"),
                )
                for o in orders
            ],
        )
        # two message types in one topic, ``Order`` and its nested ``Order.Line`` (TopicNameStrategy: one
        # subject, one schema, two message indexes); an ``Order`` without lines holds an empty list
        line_ser = ProtobufSerializer(Order.Line, sr, {"use.deprecated.format": False})
        baskets = [
            Order(id=7, lines=[Order.Line(sku="a", qty=1)], note="x"),
            Order.Line(sku="b", qty=2),
            Order(id=8),
        ]
        _produce(
            cluster,
            w,
            "baskets",
            [
                (None, m, None, ser(orders_ser if isinstance(m, Order) else line_ser, m, "baskets"))
                for m in baskets
            ],
        )
        # JSON Schema values under RecordNameStrategy (the subject is the schema's title)
        events_ser = JSONSerializer(
            json.dumps(EVENT), sr, conf={"subject.name.strategy": record_subject_name_strategy}
        )
        events = [{"kind": k, "n": i} for i, k in enumerate(["a", "b", "c"])]
        _produce(cluster, w, "events", [(None, e, None, ser(events_ser, e, "events")) for e in events])
        # two record types in one topic under TopicRecordNameStrategy
        trn = {"subject.name.strategy": topic_record_subject_name_strategy}
        click_ser, view_ser = (
            AvroSerializer(sr, json.dumps(CLICK), conf=trn),
            AvroSerializer(sr, json.dumps(VIEW), conf=trn),
        )
        mixed = [({"url": "/a"}, click_ser), ({"page": "p", "ms": 7}, view_ser), ({"url": "/b"}, click_ser)]
        _produce(cluster, w, "clicks", [(None, v, None, ser(s, v, "clicks")) for v, s in mixed])
        # header framing (the schema's GUID in a header): the client needs the registry's GUID, which
        # Apicurio's Confluent-compatible API does not give
        header_ser = AvroSerializer(
            sr, json.dumps(CLICK), conf={"schema.id.serializer": header_schema_id_serializer}
        )
        try:
            header_ser({"url": "/h"}, SerializationContext("clicks", MessageField.VALUE, []))
        except Exception as exc:  # what the client says is the finding
            w.header_framing = f"{type(exc).__name__}: {exc}"
        # deletes: a version soft- then hard-deleted, a subject soft-deleted whose records stay, one purged
        gone_ser = AvroSerializer(sr, json.dumps(GONE))
        _produce(
            cluster, w, "gone", [(None, {"g": i}, None, ser(gone_ser, {"g": i}, "gone")) for i in range(2)]
        )
        fresh = registry.client()  # no cache of earlier registrations
        for subject, schema in (
            ("scratch-value", SCRATCH_V1),
            ("scratch-value", SCRATCH_V2),
            ("purged-value", PURGED),
        ):
            fresh.register_schema(subject, Schema(json.dumps(schema), "AVRO"))
        before = _versions(registry)  # every (subject, version) and its id, as registered
        registry.request("DELETE", "/subjects/scratch-value/versions/1")
        registry.request("DELETE", "/subjects/scratch-value/versions/1?permanent=true")
        w.hard_deleted.add(("scratch-value", 1))
        registry.request("DELETE", "/subjects/gone-value")
        registry.request("DELETE", "/subjects/purged-value")
        registry.request("DELETE", "/subjects/purged-value?permanent=true")
        w.hard_deleted.add(("purged-value", 1))
        # the hard-deleted version's schema again under another subject: the content is still there
        again = fresh.register_schema("again-value", Schema(json.dumps(SCRATCH_V1), "AVRO"))
        assert again == before[("scratch-value", 1)]["id"]  # the content is still there: its id again
        w.returned_ids = {key: answer["id"] for key, answer in before.items()}
        w.returned_ids[("again-value", 1)] = again
        registry.restart()
        live = set(registry.get("/subjects"))
        for subject in registry.get("/subjects?deleted=true"):
            shown = set(registry.get(f"/subjects/{subject}/versions")) if subject in live else set()
            for version in registry.get(f"/subjects/{subject}/versions?deleted=true"):
                try:
                    got = registry.get(f"/subjects/{subject}/versions/{version}?deleted=true")
                except (
                    RegistryError
                ) as exc:  # a subject soft-deleted whole: Apicurio serves none of its versions
                    assert exc.status == 404 and subject not in live, exc
                    got = before[(subject, version)]
                w.answers[(subject, version)] = {**got, "deleted": version not in shown}
        for answer in w.answers.values():
            if not answer["deleted"]:
                w.by_id[answer["id"]] = registry.get(f"/schemas/ids/{answer['id']}")
        # confluent-kafka's own deserializers, through the registry, read what was sent
        _deserialize_all(w, registry)
    finally:
        registry.stop()
        registry.kill()
        cluster.stop()
    w.log_dir = cluster.broker(1).log_dirs[0]
    return w


def _versions(registry: ApicurioRegistry) -> dict[tuple[str, int], dict[str, Any]]:
    """Every (subject, version) the registry serves, with its answer."""
    out = {}
    for subject in registry.get("/subjects"):
        for version in registry.get(f"/subjects/{subject}/versions"):
            out[(subject, version)] = registry.get(f"/subjects/{subject}/versions/{version}")
    return out


def _deserialize_all(w: World, registry: ApicurioRegistry) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf.json_format import MessageToDict

    sr = registry.client()
    Order = _order_class()
    readers = {
        "users": AvroDeserializer(sr, json.dumps(USER_V2)),  # a reader of the newest schema: v1 rows resolved
        "orders": ProtobufDeserializer(Order, {"use.deprecated.format": False}),
        "baskets": ProtobufDeserializer(Order, {"use.deprecated.format": False}),
        "baskets.Line": ProtobufDeserializer(Order.Line, {"use.deprecated.format": False}),
        "events": JSONDeserializer(None, schema_registry_client=sr),
        "clicks": AvroDeserializer(sr),
        "gone": AvroDeserializer(sr),
    }
    keys = AvroDeserializer(sr)
    for topic, records in w.sent.items():
        for rec in records:
            reader = f"{topic}.Line" if type(rec["value"]).__name__ == "Line" else topic
            value = readers[reader](rec["raw_value"], SerializationContext(topic, MessageField.VALUE))
            if topic in ("orders", "baskets"):
                value = MessageToDict(
                    value, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
                )
                if "id" in value:
                    value["id"] = int(value["id"])  # int64 is text in Protobuf's JSON mapping
            rec["read"] = value
            if rec["raw_key"] is not None:
                rec["read_key"] = keys(rec["raw_key"], SerializationContext(topic, MessageField.KEY))


# -- the registry, offline ----------


def _schemas_rows(w: World) -> dict[tuple[str, int], dict[str, Any]]:
    got = logdoctor_json("schemas", str(w.log_dir))
    assert any(JOURNAL in s for s in got["sources"]), got["sources"]
    return {(r["subject"], r["version"]): r for r in got["versions"]}


def test_schemas_equal_the_registry_answers(world: World) -> None:
    """Every subject version the restarted registry serves (deleted ones with ``?deleted=true``): the same id,
    type and deleted flag offline; the versions hard-deleted through the API, and those only, hard-deleted."""
    rows = _schemas_rows(world)
    for key, answer in world.answers.items():
        row = rows.get(key)
        assert row is not None, f"{key} is served by the registry, not listed offline"
        assert row["id"] == answer["id"], key
        assert row["type"] == answer.get("schemaType", "AVRO"), key
        assert row["status"] == ("soft_deleted" if answer["deleted"] else "live"), key
    hard = {key for key, row in rows.items() if row["status"] == "hard_deleted"}
    assert hard == world.hard_deleted
    assert set(rows) == set(world.answers) | world.hard_deleted


def test_ids_are_those_returned_to_the_serializers(world: World) -> None:
    """The id of every (subject, version), the ones hard-deleted since included, is the one the registry gave
    before its restart (an identical schema under another subject: the same id), and the frames' ids name
    the schema texts the registry serves."""
    from logdoctor.logdir.schemas_store import load_registry

    rows = _schemas_rows(world)
    for key, returned in world.returned_ids.items():
        assert rows[key]["id"] == returned, key
    assert rows[("users-key", 1)]["id"] == rows[("orders-key", 1)]["id"]
    loaded = load_registry([str(world.log_dir)])
    for schema_id, answer in world.by_id.items():
        text = loaded.registry.by_id(schema_id).schema
        if answer.get("schemaType") == "PROTOBUF":  # a base64 FileDescriptorProto, kept and served as sent
            assert text == answer["schema"], schema_id
        elif (
            answer.get("schemaType") == "JSON"
        ):  # as sent; Apicurio serves JSON texts re-serialized, unspaced
            assert json.loads(text) == json.loads(answer["schema"]), schema_id
        else:  # as sent; Apicurio serves Avro re-serialized (``"string"`` as ``{"type":"string"}``)
            assert _canonical(text) == _canonical(answer["schema"]), schema_id
    frames = {int.from_bytes(r["raw_value"][1:5], "big") for recs in world.sent.values() for r in recs}
    assert frames <= set(loaded.registry.schemas)


def _canonical(avro: str) -> str:
    from fastavro.schema import parse_schema, to_parsing_canonical_form

    return to_parsing_canonical_form(parse_schema(json.loads(avro)))


def test_header_framing_needs_a_guid_apicurio_does_not_give(world: World) -> None:
    """confluent-kafka 2.16's header framing names the schema by its GUID, which Apicurio 3.3.3's
    Confluent-compatible API does not return: the serializer refuses (docs/typed-tables.md)."""
    assert "GUID is not set" in world.header_framing


def test_compatibility_levels(world: World) -> None:
    got = logdoctor_json("schemas", str(world.log_dir))
    assert got["compatibility"]["subjects"] == {"users-value": "BACKWARD"}


# -- the typed tables ----------


def _export(world: World, out: Path, *args: str) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "logdoctor",
            "export",
            str(world.log_dir),
            "--out",
            str(out),
            "--typed",
            "--json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def exported(world: World, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("typed") / "OUT"
    return out, _export(world, out)


def _table(out: Path, topic: str) -> list[dict[str, Any]]:
    import pyarrow.dataset as ds

    rows = ds.dataset(str(out / topic), format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda r: r["kafka"]["offset"])


def _value(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "kafka"}


@pytest.mark.parametrize("topic", ["users", "events", "clicks", "gone"])
def test_typed_values_equal_what_was_sent(world: World, exported: tuple[Path, dict], topic: str) -> None:
    out, _summary = exported
    rows = _table(out, topic)
    sent = world.sent[topic]
    assert [r["kafka"]["offset"] for r in rows] == [s["offset"] for s in sent]
    for row, rec in zip(rows, sent, strict=True):
        value = {k: v for k, v in _value(row).items() if v is not None or k in rec["read"]}
        assert value == rec["read"], (topic, rec["offset"])
        if topic != "users" and topic != "clicks":
            assert value == rec["value"]
        if "read_key" in rec:
            assert row["kafka"]["key"] == rec["read_key"] == rec["key"]
    if topic == "gone":  # its subject soft-deleted: decoded, flagged
        assert all(r["kafka"]["schema_deleted"] for r in rows)


def test_typed_protobuf_values(world: World, exported: tuple[Path, dict]) -> None:
    out, _summary = exported
    rows = _table(out, "orders")
    sent = world.sent["orders"]
    assert [r["kafka"]["offset"] for r in rows] == [s["offset"] for s in sent]
    for row, rec in zip(rows, sent, strict=True):
        assert _value(row) == rec["read"], rec["offset"]
        assert row["kafka"]["key"] == rec["read_key"] == rec["key"]


def test_a_field_the_message_lacks_is_null(world: World, exported: tuple[Path, dict]) -> None:
    """A topic of two message types (``Order``, ``Order.Line``): the table has the fields of both; in a row,
    the fields of its own message are what the deserializer read (an ``Order`` without lines: ``[]``), the
    others null (a ``Line`` has no ``lines``: null, not ``[]``)."""
    out, _summary = exported
    rows = _table(out, "baskets")
    sent = world.sent["baskets"]
    assert [r["kafka"]["offset"] for r in rows] == [s["offset"] for s in sent]
    assert {"id", "lines", "note", "sku", "qty"} == set(_value(rows[0]))
    for row, rec in zip(rows, sent, strict=True):
        value = _value(row)
        assert {k: v for k, v in value.items() if k in rec["read"]} == rec["read"], rec["offset"]
        assert all(v is None for k, v in value.items() if k not in rec["read"]), (rec["offset"], value)
    assert rows[2]["lines"] == [] and rows[1]["lines"] is None


def _delta_rows(location: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    query = QueryBuilder().register("t", DeltaTable(str(location)))
    return pa.table(query.execute("SELECT * FROM t").read_all()).to_pylist()


def _iceberg_rows(read_with: str, topic: str) -> list[dict[str, Any]]:
    """The rows of a topic's Iceberg table as the read-back line the export printed (for one of its tables)
    reads them."""
    import re

    from logdoctor.spark.tables.typed_export import table_identifier

    imports, _, expression = read_with.rpartition("; ")
    expression = re.sub(
        r"load_table\('[^']*'\)", f"load_table({table_identifier(None, topic)!r})", expression
    )
    scope: dict[str, Any] = {}
    exec(imports, scope)
    return eval(expression, scope).to_pylist()


def test_every_format_holds_the_same_rows(
    world: World, exported: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each typed topic exported as Parquet, Delta and Iceberg: the same rows in the three, a field a
    record's message lacks null in each (issue 87, item 15: pyiceberg's scan read ``[]`` there)."""
    out, _summary = exported
    root = tmp_path_factory.mktemp("formats")
    _export(world, root / "delta", "--format", "delta")
    iceberg = _export(world, root / "iceberg", "--format", "iceberg")
    for topic in world.sent:
        want = _table(out, topic)
        for fmt, got in (
            ("delta", _delta_rows(root / "delta" / topic)),
            ("iceberg", _iceberg_rows(iceberg["read_with"], topic)),
        ):
            assert sorted(got, key=lambda r: r["kafka"]["offset"]) == want, (fmt, topic)


def test_every_record_decoded(world: World, exported: tuple[Path, dict]) -> None:
    """Every record the producers sent is in its topic's table, decoded: none kept as bytes, none in
    ``_undecoded``."""
    _out, summary = exported
    for topic, sent in world.sent.items():
        counts = summary["typed"]["topics"][topic]
        assert counts["decoded"] == counts["records"] == len(sent), (topic, counts)
        assert not counts["undecoded"] and not counts["keys_undecoded"], (topic, counts)
    assert summary["typed"]["undecoded"] == 0


def test_journal_found_by_its_records(world: World) -> None:
    """Under its own name, and not taken for a data topic's registry by name: the journal is a source."""
    done = subprocess.run(
        [sys.executable, "-m", "logdoctor", "schemas", str(world.log_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"{JOURNAL}-0" in done.stdout.splitlines()[0]

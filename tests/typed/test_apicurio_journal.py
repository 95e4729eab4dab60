"""Apicurio Registry's KafkaSQL journal, replayed (formats/registry/apicurio_journal.py), on records written
here as the registry writes them (the shapes seen in a real 3.3.3 journal: tests/producers/
test_real_serializers.py runs the registry itself and is the judge of the ids; these cases pin the rules of
AR:impl/sql/repositories/SqlContentRepository.java and SqlVersionRepository.java the module cites, and that
hostile records are skipped with a note, never a crash)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from logdoctor.formats.registry.apicurio_journal import is_journal_record, journal_key, replay_journal
from logdoctor.formats.registry.store import HARD_DELETED, LIVE, SOFT_DELETED

AVRO_A = '{"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}'
AVRO_B = '{"type": "record", "name": "B", "fields": []}'


def _record(mtype: str, value: dict[str, Any] | None) -> tuple[bytes, bytes | None, tuple]:
    key = json.dumps(
        {"uuid": str(uuid.uuid4()), "messageType": mtype, "partitionKey": "__GLOBAL_PARTITION__"}
    )
    headers = (("req", str(uuid.uuid4()).encode()), ("mt", mtype.encode()))
    return key.encode(), None if value is None else json.dumps(value).encode(), headers


def _create(artifact: str, content: str, atype: str = "AVRO") -> tuple:
    return _record(
        "CreateArtifact11Message",
        {"artifactId": artifact, "artifactType": atype, "contentType": "application/json", "content": content,
         "references": [], "versionIsDraft": False, "dryRun": False},
    )  # fmt: skip


def _version(artifact: str, content: str) -> tuple:
    return _record(
        "CreateArtifactVersion10Message",
        {"artifactId": artifact, "artifactType": "AVRO", "content": content, "references": [], "draft": False,
         "dryRun": False},
    )  # fmt: skip


def _state(artifact: str, version: str, state: str) -> tuple:
    return _record(
        "UpdateArtifactVersionState5Message", {"artifactId": artifact, "version": version, "newState": state}
    )


def _replay(*records: tuple):
    return replay_journal((i, k, v, h) for i, (k, v, h) in enumerate([_record("Bootstrap", None), *records]))


def test_content_ids_shared_and_taken_by_every_write() -> None:
    reg = _replay(_create("a-value", AVRO_A), _create("b-value", AVRO_A), _version("a-value", AVRO_B))
    assert {k: sv.id for k, sv in reg.subject_versions.items()} == {
        ("a-value", 1): 1,
        ("a-value", 2): 3,  # the identical content of b-value took id 2 all the same
        ("b-value", 1): 1,
    }
    assert reg.by_id(1).versions == (("a-value", 1), ("b-value", 1))
    assert reg.by_id(3).schema == AVRO_B and reg.by_id(3).schema_type == "AVRO"


def test_soft_and_hard_deletes_and_the_order_taken_again() -> None:
    reg = _replay(
        _create("a-value", AVRO_A),
        _version("a-value", AVRO_B),
        _state("a-value", "2", "DISABLED"),
        _record("DeleteArtifactVersion3Message", {"artifactId": "a-value", "version": "2"}),
        _version("a-value", '"string"'),  # MAX(versionOrder) + 1 of the versions left: 2 again
        _create("c-value", '"int"'),
        _state("c-value", "1", "DISABLED"),
    )  # fmt: skip
    assert reg.subject_versions[("a-value", 2)].id == 3
    assert reg.by_id(2).status == HARD_DELETED and reg.by_id(2).versions == (("a-value", 2),)
    assert reg.by_id(3).status == LIVE
    assert reg.by_id(4).status == SOFT_DELETED and reg.subject_versions[("c-value", 1)].deleted


def test_a_refused_create_takes_a_content_id() -> None:
    reg = _replay(_create("a-value", AVRO_A), _create("a-value", AVRO_B), _version("a-value", '"long"'))
    assert reg.subject_versions[("a-value", 2)].id == 3
    assert 2 not in reg.schemas
    assert any("refused" in n for n in reg.notes)


def test_compatibility_rules() -> None:
    reg = _replay(
        _create("a-value", AVRO_A),
        _record(
            "CreateArtifactRule4Message",
            {"artifactId": "a-value", "rule": "COMPATIBILITY", "config": {"configuration": "BACKWARD"}},
        ),
        _record("CreateGlobalRule2Message", {"rule": "COMPATIBILITY", "config": {"configuration": "FULL"}}),
        _record("DeleteGlobalRule1Message", {"rule": "COMPATIBILITY"}),
    )  # fmt: skip
    assert reg.config == {"a-value": "BACKWARD"}


def test_hostile_records_are_skipped_with_a_reason() -> None:
    bad_value = (
        _record("CreateArtifact11Message", None)[0],
        b"{not json",
        (("mt", b"CreateArtifact11Message"),),
    )
    wrong_shape = _record("CreateArtifact11Message", {"artifactId": ["x"], "artifactType": 3})
    no_header = (_record("CreateArtifact11Message", None)[0], b"{}", ())
    reg = replay_journal(
        [(0, b"\xff\xfe", b"x", ()), (1, *bad_value), (2, *wrong_shape), (3, *no_header),
         (4, *_record("SomethingNew7Message", {})), (5, *_create("a-value", AVRO_A))]
    )  # fmt: skip
    assert reg.subject_versions[("a-value", 1)].id == 1
    assert len(reg.errors) == 4 and any("SomethingNew7Message" in n for n in reg.notes)


def test_found_by_its_records() -> None:
    key, _value, headers = _record("Bootstrap", None)
    assert is_journal_record(key, headers)
    assert not is_journal_record(key, (("mt", b"Other"),))
    assert not is_journal_record(b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', headers)
    assert journal_key(b"[1]") is None and journal_key(None) is None


def test_a_protobuf_schema_kept_as_a_base64_file_descriptor_compiles() -> None:
    """confluent-kafka-python registers a Protobuf schema as a base64 ``FileDescriptorProto``; Apicurio keeps
    and serves it so (Confluent's registry turns it into ``.proto`` text): it compiles as that file, its
    well-known-type imports resolved."""
    import base64

    from google.protobuf import descriptor_pb2

    from logdoctor.formats.registry.protobuf_schema import compile_schema
    from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

    fdp = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    fdp.dependency.append("google/protobuf/timestamp.proto")
    order = fdp.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=3, label=1)
    order.field.add(name="at", number=2, type=11, label=1, type_name=".google.protobuf.Timestamp")
    order.nested_type.add(name="Line").field.add(name="sku", number=1, type=9, label=1)
    text = base64.standard_b64encode(fdp.SerializeToString()).decode()
    compiled = compile_schema(SchemaRegistry(), RegisteredSchema(1, "PROTOBUF", text))
    assert compiled.message([0]).full_name == "shop.Order"
    assert compiled.message([0, 0]).full_name == "shop.Order.Line"
    cls = compiled.message_class([0])
    assert cls.FromString(cls(id=7).SerializeToString()).id == 7

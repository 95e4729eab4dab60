"""The replay of ``_schemas`` (formats.registry.store) and its loading from inputs (logdir.schemas_store).

Oracles: facts/counts.json ``registry`` and the ``_schemas`` lines of facts/records.jsonl (computed by the
data set's own decoders, independently of this code) for the real log dir; for the crafted records, the
rules of Schema Registry's KafkaStoreMessageHandler each test names."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
import registry_facts as rf

from logdoctor.errors import CorruptRecordError
from logdoctor.formats.registry.reasons import SCHEMA_HARD_DELETED, UNKNOWN_SCHEMA_GUID, UNKNOWN_SCHEMA_ID
from logdoctor.formats.registry.store import (
    HARD_DELETED,
    LIVE,
    SOFT_DELETED,
    RegistryConflictError,
    SchemaReference,
    SchemaRegistry,
    decode_store_record,
    merge,
    replay,
    replay_records,
)
from logdoctor.logdir.discovery import InputNotFoundError
from logdoctor.logdir.schemas_store import load_registry, missing_ids_text


def _j(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def skey(subject: str, version: int, magic: int = 1) -> bytes:
    return _j({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": magic})


def sval(
    subject: str,
    version: int,
    schema_id: int,
    schema: str,
    *,
    schema_type: str | None = None,
    references: list | None = None,
    deleted: bool = False,
    **extra: object,
) -> bytes:
    v: dict[str, object] = {"subject": subject, "version": version, "id": schema_id}
    if schema_type is not None:
        v["schemaType"] = schema_type
    if references is not None:
        v["references"] = references
    v["schema"] = schema
    v["deleted"] = deleted
    v.update(extra)
    return _j(v)


def key(keytype: str, subject: str | None = None) -> bytes:
    k: dict[str, object] = {"keytype": keytype}
    if subject is not None:
        k["subject"] = subject
    k["magic"] = 0
    return _j(k)


NOOP = (key("NOOP"), None)
A = '{"type":"record","name":"A","fields":[{"name":"x","type":"int"}]}'
B = '{"type":"record","name":"B","fields":[{"name":"a","type":"A"}]}'


# --- the real log dir: every registry fact --------------------------------------------------------------


def _real_registry() -> SchemaRegistry:
    rf.require()
    records = [(o, k, v) for o, k, v, _ in rf.raw_records(rf.LOG_DIR / "_schemas-0")]
    return replay_records(records, str(rf.LOG_DIR / "_schemas-0"))


def _as_facts(reg: SchemaRegistry) -> dict:
    return {
        str(i): {
            "guid": s.guid,
            "references": [
                {"name": r.name, "subject": r.subject, "version": r.version} for r in s.references
            ],
            "schemaType": s.schema_type,
            "status": s.status,
            "subject": s.subject,
            "version": s.version,
        }
        for i, s in reg.schemas.items()
    }


def test_the_replay_of_the_real_store_is_the_facts() -> None:
    reg = _real_registry()
    want = rf.counts()["registry"]
    assert _as_facts(reg) == want["schemas"]
    assert {str(k): v for k, v in reg.config.items()} == want["config"]
    assert {str(k): v for k, v in reg.mode.items()} == want["mode"]
    assert reg.subjects() == want["subjects_live"]
    assert reg.errors == [] and reg.notes == []


def test_the_schema_texts_are_the_stores() -> None:
    reg = _real_registry()
    texts = {}
    for line in rf.facts():
        v = line["value_decoded"]
        if line["topic"] == "_schemas" and line["key_decoded"]["keytype"] == "SCHEMA" and v is not None:
            texts.setdefault(v["id"], v["schema"])
    assert {i: s.schema for i, s in reg.schemas.items()} == texts


def test_load_registry_of_the_log_dir_is_the_facts(tmp_path: Path) -> None:
    rf.require()
    loaded = load_registry([str(rf.LOG_DIR)])
    assert loaded.sources == (str(rf.LOG_DIR / "_schemas-0"),)
    assert loaded.notes == []
    assert _as_facts(loaded.registry) == rf.counts()["registry"]["schemas"]
    # the store given alone, as a partition folder of another topic name (--schemas), and another broker's
    # copy of it: read whatever its name, merged silently
    copy = tmp_path / "other-broker" / "registry-store-0"
    shutil.copytree(rf.LOG_DIR / "_schemas-0", copy)
    both = load_registry([str(rf.LOG_DIR / "orders-0")], [str(copy), str(rf.LOG_DIR)])
    assert set(both.sources) == {str(copy), str(rf.LOG_DIR / "_schemas-0")}
    assert _as_facts(both.registry) == rf.counts()["registry"]["schemas"]
    assert pickle.loads(pickle.dumps(both)).registry == both.registry


def test_load_registry_says_when_there_is_no_store(tmp_path: Path) -> None:
    rf.require()
    loaded = load_registry([str(rf.LOG_DIR / "orders-0")])
    assert loaded.sources == () and loaded.registry.schemas == {}
    assert "no _schemas partition found among the inputs" in loaded.notes[0]
    assert "another cluster" in missing_ids_text([4242, 7], loaded)
    with pytest.raises(InputNotFoundError):
        load_registry([str(tmp_path / "missing")])


def test_resolve_and_references_on_the_real_store() -> None:
    reg = pickle.loads(pickle.dumps(_real_registry()))  # shipped to Spark executors
    want = rf.counts()["registry"]["schemas"]
    for sid, fact in want.items():
        got = reg.resolve(int(sid))
        if fact["status"] == HARD_DELETED:
            assert got == SCHEMA_HARD_DELETED
        else:
            assert not isinstance(got, str) and (got.subject, got.version) == (
                fact["subject"],
                fact["version"],
            )
        if fact["guid"] is not None:
            by_guid = reg.resolve(guid=fact["guid"].upper())
            assert (
                by_guid == SCHEMA_HARD_DELETED if fact["status"] == HARD_DELETED else by_guid.id == int(sid)
            )
    assert reg.resolve(4242) == UNKNOWN_SCHEMA_ID
    assert reg.resolve(guid="00000000-0000-0000-0000-000000000000") == UNKNOWN_SCHEMA_GUID
    payments = reg.by_id(4)
    assert [s.id for s in reg.referenced(payments)] == [3]
    # the data records: each resolves as the facts say
    for line in rf.facts():
        if line["topic"] == "_schemas" or "schema_id" not in line:
            continue
        got = reg.resolve(line["schema_id"])
        if line["reason"] in (UNKNOWN_SCHEMA_ID, SCHEMA_HARD_DELETED):
            assert got == line["reason"]
        else:
            assert (got.subject, got.version) == (line["subject"], line["version"])
            assert (got.status == SOFT_DELETED) == (line["decode_status"] == "decoded_deleted_schema")


def test_decode_store_record_is_the_facts_json() -> None:
    rf.require()
    want = [(x["key_decoded"], x["value_decoded"]) for x in rf.facts() if x["topic"] == "_schemas"]
    got = []
    for _, k, v, _ in rf.raw_records(rf.LOG_DIR / "_schemas-0"):
        d = decode_store_record(k, v)
        assert d["keytype"] == d["key"]["keytype"]
        got.append((d["key"], d["value"]))
    assert len(got) == len(want)
    # facts/records.jsonl gives ``deleted: true`` in the SCHEMA values at offsets 10 (audit-value) and 21
    # (scratch-value), whose bytes say ``false``: the DELETE_SUBJECT after each marks them, and the README
    # says it does not rewrite them (the facts' decoded value shows the state after it). Only that flag.
    for offset, (g, w) in enumerate(zip(got, want, strict=True)):
        if offset in (10, 21):
            assert g[1]["deleted"] is False and w[1]["deleted"] is True
            g, w = (g[0], {**g[1], "deleted": None}), (w[0], {**w[1], "deleted": None})
        assert g == w, offset
    with pytest.raises(CorruptRecordError):
        decode_store_record(b"{not json", None)
    with pytest.raises(CorruptRecordError):
        decode_store_record(key("CONFIG"), b"\xff")


# --- crafted records: one rule each ----------------------------------------------------------------------


def test_avro_with_and_without_schema_type() -> None:
    reg = replay(
        [
            (skey("a-value", 1), sval("a-value", 1, 1, A)),  # 5.5-7.x: no schemaType for Avro
            (skey("b-value", 1), sval("b-value", 1, 2, '"string"', schema_type="AVRO")),  # 8.x
            (skey("c-value", 1), sval("c-value", 1, 3, 'syntax = "proto3";', schema_type="PROTOBUF")),
        ]
    )
    assert [(s.id, s.schema_type, s.status) for s in reg.schemas.values()] == [
        (1, "AVRO", LIVE),
        (2, "AVRO", LIVE),
        (3, "PROTOBUF", LIVE),
    ]


def test_soft_delete_then_hard_delete() -> None:
    records = [
        (skey("s", 1), sval("s", 1, 1, A)),
        (skey("s", 2), sval("s", 2, 2, '"int"')),
        (skey("s", 2), sval("s", 2, 2, '"int"', deleted=True)),  # soft delete: the value again, deleted
    ]
    reg = replay(records)
    assert (reg.by_id(1).status, reg.by_id(2).status) == (LIVE, SOFT_DELETED)
    assert reg.resolve(2) is reg.by_id(2)  # a soft-deleted schema still decodes
    assert reg.subjects() == ["s"] and reg.subject_versions[("s", 2)].deleted
    reg = replay([*records, (skey("s", 2), None)])  # the tombstone: hard delete
    assert reg.by_id(2).status == HARD_DELETED and ("s", 2) not in reg.subject_versions
    assert reg.resolve(2) == SCHEMA_HARD_DELETED
    assert (
        reg.resolve(guid=reg.by_id(2).guid) == SCHEMA_HARD_DELETED
    )  # the GUID mapping stays (InMemoryCache)
    assert reg.subject_version("s", 2) is reg.by_id(2)  # its text is still known from the log


def test_an_id_under_two_subjects_is_live_while_one_holds_it() -> None:
    reg = replay(
        [
            (skey("x", 1), sval("x", 1, 5, A)),
            (skey("y", 1), sval("y", 1, 5, A)),
            (skey("x", 1), None),
        ]
    )
    s = reg.by_id(5)
    assert (s.status, s.subject, s.versions) == (LIVE, "x", (("x", 1), ("y", 1)))


def test_delete_subject_marks_versions_up_to_v() -> None:
    records = [(skey("d", v), sval("d", v, v, f'"{t}"')) for v, t in ((1, "int"), (2, "long"), (3, "string"))]
    records.append((key("DELETE_SUBJECT", "d"), _j({"subject": "d", "version": 2})))
    reg = replay(records)
    assert [reg.by_id(i).status for i in (1, 2, 3)] == [SOFT_DELETED, SOFT_DELETED, LIVE]
    # CLEAR_SUBJECT: the subject's deleted versions leave the store (InMemoryCache.clearSubjects)
    reg = replay([*records, (key("CLEAR_SUBJECT", "d"), _j({"subject": "d"}))])
    assert [reg.by_id(i).status for i in (1, 2, 3)] == [HARD_DELETED, HARD_DELETED, LIVE]
    assert sorted(reg.subject_versions) == [("d", 3)]
    # a DELETE_SUBJECT of every version: the subject is no longer listed, unless deleted ones are asked for
    reg = replay([*records, (key("DELETE_SUBJECT", "d"), _j({"subject": "d", "version": 3}))])
    assert reg.subjects() == [] and reg.subjects(include_deleted=True) == ["d"]


def test_config_and_mode_global_and_per_subject_and_their_tombstones() -> None:
    records = [
        NOOP,
        (key("CONFIG"), _j({"compatibilityLevel": "BACKWARD"})),
        (key("CONFIG", "s"), _j({"subject": "s", "compatibilityLevel": "FULL"})),
        (key("CONFIG", "t"), _j({"compatibilityLevel": "NONE"})),  # a legacy value without its subject
        (key("MODE"), _j({"mode": "READWRITE"})),
        (key("MODE", "s"), _j({"subject": "s", "mode": "READONLY"})),
        (key("NOOP"), _j({"anything": 1})),
    ]
    reg = replay(records)
    assert reg.config == {None: "BACKWARD", "s": "FULL", "t": "NONE"}
    assert reg.mode == {None: "READWRITE", "s": "READONLY"}
    reg = replay([*records, (key("CONFIG", "s"), None), (key("MODE"), None), (key("CONFIG"), None)])
    assert reg.config == {"t": "NONE"} and reg.mode == {"s": "READONLY"}
    assert reg.schemas == {} and reg.errors == [] and reg.notes == []


def test_unknown_key_types_are_notes_and_bad_json_errors_naming_the_offset() -> None:
    reg = replay_records(
        [
            (0, key("CONTEXT"), _j({"tenant": "default", "context": ".ctx"})),
            (1, _j({"keytype": "SOMETHING_NEW", "magic": 0}), b"{}"),
            (4, b'{"keytype":"SCHEMA","subj', sval("s", 1, 1, A)),
            (5, skey("s", 1), b'{"subject":"s","version":1,"id":1,"sch'),
            (6, skey("s", 1, magic=2), sval("s", 1, 1, A)),
            (7, None, b"{}"),
            (7, b'{"subject":"s"}', b"{}"),
            (8, skey("s", 1), _j({"subject": "s", "version": 1, "schema": A})),  # no id
            (9, skey("s", 1), sval("s", 1, 1, A)),  # the replay goes on
        ],
        source="dir/_schemas-0",
    )
    assert list(reg.schemas) == [1] and reg.by_id(1).status == LIVE
    assert [e.split(":")[0] for e in reg.errors] == [f"dir/_schemas-0 offset {o}" for o in (4, 5, 6, 7, 7, 8)]
    assert "not a JSON object" in reg.errors[0] and "magic 2" in reg.errors[2]
    assert len(reg.notes) == 1 and reg.context_names == (".ctx",)  # CONTEXT is read (8.x, test_registry_8x)
    assert "key type SOMETHING_NEW" in reg.notes[0]
    assert "offset 1" in reg.notes[0]


def test_a_duplicate_id_with_another_schema_is_not_applied() -> None:
    reg = replay([(skey("a", 1), sval("a", 1, 1, A)), (skey("b", 1), sval("b", 1, 1, '"string"'))])
    assert reg.by_id(1).schema == A and ("b", 1) not in reg.subject_versions
    assert "duplicate ID" in reg.notes[0]


def test_references_in_dependency_order() -> None:
    c = '{"type":"record","name":"C","fields":[{"name":"b","type":"B"},{"name":"a","type":"A"}]}'
    reg = replay(
        [
            (skey("a", 1), sval("a", 1, 1, A)),
            (skey("b", 1), sval("b", 1, 2, B, references=[{"name": "A", "subject": "a", "version": 1}])),
            (
                skey("c", 1),
                sval(
                    "c",
                    1,
                    3,
                    c,
                    references=[
                        {"name": "B", "subject": "b", "version": 1},
                        {"name": "A", "subject": "a", "version": 1},
                        {"name": "Z", "subject": "nowhere", "version": 9},
                    ],
                ),
            ),
        ]
    )
    assert reg.by_id(2).references == (SchemaReference("A", "a", 1),)
    assert [s.id for s in reg.referenced(reg.by_id(3))] == [1, 2]
    assert reg.by_id(2).guid is None and reg.by_id(1).guid is not None  # see store.schema_guid


def test_a_stored_md5_is_the_guid() -> None:
    md5 = "AAECAwQFBgcICQoLDA0ODw=="  # bytes 00..0f
    reg = replay([(skey("m", 1), sval("m", 1, 1, A, metadata={"properties": {"owner": "x"}}, md5=md5))])
    assert reg.by_id(1).guid == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert reg.by_guid("00010203-0405-0607-0809-0A0B0C0D0E0F") is reg.by_id(1)


def test_merge_of_copies_and_of_two_registries() -> None:
    base = [(skey("s", 1), sval("s", 1, 1, A)), (key("CONFIG"), _j({"compatibilityLevel": "FULL"}))]
    behind = replay(base)
    ahead = replay(
        [*base, (skey("s", 1), sval("s", 1, 1, A, deleted=True)), (skey("t", 1), sval("t", 1, 2, B))]
    )
    merged = merge([("broker1/_schemas-0", behind), ("broker2/_schemas-0", ahead)])
    assert sorted(merged.schemas) == [1, 2] and merged.by_id(1).status == LIVE
    assert merged.config == {None: "FULL"} and merged.notes == []
    other = replay([(skey("u", 1), sval("u", 1, 1, '"bytes"'))])
    with pytest.raises(RegistryConflictError) as err:
        merge([("a/_schemas-0", behind), ("b/_schemas-0", other)])
    assert (
        "schema id 1" in str(err.value)
        and "a/_schemas-0" in str(err.value)
        and "b/_schemas-0" in str(err.value)
    )


def test_a_damaged_batch_of_the_store_is_named_and_left_out_alone(tmp_path: Path) -> None:
    rf.require()
    copy = tmp_path / "kafka-logs" / "_schemas-0"
    shutil.copytree(rf.LOG_DIR / "_schemas-0", copy)
    log = copy / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[2166 + 120] ^= 0xFF  # inside the batch of offset 5 (money.proto, id 3): its CRC no longer matches
    log.write_bytes(bytes(data))
    loaded = load_registry([str(copy.parent)])
    assert sorted(loaded.registry.schemas) == [i for i in range(1, 14) if i != 3]
    assert any(str(log) in n and "2166" in n for n in loaded.notes), loaded.notes
    assert any("26 records of offsets 0-26: records not read" in n for n in loaded.notes)

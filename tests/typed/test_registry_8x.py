"""Schema Registry 8.x's newer ``_schemas`` records (issue 78): contexts, associations, the ``md5`` field as a
schema's GUID, and the data-contract rules of client-side encryption (``ENCRYPT``, ``ENCRYPT_PAYLOAD``).

Confluent's registry cannot run on these machines, so the topics are written by confluent-kafka-python's own
serializers (2.16.1: ``mock://`` registries; ``AssociatedNameStrategy``; ``header_schema_id_serializer``,
which frames a value by its schema's GUID in the ``__value_schema_id`` header; the rule engine of
``_sync/serde.py`` running a data contract's ENCRYPT and ENCRYPT_PAYLOAD rules), and ``_schemas`` holds what
Schema Registry's storage code writes for what those clients registered, field for field
(confluentinc/schema-registry ``core/src/main/java/io/confluent/kafka/schemaregistry/storage/``, read at
794611bd: ``SchemaKey``/``SchemaValue`` with ``md5``, ``metadata``, ``ruleSet``; ``ContextKey``/
``ContextValue``, put by ``KafkaSchemaRegistry.register`` before the first schema of a context;
``AssociationKey``/``AssociationValue``).

The encryption executors: confluent-kafka's ``FieldEncryptionExecutor``/``EncryptionExecutor`` need Google
Tink, which is not in the project's environment; stand-ins of the same rule types (``ENCRYPT``,
``ENCRYPT_PAYLOAD``) run in the client's own rule engine and transform as ``encrypt_executor.py``'s
``EncryptionExecutorTransform.transform`` does (AES-256-GCM from ``cryptography``: a string field becomes the
base64 text of its ciphertext, a bytes field the ciphertext; the payload becomes its ciphertext). Which
fields, when, and where the frame goes are the client's.

Two registries: the default context's ids and the context ``.shop``'s both start at 1 (Schema Registry keeps
ids per context, ``id/IncrementalIdGenerator.java``), so ``orders`` (through an association to
``:.shop:orders-value``) names id 1 as ``customers`` does, with another schema.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from crafted_topics import write_partition

from logdoctor.formats.registry.reasons import ENCRYPTED_PAYLOAD
from logdoctor.formats.registry.store import SchemaRegistry, replay, split_subject
from logdoctor.formats.registry.writers import Decoders, Resolved, writer_of

ck = pytest.importorskip("confluent_kafka.schema_registry")

CLUSTER = "lkc-78"
CUSTOMER = {
    "type": "record", "name": "Customer", "namespace": "crm",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "ssn", "type": "string", "confluent:tags": ["PII"]},
        {"name": "card", "type": "bytes", "confluent:tags": ["PII"]},
        {"name": "name", "type": "string"},
    ],
}  # fmt: skip
SECRET = {
    "type": "record",
    "name": "Secret",
    "namespace": "vault",
    "fields": [{"name": "x", "type": "string"}],
}
PAYMENT = {
    "type": "record", "name": "Payment", "namespace": "pay",
    "fields": [{"name": "amount", "type": "int"}, {"name": "currency", "type": "string"}],
}  # fmt: skip
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "sku", "type": "string"}],
}
PARAMS = {"encrypt.kek.name": "kek78", "encrypt.kms.type": "local-kms", "encrypt.kms.key.id": "key78"}

CUSTOMERS = [{"id": i, "ssn": f"123-45-{i:04d}", "card": bytes([i, 7]), "name": f"n{i}"} for i in range(3)]
SECRETS = [{"x": f"secret {i}"} for i in range(2)]
PAYMENTS = [{"amount": 100 + i, "currency": "EUR"} for i in range(3)]
ORDERS = [{"sku": f"sku-{i}"} for i in range(2)]


# --- the stand-in ciphers, in the client's rule engine ------------------------------------------------------


def _executors() -> Any:
    from confluent_kafka.schema_registry.common.serde import FieldRuleExecutor, FieldTransform, FieldType
    from confluent_kafka.schema_registry.rule_registry import RuleRegistry
    from confluent_kafka.schema_registry.serde import RuleExecutor
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(bytes(range(32)))

    def seal(plain: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + aead.encrypt(nonce, plain, b"")

    class FieldEncrypt(FieldRuleExecutor):  # FieldEncryptionExecutor's transform, AES-GCM for Tink's
        def configure(self, client_conf: dict, rule_conf: dict) -> None:
            pass

        def type(self) -> str:
            return "ENCRYPT"

        def new_transform(self, ctx: Any) -> FieldTransform:
            def transform(ctx: Any, field_ctx: Any, value: Any) -> Any:
                if value is None:
                    return None
                if field_ctx.field_type == FieldType.STRING:
                    return base64.b64encode(seal(value.encode())).decode()
                if field_ctx.field_type == FieldType.BYTES:
                    return seal(value)
                raise AssertionError(field_ctx.field_type)

            return transform

        def close(self) -> None:
            pass

    class PayloadEncrypt(RuleExecutor):  # EncryptionExecutor: the serialized payload becomes ciphertext
        def configure(self, client_conf: dict, rule_conf: dict) -> None:
            pass

        def type(self) -> str:
            return "ENCRYPT_PAYLOAD"

        def transform(self, ctx: Any, message: Any) -> Any:
            return seal(bytes(message))

        def close(self) -> None:
            pass

    reg = RuleRegistry()
    reg.register_executor(FieldEncrypt())
    reg.register_executor(PayloadEncrypt())
    return reg


# --- what Schema Registry's storage writes ------------------------------------------------------------------


def _j(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_records(subject: str, rs: Any) -> list[tuple[bytes, bytes]]:
    """The CONTEXT record of a new context (``KafkaSchemaRegistry.register``), then the SCHEMA key and value
    (``SchemaValue``: ``md5`` the base64 of the GUID's 16 bytes, ``SchemaValue.getMd5Bytes``)."""
    out = []
    ctx = split_subject(subject)[0]
    if ctx != ".":
        out.append(
            (_j({"keytype": "CONTEXT", "tenant": "default", "context": ctx, "magic": 0}),
             _j({"tenant": "default", "context": ctx}))
        )  # fmt: skip
    s = rs.schema.to_dict()
    value: dict[str, Any] = {
        "subject": subject,
        "version": rs.version,
        "id": rs.schema_id,
        "md5": base64.b64encode(uuid.UUID(rs.guid).bytes).decode(),
        "schemaType": rs.schema.schema_type or "AVRO",
        "schema": s["schema"],
        "deleted": False,
    }
    for k in ("metadata", "ruleSet"):
        if s.get(k):
            value[k] = s[k]
    out.append((_j({"keytype": "SCHEMA", "subject": subject, "version": rs.version, "magic": 1}), _j(value)))
    return out


def assoc_key(a: Any) -> bytes:
    return _j(
        {"keytype": "ASSOC", "tenant": "default", "resourceName": a.resource_name,
         "resourceNamespace": a.resource_namespace, "resourceType": a.resource_type,
         "associationType": a.association_type, "subject": a.subject, "magic": 0}
    )  # fmt: skip


def assoc_record(a: Any, lifecycle: str) -> tuple[bytes, bytes]:
    """An association as ``AssociationValue`` writes it (``guid``: a random UUID of the association)."""
    value = {
        "subject": a.subject, "guid": str(uuid.uuid4()), "tenant": "default", "resourceName": a.resource_name,
        "resourceNamespace": a.resource_namespace, "resourceId": a.resource_id,
        "resourceType": a.resource_type,
        "associationType": a.association_type, "lifecycle": lifecycle, "frozen": False,
        "createTs": 1_700_000_000_000,
    }  # fmt: skip
    return assoc_key(a), _j(value)


# --- the log dir --------------------------------------------------------------------------------------------


@dataclass
class Built:
    log_dir: Path
    store: list[tuple[bytes, bytes | None]]
    topics: dict[str, list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]]
    ids: dict[str, int]  # subject -> id the clients got
    guids: dict[str, str]
    orders_subject: str


def _records(ser: Any, topic: str, values: list[dict]) -> list[tuple[bytes | None, bytes | None, list]]:
    from confluent_kafka.serialization import MessageField, SerializationContext

    out = []
    for v in values:
        ctx = SerializationContext(topic, MessageField.VALUE, [])
        data = ser(dict(v), ctx)  # the rule engine transforms the dict it is given in place
        out.append((None, data, list(ctx.headers or [])))
    return out


def build(log_dir: Path) -> Built:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, header_schema_id_serializer
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.common.schema_registry_client import (
        AssociationCreateOrUpdateInfo,
        AssociationCreateOrUpdateRequest,
        Rule,
        RuleKind,
        RuleMode,
        RuleParams,
        RuleSet,
    )

    rules = _executors()
    default = SchemaRegistryClient.new_client({"url": "mock://r78-default"})
    shop = SchemaRegistryClient.new_client({"url": "mock://r78-shop"})  # the context .shop: its own ids
    latest = {"auto.register.schemas": False, "use.latest.version": True}

    encrypt = Rule(
        "encryptPII", "", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT", ["PII"], RuleParams(PARAMS),
        None, None, "ERROR,NONE", False,
    )  # fmt: skip
    default.register_schema(
        "customers-value", Schema(json.dumps(CUSTOMER), "AVRO", [], None, RuleSet(None, [encrypt]))
    )
    encrypt_all = Rule(
        "encryptAll", "", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT_PAYLOAD", None, RuleParams(PARAMS),
        None, None, "ERROR,NONE", False,
    )  # fmt: skip
    default.register_schema(
        "vault-value", Schema(json.dumps(SECRET), "AVRO", [], None, RuleSet(None, None, [encrypt_all]))
    )

    topics: dict[str, Any] = {}
    ser = AvroSerializer(schema_registry_client=default, schema_str=json.dumps(CUSTOMER), conf=latest,
                         rule_registry=rules)  # fmt: skip
    topics["customers"] = _records(ser, "customers", CUSTOMERS)
    ser = AvroSerializer(schema_registry_client=default, schema_str=json.dumps(SECRET), conf=latest,
                         rule_registry=rules)  # fmt: skip
    topics["vault"] = _records(ser, "vault", SECRETS)
    ser = AvroSerializer(
        schema_registry_client=default, schema_str=json.dumps(PAYMENT),
        conf={"schema.id.serializer": header_schema_id_serializer},
    )  # fmt: skip
    topics["payments"] = _records(ser, "payments", PAYMENTS)

    request = AssociationCreateOrUpdateRequest(
        "orders", CLUSTER, "topic-id-orders", "topic",
        [AssociationCreateOrUpdateInfo(":.shop:orders-value", "value", "STRONG", False, None, None)],
    )  # fmt: skip
    shop.create_association(request)
    ser = AvroSerializer(
        schema_registry_client=shop, schema_str=json.dumps(ORDER),
        conf={"subject.name.strategy.type": "ASSOCIATED",
              "subject.name.strategy.conf": {"kafka.cluster.id": CLUSTER}},
    )  # fmt: skip
    topics["orders"] = _records(ser, "orders", ORDERS)
    (orders_subject,) = shop.get_subjects()

    store: list[tuple[bytes, bytes | None]] = []
    ids, guids = {}, {}
    for client, subject in (
        (default, "customers-value"), (default, "vault-value"), (default, "payments-value"),
        (shop, orders_subject),
    ):  # fmt: skip
        rs = client.get_latest_version(subject)
        ids[subject], guids[subject] = rs.schema_id, rs.guid
        store.extend(schema_records(subject, rs))
    (assoc,) = shop.get_associations_by_resource_name("orders", CLUSTER, "topic", ["value"])
    store.append(assoc_record(assoc, "STRONG"))
    store.append((_j({"keytype": "NOOP", "magic": 0}), None))

    write_partition(log_dir, "_schemas", 0, store)
    for topic, records in topics.items():
        write_partition(log_dir, topic, 0, records)
    # the DEK registry's store (dek-registry ``EncryptionKeyId``/``DataEncryptionKey`` JSON): key material
    dek_key = _j({"type": "DEK", "tenant": "default", "kekName": "kek78", "subject": "customers-value",
                  "version": 1, "algorithm": "AES256_GCM", "deleted": False})  # fmt: skip
    write_partition(log_dir, "_dek_registry_keys", 0, [(dek_key, _j({"encryptedKeyMaterial": "AAAA"}))])
    return Built(log_dir, store, topics, ids, guids, orders_subject)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    yield build(tmp_path_factory.mktemp("r78") / "logs")


@pytest.fixture(scope="module")
def registry(built: Built) -> SchemaRegistry:
    return replay(built.store)


# --- the store ----------------------------------------------------------------------------------------------


def test_the_clients_ids_collide_across_contexts(built: Built) -> None:
    """The premise: Schema Registry's per-context ids give ``orders`` the id ``customers`` has."""
    assert built.orders_subject == ":.shop:orders-value"  # AssociatedNameStrategy took the association's
    assert built.ids[":.shop:orders-value"] == built.ids["customers-value"] == 1


def test_contexts_keep_their_own_ids(registry: SchemaRegistry) -> None:
    assert registry.context_names == (".shop",)
    assert registry.all_contexts() == [".shop"]
    assert json.loads(registry.by_id(1).schema)["name"] == "Customer"  # the default context's id 1
    shop = registry.contexts[".shop"][1]
    assert json.loads(shop.schema)["name"] == "Order" and shop.context == ".shop"
    assert shop.versions == ((":.shop:orders-value", 1),) and shop.status == "live"
    assert not any("duplicate ID" in n for n in registry.notes)
    assert any("schema id 1 is another schema in context(s) .shop" in n for n in registry.notes)
    assert registry.resolve(schema_id=1, context=".shop") is shop


def test_associations_give_the_topics_subject_and_context(registry: SchemaRegistry, built: Built) -> None:
    (a,) = registry.associations
    assert (a.resource_type, a.resource_name, a.resource_namespace, a.association_type) == (
        "topic", "orders", CLUSTER, "value"
    )  # fmt: skip
    assert (a.subject, a.lifecycle, a.resource_id) == (":.shop:orders-value", "STRONG", "topic-id-orders")
    assert registry.associated_subject("orders") == built.orders_subject
    assert registry.associated_subject("orders", is_key=True) is None
    assert registry.context_of_topic("orders") == ".shop"
    assert registry.context_of_topic("customers") == "."
    gone = replay([*built.store, (assoc_key(a), None)])  # a tombstone drops it
    assert gone.associations == () and gone.context_of_topic("orders") == "."


def test_a_context_tombstone_drops_it(built: Built) -> None:
    ctx_key = next(k for k, _ in built.store if b'"CONTEXT"' in k)
    assert replay([*built.store, (ctx_key, None)]).context_names == ()


def test_the_md5_field_is_the_guid(registry: SchemaRegistry, built: Built) -> None:
    """The mock registry's GUIDs are random, not an MD5 of the text: only the ``md5`` field gives them."""
    for subject in ("customers-value", "vault-value", "payments-value"):
        assert registry.by_id(built.ids[subject]).guid == built.guids[subject]
    _, value, headers = built.topics["payments"][0]
    ((name, header),) = headers
    assert name == "__value_schema_id" and header[:1] == b"\x01" and uuid.UUID(bytes=header[1:]) == uuid.UUID(
        built.guids["payments-value"]
    )  # fmt: skip
    r = writer_of(value, header, registry)
    assert isinstance(r, Resolved) and r.writer.schema_id == built.ids["payments-value"] and r.payload == 0


def test_encrypted_fields_are_named(registry: SchemaRegistry, built: Built) -> None:
    s = registry.by_id(built.ids["customers-value"])
    assert s.encrypted_fields == ("card", "ssn") and not s.payload_encrypted
    assert registry.by_id(built.ids["payments-value"]).encrypted_fields == ()


def test_an_encrypted_payload_goes_to_the_side_table(registry: SchemaRegistry, built: Built) -> None:
    assert registry.by_id(built.ids["vault-value"]).payload_encrypted
    for _, value, _ in built.topics["vault"]:
        assert writer_of(value, None, registry) == ENCRYPTED_PAYLOAD


def test_field_encrypted_records_decode_with_the_ciphertext(registry: SchemaRegistry, built: Built) -> None:
    """The record decodes (the fields are still Avro strings and bytes): the PII fields hold the ciphertext,
    never the plaintext; the other fields are as written."""
    dec = Decoders(registry)
    for (_, value, _), want in zip(built.topics["customers"], CUSTOMERS, strict=True):
        r = writer_of(value, None, registry)
        assert isinstance(r, Resolved)
        got = dec.get(r.writer).decode([value[r.payload :]])  # type: ignore[union-attr]
        row = got.values.to_pylist()[0]
        assert (row["id"], row["name"]) == (want["id"], want["name"])
        assert len(base64.b64decode(row["ssn"])) == 12 + len(want["ssn"]) + 16 and row["ssn"] != want["ssn"]
        assert len(row["card"]) == 12 + len(want["card"]) + 16


def test_dek_registry_keys_is_internal() -> None:
    from logdoctor.logdir.read_plan import is_internal_topic

    assert is_internal_topic("_dek_registry_keys") and not is_internal_topic("_schemas_backup")


CONTACT = {
    "type": "object",
    "title": "Contact",
    "properties": {
        "id": {"type": "integer"},
        "note": {"type": "string"},
        "address": {
            "type": "object",
            "properties": {
                "email": {"type": "string", "confluent:tags": ["PII"]},
                "city": {"type": "string"},
            },
        },
    },
}
CONTACT_VALUE = {"id": 7, "note": "call after 5", "address": {"email": "a@b.c", "city": "Oslo"}}
AVRO_META = {
    "type": "record", "name": "Account", "namespace": "bank",
    "fields": [
        {"name": "iban", "type": "string"}, {"name": "owner", "type": "string"},
        {"name": "inner",
         "type": {"type": "record", "name": "Inner", "fields": [{"name": "pin", "type": "string"}]}},
    ],
}  # fmt: skip
AVRO_META_VALUE = {"iban": "NO93 8601 1117 947", "owner": "Ola", "inner": {"pin": "1234"}}


def _changed(before: object, after: object, path: str = "") -> set[str]:
    if isinstance(before, dict):
        assert isinstance(after, dict)
        return {p for k in before for p in _changed(before[k], after[k], f"{path}{k}.")}
    return set() if before == after else {path[:-1]}


@pytest.mark.parametrize("fmt", ["JSON", "AVRO"])
def test_the_fields_marked_are_those_the_client_encrypts(fmt: str) -> None:
    """An oracle apart from the marking: the fields confluent-kafka's rule engine transformed (the decoded
    value against the one written) are exactly the encrypted fields named, for inline tags and for the
    metadata's tags (wildcards in the client's field names: ``$.note`` for JSON, ``bank.*.pin`` for Avro)."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.common.schema_registry_client import (
        Metadata,
        MetadataTags,
        Rule,
        RuleKind,
        RuleMode,
        RuleParams,
        RuleSet,
    )  # fmt: skip
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient.new_client({"url": f"mock://r78-{fmt}"})
    rule = Rule(
        "encryptPII", "", RuleKind.TRANSFORM, RuleMode.WRITE, "ENCRYPT", ["PII"], RuleParams(PARAMS),
        None, None, "ERROR,NONE", False,
    )  # fmt: skip
    schema, value, tags = (
        (CONTACT, CONTACT_VALUE, {"$.note": ["PII"]}) if fmt == "JSON" else
        (AVRO_META, AVRO_META_VALUE, {"bank.*.pin": ["PII"], "bank.Account.owner": ["PII"]})
    )  # fmt: skip
    text = json.dumps(schema)
    meta = Metadata(MetadataTags(tags), None, None)
    rs = client.register_schema_full_response("t-value", Schema(text, fmt, [], meta, RuleSet(None, [rule])))
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    cls = JSONSerializer if fmt == "JSON" else AvroSerializer
    ser = cls(schema_str=text, schema_registry_client=client, conf=conf, rule_registry=_executors())
    data = ser(json.loads(json.dumps(value)), SerializationContext("t", MessageField.VALUE))
    reg = replay(schema_records("t-value", client.get_latest_version("t-value")))
    s = reg.by_id(rs.schema_id)
    r = writer_of(data, None, reg)
    assert isinstance(r, Resolved)
    decoder = Decoders(reg).get(r.writer)
    got = decoder.decode([data[r.payload :]]).values.to_pylist()[0]  # type: ignore[union-attr]
    if fmt == "JSON":
        got = json.loads(got) if isinstance(got, str) else got
    assert s.encrypted_fields and set(s.encrypted_fields) == _changed(value, got)

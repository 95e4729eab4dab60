"""Schema Registry's store, the ``_schemas`` topic, replayed as the registry's ``KafkaStore`` reads it.

The rules restated, from confluentinc/schema-registry ``core/src/main/java/io/confluent/kafka/schemaregistry/
storage/`` (cited as SR:File):

- SR:KafkaStoreReaderThread.java ``doWork``: the records in offset order, as a ``read_uncommitted`` consumer
  gets them. A key that does not deserialize is logged ("Failed to deserialize the schema or config key at
  offset N") and skipped, so is a value that does not; a NOOP key only moves the reader's offset; a null
  value deletes the key from the local store (``localStore.delete``), any other value replaces the key's
  (``localStore.put``).
- SR:serialization/SchemaRegistrySerializer.java: keys and values are JSON; the key's ``keytype`` is one of
  SR:SchemaRegistryKeyType.java (SCHEMA, CONFIG, MODE, NOOP, DELETE_SUBJECT, CLEAR_SUBJECT, CONTEXT, ASSOC);
  a SCHEMA key's ``magic`` must be 0 or 1. SR:SchemaKey.java, SR:ConfigKey.java (a global CONFIG/MODE key has
  no subject), SR:ModeKey.java, SR:NoopKey.java, SR:DeleteSubjectKey.java, SR:ClearSubjectKey.java.
- Contexts (SR:ContextKey.java, SR:ContextValue.java: key ``{keytype: CONTEXT, tenant, context}``, value
  ``{tenant, context}``; a tombstone drops it). A subject ``:.ctx:name`` is in context ``.ctx``, any other in
  the default context ``.`` (client ``utils/QualifiedSubject.java``). Ids and GUIDs are per context
  (SR:id/IncrementalIdGenerator.java ``maxIds`` by context; SR:InMemoryCache.java ``schemaKeyById``,
  ``idByGuid`` look in one context), so is the duplicate-id check (SR:KafkaStoreMessageHandler.java
  ``validateUpdate`` passes the subject's context).
- Associations (8.x; SR:AssociationKey.java: key ``{keytype: ASSOC, tenant, resourceName,
  resourceNamespace, resourceType, associationType, subject, magic: 0}``; SR:AssociationValue.java: value
  ``{subject, guid, tenant, resourceName, resourceNamespace, resourceId, resourceType, associationType,
  lifecycle: STRONG|WEAK, frozen, createTs}``; a tombstone drops the association,
  SR:KafkaStoreMessageHandler.java ``handleAssociationUpdate``). A topic's association of type ``value`` or
  ``key`` names the subject a serializer's ``AssociatedNameStrategy`` registers under (confluent-kafka-python
  ``_sync/serde.py`` ``AssociatedNameStrategy``: one association, else the fallback strategy).
- SR:SchemaValue.java: ``schemaType`` absent means AVRO (5.5-7.x write none for Avro; 8.x write
  ``"AVRO"``); ``references`` [{name, subject, version}] (SR:SchemaReference.java); ``deleted``; ``md5``,
  ``metadata``, ``ruleSet`` (7.4+: the data contract, :mod:`.data_contract`).
- SR:KafkaStoreMessageHandler.java: ``validateUpdate`` does not apply a SCHEMA value whose id a version of
  the store already holds with another schema text ("Found a schema with duplicate ID"); ``handleUpdate``:
  DELETE_SUBJECT marks each version 1..V of the subject deleted (the SCHEMA records are not rewritten),
  CLEAR_SUBJECT drops the subject's deleted versions from the store (SR:InMemoryCache.java
  ``clearSubjects``), a tombstone of any other key than SCHEMA, CONFIG and MODE changes nothing.
- The GUID: SR:MD5.java ``ofSchema`` (the value's ``md5`` when it has one, else the MD5 of the schema as
  client ``rest/entities/Schema.java`` ``updateHash`` feeds it), read as a UUID; SR:InMemoryCache.java
  ``addToSchemaHashToGuid`` maps it to the id last registered (or soft-deleted) with it, and a tombstone
  leaves that mapping.

Karapace reads the same records the same way (Aiven-Open/karapace ``src/karapace/core/schema_reader.py``:
``schemaType`` defaults to AVRO, DELETE_SUBJECT deletes the versions up to ``version``, a SCHEMA tombstone is
a hard delete, a key or value that is not JSON is logged and skipped).

The status of an id (the typed tables' definition): **live** when some SCHEMA entry of the store holds it
not deleted, **soft_deleted** when every entry holding it is deleted (by its flag or a DELETE_SUBJECT),
**hard_deleted** when no entry holds it any more (every version tombstoned, or cleared): its text is still
known from the log, the registry no longer serves it.

The ids a frame names are the default context's (a deserializer's lookup with an unqualified subject
looks there: SR:InMemoryCache.java ``schemaKeyById``); a non-default context's id joins them unless another
context holds it with another schema (then only :attr:`SchemaRegistry.contexts` has it, with a note), and
:meth:`SchemaRegistry.resolve` takes the topic's context (:meth:`SchemaRegistry.context_of_topic`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.errors import CorruptRecordError
from logdoctor.formats.registry.data_contract import encrypted_fields, payload_encrypted
from logdoctor.formats.registry.reasons import (
    ENCRYPTED_PAYLOAD,
    SCHEMA_HARD_DELETED,
    UNKNOWN_SCHEMA_GUID,
    UNKNOWN_SCHEMA_ID,
)

__all__ = [
    "DEFAULT_CONTEXT",
    "HARD_DELETED",
    "KEY_TYPES",
    "LIVE",
    "SOFT_DELETED",
    "Association",
    "RegisteredSchema",
    "RegistryConflictError",
    "SchemaReference",
    "SchemaRegistry",
    "SubjectVersion",
    "decode_store_record",
    "merge",
    "replay",
    "replay_records",
    "schema_guid",
    "split_subject",
]

LIVE = "live"
SOFT_DELETED = "soft_deleted"
HARD_DELETED = "hard_deleted"
_STATUS_RANK = {LIVE: 0, SOFT_DELETED: 1, HARD_DELETED: 2}

#: the key types the replay reads (SR:SchemaRegistryKeyType.java)
KEY_TYPES = ("SCHEMA", "CONFIG", "MODE", "NOOP", "DELETE_SUBJECT", "CLEAR_SUBJECT", "CONTEXT", "ASSOC")
#: Schema Registry's default context (client ``utils/QualifiedSubject.java`` ``DEFAULT_CONTEXT``)
DEFAULT_CONTEXT = "."


def split_subject(subject: str) -> tuple[str, str]:
    """``(context, subject)`` of a qualified subject: ``:.ctx:name`` -> ``(".ctx", "name")``, ``:.ctx`` ->
    ``(".ctx", "")``, any other -> ``(".", subject)`` (client ``utils/QualifiedSubject.java``)."""
    if subject.startswith(":."):
        ix = subject.find(":", 2)
        if ix >= 0:
            return subject[1:ix], subject[ix + 1 :]
        return subject[1:], ""
    return DEFAULT_CONTEXT, subject


class RegistryConflictError(ValueError):
    """Two sources give one schema id different schema texts: two registries, not copies of one."""

    def __init__(self, schema_id: int, first: str, second: str) -> None:
        self.schema_id = schema_id
        self.first = first
        self.second = second
        super().__init__(
            f"schema id {schema_id} has one schema in {first} and another in {second}: these are two "
            "registries (two clusters?), not copies of one _schemas topic; give one registry's copies"
        )


@dataclass(frozen=True, slots=True)
class SchemaReference:
    """A reference of a schema to another subject's version (Avro named type, Protobuf import, JSON $ref)."""

    name: str
    subject: str
    version: int


@dataclass(slots=True)
class RegisteredSchema:
    """One schema id of the registry."""

    id: int
    schema_type: str  # AVRO | PROTOBUF | JSON
    schema: str  # the registered text
    references: tuple[SchemaReference, ...] = ()
    subject: str = ""  # the first subject and version registered with this id
    version: int = 0
    versions: tuple[tuple[str, int], ...] = ()  # every (subject, version) registered with this id
    status: str = LIVE  # live | soft_deleted | hard_deleted
    guid: str | None = None
    context: str = DEFAULT_CONTEXT  # the context of its subjects (``.``: the default one)
    metadata: dict[str, Any] | None = None  # the data contract's metadata (7.4+)
    rule_set: dict[str, Any] | None = None  # the data contract's rule set (7.4+)
    #: the field paths an ENCRYPT rule encrypts on write (:mod:`.data_contract`)
    encrypted_fields: tuple[str, ...] = ()
    #: whether an ENCRYPT_PAYLOAD rule encrypts the whole payload on write
    payload_encrypted: bool = False


@dataclass(frozen=True, slots=True)
class Association:
    """An association of a resource (a topic) with a subject (SR:AssociationValue.java; 8.x)."""

    resource_name: str
    resource_namespace: str
    resource_type: str  # "topic"
    association_type: str  # "value" | "key"
    subject: str
    resource_id: str = ""
    guid: str = ""
    lifecycle: str = "WEAK"  # STRONG | WEAK
    frozen: bool = False
    tenant: str = ""


@dataclass(frozen=True, slots=True)
class SubjectVersion:
    """One SCHEMA entry of the store after the replay: a (subject, version), its id, whether deleted."""

    subject: str
    version: int
    id: int
    deleted: bool = False


@dataclass(slots=True)
class SchemaRegistry:
    """The registry a replay of ``_schemas`` gives: by id, by GUID, by (subject, version).

    ``config`` and ``mode``: the compatibility level and the mode per subject (None: the global one);
    ``subject_versions``: the store's SCHEMA entries (hard-deleted versions are not there); ``guids``: GUID
    -> id; ``notes``: what the replay skipped that is not an error (key types it does not read, a duplicate
    id); ``errors``: records that did not parse, each naming its offset. Plain values: it pickles."""

    schemas: dict[int, RegisteredSchema] = field(default_factory=dict)
    config: dict[str | None, str] = field(default_factory=dict)
    mode: dict[str | None, str] = field(default_factory=dict)
    subject_versions: dict[tuple[str, int], SubjectVersion] = field(default_factory=dict)
    guids: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: every non-default context's schemas by id (SR keeps one id space per context)
    contexts: dict[str, dict[int, RegisteredSchema]] = field(default_factory=dict)
    #: the contexts of CONTEXT records (SR:ContextKey.java), sorted
    context_names: tuple[str, ...] = ()
    associations: tuple[Association, ...] = ()

    def all_contexts(self) -> list[str]:
        """The contexts of CONTEXT records and of subjects, sorted (the default one ``.`` not named)."""
        return sorted(set(self.context_names) | set(self.contexts))

    def associated_subject(self, topic: str, is_key: bool = False) -> str | None:
        """The subject a serializer's ``AssociatedNameStrategy`` takes for ``topic``: its one association of
        type ``key``/``value``; None for none or several (the client's fallback, or its error)."""
        kind = "key" if is_key else "value"
        found = {
            a.subject
            for a in self.associations
            if a.resource_type == "topic" and a.resource_name == topic and a.association_type == kind
        }
        return found.pop() if len(found) == 1 else None

    def context_of_topic(self, topic: str, is_key: bool = False) -> str:
        """The context a topic's frames name ids of: its associated subject's (a deserializer with
        ``AssociatedNameStrategy`` asks for the id with that subject: confluent-kafka-python
        ``_sync/serde.py``; SR:InMemoryCache.java ``schemaKeyById`` looks in the subject's context), else
        the default context (an unqualified subject's)."""
        subject = self.associated_subject(topic, is_key)
        return DEFAULT_CONTEXT if subject is None else split_subject(subject)[0]

    def in_context(self, context: str | None) -> dict[int, RegisteredSchema]:
        """The id space of ``context`` (None or ``.``: the ids frames name by default)."""
        return self.schemas if context in (None, DEFAULT_CONTEXT) else self.contexts.get(context, {})

    def by_id(self, schema_id: int) -> RegisteredSchema | None:
        return self.schemas.get(schema_id)

    def by_guid(self, guid: str) -> RegisteredSchema | None:
        """The schema of a GUID (canonical UUID text, any case)."""
        key = guid.lower()
        schema_id = self.guids.get(key)
        if schema_id is not None:
            return self.schemas.get(schema_id)
        return next((s for s in self.schemas.values() if s.guid == key), None)

    def subject_version(self, subject: str, version: int) -> RegisteredSchema | None:
        """The schema of a subject's version: the store's entry, else (a hard-deleted version) the id that
        was registered under it."""
        entry = self.subject_versions.get((subject, version))
        if entry is not None:
            return self.schemas.get(entry.id)
        for s in self.schemas.values():
            if (subject, version) in s.versions or (s.subject, s.version) == (subject, version):
                return s
        return None

    def resolve(
        self, schema_id: int | None = None, guid: str | None = None, context: str | None = None
    ) -> RegisteredSchema | str:
        """The schema a frame names (by ``guid`` when given, else by ``schema_id``; in ``context``, None: the
        ids frames name by default), or why it does not decode: ``unknown_schema_guid``,
        ``unknown_schema_id``, ``schema_hard_deleted``, ``encrypted_payload`` (an ENCRYPT_PAYLOAD rule: the
        payload is ciphertext) (the side-table reasons of :mod:`.decoder`). A soft-deleted schema resolves
        (its records decode, flagged). A GUID only a non-default context has, under an id the default space
        gives another schema, does not resolve here: a decoder finds its schema by id."""
        space = self.in_context(context)
        if guid is not None:
            key = guid.lower()
            found = next((s for s in space.values() if s.guid == key), None) if context else self.by_guid(key)
            if found is None or space.get(found.id) is not found:
                return UNKNOWN_SCHEMA_GUID
        elif schema_id is not None:
            found = space.get(schema_id)
            if found is None:
                return UNKNOWN_SCHEMA_ID
        else:
            raise ValueError("resolve needs a schema_id or a guid")
        if found.status == HARD_DELETED:
            return SCHEMA_HARD_DELETED
        return ENCRYPTED_PAYLOAD if found.payload_encrypted else found

    def referenced(self, schema: RegisteredSchema) -> list[RegisteredSchema]:
        """The schemas ``schema``'s references name, and theirs, each once, every one after the schemas it
        references (dependency order; ``schema`` itself not included). A reference to a version the
        registry does not know is left out: the schema's own compile then names what it lacks."""
        out: list[RegisteredSchema] = []
        done: set[int] = {schema.id}
        on_path: set[int] = {schema.id}

        def visit(s: RegisteredSchema) -> None:
            for ref in s.references:
                target = self.subject_version(ref.subject, ref.version)
                if target is None or target.id in done or target.id in on_path:
                    continue
                on_path.add(target.id)
                visit(target)
                on_path.discard(target.id)
                done.add(target.id)
                out.append(target)

        visit(schema)
        return out

    def subjects(self, include_deleted: bool = False) -> list[str]:
        """The subjects with a live version, sorted (Schema Registry's ``GET /subjects``);
        ``include_deleted``: also those whose versions are all soft-deleted (``?deleted=true``)."""
        return sorted(
            {sv.subject for sv in self.subject_versions.values() if include_deleted or not sv.deleted}
        )


# --- GUIDs ---------------------------------------------------------------------------------------------


def schema_guid(
    schema: str,
    references: Sequence[SchemaReference] = (),
    *,
    md5: str | None = None,
    metadata: bool = False,
    rule_set: bool = False,
) -> str | None:
    """The GUID of a registered schema as Schema Registry 8.x gives it (SR:MD5.java ``ofSchema``), as
    canonical UUID text; None where it is not computed here.

    - a value with ``md5`` (base64 of 16 bytes; SR:encoder/MetadataEncoderService.java stores it before it
      encrypts the metadata) gives it as is;
    - a schema with no references, metadata or rule set: the MD5 of the schema string's UTF-8 bytes (client
      ``Schema.updateHash`` feeds nothing else);
    - otherwise None. ``Schema.updateHash`` then also feeds each reference's name, subject and 4-byte version
      (client ``SchemaReference.updateHash``), the metadata's maps and the rule set in their Java iteration
      order. The typed data's facts (facts/counts.json, computed independently of this code) define the
      GUID only for the first case and give null for the schema with references: no GUID is claimed here
      that this oracle cannot confirm, and a metadata map's Java order is not in the JSON text. A
      header-framed record naming such a schema's GUID goes to the side table as ``unknown_schema_guid``.
    """
    if md5:
        try:
            raw = base64.b64decode(md5, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == 16:
            return str(uuid.UUID(bytes=raw))
    if references or metadata or rule_set:
        return None
    return str(uuid.UUID(bytes=hashlib.md5(schema.encode("utf-8")).digest()))


# --- the replay ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    id: int
    deleted: bool


@dataclass(slots=True)
class _Text:
    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...]
    guid: str | None
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None
    versions: list[tuple[str, int]] = field(default_factory=list)


def _json_object(data: bytes | memoryview) -> dict[str, Any]:
    obj = _json_loads(data)
    if not isinstance(obj, dict):
        raise ValueError(f"a JSON object, found {type(obj).__name__}")
    return obj


def _json_loads(data: bytes | memoryview) -> Any:
    """The JSON of a store record; raises ValueError (or UnicodeDecodeError) for one that is not JSON, and
    for one nested deeper than Python's parser goes: Jackson refuses those too (its ``StreamReadConstraints``
    allow 1,000 levels), so Schema Registry's reader logs and skips the record (SR:KafkaStoreReaderThread.java
    ``doWork``: a ``SerializationException`` of SR:SchemaRegistrySerializer.java ``deserializeKey``)."""
    try:
        return json.loads(bytes(data))
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _references(raw: object) -> tuple[SchemaReference, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError("references: a list")
    out = []
    for r in raw:
        if not (
            isinstance(r, dict)
            and isinstance(r.get("name"), str)
            and isinstance(r.get("subject"), str)
            and _is_int(r.get("version"))
        ):
            raise ValueError(f"references: name, subject and version, found {r!r}")
        out.append(SchemaReference(r["name"], r["subject"], r["version"]))
    return tuple(out)


class _Replay:
    """The store as the reader thread builds it, one record at a time. Every record costs time in its own
    subject only: ``versions`` indexes the store by subject, ``holders`` counts the entries of each id (a
    DELETE_SUBJECT or CLEAR_SUBJECT touches its subject's versions, not the whole store)."""

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.store: dict[tuple[str, int], _Entry] = {}
        self.versions: dict[str, dict[int, _Entry]] = {}  # subject -> version -> the store's entry
        self.holders: dict[tuple[str, int], int] = {}  # (context, id) -> how many store entries hold it
        self.texts: dict[tuple[str, int], _Text] = {}  # by (context, id): ids are per context
        self.guids: dict[tuple[str, str], int] = {}  # (context, GUID) -> id
        self.contexts: dict[tuple[str, str], None] = {}  # (tenant, context) of CONTEXT records
        self.associations: dict[tuple[Any, ...], Association] = {}
        self.config: dict[str | None, str] = {}
        self.mode: dict[str | None, str] = {}
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.skipped: dict[str, list[int]] = {}  # key type not read -> offsets

    def where(self, offset: int) -> str:
        return f"{self.source} offset {offset}" if self.source else f"offset {offset}"

    def apply(self, offset: int, key: bytes | memoryview | None, value: bytes | memoryview | None) -> None:
        if key is None:
            self.errors.append(f"{self.where(offset)}: a record with no key: skipped")
            return
        try:
            k = _json_object(key)
        except (ValueError, UnicodeDecodeError) as exc:
            self.errors.append(f"{self.where(offset)}: the key is not a JSON object ({exc}): skipped")
            return
        keytype = k.get("keytype")
        if not isinstance(keytype, str):
            self.errors.append(f"{self.where(offset)}: a key with no keytype: skipped")
            return
        if keytype == "NOOP":
            return  # the reader's "reached the end" marker (SR:KafkaStoreReaderThread.java noopKey)
        if keytype not in KEY_TYPES:
            self.skipped.setdefault(keytype, []).append(offset)
            return
        v: dict[str, Any] | None = None
        if value is not None:
            try:
                v = _json_object(value)
            except (ValueError, UnicodeDecodeError) as exc:
                self.errors.append(
                    f"{self.where(offset)}: the value of a {keytype} key is not a JSON object ({exc}): "
                    "skipped"
                )
                return
        try:
            getattr(self, "_" + keytype.lower())(offset, k, v)
        except (ValueError, KeyError, TypeError) as exc:
            self.errors.append(
                f"{self.where(offset)}: a {keytype} record Schema Registry cannot read ({exc}): skipped"
            )

    def _schema(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        subject, version, magic = k.get("subject"), k.get("version"), k.get("magic", 0)
        if magic not in (0, 1):  # SchemaRegistrySerializer.validateMagicByte
            raise ValueError(f"a SCHEMA key of magic {magic!r} (0 or 1)")
        if not isinstance(subject, str) or not _is_int(version):
            raise ValueError("a SCHEMA key with a subject and a version")
        if v is None:  # a hard delete
            self._drop(subject, version)
            return
        schema_id, text = v["id"], v["schema"]
        if not _is_int(schema_id) or not isinstance(text, str):
            raise ValueError("a SCHEMA value with an integer id and a schema string")
        schema_type = v.get("schemaType") or "AVRO"
        refs = _references(v.get("references"))
        deleted = bool(v.get("deleted", False))
        ctx = split_subject(subject)[0]
        known = self.texts.get((ctx, schema_id))
        if known is not None and known.schema != text:
            if self.holders.get((ctx, schema_id)):
                self.notes.append(
                    f"{self.where(offset)}: schema id {schema_id} for {subject} version {version} has "
                    "another schema than the id's registered one: not applied (Schema Registry: \"Found a "
                    'schema with duplicate ID")'
                )
                return
            self.notes.append(
                f"{self.where(offset)}: schema id {schema_id}, hard-deleted before, is registered again with "
                "another schema: the new one is kept"
            )
            known = None
        guid = schema_guid(
            text, refs, md5=v.get("md5"), metadata=v.get("metadata") is not None,
            rule_set=v.get("ruleSet") is not None,
        )  # fmt: skip
        metadata, rule_set = v.get("metadata"), v.get("ruleSet")
        if known is None:
            known = self.texts[(ctx, schema_id)] = _Text(
                str(schema_type),
                text,
                refs,
                guid,
                metadata if isinstance(metadata, dict) else None,
                rule_set if isinstance(rule_set, dict) else None,
            )
        if (subject, version) not in known.versions:
            known.versions.append((subject, version))
        self._drop(subject, version)
        entry = self.store[(subject, version)] = _Entry(schema_id, deleted)
        self.versions.setdefault(subject, {})[version] = entry
        self.holders[(ctx, schema_id)] = self.holders.get((ctx, schema_id), 0) + 1
        if guid is not None:
            self.guids[(ctx, guid)] = schema_id

    def _context(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        context = k.get("context", (v or {}).get("context"))  # Jackson reads a key without one as null
        if not isinstance(context, str):
            return
        name = (str(k.get("tenant") or ""), context)
        if v is None:
            self.contexts.pop(name, None)
        else:
            self.contexts[name] = None

    def _assoc(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        names = ("tenant", "resourceName", "resourceNamespace", "resourceType", "associationType", "subject")
        key = tuple(k.get(n) for n in names)
        if k.get("magic", 0) != 0 or not all(isinstance(x, str) for x in key[1:]):
            raise ValueError("an ASSOC key with a resource name, namespace, type, association type, subject")
        if v is None:
            self.associations.pop(key, None)
            return
        for n in ("guid", "resourceId", "lifecycle"):
            if not isinstance(v.get(n), str):
                raise ValueError(f"an ASSOC value with a {n}")
        self.associations[key] = Association(
            str(v.get("resourceName", key[1])),
            str(v.get("resourceNamespace", key[2])),
            str(v.get("resourceType", key[3])),
            str(v.get("associationType", key[4])),
            str(v.get("subject", key[5])),
            v["resourceId"],
            v["guid"],
            v["lifecycle"],
            bool(v.get("frozen", False)),
            str(v.get("tenant") or k.get("tenant") or ""),
        )

    def _subject_setting(
        self, table: dict[str | None, str], field_name: str, k: dict[str, Any], v: dict[str, Any] | None
    ) -> None:
        subject = k.get("subject")
        setting = None if v is None else v.get(field_name)
        if setting is None:  # a tombstone (or a value without the setting): the subject's setting is gone
            table.pop(subject, None)
        else:
            table[subject] = str(setting)

    def _config(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        self._subject_setting(self.config, "compatibilityLevel", k, v)

    def _mode(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        self._subject_setting(self.mode, "mode", k, v)

    def _delete_subject(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        if v is None:
            return  # a tombstone of a DELETE_SUBJECT key changes nothing
        subject, upto = v.get("subject", k.get("subject")), v["version"]
        if not _is_int(upto):
            raise ValueError("a DELETE_SUBJECT value with an integer version")
        for version, entry in self.versions.get(subject, {}).items():
            if version <= upto:
                entry.deleted = True

    def _clear_subject(self, offset: int, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        if v is None:
            return
        subject = v.get("subject", k.get("subject"))
        versions = self.versions.get(subject, {})
        for version in [version for version, e in versions.items() if e.deleted]:
            self._drop(subject, version)

    def _drop(self, subject: str, version: int) -> None:
        """The store's entry of (subject, version) removed, with its indexes."""
        entry = self.store.pop((subject, version), None)
        if entry is None:
            return
        versions = self.versions[subject]
        del versions[version]
        if not versions:
            del self.versions[subject]
        held = (split_subject(subject)[0], entry.id)
        left = self.holders[held] - 1
        if left:
            self.holders[held] = left
        else:
            del self.holders[held]

    def registry(self) -> SchemaRegistry:
        holders: dict[tuple[str, int], list[_Entry]] = {}
        for (subject, _), entry in self.store.items():
            holders.setdefault((split_subject(subject)[0], entry.id), []).append(entry)
        schemas: dict[int, RegisteredSchema] = {}
        contexts: dict[str, dict[int, RegisteredSchema]] = {}
        for ctx, schema_id in sorted(self.texts):
            t = self.texts[(ctx, schema_id)]
            held = holders.get((ctx, schema_id), [])
            status = HARD_DELETED if not held else LIVE if any(not e.deleted for e in held) else SOFT_DELETED
            subject, version = t.versions[0]
            s = RegisteredSchema(
                schema_id,
                t.schema_type,
                t.schema,
                t.references,
                subject,
                version,
                tuple(t.versions),
                status,
                t.guid,
                ctx,
                t.metadata,
                t.rule_set,
                encrypted_fields(t.schema_type, t.schema, t.metadata, t.rule_set),
                payload_encrypted(t.rule_set),
            )
            (schemas if ctx == DEFAULT_CONTEXT else contexts.setdefault(ctx, {}))[schema_id] = s
        notes = list(self.notes)
        guids = {g: i for (ctx, g), i in self.guids.items() if ctx == DEFAULT_CONTEXT}
        others: dict[int, list[RegisteredSchema]] = {}
        for space in contexts.values():
            for schema_id, s in space.items():
                others.setdefault(schema_id, []).append(s)
        for schema_id, held_by in sorted(others.items()):
            texts = {s.schema for s in held_by} | (
                {schemas[schema_id].schema} if schema_id in schemas else set()
            )
            if len(texts) > 1:
                where = ", ".join(s.context for s in held_by)
                notes.append(
                    f"schema id {schema_id} is another schema in context(s) {where} than in "
                    f"{'the default context' if schema_id in schemas else 'another context'}: a frame naming "
                    "it resolves in its topic's context (an association names it), else in the default "
                    "context's ids (Schema Registry keeps ids per context)"
                )
            elif schema_id not in schemas:
                schemas[schema_id] = held_by[0]
                if held_by[0].guid is not None:
                    guids.setdefault(held_by[0].guid, schema_id)
        schemas = dict(sorted(schemas.items()))
        for keytype, offsets in self.skipped.items():
            notes.append(
                f"{len(offsets)} record(s) of key type {keytype} not read ({self.where(offsets[0])} first): "
                "a key type Schema Registry does not have (SchemaRegistryKeyType)"
            )
        return SchemaRegistry(
            schemas,
            dict(self.config),
            dict(self.mode),
            {key: SubjectVersion(key[0], key[1], e.id, e.deleted) for key, e in sorted(self.store.items())},
            guids,
            notes,
            list(self.errors),
            contexts,
            tuple(sorted({c for _, c in self.contexts})),
            tuple(self.associations[k] for k in sorted(self.associations, key=repr)),
        )


def replay_records(
    records: Iterable[tuple[int, bytes | memoryview | None, bytes | memoryview | None]],
    source: str | None = None,
) -> SchemaRegistry:
    """The registry after the ``(offset, key, value)`` records of a ``_schemas`` partition, in offset order;
    ``source`` (the partition's path) and the offset name each record that did not parse
    (:attr:`SchemaRegistry.errors`): the replay goes on after it, as Schema Registry's reader does."""
    r = _Replay(source)
    for offset, key, value in records:
        r.apply(offset, key, value)
    return r.registry()


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> SchemaRegistry:
    """The registry after the ``(key, value)`` records of a ``_schemas`` partition, in offset order (the
    errors count records from 0: the offsets, when the topic was never compacted)."""
    return replay_records((i, k, v) for i, (k, v) in enumerate(records))


# --- several sources -------------------------------------------------------------------------------------


def _same_schema(a: RegisteredSchema, b: RegisteredSchema) -> bool:
    return (a.schema, a.schema_type, a.references) == (b.schema, b.schema_type, b.references)


def merge(registries: Sequence[tuple[str, SchemaRegistry]]) -> SchemaRegistry:
    """One registry of several ``(source, registry)``: copies of one ``_schemas`` topic (another broker's
    replica, a partition folder kept elsewhere) merge silently. An id in several keeps the most usable
    status (live, then soft-deleted: a copy that is behind has not seen a later delete, or one that is
    ahead a re-registration) and every (subject, version); a setting (config, mode) or a (subject, version)
    the sources disagree on keeps the first source's, with a note. The same id with another schema raises
    :class:`RegistryConflictError` naming both sources."""
    if len(registries) == 1:
        return registries[0][1]
    out = SchemaRegistry()
    origin: dict[int, str] = {}
    for name, reg in registries:
        for schema_id, s in reg.schemas.items():
            prev = out.schemas.get(schema_id)
            if prev is None:
                out.schemas[schema_id] = dataclasses.replace(s)
                origin[schema_id] = name
                continue
            if not _same_schema(prev, s):
                raise RegistryConflictError(schema_id, origin[schema_id], name)
            prev.versions = prev.versions + tuple(v for v in s.versions if v not in prev.versions)
            if _STATUS_RANK[s.status] < _STATUS_RANK[prev.status]:
                prev.status = s.status
            prev.guid = prev.guid or s.guid
        for key, sv in reg.subject_versions.items():
            have = out.subject_versions.get(key)
            if have is None:
                out.subject_versions[key] = sv
            elif have.id != sv.id:
                out.notes.append(
                    f"{key[0]} version {key[1]} is id {have.id} in an earlier source and id {sv.id} in "
                    f"{name}: the first kept"
                )
            elif have.deleted and not sv.deleted:
                out.subject_versions[key] = sv
        for what, table, theirs in (("compatibility", out.config, reg.config), ("mode", out.mode, reg.mode)):
            for subject, setting in theirs.items():
                if subject in table and table[subject] != setting:
                    out.notes.append(
                        f"{what} of {subject or 'the registry (global)'}: {table[subject]} in an earlier "
                        f"source, {setting} in {name}: the first kept"
                    )
                table.setdefault(subject, setting)
        for guid, schema_id in reg.guids.items():
            out.guids.setdefault(guid, schema_id)
        for ctx, space in reg.contexts.items():
            for schema_id, s in space.items():
                out.contexts.setdefault(ctx, {}).setdefault(schema_id, s)
        out.context_names = tuple(sorted(set(out.context_names) | set(reg.context_names)))
        out.associations = out.associations + tuple(a for a in reg.associations if a not in out.associations)
        out.notes.extend(reg.notes)
        out.errors.extend(reg.errors)
    out.schemas = dict(sorted(out.schemas.items()))
    out.subject_versions = dict(sorted(out.subject_versions.items()))
    return out


# --- dump --------------------------------------------------------------------------------------------------


def decode_store_record(
    key: bytes | memoryview | None, value: bytes | memoryview | None, *, source: str | None = None
) -> dict[str, Any]:
    """A ``_schemas`` record for ``dump``: ``{"keytype", "key", "value"}`` with the key's and the value's
    JSON as objects (``value`` None for a tombstone). A key or value that is not JSON raises
    :class:`~logdoctor.errors.CorruptRecordError` (an unknown key type does not: it is shown as it is)."""
    parts: dict[str, Any] = {}
    for name, data in (("key", key), ("value", value)):
        if data is None:
            parts[name] = None
            continue
        try:
            parts[name] = _json_loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptRecordError(
                f"a Schema Registry {name}: JSON", source=source, found=f"{bytes(data[:40])!r} ({exc})"
            ) from None
    k = parts["key"]
    if not isinstance(k, dict):
        raise CorruptRecordError(
            "a Schema Registry key: a JSON object with a keytype", source=source, found=repr(k)[:60]
        )
    return {"keytype": k.get("keytype"), "key": k, "value": parts["value"]}

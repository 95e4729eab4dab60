"""Apicurio Registry's KafkaSQL journal (``kafkasql-journal`` by default), replayed as the registry does.

With ``apicurio.storage.kind=kafkasql`` Apicurio Registry 3.x keeps its data only in this topic: every write
is a journal record, and every replica (and every start) builds its in-memory SQL store by applying the
records in order. The rules restated from Apicurio/apicurio-registry
``app/src/main/java/io/apicurio/registry/storage/`` (cited as AR:File; read at 3.3.x, checked against the
3.3.3 jars the tests run):

- AR:impl/kafkasql/KafkaSqlSubmitter.java: the key is JSON ``{"uuid", "messageType", "partitionKey"}``
  (AR:impl/kafkasql/KafkaSqlMessageKey.java), the headers ``req`` (a request UUID) and ``mt`` (the message
  type); each start writes a ``Bootstrap`` record with a null value. AR:impl/kafkasql/serde/
  KafkaSqlValueDeserializer.java: the value is the JSON of the message class the ``mt`` header names
  (unknown properties ignored); a value that does not deserialize, or a null value, is skipped
  (AR:impl/kafkasql/KafkaSqlRegistryStorage.java ``processRecord``).
- Ids are not in the journal: the SQL store assigns them while applying the records
  (AR:impl/sql/repositories/SqlSequenceRepository.java: in-memory counters starting at 0 for H2, which is
  what KafkaSQL runs on). AR:impl/sql/repositories/SqlContentRepository.java ``ensureContentAndGetId`` takes
  the next content id *before* it tries to insert the content, and keeps the existing row's id when the
  content (its bytes, and its references) is there already: an identical schema under another subject gets
  the same content id, and the counter still moves on. AR:impl/sql/repositories/SqlVersionRepository.java
  ``createArtifactVersionRaw`` takes the next global id for every version, the first version of an artifact
  has version order 1, a later one ``MAX(versionOrder) + 1`` of the versions left (AR:impl/sql/
  CommonSqlStatements.java ``insertVersion``), and a version created with no name is named by its order.
  AR:impl/sql/AbstractSqlRegistryStorage.java ``createArtifact`` / ``createArtifactVersion``: the content is
  ensured before the artifact or version is inserted, so a dry run or a failed create still takes a content
  id (and leaves its content), and a version insert that fails still takes a global id.
- The Confluent-compatible API (``/apis/ccompat/v7``) maps a subject to an artifact of the default group and a
  subject version to a version's order, and the schema id it returns to serializers is the **content id**
  (AR:../ccompat/rest/v7/impl/SubjectsResourceImpl.java ``registerSchemaUnderSubject``, AR:../ccompat/rest/v7/
  impl/ApiConverter.java: the global id only with ``apicurio.ccompat.legacy-id-mode.enabled=true``, false by
  default). A soft delete is a version's state set to ``DISABLED`` (``UpdateArtifactVersionState``), a hard
  delete removes the version (``DeleteArtifactVersion``) or the artifact (``DeleteArtifact``); drafts are not
  shown. The compatibility level is the artifact's (or the global) ``COMPATIBILITY`` rule.

What a journal does not tell: the orphaned-content reaper (AR:OrphanedContentReaper.java, hourly) deletes
content no version holds on each replica without a journal record
(AR:impl/kafkasql/KafkaSqlRegistryStorage.java ``deleteAllOrphanedContent``), so a schema registered again
after it ran got a new content id that a replay (and the registry itself after a restart) does not give; a
snapshot (``CreateSnapshot``) lets a replica skip the records before it, which are still in the journal
(retention -1) and replayed here. Such cases are named in the notes where the journal shows them.

The result is a :class:`~logdoctor.formats.registry.store.SchemaRegistry` as a ``_schemas`` replay gives it:
schema id = content id, subject = artifact id (``GROUP:ARTIFACT`` outside the default group), version = the
version's order, status live / soft-deleted (every version holding the id ``DISABLED``) / hard-deleted (none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from logdoctor.formats.registry.store import (
    HARD_DELETED,
    LIVE,
    SOFT_DELETED,
    RegisteredSchema,
    SchemaReference,
    SchemaRegistry,
    SubjectVersion,
)

__all__ = [
    "BOOTSTRAP",
    "JOURNAL_TOPIC",
    "JournalKey",
    "is_journal_record",
    "journal_key",
    "replay_journal",
]

#: Apicurio's default ``apicurio.kafkasql.topic`` (AR:impl/kafkasql/KafkaSqlConfiguration.java)
JOURNAL_TOPIC = "kafkasql-journal"
#: the message type of the record each start writes (AR:impl/kafkasql/KafkaSqlSubmitter.java)
BOOTSTRAP = "Bootstrap"
_MT_HEADER = "mt"
_KEY_FIELDS = frozenset({"uuid", "messageType", "partitionKey"})
#: the artifact types the Confluent-compatible API serves (AR:../ccompat/rest/v7/impl/AbstractResource.java)
_CCOMPAT_TYPES = ("AVRO", "PROTOBUF", "JSON")
_DEFAULT_GROUPS = (None, "", "default")
_DISABLED, _DRAFT = "DISABLED", "DRAFT"

Header = tuple[str, "bytes | memoryview | None"]


@dataclass(frozen=True, slots=True)
class JournalKey:
    """A journal record's key."""

    uuid: str
    message_type: str
    partition_key: str | None


def journal_key(key: bytes | memoryview | None) -> JournalKey | None:
    """The key of a journal record, or None when ``key`` is not one (not a JSON object with a string
    ``uuid`` and ``messageType``, and no other field than those and ``partitionKey``)."""
    if key is None or len(key) > 4096:
        return None
    try:
        obj = json.loads(bytes(key))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(obj, dict) or not set(obj) <= _KEY_FIELDS:
        return None
    uuid, mtype, pkey = obj.get("uuid"), obj.get("messageType"), obj.get("partitionKey")
    if not isinstance(uuid, str) or not isinstance(mtype, str) or not (pkey is None or isinstance(pkey, str)):
        return None
    return JournalKey(uuid, mtype, pkey)


def _header(headers: Sequence[Header], name: str) -> str | None:
    """The first header ``name`` as text (Apicurio reads the first one), or None."""
    v = next((v for k, v in headers if k == name), None)
    try:
        return None if v is None else bytes(v).decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_journal_record(key: bytes | memoryview | None, headers: Sequence[Header]) -> bool:
    """Whether a record is one of an Apicurio KafkaSQL journal: its key is a journal key and its ``mt`` header
    names the key's message type (what finds a journal among the topics, whatever its name)."""
    parsed = journal_key(key)
    return parsed is not None and _header(headers, _MT_HEADER) == parsed.message_type


# --- the replay ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Content:
    text: str
    refs: tuple[tuple[str | None, str, str | None, str | None], ...]  # (group, artifact, version, name)
    artifact_type: str | None


@dataclass(slots=True)
class _Version:
    global_id: int
    content_id: int
    order: int
    name: str
    state: str


@dataclass(slots=True)
class _Artifact:
    artifact_type: str
    versions: dict[str, _Version] = field(default_factory=dict)  # by version name, in creation order


def _refs(raw: object) -> tuple[tuple[str | None, str, str | None, str | None], ...]:
    """The references of a message, each once, in their order (SqlContentRepository dedups them)."""
    out: list[tuple[str | None, str, str | None, str | None]] = []
    for r in raw if isinstance(raw, list) else ():
        if not isinstance(r, dict) or not isinstance(r.get("artifactId"), str):
            raise ValueError(f"a reference with an artifactId, found {r!r}")
        ref = (r.get("groupId"), r["artifactId"], r.get("version"), r.get("name"))
        if ref not in out:
            out.append(ref)
    return tuple(out)


def _text(v: dict[str, Any], name: str) -> str:
    """A message's string field (Jackson refuses another JSON type for a ``String``: the record skipped)."""
    got = v.get(name)
    if not isinstance(got, str):
        raise ValueError(f"{name}: a string, found {type(got).__name__}")
    return got


def _group(raw: object) -> str | None:
    return None if raw in _DEFAULT_GROUPS else str(raw)


def _subject(group: str | None, artifact_id: str) -> str:
    return artifact_id if group is None else f"{group}:{artifact_id}"


class _Replay:
    """The registry's SQL store as the journal builds it, one record at a time."""

    def __init__(self, source: str | None) -> None:
        self.source = source
        self.global_id = 0
        self.content_id = 0
        self.contents: dict[int, _Content] = {}
        self.by_key: dict[tuple[str, tuple], int] = {}
        self.artifacts: dict[tuple[str | None, str], _Artifact] = {}
        self.history: dict[int, list[tuple[str, int]]] = {}  # content id -> every (subject, order) given it
        self.config: dict[str | None, str] = {}
        self.notes: list[str] = []
        self.errors: list[str] = []
        self.skipped: dict[str, list[int]] = {}
        self.failed: list[str] = []

    def where(self, offset: int) -> str:
        return f"{self.source} offset {offset}" if self.source else f"offset {offset}"

    # the store's operations

    def ensure_content(self, text: str, refs: tuple, artifact_type: str | None, *, draft: bool) -> int:
        """SqlContentRepository.ensureContentAndGetId: the next id is taken first; a content already there
        keeps its id. A draft's content is never shared (its hash is a random ``draft:`` one)."""
        self.content_id += 1
        cid = self.content_id
        key = (text, refs)
        if not draft and key in self.by_key:
            return self.by_key[key]
        self.contents[cid] = _Content(text, refs, artifact_type)
        if not draft:
            self.by_key[key] = cid
        return cid

    def create_version(
        self, offset: int, group: str | None, artifact_id: str, name: object, cid: int, *, draft: bool,
        first: bool, dry_run: bool,
    ) -> None:  # fmt: skip
        """SqlVersionRepository.createArtifactVersionRaw: the next global id, then the row."""
        self.global_id += 1
        art = self.artifacts.get((group, artifact_id))
        if art is None:
            self.failed.append(f"{self.where(offset)}: a version of {artifact_id}, which does not exist")
            return
        order = 1 if first else max((v.order for v in art.versions.values()), default=0) + 1
        version = str(name) if isinstance(name, str | int) and not isinstance(name, bool) else str(order)
        if version in art.versions:
            self.failed.append(f"{self.where(offset)}: version {version} of {artifact_id} exists already")
            return
        if dry_run:
            return
        art.versions[version] = _Version(self.global_id, cid, order, version, _DRAFT if draft else "ENABLED")
        if not draft:
            self.history.setdefault(cid, []).append((_subject(group, artifact_id), order))

    # the messages

    def apply(
        self,
        offset: int,
        key: bytes | memoryview | None,
        value: bytes | memoryview | None,
        headers: Sequence[Header],
    ) -> None:
        k = journal_key(key)
        if k is None:
            self.errors.append(f"{self.where(offset)}: not a journal key: skipped (as Apicurio skips it)")
            return
        if k.message_type == BOOTSTRAP or value is None:
            return  # a start's marker, or a tombstone: nothing applied
        mtype = _header(headers, _MT_HEADER)
        if mtype is None:
            self.errors.append(
                f"{self.where(offset)}: no {_MT_HEADER} header: skipped (as Apicurio skips it)"
            )
            return
        try:
            v = json.loads(bytes(value))
            if not isinstance(v, dict):
                raise ValueError(f"a JSON object, found {type(v).__name__}")
        except (ValueError, UnicodeDecodeError) as exc:
            self.errors.append(f"{self.where(offset)}: a {mtype} value that is not JSON ({exc}): skipped")
            return
        name = mtype.removesuffix("Message").rstrip("0123456789")
        handler = getattr(self, "_" + name, None)
        if handler is None:
            if name in _NO_SCHEMA_CHANGE:
                return
            self.skipped.setdefault(mtype, []).append(offset)
            return
        try:
            handler(offset, v)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            self.errors.append(f"{self.where(offset)}: a {mtype} record not read ({exc}): skipped")

    def _CreateArtifact(self, offset: int, v: dict[str, Any]) -> None:
        group, artifact_id, atype = _group(v.get("groupId")), _text(v, "artifactId"), _text(v, "artifactType")
        content, draft, dry = v.get("content"), bool(v.get("versionIsDraft")), bool(v.get("dryRun"))
        cid = None
        if content is not None:
            cid = self.ensure_content(_text(v, "content"), _refs(v.get("references")), atype, draft=draft)
        if (group, artifact_id) in self.artifacts:
            self.failed.append(f"{self.where(offset)}: artifact {artifact_id} exists already")
            return
        self.artifacts[(group, artifact_id)] = _Artifact(atype)
        if cid is not None:
            self.create_version(
                offset, group, artifact_id, v.get("version"), cid, draft=draft, first=True, dry_run=dry
            )
        if dry:
            del self.artifacts[(group, artifact_id)]

    def _CreateArtifactVersion(self, offset: int, v: dict[str, Any]) -> None:
        group, artifact_id = _group(v.get("groupId")), _text(v, "artifactId")
        art = self.artifacts.get((group, artifact_id))
        atype = v.get("artifactType") or (art.artifact_type if art else None)
        draft = bool(v.get("draft", v.get("isDraft", False)))
        cid = self.ensure_content(_text(v, "content"), _refs(v.get("references")), atype, draft=draft)
        first = art is None or not art.versions
        self.create_version(
            offset, group, artifact_id, v.get("version"), cid, draft=draft, first=first,
            dry_run=bool(v.get("dryRun")),
        )  # fmt: skip

    def _CreateArtifactVersionIfLatest(self, offset: int, v: dict[str, Any]) -> None:
        art = self.artifacts.get((_group(v.get("groupId")), _text(v, "artifactId")))
        expected = v.get("expectedBaseVersionOrder")
        latest = max((x.order for x in art.versions.values()), default=0) if art else 0
        if isinstance(expected, int) and expected != latest:
            self.notes.append(
                f"{self.where(offset)}: a version created only if version {expected} is the latest, where "
                f"{latest} is: applied as the create (whether it took ids when refused is not known here)"
            )
        self._CreateArtifactVersion(offset, v)

    def _UpdateArtifactVersionState(self, offset: int, v: dict[str, Any]) -> None:
        if v.get("dryRun"):
            return
        group, artifact_id = _group(v.get("groupId")), _text(v, "artifactId")
        ver = self._version(offset, group, artifact_id, v.get("version"))
        if ver is None:
            return
        new = str(v["newState"])
        if ver.state == _DRAFT and new != _DRAFT:  # its content gets a real hash (AbstractSqlRegistryStorage)
            old = self.contents.get(ver.content_id)
            if old is not None:
                ver.content_id = self.ensure_content(old.text, old.refs, old.artifact_type, draft=False)
            self.history.setdefault(ver.content_id, []).append((_subject(group, artifact_id), ver.order))
        ver.state = new

    def _UpdateArtifactVersionContent(self, offset: int, v: dict[str, Any]) -> None:
        group, artifact_id = _group(v.get("groupId")), _text(v, "artifactId")
        cid = self.ensure_content(
            _text(v, "content"), _refs(v.get("references")), v.get("artifactType"), draft=True
        )
        ver = self._version(offset, group, artifact_id, v.get("version"))
        if ver is not None:
            ver.content_id = cid

    def _version(self, offset: int, group: str | None, artifact_id: str, name: object) -> _Version | None:
        art = self.artifacts.get((group, artifact_id))
        ver = None if art is None else art.versions.get(str(name))
        if ver is None:
            self.failed.append(f"{self.where(offset)}: version {name} of {artifact_id}, which does not exist")
        return ver

    def _DeleteArtifactVersion(self, offset: int, v: dict[str, Any]) -> None:
        group, artifact_id = _group(v.get("groupId")), _text(v, "artifactId")
        if self._version(offset, group, artifact_id, v.get("version")) is not None:
            del self.artifacts[(group, artifact_id)].versions[str(v.get("version"))]

    def _DeleteArtifact(self, offset: int, v: dict[str, Any]) -> None:
        if self.artifacts.pop((_group(v.get("groupId")), _text(v, "artifactId")), None) is None:
            self.failed.append(f"{self.where(offset)}: artifact {v['artifactId']}, which does not exist")

    def _DeleteArtifacts(self, offset: int, v: dict[str, Any]) -> None:
        group = _group(v.get("groupId"))
        for key in [key for key in self.artifacts if key[0] == group]:
            del self.artifacts[key]

    _DeleteGroup = _DeleteArtifacts

    def _DeleteAllUserData(self, offset: int, v: dict[str, Any]) -> None:
        self.artifacts.clear()
        self.contents.clear()
        self.by_key.clear()
        self.config.clear()

    def _NextGlobalId(self, offset: int, v: dict[str, Any]) -> None:
        self.global_id += 1

    def _NextContentId(self, offset: int, v: dict[str, Any]) -> None:
        self.content_id += 1

    def _ResetGlobalId(self, offset: int, v: dict[str, Any]) -> None:
        held = [x.global_id for a in self.artifacts.values() for x in a.versions.values()]
        self.global_id = max([self.global_id, *held])

    def _ResetContentId(self, offset: int, v: dict[str, Any]) -> None:
        self.content_id = max([self.content_id, *self.contents])

    def _ImportContent(self, offset: int, v: dict[str, Any]) -> None:
        entity = v["entity"]
        cid = int(entity["contentId"])
        text = v.get("content")
        if text is None:
            raise ValueError("an imported content without its text")
        refs = entity.get("serializedReferences")
        parsed = _refs(json.loads(refs)) if isinstance(refs, str) and refs else ()
        self.contents[cid] = _Content(str(text), parsed, entity.get("artifactType"))
        self.by_key.setdefault((str(text), parsed), cid)

    def _ImportArtifact(self, offset: int, v: dict[str, Any]) -> None:
        e = v["entity"]
        self.artifacts.setdefault(
            (_group(e.get("groupId")), str(e["artifactId"])), _Artifact(str(e["artifactType"]))
        )

    def _ImportArtifactVersion(self, offset: int, v: dict[str, Any]) -> None:
        e = v["entity"]
        group, artifact_id = _group(e.get("groupId")), str(e["artifactId"])
        art = self.artifacts.setdefault((group, artifact_id), _Artifact(str(e.get("artifactType") or "")))
        order, cid = int(e["versionOrder"]), int(e["contentId"])
        name = str(e.get("version") or order)
        art.versions[name] = _Version(int(e["globalId"]), cid, order, name, str(e.get("state") or "ENABLED"))
        self.history.setdefault(cid, []).append((_subject(group, artifact_id), order))

    def _compatibility(self, subject: str | None, v: dict[str, Any]) -> None:
        if v.get("rule") != "COMPATIBILITY":
            return
        config = v.get("config")
        level = config.get("configuration") if isinstance(config, dict) else None
        if isinstance(level, str):
            self.config[subject] = level

    def _CreateArtifactRule(self, offset: int, v: dict[str, Any]) -> None:
        self._compatibility(_subject(_group(v.get("groupId")), _text(v, "artifactId")), v)

    _UpdateArtifactRule = _CreateArtifactRule

    def _DeleteArtifactRule(self, offset: int, v: dict[str, Any]) -> None:
        if v.get("rule") == "COMPATIBILITY":
            self.config.pop(_subject(_group(v.get("groupId")), _text(v, "artifactId")), None)

    def _DeleteArtifactRules(self, offset: int, v: dict[str, Any]) -> None:
        self.config.pop(_subject(_group(v.get("groupId")), _text(v, "artifactId")), None)

    def _CreateGlobalRule(self, offset: int, v: dict[str, Any]) -> None:
        self._compatibility(None, v)

    _UpdateGlobalRule = _CreateGlobalRule

    def _DeleteGlobalRule(self, offset: int, v: dict[str, Any]) -> None:
        if v.get("rule") == "COMPATIBILITY":
            self.config.pop(None, None)

    def _DeleteGlobalRules(self, offset: int, v: dict[str, Any]) -> None:
        self.config.pop(None, None)

    # the registry

    def registry(self) -> SchemaRegistry:
        subject_versions: dict[tuple[str, int], SubjectVersion] = {}
        holders: dict[int, list[bool]] = {}  # content id -> deleted flag of each version holding it
        other_types = 0
        for (group, artifact_id), art in self.artifacts.items():
            if art.artifact_type not in _CCOMPAT_TYPES:
                other_types += 1
                continue
            subject = _subject(group, artifact_id)
            for ver in art.versions.values():
                if ver.state == _DRAFT:
                    continue
                deleted = ver.state == _DISABLED
                subject_versions[(subject, ver.order)] = SubjectVersion(
                    subject, ver.order, ver.content_id, deleted
                )
                holders.setdefault(ver.content_id, []).append(deleted)
        schemas: dict[int, RegisteredSchema] = {}
        for cid in sorted(self.history):
            content = self.contents.get(cid)
            if content is None or content.artifact_type not in _CCOMPAT_TYPES:
                continue
            held = holders.get(cid, [])
            status = HARD_DELETED if not held else LIVE if not all(held) else SOFT_DELETED
            versions = tuple(dict.fromkeys(self.history[cid]))
            refs = tuple(
                SchemaReference(
                    name or artifact,
                    _subject(_group(group), artifact),
                    self._ref_version(group, artifact, version),
                )
                for group, artifact, version, name in content.refs
            )
            subject, version = versions[0]
            schemas[cid] = RegisteredSchema(
                id=cid, schema_type=content.artifact_type or "", schema=content.text, references=refs,
                subject=subject, version=version, versions=versions, status=status, guid=None,
            )  # fmt: skip
        notes = list(self.notes)
        if self.failed:
            notes.append(
                f"{len(self.failed)} journal record(s) the registry refused when it applied them "
                f"({self.failed[0]}{' and more' if len(self.failed) > 1 else ''}): their ids are taken all "
                "the same"
            )
        if other_types:
            notes.append(
                f"{other_types} artifact(s) of types the Confluent-compatible API does not serve (not AVRO, "
                "PROTOBUF or JSON) left out"
            )
        for mtype, offsets in sorted(self.skipped.items()):
            notes.append(
                f"{len(offsets)} journal record(s) of type {mtype} not read ({self.where(offsets[0])} first)"
                + (
                    ": the registry may have applied SQL that changes schemas"
                    if mtype.startswith("ExecuteSql")
                    else ""
                )
            )
        return SchemaRegistry(
            schemas=schemas,
            config=dict(self.config),
            subject_versions=dict(sorted(subject_versions.items())),
            notes=notes,
            errors=list(self.errors),
        )

    def _ref_version(self, group: str | None, artifact_id: str, version: str | None) -> int:
        """A reference's version as the Confluent-compatible API gives it: the named version's order."""
        art = self.artifacts.get((_group(group), artifact_id))
        ver = None if art is None or version is None else art.versions.get(version)
        if ver is not None:
            return ver.order
        return int(version) if version is not None and version.isdigit() else 0


#: message types that change nothing a schema id, subject, version or compatibility level depends on
_NO_SCHEMA_CHANGE = frozenset(
    {
        "AppendVersionToBranch", "ConsumeDownload", "CreateArtifactVersionComment", "CreateBranch",
        "CreateDownload", "CreateGroup", "CreateGroupRule", "CreateRoleMapping", "CreateSnapshot",
        "DeleteAllExpiredDownloads", "DeleteAllOrphanedContent", "DeleteArtifactContractRuleset",
        "DeleteArtifactVersionComment", "DeleteBranch", "DeleteConfigProperty", "DeleteGlobalContractRuleset",
        "DeleteGroupRule", "DeleteGroupRules", "DeleteOldUsageEvents", "DeleteRoleMapping",
        "DeleteVersionContractRuleset", "ImportArtifactRule", "ImportBranch", "ImportComment",
        "ImportContractRule", "ImportGlobalRule", "ImportGroup", "ImportGroupRule",
        "InsertContractAuditEntry", "MergeArtifactLabels", "MergeVersionLabels", "NextCommentId",
        "RecordUsageEvent", "ReplaceBranchVersions",
        "ResetCommentId", "SetArtifactContractRuleset", "SetConfigProperty", "SetGlobalContractRuleset",
        "SetVersionContractRuleset", "TransitionContractStatus", "UpdateArtifactMetaData",
        "UpdateArtifactVersionComment", "UpdateArtifactVersionMetaData", "UpdateBranchMetaData",
        "UpdateContentCanonicalHash", "UpdateContractMetadata", "UpdateGroupMetaData", "UpdateGroupRule",
        "UpdateRoleMapping",
    }
)  # fmt: skip


def replay_journal(
    records: Iterable[tuple[int, bytes | memoryview | None, bytes | memoryview | None, Sequence[Header]]],
    source: str | None = None,
) -> SchemaRegistry:
    """The registry after the ``(offset, key, value, headers)`` records of a journal partition, in offset
    order; ``source`` and the offset name each record that did not parse (the replay goes on after it, as the
    registry's does)."""
    r = _Replay(source)
    for offset, key, value, headers in records:
        r.apply(offset, key, value, headers)
    return r.registry()

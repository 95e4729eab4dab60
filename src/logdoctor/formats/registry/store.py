"""Schema Registry's store, the ``_schemas`` topic, replayed as the registry's ``KafkaStore`` reads it.

(The values model only; the replay is to be written: :func:`replay`.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

LIVE = "live"
SOFT_DELETED = "soft_deleted"
HARD_DELETED = "hard_deleted"


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


@dataclass(slots=True)
class SchemaRegistry:
    """The registry a replay of ``_schemas`` gives: by id, by GUID, by (subject, version)."""

    schemas: dict[int, RegisteredSchema] = field(default_factory=dict)
    config: dict[str | None, str] = field(default_factory=dict)
    mode: dict[str | None, str] = field(default_factory=dict)

    def by_id(self, schema_id: int) -> RegisteredSchema | None:
        return self.schemas.get(schema_id)

    def subject_version(self, subject: str, version: int) -> RegisteredSchema | None:
        for s in self.schemas.values():
            if (subject, version) in s.versions or (s.subject, s.version) == (subject, version):
                return s
        return None


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> SchemaRegistry:
    """The registry after the ``(key, value)`` records of a ``_schemas`` partition, in offset order."""
    raise NotImplementedError

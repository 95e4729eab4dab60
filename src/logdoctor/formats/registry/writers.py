"""Which writer schema each key or value names, and the decoders of those writer schemas.

A :class:`WriterKey` names one writer schema: a registry schema id (with Protobuf's message-index path) or
one Kafka Connect JsonConverter schema carried inline. :func:`writer_of` finds it for one key or value
(:mod:`.framing` for the registry's framings, :mod:`.connect_json` for an envelope), or says why there is
none (:data:`~.reasons.REASONS`). :class:`Decoders` builds each writer schema's decoder once and keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from logdoctor.formats.registry.decoder import WriterDecoder, decoder_for
from logdoctor.formats.registry.reasons import (
    DECODE_ERROR_SCHEMA_MISMATCH,
    DECODE_ERROR_TRUNCATED,
    NO_MAGIC_BYTE,
    UNKNOWN_SCHEMA_GUID,
    UNKNOWN_SCHEMA_ID,
)
from logdoctor.formats.registry.results import SchemaError

if TYPE_CHECKING:
    from logdoctor.formats.registry.store import SchemaRegistry

REGISTRY = "registry"
CONNECT = "connect"

#: the first bytes of a key or value without a schema-id header that :func:`writer_of` reads further: a
#: frame's magic byte (:data:`.framing.MAGIC_ID`, :data:`.framing.MAGIC_GUID`) or a Connect JSON envelope's
#: ``{``; any other is :data:`~.reasons.NO_MAGIC_BYTE` at once
FRAME_STARTS = frozenset({b"\x00", b"\x01", b"{"})


@dataclass(frozen=True, slots=True)
class WriterKey:
    """One writer schema: ``kind`` registry (``schema_id``, ``message_indexes`` for Protobuf; ``context``:
    the Schema Registry context whose ids ``schema_id`` is of, None: the ids frames name by default) or
    connect (``connect_schema``: the canonical text of the envelope's schema)."""

    kind: str
    schema_id: int | None = None
    message_indexes: tuple[int, ...] = ()
    connect_schema: str | None = None
    context: str | None = None

    def sort_key(self) -> tuple[Any, ...]:
        return (
            self.kind,
            self.context or "",
            self.schema_id or 0,
            self.message_indexes,
            self.connect_schema or "",
        )


@dataclass(frozen=True, slots=True)
class Resolved:
    """A key's or value's writer schema and where its payload starts (``deleted``: a soft-deleted schema)."""

    writer: WriterKey
    payload: int
    deleted: bool = False


def writer_of(
    data: bytes | None, header: bytes | None, registry: SchemaRegistry | None, context: str | None = None
) -> Resolved | str | None:
    """The writer schema of one key or value (``header``: the value of its ``__key_schema_id`` /
    ``__value_schema_id`` record header, if any; ``context``: the Schema Registry context of its topic,
    :meth:`~.store.SchemaRegistry.context_of_topic`, None or ``.``: the default): a :class:`Resolved`, a
    reason of :data:`~.reasons.REASONS` why it names none that decodes, or None for a null (a tombstone's
    value)."""
    if data is None:
        return None
    if header is None and data[:1] not in FRAME_STARTS:
        return NO_MAGIC_BYTE
    if data[:1] == b"{" and header is None:
        from logdoctor.formats.registry.connect_json import envelope_schema

        text = envelope_schema(data)
        if text is not None:
            return Resolved(WriterKey(CONNECT, connect_schema=text), 0)
    from logdoctor.formats.registry.framing import read_frame, read_message_indexes

    frame = read_frame(data, header)
    if isinstance(frame, str):
        return frame
    if registry is None:
        return UNKNOWN_SCHEMA_ID if frame.schema_id is not None else UNKNOWN_SCHEMA_GUID
    context = None if context == "." else context
    schema = registry.resolve(schema_id=frame.schema_id, guid=frame.guid, context=context)
    if isinstance(schema, str):
        return schema
    payload = frame.payload
    indexes: tuple[int, ...] = ()
    if schema.schema_type == "PROTOBUF":
        if frame.message_indexes is not None:
            indexes = tuple(frame.message_indexes)
        else:
            try:
                indexes, payload = read_message_indexes(data, payload)
            except Exception:
                return DECODE_ERROR_TRUNCATED
        indexes = indexes or (0,)
    from logdoctor.formats.registry.store import SOFT_DELETED

    writer = WriterKey(REGISTRY, schema.id, indexes, context=context)
    return Resolved(writer, payload, schema.status == SOFT_DELETED)


def is_framed(resolved: Resolved | str | None) -> bool:
    """Whether a key or value names a writer schema at all (resolved or not): anything but a null and a
    value with no frame (:data:`~.reasons.NO_MAGIC_BYTE`)."""
    return resolved is not None and resolved != NO_MAGIC_BYTE


class Decoders:
    """Each writer schema's decoder, built once (a schema that does not build: its :class:`SchemaError`)."""

    def __init__(self, registry: SchemaRegistry | None) -> None:
        self.registry = registry
        self._built: dict[WriterKey, WriterDecoder | SchemaError] = {}

    def get(self, writer: WriterKey) -> WriterDecoder | SchemaError:
        found = self._built.get(writer)
        if found is None:
            try:
                found = self._build(writer)
            except SchemaError as exc:
                found = exc
            self._built[writer] = found
        return found

    def _build(self, writer: WriterKey) -> WriterDecoder:
        if writer.kind == CONNECT:
            from logdoctor.formats.registry.connect_json import ConnectJsonDecoder

            return ConnectJsonDecoder(writer.connect_schema or "")
        schema = (
            None
            if self.registry is None
            else self.registry.in_context(writer.context).get(writer.schema_id or 0)
        )
        if schema is None:
            raise SchemaError(f"schema id {writer.schema_id} is not in the registry")
        try:
            return decoder_for(self.registry, schema, writer.message_indexes)  # type: ignore[arg-type]
        except SchemaError:
            raise
        except Exception as exc:  # the format's library refused the schema
            raise SchemaError(f"schema id {schema.id}: {type(exc).__name__}: {exc}") from None


#: a writer schema that does not build: its records go to the side table with this reason
UNBUILDABLE = DECODE_ERROR_SCHEMA_MISMATCH


def unbuildable_reason(error: Exception) -> str:
    """The side-table reason of the records of a writer schema that does not build (``error``: what
    :meth:`Decoders.get` gave): the error's own ``reason`` where it names one (a Protobuf message-index path
    naming two messages: ``ambiguous_message_indexes``), else :data:`UNBUILDABLE`."""
    return getattr(error, "reason", UNBUILDABLE)

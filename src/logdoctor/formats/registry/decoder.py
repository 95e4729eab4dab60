"""The one protocol of every format's decoder, the side-table reasons, and the choice of a decoder.

A :class:`WriterDecoder` decodes the payloads of one writer schema (a schema id of the registry, with a
Protobuf message-index path; or one Kafka Connect schema) into one Arrow array of that schema's Arrow type
(:data:`TYPE_MAPPING_VERSION`, docs/typed-tables.md), a batch at a time, and says for each payload that does
not decode why (:data:`.reasons.REASONS`): the array holds null there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

# what every decoder gives back lives in .results, which the format modules import (this module imports
# them in decoder_for: they cannot import it back without a cycle)
from logdoctor.formats.registry.results import Decoded, SchemaError

if TYPE_CHECKING:
    import pyarrow as pa

    from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

__all__ = ["TYPE_MAPPING_VERSION", "WriterDecoder", "decoder_for"]

#: The version of the type mapping of docs/typed-tables.md: raised on any change of an Arrow type a schema
#: type maps to (an output written with another version may need its tables rewritten).
TYPE_MAPPING_VERSION = 2


class WriterDecoder(Protocol):
    """The decoder of one writer schema."""

    #: the registry's id of the schema (None for a Kafka Connect envelope's inline schema)
    schema_id: int | None
    #: the full name of the record or message (Avro ``namespace.name``, Protobuf ``package.Message``, a JSON
    #: Schema's ``title``, Connect's schema ``name``); None when the schema names none
    record_name: str | None
    #: the Arrow type every decoded value has (a struct for a record: its fields are the table's columns)
    arrow_type: pa.DataType

    def decode(self, payloads: Sequence[bytes | memoryview]) -> Decoded:
        """Decode each payload (the bytes after the frame; for Protobuf after the message indexes)."""
        ...


def decoder_for(
    registry: SchemaRegistry, schema: RegisteredSchema, message_indexes: Sequence[int] = ()
) -> WriterDecoder:
    """The decoder of ``schema`` (``message_indexes``: Protobuf's path to the message; ``[0]`` for others).
    Raises :class:`SchemaError` when the schema does not parse or compile."""
    if schema.schema_type == "AVRO":
        from logdoctor.formats.registry.avro import AvroDecoder

        return AvroDecoder(registry, schema)
    if schema.schema_type == "PROTOBUF":
        from logdoctor.formats.registry.protobuf import ProtobufDecoder

        return ProtobufDecoder(registry, schema, tuple(message_indexes) or (0,))
    if schema.schema_type == "JSON":
        from logdoctor.formats.registry.json_schema import JsonSchemaDecoder

        return JsonSchemaDecoder(registry, schema)
    raise SchemaError(f"schema id {schema.id}: unknown schemaType {schema.schema_type!r}")

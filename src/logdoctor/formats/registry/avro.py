"""The decoder of one Avro writer schema of the registry (:class:`AvroDecoder`).

The schema is parsed with its references (:mod:`.avro_schema`, as Confluent's ``AvroSchema`` does) and each
payload decoded with it exactly (:mod:`.avro_columns`: column by column with numpy, a payload at a time
only where a record recurses): a payload that ends early is ``decode_error_truncated``; bytes left over
after the value, a bad enum or union index and any other error ``decode_error_schema_mismatch``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from logdoctor.formats.registry import avro_columns, avro_schema
from logdoctor.formats.registry.results import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED, Decoded
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

_REASONS = {
    avro_columns.TRUNCATED: DECODE_ERROR_TRUNCATED,
    avro_columns.MISMATCH: DECODE_ERROR_SCHEMA_MISMATCH,
}


class AvroDecoder:
    """Decodes the payloads of one Avro schema id into one Arrow array of :attr:`arrow_type`."""

    def __init__(self, registry: SchemaRegistry, schema: RegisteredSchema) -> None:
        parsed, named = avro_schema.parse(registry, schema)
        self.schema_id: int | None = schema.id
        self.root = avro_schema.build(parsed, named)
        self.arrow_type: pa.DataType = self.root.arrow
        #: the full name of the record; None for any other top-level type (as ``AvroSchema.name()``)
        self.record_name: str | None = self.root.name if self.root.kind == "record" else None
        #: ``connect.name``/``connect.version``/``connect.parameters`` of the value as a whole
        self.field_metadata: dict[bytes, bytes] = dict(self.root.metadata)

    def decode(self, payloads: Sequence[bytes | memoryview]) -> Decoded:
        """Each payload decoded with this writer schema; null and a reason where it does not decode."""
        values, codes = avro_columns.decode_column(self.root, payloads)
        reasons: list[str | None] = [None] * len(payloads)
        for i in np.flatnonzero(codes):
            reasons[i] = _REASONS[int(codes[i])]
        return Decoded(values, reasons)

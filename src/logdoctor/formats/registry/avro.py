"""The decoder of one Avro writer schema of the registry (:class:`AvroDecoder`).

The schema is parsed with its references (:mod:`.avro_schema`, as Confluent's ``AvroSchema`` does) and each
payload decoded with it exactly: column by column with numpy (:mod:`.avro_columns`), or a payload at a time
for small batches and where a record recurses (:mod:`.avro_values`), under one set of rules. A payload that
ends early is ``decode_error_truncated``; bytes left over after the value, a bad enum or union index and
any other error ``decode_error_schema_mismatch``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from logdoctor.formats.registry import avro_columns, avro_schema, avro_values
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.results import Decoded
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

_REASONS = {
    avro_values.TRUNCATED: DECODE_ERROR_TRUNCATED,
    avro_values.MISMATCH: DECODE_ERROR_SCHEMA_MISMATCH,
}
#: fewer payloads than this are read one at a time: the column decoder's numpy passes cost a few
#: microseconds each whatever their length, a few hundred of them per batch (bench_typed_avro.py --small)
COLUMNS_FROM = 64


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
        if len(payloads) < COLUMNS_FROM:
            values, codes = avro_values.decode_rows(self.root, payloads)
        else:
            values, codes = avro_columns.decode_column(self.root, payloads)
        reasons: list[str | None] = [None] * len(payloads)
        for i in np.flatnonzero(codes):
            reasons[i] = _REASONS[int(codes[i])]
        return Decoded(values, reasons)

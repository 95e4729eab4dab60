"""Protobuf payloads of one registered message decoded into Arrow (type mapping of docs/typed-tables.md).

The message classes come from protoc (:mod:`.protobuf_schema`); a payload (the bytes after the frame and the
message indexes) is decoded by the C extension straight into Arrow columns where it covers the message
(:mod:`.protobuf_plan`), else (and for every payload it refuses) parsed by protobuf's own parser (the upb
backend) and read into Arrow columns by :mod:`.protobuf_columns`. A payload protobuf rejects is
``decode_error_truncated`` when its wire format ends inside a field (:func:`ends_early`), else
``decode_error_schema_mismatch`` (invalid UTF-8 in a string, a bad wire type, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

from logdoctor.formats.registry.protobuf_columns import payload_reader
from logdoctor.formats.registry.protobuf_plan import fast_reader
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH, DECODE_ERROR_TRUNCATED
from logdoctor.formats.registry.results import Decoded
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry


class ProtobufDecoder:
    """The decoder of one message (``message_indexes``) of a registered Protobuf schema."""

    def __init__(self, registry: SchemaRegistry, schema: RegisteredSchema, message_indexes: tuple[int, ...]):
        self._registry = registry
        self._schema = schema
        self.message_indexes = tuple(message_indexes)
        compiled = compile_schema(registry, schema)
        descriptor = compiled.message(self.message_indexes)
        self.schema_id: int | None = schema.id
        self.record_name: str | None = descriptor.full_name
        self.field_metadata: dict[bytes, bytes] = {}
        message_class = compiled.message_class(self.message_indexes)
        self.arrow_type, read = payload_reader(descriptor, message_class.FromString, message_class())
        self._read = fast_reader(descriptor, self.arrow_type, read)

    def __reduce__(self):
        return (ProtobufDecoder, (self._registry, self._schema, self.message_indexes))

    def decode(self, payloads: Sequence[bytes | memoryview]) -> Decoded:
        """Parse each payload (the bytes after the message indexes) and read the batch into Arrow."""
        values, rejected = self._read(payloads)
        reasons: list[str | None] = [None] * len(rejected)
        if any(rejected):
            for i, payload in enumerate(payloads):
                if rejected[i]:
                    cut = ends_early(payload)
                    reasons[i] = DECODE_ERROR_TRUNCATED if cut else DECODE_ERROR_SCHEMA_MISMATCH
        return Decoded(values, reasons)


def ends_early(payload: bytes | memoryview) -> bool:
    """Whether the wire format of ``payload`` ends inside a field (a tag, a varint, a fixed-width value, a
    length-delimited value or an open group): a payload cut short. Only the top level is walked: the cut is
    at the end, where the last top-level field is."""
    data = bytes(payload)
    end = len(data)
    pos = 0
    groups = 0
    while pos < end:
        tag, pos = _varint(data, pos)
        if tag is None:
            return pos >= end
        wire_type = tag & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
            if value is None:
                return pos >= end
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = _varint(data, pos)
            if length is None:
                return pos >= end
            pos += length
        elif wire_type == 5:
            pos += 4
        elif wire_type == 3:
            groups += 1
        elif wire_type == 4:
            groups -= 1
        else:
            return False
    return pos > end or groups > 0


def _varint(data: bytes, pos: int) -> tuple[int | None, int]:
    """(value, next position); value None when the bytes end inside it (position = len) or it is longer
    than 10 bytes (position < len)."""
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            return None, pos
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
    return None, pos - 1

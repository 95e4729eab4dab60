"""Small log dirs built in the test: a ``_schemas`` partition holding the registry's own JSON records (the
shapes confluentinc/schema-registry's ``SchemaRegistrySerializer`` writes: SCHEMA, DELETE_SUBJECT, ...) and
data topics of any ``(key, value, headers)`` records, each partition one segment of record batches."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path

from logdoctor.formats.record_types import Header, RecordSpec
from logdoctor.formats.writer import build_record_batch

Record = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes]]]

#: records per batch of a written partition
BATCH = 500
#: the one segment of a written partition
SEGMENT = "00000000000000000000.log"


def write_partition(log_dir: Path, topic: str, partition: int, records: Sequence[Record]) -> Path:
    """``log_dir/topic-partition`` holding ``records`` from offset 0 in one segment; returns the segment."""
    folder = log_dir / f"{topic}-{partition}"
    folder.mkdir(parents=True, exist_ok=True)
    segment = folder / SEGMENT
    with open(segment, "wb") as f:
        for start in range(0, len(records), BATCH):
            specs = []
            for r in records[start : start + BATCH]:
                headers = tuple(Header(k, v) for k, v in (r[2] if len(r) > 2 else ()))  # type: ignore[misc]
                specs.append(RecordSpec(value=r[1], key=r[0], timestamp=1_700_000_000_000, headers=headers))
            f.write(build_record_batch(specs, base_offset=start))
    return segment


def _json(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_record(
    subject: str, version: int, schema_id: int, schema: object, schema_type: str = "JSON"
) -> Record:
    """A SCHEMA key and value as Schema Registry writes them (``schema``: a dict is written as its text)."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    key = _json({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})
    value = {"subject": subject, "version": version, "id": schema_id, "schema": text, "deleted": False}
    if schema_type != "AVRO":
        value["schemaType"] = schema_type
    return key, _json(value)


def delete_subject_record(subject: str, version: int) -> Record:
    key = _json({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})
    return key, _json({"subject": subject, "version": version})


def clear_subject_record(subject: str) -> Record:
    key = _json({"keytype": "CLEAR_SUBJECT", "subject": subject, "magic": 0})
    return key, _json({"subject": subject})


def framed(schema_id: int, payload: bytes) -> bytes:
    """A Confluent frame: magic byte 0, the 4-byte big-endian id, the payload."""
    return b"\x00" + struct.pack(">i", schema_id) + payload


def long_key(n: int) -> bytes:
    """Kafka's ``LongSerializer``: 8 bytes big-endian."""
    return struct.pack(">q", n)

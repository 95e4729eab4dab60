"""Schemas of the two data sources, as Spark DDL and as the Arrow schemas the readers yield.

Spark checks the Arrow batches of a Python Data Source against the DDL by name; the Arrow
types must be the ones Spark maps the DDL types to (int -> int32, smallint -> int16,
bigint -> int64, timestamp -> timestamp[us, tz=UTC], binary -> binary, string -> string).

The records schema starts with exactly the columns of Spark's own Kafka source
(connector/kafka-0-10-sql, with includeHeaders=true), then adds where each record was found
and its batch's header fields. ``producer_epoch`` is ``smallint`` because Kafka stores it
as an int16 (DefaultRecordBatch.java); ``timestamp`` is null for magic-0 messages, which
have none (Kafka's NO_TIMESTAMP, -1), and ``timestampType`` is then -1.
"""

from __future__ import annotations

import pyarrow as pa

KAFKA_SOURCE_COLUMNS = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestampType",
    "headers",
)

_TS = pa.timestamp("us", tz="UTC")
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
FINDINGS_TYPE = pa.list_(
    pa.struct([("code", pa.string()), ("severity", pa.string()), ("message", pa.string())])
)
#: kafka-log-segments with checkRecords: the CRC-valid batches whose records do not decode
UNDECODABLE_TYPE = pa.list_(
    pa.struct(
        [
            ("position", pa.int64()),
            ("size", pa.int64()),
            ("base_offset", pa.int64()),
            ("last_offset", pa.int64()),
            ("error", pa.string()),
        ]
    )
)
#: kafka-log-segments: the batches whose CRC does not match, left out alone (the framing goes on after them)
CRC_MISMATCHES_TYPE = pa.list_(
    pa.struct(
        [
            ("position", pa.int64()),
            ("size", pa.int64()),
            ("base_offset", pa.int64()),
            ("last_offset", pa.int64()),
            ("stored_crc", pa.int64()),
            ("computed_crc", pa.int64()),
            ("error", pa.string()),
        ]
    )
)

RECORDS_FIELDS: tuple[tuple[str, str, pa.DataType], ...] = (
    # Spark's Kafka source, same names, types and order
    ("key", "binary", pa.binary()),
    ("value", "binary", pa.binary()),
    ("topic", "string", pa.string()),
    ("partition", "int", pa.int32()),
    ("offset", "bigint", pa.int64()),
    ("timestamp", "timestamp", _TS),
    ("timestampType", "int", pa.int32()),
    ("headers", "array<struct<key:string,value:binary>>", HEADERS_TYPE),
    # where the record is and what its batch says
    ("log_dir", "string", pa.string()),
    ("segment_base_offset", "bigint", pa.int64()),
    ("batch_position", "bigint", pa.int64()),
    ("producer_id", "bigint", pa.int64()),
    ("producer_epoch", "smallint", pa.int16()),
    ("base_sequence", "int", pa.int32()),
    ("is_transactional", "boolean", pa.bool_()),
    ("is_control", "boolean", pa.bool_()),
    ("partition_leader_epoch", "int", pa.int32()),
    ("compression", "string", pa.string()),
    # how the record's transaction ended, from its markers (logdoctor.logdir.transactions): committed,
    # aborted or open; null for a record outside a transaction
    ("transaction_result", "string", pa.string()),
)
DECODED_FIELD = ("decoded", "string", pa.string())  # JSON of the internal-topic decoder (option `decoder`)

SEGMENTS_FIELDS: tuple[tuple[str, str, pa.DataType], ...] = (
    ("log_dir", "string", pa.string()),
    ("topic", "string", pa.string()),
    ("partition", "int", pa.int32()),
    ("path", "string", pa.string()),
    ("base_offset", "bigint", pa.int64()),
    ("last_offset", "bigint", pa.int64()),  # last offset of the last valid batch; null when none
    ("size_bytes", "bigint", pa.int64()),
    ("record_count", "bigint", pa.int64()),
    ("batch_count", "bigint", pa.int64()),
    ("min_timestamp", "timestamp", _TS),  # from the batches' max timestamps and first timestamps
    ("max_timestamp", "timestamp", _TS),
    ("time_index_max_timestamp", "timestamp", _TS),  # what retention uses (last time index entry)
    ("codecs", "array<string>", pa.list_(pa.string())),
    ("magic_versions", "array<int>", pa.list_(pa.int32())),
    ("valid_bytes", "bigint", pa.int64()),
    ("error", "string", pa.string()),
    ("findings", "array<struct<code:string,severity:string,message:string>>", FINDINGS_TYPE),
    (
        "undecodable",
        "array<struct<position:bigint,size:bigint,base_offset:bigint,last_offset:bigint,error:string>>",
        UNDECODABLE_TYPE,
    ),
    (
        "crc_mismatches",
        "array<struct<position:bigint,size:bigint,base_offset:bigint,last_offset:bigint,stored_crc:bigint,"
        "computed_crc:bigint,error:string>>",
        CRC_MISMATCHES_TYPE,
    ),
)


def _ddl(fields: tuple[tuple[str, str, pa.DataType], ...]) -> str:
    return ", ".join(f"`{name}` {ddl}" for name, ddl, _ in fields)


def records_fields(decoded: bool = False) -> tuple[tuple[str, str, pa.DataType], ...]:
    return (*RECORDS_FIELDS, DECODED_FIELD) if decoded else RECORDS_FIELDS


def records_ddl(decoded: bool = False) -> str:
    return _ddl(records_fields(decoded))


def records_arrow_schema(decoded: bool = False) -> pa.Schema:
    return pa.schema([(name, typ) for name, _, typ in records_fields(decoded)])


def segments_ddl() -> str:
    return _ddl(SEGMENTS_FIELDS)


def segments_arrow_schema() -> pa.Schema:
    return pa.schema([(name, typ) for name, _, typ in SEGMENTS_FIELDS])

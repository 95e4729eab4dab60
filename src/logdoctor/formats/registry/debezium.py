"""Debezium's change events on Arrow: the envelope, the semantic types, the placeholder, the source position.

Pure: Arrow types and values in, Arrow types and values out (no paths, no I/O). Each rule restates the
Debezium source it cites (github:debezium/debezium, ``debezium-connector-common`` unless named otherwise):

- the envelope: ``io/debezium/data/Envelope.java`` (``FieldName``: ``before``, ``after``, ``source``, ``op``,
  ``ts_ms``/``ts_us``/``ts_ns``, ``transaction``; ``Operation``: ``r`` read, ``c`` create, ``u`` update,
  ``d`` delete, ``t`` truncate, ``m`` message).
- the semantic types, named by the Arrow field metadata ``connect.name`` the decoders keep:
  ``io/debezium/time/*.java`` and ``io/debezium/data/*.java`` (see :func:`convert_column`).
- the unavailable-value placeholder:
  ``RelationalDatabaseConnectorConfig.DEFAULT_UNAVAILABLE_VALUE_PLACEHOLDER`` and, per column type,
  ``debezium-connector-postgres``' ``UnchangedToastedPlaceholder.java``.
- the source position: the connectors' ``SourceInfo.java`` (PostgreSQL ``lsn``/``sequence``, MySQL
  ``file``/``pos``/``row``, Oracle ``scn``/``commit_scn``, SQL Server ``change_lsn``/``commit_lsn``/
  ``event_serial_no``) and ``pipeline/txmetadata/TransactionStructMaker.java`` (``transaction.id``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa

#: Envelope.FieldName: the fields every Debezium change event's value has (``op`` is required,
#: Envelope.OPERATION_REQUIRED); ``ts_*`` and ``transaction`` are optional
ENVELOPE_FIELDS = ("before", "after", "source", "op")
#: Envelope.Operation codes
READ, CREATE, UPDATE, DELETE, TRUNCATE, MESSAGE = "r", "c", "u", "d", "t", "m"
OPERATIONS = (READ, CREATE, UPDATE, DELETE, TRUNCATE, MESSAGE)
#: RelationalDatabaseConnectorConfig.DEFAULT_UNAVAILABLE_VALUE_PLACEHOLDER (``unavailable.value.placeholder``)
DEFAULT_PLACEHOLDER = "__debezium_unavailable_value"
#: RelationalChangeRecordEmitter.PK_UPDATE_NEWKEY_FIELD / PK_UPDATE_OLDKEY_FIELD: the headers of the delete
#: and the create a primary-key change is emitted as
NEWKEY_HEADER = "__debezium.newkey"
OLDKEY_HEADER = "__debezium.oldkey"

CONNECT_NAME = b"connect.name"

TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")

#: the source fields that place an event in the database's log (kept in the provenance column when the source
#: struct has them): PostgreSQL ``lsn`` and ``sequence`` (postgresql/SourceInfo.java; AbstractSourceInfo
#: SEQUENCE_KEY = [last commit LSN, LSN]), MySQL/MariaDB ``server_id``, ``gtid``, ``file``, ``pos``, ``row``
#: (binlog/BinlogSourceInfo.java), Oracle ``scn``, ``commit_scn`` (oracle/SourceInfo.java), SQL Server
#: ``change_lsn``, ``commit_lsn``, ``event_serial_no`` (sqlserver/SourceInfo.java)
ALL_POSITION_FIELDS = (
    "lsn", "sequence",
    "server_id", "gtid", "file", "pos", "row",
    "scn", "commit_scn",
    "change_lsn", "commit_lsn", "event_serial_no",
)  # fmt: skip


def _fields(fields: pa.DataType | pa.Schema | Sequence[pa.Field]) -> list[pa.Field]:
    if isinstance(fields, pa.StructType):
        return [fields.field(i) for i in range(fields.num_fields)]
    if isinstance(fields, pa.DataType):
        return []  # a value that is not a record (an Avro primitive, a union of Protobuf messages, bytes)
    return list(fields)


def is_envelope(fields: pa.DataType | pa.Schema | Sequence[pa.Field]) -> bool:
    """Whether these fields (a value's type, or a batch's top-level columns) are a Debezium envelope: ``op``
    a string, ``before`` and ``after`` structs of one type, ``source`` a struct (Envelope.FieldName;
    Envelope.isEnvelopeSchema also asks the schema name to end in ``.Envelope``, which a JSON-Schema'd or
    renamed value may not keep: the fields decide here). A type that is not a struct is no envelope."""
    by_name = {f.name: f for f in _fields(fields)}
    if not all(name in by_name for name in ENVELOPE_FIELDS):
        return False
    before, after = by_name["before"].type, by_name["after"].type
    return (
        (pa.types.is_string(by_name["op"].type) or pa.types.is_large_string(by_name["op"].type))
        and pa.types.is_struct(after)
        and before == after
        and pa.types.is_struct(by_name["source"].type)
    )


def semantic_name(field: pa.Field) -> str | None:
    """The Connect/Debezium semantic name of a field (its ``connect.name`` metadata), or None."""
    meta = field.metadata or {}
    name = meta.get(CONNECT_NAME)
    return name.decode() if name is not None else None


# --- the semantic types --------------------------------------------------------------------------------

#: io.debezium.time.* of an int physical value: the Arrow type the value is cast to
_CASTS: Mapping[str, pa.DataType] = {
    "io.debezium.time.Date": pa.date32(),  # time/Date.java: int32 days since the epoch
    "io.debezium.time.Time": pa.time32("ms"),  # time/Time.java: int32 ms past midnight
    "io.debezium.time.MicroTime": pa.time64("us"),  # time/MicroTime.java: int64 µs past midnight
    "io.debezium.time.NanoTime": pa.time64("ns"),  # time/NanoTime.java: int64 ns past midnight
    "io.debezium.time.MicroDuration": pa.duration("us"),  # time/MicroDuration.java: int64 µs
}
#: io.debezium.time.*Timestamp: the unit of the int64 since the epoch
_TIMESTAMPS: Mapping[str, str] = {
    "io.debezium.time.Timestamp": "ms",  # time/Timestamp.java
    "io.debezium.time.MicroTimestamp": "us",  # time/MicroTimestamp.java
    "io.debezium.time.NanoTimestamp": "ns",  # time/NanoTimestamp.java
}
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"  # time/ZonedTimestamp.java: ISO_OFFSET_DATE_TIME text
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"  # data/VariableScaleDecimal.java


def convert_column(field: pa.Field, array: pa.Array) -> tuple[pa.Field, pa.Array, int]:
    """One column of ``after`` with its Debezium semantic type applied: the table's field (name, nullability
    and metadata kept), its values, and how many non-null values could not be converted (null there).

    - ``io.debezium.time.Date`` -> date32; ``Time`` -> time32[ms]; ``MicroTime`` -> time64[us]; ``NanoTime``
      -> time64[ns]; ``MicroDuration`` -> duration[us].
    - ``Timestamp`` (ms), ``MicroTimestamp``, ``NanoTimestamp`` (ns, floored to µs) -> timestamp[us, UTC]:
      Debezium writes these from columns with no time zone as if they were UTC.
    - ``ZonedTimestamp`` (ISO-8601 text with an offset, 0 to 9 fraction digits) -> timestamp[us, UTC]
      (digits past the µs are dropped); text that does not parse is null, counted.
    - ``io.debezium.data.VariableScaleDecimal`` (struct ``scale`` int32, ``value`` the unscaled
      two's-complement big-endian bytes) -> decimal128(38, S), S the largest scale among the column's values
      (at least 0), when every value fits 38 digits at that scale; otherwise the plain decimal string
      (``BigDecimal.toPlainString``: no exponent), as ``decimal.handling.mode=string`` writes it.
    - anything else (``io.debezium.data.Json``, ``Uuid``, ``Xml``, ``Enum``, ``EnumSet``, ``Bits``, ``Year``,
      ``ZonedTime``, ``Interval``, and the Connect Decimal/Date/Time/Timestamp the decoders already mapped):
      unchanged.
    """
    name = semantic_name(field)
    if name in _CASTS and pa.types.is_integer(array.type):
        return field.with_type(_CASTS[name]), array.cast(_CASTS[name]), 0
    if name in _TIMESTAMPS and pa.types.is_integer(array.type):
        return field.with_type(TIMESTAMP_UTC), _epoch_to_micros(array, _TIMESTAMPS[name]), 0
    if name == ZONED_TIMESTAMP and pa.types.is_string(array.type):
        values, bad = _zoned_micros(array.to_pylist())
        return field.with_type(TIMESTAMP_UTC), pa.array(values, pa.int64()).cast(TIMESTAMP_UTC), bad
    if name == VARIABLE_SCALE_DECIMAL and pa.types.is_struct(array.type):
        typ, values = variable_scale_decimals(array.to_pylist())
        return field.with_type(typ), pa.array(values, typ), 0
    return field, array, 0


def _epoch_to_micros(array: pa.Array, unit: str) -> pa.Array:
    values = array.to_pylist()
    if unit == "ms":
        micros = [None if v is None else v * 1000 for v in values]
    elif unit == "ns":
        micros = [None if v is None else v // 1000 for v in values]  # floor: a moment before the epoch too
    else:
        micros = values
    return pa.array(micros, pa.int64()).cast(TIMESTAMP_UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _zoned_micros(values: list[str | None]) -> tuple[list[int | None], int]:
    out: list[int | None] = []
    bad = 0
    for text in values:
        try:  # Python >= 3.11: "Z", offsets, any number of digits
            moment = None if text is None else datetime.fromisoformat(text)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            out.append(None)
            bad += text is not None  # a null is no failed conversion
            continue
        delta = moment - _EPOCH
        out.append((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)
    return out, bad


def variable_scale_decimal(value: Mapping[str, Any] | None) -> Decimal | None:
    """A VariableScaleDecimal struct (``{"scale": int, "value": bytes}``) as a Decimal
    (VariableScaleDecimal.toLogical: ``new BigDecimal(new BigInteger(value), scale)``)."""
    if value is None or value.get("value") is None or value.get("scale") is None:
        return None
    unscaled = int.from_bytes(bytes(value["value"]), "big", signed=True)
    return Decimal(f"{unscaled}E{-int(value['scale'])}")  # exact: no context rounds it


def variable_scale_decimals(values: Sequence[Mapping[str, Any] | None]) -> tuple[pa.DataType, list]:
    """The Arrow type and values of a column of VariableScaleDecimal structs (see :func:`convert_column`)."""
    decimals = [variable_scale_decimal(v) for v in values]
    present = [d for d in decimals if d is not None]
    scale = max([0, *(-d.as_tuple().exponent for d in present)])  # type: ignore[operator]
    if scale <= 38 and all(_digits_at(d, scale) <= 38 for d in present):
        quantum = Decimal(f"1E{-scale}")
        exact = [None if d is None else d.quantize(quantum, context=_EXACT) for d in decimals]
        return pa.decimal128(38, scale), exact
    return pa.string(), [None if d is None else format(d, "f") for d in decimals]


#: a context wide enough that no arithmetic here rounds (the default one keeps 28 digits)
_EXACT = Context(prec=10_000)


def _digits_at(value: Decimal, scale: int) -> int:
    return len(str(abs(int(value.scaleb(scale, context=_EXACT)))))


# --- the placeholder -------------------------------------------------------------------------------------


def placeholder_test(
    typ: pa.DataType, placeholder: str = DEFAULT_PLACEHOLDER
) -> Callable[[Any], bool] | None:
    """A test of whether a column's value (as ``to_pylist`` gives it) is the unavailable-value placeholder, or
    None when a column of this type cannot hold it. The forms restate UnchangedToastedPlaceholder.java: the
    text for text-like columns, its bytes for binary ones, ``[text]`` / ``[bytes]`` for arrays of them, the
    bytes as numbers for int/bigint arrays, ``{text: text}`` for hstore (a map), and
    ``[UUID.nameUUIDFromBytes(bytes)]`` for uuid arrays."""
    raw = placeholder.encode()
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return lambda v: v == placeholder
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return lambda v: v == raw
    if pa.types.is_map(typ):
        as_items = [(placeholder, placeholder)]
        return lambda v: v == as_items or v == {placeholder: placeholder}
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        item = typ.value_type
        if pa.types.is_string(item) or pa.types.is_large_string(item):
            forms = ([placeholder], [_name_uuid(raw)])
            return lambda v: v in forms
        if pa.types.is_binary(item) or pa.types.is_large_binary(item):
            return lambda v: v == [raw]
        if pa.types.is_integer(item):
            numbers = [b - 256 if b > 127 else b for b in raw]  # Java bytes are signed
            return lambda v: v == numbers
    return None


def _name_uuid(raw: bytes) -> str:
    """java.util.UUID.nameUUIDFromBytes: MD5 of the bytes, version 3, IETF variant."""
    return str(uuid.UUID(bytes=hashlib.md5(raw).digest(), version=3))


# --- the source position and the transaction ---------------------------------------------------------------


def position_fields(source_type: pa.StructType) -> list[pa.Field]:
    """The fields of a source struct that place an event in the database's log, in the source's order."""
    return [f for f in _fields(source_type) if f.name in ALL_POSITION_FIELDS]


def position_key(source: Mapping[str, Any] | None) -> tuple | None:
    """A value that orders events of one connector by where they are in the database's log, or None when the
    source names no position. PostgreSQL: ``sequence`` = [last commit LSN, LSN] (the stream is in commit
    order, so the last commit LSN goes first), else ``lsn``; MySQL/MariaDB: (``file`` as its base name and
    number, ``pos``, ``row``);
    Oracle: (``commit_scn`` or ``scn``, ``scn``); SQL Server: (``commit_lsn``, ``change_lsn``,
    ``event_serial_no``)."""
    if not source:
        return None
    connector = source.get("connector")
    if connector == "postgresql" or (connector is None and "lsn" in source):
        lsn = source.get("lsn")
        sequence = _pg_sequence(source.get("sequence"))
        if sequence is not None:
            return sequence
        return None if lsn is None else (int(lsn), int(lsn))
    if connector in BINLOG_CONNECTORS:
        if source.get("file") is None or source.get("pos") is None:
            return None
        base, number = binlog_file(str(source["file"]))
        return (base, number, int(source["pos"]), int(source.get("row") or 0))
    if connector == "oracle":
        scn = _int_or_none(source.get("scn"))
        if scn is None:
            return None
        commit = _int_or_none(source.get("commit_scn"))
        return (scn if commit is None else commit, scn)
    if connector == "sqlserver":
        commit, change = source.get("commit_lsn"), source.get("change_lsn")
        if commit is None and change is None:
            return None
        return (str(commit or change), str(change or ""), int(source.get("event_serial_no") or 0))
    return None


def _pg_sequence(text: Any) -> tuple[int, int] | None:
    if not isinstance(text, str):
        return None
    try:
        parts = json.loads(text)
        last_commit, lsn = (None if p is None else int(p) for p in parts)
    except (ValueError, TypeError):
        return None
    if lsn is None:
        return None
    return (lsn if last_commit is None else last_commit, lsn)


#: the connectors whose source position is the binary log's (binlog/BinlogSourceInfo.java)
BINLOG_CONNECTORS = ("mysql", "mariadb")


def binlog_file(name: str) -> tuple[str, int]:
    """A binary log file name as (base name, number): ``mysql-bin.000003`` -> (``mysql-bin``, 3). The number
    orders the files of one base name (binlog/history/BinlogHistoryRecordComparator.BinlogFileName: files of
    other base names are not comparable); a name without a numeric extension is (name, -1)."""
    base, _, extension = name.rpartition(".")
    if base and extension.isdigit():
        return base, int(extension)
    return name, -1


def redelivery_position(source: Mapping[str, Any] | None) -> tuple[Any, Any] | None:
    """Where a streamed change event is in the database's log, as ``(domain, place)``: two events of one key
    are in the database's order by ``place`` when their ``domain`` is the same, and cannot be compared
    otherwise. None when the event names no such position (another connector, a field left out).

    Within one key the database serialises the changes (a row lock, the primary key's unique index), so the
    position of its events grows with each change, and an event at or before the last applied one of its
    key is that change delivered again: Kafka Connect redelivers from its last committed offset after a
    crash, at later Kafka offsets, with the positions they had (Debezium's postgresql.adoc, "Kafka Connect
    process crashes": "Consumers can keep track of this information, especially the LSN, to determine
    whether an event is a duplicate").

    - PostgreSQL (postgresql/SourceInfo.java, PostgresStreamingChangeEventSource.processReplicationMessages):
      ``lsn``, the change's own WAL position (``sequence``'s second element when ``lsn`` is absent). Across
      keys the WAL is not in commit order (two transactions interleave), but within one table the changes
      of one row, and a truncate against every change, are serialised by their locks: the later change's
      record is written after the earlier one's commit, so its LSN is higher. ``sequence``'s first element
      (the last commit LSN before the event's transaction) orders the stream across keys
      (:func:`position_key`); per key the LSN alone does, and is what a redelivery repeats.
    - MySQL and MariaDB (binlog/BinlogSourceInfo.java, BinlogStreamingChangeEventSource.handleEvent): ``file``
      and ``pos`` (the position of the binlog event that holds the row: ``setEventPosition``) and ``row``
      (its index within that event), in one server's binary log (``server_id``, 0 in a snapshot) of one base
      name (:func:`binlog_file`). With ``gtid`` (the transaction's GTID, when GTIDs are on): MySQL's
      ``source_id:number`` and MariaDB's ``domain-server-sequence`` order the transactions of one source
      (one domain) by their number, then (file number, pos, row) within a transaction.

    ``source.ts_ms`` / ``ts_us`` / ``ts_ns`` are times, not positions (two changes share one, and a clock may
    step back): they never decide a redelivery."""
    if not source:
        return None
    connector = source.get("connector")
    if connector == "postgresql":
        lsn = _pg_lsn(source.get("lsn"), source.get("sequence"))
        return None if lsn is None else (_PG_DOMAIN, lsn)
    if connector not in BINLOG_CONNECTORS or source.get("file") is None or source.get("pos") is None:
        return None
    base, number = binlog_file(str(source["file"]))
    place = (number, int(source["pos"]), int(source.get("row") or 0))
    gtid = _gtid(connector, source.get("gtid"))
    if gtid is not None:
        origin, sequence = gtid
        return (("gtid", connector, origin), (sequence, *place))
    server = _int_or_none(source.get("server_id")) or 0
    return (("binlog", connector, server, base), place)


_PG_DOMAIN = ("postgresql",)


def redelivery_ranker(connector: str | None, names: Sequence[str]) -> Callable[[tuple], tuple | None] | None:
    """:func:`redelivery_position` of the position fields ``names`` (in that order: a row's
    :func:`position_fields` values) of ``connector``'s events, made once for a batch's schema (the fold calls
    it per event); None when the connector's positions are not compared."""
    index = {name: i for i, name in enumerate(names)}
    if connector == "postgresql" and ("lsn" in index or "sequence" in index):
        at_lsn, at_seq = index.get("lsn"), index.get("sequence")

        def postgresql(position: tuple) -> tuple | None:
            lsn = _pg_lsn(
                None if at_lsn is None else position[at_lsn], None if at_seq is None else position[at_seq]
            )
            return None if lsn is None else (_PG_DOMAIN, lsn)

        return postgresql
    if connector in BINLOG_CONNECTORS and "file" in index and "pos" in index:

        def binlog(position: tuple) -> tuple | None:
            return redelivery_position({"connector": connector, **dict(zip(names, position, strict=True))})

        return binlog
    return None


def _pg_lsn(lsn: Any, sequence: Any) -> int | None:
    """A PostgreSQL event's own WAL position: ``lsn``, else the second element of ``sequence``."""
    if lsn is not None:
        return int(lsn)
    pair = _pg_sequence(sequence)
    return None if pair is None else pair[1]


def _gtid(connector: str, text: Any) -> tuple[str, int] | None:
    """A GTID as (its source, its number): MySQL ``3E11FA47-...:23`` (also ``uuid:tag:23``), MariaDB
    ``0-1-42`` (domain 0, server 1, sequence 42: the sequence grows within the domain)."""
    if not isinstance(text, str) or not text:
        return None
    if connector == "mariadb":
        parts = text.split("-")
        if len(parts) == 3 and all(p.isdigit() for p in parts):
            return parts[0], int(parts[2])
        return None
    origin, _, number = text.rpartition(":")
    return (origin.lower(), int(number)) if origin and number.isdigit() else None


def at_or_before(a: tuple[Any, Any] | None, b: tuple[Any, Any] | None) -> bool | None:
    """Whether redelivery position ``a`` is at or before ``b`` (:func:`redelivery_position`); None when they
    cannot be compared (either is None, or their domains differ). A server id of 0 (a snapshot's) matches
    any."""
    if a is None or b is None:
        return None
    (da, pa_), (db, pb) = a, b
    snapshot_server = da[0] == db[0] == "binlog" and da[1] == db[1] and da[3] == db[3] and 0 in (da[2], db[2])
    if da != db and not snapshot_server:
        return None
    try:
        return pa_ <= pb
    except TypeError:
        return None


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def transaction_id(source: Mapping[str, Any] | None, transaction: Mapping[str, Any] | None) -> str | None:
    """The event's transaction id as text: the envelope's ``transaction.id`` (provide.transaction.metadata)
    when present, else the source's ``txId`` (PostgreSQL, Oracle), else MySQL's ``gtid``."""
    if transaction and transaction.get("id") is not None:
        return str(transaction["id"])
    for name in ("txId", "gtid"):
        if source and source.get(name) is not None:
            return str(source[name])
    return None

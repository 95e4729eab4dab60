"""Typed tables: the rows every output reads (:func:`logdoctor.spark.sources.slice_reader.read_slices`),
decoded with the registry rebuilt from ``_schemas`` into one table per topic, and every record that does
not decode in the side table ``_undecoded`` with its reason (docs/typed-tables.md).

Two passes over the same slices, each a Spark job of the export (or, for the ``kafka-log`` DataFrame, the
planning worker's first pass):

1. :func:`survey_batch`: which writer schemas each topic's keys and values name (a registry schema id with
   its Protobuf message-index path, or a Kafka Connect schema carried inline). A writer schema counts once
   one of its payloads decodes with it (a task decodes a writer's payloads only until one does).
2. :func:`plan_topics` (driver): per topic the table type: the newest of its Avro writer schemas where every
   writer resolves to it by Avro's schema resolution (:mod:`logdoctor.formats.registry.avro_resolve`; each
   record is then read with its writer schema and resolved), else the union of its writer types
   (:mod:`logdoctor.formats.registry.arrow_union`: a column only some writers have is null elsewhere) and a
   note saying why. :class:`TypedBatches` (executors) then decodes each raw batch, one decoder call per
   writer schema per batch, into rows of that type.

A topic's values are typed when any of them names a schema (a framing or a Connect envelope); a topic none
of whose values does keeps them as the binary column ``value`` (and likewise its keys, in ``kafka.key``), so
that plain topics are neither lost nor all sent to the side table. In a typed topic every value that does
not decode, or whose key does not in a topic of typed keys, goes to ``_undecoded``, with the raw export's
columns and its reason; a null value is a tombstone row (its value columns null). Control records are not
data: typed tables leave them out, as consumers never see them.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from logdoctor.formats.registry.reasons import DECODE_ERROR_TRUNCATED, NO_MAGIC_BYTE
from logdoctor.formats.registry.results import Payloads
from logdoctor.formats.registry.writers import (
    REGISTRY,
    Decoders,
    Resolved,
    WriterKey,
    is_framed,
    writer_of,
)

if TYPE_CHECKING:
    from logdoctor.formats.registry.store import SchemaRegistry
    from logdoctor.logdir.read_options import ReadOptions

_MISSING = ("unknown_schema_id", "schema_hard_deleted")
KAFKA_COLUMN = "kafka"
UNDECODED = "_undecoded"
KEY_HEADER = "__key_schema_id"
VALUE_HEADER = "__value_schema_id"
_TS = pa.timestamp("us", tz="UTC")
_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


@dataclass(slots=True)
class TopicSurvey:
    """What the first pass found of one topic: the writer schemas its keys and values name."""

    value_writers: set[WriterKey] = field(default_factory=set)
    key_writers: set[WriterKey] = field(default_factory=set)
    values_framed: bool = False
    keys_framed: bool = False

    def merge(self, other: TopicSurvey) -> None:
        self.value_writers |= other.value_writers
        self.key_writers |= other.key_writers
        self.values_framed |= other.values_framed
        self.keys_framed |= other.keys_framed


@dataclass(slots=True)
class TopicPlan:
    """One topic's table: the value's type (its fields are the columns) and the key's type.

    ``values_typed`` False: no value of the topic names a schema, the column ``value`` holds the bytes.
    ``unbuildable``: writer schemas the format's library refused (their records go to the side table)."""

    topic: str
    values_typed: bool
    keys_typed: bool
    value_type: pa.DataType
    key_type: pa.DataType
    value_writers: tuple[WriterKey, ...] = ()
    key_writers: tuple[WriterKey, ...] = ()
    unbuildable: dict[WriterKey, str] = field(default_factory=dict)
    #: the reader schema the writers of the values (keys) resolve to by Avro's rules; None: their union
    value_reader: WriterKey | None = None
    key_reader: WriterKey | None = None
    #: why a column's writers are a union and not resolved to one reader schema
    notes: tuple[str, ...] = ()
    #: some value writer's data contract encrypts fields (an ENCRYPT rule): the ``kafka`` struct then has
    #: ``encrypted_fields``, each row's (issue 78; formats/registry/data_contract.py)
    encrypted: bool = False

    def value_columns(self) -> list[pa.Field]:
        """The table's value columns: a struct's fields (a field named ``kafka`` becomes ``value_kafka``),
        else one column ``value``."""
        if self.values_typed and pa.types.is_struct(self.value_type):
            return [_value_field(self.value_type.field(i)) for i in range(self.value_type.num_fields)]
        return [pa.field("value", self.value_type)]

    def kafka_type(self) -> pa.StructType:
        return pa.struct(
            [
                pa.field("topic", pa.string()),
                pa.field("partition", pa.int32()),
                pa.field("offset", pa.int64()),
                pa.field("timestamp", _TS),
                pa.field("timestamp_type", pa.int32()),
                pa.field("key", self.key_type),
                pa.field("headers", _HEADERS),
                pa.field("log_dir", pa.string()),
                pa.field("transaction_result", pa.string()),
                pa.field("key_schema_id", pa.int32()),
                pa.field("value_schema_id", pa.int32()),
                pa.field("schema_deleted", pa.bool_()),
                *([pa.field("encrypted_fields", pa.list_(pa.string()))] if self.encrypted else []),
            ]
        )

    def schema(self) -> pa.Schema:
        return pa.schema([*self.value_columns(), pa.field(KAFKA_COLUMN, self.kafka_type())])


def _value_field(f: pa.Field) -> pa.Field:
    return f.with_name("value_kafka") if f.name == KAFKA_COLUMN else f


@dataclass(slots=True)
class TypedPlan:
    """The registry and every topic's table: what the executors need to decode (picklable)."""

    registry: SchemaRegistry | None
    topics: dict[str, TopicPlan] = field(default_factory=dict)


def format_type(t: pa.DataType, fmt: str) -> pa.DataType:
    """``t`` as the output ``fmt`` can hold it, nested types too (docs/typed-tables.md, "Per output"):
    Parquet holds every type of the mapping. Iceberg has no 8/16-bit or unsigned integers, no time in
    milliseconds and no duration: int8/int16/uint8/uint16 -> int32, uint32 -> int64, time32 -> time64 (us),
    duration -> int64 (microseconds). Delta has no time type and no duration: a time is its text
    (``HH:MM:SS.fff``), a duration int64 microseconds. A Spark DataFrame (``spark``; and so the spark
    writer's Parquet): Spark 4.1 writes no TIME, a time is its text as in Delta."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(format_type(f.type, fmt)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(format_type(t.key_type, fmt), format_type(t.item_type, fmt))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(t.value_field.with_type(format_type(t.value_type, fmt)))
    if pa.types.is_duration(t) and fmt in ("iceberg", "delta"):
        return pa.int64()
    if fmt == "iceberg":
        if t in (pa.int8(), pa.int16(), pa.uint8(), pa.uint16()):
            return pa.int32()
        if t == pa.uint32():
            return pa.int64()
        if pa.types.is_time(t):
            return pa.time64("us")
    if fmt in ("delta", "spark") and pa.types.is_time(t):
        return pa.string()
    return t


def format_schema(schema: pa.Schema, fmt: str) -> pa.Schema:
    return pa.schema([f.with_type(format_type(f.type, fmt)) for f in schema])


def load_typed_registry(items: Sequence[str], opts: ReadOptions) -> Any:
    """The registry of the ``_schemas`` partitions among ``items`` and under ``opts.schemas``
    (:func:`logdoctor.logdir.schemas_store.load_registry`)."""
    from logdoctor.logdir.schemas_store import load_registry

    return load_registry(list(items), list(opts.schemas), options=opts)


# --- per row: which writer schema ---------------------------------------------------------------------


def _header_values(rb: pa.RecordBatch, name: str) -> list[bytes | None] | None:
    """Per row, the value of the record header ``name`` (the last one), or None when no row has it."""
    import pyarrow.compute as pc

    headers = rb.column("headers")
    flat = pc.list_flatten(headers)
    if len(flat) == 0:
        return None
    hit = pc.equal(flat.field("key"), name)
    if not pc.any(hit).as_py():
        return None
    out: list[bytes | None] = [None] * rb.num_rows
    parents = pc.list_parent_indices(headers).to_numpy()
    values = flat.field("value")
    for i in pc.indices_nonzero(hit).to_pylist():
        out[int(parents[i])] = values[i].as_py()
    return out


class _Resolver:
    """:func:`writer_of` for every key or value of a column, with the frames seen kept: a prefix frame of a
    non-Protobuf id by its 5 bytes, a Protobuf one with its message indexes by those bytes too (the same
    bytes, the same writer schema and payload start). A reason that depends on more than the frame's bytes
    (Protobuf's message indexes cut short) is not kept.

    :meth:`frames` finds the prefix frames of a whole Arrow column at once
    (:func:`logdoctor.formats.registry.framing.scan_prefix`: in C where the extension is built) and asks
    :func:`writer_of` once per distinct frame; :meth:`column` is the same for a list of values."""

    def __init__(self, registry: SchemaRegistry | None) -> None:
        self.registry = registry

    def column(
        self, data: Sequence[bytes | None], headers: Sequence[bytes | None] | None, context: str | None = None
    ) -> list[Any]:
        return self.frames(pa.array(data, pa.binary()), headers, context).as_list()

    def frames(
        self, values: pa.Array, headers: Sequence[bytes | None] | None, context: str | None = None
    ) -> ColumnFrames:
        """The writer schema (or reason, or None for a null) of every element of the binary array
        ``values`` whose records have the schema-id ``headers`` (None: none has one)."""
        import numpy as np

        from logdoctor.formats.registry.framing import MAGIC_GUID, MAGIC_ID, binary_slices, scan_prefix

        n = len(values)
        table: list[Any] = [None, NO_MAGIC_BYTE]
        index: dict[Any, int] = {NO_MAGIC_BYTE: 1}
        codes = np.ones(n, np.int32)  # NO_MAGIC_BYTE unless found otherwise
        if n == 0:
            return ColumnFrames(values, codes, table)
        if values.null_count:
            codes[np.asarray(values.is_null())] = 0
        registry = self.registry
        ctx = None if context == "." else context

        def code_of(r: Any) -> int:
            if r is None:
                return 0
            c = index.get(r)
            if c is None:
                c = index[r] = len(table)
                table.append(r)
            return c

        def one_by_one(rows: np.ndarray) -> None:
            if not rows.size:
                return
            hs = headers
            for i, d in zip(rows.tolist(), binary_slices(values, rows, 0), strict=True):
                codes[i] = code_of(writer_of(d, None if hs is None else hs[i], registry, ctx))

        scan = scan_prefix(values)
        magic = scan.magic
        plain = np.ones(n, bool)
        if headers is not None:  # a schema-id header: its frame, row by row
            hrows = np.fromiter((h is not None for h in headers), bool, n) & (codes != 0)
            one_by_one(np.flatnonzero(hrows))
            plain &= ~hrows
        # a Connect envelope's "{", a GUID: row by row
        one_by_one(np.flatnonzero(plain & ((magic == ord("{")) | (magic == MAGIC_GUID))))
        idrows = np.flatnonzero(plain & (magic == MAGIC_ID))
        if not idrows.size:
            return ColumnFrames(values, codes, table)
        uniq, inverse = np.unique(scan.ids[idrows], return_inverse=True)
        for k in range(len(uniq)):
            rows = idrows[inverse == k]
            [first] = binary_slices(values, rows[:1], 0)
            r = writer_of(first, None, registry, ctx)
            protobuf = (isinstance(r, Resolved) and r.writer.message_indexes) or r == DECODE_ERROR_TRUNCATED
            if not protobuf:  # the 5 bytes decide: every value of the id alike
                codes[rows] = code_of(r)
                continue
            # Protobuf: the values of one message-index path alike, those whose path did not parse one by one
            ilen = scan.index_bytes[rows]
            one_by_one(rows[ilen < 0])
            rows = rows[ilen >= 0]
            if not rows.size:
                continue
            # a path's bytes end where its count says (no path is the start of another): its key alone
            # tells it from the others
            upaths, pinv = np.unique(scan.index_keys[rows], return_inverse=True)
            for j in range(len(upaths)):
                sub = rows[pinv == j] if len(upaths) > 1 else rows
                [first] = binary_slices(values, sub[:1], 0)
                codes[sub] = code_of(writer_of(first, None, registry, ctx))
        return ColumnFrames(values, codes, table)


@dataclass(slots=True)
class ColumnFrames:
    """What :meth:`_Resolver.frames` found: per row (``codes``) an index into ``table`` (None for a null,
    a reason, or a :class:`Resolved`: every row of one writer schema and payload start shares one)."""

    values: pa.Array
    codes: Any
    table: list[Any]

    def as_list(self) -> list[Any]:
        table = self.table
        return [table[c] for c in self.codes.tolist()]

    def groups(self) -> list[tuple[Any, Any]]:
        """(resolution, its rows in order) of each resolution some row has."""
        import numpy as np

        order = np.argsort(self.codes, kind="stable")
        counts = np.bincount(self.codes, minlength=len(self.table))
        out = []
        at = 0
        for c, k in enumerate(counts.tolist()):
            if k:
                out.append((self.table[c], order[at : at + k]))
                at += k
        return out

    def payloads(self, parts: Sequence[tuple[Resolved, Any]]) -> Payloads:
        """The payloads of the rows of each (resolution, rows) of ``parts``, in that order: spans of the
        column's data buffer (its bytes after each resolution's frame)."""
        import numpy as np

        values = self.values
        offsets = values.buffers()[1]
        kind = np.int64 if pa.types.is_large_binary(values.type) else np.int32
        at = np.frombuffer(offsets, kind)[values.offset : values.offset + len(values) + 1].astype(np.int64)
        starts = [at[rows] + r.payload for r, rows in parts]
        ends = [at[rows + 1] for _, rows in parts]
        s = starts[0] if len(parts) == 1 else np.concatenate(starts)
        e = ends[0] if len(parts) == 1 else np.concatenate(ends)
        data = values.buffers()[2]
        return Payloads(b"" if data is None else data, np.minimum(s, e), e)


def _resolve(rb: pa.RecordBatch, resolver: _Resolver, column: str, header: str) -> ColumnFrames:
    registry = resolver.registry
    context = None  # the topic's Schema Registry context (an association's subject names it)
    if registry is not None and registry.associations and rb.num_rows:
        context = registry.context_of_topic(rb.column("topic")[0].as_py(), column == "key")
    return resolver.frames(rb.column(column), _header_values(rb, header), context)


def _data_rows(rb: pa.RecordBatch) -> pa.RecordBatch:
    import pyarrow.compute as pc

    control = rb.column("is_control")
    if control.null_count == 0 and not pc.any(control).as_py():
        return rb
    return rb.filter(pc.invert(pc.fill_null(control, False)))


def survey_batch(
    rb: pa.RecordBatch, resolver: _Resolver, into: dict[str, TopicSurvey], decoders: Decoders | None = None
) -> None:
    """Add what the raw batch ``rb`` (rows of one topic-partition) says of its topic's writer schemas.

    With ``decoders``, a writer schema counts only once one of its payloads decodes with it (issue 75: a
    damaged record whose frame names another subject's schema must not reshape the table): a writer not yet
    counted has its payloads of the batch decoded until one does. A writer schema that does not build
    counts at once (its records go to the side table; it adds no column)."""
    rb = _data_rows(rb)
    if rb.num_rows == 0:
        return
    topic = rb.column("topic")[0].as_py()
    s = into.setdefault(topic, TopicSurvey())
    for column, header, writers, attr in (
        ("value", VALUE_HEADER, s.value_writers, "values_framed"),
        ("key", KEY_HEADER, s.key_writers, "keys_framed"),
    ):
        frames = _resolve(rb, resolver, column, header)
        groups = frames.groups()
        pending: dict[WriterKey, list[tuple[Resolved, Any]]] = {}
        for r, rows in groups:
            if not isinstance(r, Resolved) or r.writer in writers:
                continue
            if decoders is None:
                writers.add(r.writer)
            else:
                pending.setdefault(r.writer, []).append((r, rows))
        for writer, parts in pending.items():
            if _decodes_any(decoders, writer, frames, parts):  # type: ignore[arg-type]
                writers.add(writer)
        if not getattr(s, attr) and any(is_framed(r) for r, _ in groups):
            setattr(s, attr, True)


#: the survey decodes a writer's payloads in slices of this many until one decodes
_SURVEY_SLICE = 64


def _decodes_any(
    decoders: Decoders, writer: WriterKey, frames: ColumnFrames, parts: list[tuple[Resolved, Any]]
) -> bool:
    dec = decoders.get(writer)
    if isinstance(dec, Exception):
        return True
    for r, rows in parts:
        for start in range(0, len(rows), _SURVEY_SLICE):
            payloads = frames.payloads([(r, rows[start : start + _SURVEY_SLICE])])
            if any(why is None for why in dec.decode(payloads).reasons):
                return True
    return False


def survey(batches: Iterable[pa.RecordBatch], registry: SchemaRegistry | None) -> dict[str, TopicSurvey]:
    """The first pass over raw batches (one task's, or all of them): the writer schemas that decoded at
    least one of their records."""
    out: dict[str, TopicSurvey] = {}
    resolver = _Resolver(registry)
    decoders = Decoders(registry)
    for rb in batches:
        survey_batch(rb, resolver, out, decoders)
    return out


def merge_surveys(parts: Iterable[Mapping[str, TopicSurvey]]) -> dict[str, TopicSurvey]:
    out: dict[str, TopicSurvey] = {}
    for part in parts:
        for topic, s in part.items():
            out.setdefault(topic, TopicSurvey()).merge(s)
    return out


def _table_type(
    writers: Sequence[WriterKey], decoders: Decoders, bad: dict[WriterKey, str], notes: list[str], side: str
) -> tuple[pa.DataType, WriterKey | None]:
    """The table type of a column's writer schemas, and the reader schema they resolve to (None: none).

    Avro writers resolve to the newest of them (the highest schema id: the last registered) by Avro's
    schema resolution (:mod:`logdoctor.formats.registry.avro_resolve`): the table has the reader's type.
    Where one of them does not resolve to it (or they are not all Avro), the table is the union of the
    writers' types (:mod:`logdoctor.formats.registry.arrow_union`), and ``notes`` says why."""
    from logdoctor.formats.registry.arrow_union import union_type

    types = []
    built = []
    for w in writers:
        d = decoders.get(w)
        if isinstance(d, Exception):
            bad[w] = str(d)
        else:
            types.append(d.arrow_type)
            built.append((w, d))
    if not types:
        return pa.binary(), None
    reader = _reader_schema(built, notes, side)
    if reader is not None:
        return decoders.get(reader).arrow_type, reader  # type: ignore[union-attr]
    return union_type(types), None


def _reader_schema(built: list[tuple[WriterKey, Any]], notes: list[str], side: str) -> WriterKey | None:
    from logdoctor.formats.registry.avro import AvroDecoder
    from logdoctor.formats.registry.avro_resolve import incompatibility

    if len(built) < 2 or not all(isinstance(d, AvroDecoder) for _, d in built):
        return None
    reader_key, reader = max(built, key=lambda wd: wd[0].schema_id or 0)
    for w, d in built:
        why = None if w == reader_key else incompatibility(d.root, reader.root)
        if why is not None:
            notes.append(
                f"{side}: schema id {w.schema_id} does not resolve to the newest, schema id "
                f"{reader_key.schema_id} ({why}): the table is the union of the writers' types"
            )
            return None
    return reader_key


def plan_topics(surveys: Mapping[str, TopicSurvey], registry: SchemaRegistry | None) -> TypedPlan:
    """Driver side: each topic's table type from its writer schemas (ordered by id, then Connect's)."""
    decoders = Decoders(registry)
    plan = TypedPlan(registry)
    for topic in sorted(surveys):
        s = surveys[topic]
        vw = tuple(sorted(s.value_writers, key=WriterKey.sort_key))
        kw = tuple(sorted(s.key_writers, key=WriterKey.sort_key))
        bad: dict[WriterKey, str] = {}
        notes: list[str] = []
        value_type, value_reader = (
            _table_type(vw, decoders, bad, notes, "value") if s.values_framed else (pa.binary(), None)
        )
        # keys are typed once one of them decodes (issue 75: LongSerializer keys look framed; a topic whose
        # keys never resolve keeps them as bytes)
        keys_typed = s.keys_framed and bool(kw)
        key_type, key_reader = (
            _table_type(kw, decoders, bad, notes, "key") if keys_typed else (pa.binary(), None)
        )
        plan.topics[topic] = TopicPlan(
            topic=topic,
            values_typed=s.values_framed,
            keys_typed=keys_typed,
            value_type=value_type,
            key_type=key_type,
            value_writers=vw,
            key_writers=kw,
            unbuildable=bad,
            value_reader=value_reader,
            key_reader=key_reader,
            notes=tuple(notes),
            encrypted=any(_encrypted_fields(registry, w) for w in vw),
        )
    return plan


def _encrypted_fields(registry: SchemaRegistry | None, writer: WriterKey) -> tuple[str, ...]:
    """The fields a registry writer schema's data contract encrypts (their values are ciphertext)."""
    if registry is None or writer.kind != REGISTRY:
        return ()
    schema = registry.in_context(writer.context).get(writer.schema_id or 0)
    return () if schema is None else schema.encrypted_fields


# --- per batch: decode -------------------------------------------------------------------------------


@dataclass(slots=True)
class TopicCounts:
    """What a topic's rows became: decoded (``schema_deleted`` of them with a soft-deleted schema),
    tombstones, raw (values of an untyped topic), and per reason those sent to the side table."""

    records: int = 0
    decoded: int = 0
    schema_deleted: int = 0
    tombstones: int = 0
    raw: int = 0
    undecoded: collections.Counter[str] = field(default_factory=collections.Counter)
    #: the schema ids named by records sent away as unknown or hard-deleted
    missing_ids: set[int] = field(default_factory=set)
    #: the plan's notes on the table's type (:attr:`TopicPlan.notes`)
    notes: list[str] = field(default_factory=list)
    #: per reason, the keys of a typed-key topic that did not decode (the value decides the table: such a
    #: record is in its table with a null key when its value decodes)
    keys_undecoded: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, other: TopicCounts) -> None:
        self.keys_undecoded.update(other.keys_undecoded)
        self.missing_ids |= other.missing_ids
        self.notes.extend(n for n in other.notes if n not in self.notes)
        self.records += other.records
        self.decoded += other.decoded
        self.schema_deleted += other.schema_deleted
        self.tombstones += other.tombstones
        self.raw += other.raw
        self.undecoded.update(other.undecoded)

    def to_json(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "decoded": self.decoded,
            "schema_deleted": self.schema_deleted,
            "tombstones": self.tombstones,
            "raw": self.raw,
            "undecoded": dict(sorted(self.undecoded.items())),
            "missing_schema_ids": sorted(self.missing_ids),
            "notes": list(self.notes),
            "keys_undecoded": dict(sorted(self.keys_undecoded.items())),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TopicCounts:
        c = cls(int(d["records"]), int(d["decoded"]), int(d["schema_deleted"]), int(d["tombstones"]))
        c.raw = int(d.get("raw", 0))
        c.undecoded.update({str(k): int(v) for k, v in (d.get("undecoded") or {}).items()})
        c.missing_ids.update(int(i) for i in d.get("missing_schema_ids") or ())
        c.notes.extend(str(n) for n in d.get("notes") or ())
        c.keys_undecoded.update({str(k): int(v) for k, v in (d.get("keys_undecoded") or {}).items()})
        return c


def undecoded_schema() -> pa.Schema:
    """The side table's columns: the raw export's, then why (``reason``, ``detail``: which of key and
    value, and the library's words) and the schema id the record named (null when none)."""
    from logdoctor.spark.schema import records_arrow_schema

    return (
        records_arrow_schema()
        .append(pa.field("reason", pa.string()))
        .append(pa.field("detail", pa.string()))
        .append(pa.field("schema_id", pa.int32()))
    )


class TypedBatches:
    """Executor side: raw batches in, per topic typed batches and side-table batches out."""

    def __init__(self, plan: TypedPlan) -> None:
        self.plan = plan
        self.decoders = Decoders(plan.registry)
        self.resolver = _Resolver(plan.registry)
        self.counts: dict[str, TopicCounts] = {}
        self._resolutions: dict[tuple[WriterKey, WriterKey], Any] = {}
        #: the value writer schema of each code of the last value column's frames, and each row's code
        self._value_writers: tuple[list[WriterKey | None], Any] | None = None
        self._row_writers: tuple[list[WriterKey | None], Any] | None = None

    @property
    def row_writers(self) -> list[WriterKey | None] | None:
        """The value writer schema of each row of the last :meth:`split`'s typed rows (None: untyped
        values)."""
        if self._row_writers is None:
            return None
        writers, codes = self._row_writers
        return [writers[c] for c in codes.tolist()]

    def split(self, rb: pa.RecordBatch) -> tuple[str | None, pa.RecordBatch | None, pa.RecordBatch | None]:
        """(topic, its typed rows, its side-table rows) of one raw batch (rows of one topic-partition)."""
        rb = _data_rows(rb)
        if rb.num_rows == 0:
            return None, None, None
        topic = rb.column("topic")[0].as_py()
        tp = self.plan.topics.get(topic)
        if tp is None:  # a topic the first pass did not see (its data changed since): untyped
            tp = TopicPlan(topic, False, False, pa.binary(), pa.binary())
            self.plan.topics[topic] = tp
        counts = self.counts.get(topic)
        if counts is None:
            counts = self.counts[topic] = TopicCounts(notes=list(tp.notes))
        n = rb.num_rows
        counts.records += n
        reasons: list[str | None] = [None] * n
        details: list[str | None] = [None] * n
        ids: list[int | None] = [None] * n
        value, value_ids, deleted = self._column(rb, tp, "value", reasons, details, ids)
        key_reasons: list[str | None] = [None] * n  # the value decides the table: the key's reason apart
        key, key_ids, _ = self._column(rb, tp, "key", key_reasons, [None] * n, [None] * n)
        counts.keys_undecoded.update(r for r in key_reasons if r is not None)
        ok = [r is None for r in reasons]
        writers = self._value_writers if tp.values_typed else None
        self._row_writers = None
        if writers is not None:
            import numpy as np

            self._row_writers = (writers[0], writers[1][np.asarray(ok, bool)])
        typed = None
        if any(ok):
            typed = self._typed(rb, tp, value, key, value_ids, key_ids, deleted, ok, counts)
        bad = None
        if not all(ok):
            kept = [i for i in range(n) if not ok[i]]
            for i in kept:
                counts.undecoded[reasons[i]] += 1  # type: ignore[index]
                if reasons[i] in _MISSING and ids[i] is not None:
                    counts.missing_ids.add(ids[i])  # type: ignore[arg-type]
            raw = rb.filter(pa.array([not o for o in ok]))
            side = undecoded_schema()
            cols = [raw.column(f.name) for f in side if f.name in raw.schema.names]
            cols += [
                pa.array([reasons[i] for i in kept], pa.string()),
                pa.array([details[i] for i in kept], pa.string()),
                pa.array([ids[i] for i in kept], pa.int32()),
            ]
            bad = pa.RecordBatch.from_arrays(cols, schema=side)
        return topic, typed, bad

    def _column(
        self,
        rb: pa.RecordBatch,
        tp: TopicPlan,
        column: str,
        reasons: list[str | None],
        details: list[str | None],
        ids: list[int | None],
    ) -> tuple[pa.Array, Any, Any]:
        """The decoded key or value column (the table's type), the schema id of each row (numpy, -1: none),
        and whether it was decoded with a soft-deleted schema (numpy); rows that do not decode get their
        reason."""
        import numpy as np

        from logdoctor.formats.registry.arrow_union import cast_to
        from logdoctor.formats.registry.framing import binary_slices

        n = rb.num_rows
        typed = tp.values_typed if column == "value" else tp.keys_typed
        target = tp.value_type if column == "value" else tp.key_type
        row_ids = np.full(n, -1, np.int64)  # -1: none
        deleted = np.zeros(n, bool)
        if not typed:
            return rb.column(column), row_ids, deleted
        header = VALUE_HEADER if column == "value" else KEY_HEADER
        frames = _resolve(rb, self.resolver, column, header)
        table = frames.table
        if column == "value":
            writers = [r.writer if isinstance(r, Resolved) else None for r in table]
            self._value_writers = (writers, frames.codes)
        groups: dict[WriterKey, list[tuple[Resolved, Any]]] = {}
        for r, rows in frames.groups():
            if r is None:
                continue
            if isinstance(r, str):  # the rows' bytes only, not the column's
                for i, d in zip(rows.tolist(), binary_slices(frames.values, rows, 0), strict=True):
                    if reasons[i] is None:
                        reasons[i], details[i] = r, f"{column}: {r}"
                        ids[i] = _named_id(d)
                continue
            groups.setdefault(r.writer, []).append((r, rows))
            if r.writer.schema_id is not None:
                row_ids[rows] = r.writer.schema_id
            if r.deleted:
                deleted[rows] = True
        pieces: list[pa.Array] = []
        order: list[int] = []
        for writer, parts in groups.items():
            rows = np.concatenate([r for _, r in parts]).tolist() if len(parts) > 1 else parts[0][1].tolist()
            dec = self.decoders.get(writer)
            if isinstance(dec, Exception):
                from logdoctor.formats.registry.writers import unbuildable_reason

                for i in rows:
                    if reasons[i] is None:
                        reasons[i], details[i] = unbuildable_reason(dec), f"{column}: {dec}"
                        ids[i] = writer.schema_id
                continue
            payloads = frames.payloads(parts)
            decoded = dec.decode(payloads)
            for j, why in enumerate(decoded.reasons):
                if why is not None:
                    i = rows[j]
                    if reasons[i] is None:
                        reasons[i], details[i], ids[i] = why, f"{column}: {why}", writer.schema_id
            reader = tp.value_reader if column == "value" else tp.key_reader
            values = decoded.values
            if values.null_count == len(values):  # none decoded: a writer the table was not shaped by
                values = pa.nulls(len(values), target)
            elif reader is not None and reader != writer:
                values = self._resolution(writer, reader)(values)
            pieces.append(cast_to(values, target))
            order.extend(rows)
        placed = np.asarray(order, dtype=np.int64)
        if len(order) < n:
            taken = np.zeros(n, bool)
            taken[placed] = True
            rest = np.flatnonzero(~taken)
            pieces.append(pa.nulls(len(rest), target))
            placed = np.concatenate([placed, rest])
        whole = pa.concat_arrays(pieces) if len(pieces) > 1 else pieces[0]
        if (placed != np.arange(n)).any():
            inverse = np.empty(n, dtype=np.int64)
            inverse[placed] = np.arange(n, dtype=np.int64)
            whole = whole.take(pa.array(inverse))
        return whole, row_ids, deleted

    def _resolution(self, writer: WriterKey, reader: WriterKey) -> Any:
        """The function that resolves values of ``writer`` to ``reader`` (Avro's schema resolution)."""
        found = self._resolutions.get((writer, reader))
        if found is None:
            from logdoctor.formats.registry.avro_resolve import resolve

            w, r = self.decoders.get(writer), self.decoders.get(reader)

            def found(values: pa.Array) -> pa.Array:
                return resolve(values, w.root, r.root)  # type: ignore[union-attr]

            self._resolutions[(writer, reader)] = found
        return found

    def _encrypted_column(self, kept: pa.RecordBatch, vids: list[int | None]) -> pa.Array:
        """Each row's encrypted value fields (null: none), by its writer schema's data contract."""
        registry = self.plan.registry
        context = None
        if registry is not None and registry.associations and kept.num_rows:
            context = registry.context_of_topic(kept.column("topic")[0].as_py())
        space = {} if registry is None else registry.in_context(context)
        out = []
        for vid in vids:
            schema = None if vid is None else space.get(vid)
            out.append(
                list(schema.encrypted_fields) if schema is not None and schema.encrypted_fields else None
            )
        return pa.array(out, pa.list_(pa.string()))

    def _typed(
        self,
        rb: pa.RecordBatch,
        tp: TopicPlan,
        value: pa.Array,
        key: pa.Array,
        value_ids: Any,
        key_ids: Any,
        deleted: Any,
        ok: list[bool],
        counts: TopicCounts,
    ) -> pa.RecordBatch:
        import numpy as np

        mask = pa.array(ok)
        all_ok = all(ok)
        v = value if all_ok else value.filter(mask)
        k = key if all_ok else key.filter(mask)
        kept = rb if all_ok else rb.filter(mask)
        sel = np.asarray(ok, bool)
        dels = deleted if all_ok else deleted[sel]
        vid = value_ids if all_ok else value_ids[sel]
        kid = key_ids if all_ok else key_ids[sel]
        tombstones = kept.column("value").null_count
        counts.tombstones += tombstones
        if tp.values_typed:
            counts.decoded += kept.num_rows - tombstones
            counts.schema_deleted += int(dels.sum())
        else:
            counts.raw += kept.num_rows - tombstones
        kafka = pa.StructArray.from_arrays(
            [
                kept.column("topic"),
                kept.column("partition"),
                kept.column("offset"),
                kept.column("timestamp"),
                kept.column("timestampType"),
                k,
                kept.column("headers"),
                kept.column("log_dir"),
                kept.column("transaction_result"),
                pa.array(kid.astype(np.int32), pa.int32(), mask=kid < 0),
                pa.array(vid.astype(np.int32), pa.int32(), mask=vid < 0),
                pa.array(dels, pa.bool_()),
                *([self._encrypted_column(kept, _ids(vid))] if tp.encrypted else []),
            ],
            fields=list(tp.kafka_type()),
        )
        if tp.values_typed and pa.types.is_struct(tp.value_type):
            children = v.flatten() if isinstance(v, pa.StructArray) else pa.StructArray.from_arrays([], [])
            columns = [*children, kafka]
        else:
            columns = [v, kafka]
        return pa.RecordBatch.from_arrays(columns, schema=tp.schema())


def _ids(row_ids: Any) -> list[int | None]:
    """Per row the schema id of :meth:`TypedBatches._column`'s numpy ids (-1: none), None for none."""
    return [None if i < 0 else i for i in row_ids.tolist()]


def _named_id(data: bytes | None) -> int | None:
    """The schema id a value's Confluent frame names (for the side table), None when it names none."""
    if data is not None and len(data) >= 5 and data[0] == 0:
        return int.from_bytes(data[1:5], "big", signed=True)
    return None


def broadcast(spark: Any, value: Any) -> Any:
    """``value`` (the registry, a typed plan) shipped once to each executor (a Spark broadcast variable), or
    as is without a SparkContext (Spark Connect, plain calls): :func:`shipped` gives it back in a task."""
    if value is None:
        return None
    try:
        return spark.sparkContext.broadcast(value)
    except Exception:
        return value


def shipped(value: Any) -> Any:
    """The value :func:`broadcast` shipped."""
    from pyspark import Broadcast

    return value.value if isinstance(value, Broadcast) else value


def undecoded_total(counts: Mapping[str, TopicCounts]) -> int:
    """How many records of all topics went to the side table."""
    return sum(sum(c.undecoded.values()) for c in counts.values())


def counts_json(counts: Mapping[str, TopicCounts]) -> dict[str, dict[str, Any]]:
    return {t: c.to_json() for t, c in sorted(counts.items())}


def merge_counts(parts: Iterable[Mapping[str, Mapping[str, Any]]]) -> dict[str, TopicCounts]:
    out: dict[str, TopicCounts] = {}
    for part in parts:
        for topic, d in part.items():
            out.setdefault(topic, TopicCounts()).add(TopicCounts.from_json(d))
    return out

"""The table a Debezium change-data-capture topic describes: its events folded per key, exactly.

Input: for each partition of one topic, its typed records in offset order as Arrow record batches whose
columns are the envelope's fields (``before``, ``after``, ``source``, ``op``, ``ts_ms``, ``transaction``...,
Debezium's semantic types still in their physical types with ``connect.name`` field metadata) plus a struct
column ``kafka`` (``partition``, ``offset``, ``timestamp``, ``headers``, ``transaction_result``, ``key``). A
tombstone is a row whose envelope columns are all null. No Spark here: :class:`PartitionFold` runs where a
partition's records are (a Spark task, one per topic-partition) and keeps one row per live key (plus a small
marker per deleted key, for the merge across partitions), nothing per event; :func:`merge_partitions` and
:func:`build_table` make the topic's table of the partitions' results.

The rules (docs/cdc.md), with the Debezium source each restates (github:debezium/debezium):

- ``r``/``c``/``u`` upsert ``after`` (Envelope.Operation READ/CREATE/UPDATE).
- A column holding the unavailable-value placeholder keeps the row's previous value for that column
  (PostgresChangeRecordEmitter.columnValues, DBZ-1258: an unchanged TOASTed column whose old value the
  connector did not have is sent as the placeholder of UnchangedToastedPlaceholder, which means "unchanged");
  with no previous value the cell is null, counted.
- ``d`` deletes the key, and so does a tombstone (the null value Debezium writes after each delete, for
  compaction: ``tombstones.on.delete``); each alone is enough.
- ``t`` empties the table (PostgresChangeRecordEmitter.emitTruncateRecord: a keyless event for the whole
  table): the rows of its partition at once, and, in the merge, the rows of the other partitions whose last
  event comes before it by source position.
- A primary-key change is a delete of the old key carrying header ``__debezium.newkey`` then a create of the
  new key carrying ``__debezium.oldkey`` (RelationalChangeRecordEmitter.emitUpdateAsPrimaryKeyChangeRecord):
  the row moves, and the create's placeholder columns take the old key's values (the create's ``after`` is
  the update's new tuple, where a placeholder means "as before the update").
- Events of aborted or still-open transactions (``kafka.transaction_result`` "aborted" / "open") never change
  the table: read_committed has already dropped them; this fold refuses them again.
- A redelivery (at-least-once: Kafka Connect restarted after a crash sends again the events after its last
  committed offset, at later Kafka offsets): a streamed event whose source position is at or before the last
  applied event of its key (or the partition's last truncate) is counted and skipped, and so is the tombstone
  that follows a skipped delete (:func:`~logdoctor.formats.registry.debezium.redelivery_position`: PostgreSQL,
  MySQL, MariaDB). A snapshot read (``r``) is never compared: its position is where the snapshot began; a
  snapshot after streamed events starts a new basis (positions before it are not compared). Where
  the connector's events carry no position compared here, offset order stands (``redeliveries_unchecked``).
  An append (``--mode append``) continues the table's own state: a key's first event in the newer records
  is compared with the position of the event that wrote the key's row in the table (its provenance column,
  :class:`Applied`), and a truncate with the highest of those positions.
- A column whose Connect schema declares a default (JsonConverter: ``connect.default``) holds that default
  where the row's last event's schema lacked the column (an ``ADD COLUMN ... DEFAULT`` after it): the
  database filled the rows it had with the default (:func:`build_table`).
- The table as of a point in time has the columns of the schema of its last event applied (fed with each
  event's writer columns, :meth:`PartitionFold.feed`): a column added after the point in time is not there.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from logdoctor.formats.registry import debezium
from logdoctor.formats.registry.connect_json import field_default
from logdoctor.formats.registry.debezium import (
    CREATE,
    DELETE,
    NEWKEY_HEADER,
    OLDKEY_HEADER,
    READ,
    TRUNCATE,
    UPDATE,
)

#: the name of the provenance column (``__kafka`` when the source table has a column named ``kafka``)
PROVENANCE_COLUMN = "kafka"
#: kafka.transaction_result values whose events never change the table
UNCOMMITTED = ("aborted", "open")
TOMBSTONE = "tombstone"
#: the streamed ops whose source position places them in the database's log (a snapshot read's is where the
#: snapshot began, not where the row was last changed)
_POSITIONED = (CREATE, UPDATE, DELETE, TRUNCATE)
_NONE: frozenset[int] = frozenset()  # the unresolved columns of a row with none (shared)


@dataclass(frozen=True)
class Compaction:
    """The topic is compacted (cleanup.policy=compact) and the log cleaner has cleaned each partition up to
    an offset (the cleaner-offset-checkpoint, exclusive): below it the log keeps only each key's last record,
    and a tombstone only for delete.retention.ms. ``cleaned_to``: partition -> that offset."""

    cleaned_to: Mapping[int, int]


@dataclass(frozen=True)
class Applied:
    """What the table an append continues already holds (``--mode append``): per key (the table's key
    columns, in its types, as a tuple), the partition and the source position fields (name -> value) of the
    event that wrote its row (the table's provenance column). The fold compares a key's first newer event
    with it, and a truncate with the highest position of the partition's rows: an event folded in an earlier
    run and delivered again after it is a redelivery too. ``truncated``: per partition the position fields of
    the last truncate the table's folds applied (its ``logdoctor.cdc.truncated`` property): an event at or
    before it was folded before the truncate emptied the table."""

    rows: Mapping[tuple, tuple[int, Mapping[str, Any]]]
    truncated: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class FoldOptions:
    """How to fold.

    - ``placeholder``: Debezium's ``unavailable.value.placeholder`` (``__debezium_unavailable_value``).
    - ``ending_timestamp_ms``: the table as it stood at this moment (ms since the epoch) by the events'
      ``source.ts_ms`` (when the change was made in the database; not the envelope's ``ts_ms``, when the
      connector handled it, nor the Kafka timestamp, when it was produced). Each partition is folded up to its
      first event whose ``source.ts_ms`` is later (a tombstone goes with the delete before it).
    - ``ending_offsets``: partition -> offset (exclusive) to fold up to; a partition not named is folded to
      its end.
    - ``compaction``: the cleaner's state, when the topic is compacted (:class:`Compaction`).
    - ``applied``: the rows of the table an append continues, with their positions (:class:`Applied`).
    """

    placeholder: str = debezium.DEFAULT_PLACEHOLDER
    ending_timestamp_ms: int | None = None
    ending_offsets: Mapping[int, int] | None = None
    compaction: Compaction | None = None
    applied: Applied | None = None


@dataclass(frozen=True)
class UnorderedEvent:
    """An event whose order against an event of another partition could not be told (no source position on
    one side); ``against``: ``partition/offset`` of the other event. The fold keeps what its own partition
    says (a row stays; between a row and a delete of one key, the later ``source.ts_ms`` wins)."""

    partition: int
    offset: int
    op: str
    against: str
    reason: str


@dataclass
class CdcStats:
    """What one topic's fold did and what its table cannot know (the summary and ``--json`` give these)."""

    #: change events and tombstones applied
    events_folded: int = 0
    #: events of aborted or open transactions, not applied
    events_uncommitted: int = 0
    #: events past ``ending_offsets`` / ``ending_timestamp_ms``, not applied
    events_after_end: int = 0
    #: ``m`` (logical decoding messages), unknown ops, keyless tombstones: nothing to apply
    events_ignored: int = 0
    #: events at or before the last applied event of their key by source position (and the tombstones of
    #: such deletes): a redelivery (at-least-once), not applied
    events_redelivered: int = 0
    #: why redeliveries could not be told (the events carry no source position this fold compares: offset
    #: order stands), or None
    redeliveries_unchecked: str | None = None
    #: truncates applied
    truncates: int = 0
    #: rows in the table
    rows_written: int = 0
    #: rows whose history in the log starts with an update: no snapshot ``r`` nor ``c`` covers them (the log
    #: starts after their insert); their columns are right where the update carries them
    rows_without_snapshot: int = 0
    #: rows with at least one cell null because a placeholder had no earlier value
    partial_rows: int = 0
    #: cells null in the table because a placeholder had no earlier value
    placeholder_cells_null: int = 0
    #: placeholder cells that took the row's previous value
    placeholder_cells_resolved: int = 0
    #: deletes and tombstones of a key with no row (its insert is before the log start, or was compacted)
    deletes_without_row: int = 0
    #: rows of one partition removed by a truncate of another that comes later by source position
    rows_truncated_across_partitions: int = 0
    #: values that do not convert to their semantic type (a ZonedTimestamp that does not parse): null
    unconvertible_cells: int = 0
    #: cells null in the row's last event whose column's schema declares a default (the event was written
    #: before the column was added): the default
    default_cells: int = 0
    #: a compacted topic: deletes and tombstones found below the cleaner's offset (the keys' earlier records
    #: were removed; a delete whose tombstone the cleaner has also removed leaves no trace, so a point in time
    #: before it cannot show the row)
    deletes_in_cleaned_range: int = 0
    #: a compacted topic: rows whose history starts below the cleaner's offset (earlier records removed)
    rows_in_cleaned_range: int = 0
    #: a compacted topic: the point in time asked for falls in a cleaned range (the table there is not known)
    point_in_time_in_cleaned_range: bool = False
    unordered_events: list[UnorderedEvent] = field(default_factory=list)
    #: why the topic has no table (no primary key: create-only stream), or None
    refused: str | None = None

    def add(self, other: CdcStats) -> None:
        """Add another partition's counts to these."""
        for name, value in asdict(other).items():
            if isinstance(value, bool):
                setattr(self, name, getattr(self, name) or value)
            elif isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        self.unordered_events.extend(other.unordered_events)
        self.refused = self.refused or other.refused
        self.redeliveries_unchecked = self.redeliveries_unchecked or other.redeliveries_unchecked

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class _Row:
    """A live key's row: ``after``'s values (physical types, as ``to_pylist`` gives them) and the event that
    wrote it last."""

    values: list
    unresolved: frozenset[int]  # columns null because a placeholder had no earlier value
    origin: str  # the op that began the row's life in the log (r, c, u); kept through a key change
    origin_offset: int
    partition: int
    offset: int
    op: str
    ts_ms: int | None
    position: tuple | None  # the source's position fields (PartitionResult.position_names)
    txid: Any  # transaction.id, else source.txId, else source.gtid
    #: the old key of a primary-key change whose delete this partition did not see (another partition has
    #: it): the merge takes the ``unresolved`` columns from that key's row there
    moved_from: Any = None
    #: the key whose row in the table this fold continues (``--mode append``) holds the earlier values of the
    #: ``unresolved`` columns: the key had no event before in this fold (no delete, no truncate before it);
    #: None when no earlier value can exist
    open_key: Any = None


@dataclass(slots=True)
class _Gone:
    """A deleted key (kept for the merge across partitions: a key may have lived in several)."""

    partition: int
    offset: int
    op: str
    ts_ms: int | None
    position: tuple | None


@dataclass(slots=True)
class _Truncate:
    partition: int
    offset: int
    ts_ms: int | None
    position: tuple | None


@dataclass
class PartitionResult:
    """One partition folded: its live rows and deleted keys by key, its truncates, its counts, the rows its
    primary-key-change deletes moved away (new key -> (old key, the row)) that no create of this partition
    took, and what its events' positions are (``source.connector``, the names of the position fields)."""

    partition: int
    live: dict[Any, _Row]
    gone: dict[Any, _Gone]
    truncates: list[_Truncate]
    stats: CdcStats
    moved: dict[Any, tuple[Any, _Row]] = field(default_factory=dict)
    connector: str | None = None
    position_names: tuple[str, ...] = ()
    #: the names of the key's fields (the primary key's columns), None when the key is not a struct
    key_names: tuple[str, ...] | None = None
    #: the columns of ``after`` in the writer schema of the last event applied, and its ``source.ts_ms``
    #: (None: not known, the fold was not fed the writers' columns)
    columns: frozenset[str] | None = None
    columns_ts_ms: int | None = None

    def order(self, event: _Row | _Gone | _Truncate) -> tuple | None:
        """The event's place in the database's log
        (:func:`~logdoctor.formats.registry.debezium.position_key`), or None when it has none."""
        if event.position is None:
            return None
        source = dict(zip(self.position_names, event.position, strict=True))
        source["connector"] = self.connector
        return debezium.position_key(source)


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: the fold makes millions of small objects that live on (one
    row per key) and form no cycles, and the collector would scan them all again and again (half the fold's
    time). Reference counting still frees everything; the collector's previous state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class NotAnEnvelope(ValueError):
    """The batches' columns are not a Debezium envelope (``op``, ``before``, ``after``, ``source``)."""


class PartitionFold:
    """The fold of one partition's events, fed in offset order a batch at a time."""

    def __init__(
        self,
        partition: int,
        value_type: pa.StructType,
        options: FoldOptions | None = None,
    ) -> None:
        self.partition = partition
        self.options = options or FoldOptions()
        self.names = [value_type.field(i).name for i in range(value_type.num_fields)]
        self._value_fields = [value_type.field(i) for i in range(value_type.num_fields)]
        self._index = {name: i for i, name in enumerate(self.names)}
        self._tests: list[tuple[int, Callable[[Any], bool]]] = []
        for i in range(value_type.num_fields):
            test = debezium.placeholder_test(value_type.field(i).type, self.options.placeholder)
            if test is not None:
                self._tests.append((i, test))
        self.live: dict[Any, _Row] = {}
        self.gone: dict[Any, _Gone] = {}
        self.moved: dict[Any, tuple[Any, _Row]] = {}  # new key -> (old key, the old key's row)
        self.truncates: list[_Truncate] = []
        self.stats = CdcStats()
        self.connector: str | None = None
        self.position_names: tuple[str, ...] = ()
        self.key_names: tuple[str, ...] | None = None
        self._stopped = False
        # redeliveries: whether this connector's positions are compared (None: not known yet), the highest
        # position applied, the last truncate's, the keys whose delete was a redelivery (so is its tombstone)
        self._checks: bool | None = None
        self._ranker: Callable[[tuple], tuple | None] | None = None
        self._high: tuple | None = None
        self._truncated_at: tuple | None = None
        # the offset where the latest snapshot began (its first ``r`` after a streamed event): positions of
        # events before it are not compared with later ones (a database restored to an earlier point, or a
        # binary log reset, gives lower positions; the connector then snapshots again)
        self._basis_from = 0
        self._streamed = False
        self._stale_deletes: set[Any] = set()
        # --mode append: the table's rows and their positions (Applied), used until a new snapshot here
        self._applied = self.options.applied
        if self._applied is not None:
            self._streamed = True  # the table holds streamed events: a snapshot read here starts a new basis
        self._key_fields: list[pa.Field] | None = None
        self._columns: frozenset[str] | None = None
        self._columns_ts: int | None = None
        ends = self.options.ending_offsets or {}
        self._end_offset = ends.get(partition)
        cleaned = self.options.compaction.cleaned_to if self.options.compaction else {}
        self._cleaned_to = cleaned.get(partition, 0)
        if self._end_offset is not None and self._end_offset < self._cleaned_to:
            self.stats.point_in_time_in_cleaned_range = True

    # --- feeding -------------------------------------------------------------------------------------

    def feed(
        self, batch: pa.RecordBatch | pa.Table, columns: Sequence[frozenset[str] | None] | None = None
    ) -> None:
        """Fold a batch of this partition's events (the next ones in offset order). ``columns``: per event
        the columns of ``after`` in its writer schema (the table's columns at its time), when known."""
        if isinstance(batch, pa.Table):
            start = 0
            for part in batch.to_batches():
                end = start + part.num_rows
                self.feed(part, None if columns is None else columns[start:end])
                start = end
            return
        if self.stats.refused:
            return
        with _without_cyclic_gc():
            self._feed(batch, columns)

    def _feed(self, batch: pa.RecordBatch, columns: Sequence[frozenset[str] | None] | None = None) -> None:
        events = _Events(batch, self)
        if events.key_names is not None:
            self.key_names = tuple(events.key_names)
        if self._checks is None and self.connector is not None:
            self._decide_checks()
        end_ts = self.options.ending_timestamp_ms
        for i in range(batch.num_rows):
            offset = events.offsets[i]
            if self._stopped or (self._end_offset is not None and offset >= self._end_offset):
                self._stopped = True
                self.stats.events_after_end += 1
                continue
            if events.results is not None and events.results[i] in UNCOMMITTED:
                self.stats.events_uncommitted += 1
                continue
            if events.tombstones[i]:
                if self._stale_deletes and events.keys[i] in self._stale_deletes:
                    self._stale_deletes.discard(events.keys[i])  # the tombstone of a redelivered delete
                    self.stats.events_redelivered += 1
                    continue
                self._tombstone(events, i)
                continue
            ts_ms = events.ts_ms[i]
            if end_ts is not None and ts_ms is not None and ts_ms > end_ts:
                self._stopped = True
                self.stats.events_after_end += 1
                if offset < self._cleaned_to:
                    self.stats.point_in_time_in_cleaned_range = True
                continue
            op = events.ops[i]
            if self._stale_deletes:
                self._stale_deletes.discard(events.keys[i])
            if self._checks:
                if op in _POSITIONED:
                    if self._redelivered(events, i, op):
                        self.stats.events_redelivered += 1
                        if op == DELETE:
                            self._stale_deletes.add(events.keys[i])
                        continue
                    self._streamed = True
                elif op == READ and self._streamed:  # a new snapshot: a new basis of positions
                    self._basis_from, self._streamed = offset, False
                    self._high = self._truncated_at = None
                    self._applied = None
            if op in (READ, CREATE, UPDATE):
                if events.after_valid[i]:
                    self._upsert(events, i, op)
                else:
                    self.stats.events_ignored += 1
            elif op == DELETE:
                self._delete(events, i)
            elif op == TRUNCATE:
                self._truncate(events, i)
            else:
                self.stats.events_ignored += 1
            if columns is not None and columns[i] is not None:
                self._columns, self._columns_ts = columns[i], ts_ms
            if self.stats.refused:
                return

    def _decide_checks(self) -> None:
        """Whether this partition's events are checked for redeliveries (their connector's positions)."""
        self._ranker = debezium.redelivery_ranker(self.connector, self.position_names)
        if self._ranker is not None:
            self._checks = True
            if self._applied is not None:  # a truncate at or before the table's newest row: a redelivery
                for partition, source in self._applied.rows.values():
                    here = self._applied_position(source) if partition == self.partition else None
                    if here is not None and (self._high is None or debezium.at_or_before(self._high, here)):
                        self._high = here
                self._truncated_at = self._applied_position(self._applied.truncated.get(self.partition))
            return
        self._checks = False
        what = f"connector {self.connector!r}" if self.connector else "events without source.connector"
        self.stats.redeliveries_unchecked = (
            f"{what}: no source position this fold compares (PostgreSQL lsn/sequence, MySQL and MariaDB "
            "binlog file/pos/row or gtid); events of a key are applied in offset order, a redelivered one "
            "again"
        )

    def _position(self, position: tuple | None) -> tuple | None:
        """The redelivery position (:func:`~logdoctor.formats.registry.debezium.redelivery_position`) of an
        event's position fields."""
        if position is None or self._ranker is None:
            return None
        return self._ranker(position)

    def _applied_position(self, source: Mapping[str, Any] | None) -> tuple | None:
        """The redelivery position of a table row's position fields (:class:`Applied`)."""
        if source is None:
            return None
        return self._position(tuple(source.get(name) for name in self.position_names))

    def _table_key(self, key: Any) -> Any:
        """``key`` (physical values, as the fold keys rows) as the table holds it: its columns with their
        semantic types (:func:`~logdoctor.formats.registry.debezium.convert_column`), as a tuple."""
        if not isinstance(key, tuple):
            return None
        if self._key_fields is None:
            self._key_fields = [self._value_fields[self._index[n]] for n in self.key_names or ()]
        if len(self._key_fields) != len(key):
            return None
        out = []
        for f, v in zip(self._key_fields, key, strict=True):
            _, array, _ = debezium.convert_column(f, pa.array([v], f.type))
            out.append(array[0].as_py())
        return tuple(out)

    def _earlier_run(self, key: Any) -> tuple | None:
        """The position of the event that wrote ``key``'s row in the table an append continues, or None."""
        if self._applied is None or not self._applied.rows:
            return None
        found = self._applied.rows.get(self._table_key(key))
        return None if found is None else self._applied_position(found[1])

    def _redelivered(self, events: _Events, i: int, op: str) -> bool:
        """Whether event ``i`` (a streamed ``c``, ``u``, ``d`` or ``t``) is at or before, by source position,
        the last applied event of its key or the partition's last truncate (a truncate: at or before the
        highest position applied): a redelivery. Updates the positions applied when it is not."""
        here = self._position(events.position(i))
        if here is None:
            return False
        if op == TRUNCATE:
            if debezium.at_or_before(here, self._high):
                return True
            self._truncated_at = here
        else:
            key = events.keys[i]
            last: _Row | _Gone | None = self.live.get(key)
            if last is None:
                last = self.gone.get(key)
            if (
                last is not None
                and last.op in _POSITIONED
                and last.offset >= self._basis_from
                and debezium.at_or_before(here, self._position(last.position))
            ):
                return True
            if last is None and debezium.at_or_before(here, self._earlier_run(key)):
                return True
            if debezium.at_or_before(here, self._truncated_at):
                return True
        if self._high is None or debezium.at_or_before(self._high, here) is not False:
            self._high = here
        return False

    def _refuse(self, offset: int) -> None:
        self.stats.refused = (
            f"no primary key: the change event at partition {self.partition} offset {offset} has a "
            "null key (Debezium keys events by the table's primary key or message.key.columns; without one "
            "the topic is a create-only stream whose rows cannot be told apart)"
        )

    def _upsert(self, events: _Events, i: int, op: str) -> None:
        key = events.keys[i]
        offset = events.offsets[i]
        if key is None:
            self._refuse(offset)
            return
        values = events.values(i)
        previous = self.live.get(key)
        base = previous
        origin = (previous.origin, previous.origin_offset) if previous else (op, offset)
        moved_from = previous.moved_from if previous else None
        if previous is not None:
            open_key = previous.open_key
        else:
            open_key = key if not self.truncates and key not in self.gone else None
        if previous is None and op == CREATE:
            old_key = events.header_key(i, OLDKEY_HEADER)
            stash = self.moved.pop(key, None)
            if old_key is not None and stash is not None and stash[0] == old_key:
                base = stash[1]  # a primary-key change: the old key's row, as the delete found it
                origin = (base.origin, base.origin_offset)
                open_key = base.open_key
            else:
                moved_from = old_key  # its delete is in another partition (or absent): the merge looks
                if old_key is not None and not self.truncates:
                    open_key = old_key
        unresolved: set[int] | frozenset[int] = _NONE
        for index, is_placeholder in self._tests:
            value = values[index]
            if value is None or not is_placeholder(value):
                continue
            if base is not None and index not in base.unresolved:
                values[index] = base.values[index]
                self.stats.placeholder_cells_resolved += 1
            else:
                values[index] = None
                if unresolved is _NONE:
                    unresolved = set()
                unresolved.add(index)
        self.gone.pop(key, None)
        self.live[key] = _Row(
            values,
            frozenset(unresolved) if unresolved else _NONE,
            origin[0],
            origin[1],
            self.partition,
            offset,
            op,
            events.ts_ms[i],
            events.position(i),
            events.transaction_id(i),
            moved_from if unresolved else None,
            open_key if unresolved else None,
        )
        self.stats.events_folded += 1

    def _delete(self, events: _Events, i: int) -> None:
        key = events.keys[i]
        offset = events.offsets[i]
        if key is None:
            self._refuse(offset)
            return
        previous = self.live.pop(key, None)
        if previous is None:
            self.stats.deletes_without_row += 1
        else:
            new_key = events.header_key(i, NEWKEY_HEADER)
            if new_key is not None:
                self.moved[new_key] = (key, previous)
        self.gone[key] = _Gone(self.partition, offset, DELETE, events.ts_ms[i], events.position(i))
        if offset < self._cleaned_to:
            self.stats.deletes_in_cleaned_range += 1
        self.stats.events_folded += 1

    def _tombstone(self, events: _Events, i: int) -> None:
        key = events.keys[i]
        offset = events.offsets[i]
        if key is None:
            self.stats.events_ignored += 1
            return
        previous = self.live.pop(key, None)
        if previous is not None:
            # a tombstone with no delete before it: it deletes the row all the same
            self.gone[key] = _Gone(self.partition, offset, TOMBSTONE, previous.ts_ms, None)
            if offset < self._cleaned_to:
                self.stats.deletes_in_cleaned_range += 1
        elif key not in self.gone:
            self.stats.deletes_without_row += 1
            self.gone[key] = _Gone(self.partition, offset, TOMBSTONE, None, None)
        self.stats.events_folded += 1

    def _truncate(self, events: _Events, i: int) -> None:
        self.live.clear()
        self.gone.clear()
        self.moved.clear()
        self.truncates.append(
            _Truncate(self.partition, events.offsets[i], events.ts_ms[i], events.position(i))
        )
        self.stats.truncates += 1
        self.stats.events_folded += 1

    def result(self) -> PartitionResult:
        """The partition's folded state (call after the last :meth:`feed`)."""
        if self._checks is None and self.stats.events_folded:
            self._decide_checks()
        return PartitionResult(
            self.partition,
            self.live,
            self.gone,
            self.truncates,
            self.stats,
            self.moved,
            self.connector,
            self.position_names,
            self.key_names,
            self._columns,
            self._columns_ts,
        )


class _Events:
    """A batch's events as Python lists, a column at a time (the rows' values built only for upserts)."""

    def __init__(self, batch: pa.RecordBatch, fold: PartitionFold) -> None:
        schema = batch.schema
        envelope = [n for n in schema.names if n != PROVENANCE_COLUMN]
        if PROVENANCE_COLUMN not in schema.names or not debezium.is_envelope(
            [schema.field(n) for n in envelope]
        ):
            raise NotAnEnvelope(
                f"partition {fold.partition}: columns {schema.names} are not a Debezium envelope and `kafka`"
            )
        n = batch.num_rows
        kafka = batch.column(PROVENANCE_COLUMN)
        kafka_names = {kafka.type.field(j).name for j in range(kafka.type.num_fields)}
        self.offsets: list[int] = kafka.field("offset").to_pylist()
        self.results = (
            kafka.field("transaction_result").to_pylist() if "transaction_result" in kafka_names else None
        )
        self._headers = kafka.field("headers") if "headers" in kafka_names else None
        key = kafka.field("key")
        self.key_names: list[str] | None = None
        if pa.types.is_struct(key.type):
            self.key_names = [key.type.field(j).name for j in range(key.type.num_fields)]
            children = zip(*(key.field(j).to_pylist() for j in range(key.type.num_fields)), strict=True)
            valid = key.is_valid().to_pylist()
            self.keys: list[Any] = [k if ok else None for k, ok in zip(children, valid, strict=True)]
        else:
            self.keys = key.to_pylist()
        nulls = batch.column(envelope[0]).is_null()
        for name in envelope[1:]:
            nulls = pc.and_kleene(nulls, batch.column(name).is_null())
        self.tombstones: list[bool] = nulls.to_pylist()
        self.ops: list[str | None] = batch.column("op").to_pylist()
        source = batch.column("source")
        source_names = [source.type.field(j).name for j in range(source.type.num_fields)]
        self.ts_ms: list[int | None] = (
            source.field("ts_ms").to_pylist() if "ts_ms" in source_names else [None] * n
        )
        fold.position_names = tuple(f.name for f in debezium.position_fields(source.type))
        positions = [source.field(name).to_pylist() for name in fold.position_names]
        self._positions: list[tuple] | None = list(zip(*positions, strict=True)) if positions else None
        if fold.connector is None and "connector" in source_names:
            present = [c for c in pc.unique(source.field("connector")).to_pylist() if c is not None]
            fold.connector = present[0] if present else None
        self._tx_ids = []  # the first of these that is not null is the event's transaction id
        if "transaction" in schema.names:
            transaction = batch.column("transaction")
            if pa.types.is_struct(transaction.type) and transaction.type.get_field_index("id") >= 0:
                ids = transaction.field("id").to_pylist()
                valid = transaction.is_valid().to_pylist()
                self._tx_ids.append([t if ok else None for t, ok in zip(ids, valid, strict=True)])
        for name in ("txId", "gtid"):
            if name in source_names:
                self._tx_ids.append(source.field(name).to_pylist())
        after = batch.column("after")
        self.after_valid: list[bool] = after.is_valid().to_pylist()
        after_names = [after.type.field(j).name for j in range(after.type.num_fields)]
        stray = [name for name in after_names if name not in fold._index]
        if stray:
            raise ValueError(
                f"partition {fold.partition}: columns {stray} of `after` are not in the table's type"
            )
        self._width = len(fold.names)
        self._slots = None if after_names == fold.names else [fold._index[name] for name in after_names]
        self._rows = list(
            zip(*(after.field(j).to_pylist() for j in range(after.type.num_fields)), strict=True)
        )

    def values(self, i: int) -> list:
        """Row ``i``'s ``after`` in the table's column order."""
        row = self._rows[i]
        if self._slots is None:
            return list(row)
        values = [None] * self._width
        for slot, value in zip(self._slots, row, strict=True):
            values[slot] = value
        return values

    def position(self, i: int) -> tuple | None:
        if self._positions is None:
            return None
        return self._positions[i]

    def transaction_id(self, i: int) -> Any:
        for column in self._tx_ids:
            if column[i] is not None:
                return column[i]
        return None

    def header_key(self, i: int, name: str) -> Any:
        """The key a ``__debezium.newkey`` / ``__debezium.oldkey`` header of event ``i`` names, as the fold
        makes keys (Connect's SimpleHeaderConverter writes the key struct as JSON text: ``{"id":1010}``), or
        None when the header is absent or does not parse as the key's fields."""
        if self._headers is None or self.key_names is None:
            return None
        for header in self._headers[i].as_py() or ():
            if header.get("key") != name or header.get("value") is None:
                continue
            try:
                parsed = json.loads(bytes(header["value"]).decode())
            except (UnicodeDecodeError, ValueError):
                return None
            if isinstance(parsed, dict) and set(parsed) == set(self.key_names):
                return tuple(parsed[k] for k in self.key_names)
            return None
        return None


# --- the merge across partitions and the table ----------------------------------------------------------


def _later(a: tuple | None, b: tuple | None) -> bool | None:
    """Whether position ``a`` comes after ``b``; None when they cannot be compared."""
    if a is None or b is None:
        return None
    try:
        return a > b
    except TypeError:
        return None


def merge_partitions(results: Sequence[PartitionResult]) -> tuple[list[tuple[Any, _Row]], CdcStats]:
    """The topic's rows (key, row) of its partitions' folds, and the topic's counts. With one partition the
    rows are its live rows; with several, each key takes the state (row or delete) of its latest event by
    source position, and a truncate removes the rows of other partitions whose last event comes before it.
    Events that cannot be ordered (no source position) are listed in ``unordered_events``."""
    stats = CdcStats()
    for r in results:
        stats.add(r.stats)
    if stats.refused:
        return [], stats
    if len(results) == 1:
        rows = list(results[0].live.items())
    else:
        rows = _merge_many(results, stats)
        _resolve_moved(rows, results, stats)
    return rows, stats


def deleted_keys(results: Sequence[PartitionResult], rows: Sequence[tuple[Any, _Row]]) -> list[Any]:
    """The keys the partitions' folds deleted (a delete or a tombstone) that hold no row at the end: what an
    append removes from the table it continues."""
    live = {key for key, _ in rows}
    gone: dict[Any, None] = {}
    for r in results:
        for key in r.gone:
            if key not in live:
                gone[key] = None
    return list(gone)


def _resolve_moved(rows: list[tuple[Any, _Row]], results: Sequence[PartitionResult], stats: CdcStats) -> None:
    """Fill the placeholder cells of rows a primary-key change moved between partitions from the old key's
    row, as the delete in the other partition found it."""
    for key, row in rows:
        if row.moved_from is None or not row.unresolved:
            continue
        for r in results:
            stash = r.moved.get(key)
            if r.partition == row.partition or stash is None or stash[0] != row.moved_from:
                continue
            old = stash[1]
            filled = {i for i in row.unresolved if i not in old.unresolved}
            for i in filled:
                row.values[i] = old.values[i]
            stats.placeholder_cells_resolved += len(filled)
            row.unresolved = row.unresolved - filled
            row.moved_from = None
            break


def _merge_many(results: Sequence[PartitionResult], stats: CdcStats) -> list[tuple[Any, _Row]]:
    states: dict[Any, list[tuple[_Row | _Gone, tuple | None]]] = {}
    for r in results:
        for key, row in r.live.items():
            states.setdefault(key, []).append((row, r.order(row)))
        for key, gone in r.gone.items():
            states.setdefault(key, []).append((gone, r.order(gone)))
    truncates = [(t, r.order(t)) for r in results for t in r.truncates]
    rows: list[tuple[Any, _Row]] = []
    for key, candidates in states.items():
        winner, winner_order = candidates[0]
        for other, other_order in candidates[1:]:
            later = _later(other_order, winner_order)
            if later is None:
                _unordered(stats, other, winner, "no source position to order two events of one key")
                later = (other.ts_ms or 0) > (winner.ts_ms or 0)
            if later:
                winner, winner_order = other, other_order
        if not isinstance(winner, _Row):
            continue
        truncated = False
        for t, t_order in truncates:
            if t.partition == winner.partition:
                continue  # its own partition's truncates were applied in offset order
            later = _later(t_order, winner_order)
            if later is None:
                _unordered(stats, winner, t, "no source position to order a row against a truncate")
            elif later:
                truncated = True
        if truncated:
            stats.rows_truncated_across_partitions += 1
        else:
            rows.append((key, winner))
    return rows


def _unordered(
    stats: CdcStats, event: _Row | _Gone | _Truncate, other: _Row | _Gone | _Truncate, reason: str
) -> None:
    op = event.op if not isinstance(event, _Truncate) else TRUNCATE
    stats.unordered_events.append(
        UnorderedEvent(event.partition, event.offset, op, f"{other.partition}/{other.offset}", reason)
    )


def _sort_key(key: Any) -> tuple:
    parts = key if isinstance(key, tuple) else (key,)
    return tuple((v is None, v) for v in parts)


def provenance_type(source_type: pa.StructType) -> pa.StructType:
    """The type of the provenance column: the partition and offset of the event that wrote the row, its op,
    its ``source.ts_ms`` (and as a timestamp), its source position fields (as the source types them) and its
    transaction id."""
    fields = [
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("op", pa.string()),
        pa.field("source_ts_ms", pa.int64()),
        pa.field("source_ts", debezium.TIMESTAMP_UTC),
    ]
    position = debezium.position_fields(source_type)
    if position:
        fields.append(pa.field("position", pa.struct([f.with_metadata(None) for f in position])))
    fields.append(pa.field("transaction_id", pa.string()))
    return pa.struct(fields)


def build_table(
    rows: Iterable[tuple[Any, _Row]],
    value_type: pa.StructType,
    source_type: pa.StructType,
    stats: CdcStats,
    compaction: Compaction | None = None,
    columns: Collection[str] | None = None,
) -> pa.Table:
    """The table of the folded rows: ``after``'s columns with Debezium's semantic types mapped
    (:func:`~logdoctor.formats.registry.debezium.convert_column`), only those named in ``columns`` when
    given (the table's columns at a point in time, :func:`columns_at_end`), then the provenance column, rows
    sorted by primary key. Fills the row counts of ``stats``.

    A column whose schema declares a default (Kafka Connect JsonConverter's ``default``,
    :func:`~logdoctor.formats.registry.connect_json.field_default`) holds it where the row's last event has
    null and no placeholder put it there. The converter never writes null for such a column
    (``replace.null.with.default``, true by default: a null is written, and read, as the default), so the
    null comes from an event whose schema lacked the column: one written before ``ALTER TABLE ... ADD COLUMN
    ... DEFAULT``, which gave the rows the database held the default (PostgreSQL and MariaDB alike). This is
    the table read through the newest schema, as Avro's schema resolution reads an Avro topic."""
    cleaned_to = compaction.cleaned_to if compaction else {}
    ordered = sorted(rows, key=lambda kv: _sort_key(kv[0]))
    fields: list[pa.Field] = []
    arrays: list[pa.Array] = []
    for i in range(value_type.num_fields):
        physical = value_type.field(i)
        if columns is not None and physical.name not in columns:
            continue
        values = [row.values[i] for _, row in ordered]
        has_default, default = field_default(physical)
        if has_default:
            for j, (_, row) in enumerate(ordered):
                if values[j] is None and i not in row.unresolved:
                    values[j] = default
                    stats.default_cells += 1
        column = pa.array(values, physical.type)
        mapped, array, bad = debezium.convert_column(physical, column)
        stats.unconvertible_cells += bad
        fields.append(mapped)
        arrays.append(array)
    prov_type = provenance_type(source_type)
    has_position = prov_type.get_field_index("position") >= 0
    position_names = [f.name for f in debezium.position_fields(source_type)]
    provenance = []
    for _, row in ordered:
        item = {
            "partition": row.partition,
            "offset": row.offset,
            "op": row.op,
            "source_ts_ms": row.ts_ms,
            "source_ts": None if row.ts_ms is None else row.ts_ms * 1000,
            "transaction_id": None if row.txid is None else str(row.txid),
        }
        if has_position:
            item["position"] = (
                None if row.position is None else dict(zip(position_names, row.position, strict=True))
            )
        provenance.append(item)
    prov_array = _provenance_array(provenance, prov_type)
    name = PROVENANCE_COLUMN if PROVENANCE_COLUMN not in value_type.names else "__" + PROVENANCE_COLUMN
    fields.append(pa.field(name, prov_type, nullable=False))
    arrays.append(prov_array)
    cleaned = 0
    for _, row in ordered:
        if row.unresolved:
            stats.partial_rows += 1
            stats.placeholder_cells_null += len(row.unresolved)
        if row.origin == UPDATE:
            stats.rows_without_snapshot += 1
        if row.origin_offset < cleaned_to.get(row.partition, 0):
            cleaned += 1
    stats.rows_in_cleaned_range += cleaned
    stats.rows_written = len(ordered)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def columns_at_end(results: Sequence[PartitionResult]) -> frozenset[str] | None:
    """The table's columns after the last event applied: those of its writer schema (the partition whose
    last applied event is the latest by ``source.ts_ms``; the union of ties), None when not known."""
    known = [r for r in results if r.columns is not None]
    if not known or len(known) < len([r for r in results if r.stats.events_folded]):
        return None
    latest = max(-1 if r.columns_ts_ms is None else r.columns_ts_ms for r in known)
    out: frozenset[str] = frozenset()
    for r in known:
        if (-1 if r.columns_ts_ms is None else r.columns_ts_ms) == latest:
            out |= r.columns  # type: ignore[operator]
    return out


def _provenance_array(items: list[dict[str, Any]], typ: pa.StructType) -> pa.Array:
    ts_index = typ.get_field_index("source_ts")
    plain = pa.struct(
        [typ.field(i) if i != ts_index else pa.field("source_ts", pa.int64()) for i in range(typ.num_fields)]
    )
    array = pa.array(items, plain)
    children = [
        array.field(i) if i != ts_index else array.field(i).cast(debezium.TIMESTAMP_UTC)
        for i in range(typ.num_fields)
    ]
    return pa.StructArray.from_arrays(children, fields=[typ.field(i) for i in range(typ.num_fields)])


@dataclass
class CdcResult:
    """A topic folded: its table (None when refused: ``stats.refused`` says why) and its counts."""

    table: pa.Table | None
    stats: CdcStats


def envelope_types(schema: pa.Schema) -> tuple[pa.StructType, pa.StructType]:
    """``after``'s type and ``source``'s type of a batch schema of envelope columns; raises
    :class:`NotAnEnvelope` when the columns are not an envelope."""
    fields = [schema.field(n) for n in schema.names if n != PROVENANCE_COLUMN]
    if not debezium.is_envelope(fields):
        raise NotAnEnvelope(f"columns {schema.names} are not a Debezium envelope (op, before, after, source)")
    return schema.field("after").type, schema.field("source").type


def fold_topic(
    partitions: Mapping[int, Iterable[pa.RecordBatch | pa.Table]], options: FoldOptions | None = None
) -> CdcResult:
    """Fold every partition of one topic (each one's batches in offset order) into the topic's table.
    Every batch has one schema (the decoders' table type of the topic)."""
    with _without_cyclic_gc():  # once for the whole topic: re-enabled per batch, it would scan every row kept
        return _fold_topic(partitions, options or FoldOptions())


def _fold_topic(
    partitions: Mapping[int, Iterable[pa.RecordBatch | pa.Table]], options: FoldOptions
) -> CdcResult:
    results: list[PartitionResult] = []
    value_type: pa.StructType | None = None
    source_type: pa.StructType | None = None
    for partition in sorted(partitions):
        fold: PartitionFold | None = None
        for batch in partitions[partition]:
            if value_type is None:
                value_type, source_type = envelope_types(batch.schema)
            if fold is None:
                fold = PartitionFold(partition, value_type, options)
            fold.feed(batch)
        if fold is not None:
            results.append(fold.result())
    if value_type is None or source_type is None:
        stats = CdcStats(refused="no change events: the topic has no records to fold")
        return CdcResult(None, stats)
    rows, stats = merge_partitions(results)
    if stats.refused:
        return CdcResult(None, stats)
    table = build_table(rows, value_type, source_type, stats, options.compaction)
    return CdcResult(table, stats)

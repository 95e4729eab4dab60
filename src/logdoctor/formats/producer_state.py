"""A partition's producer state, as Kafka's broker keeps it: the one model every walk folds over.

K:storage/src/main/java/org/apache/kafka/storage/internals/log/ ProducerStateManager.java (the producers'
entries, ``ongoingTxns`` by first offset, ``lastStableOffset``/``completeTxn``, ``loadFromSnapshot`` and
``isProducerExpired``), ProducerAppendInfo.java (``append``: one batch), ProducerStateEntry.java (what an
entry keeps). Kafka runs one ``ProducerAppendInfo.append`` for every batch that has a producer id, and its
callers differ only by the ``AppendOrigin`` they pass. This project's walks differ the same way, by
:class:`Origin`:

========================  ===========================  ===========================  =========================
batch                     ``RECOVER`` (LogSegment      ``LOAD`` (a starting         ``READ`` (the readers:
                          .recover)                    broker's rebuild)            what a consumer is served)
========================  ===========================  ===========================  =========================
CRC does not match        the caller stops the walk    appended (loading trusts     left out where it would
                          there (recover truncates)    the log: no ensureValid)     open or end a transaction
control record of an      raises (Kafka's              raises (the load fails)      ends nothing
unknown type              IllegalArgumentException:
                          the load fails)
non-transactional batch   raises (Kafka's              raises (the load fails)      changes no transaction
inside an open            InvalidTxnStateException)
transaction
marker with a null key    raises (Kafka's NullPointer-  raises (the load fails)      ends nothing
or value, or a value      or BufferUnderflowException:
under 6 bytes             the load fails)
marker Kafka's format     raises the record's error    raises (the load fails)      ends nothing
refuses (a key under 4    (InvalidRecordException:
bytes, a negative         recover truncates after the
version)                  batch)
========================  ===========================  ===========================  =========================

(Kafka 4.4.0's own ProducerStateManager decides each row: tests/formats/test_producer_state_kafka.py runs
its table of cases through Kafka's classes and through this module and its callers.)

and alike in every origin, as Kafka's ``AppendOrigin.REPLICATION`` has it (the only origin a log's own
batches are appended with: LogSegment.recover, UnifiedLog.loadProducersFromRecords): a lower producer
epoch or an older coordinator epoch is logged and taken (the entry's epoch goes back with it); sequences
are not checked (``checkSequence`` runs for ``AppendOrigin.CLIENT`` only), so a gap or a duplicate changes
nothing but the entry's last sequence; a marker of a producer with no open transaction makes an entry
(its epoch, coordinator epoch and timestamp) and completes nothing; a marker with a higher epoch (KIP-890's
transaction version 2 bumps the epoch at every end) sets the entry's epoch; an empty control batch ("the
entire transaction has been cleaned from the log") changes nothing. A producer whose last write is older
than ``producer.id.expiration.ms`` and who has no open transaction is dropped when state is loaded from a
snapshot at a known time (``isProducerExpired``).

The transaction part (:attr:`ProducerState.current`, producer id -> its open transaction's first offset,
and :attr:`ProducerState.ongoing`, first offset -> producer id, ``ongoingTxns``) is kept in two plain dicts
so that recovery's C fast lane (``_speedups.recover_v2``) can open transactions in them directly for the
runs of batches that end none; an entry's epoch, sequence and timestamp are those of the batches appended
here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from logdoctor.errors import CorruptRecordError, FormatError
from logdoctor.formats.record_types import Batch

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "DEFAULT_TRANSACTION_MAX_TIMEOUT_MS",
    "LATE_TRANSACTION_BUFFER_MS",
    "CompletedTxn",
    "Origin",
    "ProducerEntry",
    "ProducerState",
    "ProducerStateError",
    "crc_ok",
    "is_late",
]

DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 900_000  # TransactionStateManagerConfig transaction.max.timeout.ms
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000  # ProducerStateManager.LATE_TRANSACTION_BUFFER_MS
#: ``producer.id.expiration.ms``'s default (K:storage/.../log/ProducerStateManagerConfig.java: one day)
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
NO_PRODUCER_EPOCH = -1  # RecordBatch.NO_PRODUCER_EPOCH
NO_SEQUENCE = -1  # RecordBatch.NO_SEQUENCE
_ABORT, _COMMIT = 0, 1  # ControlRecordType (K:clients/.../common/record/ControlRecordType.java)


class Origin(enum.Enum):
    """Who appends the batch (the module doc's table). ``READ`` keeps only the open transactions, no
    producer entries: a consumer's fetch touches no producer state, and no entry changes what it reads."""

    RECOVER = "recover"
    LOAD = "load"
    READ = "read"


class ProducerStateError(CorruptRecordError):
    """A batch that Kafka's ``ProducerAppendInfo.append`` refuses with ``kafka_exception`` (the load of the
    partition fails there)."""

    def __init__(self, kafka_exception: str, expected: str, found: str, *, batch: Batch, source: str | None):
        self.kafka_exception = kafka_exception
        found = f"{found} ({kafka_exception})"
        super().__init__(expected, source=source, position=batch.position, found=found)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended (K:.../log/CompletedTxn.java): its first offset, the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(slots=True)
class ProducerEntry:
    """One producer's entry (ProducerStateEntry, with its last batch's metadata)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_sequence: int = NO_SEQUENCE
    last_offset: int = -1
    offset_delta: int = 0
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None


class ProducerState:
    """The producers of one partition and their open transactions; :meth:`append` one batch at a time."""

    __slots__ = ("_entries", "current", "ongoing")

    def __init__(self, open_transactions: Mapping[int, int] | None = None) -> None:
        self._entries: dict[int, ProducerEntry] = {}
        #: producer id -> first offset of its open transaction (ProducerStateEntry.currentTxnFirstOffset)
        self.current: dict[int, int] = dict(open_transactions or {})
        #: first offset -> producer id of every open transaction (ProducerStateManager.ongoingTxns)
        self.ongoing: dict[int, int] = {first: pid for pid, first in self.current.items()}

    @classmethod
    def from_snapshot(
        cls, entries: Iterable[object], now_ms: int | None = None, expiration_ms: int | None = None
    ) -> ProducerState:
        """The state a broker loads from a producer snapshot's entries (a parsed
        :class:`~logdoctor.formats.producer_snapshot.ProducerSnapshot` or its entries); with ``now_ms``,
        without the producers expired then (``isProducerExpired``: no open transaction and idle for at
        least ``expiration_ms``, by default :data:`DEFAULT_PRODUCER_ID_EXPIRATION_MS`)."""
        state = cls()
        expiry = DEFAULT_PRODUCER_ID_EXPIRATION_MS if expiration_ms is None else expiration_ms
        for e in getattr(entries, "entries", entries):
            first = e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None  # type: ignore[attr-defined]
            if first is None and now_ms is not None and now_ms - e.timestamp >= expiry:  # type: ignore[attr-defined]
                continue
            pid = e.producer_id  # type: ignore[attr-defined]
            batch = e.last_offset >= 0  # type: ignore[attr-defined]
            state._entries[pid] = ProducerEntry(
                pid,
                e.producer_epoch,  # type: ignore[attr-defined]
                e.last_sequence if batch else NO_SEQUENCE,  # type: ignore[attr-defined]
                e.last_offset if batch else -1,  # type: ignore[attr-defined]
                e.offset_delta if batch else 0,  # type: ignore[attr-defined]
                e.timestamp,  # type: ignore[attr-defined]
                e.coordinator_epoch,  # type: ignore[attr-defined]
            )
            if first is not None:
                state._open(pid, first)
        return state

    @property
    def producers(self) -> dict[int, ProducerEntry]:
        """Every producer's entry, its open transaction's first offset included (a producer the C lane
        alone opened a transaction for has an entry with only that)."""
        return {
            pid: replace(
                self._entries.get(pid) or ProducerEntry(pid), current_txn_first_offset=self.current.get(pid)
            )
            for pid in {**self._entries, **self.current}
        }

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction (``firstUndecidedOffset``; None: none open)."""
        return min(self.ongoing, default=None)

    def append(self, batch: Batch, origin: Origin, *, source: str | None = None) -> CompletedTxn | None:
        """Append one batch (any magic: only v2 batches with a producer id change anything), as
        ``ProducerAppendInfo.append`` and ``ProducerStateManager.update`` do for ``origin``; the
        transaction a marker ends, if any (then :meth:`complete` it). Raises :class:`ProducerStateError`
        where Kafka refuses the batch for that origin, and the record's own :class:`FormatError` where a
        marker cannot be read (RECOVER and LOAD; READ leaves it out)."""
        if batch.magic < 2 or batch.producer_id < 0:
            return None
        if batch.is_control:
            return self._marker(batch, origin, source)
        pid = batch.producer_id
        open_first = self.current.get(pid)
        if open_first is not None and not batch.is_transactional:
            if origin is Origin.READ:
                return None  # no transaction state changes: the reader reads it as any plain batch
            raise ProducerStateError(
                "InvalidTxnStateException",
                f"a transactional batch (producer {pid} has a transaction open since offset {open_first})",
                "a non-transactional batch",
                batch=batch,
                source=source,
            )
        starts = open_first is None and batch.is_transactional
        if origin is Origin.READ:  # a read (Kafka's fetch) keeps no producer entries: only what is open
            if starts and crc_ok(batch):  # a batch whose CRC fails: every reader leaves it out
                self._open(pid, batch.base_offset)
            return None
        self._add_batch(batch)
        if starts:
            self._open(pid, batch.base_offset)
        return None

    def _open(self, pid: int, first: int) -> None:
        """``pid``'s transaction open from offset ``first``."""
        self.current[pid] = first
        self.ongoing[first] = pid

    def complete(self, txn: CompletedTxn) -> int:
        """End ``txn``: the last stable offset after it (``lastStableOffset``: the first offset of the
        earliest transaction still open of another producer, else the marker's offset + 1), what the
        transaction index records for an aborted one; then ``completeTxn``."""
        others = (first for first in sorted(self.ongoing) if self.ongoing[first] != txn.producer_id)
        lso = next(others, txn.last_offset + 1)
        self.ongoing.pop(txn.first_offset, None)
        return lso

    def _entry(self, pid: int) -> ProducerEntry:
        e = self._entries.get(pid)
        if e is None:
            e = self._entries[pid] = ProducerEntry(pid)
        return e

    def _add_batch(self, batch: Batch) -> None:
        """ProducerStateEntry.addBatch: a new epoch drops the batches kept; the last batch's metadata."""
        e = self._entry(batch.producer_id)
        e.producer_epoch = batch.producer_epoch
        e.last_sequence = batch.last_sequence
        e.last_offset = batch.last_offset
        e.offset_delta = batch.last_offset - batch.base_offset
        e.last_timestamp = batch.max_timestamp

    def _marker(self, batch: Batch, origin: Origin, source: str | None) -> CompletedTxn | None:
        from logdoctor.formats.control import parse_control_key, parse_end_txn_marker

        if origin is Origin.READ and not crc_ok(batch):
            return None  # every reader leaves it out: it ends nothing
        try:
            record = batch.control_record()  # type: ignore[attr-defined]
            if record is None:
                return None  # an empty control batch: the transaction was cleaned away
            # EndTransactionMarker.deserialize's order: the key, the type, then the value
            raised = "NullPointerException" if record.key is None else None
            ctype = (
                None if raised else parse_control_key(record.key, source=source, position=batch.position)[1]
            )
            if ctype is not None and ctype not in (_ABORT, _COMMIT):
                raised = "IllegalArgumentException"
            elif ctype is not None and record.value is None:
                raised = "NullPointerException"
            elif ctype is not None and len(record.value) < 6:
                raised = "BufferUnderflowException"
            if raised is not None:
                if origin is Origin.READ:
                    return None  # ends nothing
                raise ProducerStateError(
                    raised,
                    "an ABORT or COMMIT marker with a key and a 6-byte value",
                    f"control type {ctype}, key {_size(record.key)}, value {_size(record.value)}",
                    batch=batch,
                    source=source,
                )
            marker = parse_end_txn_marker(ctype, record.value, source=source, position=batch.position)  # type: ignore[arg-type]
        except FormatError:  # ours above, or Kafka's InvalidRecordException (recover truncates after it)
            if origin is Origin.READ:
                return None
            raise
        pid = batch.producer_id
        first = self.current.pop(pid, None)
        if origin is not Origin.READ:
            self._update_entry(batch, marker.coordinator_epoch, record.timestamp)
        if first is None:
            return None  # a marker of no open transaction: nothing to complete (an empty transaction)
        return CompletedTxn(pid, first, batch.base_offset, ctype == _ABORT)

    def _update_entry(self, batch: Batch, coordinator_epoch: int, timestamp: int) -> None:
        """A marker's entry: a new epoch drops the batches kept; its epochs and its record's timestamp."""
        e = self._entry(batch.producer_id)
        if e.producer_epoch != batch.producer_epoch:
            e.last_sequence, e.last_offset, e.offset_delta = NO_SEQUENCE, -1, 0  # the batches kept go
        e.producer_epoch = batch.producer_epoch
        e.coordinator_epoch = coordinator_epoch
        e.last_timestamp = timestamp


def _size(buf: object) -> str:
    return "null" if buf is None else f"{len(buf)} bytes"  # type: ignore[arg-type]


def is_late(last_timestamp: int, newest_timestamp: int, timeout_ms: int | None = None) -> bool:
    """Whether a transaction whose producer last wrote at ``last_timestamp`` is late at ``newest_timestamp``
    (ProducerStateManager.hasLateTransaction: idle for more than ``transaction.max.timeout.ms`` plus
    LATE_TRANSACTION_BUFFER_MS). The one rule of TRANSACTION_HANGING, for the scan and the export alike."""
    timeout = DEFAULT_TRANSACTION_MAX_TIMEOUT_MS if timeout_ms is None else timeout_ms
    return last_timestamp > 0 and newest_timestamp - last_timestamp > timeout + LATE_TRANSACTION_BUFFER_MS


def crc_ok(batch: Batch) -> bool:
    """Whether the batch's stored CRC matches its bytes (False when it cannot be computed)."""
    try:
        return bool(batch.crc_valid())  # type: ignore[attr-defined]
    except FormatError:
        return False

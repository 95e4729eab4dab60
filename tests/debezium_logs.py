"""Hand-made Debezium topics for the CDC tests: a PostgreSQL connector's change events of a table
``inventory.items`` (``id`` int32 primary key, ``name`` string, ``note`` string) as Kafka Connect's
JsonConverter writes them (schemas.enable=true: each key and value carries its schema, no registry), in a log
dir written by the project's own batch writer (:func:`logdoctor.formats.writer.build_record_batch`).

The envelope's layout follows Debezium's (github:debezium/debezium ``Envelope.java``: before, after, source,
op, ts_ms, transaction; the PostgreSQL ``SourceInfo``: ts_ms, lsn, txId); a truncate has a null key and null
before/after; a tombstone is a null value under the key.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

TOPIC = "dbserver9.inventory.items"
PLACEHOLDER = "__debezium_unavailable_value"

_ROW = {
    "type": "struct",
    "optional": True,
    "name": "dbserver9.inventory.items.Value",
    "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": True, "field": "name"},
        {"type": "string", "optional": True, "field": "note"},
    ],
}
_SOURCE = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.postgresql.Source",
    "field": "source",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": False, "field": "schema"},
        {"type": "string", "optional": False, "field": "table"},
        {"type": "int64", "optional": True, "field": "txId"},
        {"type": "int64", "optional": True, "field": "lsn"},
    ],
}
VALUE_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "dbserver9.inventory.items.Envelope",
    "version": 1,
    "fields": [
        {**_ROW, "field": "before"},
        {**_ROW, "field": "after"},
        _SOURCE,
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
    ],
}
KEY_SCHEMA = {
    "type": "struct",
    "optional": False,
    "name": "dbserver9.inventory.items.Key",
    "fields": [{"type": "int32", "optional": False, "field": "id"}],
}


@dataclass(frozen=True)
class Event:
    """One record of the topic: a change event (``op`` set), a tombstone (``op`` None) or a truncate."""

    op: str | None
    id: int | None
    after: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    ts_ms: int = 0
    lsn: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


def key_bytes(id_: int) -> bytes:
    return json.dumps({"schema": KEY_SCHEMA, "payload": {"id": id_}}, separators=(",", ":")).encode()


def value_bytes(e: Event) -> bytes | None:
    if e.op is None:
        return None
    source = {
        "version": "2.7.0.Final",
        "connector": "postgresql",
        "name": "dbserver9",
        "ts_ms": e.ts_ms,
        "db": "shop",
        "schema": "inventory",
        "table": "items",
        "txId": 700 + e.lsn,
        "lsn": e.lsn,
    }
    payload = {"before": e.before, "after": e.after, "source": source, "op": e.op, "ts_ms": e.ts_ms + 5}
    return json.dumps({"schema": VALUE_SCHEMA, "payload": payload}, separators=(",", ":")).encode()


def row(id_: int, name: str | None, note: str | None = None) -> dict[str, Any]:
    return {"id": id_, "name": name, "note": note}


def upsert(op: str, id_: int, name: str | None, note: str | None, ts: int, lsn: int) -> Event:
    return Event(op, id_, row(id_, name, note), None, ts, lsn)


def delete(id_: int, ts: int, lsn: int) -> Event:
    return Event("d", id_, None, row(id_, None), ts, lsn)


def tombstone(id_: int) -> Event:
    return Event(None, id_)


def truncate(ts: int, lsn: int) -> Event:
    return Event("t", None, None, None, ts, lsn)


def _spec(e: Event) -> RecordSpec:
    from logdoctor.formats.record_types import Header

    return RecordSpec(
        value=value_bytes(e),
        key=None if e.id is None else key_bytes(e.id),
        timestamp=1_700_000_000_000 + e.ts_ms,
        headers=tuple(Header(k, v) for k, v in e.headers),
    )


def marker(commit: bool) -> RecordSpec:
    """An end transaction marker's control record (key: version 0, type COMMIT 1 / ABORT 0; value: version
    0, coordinator epoch 0), as apache/kafka ``EndTransactionMarker`` writes it."""
    return RecordSpec(
        value=struct.pack(">hi", 0, 0),
        key=struct.pack(">hh", 0, 1 if commit else 0),
        timestamp=1_700_000_000_000,
    )


class TopicWriter:
    """Appends batches to one partition's segment (``<root>/<topic>-<partition>/0...0.log``)."""

    def __init__(self, root: Path, partition: int = 0, topic: str = TOPIC) -> None:
        self.folder = root / f"{topic}-{partition}"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.segment = self.folder / "00000000000000000000.log"
        self.next_offset = 0
        self.segment.write_bytes(b"")

    def plain(self, *events: Event) -> None:
        """One non-transactional batch of ``events``."""
        self._write([_spec(e) for e in events])

    def transaction(self, events: list[Event], commit: bool, pid: int = 7) -> None:
        """A transaction of ``events`` (one transactional batch) ended by its COMMIT or ABORT marker."""
        self._write(
            [_spec(e) for e in events],
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        )
        self._write(
            [marker(commit)], producer_id=pid, producer_epoch=0, is_transactional=True, is_control=True
        )

    def _write(self, specs: list[RecordSpec], **kwargs: Any) -> None:
        data = build_record_batch(specs, base_offset=self.next_offset, **kwargs)
        with self.segment.open("ab") as f:
            f.write(data)
        self.next_offset += len(specs)

"""Debezium change events of one table as the PostgreSQL, MySQL and MariaDB connectors write them through
Kafka Connect's JsonConverter (schemas.enable=true), with the source position each connector gives its events:
for the CDC tests of redeliveries and schema changes (tests/typed/test_cdc_redelivery.py,
tests/spark/test_cdc_redelivery_export.py).

The layout restates github:debezium/debezium:

- the envelope: ``before``, ``after``, ``source``, ``transaction``, ``op``, ``ts_ms``, ``ts_us``, ``ts_ns``
  (``schema/SchemaFactory.datatypeEnvelopeSchema``);
- the source's common fields: ``version``, ``connector``, ``name``, ``ts_ms``, ``snapshot`` (an
  ``io.debezium.data.Enum`` with default "false"), ``db``, ``sequence``, ``ts_us``, ``ts_ns``
  (``SchemaFactory.sourceInfoSchemaBuilder``, ``AbstractSourceInfoStructMaker.commonStruct``);
- PostgreSQL's: ``schema``, ``table``, ``txId``, ``lsn``, ``xmin`` (``PostgresSourceInfoStructMaker``), and
  ``sequence`` = ``["<last commit LSN>","<LSN>"]`` as JSON text, ``null`` for a missing one
  (``postgresql/SourceInfo.sequence``);
- MySQL's and MariaDB's: ``table``, ``server_id``, ``gtid``, ``file``, ``pos``, ``row``, ``thread``, ``query``
  (``binlog/BinlogSourceInfoStructMaker``), no ``sequence``;
- SQL Server's: ``schema``, ``table``, ``change_lsn``, ``commit_lsn``, ``event_serial_no``
  (``SqlServerSourceInfoStructMaker``);
- the table ``inventory.items``: ``id`` int4 primary key, ``name`` text, ``note`` text (TOASTed: an update
  that leaves it unchanged carries ``__debezium_unavailable_value``), and after ``ALTER TABLE ... ADD COLUMN
  score int NOT NULL DEFAULT 0`` ``score`` as ``{"type":"int32","optional":false,"default":0}``;
- a delete is followed by its tombstone (``tombstones.on.delete``); a primary-key change is a delete of the
  old key with header ``__debezium.newkey`` (and its tombstone) then a create of the new key with header
  ``__debezium.oldkey`` (``RelationalChangeRecordEmitter.emitUpdateAsPrimaryKeyChangeRecord``), the header
  values the key as JSON text (Connect's SimpleHeaderConverter).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.formats.record_types import Header, RecordSpec
from logdoctor.formats.writer import build_record_batch

SERVER = "dbserver1"
TOPIC = f"{SERVER}.inventory.items"
PLACEHOLDER = "__debezium_unavailable_value"
SNAPSHOT_ENUM = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"


def _f(kind: str, name: str, optional: bool = True, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "optional": optional, **extra, "field": name}


def row_schema(with_score: bool) -> dict[str, Any]:
    fields = [_f("int32", "id", False), _f("string", "name"), _f("string", "note")]
    if with_score:
        fields.append(_f("int32", "score", False, default=0))
    return {"type": "struct", "fields": fields, "optional": True, "name": f"{TOPIC}.Value"}


def source_schema(connector: str) -> dict[str, Any]:
    common = [
        _f("string", "version", False),
        _f("string", "connector", False),
        _f("string", "name", False),
        _f("int64", "ts_ms", False),
        {
            "type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
            "parameters": {"allowed": SNAPSHOT_ENUM}, "default": "false", "field": "snapshot",
        },
        _f("string", "db", False),
        _f("string", "sequence"),
        _f("int64", "ts_us"),
        _f("int64", "ts_ns"),
    ]  # fmt: skip
    if connector == "postgresql":
        own = [
            _f("string", "schema", False), _f("string", "table", False), _f("int64", "txId"),
            _f("int64", "lsn"), _f("int64", "xmin"),
        ]  # fmt: skip
    elif connector == "sqlserver":
        own = [
            _f("string", "schema", False), _f("string", "table", False), _f("string", "change_lsn"),
            _f("string", "commit_lsn"), _f("int64", "event_serial_no"),
        ]  # fmt: skip
    else:
        own = [
            _f("string", "table"), _f("int64", "server_id", False), _f("string", "gtid"),
            _f("string", "file", False), _f("int64", "pos", False), _f("int32", "row", False),
            _f("int64", "thread"), _f("string", "query"),
        ]  # fmt: skip
    name = f"io.debezium.connector.{connector}.Source"
    return {"type": "struct", "fields": common + own, "optional": False, "name": name, "field": "source"}


def value_schema(connector: str, with_score: bool) -> dict[str, Any]:
    row = row_schema(with_score)
    transaction = {
        "type": "struct",
        "fields": [
            _f("string", "id", False), _f("int64", "total_order", False),
            _f("int64", "data_collection_order", False),
        ],
        "optional": True, "name": "event.block", "version": 1, "field": "transaction",
    }  # fmt: skip
    return {
        "type": "struct",
        "fields": [
            {**row, "field": "before"}, {**row, "field": "after"}, source_schema(connector), transaction,
            _f("string", "op", False), _f("int64", "ts_ms"), _f("int64", "ts_us"), _f("int64", "ts_ns"),
        ],
        "optional": False, "name": f"{TOPIC}.Envelope", "version": 2,
    }  # fmt: skip


KEY_SCHEMA = {
    "type": "struct",
    "fields": [_f("int32", "id", False)],
    "optional": False,
    "name": f"{TOPIC}.Key",
}


@dataclass(frozen=True)
class Position:
    """Where a change is in the database's log: PostgreSQL ``lsn`` (and the last commit LSN before its
    transaction, for ``sequence``); MySQL/MariaDB ``file``, ``pos``, ``row``, ``gtid``, ``server_id``."""

    lsn: int | None = None
    last_commit: int | None = None
    file: str = "mysql-bin.000003"
    pos: int = 0
    row: int = 0
    gtid: str | None = None
    server_id: int = 223344


@dataclass(frozen=True)
class Change:
    """One record of the topic: a change event (``op``), or a tombstone (``op`` None)."""

    op: str | None
    id: int | None
    after: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    at: Position = field(default_factory=Position)
    ts_ms: int = 1_700_000_000_000
    txid: int = 700
    snapshot: str = "false"
    headers: tuple[tuple[str, bytes], ...] = ()
    with_score: bool = False


def source(connector: str, c: Change) -> dict[str, Any]:
    common: dict[str, Any] = {
        "version": "3.6.1.Final", "connector": connector, "name": SERVER, "ts_ms": c.ts_ms,
        "snapshot": c.snapshot, "db": "shop" if connector == "postgresql" else "inventory",
    }  # fmt: skip
    if connector == "postgresql":
        seq = [
            None if c.at.last_commit is None else str(c.at.last_commit),
            None if c.at.lsn is None else str(c.at.lsn),
        ]
        common["sequence"] = json.dumps(seq, separators=(",", ":"))
    else:
        common["sequence"] = None
    common["ts_us"], common["ts_ns"] = c.ts_ms * 1000, c.ts_ms * 1_000_000
    if connector == "postgresql":
        return {
            **common,
            "schema": "inventory",
            "table": "items",
            "txId": c.txid,
            "lsn": c.at.lsn,
            "xmin": None,
        }
    if connector == "sqlserver":
        lsn = f"{0x27:08x}:{c.at.pos:08x}:{c.at.row + 2:04x}"
        return {
            **common, "schema": "dbo", "table": "items", "change_lsn": lsn, "commit_lsn": lsn,
            "event_serial_no": 1,
        }  # fmt: skip
    return {
        **common, "table": "items", "server_id": c.at.server_id, "gtid": c.at.gtid, "file": c.at.file,
        "pos": c.at.pos, "row": c.at.row, "thread": 9, "query": None,
    }  # fmt: skip


def value_bytes(connector: str, c: Change) -> bytes | None:
    if c.op is None:
        return None
    payload = {
        "before": c.before, "after": c.after, "source": source(connector, c), "transaction": None, "op": c.op,
        "ts_ms": c.ts_ms + 7, "ts_us": (c.ts_ms + 7) * 1000, "ts_ns": (c.ts_ms + 7) * 1_000_000,
    }  # fmt: skip
    envelope = {"schema": value_schema(connector, c.with_score), "payload": payload}
    return json.dumps(envelope, separators=(",", ":")).encode()


def key_bytes(id_: int) -> bytes:
    return json.dumps({"schema": KEY_SCHEMA, "payload": {"id": id_}}, separators=(",", ":")).encode()


def row(id_: int, name: str | None, note: str | None, score: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id_, "name": name, "note": note}
    if score is not None:
        out["score"] = score
    return out


# --- the events -----------------------------------------------------------------------------------------


def upsert(op: str, values: dict[str, Any], at: Position, **kw: Any) -> Change:
    return Change(op, values["id"], after=values, at=at, with_score="score" in values, **kw)


def delete(
    id_: int, at: Position, *, newkey: int | None = None, with_score: bool = False, **kw: Any
) -> list[Change]:
    """A delete under the default replica identity (``before`` holds the key only) and its tombstone."""
    headers = () if newkey is None else (("__debezium.newkey", json.dumps({"id": newkey}).encode()),)
    before = {"id": id_, "name": None, "note": None, **({"score": 0} if with_score else {})}
    gone = Change("d", id_, before=before, at=at, headers=headers, with_score=with_score, **kw)
    return [gone, Change(None, id_, headers=headers)]


def key_change(old: int, values: dict[str, Any], at: Position, **kw: Any) -> list[Change]:
    """``UPDATE ... SET id = new``: the old key's delete (and tombstone), the new key's create, at one
    position."""
    created = Change(
        "c", values["id"], after=values, at=at, with_score="score" in values,
        headers=(("__debezium.oldkey", json.dumps({"id": old}).encode()),), **kw,
    )  # fmt: skip
    return [*delete(old, at, newkey=values["id"], with_score="score" in values, **kw), created]


# --- the log dir ----------------------------------------------------------------------------------------


def write_topic(log_dir: Path, connector: str, changes: list[Change], partition: int = 0) -> Path:
    """``log_dir/<TOPIC>-<partition>`` holding ``changes`` from offset 0 (one batch each, as Connect's
    producer sends them one poll at a time here); returns the segment."""
    folder = log_dir / f"{TOPIC}-{partition}"
    folder.mkdir(parents=True, exist_ok=True)
    segment = folder / "00000000000000000000.log"
    with segment.open("wb") as f:
        for offset, c in enumerate(changes):
            spec = RecordSpec(
                value=value_bytes(connector, c),
                key=None if c.id is None else key_bytes(c.id),
                timestamp=c.ts_ms + 20,
                headers=tuple(Header(k, v) for k, v in c.headers),
            )
            f.write(build_record_batch([spec], base_offset=offset))
    return segment

"""At-least-once redeliveries in a CDC topic (issue 73): Kafka Connect killed mid-stream sends again the
events after its last committed offset, at later Kafka offsets, with the source positions they had. Within a
key an event at or before the row's last applied event by source position is a redelivery: counted, never
applied.

The events are the connectors' own layout (tests/debezium_sources.py: PostgreSQL ``lsn``/``sequence``,
MariaDB and MySQL ``file``/``pos``/``row``/``gtid``), decoded by the JsonConverter decoder; the oracle of
each case is the table the database holds, written out by hand."""

from __future__ import annotations

import cdc_input as ci
import pyarrow as pa
import pytest

import debezium_sources as ds
from debezium_sources import Position
from logdoctor.formats.registry import debezium
from logdoctor.formats.registry.arrow_union import cast_to, union_type
from logdoctor.formats.registry.connect_json import ConnectJsonDecoder, envelope_schema
from logdoctor.spark.cdc import CdcResult, fold_topic

BIG = "x" * 3824  # a TOASTed text (the column held 3,824 characters)


def batch(connector: str, changes: list[ds.Change]) -> pa.RecordBatch:
    """The fold's input: each record's value decoded with its own schema, the table type their union."""
    values = [ds.value_bytes(connector, c) for c in changes]
    decoders = {t: ConnectJsonDecoder(t) for t in {envelope_schema(v) for v in values if v is not None}}
    target = union_type([d.arrow_type for d in decoders.values()])
    keys = ConnectJsonDecoder(envelope_schema(ds.key_bytes(0)))
    rows = []
    for offset, (c, v) in enumerate(zip(changes, values, strict=True)):
        envelope = None
        if v is not None:
            envelope = cast_to(decoders[envelope_schema(v)].decode([v]).values, target)[0].as_py()
        key = None if c.id is None else keys.decode([ds.key_bytes(c.id)]).values[0].as_py()
        headers = [{"key": k, "value": h} for k, h in c.headers]
        meta = {"partition": 0, "offset": offset, "timestamp": None, "headers": headers, "key": key}
        rows.append((envelope, {**meta, "transaction_result": None}))
    return ci.batch_of(list(target), keys.arrow_type, rows)


def fold(connector: str, changes: list[ds.Change]) -> CdcResult:
    return fold_topic({0: [batch(connector, changes)]})


def rows(result: CdcResult) -> list[tuple]:
    assert result.table is not None
    return sorted(zip(*(result.table.column(c).to_pylist() for c in ("id", "name", "note")), strict=True))


def pg(lsn: int, last_commit: int | None) -> Position:
    return Position(lsn=lsn, last_commit=last_commit)


# --- PostgreSQL -------------------------------------------------------------------------------------------


def test_a_stale_delete_redelivered_after_a_key_change_keeps_the_row_and_its_toast() -> None:
    """The issue's case: key 2 deleted, then key 1 renamed to 2 (its note TOASTed: the create holds the
    placeholder); Connect killed, the events from the delete on sent again; then an update of key 2 leaving
    the note unchanged. The redelivered delete must not undo row 2, nor the placeholder lose the text."""
    changes = [
        ds.upsert("c", ds.row(1, "a", BIG), pg(200, 150)),
        ds.upsert("c", ds.row(2, "b", "short"), pg(300, 250)),
        *ds.delete(2, pg(400, 350)),
        *ds.key_change(1, ds.row(2, "a2", ds.PLACEHOLDER), pg(500, 450)),
        # redelivered from the delete on, at later offsets, with their positions
        *ds.delete(2, pg(400, 350)),
        *ds.key_change(1, ds.row(2, "a2", ds.PLACEHOLDER), pg(500, 450)),
        ds.upsert("u", ds.row(2, "a3", ds.PLACEHOLDER), pg(600, 550)),
    ]
    result = fold("postgresql", changes)
    assert rows(result) == [(2, "a3", BIG)]
    assert result.stats.events_redelivered == 5  # the delete, its tombstone, the key change's three
    assert result.stats.partial_rows == 0 and result.stats.placeholder_cells_null == 0
    assert result.stats.redeliveries_unchecked is None
    assert result.table.column("kafka")[0]["offset"].as_py() == len(changes) - 1


def test_an_older_update_or_insert_redelivered_later_is_not_applied() -> None:
    changes = [
        ds.upsert("c", ds.row(1, "a", None), pg(100, 90)),
        ds.upsert("c", ds.row(3, "c", None), pg(150, 140)),
        ds.upsert("u", ds.row(1, "b", None), pg(200, 190)),
        ds.upsert("u", ds.row(1, "c", None), pg(300, 290)),
        *ds.delete(3, pg(350, 340)),
        # redelivered: an older update of 1, the insert of 3 (deleted since), the last update of 1
        ds.upsert("u", ds.row(1, "b", None), pg(200, 190)),
        ds.upsert("c", ds.row(3, "c", None), pg(150, 140)),
        ds.upsert("u", ds.row(1, "c", None), pg(300, 290)),
    ]
    result = fold("postgresql", changes)
    assert rows(result) == [(1, "c", None)]
    assert result.stats.events_redelivered == 3
    assert result.stats.deletes_without_row == 0


def test_a_redelivered_truncate_or_event_before_it_changes_nothing() -> None:
    truncate = ds.Change("t", None, at=pg(200, 190))
    changes = [
        ds.upsert("c", ds.row(1, "a", None), pg(100, 90)),
        truncate,
        ds.upsert("c", ds.row(2, "b", None), pg(300, 290)),
        ds.upsert("c", ds.row(1, "a", None), pg(100, 90)),  # redelivered: before the truncate
        truncate,  # redelivered: would empty the table again
    ]
    result = fold("postgresql", changes)
    assert rows(result) == [(2, "b", None)]
    assert result.stats.truncates == 1 and result.stats.events_redelivered == 2


def test_a_snapshot_read_is_not_a_position_to_compare() -> None:
    """A snapshot's events carry the LSN where the snapshot began; a transaction that began before it and
    committed after has a lower LSN, yet changes the row after the snapshot read it."""
    changes = [
        ds.upsert("r", ds.row(1, "a", None), pg(500, None), snapshot="last"),
        ds.upsert("u", ds.row(1, "b", None), pg(450, None)),  # the first transaction after the snapshot
    ]
    result = fold("postgresql", changes)
    assert rows(result) == [(1, "b", None)]
    assert result.stats.events_redelivered == 0


# --- MariaDB, MySQL --------------------------------------------------------------------------------------


def maria(pos: int, gtid: str, row: int = 0, file: str = "mariadb-bin.000003") -> Position:
    return Position(file=file, pos=pos, row=row, gtid=gtid, server_id=1)


def test_mariadb_gtid_sequence_numbers_order_the_transactions() -> None:
    """``0-1-9`` before ``0-1-10`` (numbers, not text); two rows of one binlog event by ``row``."""
    changes = [
        ds.upsert("c", ds.row(1, "a", None), maria(400, "0-1-9")),
        ds.upsert("u", ds.row(1, "b", None), maria(900, "0-1-10", row=0)),
        ds.upsert("u", ds.row(2, "x", None), maria(900, "0-1-10", row=1)),
        ds.upsert("c", ds.row(1, "a", None), maria(400, "0-1-9")),  # redelivered
        ds.upsert("u", ds.row(2, "x", None), maria(900, "0-1-10", row=1)),  # redelivered
    ]
    result = fold("mariadb", changes)
    assert rows(result) == [(1, "b", None), (2, "x", None)]
    assert result.stats.events_redelivered == 2


def test_mysql_binlog_files_order_by_their_number() -> None:
    """Without GTIDs: (file number, pos, row); ``mysql-bin.999999`` comes before ``mysql-bin.1000000``."""
    old = Position(file="mysql-bin.999999", pos=7000, server_id=5)
    new = Position(file="mysql-bin.1000000", pos=4, server_id=5)
    changes = [
        ds.upsert("c", ds.row(1, "a", None), old),
        ds.upsert("u", ds.row(1, "b", None), new),
        ds.upsert("c", ds.row(1, "a", None), old),  # redelivered
    ]
    result = fold("mysql", changes)
    assert rows(result) == [(1, "b", None)]
    assert result.stats.events_redelivered == 1


def test_a_connector_without_compared_positions_keeps_offset_order_and_says_so() -> None:
    changes = [
        ds.upsert("c", ds.row(1, "a", None), Position(pos=100)),
        ds.upsert("u", ds.row(1, "b", None), Position(pos=200)),
        ds.upsert("c", ds.row(1, "a", None), Position(pos=100)),  # redelivered: applied, offset order
    ]
    result = fold("sqlserver", changes)
    assert rows(result) == [(1, "a", None)]
    assert result.stats.events_redelivered == 0
    assert "sqlserver" in (result.stats.redeliveries_unchecked or "")


# --- the positions, as Debezium writes them ---------------------------------------------------------------


SOURCE_ID = "3E11FA47-71CA-11E1-9E33-C80AA9429562"  # MySQL's reference manual's example server UUID
OTHER_SOURCE = "bbbbbbbb-0000-0000-0000-000000000000"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # postgresql.adoc's example (sequence ["24023119","24023128"]) and a later change of the same row
        ({"connector": "postgresql", "lsn": 24023128, "sequence": '["24023119","24023128"]'},
         {"connector": "postgresql", "lsn": 24023300, "sequence": '["24023200","24023300"]'}, True),
        ({"connector": "postgresql", "lsn": 24023300, "sequence": '["24023200","24023300"]'},
         {"connector": "postgresql", "lsn": 24023128, "sequence": '["24023119","24023128"]'}, False),
        # the same change again (a redelivery), and a sequence standing for an absent lsn
        ({"connector": "postgresql", "lsn": 7, "sequence": '[null,"7"]'},
         {"connector": "postgresql", "lsn": None, "sequence": '[null,"7"]'}, True),
        ({"connector": "mysql", "file": "mysql-bin.000010", "pos": 4, "row": 0, "server_id": 1},
         {"connector": "mysql", "file": "mysql-bin.000009", "pos": 9000, "row": 0, "server_id": 1}, False),
        # another server's binary log, another base name: not comparable
        ({"connector": "mysql", "file": "mysql-bin.000001", "pos": 4, "server_id": 1},
         {"connector": "mysql", "file": "mysql-bin.000009", "pos": 4, "server_id": 2}, None),
        ({"connector": "mysql", "file": "a-bin.000001", "pos": 4, "server_id": 1},
         {"connector": "mysql", "file": "b-bin.000009", "pos": 4, "server_id": 1}, None),
        # MySQL GTIDs of one source by number; of two sources: not comparable
        ({"connector": "mysql", "file": "m.000002", "pos": 4, "gtid": f"{SOURCE_ID}:9"},
         {"connector": "mysql", "file": "m.000001", "pos": 9, "gtid": f"{SOURCE_ID.lower()}:10"}, True),
        ({"connector": "mysql", "file": "m.000001", "pos": 4, "gtid": f"{SOURCE_ID}:1"},
         {"connector": "mysql", "file": "m.000001", "pos": 9, "gtid": f"{OTHER_SOURCE}:9"}, None),
        ({"connector": "mongodb", "ord": 1}, {"connector": "mongodb", "ord": 2}, None),
    ],
)  # fmt: skip
def test_redelivery_positions(a: dict, b: dict, expected: bool | None) -> None:
    assert debezium.at_or_before(debezium.redelivery_position(a), debezium.redelivery_position(b)) is expected


def test_the_positions_without_a_redelivery_change_nothing() -> None:
    """The same events without the redelivered ones: the same table, nothing counted."""
    changes = [
        ds.upsert("c", ds.row(1, "a", BIG), pg(200, 150)),
        ds.upsert("c", ds.row(2, "b", "short"), pg(300, 250)),
        *ds.delete(2, pg(400, 350)),
        *ds.key_change(1, ds.row(2, "a2", ds.PLACEHOLDER), pg(500, 450)),
        ds.upsert("u", ds.row(2, "a3", ds.PLACEHOLDER), pg(600, 550)),
    ]
    result = fold("postgresql", changes)
    assert rows(result) == [(2, "a3", BIG)]
    assert result.stats.events_redelivered == 0


def test_a_new_snapshot_starts_a_new_basis_of_positions() -> None:
    """``RESET BINARY LOGS AND GTIDS`` (or a database restored to an earlier point): the binary log starts
    again at ``mysql-bin.000001``, the connector snapshots again, and a key deleted before comes back with a
    lower position than its delete. It is a new change, not a redelivery."""
    old, new = "mysql-bin.000050", "mysql-bin.000001"
    changes = [
        ds.upsert("c", ds.row(5, "e", None), Position(file=old, pos=800, server_id=5)),
        *ds.delete(5, Position(file=old, pos=900, server_id=5)),
        ds.upsert("r", ds.row(1, "a", None), Position(file=new, pos=4, server_id=0), snapshot="last"),
        ds.upsert("c", ds.row(5, "e2", None), Position(file=new, pos=200, server_id=5)),
        ds.upsert("c", ds.row(5, "e2", None), Position(file=new, pos=200, server_id=5)),  # redelivered
    ]
    result = fold("mysql", changes)
    assert rows(result) == [(1, "a", None), (5, "e2", None)]
    assert result.stats.events_redelivered == 1

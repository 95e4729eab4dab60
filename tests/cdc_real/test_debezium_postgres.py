"""``export --view cdc`` against a real PostgreSQL 15 captured by Debezium 3.6.1 in a real Kafka Connect
(issue 73): the folded table of every captured source table equals the database's own ``SELECT * FROM`` it
at the end, column for column, and ``--ending-timestamp T`` equals the table as a ``SELECT`` read it at T.

One module: one Kafka 4.4.0 broker, one PostgreSQL (``wal_level=logical``), one Connect worker
(``ConnectDistributed`` from the installed Kafka; Debezium's postgres plugin; JsonConverter with schemas for
keys and values) with two connectors on the same tables: ``pg`` with the default
``decimal.handling.mode`` (precise: Connect ``Decimal`` bytes, ``VariableScaleDecimal`` for an unscaled
``numeric``) and ``pgs`` with ``string``; both ``plugin.name=pgoutput`` and ``skipped.operations=none``.

The workload, in the database:

- ``customers``: rows the connector snapshots (``r``), inserts, updates of other columns than a TOASTed
  ``text`` (the default replica identity: the update's new tuple lacks it and Debezium writes its
  placeholder), an update of the TOASTed column, deletes (each followed by a tombstone; the delete's
  ``before`` holds the key only), primary-key changes (a delete with ``__debezium.newkey`` and a create with
  ``__debezium.oldkey``; one onto a key deleted just before), ``numeric(12,3)``, an unscaled ``numeric``,
  ``jsonb``, ``timestamptz``, and a transaction rolled back (PostgreSQL decodes no event of it).
- ``sessions``: rows, a ``TRUNCATE`` (one ``op: t`` event with a null key), rows after it.
- ``accounts``: ``ALTER TABLE ... ADD COLUMN score int NOT NULL DEFAULT 0`` mid-stream, then a few rows
  changed: the rows untouched since hold 0 in the database.
- ``ledger``: a stream of inserts (TOASTed ``big``), updates, deletes and key changes onto freed keys, during
  which the Connect worker is killed (SIGKILL) and started again: it writes again, at later offsets, the
  events after its last offset commit.

The broker is then stopped cleanly, and its log dir is exported as a user would.
"""

from __future__ import annotations

import json
import os
import secrets
import time

import pytest
from cdc_verdict import (
    Run,
    after_quiet,
    compare,
    cpu_seconds,
    export_cdc,
    export_then_append,
    quiet_instant,
    read_table,
    redeliveries,
    split_in_redelivery,
    started_together,
    wait_marker,
)

import kafka_cluster as kc
from connect_cluster import POSTGRES_PLUGIN, ConnectWorker
from databases import PostgresServer

pytestmark = pytest.mark.kafka

PREFIXES = ("pg", "pgs")  # decimal.handling.mode precise (default), string
TABLES = ("customers", "sessions", "accounts", "ledger")
KINDS = {
    "customers": {
        "id": "int",
        "name": "text",
        "notes": "text",
        "price": "numeric",
        "ratio": "numeric",
        "doc": "json",
        "updated": "timestamp",
    },
    "sessions": {"id": "int", "token": "text"},
    "accounts": {"id": "int", "owner": "text", "balance": "numeric", "score": "int"},
    "ledger": {"id": "int", "amount": "numeric", "memo": "text", "big": "text"},
}
LEDGER_CHUNKS = 10
KILL_AFTER_CHUNK = 3
RESTART_AFTER_CHUNK = 6

SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, notes text, price numeric(12,3),
                        ratio numeric, doc jsonb, updated timestamptz NOT NULL DEFAULT now());
CREATE TABLE sessions (id int PRIMARY KEY, token text);
CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance numeric(12,2));
CREATE TABLE ledger (id int PRIMARY KEY, amount numeric(12,2), memo text, big text);
CREATE TABLE marker (id int PRIMARY KEY, phase text);
"""


def toast() -> str:
    """A text PostgreSQL keeps out of line (TOAST): 4,000 characters that pglz does not compress."""
    return secrets.token_hex(2000)


def q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connector(prefix: str, pg: PostgresServer, **extra: object) -> dict[str, object]:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": pg.port,
        "database.user": "postgres",
        "database.password": "unused",
        "database.dbname": pg.database,
        "topic.prefix": prefix,
        "slot.name": f"dbz_{prefix}",
        "publication.name": f"dbz_{prefix}",
        "table.include.list": ",".join(f"public.{t}" for t in (*TABLES, "marker")),
        "skipped.operations": "none",
        "topic.creation.default.replication.factor": 1,
        "topic.creation.default.partitions": 1,
        "tasks.max": 1,
        **extra,
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("debezium-pg")
    result = Run()
    started, cpu = time.monotonic(), cpu_seconds()
    topics = [f"{p}.public.{t}" for p in PREFIXES for t in (*TABLES, "marker")]
    markers = [f"{p}.public.marker" for p in PREFIXES]
    pg, cluster = PostgresServer(), kc.KafkaCluster(root / "kafka", version=kc.NEWEST)
    with started_together(pg, cluster):
        pg.psql(SCHEMA)
        # the rows of the connectors' snapshot
        pg.psql(
            "".join(
                f"INSERT INTO customers (id, name, notes, price, ratio, doc) VALUES ({i}, 'customer {i}', "
                f'{q(toast())}, {i}.125, {i}.5, \'{{"tier": {i % 3}, "tags": ["a", "b"]}}\');\n'
                for i in range(1, 21)
            )
            + "".join(f"INSERT INTO sessions VALUES ({i}, 'token {i}');\n" for i in range(1, 11))
            + "".join(f"INSERT INTO accounts VALUES ({i}, 'owner {i}', {i}00.25);\n" for i in range(1, 31))
            + "".join(
                f"INSERT INTO ledger VALUES ({i}, {i}.10, 'opening {i}', {q(toast())});\n"
                for i in range(1, 11)
            )
        )
        worker = ConnectWorker(
            cluster, root / "connect", POSTGRES_PLUGIN, config={"offset.flush.interval.ms": 600_000}
        ).start()
        worker.create_connector("pg", connector("pg", pg))
        worker.create_connector("pgs", connector("pgs", pg, **{"decimal.handling.mode": "string"}))
        for name in PREFIXES:
            worker.wait_running(name)
        worker.wait_for_records("pg.public.customers")
        result.figures["first_event_s"] = round(time.monotonic() - started, 1)
        result.figures["load_at_first_event"] = round(os.getloadavg()[0], 1)

        # streaming: inserts, updates beside the TOASTed column, deletes, key changes, a rollback, a truncate
        pg.psql(
            "".join(
                f"INSERT INTO customers (id, name, notes, price, ratio, doc) VALUES ({i}, 'customer {i}', "
                f'{q(toast())}, {i * 7}.001, {i}.25, \'{{"tier": {i % 3}, "note": null}}\');\n'
                for i in range(21, 41)
            )
            + "UPDATE customers SET name = name || ' (renamed)', price = price + 1\n"
            + "WHERE id BETWEEN 1 AND 10;\n"
            + f"UPDATE customers SET notes = {q(toast())} WHERE id = 3;\n"
            + "UPDATE customers SET doc = jsonb_set(doc, '{tier}', '9') WHERE id IN (2, 22);\n"
            + "UPDATE customers SET ratio = 12345678901234567890.0987654321 WHERE id = 4;\n"
            + "DELETE FROM customers WHERE id IN (11, 12, 13, 30);\n"
            + "UPDATE customers SET id = 100 WHERE id = 5;\n"  # a key change, the TOASTed notes unchanged
            + "DELETE FROM customers WHERE id = 14;\n"
            + "UPDATE customers SET id = 14, name = 'moved onto 14' WHERE id = 15;\n"  # onto a freed key
            + "BEGIN;\nUPDATE customers SET name = 'rolled back' WHERE id < 20;\n"
            + "DELETE FROM customers WHERE id = 1;\n"
            + "INSERT INTO customers (id, name) VALUES (999, 'rolled back');\nROLLBACK;\n"
            + "TRUNCATE sessions;\n"
            + "".join(f"INSERT INTO sessions VALUES ({i}, 'after truncate {i}');\n" for i in range(5, 9))
            + "UPDATE sessions SET token = 'changed' WHERE id = 6;\n"
            + "".join(f"INSERT INTO accounts VALUES ({i}, 'owner {i}', {i}.99);\n" for i in range(31, 36))
            + "UPDATE accounts SET balance = balance * 2 WHERE id % 4 = 0;\n"
        )
        pg.psql("INSERT INTO marker VALUES (1, 'phase 1')")
        wait_marker(worker, markers, 1, topics)
        # the offsets committed (a clean stop commits them; the interval is longer than the test), so that
        # the kill below makes the worker write again every event after this point up to the kill
        worker.stop()
        # the point in time: the database read in a quiet second
        result.t_ms = quiet_instant()
        result.at_t = {t: pg.rows(t) for t in TABLES}
        after_quiet(result.t_ms)
        worker.start()
        for name in PREFIXES:
            worker.wait_running(name)

        # a column added with a default, rows changed after it
        pg.psql(
            "ALTER TABLE accounts ADD COLUMN score int NOT NULL DEFAULT 0;\n"
            "UPDATE accounts SET score = 5 WHERE id IN (1, 2);\n"
            "UPDATE accounts SET owner = 'renamed' WHERE id = 3;\n"
            "INSERT INTO accounts (id, owner, balance) VALUES (40, 'after the column', 1.00);\n"
            "INSERT INTO accounts VALUES (41, 'with a score', 2.00, 7);\n"
        )

        # the ledger's stream, Connect killed in its middle and started again
        next_id = 11
        live = list(range(1, 11))
        for chunk in range(LEDGER_CHUNKS):
            statements = []
            for _ in range(20):
                statements.append(
                    f"INSERT INTO ledger VALUES ({next_id}, {next_id}.50, 'entry {next_id}', {q(toast())});"
                )
                live.append(next_id)
                next_id += 1
            for i in live[-20:-10]:
                statements.append(
                    f"UPDATE ledger SET amount = amount + 1, memo = 'updated in {chunk}' WHERE id = {i};"
                )
            freed = [live.pop(0) for _ in range(3)]
            statements += [f"DELETE FROM ledger WHERE id = {i};" for i in freed]
            moved = live.pop()
            statements.append(
                f"UPDATE ledger SET id = {freed[0]}, memo = 'moved from {moved}' WHERE id = {moved};"
            )
            live.append(freed[0])
            pg.psql("\n".join(statements) + "\n")
            if chunk == KILL_AFTER_CHUNK:  # once the worker has written some of the stream: mid-stream
                worker.wait_for_records("pg.public.ledger", 10 + 20 * KILL_AFTER_CHUNK)
                worker.kill()
                result.figures["kill_at_chunk"] = chunk
            if chunk == RESTART_AFTER_CHUNK:
                worker.start()
                for name in PREFIXES:
                    worker.wait_running(name)
        pg.psql("INSERT INTO marker VALUES (2, 'phase 2')")
        wait_marker(worker, markers, 2, topics)
        worker.stop()
        result.final = {t: pg.rows(t) for t in TABLES}
        for prefix in PREFIXES:
            result.records[f"{prefix}.public.ledger"] = kc.read_all(
                cluster.bootstrap, f"{prefix}.public.ledger", 0
            )
        cluster.stop()
        result.log_dir = cluster.broker_nodes[0].log_dirs[0]
    result.figures["workload_s"] = round(time.monotonic() - started, 1)
    result.out = root / "OUT"
    result.summary = export_cdc(result.log_dir, result.out)
    result.out_t = root / "OUT-T"
    result.summary_t = export_cdc(result.log_dir, result.out_t, "--ending-timestamp", str(result.t_ms))
    result.figures["module_setup_s"] = round(time.monotonic() - started, 1)
    result.figures["module_setup_cpu_s"] = round(cpu_seconds() - cpu, 1)
    result.figures["export_s"] = result.summary["_seconds"]
    result.figures["redelivered"] = {
        topic: redeliveries(records, lambda p: (p["source"].get("lsn"),))
        for topic, records in result.records.items()
    }
    print(f"\nPostgreSQL figures: {result.figures}")
    return result


def check(run: Run, prefix: str, table: str, *, at_t: bool = False, columns: list[str] | None = None) -> None:
    out = run.out_t if at_t else run.out
    header, rows = (run.at_t if at_t else run.final)[table]
    problems = compare(
        read_table(out / f"{prefix}.public.{table}"), header, rows, KINDS[table], columns=columns
    )
    assert not problems, (
        f"{prefix}.public.{table}{' at T' if at_t else ''}: {len(problems)} differences: "
        + ("; ".join(problems[:12]))
    )


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("table", ["customers", "sessions"])
def test_table_equals_select(run: Run, prefix: str, table: str) -> None:
    check(run, prefix, table)


@pytest.mark.parametrize("prefix", PREFIXES)
def test_ledger_through_a_killed_connect_equals_select(run: Run, prefix: str) -> None:
    check(run, prefix, "ledger")


@pytest.mark.parametrize("prefix", PREFIXES)
def test_accounts_equals_select_but_the_added_column(run: Run, prefix: str) -> None:
    check(run, prefix, "accounts", columns=["id", "owner", "balance"])


@pytest.mark.parametrize("prefix", PREFIXES)
def test_accounts_added_column_default(run: Run, prefix: str) -> None:
    check(run, prefix, "accounts")


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("table", TABLES)
def test_ending_timestamp_equals_select_at_t(run: Run, prefix: str, table: str) -> None:
    """Every column the table had at T, value for value (the columns added after T: the next test)."""
    check(run, prefix, table, at_t=True, columns=run.at_t[table][0])


@pytest.mark.parametrize("prefix", PREFIXES)
def test_ending_timestamp_columns_are_those_at_t(run: Run, prefix: str) -> None:
    check(run, prefix, "accounts", at_t=True)


def test_the_export_summary(run: Run) -> None:
    print(json.dumps({k: v for k, v in run.summary.items() if not k.startswith("_")}, indent=1)[:8000])
    print(run.summary["_stderr"])
    assert run.summary["_exit"] == 0


def test_the_killed_worker_wrote_events_again(run: Run) -> None:
    """The kill is mid-stream: the events after the last offset commit (the clean stop before the stream)
    up to the kill are in the topic twice, the second time at later offsets, with the same source.lsn."""
    for topic, count in run.figures["redelivered"].items():
        assert count >= 20, (topic, count)


def test_an_append_after_an_export_amid_the_redelivery_equals_select(run: Run, tmp_path) -> None:
    """The first export (Delta) ends amid what the killed worker wrote again, right before the redelivered
    create of a key change; ``--mode append`` folds the rest. The old key's row is gone from the table (the
    original moved it), so only the positions of the table's rows tell the redelivered events from new ones
    (as the fold of the whole log tells them): skipped, and the table equals PostgreSQL's ``SELECT``."""
    prefix = "pg"
    topic = f"{prefix}.public.ledger"
    split = split_in_redelivery(run.records[topic], lambda p: (p["source"].get("lsn"),))
    assert split is not None, "no redelivered event in " + topic
    table, first, second = export_then_append(run.log_dir, tmp_path / "OUT", topic, split)
    print(
        f"split at {split}: first {first['events_folded']} events, {first['events_redelivered']} "
        f"redelivered; append {second['events_folded']} events, {second['events_redelivered']} redelivered"
    )
    assert second["events_redelivered"] > 0, second
    header, rows = run.final["ledger"]
    problems = compare(table, header, rows, KINDS["ledger"])
    assert not problems, f"{topic} appended: {len(problems)} differences: " + "; ".join(problems[:12])

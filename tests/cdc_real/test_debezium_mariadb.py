"""``export --view cdc`` against a real MariaDB 10.11 captured by Debezium's MariaDB connector 3.5.0 in a real
Kafka Connect (issue 73): the folded table of every captured source table equals the database's own
``SELECT * FROM`` it at the end, column for column, and ``--ending-timestamp T`` equals the table as a
``SELECT`` read it at T. (The MySQL connector 3.6.1 refuses MariaDB 10.11: "should support SHOW BINARY LOG
STATUS".)

One module: one Kafka 4.4.0 broker, one MariaDB (``log_bin``, ``binlog_format=ROW``,
``binlog_row_image=FULL``), one Connect worker (``ConnectDistributed`` from the installed Kafka; Debezium's
mariadb plugin; JsonConverter with schemas) with two connectors on the same tables: ``maria`` with the
default ``decimal.handling.mode`` (precise: Connect ``Decimal`` bytes) and ``marias`` with ``string``; both
``skipped.operations=none``, each with its schema history topic (and the schema change topic named by the
prefix: not change events, left out of the tables).

The workload is test_debezium_postgres.py's, in MariaDB's SQL: a snapshot, inserts, updates, deletes with
tombstones, key changes (one onto a key deleted before), ``decimal``, ``double``, ``json`` (a ``longtext``
with a check in MariaDB), ``timestamp(6)``, a rolled-back transaction (nothing in the binlog), a ``TRUNCATE``,
``ADD COLUMN score int NOT NULL DEFAULT 0`` and a stream through a Connect worker killed with SIGKILL and
started again (it writes again, at later offsets, the events after its last offset commit: same binlog
file, position and row). Events' ``source.ts_ms`` have whole seconds (the binlog's timestamps): the point in
time is in the middle of a second in which nothing changes.
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
from connect_cluster import MARIADB_PLUGIN, ConnectWorker
from databases import MariaDBServer

pytestmark = pytest.mark.kafka

PREFIXES = ("maria", "marias")  # decimal.handling.mode precise (default), string
TABLES = ("customers", "sessions", "accounts", "ledger")
KINDS = {
    "customers": {
        "id": "int",
        "name": "text",
        "notes": "text",
        "price": "numeric",
        "ratio": "float",
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
CREATE TABLE customers (id int PRIMARY KEY, name varchar(200) NOT NULL, notes longtext, price decimal(12,3),
                        ratio double, doc json, updated timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6));
CREATE TABLE sessions (id int PRIMARY KEY, token varchar(100));
CREATE TABLE accounts (id int PRIMARY KEY, owner varchar(100), balance decimal(12,2));
CREATE TABLE ledger (id int PRIMARY KEY, amount decimal(12,2), memo varchar(200), big longtext);
CREATE TABLE marker (id int PRIMARY KEY, phase varchar(20));
"""


def big() -> str:
    return secrets.token_hex(2000)


def connector(
    prefix: str, db: MariaDBServer, cluster: kc.KafkaCluster, server_id: int, **extra: object
) -> dict:
    return {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": "127.0.0.1",
        "database.port": db.port,
        "database.user": db.USER,
        "database.password": db.PASSWORD,
        "database.server.id": server_id,
        "topic.prefix": prefix,
        "database.include.list": db.database,
        "table.include.list": ",".join(f"{db.database}.{t}" for t in (*TABLES, "marker")),
        "schema.history.internal.kafka.bootstrap.servers": cluster.bootstrap,
        "schema.history.internal.kafka.topic": f"schema-history.{prefix}",
        "skipped.operations": "none",
        "topic.creation.default.replication.factor": 1,
        "topic.creation.default.partitions": 1,
        "tasks.max": 1,
        **extra,
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("debezium-mariadb")
    result = Run()
    started, cpu = time.monotonic(), cpu_seconds()
    topics = [f"{p}.cdc.{t}" for p in PREFIXES for t in (*TABLES, "marker")]
    markers = [f"{p}.cdc.marker" for p in PREFIXES]
    db, cluster = MariaDBServer(), kc.KafkaCluster(root / "kafka", version=kc.NEWEST)
    with started_together(db, cluster):
        db.sql(SCHEMA)
        db.sql(
            "".join(
                f"INSERT INTO customers (id, name, notes, price, ratio, doc) VALUES ({i}, 'customer {i}', "
                f'\'{big()}\', {i}.125, {i}.5, \'{{"tier": {i % 3}, "tags": ["a", "b"]}}\');\n'
                for i in range(1, 21)
            )
            + "".join(f"INSERT INTO sessions VALUES ({i}, 'token {i}');\n" for i in range(1, 11))
            + "".join(f"INSERT INTO accounts VALUES ({i}, 'owner {i}', {i}00.25);\n" for i in range(1, 31))
            + "".join(
                f"INSERT INTO ledger VALUES ({i}, {i}.10, 'opening {i}', '{big()}');\n" for i in range(1, 11)
            )
        )
        worker = ConnectWorker(
            cluster, root / "connect", MARIADB_PLUGIN, config={"offset.flush.interval.ms": 600_000}
        ).start()
        worker.create_connector("maria", connector("maria", db, cluster, 5401))
        worker.create_connector(
            "marias", connector("marias", db, cluster, 5402, **{"decimal.handling.mode": "string"})
        )
        for name in PREFIXES:
            worker.wait_running(name)
        worker.wait_for_records("maria.cdc.customers")
        result.figures["first_event_s"] = round(time.monotonic() - started, 1)
        result.figures["load_at_first_event"] = round(os.getloadavg()[0], 1)

        db.sql(
            "".join(
                f"INSERT INTO customers (id, name, notes, price, ratio, doc) VALUES ({i}, 'customer {i}', "
                f"'{big()}', {i * 7}.001, {i}.25, '{{\"tier\": {i % 3}, \"note\": null}}');\n"
                for i in range(21, 41)
            )
            + "UPDATE customers SET name = CONCAT(name, ' (renamed)'), price = price + 1\n"
            + "WHERE id BETWEEN 1 AND 10;\n"
            + f"UPDATE customers SET notes = '{big()}' WHERE id = 3;\n"
            + "UPDATE customers SET doc = JSON_SET(doc, '$.tier', 9) WHERE id IN (2, 22);\n"
            + "UPDATE customers SET price = 999999999.999, ratio = -0.125 WHERE id = 4;\n"
            + "DELETE FROM customers WHERE id IN (11, 12, 13, 30);\n"
            + "UPDATE customers SET id = 100 WHERE id = 5;\n"
            + "DELETE FROM customers WHERE id = 14;\n"
            + "UPDATE customers SET id = 14, name = 'moved onto 14' WHERE id = 15;\n"
            + "START TRANSACTION;\nUPDATE customers SET name = 'rolled back' WHERE id < 20;\n"
            + "DELETE FROM customers WHERE id = 1;\n"
            + "INSERT INTO customers (id, name) VALUES (999, 'rolled back');\n"
            + "ROLLBACK;\n"
            + "TRUNCATE TABLE sessions;\n"
            + "".join(f"INSERT INTO sessions VALUES ({i}, 'after truncate {i}');\n" for i in range(5, 9))
            + "UPDATE sessions SET token = 'changed' WHERE id = 6;\n"
            + "".join(f"INSERT INTO accounts VALUES ({i}, 'owner {i}', {i}.99);\n" for i in range(31, 36))
            + "UPDATE accounts SET balance = balance * 2 WHERE id % 4 = 0;\n"
            + "INSERT INTO marker VALUES (1, 'phase 1');\n"
        )
        wait_marker(worker, markers, 1, topics)
        # the offsets committed (a clean stop commits them; the interval is longer than the test), so that
        # the kill below makes the worker write again every event after this point up to the kill
        worker.stop()
        result.t_ms = quiet_instant()
        result.at_t = {t: db.rows(t) for t in TABLES}
        after_quiet(result.t_ms)
        worker.start()
        for name in PREFIXES:
            worker.wait_running(name)

        db.sql(
            "ALTER TABLE accounts ADD COLUMN score int NOT NULL DEFAULT 0;\n"
            "UPDATE accounts SET score = 5 WHERE id IN (1, 2);\n"
            "UPDATE accounts SET owner = 'renamed' WHERE id = 3;\n"
            "INSERT INTO accounts (id, owner, balance) VALUES (40, 'after the column', 1.00);\n"
            "INSERT INTO accounts VALUES (41, 'with a score', 2.00, 7);\n"
        )
        next_id = 11
        live = list(range(1, 11))
        for chunk in range(LEDGER_CHUNKS):
            statements = []
            for _ in range(20):
                statements.append(
                    f"INSERT INTO ledger VALUES ({next_id}, {next_id}.50, 'entry {next_id}', '{big()}');"
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
            db.sql("\n".join(statements) + "\n")
            if chunk == KILL_AFTER_CHUNK:  # once the worker has written some of the stream: mid-stream
                worker.wait_for_records("maria.cdc.ledger", 10 + 20 * KILL_AFTER_CHUNK)
                worker.kill()
            if chunk == RESTART_AFTER_CHUNK:
                worker.start()
                for name in PREFIXES:
                    worker.wait_running(name)
        db.sql("INSERT INTO marker VALUES (2, 'phase 2');")
        wait_marker(worker, markers, 2, topics)
        worker.stop()
        result.final = {t: db.rows(t) for t in TABLES}
        for prefix in PREFIXES:
            result.records[f"{prefix}.cdc.ledger"] = kc.read_all(cluster.bootstrap, f"{prefix}.cdc.ledger", 0)
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
        topic: redeliveries(
            records, lambda p: (p["source"].get("file"), p["source"].get("pos"), p["source"].get("row"))
        )
        for topic, records in result.records.items()
    }
    print(f"\nMariaDB figures: {result.figures}")
    return result


def check(run: Run, prefix: str, table: str, *, at_t: bool = False, columns: list[str] | None = None) -> None:
    out = run.out_t if at_t else run.out
    header, rows = (run.at_t if at_t else run.final)[table]
    problems = compare(read_table(out / f"{prefix}.cdc.{table}"), header, rows, KINDS[table], columns=columns)
    assert not problems, f"{prefix}.cdc.{table}{' at T' if at_t else ''}: {len(problems)} differences: " + (
        "; ".join(problems[:12])
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
    """Exit 0: every event decoded, no topic refused; the schema change and history topics left out."""
    print(json.dumps({k: v for k, v in run.summary.items() if not k.startswith("_")}, indent=1)[:8000])
    assert run.summary["_exit"] == 0, run.summary["_stderr"]


def test_the_killed_worker_wrote_events_again(run: Run) -> None:
    """The events after the last offset commit (the clean stop before the stream) up to the kill are in the
    topic twice, the second time at later offsets, at the same binlog file, position and row."""
    for topic, count in run.figures["redelivered"].items():
        assert count >= 20, (topic, count)


def test_an_append_after_an_export_amid_the_redelivery_equals_select(run: Run, tmp_path) -> None:
    """The first export (Delta) ends amid what the killed worker wrote again, right before the redelivered
    create of a key change; ``--mode append`` folds the rest. The old key's row is gone from the table (the
    original moved it), so only the positions of the table's rows tell the redelivered events from new ones
    (as the fold of the whole log tells them): skipped, and the table equals MariaDB's ``SELECT``."""
    prefix = "maria"
    topic = f"{prefix}.cdc.ledger"
    split = split_in_redelivery(
        run.records[topic],
        lambda p: (p["source"].get("file"), p["source"].get("pos"), p["source"].get("row")),
    )
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

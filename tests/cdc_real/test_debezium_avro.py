"""``export --view cdc`` of Debezium events written in Avro by a real converter in Confluent's wire format,
through a real schema registry (issue 73): Apicurio's Kafka Connect converter
(``io.apicurio.registry.utils.converter.AvroConverter`` of ``apicurio-registry-utils-converter``
2.6.13.Final, the plugin ``scripts/ensure-debezium.sh`` installs from connect/apicurio-converter/pom.xml)
registering the schemas in Apicurio Registry 3.3.3 (KafkaSQL storage on the same broker, through its v2 API),
and the export reads the schemas offline from the registry's journal in the same log dir.

The converter's settings (serdes/serde-common in Apicurio's 2.6.13.Final, ``SerdeConfig``,
``AbstractKafkaSerDe.configure`` and ``Legacy4ByteIdHandler``):

- ``apicurio.registry.as-confluent=true``: the ``Legacy4ByteIdHandler``, a 4-byte id after the magic byte 0
  (Apicurio's own framing has an 8-byte id);
- ``apicurio.registry.use-id=contentId``: that id is the schema's content id, which is the id Apicurio's
  Confluent-compatible API gives and the one the journal's replay assigns (the default, ``globalId``, is
  another number: one per version);
- ``apicurio.registry.headers.enabled=false``: with headers (the default) the serializer writes the ids to
  record headers and the bare Avro body, no magic byte (``AbstractKafkaSerializer.serialize``).

The workload, in a real PostgreSQL 15 captured by Debezium's postgres connector 3.6.1.Final: a snapshot,
inserts, updates, deletes (each followed by a tombstone), a primary-key change, ``numeric(12,2)`` (Connect
``Decimal``), then ``ALTER TABLE ... ADD COLUMN score int NOT NULL DEFAULT 0`` (a second schema version)
and changes after it. The broker is then stopped cleanly, and the verdict is the database's own ``SELECT``.
"""

from __future__ import annotations

import json
import os
import struct
import time

import pytest
from cdc_verdict import Run, compare, cpu_seconds, export_cdc, read_table, started_together

import kafka_cluster as kc
from connect_cluster import POSTGRES_PLUGIN, ConnectWorker
from databases import PostgresServer
from registry_server import ApicurioRegistry

pytestmark = pytest.mark.kafka

CONVERTER_PLUGIN = "apicurio-registry-converter"  # scripts/ensure-debezium.sh's folder of the converter
PREFIX = "av"
TOPIC = f"{PREFIX}.public.customers"
MARKER = f"{PREFIX}.public.marker"
KINDS = {"id": "int", "name": "text", "balance": "numeric", "note": "text", "score": "int"}

SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, balance numeric(12,2), note text);
CREATE TABLE marker (id int PRIMARY KEY, phase text);
"""


def converter_config(registry: ApicurioRegistry) -> dict[str, object]:
    """The worker's key and value converters: Apicurio's AvroConverter in Confluent's framing."""
    settings = {
        "apicurio.registry.url": f"{registry.url}/apis/registry/v2",
        "apicurio.registry.auto-register": "true",
        "apicurio.registry.as-confluent": "true",
        "apicurio.registry.use-id": "contentId",
        "apicurio.registry.headers.enabled": "false",
    }
    out: dict[str, object] = {}
    for side in ("key", "value"):
        out[f"{side}.converter"] = "io.apicurio.registry.utils.converter.AvroConverter"
        out.update({f"{side}.converter.{k}": v for k, v in settings.items()})
    return out


def connector(pg: PostgresServer) -> dict[str, object]:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1",
        "database.port": pg.port,
        "database.user": "postgres",
        "database.password": "unused",
        "database.dbname": pg.database,
        "topic.prefix": PREFIX,
        "slot.name": "dbz_av",
        "publication.name": "dbz_av",
        "table.include.list": "public.customers,public.marker",
        "topic.creation.default.replication.factor": 1,
        "topic.creation.default.partitions": 1,
        "tasks.max": 1,
    }


def wait_phase(worker: ConnectWorker, phase: int) -> None:
    """Until the marker topic holds ``phase`` events (one marker row inserted per phase, after the phase's
    changes: the connector streams in commit order) and the topics' ends stay put."""
    worker.wait_for_records(MARKER, phase)
    worker.wait_caught_up([TOPIC, MARKER], settle=1.5)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("debezium-avro")
    result = Run()
    started, cpu = time.monotonic(), cpu_seconds()
    pg, cluster = PostgresServer(), kc.KafkaCluster(root / "kafka", version=kc.NEWEST)
    with started_together(pg, cluster):
        registry = ApicurioRegistry(root / "registry", kafkasql=cluster.bootstrap)
        worker = ConnectWorker(
            cluster,
            root / "connect",
            POSTGRES_PLUGIN,
            CONVERTER_PLUGIN,
            config=converter_config(registry),
        )
        # the worker starts while the registry reads its journal back: the converters ask the registry
        # nothing before the connector's task converts its first event
        with registry.start(wait=False), worker:
            registry.wait_ready()
            pg.psql(
                SCHEMA
                + "".join(
                    f"INSERT INTO customers VALUES ({i}, 'customer {i}', {i}00.25, 'snapshot {i}');\n"
                    for i in range(1, 21)
                )
            )
            # one schema under two subjects first: one content id and two global ids (3.3.3 draws both from
            # one sequence: the next new content's id is 3, not 2), which the journal's replay must give too
            for subject in ("unrelated-a", "unrelated-b"):
                registry.request("POST", f"/subjects/{subject}/versions", {"schema": json.dumps("string")})
            worker.create_connector(PREFIX, connector(pg))
            worker.wait_running(PREFIX)
            worker.wait_for_records(TOPIC)
            result.figures["first_event_s"] = round(time.monotonic() - started, 1)
            result.figures["load_at_first_event"] = round(os.getloadavg()[0], 1)
            pg.psql(
                "".join(
                    f"INSERT INTO customers VALUES ({i}, 'customer {i}', {i}.99, NULL);\n"
                    for i in range(21, 31)
                )
                + "UPDATE customers SET name = name || ' (renamed)', balance = balance + 1 "
                + "WHERE id BETWEEN 1 AND 8;\n"
                + "DELETE FROM customers WHERE id IN (9, 10, 25);\n"
                + "UPDATE customers SET id = 100 WHERE id = 11;\n"
                + "INSERT INTO marker VALUES (1, 'phase 1');\n"
            )
            wait_phase(worker, 1)
            # a column added with a default: the value schema's second version; rows changed after it
            pg.psql(
                "ALTER TABLE customers ADD COLUMN score int NOT NULL DEFAULT 0;\n"
                "UPDATE customers SET score = 5 WHERE id IN (1, 2);\n"
                "UPDATE customers SET note = 'after the column' WHERE id = 3;\n"
                "INSERT INTO customers (id, name, balance) VALUES (40, 'after the column', 1.00);\n"
                "INSERT INTO customers VALUES (41, 'with a score', 2.00, NULL, 7);\n"
                "DELETE FROM customers WHERE id = 12;\n"
                "INSERT INTO marker VALUES (2, 'phase 2');\n"
            )
            wait_phase(worker, 2)
            worker.stop()
            result.final = {"customers": pg.rows("customers")}
            result.records[TOPIC] = kc.read_all(cluster.bootstrap, TOPIC, 0)
            # the registry's own answers: every version of the topic's subjects, its id on the Confluent API
            # and its content id on Apicurio's own
            v3 = f"{registry.url}/apis/registry/v3/groups/default/artifacts"
            for subject in (f"{TOPIC}-key", f"{TOPIC}-value"):
                versions = registry.get(f"/subjects/{subject}/versions")
                result.figures.setdefault("ids", {})[subject] = [
                    registry.get(f"/subjects/{subject}/versions/{v}")["id"] for v in versions
                ]
                result.figures.setdefault("content_ids", {})[subject] = [
                    registry.get(f"/{subject}/versions/{v}", base=v3)["contentId"] for v in versions
                ]
        cluster.stop()
        result.log_dir = cluster.broker_nodes[0].log_dirs[0]
    result.figures["workload_s"] = round(time.monotonic() - started, 1)
    result.out = root / "OUT"
    result.summary = export_cdc(result.log_dir, result.out)
    result.figures["module_setup_s"] = round(time.monotonic() - started, 1)
    result.figures["module_setup_cpu_s"] = round(cpu_seconds() - cpu, 1)
    result.figures["export_s"] = result.summary["_seconds"]
    print(f"\nAvro (Apicurio converter) figures: {result.figures}")
    return result


def test_the_converter_wrote_confluent_framing_with_the_registry_ids(run: Run) -> None:
    """Every key and value: magic byte 0, then a 4-byte id that the registry's Confluent-compatible API
    gives for a version of the topic's key or value subject (content ids, not Apicurio's global ids); the
    value subject has two versions (the column added)."""
    ids = run.figures["ids"]
    assert len(ids[f"{TOPIC}-value"]) == 2, ids
    assert min(i for versions in ids.values() for i in versions) == 3, ids  # after the shared content
    seen: dict[str, set[int]] = {"key": set(), "value": set()}
    for offset, key, value, *_ in run.records[TOPIC]:
        for side, data in (("key", key), ("value", value)):
            if data is None:
                continue
            assert data[0] == 0 and len(data) > 5, (offset, side, data[:8])
            seen[side].add(struct.unpack(">i", data[1:5])[0])
    assert ids == run.figures["content_ids"], run.figures
    assert seen["key"] <= set(ids[f"{TOPIC}-key"]), (seen, ids)
    assert seen["value"] == set(ids[f"{TOPIC}-value"]), (seen, ids)


def test_table_equals_select(run: Run) -> None:
    header, rows = run.final["customers"]
    problems = compare(read_table(run.out / TOPIC), header, rows, KINDS)
    assert not problems, f"{TOPIC}: {len(problems)} differences: " + "; ".join(problems[:12])


def test_the_export_summary(run: Run) -> None:
    print(json.dumps({k: v for k, v in run.summary.items() if not k.startswith("_")}, indent=1)[:6000])
    print(run.summary["_stderr"])
    assert run.summary["_exit"] == 0

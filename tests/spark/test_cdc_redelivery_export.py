"""``export --view cdc`` on topics as the real connectors write them (issue 73; tests/debezium_sources.py):
a redelivery after Connect was killed mid-stream, rows untouched since ``ADD COLUMN ... NOT NULL DEFAULT 0``,
and a log dir that also holds typed topics that are not Debezium's (a Protobuf topic, an Avro topic whose
schema is a primitive), with the registry's ``_schemas`` in another broker's log dir (``--schemas``).
The oracle is the table the database holds, written out by hand."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import debezium_sources as ds
from debezium_sources import Position
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch
from logdoctor.spark.cdc_job import run_cdc_export

pytestmark = [pytest.mark.spark]

BIG = "t" * 3824


def table(out: Path, topic: str = ds.TOPIC) -> pa.Table:
    return pa.concat_tables(pq.read_table(f) for f in sorted((out / topic).glob("*.parquet")))


def pg(lsn: int, last_commit: int) -> Position:
    return Position(lsn=lsn, last_commit=last_commit)


def test_a_redelivered_stale_delete_neither_undoes_the_row_nor_loses_its_toast(spark, tmp_path) -> None:
    changes = [
        ds.upsert("c", ds.row(1, "a", BIG), pg(200, 150)),
        ds.upsert("c", ds.row(2, "b", "short"), pg(300, 250)),
        *ds.delete(2, pg(400, 350)),
        *ds.key_change(1, ds.row(2, "a2", ds.PLACEHOLDER), pg(500, 450)),
        *ds.delete(2, pg(400, 350)),  # Connect killed: redelivered from the delete on
        *ds.key_change(1, ds.row(2, "a2", ds.PLACEHOLDER), pg(500, 450)),
        ds.upsert("u", ds.row(2, "a3", ds.PLACEHOLDER), pg(600, 550)),
    ]
    logs, other = mixed_logs(tmp_path, changes)  # beside a Protobuf and an Avro topic; the registry elsewhere
    options = {"view": "cdc", "schemas": str(other)}
    result = run_cdc_export(spark, [str(logs)], str(tmp_path / "OUT"), options=options)
    got = table(tmp_path / "OUT")
    assert got.select(["id", "name", "note"]).to_pylist() == [{"id": 2, "name": "a3", "note": BIG}]
    stats = result.typed.stats[ds.TOPIC]
    assert stats.events_redelivered == 5 and stats.partial_rows == 0
    assert any("5 redelivered events not applied" in line for line in result.typed.lines())
    summary = result.typed.to_json()
    assert summary["topics"][ds.TOPIC]["events_redelivered"] == 5
    # the other topics: typed by the registry in the other log dir, named as skipped
    assert set(summary["left_out"]) == {"pings", "names"}
    assert "records without op, before, after and source" in summary["left_out"]["pings"]
    assert "of type string, not records" in summary["left_out"]["names"]


def test_rows_untouched_since_add_column_not_null_default_hold_the_default(spark, tmp_path) -> None:
    """``ALTER TABLE items ADD COLUMN score int NOT NULL DEFAULT 0`` after rows 1 and 2 were written: the
    later events' schema has ``score`` {"type":"int32","optional":false,"default":0}; the database holds 0 in
    every row no later event touched."""
    changes = [
        ds.upsert("c", ds.row(1, "a", None), pg(100, 90)),
        ds.upsert("c", ds.row(2, "b", "n"), pg(200, 190)),
        ds.upsert("c", ds.row(4, "d", None), pg(250, 240)),
        # the ALTER TABLE: later events carry score
        ds.upsert("u", ds.row(2, "b2", "n", score=5), pg(300, 290)),
        ds.upsert("c", ds.row(3, "c", None, score=0), pg(400, 390)),
        *ds.delete(4, pg(450, 440), with_score=True),
    ]
    ds.write_topic(tmp_path / "logs", "postgresql", changes)
    result = run_cdc_export(spark, [str(tmp_path / "logs")], str(tmp_path / "OUT"), options={"view": "cdc"})
    got = table(tmp_path / "OUT").select(["id", "name", "note", "score"]).to_pylist()
    assert got == [
        {"id": 1, "name": "a", "note": None, "score": 0},
        {"id": 2, "name": "b2", "note": "n", "score": 5},
        {"id": 3, "name": "c", "note": None, "score": 0},
    ]
    assert result.typed.stats[ds.TOPIC].default_cells == 1


# --- a log dir of Debezium and other typed topics, the registry elsewhere ----------------------------------

PROTO = """syntax = "proto3";
package shop;

message Ping {
  map<string, string> tags = 1;
  message Inner {
    string text = 1;
  }
  Inner inner = 2;
}
"""


def _write(folder: Path, records: list[tuple[bytes | None, bytes | None]]) -> None:
    folder.mkdir(parents=True)
    specs = [RecordSpec(value=v, key=k, timestamp=1_700_000_000_000) for k, v in records]
    (folder / "00000000000000000000.log").write_bytes(build_record_batch(specs, base_offset=0))


def _schema_record(subject: str, schema_id: int, text: str, schema_type: str | None) -> tuple[bytes, bytes]:
    """A SCHEMA record as Schema Registry's KafkaStore writes it (``schemaType`` left out for Avro)."""
    key = {"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1}
    value: dict = {"subject": subject, "version": 1, "id": schema_id}
    if schema_type:
        value["schemaType"] = schema_type
    value.update({"schema": text, "deleted": False})
    return json.dumps(key, separators=(",", ":")).encode(), json.dumps(value, separators=(",", ":")).encode()


def _framed(schema_id: int, payload: bytes) -> bytes:
    return b"\x00" + struct.pack(">i", schema_id) + payload


def mixed_logs(root: Path, changes: list[ds.Change]) -> tuple[Path, Path]:
    """``root/logs``: the Debezium topic of ``changes``, ``pings`` (Protobuf, message index [0]) and ``names``
    (Avro ``"string"``); ``root/other``: another broker's log dir holding ``_schemas``."""
    logs, other = root / "logs", root / "other"
    ds.write_topic(logs, "postgresql", changes)
    inner = b"\x0a\x02hi"
    _write(logs / "pings-0", [(b"k", _framed(1, b"\x00" + b"\x12" + bytes([len(inner)]) + inner))] * 3)
    _write(logs / "names-0", [(None, _framed(2, b"\x0a" + b"hello"))] * 2)  # Avro: zig-zag length, bytes
    _write(
        other / "_schemas-0",
        [
            _schema_record("pings-value", 1, PROTO, "PROTOBUF"),
            _schema_record("names-value", 2, '"string"', None),
        ],
    )
    return logs, other


def test_cli_folds_debezium_skips_the_others_and_takes_schemas_alone(tmp_path) -> None:
    changes = [
        ds.upsert("c", ds.row(1, "a", None), pg(100, 90)),
        ds.upsert("u", ds.row(1, "b", None), pg(200, 190)),
    ]
    logs, other = mixed_logs(tmp_path, changes)
    out = tmp_path / "OUT"
    proc = subprocess.run(
        [sys.executable, "-m", "logdoctor", "export", str(logs), "--view", "cdc", "--schemas", str(other),
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"CDC: {ds.TOPIC}: 2 events folded into 1 rows" in proc.stdout
    # typed by the registry in the other log dir (a Protobuf record, an Avro string), named as skipped
    assert "CDC: pings: skipped, no table: its values are records without op" in proc.stdout
    assert "CDC: names: skipped, no table: its values are of type string" in proc.stdout
    assert table(out).select(["id", "name"]).to_pylist() == [{"id": 1, "name": "b"}]
    assert not (out / "pings").exists() and not (out / "names").exists()

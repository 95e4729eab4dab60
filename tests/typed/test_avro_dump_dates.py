"""``dump --print-data`` of Avro timestamps and dates past year 9999 (issue 75 item 8): a
``timestamp-millis`` of 2**50 ms and a ``date`` of 3,000,000 days are valid Avro; Python's datetime holds
neither, and dump exited 70. They are shown as ISO-8601 text with an expanded year (``+37648-...``),
checked against numpy's ``datetime64``, an independent calendar; the typed table keeps them as Arrow's
timestamp (µs) and date32, which hold them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import numpy as np
from crafted_topics import framed, schema_record, write_partition
from typer.testing import CliRunner

from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app

SCHEMA = {
    "type": "record",
    "name": "Event",
    "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    ],
}


def _payload(at: int, day: int, local: int) -> bytes:
    buf = io.BytesIO()
    parsed = fastavro.parse_schema(
        {**SCHEMA, "fields": [{"name": f["name"], "type": f["type"]["type"]} for f in SCHEMA["fields"]]}
    )
    fastavro.schemaless_writer(buf, parsed, {"at": at, "day": day, "local": local})
    return buf.getvalue()


def _iso(value: np.datetime64) -> str:
    text = str(value)
    year = text.split("-", 1)[0] if not text.startswith("-") else "-" + text[1:].split("-", 1)[0]
    return ("+" + text) if len(year) > 4 and not text.startswith("-") else text


def test_dates_past_9999_are_iso_text(tmp_path: Path) -> None:
    write_partition(tmp_path, "_schemas", 0, [schema_record("events-value", 1, 1, SCHEMA, "AVRO")])
    rows = [(2**50, 3_000_000, 2**62), (1_700_000_000_123, 19_000, 0)]
    segment = write_partition(tmp_path, "events", 0, [(None, framed(1, _payload(*r))) for r in rows])
    result = CliRunner().invoke(app, ["dump", "--json", "--print-data", str(segment)])
    assert result.exit_code == 0, result.output
    shown = [
        json.loads(line)["decoded"]["value"] for line in result.stdout.splitlines() if '"record"' in line
    ]
    assert len(shown) == 2
    for (at, day, local), value in zip(rows, shown, strict=True):
        assert value["at"] == _iso(np.datetime64(at, "ms")) + "Z"
        assert value["day"] == _iso(np.datetime64(day, "D"))
        expected_local = _iso(np.datetime64(local, "us"))
        if expected_local.endswith(".000000"):
            expected_local = expected_local[:-3]
        assert value["local"] == expected_local
    assert shown[0]["at"] == "+37648-05-06T22:07:22.624Z"

"""``dump --print-data`` of ../shared/typed's data topics: keys and values decoded with the log dir's
``_schemas`` (or ``--schemas``), compared with facts/records.jsonl, which the Apache ``avro`` package,
protoc-compiled classes and json + jsonschema decoded (not the project's decoders)."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import typed_facts
from imported import imported_by
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app

# the first records of each partition, and every record whose fact is not a plain decode
FIRST = 6


def _dump(*args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, ["dump", "--json", "--print-data", *args])
    assert result.exit_code in (0, 1), result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _records(folder: Path, *more: str) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for log in sorted(folder.glob("*.log")):
        for ev in _dump(str(log), *more):
            if ev["type"] == "record" and "control_type" not in (ev.get("decoded") or {}):
                out[ev["offset"]] = ev
    return out


def _same(shown: Any, fact: Any, where: str) -> None:
    """The dump's JSON equals the fact's canonical JSON, but for bytes (the dump's base64, the facts'
    hex), Protobuf's unset oneof members (null in the dump, left out of the facts) and JSON Schema numbers
    (float64 by the type mapping, an integer in the JSON text)."""
    if isinstance(fact, dict):
        assert isinstance(shown, dict), where
        for k, v in fact.items():
            assert k in shown, f"{where}.{k} missing"
            _same(shown[k], v, f"{where}.{k}")
        extra = {k for k in shown if k not in fact}
        assert extra <= typed_facts.ONEOF_MEMBERS and all(shown[k] is None for k in extra), (where, extra)
    elif isinstance(fact, list):
        assert isinstance(shown, list) and len(shown) == len(fact), where
        for i, (a, b) in enumerate(zip(shown, fact, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(fact, str) and isinstance(shown, str) and shown != fact:
        assert base64.b64decode(shown, validate=True).hex() == fact, where
    elif isinstance(shown, float) and type(fact) is int:  # a JSON Schema "number" written as 882: float64
        assert shown == fact, f"{where}: {shown!r} != {fact!r}"
    else:
        assert shown == fact and type(shown) is type(fact), f"{where}: {shown!r} != {fact!r}"


def _chosen(topic: str, partition: int) -> list[dict[str, Any]]:
    facts = [f for f in typed_facts.data_records(topic) if f["partition"] == partition]
    return [f for i, f in enumerate(facts) if i < FIRST or f["decode_status"] != "decoded"]


PARTITIONS = [
    ("orders", 0),
    ("orders", 1),
    ("payments", 0),
    ("clicks", 0),
    ("legacy", 0),
    ("mixed", 0),
    ("dbserver1.inventory.customers", 0),
    ("dbserver1.inventory.orders", 0),
]


@pytest.mark.parametrize(("topic", "partition"), PARTITIONS, ids=[f"{t}-{p}" for t, p in PARTITIONS])
def test_print_data_decodes_as_the_facts(topic: str, partition: int) -> None:
    shown = _records(typed_facts.logs() / f"{topic}-{partition}")
    chosen = _chosen(topic, partition)
    assert chosen
    for fact in chosen:
        ev = shown[fact["offset"]]
        where = f"{topic}-{partition}@{fact['offset']}"
        assert ev["decoder"] == "typed", where
        d = ev["decoded"]
        _same(d["key"], fact["key_decoded"], where + " key")
        status = fact["decode_status"]
        if status == "side_table":
            assert d["value"] is None and d["reason"] == fact["reason"], (where, d)
            continue
        assert "reason" not in d, (where, d)
        _same(d["value"], fact["value_decoded"], where + " value")
        if status == "tombstone":
            assert d["value"] is None, where
        if fact.get("schema_id") is not None and status != "tombstone":
            assert d["schema_id"] == fact["schema_id"], where
        assert d.get("schema_deleted", False) is (status == "decoded_deleted_schema"), where
        if fact.get("message_indexes") not in (None, [0]):
            assert d["message_indexes"] == fact["message_indexes"], where


def test_the_side_tables_ids_are_named() -> None:
    shown = _records(typed_facts.logs() / "mixed-0")
    for fact in typed_facts.data_records("mixed"):
        if fact["reason"] in ("unknown_schema_id", "schema_hard_deleted"):
            assert shown[fact["offset"]]["decoded"]["schema_id"] == fact["schema_id"], fact["offset"]


def test_schemas_from_another_place(tmp_path: Path) -> None:
    """A partition folder copied away from its log dir: untyped, until --schemas names the _schemas
    partition folder (here a copy under another topic name)."""
    logs = typed_facts.logs()
    shutil.copytree(logs / "payments-0", tmp_path / "dir" / "payments-0")
    shutil.copytree(logs / "_schemas-0", tmp_path / "schemas_backup-0")
    folder = tmp_path / "dir" / "payments-0"
    plain = _records(folder)
    assert all("decoded" not in ev for ev in plain.values())
    typed = _records(folder, "--schemas", str(tmp_path / "schemas_backup-0"))
    facts = typed_facts.data_records("payments")
    assert len(typed) == len(facts)
    for fact in facts[:FIRST] + [f for f in facts if f.get("message_indexes") == [1]][:3]:
        _same(typed[fact["offset"]]["decoded"]["value"], fact["value_decoded"], str(fact["offset"]))


def test_schemas_that_hold_no_log_is_a_usage_error(tmp_path: Path) -> None:
    log = next((typed_facts.logs() / "orders-0").glob("*.log"))
    result = CliRunner().invoke(app, ["dump", "-p", str(log), "--schemas", str(tmp_path / "nothing")])
    assert result.exit_code == 64


def test_text_output_shows_the_decoded_value_and_the_reason() -> None:
    log = next((typed_facts.logs() / "mixed-0").glob("*.log"))
    result = CliRunner().invoke(app, ["dump", "--print-data", str(log)])
    unknown = next(f for f in typed_facts.data_records("mixed") if f["reason"] == "unknown_schema_id")
    line = next(x for x in result.stdout.splitlines() if f"| offset {unknown['offset']} " in x)
    assert '"reason":"unknown_schema_id"' in line and f'"schema_id":{unknown["schema_id"]}' in line


def test_no_registry_code_without_a_schemas_partition(tmp_path: Path) -> None:
    """A data topic's dump imports none of the registry's code when its log dir holds no _schemas; the
    same dump in the typed log dir does (so the guard can tell the difference)."""
    shutil.copytree(typed_facts.logs() / "clicks-0", tmp_path / "clicks-0")
    log = next((tmp_path / "clicks-0").glob("*.log"))
    modules = imported_by("dump", "--print-data", str(log))
    assert not {m for m in modules if m.startswith("logdoctor.formats.registry")}
    assert "logdoctor.cli.dump.typed" not in modules
    here = next((typed_facts.logs() / "clicks-0").glob("*.log"))
    assert "logdoctor.formats.registry.json_schema" in imported_by("dump", "--print-data", str(here))

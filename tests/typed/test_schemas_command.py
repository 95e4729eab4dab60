"""`logdoctor schemas` on the typed data set's log dir (text and --json against facts/counts.json), and
`dump`'s decoding of ``_schemas`` records (against the ``_schemas`` lines of facts/records.jsonl)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import registry_facts as rf
from typer.testing import CliRunner

from logdoctor.cli.commands import app
from logdoctor.formats.internal import decode_schemas_record, decoder_by_name, decoder_for_topic
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.registry.store import decode_store_record
from logdoctor.formats.writer import build_record_batch

runner = CliRunner()
SHOWN = {"live": "live", "soft_deleted": "soft-deleted", "hard_deleted": "hard-deleted"}


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args], terminal_width=250)


def test_schemas_json_is_the_facts() -> None:
    rf.require()
    r = invoke("schemas", rf.LOG_DIR, "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    want = rf.counts()["registry"]
    assert got["sources"] == [str(rf.LOG_DIR / "_schemas-0")]
    by_id = {str(row["id"]): row for row in got["versions"]}
    assert len(got["versions"]) == len(by_id) == len(want["schemas"])  # one version per id here
    for sid, fact in want["schemas"].items():
        row = by_id[sid]
        assert (row["subject"], row["version"], row["type"]) == (
            fact["subject"],
            fact["version"],
            fact["schemaType"],
        )
        assert row["status"] == row["schema_status"] == fact["status"]
        assert (row["guid"], row["references"]) == (fact["guid"], fact["references"])
    assert got["subjects"] == want["subjects_live"]
    assert {"None": got["compatibility"]["global"], **got["compatibility"]["subjects"]} == want["config"]
    assert {"None": got["mode"]["global"], **got["mode"]["subjects"]} == want["mode"]
    assert got["notes"] == []


def test_schemas_text_lists_every_id() -> None:
    rf.require()
    r = invoke("schemas", rf.LOG_DIR)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        f"Schema Registry of {rf.LOG_DIR / '_schemas-0'}: 13 schema id(s), 9 subject(s)"
    )
    for sid, fact in rf.counts()["registry"]["schemas"].items():
        row = next(ln.split() for ln in lines[2:] if ln.split()[:1] == [sid])
        assert row[1:5] == [fact["subject"], str(fact["version"]), fact["schemaType"], SHOWN[fact["status"]]]
        assert row[5] == (fact["guid"] or "-")
        refs = " ".join(f"{x['name']} -> {x['subject']} v{x['version']}" for x in fact["references"])
        assert " ".join(row[6:-1]) == (refs or "-") and row[-1] == "-"  # the last column: rules (none here)
    config = rf.counts()["registry"]["config"]
    assert f"compatibility: {config['None']} (global); clicks-value {config['clicks-value']};" in r.stdout


def test_schemas_of_a_store_given_apart(tmp_path: Path) -> None:
    rf.require()
    copy = tmp_path / "kept" / "schemas-backup-0"
    shutil.copytree(rf.LOG_DIR / "_schemas-0", copy)
    r = invoke("schemas", rf.LOG_DIR / "orders-0", "--schemas", copy, "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert got["sources"] == [str(copy)] and len(got["versions"]) == 13
    r = invoke("schemas", rf.LOG_DIR / "orders-0")
    assert r.exit_code == 0 and "note: no _schemas partition found among the inputs" in r.stdout
    assert invoke("schemas", tmp_path / "missing").exit_code == 66


def test_dump_decodes_schemas_records() -> None:
    rf.require()
    r = invoke("dump", "--json", "--print-data", rf.LOG_DIR / "_schemas-0" / "00000000000000000000.log")
    assert r.exit_code in (0, 1), r.output
    events = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    assert events[0]["decoder"] == "schemas"
    records = [e for e in events if e["type"] == "record"]
    want = [x for x in rf.facts() if x["topic"] == "_schemas"]
    assert [e["offset"] for e in records] == [x["offset"] for x in want]
    for e, x in zip(records, want, strict=True):
        assert e["decoder"] == "schemas" and e["decoded"]["keytype"] == x["key_decoded"]["keytype"]
        assert e["decoded"]["key"] == x["key_decoded"]
        value = e["decoded"]["value"]
        if x["offset"] in (10, 21):  # see test_registry_store.test_decode_store_record_is_the_facts_json
            value = {**value, "deleted": True}
        assert value == x["value_decoded"]
    text = invoke("dump", "--print-data", rf.LOG_DIR / "_schemas-0" / "00000000000000000000.log").stdout
    assert "decoder schemas" in text.splitlines()[0]
    assert (
        'decoded {"keytype":"CONFIG","key":{"keytype":"CONFIG","magic":0},"value":{"compatibilityLevel"'
        in text
    )


def test_the_schemas_decoder_by_topic_and_by_name(tmp_path: Path) -> None:
    assert decoder_for_topic("_schemas") is decoder_for_topic("_schemas-0") is decode_schemas_record
    assert decoder_by_name("schemas") is decode_schemas_record and decoder_for_topic("schemas-0") is None
    record = (b'{"keytype":"MODE","magic":0}', b'{"mode":"READONLY"}')
    assert decode_schemas_record(*record) == decode_store_record(*record)
    assert decode_store_record(*record) == {
        "keytype": "MODE",
        "key": {"keytype": "MODE", "magic": 0},
        "value": {"mode": "READONLY"},
    }
    # a record that is not JSON: a decode error on its line, the dump goes on
    folder = tmp_path / "_schemas-0"
    folder.mkdir()
    specs = [
        RecordSpec(key=b"not json", value=b"{}", timestamp=1_700_000_000_000),
        RecordSpec(key=b'{"keytype":"NOOP","magic":0}', value=None, timestamp=1_700_000_000_000),
    ]
    log = folder / "00000000000000000000.log"
    log.write_bytes(build_record_batch(specs, base_offset=0))
    r = invoke("dump", "--json", "--print-data", log)
    records = [json.loads(x) for x in r.stdout.splitlines() if '"type":"record"' in x]
    assert "decode_error" in records[0] and records[1]["decoded"]["keytype"] == "NOOP"

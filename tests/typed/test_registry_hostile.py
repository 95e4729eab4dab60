"""A hostile ``_schemas`` topic (issue 75): a key nested 50,000 levels deep (items 6) and a registry of many
subjects and many deletes (item 14). The rules are Schema Registry's: its reader logs a record it cannot
deserialize and goes on (confluentinc/schema-registry ``KafkaStoreReaderThread.java`` ``doWork``; Jackson's
``StreamReadConstraints`` refuse nesting past 1,000 levels), and a DELETE_SUBJECT marks that subject's
versions (``KafkaStoreMessageHandler.java`` ``handleUpdate``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import crafted_topics as ct
import pytest
from typer.testing import CliRunner

from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.formats.registry import store
from logdoctor.formats.registry.store import LIVE, SOFT_DELETED, decode_store_record, replay_records

DEPTH = 50_000
DEEP_KEY = b'{"keytype":"SCHEMA","subject":' + b"[" * DEPTH + b"]" * DEPTH + b',"version":1,"magic":1}'
DEEP_VALUE = b'{"id":2,"schema":' + b"[" * DEPTH + b"]" * DEPTH + b"}"
SCHEMA = {"type": "object", "title": "T", "properties": {"n": {"type": "integer"}}}


def _j(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def test_a_deep_key_or_value_is_skipped_and_named() -> None:
    key, value = ct.schema_record("t-value", 1, 1, SCHEMA)
    skey = _j({"keytype": "SCHEMA", "subject": "u-value", "version": 1, "magic": 1})
    reg = replay_records([(0, key, value), (1, DEEP_KEY, value), (2, skey, DEEP_VALUE)])
    assert list(reg.schemas) == [1] and reg.schemas[1].status == LIVE
    assert len(reg.errors) == 2
    assert "offset 1: the key is not a JSON object (nested too deeply): skipped" in reg.errors[0]
    assert "offset 2: the value of a SCHEMA key is not a JSON object (nested too deeply)" in reg.errors[1]


def test_dump_of_a_deep_store_record_is_a_corrupt_record() -> None:
    from logdoctor.errors import CorruptRecordError

    with pytest.raises(CorruptRecordError, match="nested too deeply"):
        decode_store_record(DEEP_KEY, None)


@pytest.fixture(scope="module")
def deep_store(tmp_path_factory) -> Path:
    logs = tmp_path_factory.mktemp("deep") / "kafka-logs"
    ct.write_partition(logs, "_schemas", 0, [ct.schema_record("t-value", 1, 1, SCHEMA), (DEEP_KEY, b"{}")])
    ct.write_partition(logs, "t", 0, [(b"k", ct.framed(1, b'{"n": 7}'))])
    return logs


def test_schemas_and_dump_read_past_a_deep_key(deep_store: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["schemas", str(deep_store), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)
    assert [v["id"] for v in got["versions"]] == [1]
    assert any("nested too deeply" in n for n in got["notes"])
    r = runner.invoke(app, ["dump", "--json", "--print-data", str(deep_store / "t-0" / ct.SEGMENT)])
    assert r.exit_code == 0, r.output
    (record,) = [json.loads(x) for x in r.stdout.splitlines() if x.startswith('{"type":"record"')]
    assert record["decoded"] == {"key": "k", "value": {"n": 7}, "schema_id": 1}
    r = runner.invoke(app, ["dump", "--json", "--print-data", str(deep_store / "_schemas-0" / ct.SEGMENT)])
    assert r.exit_code in (0, 1), r.output  # the deep record is shown as not decoded, the dump goes on
    assert "Traceback" not in r.output and "RecursionError" not in r.output


# --- item 14: time linear in the records -------------------------------------------------------------


def _many_deletes(subjects: int, deletes: int) -> list[tuple[int, bytes, bytes]]:
    records = []
    for i in range(subjects):
        records.append(ct.schema_record(f"s{i}", 1, i + 1, '"string"', "AVRO"))
    for i in range(deletes):
        records.append(ct.delete_subject_record(f"s{i}", 1))
    for i in range(0, deletes, 2):
        records.append(ct.clear_subject_record(f"s{i}"))
    return [(offset, k, v) for offset, (k, v) in enumerate(records)]  # type: ignore[misc]


class _Budget(Exception):
    pass


def _lines_run(records: list[tuple[int, bytes, bytes]], budget: int) -> int:
    """The lines of store.py the replay of ``records`` runs (sys.settrace's line events: every loop turn
    over the store counts, whatever structure holds it); stops with _Budget past ``budget``."""
    count = 0
    path = store.__file__

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count > budget:
                raise _Budget
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == path else None

    sys.settrace(tracer)
    try:
        replay_records(records)
    finally:
        sys.settrace(None)
    return count


def test_a_delete_touches_only_its_subject() -> None:
    """3,000 subjects, 1,500 DELETE_SUBJECT and 750 CLEAR_SUBJECT: a replay that walks the whole store per
    delete runs millions of lines (S x D); one that walks the subject's versions a bounded number per
    record. The budget (200 lines a record) stops the quadratic replay early (it would "time out")."""
    small = _many_deletes(300, 150)
    big = _many_deletes(3000, 1500)
    per_record_small = _lines_run(small, 10**9) / len(small)
    try:
        lines = _lines_run(big, 200 * len(big))
    except _Budget:
        pytest.fail(f"the replay of {len(big)} records ran past {200 * len(big)} lines: S x D")
    assert lines / len(big) < 1.5 * per_record_small  # ten times the records, the same lines per record
    reg = replay_records(big)
    assert sum(s.status == SOFT_DELETED for s in reg.schemas.values()) == 750  # deleted, not cleared
    assert len(reg.schemas) == 3000 and len(reg.subject_versions) == 3000 - 750

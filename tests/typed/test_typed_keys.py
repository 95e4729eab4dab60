"""Issue 75 item 3: a topic keyed by Kafka's ``LongSerializer`` (8 bytes big-endian: every key starts with
0x00, so it "names" schema id 0, or for a key of 2^24 or more the id of its bytes 1-4) keeps its keys as
bytes and its records in its table: ids start at 1 (Schema Registry's ``IncrementalIdGenerator``), and a
topic whose keys never resolve keeps them as bytes. The value decides the table; a key of a typed-key topic
that does not decode is counted apart. The summary names no table for a topic whose records all went to
``_undecoded`` (no folder is written for it)."""

from __future__ import annotations

import json
from pathlib import Path

import crafted_topics as ct
import pyarrow.parquet as pq
import pytest

from logdoctor.formats.registry.framing import read_frame
from logdoctor.formats.registry.reasons import NO_MAGIC_BYTE
from logdoctor.spark.export import run_export

pytestmark = pytest.mark.spark

VALUE = {"type": "object", "title": "T", "properties": {"n": {"type": "integer"}}}
LONGS = [*range(20), *((5 << 24) + i for i in range(5))]  # the last five name id 5, which no schema has


def _value(n: int) -> bytes:
    return ct.framed(1, json.dumps({"n": n}).encode())


def test_long_keys_are_no_frames() -> None:
    for n in (0, 7, 2**24 - 1, -1, -(2**40)):
        assert read_frame(ct.long_key(n), None) == NO_MAGIC_BYTE, n


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("keys") / "kafka-logs"
    ct.write_partition(
        root,
        "_schemas",
        0,
        [
            ct.schema_record("longkeys-value", 1, 1, VALUE),
            ct.schema_record("typedkeys-key", 1, 2, '"string"', "AVRO"),
        ],
    )
    ct.write_partition(root, "longkeys", 0, [(ct.long_key(n), _value(n)) for n in LONGS])
    ct.write_partition(root, "lost", 0, [(None, ct.framed(99, b'{"n": 1}')) for _ in range(4)])
    keyed = [(ct.framed(2, b"\x04k" + bytes([48 + i])), _value(i)) for i in range(6)]
    keyed.append((ct.framed(2, b"\x7f"), _value(6)))  # a damaged key (a string of -64 bytes)
    ct.write_partition(root, "typedkeys", 0, keyed)
    return root


def _rows(folder: Path) -> list[dict]:
    return pq.read_table(folder).to_pylist()


def test_the_value_decides_the_table(spark, logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_export(spark, [str(logs)], str(out), options={"typed": "true"})
    summary = result.typed.to_json()["topics"]
    rows = sorted(_rows(out / "longkeys"), key=lambda r: r["kafka"]["offset"])
    assert [r["n"] for r in rows] == LONGS
    assert [r["kafka"]["key"] for r in rows] == [ct.long_key(n) for n in LONGS]  # the key's bytes
    assert summary["longkeys"]["decoded"] == len(LONGS) and summary["longkeys"]["undecoded"] == {}
    assert summary["longkeys"]["table"] == f"{out}/longkeys"
    # every record of "lost" names an id no schema has: all in _undecoded, and no table is named
    side = _rows(out / "_undecoded")
    assert sorted((r["topic"], r["reason"]) for r in side) == [("lost", "unknown_schema_id")] * 4
    assert summary["lost"]["table"] is None and not (out / "lost").exists()
    # typed keys: the damaged key's record is in its table (its value decodes), its key null and counted
    keyed = sorted(_rows(out / "typedkeys"), key=lambda r: r["kafka"]["offset"])
    assert [r["kafka"]["key"] for r in keyed] == ["k0", "k1", "k2", "k3", "k4", "k5", None]
    assert [r["n"] for r in keyed] == list(range(7))
    assert summary["typedkeys"]["keys_undecoded"] == {"decode_error_schema_mismatch": 1}
    assert result.typed.undecoded == 4
    text = "\n".join(result.typed.lines())
    assert "lost: 0 decoded; 4 to _undecoded (unknown_schema_id 4)\n" in text + "\n"
    assert "1 keys not decoded (decode_error_schema_mismatch 1; kafka.key null)" in text

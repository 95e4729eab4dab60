"""The Avro decoder's bounds (issue 75 items 7, 12, 13), with each of its two readers, values checked
against fastavro (an independent decoder):

- a recursive value (a linked list 500 and 5,000 nodes deep) decodes to its JSON text, never a
  RecursionError;
- arrays of items that take no bytes (``array<null>``): 100 records of 5 bytes each declaring 2**20 items
  share the batch's budget (:data:`BATCH_ZERO_SIZE_ITEMS`), in bounded memory;
- one large array in a batch (200,000 items) is read a payload at a time once the other rows are done:
  memory near its decoded size, time within a small multiple of the one-at-a-time reader's."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from typing import Any

import fastavro
import pytest

import tiers
from logdoctor.formats.registry import avro
from logdoctor.formats.registry.avro import AvroDecoder
from logdoctor.formats.registry.avro_values import BATCH_ZERO_SIZE_ITEMS
from logdoctor.formats.registry.reasons import DECODE_ERROR_SCHEMA_MISMATCH
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

NODE = {
    "type": "record",
    "name": "Node",
    "fields": [
        {"name": "v", "type": "int"},
        {"name": "tags", "type": {"type": "map", "values": "string"}},
        {"name": "next", "type": ["null", "Node"]},
    ],
}


@pytest.fixture(autouse=True, params=["columns", "one_at_a_time"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(avro, "COLUMNS_FROM", 0 if request.param == "columns" else 2**62)
    return request.param


def _decoder(schema: Any) -> AvroDecoder:
    reg = SchemaRegistry()
    reg.schemas[1] = RegisteredSchema(1, "AVRO", json.dumps(schema), ())
    return AvroDecoder(reg, reg.schemas[1])


def _zz(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return bytes([*out, b])
        out.append(b | 0x80)


@pytest.mark.parametrize("depth", [500, 5000])
def test_a_deep_recursive_value_is_its_json_text(depth: int) -> None:
    top = {"type": "record", "name": "List", "fields": [{"name": "head", "type": ["null", NODE]}]}
    # written by hand (fastavro's writer takes 2 s for 500 nodes and 24 s for 1,000), read by fastavro
    payload = _zz(1)  # head: the Node branch
    for i in range(1, depth + 1):
        tags = _zz(1) + _zz(1) + b"k" + _zz(len(str(i))) + str(i).encode() + _zz(0) if i % 3 == 0 else _zz(0)
        payload += _zz(i) + tags + (_zz(1) if i < depth else _zz(0))
    buf = io.BytesIO(payload)
    value: Any = None
    for i in range(depth, 0, -1):
        value = {"v": i, "tags": {"k": str(i)} if i % 3 == 0 else {}, "next": value}
    expected = {"head": value}
    limit = sys.getrecursionlimit()
    if depth <= 500:  # fastavro's reader recurses in C: deeper, it overflows the C stack (a segfault)
        sys.setrecursionlimit(max(limit, 20 * depth))
        try:
            parsed = fastavro.parse_schema(top)
            assert fastavro.schemaless_reader(io.BytesIO(payload), parsed, parsed) == expected
        finally:
            sys.setrecursionlimit(limit)
    got = _decoder(top).decode([buf.getvalue()])
    assert got.reasons == [None]
    head = got.values[0].as_py()["head"]
    assert head["v"] == 1 and dict(head["tags"]) == {}
    sys.setrecursionlimit(max(limit, 20 * depth))
    try:
        assert json.loads(head["next"]) == expected["head"]["next"]
    finally:
        sys.setrecursionlimit(limit)


def test_a_record_that_recurses_with_nothing_to_read_is_a_mismatch() -> None:
    """``{"name": "A", "fields": [{"name": "a", "type": "A"}]}`` has no finite value: bounded, a mismatch."""
    loop = {"type": "record", "name": "A", "fields": [{"name": "a", "type": "A"}]}
    top = {"type": "record", "name": "T", "fields": [{"name": "x", "type": loop}]}
    got = _decoder(top).decode([b"\x00\x00"])
    assert got.reasons == [DECODE_ERROR_SCHEMA_MISMATCH]


_BOMB = """
import json, resource, sys, time
from logdoctor.formats.registry import avro
from logdoctor.formats.registry.avro import AvroDecoder
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry
avro.COLUMNS_FROM = int(sys.argv[1])
schema, payloads = json.loads(sys.stdin.read())
reg = SchemaRegistry()
reg.schemas[1] = RegisteredSchema(1, "AVRO", json.dumps(schema), ())
d = AvroDecoder(reg, reg.schemas[1])
payloads = [bytes.fromhex(p) for p in payloads]
def peak_rss_mb():
    # VmHWM of this process's own memory: ru_maxrss also counts the RSS the forked child had before exec,
    # the size of the pytest worker that started it (Linux keeps the larger across execve)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
t = time.perf_counter()
got = d.decode(payloads)
rows = got.values.to_pylist()
print(json.dumps({"reasons": got.reasons, "seconds": time.perf_counter() - t,
  "rss_mb": peak_rss_mb(),
  "items": [None if r is None else len(r["a"]) for r in rows[:3]],
  "first": rows[0]["a"][:3] if rows[0] else None}))
"""


def _run(schema: Any, payloads: list[bytes], reader: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _BOMB, "0" if reader == "columns" else str(2**62)],
        input=json.dumps([schema, [p.hex() for p in payloads]]),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return json.loads(out.stdout)


def test_arrays_of_zero_byte_items_share_the_batch_budget(reader: str) -> None:
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}],
    }
    payload = _zz(2**20) + _zz(0)
    assert len(payload) == 5
    got = _run(schema, [payload] * 100, reader)
    fits = BATCH_ZERO_SIZE_ITEMS // 2**20
    assert got["reasons"] == [None] * fits + [DECODE_ERROR_SCHEMA_MISMATCH] * (100 - fits)
    assert got["items"] == [2**20] * 3
    assert got["rss_mb"] < 600, got  # 5.1 GB before (issue 75)


# test-fast: the column reader, whose batch reads the large array a payload at a time (item 13); the row
# reader's case times that reader against itself alone, and its arrays are test_avro_property.py's: make test
@pytest.mark.parametrize(
    "reader", ["columns", pytest.param("one_at_a_time", marks=tiers.marks(False))], indirect=True
)
def test_one_large_array_is_read_in_time_and_memory_near_its_size(reader: str) -> None:
    item = {
        "type": "record",
        "name": "I",
        "fields": [{"name": "x", "type": "int"}, {"name": "y", "type": "string"}],
    }
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": {"type": "array", "items": item}}],
    }
    n = 200_000
    big = io.BytesIO()
    parsed = fastavro.parse_schema(schema)
    fastavro.schemaless_writer(big, parsed, {"a": [{"x": i, "y": "é"} for i in range(n)]})
    small = io.BytesIO()
    fastavro.schemaless_writer(small, parsed, {"a": [{"x": 1, "y": "a"}] * 3})
    payloads = [small.getvalue()] * 100 + [big.getvalue()] + [small.getvalue()] * 100
    t = time.perf_counter()
    alone = _run(schema, [big.getvalue()], "one_at_a_time")
    batch = _run(schema, payloads, reader)
    assert batch["reasons"] == [None] * len(payloads)
    assert alone["reasons"] == [None]
    assert batch["seconds"] < 4 * alone["seconds"] + 2, (batch, alone, time.perf_counter() - t)
    assert batch["rss_mb"] < 600, batch  # 2.3 GB for 500,000 items before (issue 75)
    check = _run(schema, [big.getvalue()], reader)
    assert check["first"] == [{"x": 0, "y": "é"}, {"x": 1, "y": "é"}, {"x": 2, "y": "é"}]
    assert check["items"] == [n]

"""Typed export benchmark: Avro payloads decoded into Arrow by AvroDecoder vs fastavro's own loop.

    .venv/bin/python benchmarks/bench_typed_avro.py --records 1000000

Generates (once, cached in /tmp/logdoctor-bench) ``--records`` payloads of the typed set's
``orders-value`` v1 schema (``com.shop.orders.Order``: strings, long, int, double, boolean, bytes, enum,
an array of records, a map, a nested record, a nullable record, decimal, timestamp-millis, date, uuid)
written by ``fastavro.schemaless_writer``, then measures on one core:

  (a) the anchor: ``fastavro.schemaless_reader`` over each payload (Python dicts, logical types converted);
  (b) ``AvroDecoder.decode`` in batches of ``--batch`` payloads, each into one Arrow struct array;
  (c) an alternative measured and not taken: the payloads laid end to end as the blocks of an Avro object
      container file (``--batch`` records a block) and read by ``fastavro.reader`` (one C loop per block;
      Python dicts, no Arrow, and not exact: a payload with bytes left over shifts the ones after it).

Goal: (b) >= (a) in records/s (the values in Arrow, every payload checked exactly: truncation, bytes left
over, bad indexes).
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import io
import json
import random
import struct
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastavro

from _common import BENCH_TMP, best_of, command, machine
from logdoctor.formats.registry.avro import AvroDecoder
from logdoctor.formats.registry.store import RegisteredSchema, SchemaRegistry

ORDERS_V1 = (
    '{"type":"record","name":"Order","namespace":"com.shop.orders","fields":[{"name":"order_id","type":"string"},'
    '{"name":"customer_id","type":"long"},{"name":"quantity","type":"int"},{"name":"unit_price","type":"double"},'
    '{"name":"gift","type":"boolean"},{"name":"signature","type":"bytes"},{"name":"status","type":{"type":"enum",'
    '"name":"OrderStatus","symbols":["NEW","PAID","SHIPPED","CANCELLED"]}},{"name":"items","type":{"type":"array",'
    '"items":{"type":"record","name":"LineItem","fields":[{"name":"sku","type":"string"},{"name":"qty",'
    '"type":"int"}]}}},{"name":"attributes","type":{"type":"map","values":"string"}},{"name":"shipping","type":'
    '{"type":"record","name":"Address","fields":[{"name":"street","type":"string"},{"name":"city","type":'
    '"string"},{"name":"zip","type":"string"}]}},{"name":"billing","type":["null","Address"],"default":null},'
    '{"name":"total","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}},{"name":'
    '"created_at","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"delivery_date","type":'
    '{"type":"int","logicalType":"date"}},{"name":"trace_id","type":{"type":"string","logicalType":"uuid"}}]}'
)
_LEN = struct.Struct("<I")


def _order(i: int, rnd: random.Random) -> dict:
    return {
        "order_id": f"order-{i:07d}",
        "customer_id": 10_000_000_000 + rnd.randrange(100_000),
        "quantity": rnd.randrange(1, 20),
        "unit_price": round(rnd.uniform(1, 500), 2),
        "gift": rnd.random() < 0.3,
        "signature": rnd.randbytes(rnd.randrange(2, 8)),
        "status": rnd.choice(["NEW", "PAID", "SHIPPED", "CANCELLED"]),
        "items": [
            {"sku": f"SKU-{rnd.randrange(10_000)}", "qty": rnd.randrange(1, 5)}
            for _ in range(rnd.randrange(4))
        ],
        "attributes": {k: rnd.choice("ab") for k in rnd.sample(["channel", "lang", "ab"], rnd.randrange(4))},
        "shipping": {
            "street": f"{rnd.randrange(999)} Main St",
            "city": "Tartu",
            "zip": f"{rnd.randrange(99_999):05d}",
        },
        "billing": None if rnd.random() < 0.5 else {"street": "14 Side Rd", "city": "Bergen", "zip": "78948"},
        "total": decimal.Decimal(rnd.randrange(10**8)).scaleb(-2),
        "created_at": dt.datetime(2025, 11, 24, tzinfo=dt.UTC)
        + dt.timedelta(milliseconds=rnd.randrange(10**9)),
        "delivery_date": dt.date(2025, 12, 1) + dt.timedelta(days=rnd.randrange(60)),
        "trace_id": str(uuid.UUID(int=rnd.getrandbits(128))),
    }


def payloads(count: int) -> list[bytes]:
    """``count`` payloads of ORDERS_V1, generated once and cached in /tmp (length-prefixed)."""
    path = BENCH_TMP / f"typed-avro-orders-{count}.bin"
    if not path.exists():
        t0 = time.perf_counter()
        BENCH_TMP.mkdir(parents=True, exist_ok=True)
        parsed = fastavro.parse_schema(_schema())
        rnd = random.Random(55)
        out = io.BytesIO()
        for i in range(count):
            b = io.BytesIO()
            fastavro.schemaless_writer(b, parsed, _order(i, rnd))
            out.write(_LEN.pack(len(b.getvalue())) + b.getvalue())
        tmp = path.with_suffix(".partial")
        tmp.write_bytes(out.getvalue())
        tmp.rename(path)
        print(f"  generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f}s")
    data = path.read_bytes()
    out_list, p = [], 0
    while p < len(data):
        (n,) = _LEN.unpack_from(data, p)
        out_list.append(data[p + 4 : p + 4 + n])
        p += 4 + n
    return out_list


def _schema() -> dict:
    return json.loads(ORDERS_V1)


def anchor(values: list[bytes]) -> int:
    parsed = fastavro.parse_schema(_schema())
    reader = fastavro.schemaless_reader
    n = 0
    for v in values:
        reader(io.BytesIO(v), parsed)
        n += 1
    return n


def ours(values: list[bytes], batch: int) -> int:
    registry = SchemaRegistry()
    schema = RegisteredSchema(2, "AVRO", ORDERS_V1, subject="orders-value", version=1)
    registry.schemas[2] = schema
    decoder = AvroDecoder(registry, schema)
    n = 0
    for i in range(0, len(values), batch):
        decoded = decoder.decode(values[i : i + batch])
        n += len(decoded.values) - decoded.values.null_count
    return n


def _zigzag(n: int) -> bytes:
    z, out = n << 1, bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    return bytes([*out, z])


def container(values: list[bytes], batch: int) -> bytes:
    """An object container file holding ``values`` as its records, ``batch`` a block."""
    sync = bytes(range(16))
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(_schema()), [], sync_marker=sync)
    for i in range(0, len(values), batch):
        block = b"".join(values[i : i + batch])
        out.write(_zigzag(len(values[i : i + batch])) + _zigzag(len(block)) + block + sync)
    return out.getvalue()


def fastavro_container(data: bytes) -> int:
    n = 0
    for _ in fastavro.reader(io.BytesIO(data)):
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=65_536, help="payloads per AvroDecoder.decode call")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the AvroDecoder measurement (best kept)")
    ap.add_argument("--anchor-repeat", type=int, default=1, help="runs of the fastavro loop")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    print(f"command: {command()}")
    values = payloads(args.records)
    print(f"  {len(values)} payloads, {sum(map(len, values)) / len(values):.0f} bytes on average")
    t_ours, n_ours = best_of(args.repeat, lambda: ours(values, args.batch))
    t_anchor, n_anchor = best_of(args.anchor_repeat, lambda: anchor(values))
    data = container(values, args.batch)
    t_container, n_container = best_of(args.anchor_repeat, lambda: fastavro_container(data))
    assert n_ours == n_anchor == n_container == len(values), (n_ours, n_anchor, n_container)
    print("| decoder | records/s | time | vs fastavro loop |")
    print("|---|---|---|---|")
    print(
        f"| (a) fastavro schemaless_reader loop (anchor) | {n_anchor / t_anchor:,.0f} "
        f"| {t_anchor:.2f} s | 1x |"
    )
    print(
        f"| (b) AvroDecoder.decode -> Arrow, batches of {args.batch} | {n_ours / t_ours:,.0f} "
        f"| {t_ours:.2f} s | {t_anchor / t_ours:.2f}x |"
    )
    print(
        f"| (c) fastavro.reader over container blocks of {args.batch} (dicts, not exact) "
        f"| {n_container / t_container:,.0f} | {t_container:.2f} s | {t_anchor / t_container:.2f}x |"
    )


if __name__ == "__main__":
    main()

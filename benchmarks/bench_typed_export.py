"""``export --typed`` end to end against the formats' own decoding loops, in the same run (issue 55 goal 6).

    .venv/bin/python benchmarks/bench_typed_export.py --records 1000000

Generates (once, cached in /tmp/logdoctor-bench) three log dirs, each with a ``_schemas`` partition holding
the typed set's schemas (ids 1-5: ``orders-key``, ``orders-value`` v1, ``money.proto``, ``payments-value``,
``events-value``) and one data topic of ``--records`` registry-framed values (byte 0 + 4-byte id; Protobuf's
message index ``[0]`` after it), in batches of 1,000 records, codec none, plain UTF-8 keys:

  avro:   ``orders``: ``com.shop.orders.Order`` v1 (id 2), the payloads of bench_typed_avro.py;
  proto:  ``payments``: ``shop.payments.Payment`` (id 4), the payloads of bench_typed_protobuf.py;
  json:   ``events``: a JSON Schema (id 5: an object of a string, an integer, a number, a boolean, an enum,
          a nested object and an array of strings), compact UTF-8 JSON as confluent-kafka's JSONSerializer
          writes it (``json.dumps``);
  avro-confluent (``--only avro-confluent``): the same records (bench_typed_avro's generator, same seed) as
          confluent-kafka's own ``AvroSerializer`` writes them (the Confluent frame and payload, the schema
          registered by the serializer in confluent-kafka's mock registry client, ``mock://``); the log
          dir's ``_schemas`` holds what that registry answered (subject, version, id, schema), and the
          anchor reads the serializer's payloads (the frame's 5 bytes off).

Then, in one process, each measured ``--repeat`` times after one warm-up run (the Python workers start):

  anchor:  fastavro's ``schemaless_reader`` over each payload (one core), protobuf's ``FromString`` plus
           every field read (one core); JSON: ``json.loads`` and the schema's ``jsonschema`` validation of
           each payload (one core: confluent-kafka's JSONDeserializer with validation, as the typed export
           validates every value);
  decoder: (Protobuf) ``ProtobufDecoder.decode`` alone over the same payloads in batches of 1,000 (one core:
           the C decoder of formats/registry/protobuf_plan.py, Arrow arrays out);
  typed:   ``run_export`` with ``typed=true`` into Parquet (arrow writer, ``--master``, default local[2]):
           planning, reading, decoding into Arrow, writing, the side table;
  raw:     the same export without ``typed`` (the raw columns: key and value as bytes), for scale.

The export's time is its own (``ExportResult.elapsed_s``: not the session's start). Goal: typed >= anchor
in records/s.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import struct
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastavro

import bench_typed_avro as avro_bench
import bench_typed_protobuf as proto_bench
from _common import BENCH_TMP, command, machine
from logdoctor.formats.record_types import RecordSpec
from logdoctor.formats.writer import build_record_batch

BATCH = 1000
T0 = 1_764_000_000_000  # the records' first timestamp (ms)


def _store_records() -> list[tuple[bytes, bytes | None]]:
    """The ``_schemas`` records (key, value) of ids 1-4, as Schema Registry's KafkaStore writes them."""

    def schema(subject: str, version: int, sid: int, text: str, kind: str | None = None, refs=None):
        key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
        value: dict = {"subject": subject, "version": version, "id": sid}
        if kind is not None:
            value["schemaType"] = kind
        if refs:
            value["references"] = refs
        value.update({"schema": text, "deleted": False})
        compact = (",", ":")
        return json.dumps(key, separators=compact).encode(), json.dumps(value, separators=compact).encode()

    noop = (b'{"keytype":"NOOP","magic":0}', None)
    return [
        noop,
        schema("orders-key", 1, 1, '"string"'),
        schema("orders-value", 1, 2, avro_bench.ORDERS_V1),
        schema("money.proto", 1, 3, proto_bench.MONEY, "PROTOBUF"),
        schema(
            "payments-value",
            1,
            4,
            proto_bench.PAYMENTS,
            "PROTOBUF",
            [{"name": "money.proto", "subject": "money.proto", "version": 1}],
        ),
        schema("events-value", 1, 5, json.dumps(EVENTS_SCHEMA), "JSON"),
        noop,
    ]


#: the JSON Schema of the ``events`` topic (id 5)
EVENTS_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Event",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "sequence": {"type": "integer"},
        "amount": {"type": "number"},
        "paid": {"type": "boolean"},
        "status": {"type": "string", "enum": ["NEW", "PAID", "SHIPPED", "CANCELLED"]},
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "country": {"type": ["string", "null"]}},
            "required": ["name"],
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "sequence", "amount", "paid", "status", "customer", "tags"],
}


def json_payloads(count: int) -> list[bytes]:
    """``count`` events as confluent-kafka's JSONSerializer writes them (``json.dumps``, compact)."""
    import random

    rnd = random.Random(56)
    statuses = EVENTS_SCHEMA["properties"]["status"]["enum"]
    out = []
    for i in range(count):
        event = {
            "id": f"evt-{i:08d}",
            "sequence": i,
            "amount": round(rnd.uniform(0, 10_000), 2),
            "paid": rnd.random() < 0.5,
            "status": statuses[i % 4],
            "customer": {
                "name": f"customer {rnd.randrange(100_000)}",
                "country": rnd.choice(["DE", "FR", None]),
            },
            "tags": [f"t{rnd.randrange(50)}" for _ in range(rnd.randrange(4))],
        }
        out.append(json.dumps(event, separators=(",", ":")).encode())
    return out


def _write_partition(folder: Path, records: Sequence[tuple[bytes | None, bytes | None]]) -> None:
    """One segment of ``records`` (key, value) in batches of :data:`BATCH`."""
    folder.mkdir(parents=True)
    with open(folder / "00000000000000000000.log", "wb") as f:
        for start in range(0, len(records), BATCH):
            chunk = records[start : start + BATCH]
            specs = [RecordSpec(value=v, key=k, timestamp=T0 + start + i) for i, (k, v) in enumerate(chunk)]
            f.write(build_record_batch(specs, base_offset=start))


def confluent_avro(count: int) -> tuple[bytes, list[bytes], list[tuple[bytes, bytes | None]]]:
    """``count`` Order records serialized by confluent-kafka's ``AvroSerializer`` against its mock registry:
    the frame every value starts with (magic byte and the id the registry assigned), the payloads after it
    (cached in /tmp), and the ``_schemas`` records of what the registry holds."""
    import random

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    registry = SchemaRegistryClient.new_client({"url": "mock://bench-typed-export"})
    serializer = AvroSerializer(registry, avro_bench.ORDERS_V1, conf={"auto.register.schemas": True})
    ctx = SerializationContext("orders", MessageField.VALUE)
    rnd = random.Random(55)
    path = BENCH_TMP / f"typed-avro-orders-confluent-{count}.bin"
    frame = serializer(avro_bench._order(0, rnd), ctx)[:5]  # registers the schema
    if not path.exists():
        t0 = time.perf_counter()
        rnd = random.Random(55)
        out = io.BytesIO()
        for i in range(count):
            value = serializer(avro_bench._order(i, rnd), ctx)
            assert value[:5] == frame, (value[:5], frame)
            out.write(struct.pack(">I", len(value) - 5) + value[5:])
        tmp = path.with_suffix(".partial")
        tmp.write_bytes(out.getvalue())
        tmp.rename(path)
        print(f"  serialized {count:,} records with confluent-kafka's AvroSerializer in "
              f"{time.perf_counter() - t0:.1f}s", flush=True)  # fmt: skip
    data = path.read_bytes()
    payloads, p = [], 0
    while p < len(data):
        (n,) = struct.unpack_from(">I", data, p)
        payloads.append(data[p + 4 : p + 4 + n])
        p += 4 + n
    registered = registry.get_latest_version("orders-value")
    key = {"keytype": "SCHEMA", "subject": "orders-value", "version": registered.version, "magic": 1}
    value = {"subject": "orders-value", "version": registered.version, "id": registered.schema_id,
             "schema": registered.schema.schema_str, "deleted": False}  # fmt: skip
    compact = (",", ":")
    noop = (b'{"keytype":"NOOP","magic":0}', None)
    store = [
        noop,
        (json.dumps(key, separators=compact).encode(), json.dumps(value, separators=compact).encode()),
    ]
    assert frame == b"\x00" + struct.pack(">i", registered.schema_id)
    return frame, payloads, store


def log_dir(
    name: str,
    topic: str,
    records: int,
    payloads: Callable[[], list[bytes]],
    frame: bytes,
    store: Sequence[tuple[bytes, bytes | None]] | None = None,
) -> Path:
    """A generated log dir (cached) of ``_schemas`` (``store``, else :func:`_store_records`) and ``topic``'s
    ``frame + payload`` values."""
    root = BENCH_TMP / f"typed-export-{name}-{records}"
    logs = root / "kafka-logs"
    if (root / ".complete").exists():
        return logs
    if root.exists():
        shutil.rmtree(root)
    t0 = time.perf_counter()
    logs.mkdir(parents=True)
    (logs / "meta.properties").write_text("version=0\nbroker.id=1\n")
    _write_partition(logs / "_schemas-0", _store_records() if store is None else store)
    values = payloads()
    _write_partition(logs / f"{topic}-0", [(f"k-{i:07d}".encode(), frame + v) for i, v in enumerate(values)])
    (root / ".complete").write_text("")
    size = (logs / f"{topic}-0" / "00000000000000000000.log").stat().st_size
    print(f"  generated {logs} ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f}s", flush=True)
    return logs


def anchor_avro(values: list[bytes]) -> float:
    """Seconds of fastavro's schemaless_reader over ``values``."""
    parsed = fastavro.parse_schema(avro_bench._schema())
    reader = fastavro.schemaless_reader
    t0 = time.perf_counter()
    for v in values:
        reader(io.BytesIO(v), parsed)
    return time.perf_counter() - t0


def anchor_proto(values: list[bytes]) -> float:
    reg, payments = proto_bench.registry()
    from logdoctor.formats.registry.protobuf_schema import compile_schema

    parse = compile_schema(reg, payments).message_class([0]).FromString
    t0 = time.perf_counter()
    n = proto_bench.anchor(parse, values)
    assert n == len(values)
    return time.perf_counter() - t0


def anchor_json(values: list[bytes]) -> float:
    """Seconds of ``json.loads`` and ``jsonschema`` validation (draft-07) of each of ``values``."""
    from jsonschema import Draft7Validator

    is_valid = Draft7Validator(EVENTS_SCHEMA).is_valid
    loads = json.loads
    t0 = time.perf_counter()
    for v in values:
        if not is_valid(loads(v)):
            raise AssertionError(v)
    return time.perf_counter() - t0


def decoder_proto(values: list[bytes]) -> float:
    """Seconds of ``ProtobufDecoder.decode`` alone over ``values`` in batches of 1,000 (one core)."""
    reg, payments = proto_bench.registry()
    from logdoctor.formats.registry.protobuf import ProtobufDecoder

    decoder = ProtobufDecoder(reg, payments, (0,))
    t0 = time.perf_counter()
    n = proto_bench.ours(decoder, values, BATCH)
    assert n == len(values)
    return time.perf_counter() - t0


def export_seconds(spark, logs: Path, typed: bool, expect: int) -> float:
    from logdoctor.spark.export import run_export

    out = BENCH_TMP / f"typed-export-out-{logs.parent.name}-{'typed' if typed else 'raw'}"
    shutil.rmtree(out, ignore_errors=True)  # typed tables are not an earlier raw export's: not overwritten
    res = run_export(
        spark,
        [str(logs)],
        str(out),
        writer="arrow",
        options={"typed": "true"} if typed else None,
    )
    assert res.rows >= expect, (res.rows, expect)
    if typed:
        assert res.typed.undecoded == 0, res.to_json()["typed"]
    return res.elapsed_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2, help="measured runs of each (best kept)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--only", choices=["avro", "protobuf", "json", "avro-confluent"], help="one format only")
    args = ap.parse_args()
    n = args.records
    print(f"# {command()}\n# {machine()}")
    print(f"# load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")

    avro_values: list[bytes] = []
    proto_values: list[bytes] = []
    json_values: list[bytes] = []

    def avro_payloads() -> list[bytes]:
        avro_values[:] = avro_bench.payloads(n)
        return avro_values

    def proto_payloads() -> list[bytes]:
        reg, payments = proto_bench.registry()
        from logdoctor.formats.registry.protobuf_schema import compile_schema

        proto_values[:] = proto_bench.generate(compile_schema(reg, payments).message_class([0]), n)
        return proto_values

    def events_payloads() -> list[bytes]:
        json_values[:] = json_payloads(n)
        return json_values

    formats = [
        ("avro", "orders", avro_payloads, b"\x00" + struct.pack(">i", 2), anchor_avro, avro_values),
        ("protobuf", "payments", proto_payloads, b"\x00" + struct.pack(">i", 4) + b"\x00", anchor_proto,
         proto_values),
        ("json", "events", events_payloads, b"\x00" + struct.pack(">i", 5), anchor_json, json_values),
    ]  # fmt: skip
    stores: dict[str, list] = {}
    if args.only == "avro-confluent":  # confluent-kafka's serializer, its registry's answers in _schemas
        confluent_values: list[bytes] = []
        frame, confluent_values[:], stores["avro-confluent"] = confluent_avro(n)
        formats = [
            ("avro-confluent", "orders", lambda: confluent_values, frame, anchor_avro, confluent_values)
        ]
    elif args.only:
        formats = [f for f in formats if f[0] == args.only]
    dirs = {}
    for name, topic, payloads, frame, _anchor, values in formats:
        dirs[name] = log_dir(name, topic, n, payloads, frame, stores.get(name))
        if not values:
            payloads()

    from logdoctor.spark.session import get_spark

    spark = get_spark(args.master, "bench-typed-export")
    rows = []
    for name, _topic, _payloads, _frame, anchor, values in formats:
        logs = dirs[name]
        export_seconds(spark, logs, True, n)  # warm-up: the Python workers start
        timings: dict[str, list[float]] = {"anchor": [], "typed": [], "raw": []}
        if name == "protobuf":
            timings["decoder"] = []
        for _ in range(args.repeat):  # interleaved: each under the same load
            timings["anchor"].append(anchor(values))
            if name == "protobuf":
                timings["decoder"].append(decoder_proto(values))
            timings["typed"].append(export_seconds(spark, logs, True, n))
            timings["raw"].append(export_seconds(spark, logs, False, n))
        best = {k: min(v) for k, v in timings.items()}
        rows.append((name, best))
        print(f"{name}: " + ", ".join(f"{k} {n / s:,.0f} records/s ({s:.2f} s)" for k, s in best.items()))
        print(f"{name}: typed / anchor {best['anchor'] / best['typed']:.2f}x, "
              f"typed / raw {best['raw'] / best['typed']:.2f}x", flush=True)  # fmt: skip
        if "decoder" in best:
            print(f"{name}: decoder alone / anchor {best['anchor'] / best['decoder']:.2f}x", flush=True)
    spark.stop()
    print(f"# load after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print("| format | anchor (one core) | export --typed | export (raw) | typed / anchor | typed / raw |")
    print("|---|---|---|---|---|---|")
    for name, best in rows:
        print(
            f"| {name} | {n / best['anchor']:,.0f}/s | {n / best['typed']:,.0f}/s | {n / best['raw']:,.0f}/s "
            f"| {best['anchor'] / best['typed']:.2f}x | {best['raw'] / best['typed']:.2f}x |"
        )


if __name__ == "__main__":
    main()

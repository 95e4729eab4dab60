"""Protobuf typed decoding benchmark: ProtobufDecoder.decode (payloads -> one Arrow array per batch) vs
protobuf's own parse-plus-field-access loop, on the same generated ``shop.payments.Payment`` values.

    .venv/bin/python benchmarks/bench_typed_protobuf.py --count 1000000

The schema is the typed set's ``payments-value`` (id 4, referencing ``money.proto``), compiled by protoc
(grpcio-tools); the values are generated here (seeded): every field set in some records, the oneof ``method``
rotating through its three members, 0-3 tags, 0-3 attributes.

  anchor: for each payload ``Payment.FromString`` and every field read (nested ``amount`` and ``card``,
          the set oneof member, ``tags`` as a list, ``attributes`` as a dict, ``created_at``'s seconds and
          nanos) into a tuple;
  ours:   ``ProtobufDecoder.decode`` over batches of ``--batch`` payloads, giving Arrow struct arrays.

Goal (issue 55): ours >= the anchor in records/s (ratio >= 1).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command, machine, timed_interleaved
from logdoctor.formats.registry.protobuf import ProtobufDecoder
from logdoctor.formats.registry.protobuf_schema import compile_schema
from logdoctor.formats.registry.store import RegisteredSchema, SchemaReference, SchemaRegistry

MONEY = """syntax = "proto3";
package shop.common;

message Money {
  string currency_code = 1;
  int64 units = 2;
  int32 nanos = 3;
}
"""

PAYMENTS = """syntax = "proto3";
package shop.payments;

import "google/protobuf/timestamp.proto";
import "money.proto";

message Payment {
  string payment_id = 1;
  string order_id = 2;
  shop.common.Money amount = 3;
  Status status = 4;
  repeated string tags = 5;
  oneof method {
    Card card = 6;
    string iban = 7;
    string wallet = 8;
  }
  map<string, string> attributes = 9;
  google.protobuf.Timestamp created_at = 10;
  int64 attempt_count = 11;
  bool captured = 12;
  double fee_rate = 13;
  bytes signature = 14;

  enum Status {
    STATUS_UNKNOWN = 0;
    AUTHORIZED = 1;
    CAPTURED = 2;
    DECLINED = 3;
  }
  message Card {
    string brand = 1;
    string last4 = 2;
    int32 exp_month = 3;
    int32 exp_year = 4;
  }
}

message Refund {
  string refund_id = 1;
  string payment_id = 2;
  shop.common.Money amount = 3;
  string reason = 4;
  google.protobuf.Timestamp refunded_at = 5;
}
"""


def registry() -> tuple[SchemaRegistry, RegisteredSchema]:
    reg = SchemaRegistry()
    money = RegisteredSchema(3, "PROTOBUF", MONEY, (), "money.proto", 1, (("money.proto", 1),))
    payments = RegisteredSchema(
        4, "PROTOBUF", PAYMENTS, (SchemaReference("money.proto", "money.proto", 1),), "payments-value", 1,
        (("payments-value", 1),),
    )  # fmt: skip
    reg.schemas.update({3: money, 4: payments})
    return reg, payments


def generate(payment_class: type, count: int) -> list[bytes]:
    rnd = random.Random(55)
    tags = ["mobile", "b2b", "web", "promo", "retry"]
    out = []
    for i in range(count):
        p = payment_class()
        p.payment_id = f"pay-{i:07d}"
        p.order_id = f"order-{rnd.randrange(10**6):06d}"
        p.amount.currency_code = rnd.choice(["USD", "EUR", "GBP"])
        p.amount.units = rnd.randrange(10**6)
        p.amount.nanos = rnd.randrange(100) * 10_000_000
        p.status = rnd.randrange(4)
        p.tags.extend(rnd.sample(tags, rnd.randrange(4)))
        method = i % 3
        if method == 0:
            p.card.brand = rnd.choice(["visa", "mc", "amex"])
            p.card.last4 = f"{rnd.randrange(10**4):04d}"
            p.card.exp_month = rnd.randrange(1, 13)
            p.card.exp_year = rnd.randrange(2026, 2032)
        elif method == 1:
            p.iban = f"DE{rnd.randrange(10**18):018d}"
        else:
            p.wallet = f"w-{rnd.randrange(10**6)}"
        for k in rnd.sample(["risk", "ua", "ip", "channel"], rnd.randrange(4)):
            p.attributes[k] = f"v{rnd.randrange(100)}"
        p.created_at.seconds = 1_764_000_000 + i
        p.created_at.nanos = rnd.randrange(1000) * 1_000_000
        p.attempt_count = rnd.randrange(1, 4)
        p.captured = rnd.random() < 0.5
        p.fee_rate = rnd.random() / 100
        p.signature = rnd.randbytes(4)
        out.append(p.SerializeToString())
    return out


def anchor(parse, payloads: list[bytes]) -> int:
    """protobuf's parse plus every field read, record by record."""
    n = 0
    for payload in payloads:
        m = parse(payload)
        amount = m.amount if m.HasField("amount") else None
        method = m.WhichOneof("method")
        if method == "card":
            c = m.card
            chosen: object = (c.brand, c.last4, c.exp_month, c.exp_year)
        else:
            chosen = getattr(m, method) if method else None
        ts = m.created_at if m.HasField("created_at") else None
        row = (
            m.payment_id,
            m.order_id,
            None if amount is None else (amount.currency_code, amount.units, amount.nanos),
            m.status,
            list(m.tags),
            method,
            chosen,
            dict(m.attributes),
            None if ts is None else (ts.seconds, ts.nanos),
            m.attempt_count,
            m.captured,
            m.fee_rate,
            m.signature,
        )
        n += row is not None
    return n


def ours(decoder: ProtobufDecoder, payloads: list[bytes], batch: int) -> int:
    n = 0
    for i in range(0, len(payloads), batch):
        n += len(decoder.decode(payloads[i : i + batch]).values)
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    reg, payments = registry()
    payment_class = compile_schema(reg, payments).message_class([0])
    print(f"# {command()}\n# {machine()}")
    payloads = generate(payment_class, args.count)
    size = sum(map(len, payloads))
    print(f"{args.count} Payment payloads, {size / 1e6:.1f} MB, batches of {args.batch}")
    decoder = ProtobufDecoder(reg, payments, (0,))
    parse = payment_class.FromString
    results = timed_interleaved(
        args.repeat,
        {"anchor": lambda: anchor(parse, payloads), "ours": lambda: ours(decoder, payloads, args.batch)},
    )
    rates = {}
    for name, (timing, cpu) in results.items():
        assert timing.result == args.count
        rates[name] = args.count / cpu
        print(f"{name:7s} {rates[name]:12,.0f} records/s (CPU {cpu:.2f} s; wall best {timing.best:.2f} s)")
    print(f"ratio ours/anchor: {rates['ours'] / rates['anchor']:.2f} (goal >= 1)")


if __name__ == "__main__":
    main()

"""Record format benchmark: logdoctor vs kafka-python on the same generated segment.

    .venv/bin/python benchmarks/bench_records.py --size-mb 1024

Generates (once, cached in /tmp/logdoctor-bench) a segment of ~1 KB JSON-like records
batched like the Java producer (batch.size 16384), uncompressed and lz4, then measures on
one core, side by side with kafka-python's MemoryRecords / DefaultRecordBatch:

  (a) batch-header scan with CRC-32C verification (GB/s of segment),
  (b) full record decode (records/s): our per-Record iterator, our columnar path
      (decode_columns, Arrow/numpy), and kafka-python's record iterator.

Goals: (a) >= 1 GB/s, (b) >= 10x kafka-python. The rows of BENCHMARKS.md's "Records" table follow
(``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka.record.memory_records import MemoryRecords

from _common import TableRows, best_of, command, machine, ratio, segment
from logdoctor.formats.columns import decode_columns
from logdoctor.formats.record_types import Compression
from logdoctor.formats.records import iter_batches
from logdoctor.sample.records import RecordDataSpec

COLUMN_CHUNK = 256  # batches per decode_columns call (bounded memory)


def ours_scan(buf: bytes) -> int:
    n = 0
    for _ in iter_batches(buf, verify_crc=True):
        n += 1
    return n


def kp_scan(buf: bytes) -> int:
    mr = MemoryRecords(buf)
    n = 0
    while (b := mr.next_batch()) is not None:
        if not b.validate_crc():
            raise SystemExit(f"kafka-python: CRC mismatch in batch {n}")
        n += 1
    return n


def ours_records(buf: bytes) -> int:
    n = 0
    for batch in iter_batches(buf):
        for r in batch.records():
            n += 1
            _ = r.value
    return n


def ours_columns(buf: bytes) -> int:
    n = 0
    chunk = []
    for batch in iter_batches(buf):
        chunk.append(batch)
        if len(chunk) == COLUMN_CHUNK:
            n += len(decode_columns(chunk))
            chunk = []
    if chunk:
        n += len(decode_columns(chunk))
    return n


def kp_records(buf: bytes) -> int:
    mr = MemoryRecords(buf)
    n = 0
    while (b := mr.next_batch()) is not None:
        for r in b:
            n += 1
            _ = r.value
    return n


def run(codec: Compression, size_mb: int, repeat: int, kp_repeat: int, table: TableRows) -> list[str]:
    spec = RecordDataSpec(
        seed=42,
        record_count=None,
        target_bytes=size_mb * 1024 * 1024,
        value_size=1024,
        value_kind="json",
        key_cardinality=100_000,
        compression=codec,
    )
    path = segment(spec, f"records-{codec.label}-{size_mb}mb")
    buf = path.read_bytes()
    gb = len(buf) / 1e9
    print(f"\n== {codec.label}: {path} ({len(buf) / 1e6:.0f} MB)", flush=True)

    t_scan, batches = best_of(repeat, lambda: ours_scan(buf))
    t_kscan, kbatches = best_of(kp_repeat, lambda: kp_scan(buf))
    assert batches == kbatches, (batches, kbatches)
    t_rec, records = best_of(repeat, lambda: ours_records(buf))
    t_col, crecords = best_of(repeat, lambda: ours_columns(buf))
    t_krec, krecords = best_of(kp_repeat, lambda: kp_records(buf))
    assert records == crecords == krecords, (records, crecords, krecords)

    rows = [
        f"| {codec.label} | (a) header scan + CRC | logdoctor | {gb / t_scan:.2f} GB/s | {t_scan:.2f} s "
        f"| {t_kscan / t_scan:.1f}x |",
        f"| {codec.label} | (a) header scan + CRC | kafka-python | {gb / t_kscan:.2f} GB/s "
        f"| {t_kscan:.2f} s | 1x |",
        f"| {codec.label} | (b) decode, Record iterator | logdoctor | {records / t_rec / 1e6:.2f} M rec/s "
        f"| {t_rec:.2f} s | {t_krec / t_rec:.1f}x |",
        f"| {codec.label} | (b) decode, columnar | logdoctor | {records / t_col / 1e6:.2f} M rec/s "
        f"| {t_col:.2f} s | {t_krec / t_col:.1f}x |",
        f"| {codec.label} | (b) decode, record iterator | kafka-python "
        f"| {krecords / t_krec / 1e6:.3f} M rec/s "
        f"| {t_krec:.2f} s | 1x |",
    ]
    on = f"{codec.label}, {size_mb} MB segment"
    table.add(
        f"(a) header scan + CRC, {on}",
        f"{gb / t_scan:.2f} GB/s ({t_scan:.2f} s)",
        f"kafka-python `next_batch` + `validate_crc` {gb / t_kscan:.2f} GB/s ({t_kscan:.2f} s)",
        ratio(t_kscan, t_scan),
    )
    kp = f"kafka-python record iterator {krecords / t_krec / 1e6:.3f} M rec/s ({t_krec:.2f} s)"
    for name, t in (("Record iterator", t_rec), ("columnar", t_col)):
        table.add(
            f"(b) decode, {name}, {on}", f"{records / t / 1e6:.2f} M rec/s ({t:.2f} s)", kp, ratio(t_krec, t)
        )
    print(f"   {batches} batches, {records} records")
    for r in rows:
        print(r, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024, help="segment size (default 1024 = 1 GB)")
    ap.add_argument("--codecs", default="none,lz4", help="comma-separated: none,gzip,snappy,lz4,zstd")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each logdoctor measurement (best kept)")
    ap.add_argument("--kp-repeat", type=int, default=1, help="runs of each kafka-python measurement")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    print(f"command: {command()}")
    header = ["| codec | measurement | implementation | throughput | time | vs kafka-python |",
              "|---|---|---|---|---|---|"]
    rows: list[str] = []
    table = TableRows()
    for name in args.codecs.split(","):
        rows += run(Compression[name.strip().upper()], args.size_mb, args.repeat, args.kp_repeat, table)
    print("\n" + "\n".join(header + rows))
    table.print()


if __name__ == "__main__":
    main()

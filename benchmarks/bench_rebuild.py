"""Index rebuild throughput (what `logdoctor repair` runs per segment): formats.recovery.rebuild_indexes
on 1 GB segments generated into /tmp, one core.

    .venv/bin/python benchmarks/bench_rebuild.py [--gb 1.0] [--repeat 3] [--only uncompressed,lz4,...]

Segments: the issue's two (uncompressed and lz4, the producer's default 16 KiB batches of 512-byte
JSON values), plus small batches (1 KiB, what a lightly loaded producer with linger.ms=0 writes: the
per-batch cost dominates) and transactional lz4 (4 producers, markers every few batches: the Python
walk handles every marker). Columns: rebuild_indexes (C lane for plain v2 batches, Python walk for the
rest), the same with ``recovery.FAST_LANE`` off (the Python walk alone, as before the C lane), then the parts
that bound it: the batch walk with CRCs (iter_batches) and the CRC alone over the whole file. The rows of
BENCHMARKS.md's "Repair" table follow (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import TableRows, best_of, command, machine, ratio, segment
from logdoctor.formats import recovery
from logdoctor.formats.crc import crc32c
from logdoctor.formats.record_types import Compression
from logdoctor.formats.records import iter_batches
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir.files import map_file
from logdoctor.sample.records import RecordDataSpec

CASES: dict[str, dict] = {
    "uncompressed": {"compression": Compression.NONE},
    "lz4": {"compression": Compression.LZ4},
    "small-batches": {"compression": Compression.NONE, "batch_size": 1024, "value_size": 200},
    "lz4-transactional": {"compression": Compression.LZ4, "transactional": True, "producers": 4},
}
LABELS = {
    "uncompressed": "uncompressed",
    "lz4": "lz4",
    "small-batches": "uncompressed, 1 KiB batches",
    "lz4-transactional": "lz4, transactional (4 producers)",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    args = ap.parse_args()
    target = int(args.gb * (1 << 30))
    table = TableRows()
    print(f"# {machine()}\n# {command()}\n")
    print("| segment | size | batches | rebuild_indexes | Python walk alone | walk + CRC only | CRC only |")
    print("|---|---|---|---|---|---|---|")
    for name in args.only.split(","):
        params = {"value_size": 512, **CASES[name]}
        spec = RecordDataSpec(
            seed=7, record_count=None, target_bytes=target, value_kind="json", key_cardinality=100_000,
            **params,
        )
        # the two original cases keep their cached file names
        path = segment(spec, f"rebuild-{name}")
        view = map_file(path)
        size = len(view)
        bytes(view[: 1 << 20])  # touch
        r = rebuild_indexes(view, 0)
        assert r.error is None and r.valid_bytes == size, r.error

        def walk(view: memoryview = view) -> None:
            for _ in iter_batches(view, verify_crc=True):
                pass

        def crc_only(view: memoryview = view) -> None:
            crc32c(view)

        def rebuild(view: memoryview = view) -> None:
            rebuild_indexes(view, 0)

        def rebuild_py(view: memoryview = view) -> None:
            fast, recovery.FAST_LANE = recovery.FAST_LANE, None
            try:
                rebuild_indexes(view, 0)
            finally:
                recovery.FAST_LANE = fast

        t_rebuild = best_of(args.repeat, rebuild)[0]
        t_py = best_of(args.repeat, rebuild_py)[0]
        t_walk = best_of(args.repeat, walk)[0]
        t_crc = best_of(args.repeat, crc_only)[0]
        gb = size / 1e9
        print(
            f"| {LABELS[name]} | {size / 2**30:.2f} GiB | {r.batch_count:,} "
            f"| {gb / t_rebuild:.2f} GB/s ({t_rebuild:.2f} s) | {gb / t_py:.2f} GB/s ({t_py:.2f} s) "
            f"| {gb / t_walk:.2f} GB/s | {gb / t_crc:.2f} GB/s |",
            flush=True,
        )
        table.add(
            f"`rebuild_indexes` of {args.gb:g} GiB, {LABELS[name]}, one core",
            f"{gb / t_rebuild:.2f} GB/s ({t_rebuild:.2f} s)",
            f"crc32c over the same bytes {gb / t_crc:.2f} GB/s",
            ratio(t_crc, t_rebuild),
        )
        del view
    print(f"\n(page cache warm; {os.cpu_count()} cores present, one used)")
    table.print()


if __name__ == "__main__":
    main()

"""Index rebuild throughput (what `logdoctor repair` runs per segment): formats.recovery.rebuild_indexes
on a 1 GB segment generated into /tmp, uncompressed and lz4, one core.

    .venv/bin/python benchmarks/bench_rebuild.py [--gb 1.0] [--repeat 3]

Also times the parts (the batch walk with CRCs alone, the CRC alone) to show where the time goes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command, machine, segment
from logdoctor.formats.crc import crc32c
from logdoctor.formats.record_types import Compression
from logdoctor.formats.records import iter_batches
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.logdir.files import map_file
from logdoctor.sample.records import RecordDataSpec


def best_of(repeat: int, fn) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    target = int(args.gb * (1 << 30))
    print(f"# {machine()}\n# {command()}\n")
    print("| segment | size | batches | rebuild_indexes | walk + CRC only | CRC only |")
    print("|---|---|---|---|---|---|")
    for label, comp in (("uncompressed", Compression.NONE), ("lz4", Compression.LZ4)):
        spec = RecordDataSpec(
            seed=7,
            record_count=None,
            target_bytes=target,
            value_size=512,
            value_kind="json",
            compression=comp,
            key_cardinality=100_000,
        )
        path = segment(spec, f"rebuild-{label}")
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

        t_rebuild = best_of(args.repeat, rebuild)
        t_walk = best_of(args.repeat, walk)
        t_crc = best_of(args.repeat, crc_only)
        gb = size / 1e9
        print(
            f"| {label} | {size / 2**30:.2f} GiB | {r.batch_count:,} "
            f"| {gb / t_rebuild:.2f} GB/s ({t_rebuild:.2f} s) "
            f"| {gb / t_walk:.2f} GB/s | {gb / t_crc:.2f} GB/s |"
        )
        del view
    print(f"\n(page cache warm; {os.cpu_count()} cores present, one used)")


if __name__ == "__main__":
    main()

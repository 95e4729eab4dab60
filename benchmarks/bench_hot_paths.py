"""The formats layer's hot paths on one segment, for before/after comparisons of a refactor: the batch
walk with CRCs, Record objects (record_list), columns (decode_columns, 500 batches a call) and the
index rebuild; CPU seconds, best of ``--repeat``.

    .venv/bin/python benchmarks/bench_hot_paths.py SEGMENT.log [--repeat 5]
    PYTHONPATH=/tmp/before/src .venv/bin/python benchmarks/bench_hot_paths.py SEGMENT.log   # other code

Run both, interleaved, in one sitting on the same machine: a refactor's check that the hot paths kept their
speed (the figures go with the change that needs them; BENCHMARKS.md holds the current figures only).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import logdoctor
from logdoctor.formats.records import iter_batches
from logdoctor.formats.recovery import rebuild_indexes

try:
    from logdoctor.formats.columns import decode_columns
except ImportError:  # code from before formats/columns.py existed
    from logdoctor.formats.batch_v2 import decode_columns  # type: ignore[no-redef]


def best(fn: Callable[[], object], repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("segment", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    mv = memoryview(args.segment.read_bytes())

    def walk() -> None:
        for _ in iter_batches(mv, verify_crc=True):
            pass

    def records() -> None:
        for b in iter_batches(mv):
            b.record_list() if hasattr(b, "record_list") else list(b.records())  # v2, else a v0/v1 entry

    def columns() -> None:
        batches = list(iter_batches(mv))
        for i in range(0, len(batches), 500):
            decode_columns(batches[i : i + 500])

    cases = {
        "walk+crc": walk,
        "record_list": records,
        "decode_columns": columns,
        "rebuild": lambda: rebuild_indexes(mv, 0),
    }
    mb = len(mv) / 2**20
    cells = [f"{name} {best(fn, args.repeat):.3f} s" for name, fn in cases.items()]
    print(f"{Path(logdoctor.__file__).parent.parent} {args.segment.name} ({mb:.0f} MiB): " + ", ".join(cells))


if __name__ == "__main__":
    main()

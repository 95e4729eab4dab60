"""Peak memory of the latest view's two passes for one partition (issues 46 and 57;
``python benchmarks/bench_latest_memory.py N [--distinct]``): N distinct 40-byte keys drawn at random over
2 N records (``--distinct``: N records, each key once), fed in 64 Ki-record Arrow batches to
``logdoctor.spark.latest._latest_offsets`` (what one task holds for one partition: the keys spilled as sorted
runs past ``latest_spill.RUN_ENTRIES``), then the winning offsets walked in ascending order as the second pass
walks them. Prints the distinct keys found, the records, the process's peak RSS and its RSS before, then the
row of BENCHMARKS.md's "Export" table (``benchmarks/update_table.py`` puts it in place).

``--before SRC``-style comparisons: run the same file with ``PYTHONPATH`` at another checkout's ``src``
whose ``_latest_offsets`` takes the batches alone (it then holds every key in memory)."""

import inspect
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from logdoctor.spark.latest import _latest_offsets

N = int(sys.argv[1])
DISTINCT = "--distinct" in sys.argv[2:]
B = 65536


def batches():
    rng = np.random.default_rng(0)
    total = N if DISTINCT else 2 * N
    for start in range(0, total, B):
        n = min(B, total - start)
        ids = np.arange(start, start + n) if DISTINCT else rng.integers(0, N, n)
        keys = pa.array([b"key-%036d" % i for i in ids.tolist()], pa.binary())
        offsets = pa.array(np.arange(start, start + n, dtype=np.int64))
        control = pa.array(np.zeros(n, dtype=bool))
        yield pa.record_batch({"key": keys, "offset": offsets, "is_control": control})


base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
if len(inspect.signature(_latest_offsets).parameters) == 1:  # a checkout before the spill
    w, rec, nk = _latest_offsets(batches())
    count, walked = len(w), len(w)
else:
    from logdoctor.spark.latest_spill import KeyOffsets

    held = KeyOffsets()
    try:
        winners, rec, nk = _latest_offsets(batches(), held)
        count = winners.count
        walked = sum(len(b) for b in winners.ascending())
    finally:
        held.close()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
elapsed = time.perf_counter() - t
print(
    f"{count:,} distinct keys ({walked:,} winners walked), {rec:,} records: peak {peak:.0f} MiB "
    f"(before {base / 1024:.0f} MiB), {elapsed:.1f} s"
)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import TableRows  # noqa: E402

table = TableRows()
keys = f"{count:,} distinct keys" if DISTINCT else f"{N:,} keys drawn over {2 * N:,} records"
table.add(f"latest view of one partition, {keys}, peak RSS", f"{peak:.0f} MiB, {elapsed:.1f} s")
table.print()

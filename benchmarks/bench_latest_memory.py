"""Peak memory of the latest view's first pass (issue 46; ``python benchmarks/bench_latest_memory.py N``):
N distinct 40-byte keys drawn at random over 2 N records, fed in 64 Ki-record Arrow batches to
``logdoctor.spark.latest._latest_offsets`` (what one task holds for one partition). Prints the distinct keys
found, the records, the process's peak RSS and its RSS before."""

import resource
import sys
import time

import numpy as np
import pyarrow as pa

from logdoctor.spark.latest import _latest_offsets

N = int(sys.argv[1])
B = 65536


def batches():
    rng = np.random.default_rng(0)
    for start in range(0, 2 * N, B):
        ids = rng.integers(0, N, B)
        keys = pa.array([b"key-%036d" % i for i in ids.tolist()], pa.binary())
        offsets = pa.array(np.arange(start, start + B, dtype=np.int64))
        control = pa.array(np.zeros(B, dtype=bool))
        yield pa.record_batch({"key": keys, "offset": offsets, "is_control": control})


base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
w, rec, nk = _latest_offsets(batches())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{len(w):,} distinct keys, {rec:,} records: peak {peak:.0f} MiB (before {base / 1024:.0f} MiB), "
      f"{time.perf_counter() - t:.1f} s")

"""Helpers shared by the benchmarks: machine description, timing, cached sample data in /tmp (segments,
the 100,000-segment log dir)."""

from __future__ import annotations

import gc
import hashlib
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from logdoctor.sample.records import RecordDataSpec, write_segment

BENCH_TMP = Path(os.environ.get("LOGDOCTOR_BENCH_TMP", "/tmp/logdoctor-bench"))


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores (nproc), {model}, Python {platform.python_version()}, {platform.system()}"


def command() -> str:
    return " ".join([".venv/bin/python", *sys.argv])


def segment(spec: RecordDataSpec, name: str) -> Path:
    """A generated segment in /tmp (never in the repo), reused while its spec is unchanged."""
    BENCH_TMP.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(repr(sorted(asdict(spec).items())).encode()).hexdigest()[:10]
    path = BENCH_TMP / f"{name}-{digest}.log"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".partial")
        info = write_segment(tmp, spec, keep_batches=False)
        tmp.rename(path)
        print(f"  generated {path} ({info.size / 1e6:.0f} MB, {info.batch_count} batches, "
              f"{info.record_count} records) in {time.perf_counter() - t0:.1f}s", flush=True)
    return path


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` runs (one core: everything here is single-threaded)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def many_segments_dir(partitions: int, segments: int) -> Path:
    """A log dir of ``partitions`` partitions (100 per topic) of ``segments`` one-batch segments each,
    generated once with logdoctor.sample.logdir (tiny segments: a roll per batch, with their indexes, a
    producer snapshot at each log end, checkpoints, meta.properties) and cached in /tmp."""
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    topics = max(1, partitions // 100)
    root = BENCH_TMP / f"logdir-{partitions}p-{segments}s"
    log_dir = root / "broker-0" / "kafka-logs-0"
    if (root / "DONE").exists():
        return log_dir
    t0 = time.perf_counter()
    specs = [
        TopicSpec(
            f"bench.topic_{t:03d}-x",
            partitions=partitions // topics,
            records_per_partition=segments,
            records_per_batch=1,
            value_size=16,
            key_size=0,
            segment_bytes=1,
        )
        for t in range(topics)
    ]
    generate_log_dir(root, specs, producer_snapshots="last")
    (root / "DONE").write_text("")
    print(f"  generated {log_dir} in {time.perf_counter() - t0:.1f}s", flush=True)
    return log_dir


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (a scan's pool workers exit after each scan)."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


class Timing(NamedTuple):
    best: float  # smallest wall time, seconds
    median: float  # median wall time, seconds
    cpu: float  # CPU seconds of the best run: the cost even when other processes share the cores
    result: Any  # what the last run returned


def timed(repeat: int, fn: Callable[[], Any]) -> Timing:
    """Wall and CPU time of ``repeat`` runs of ``fn``, collecting garbage before each."""
    runs, result = [], None
    for _ in range(repeat):
        gc.collect()
        c0, t0 = cpu_seconds(), time.perf_counter()
        result = fn()
        runs.append((time.perf_counter() - t0, cpu_seconds() - c0))
    best = min(runs)
    return Timing(best[0], statistics.median(w for w, _c in runs), best[1], result)


def timed_interleaved(repeat: int, fns: dict[str, Callable[[], Any]]) -> dict[str, tuple[Timing, float]]:
    """:func:`timed` of several functions, run in turn ``repeat`` rounds (each round one run of each, in
    order): on a shared machine, a before and an after measured under the same load. With each Timing,
    the smallest CPU time of its runs (under load the best wall time is luck; the CPU much less so)."""
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    result: dict[str, Any] = {}
    for _ in range(repeat):
        for k, fn in fns.items():
            gc.collect()
            c0, t0 = cpu_seconds(), time.perf_counter()
            result[k] = fn()
            runs[k].append((time.perf_counter() - t0, cpu_seconds() - c0))
    out = {}
    for k, r in runs.items():
        best = min(r)
        timing = Timing(best[0], statistics.median(w for w, _c in r), best[1], result[k])
        out[k] = (timing, min(c for _w, c in r))
    return out


def export_parquet_one_process(slices: Any, opts: Any, target: Path) -> int:
    """The single-process export a user has without Spark: each slice's Arrow batches (``read_slice``,
    the code a Spark task runs) written by pyarrow to ``target/part-NNNNN.parquet``; returns the rows."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from logdoctor.spark.sources import read_slice

    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    n = 0
    for i, sl in enumerate(slices):
        batches = list(read_slice(sl, opts))
        if batches:
            table = pa.Table.from_batches(batches)
            pq.write_table(table, target / f"part-{i:05d}.parquet")
            n += table.num_rows
    return n

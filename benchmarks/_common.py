"""Helpers shared by the benchmarks: machine description, timing, cached sample data in /tmp (segments,
the 100,000-segment log dir), and the BENCHMARKS.md rows a run prints (:class:`TableRows`)."""

from __future__ import annotations

import gc
import hashlib
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

from logdoctor.sample.records import RecordDataSpec, write_segment
from update_table import MARKER

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


REPO = Path(__file__).resolve().parents[1]


def load_average() -> str:
    """The 1-minute load average now, as BENCHMARKS.md's load column gives it (``/proc/loadavg``)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def head_commit() -> str:
    """``git rev-parse --short HEAD`` of this checkout, with "+" when ``src/`` or ``benchmarks/`` has changes
    not committed (the tree measured is then not that commit's)."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "benchmarks"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return head + ("+" if dirty else "")


def ratio(figure: float, anchor: float) -> str:
    """BENCHMARKS.md's ratio cell: the figure over its anchor, in the figure's unit."""
    return f"{figure / anchor:.2f}x" if anchor else "-"


def table_row(*cells: str) -> str:
    """One markdown table row; a ``|`` inside a cell is escaped."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def row_command() -> str:
    """This run's command line as BENCHMARKS.md's command column gives it: from the repository's root,
    through the venv's interpreter."""
    script = Path(sys.argv[0])
    if script.resolve().is_relative_to(REPO):
        script = script.resolve().relative_to(REPO)
    return "`" + " ".join([".venv/bin/python", str(script), *sys.argv[1:]]) + "`"


class TableRows:
    """The BENCHMARKS.md rows of one benchmark run: ``| what | figure | anchor (same run) | ratio | command
    | load | commit |``. Made when the run starts (the load noted then), a row added per figure, printed at
    the end (with the load then); ``benchmarks/update_table.py`` replaces BENCHMARKS.md's rows of the same
    "what" with them. The "what" of a row is its key: keep it the same from run to run."""

    def __init__(self) -> None:
        self.load_start = load_average()
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, what: str, figure: str, anchor: str = "-", ratio: str = "-") -> None:
        self.rows.append((what, figure, anchor, ratio))

    def lines(self) -> list[str]:
        load = f"{self.load_start} / {load_average()}"
        cmd, commit = row_command(), head_commit()
        return [table_row(*row, cmd, load, commit) for row in self.rows]

    def print(self) -> None:
        if not self.rows:
            return
        print(f"\n{MARKER} (benchmarks/update_table.py puts them in place):")
        print("| what | figure | anchor (same run) | ratio | command | load | commit |")
        print("|---|---|---|---|---|---|---|")
        for line in self.lines():
            print(line, flush=True)


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

    from logdoctor.spark.sources.slice_reader import read_slice

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

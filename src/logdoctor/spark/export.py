"""Export the records of log dirs to Parquet (or Delta, when its jars are on the classpath).

Two writers, same table (hive-style ``topic=/partition=`` folders, the ``kafka-log`` schema):

- ``arrow`` (default for Parquet): Spark schedules one task per group of segment slices (the
  input partitions ``kafka-log`` would use) and each task writes its Arrow batches straight to
  Parquet with pyarrow. The records never cross into the JVM, which is where most of Spark's
  cost was (its row-based Parquet writer; see BENCHMARKS.md).
- ``spark``: ``spark.read.format("kafka-log")...write.parquet()`` / ``.format("delta")``: the
  DataFrame path (needed for Delta).

The corrupt ranges that were skipped come from ``kafka-log-segments`` over the same segments.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMATS = ("parquet", "delta")
WRITERS = ("arrow", "spark")
ROWS_PER_FILE = 1_000_000
DELTA_UNAVAILABLE = (
    "--format delta needs Delta Lake's JVM jars (io.delta:delta-spark_2.13 and delta-storage) on Spark's "
    "classpath. The delta-spark package on PyPI ships only the Python API: it fetches those jars from "
    "Maven Central (spark.jars.packages) when the session starts, and Maven Central cannot be reached from "
    "here, so Delta cannot be installed from PyPI alone. Use --format parquet, or put the two jars in "
    "{jars_dir} (or name them in LOGDOCTOR_DELTA_JARS, comma-separated) and try again."
)


class ExportError(RuntimeError):
    """The export cannot run as asked (e.g. Delta without its jars)."""


def delta_jars() -> list[str]:
    """Delta Lake jars available locally: LOGDOCTOR_DELTA_JARS, or pyspark's own jars folder."""
    env = os.environ.get("LOGDOCTOR_DELTA_JARS", "")
    jars = [j for j in (p.strip() for p in env.split(",")) if j and os.path.isfile(j)]
    if jars:
        return jars
    try:
        import pyspark

        jars_dir = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    except ImportError:  # pragma: no cover
        return []
    return sorted(
        glob.glob(os.path.join(jars_dir, "delta-spark_*.jar"))
        + glob.glob(os.path.join(jars_dir, "delta-storage-*.jar"))
    )


def check_delta() -> list[str]:
    """The Delta jars to use, or ExportError saying why Delta is not possible here."""
    jars = delta_jars()
    if not any(os.path.basename(j).startswith("delta-spark_") for j in jars):
        try:
            import pyspark

            jars_dir = os.path.join(os.path.dirname(pyspark.__file__), "jars")
        except ImportError:  # pragma: no cover
            jars_dir = "pyspark/jars"
        raise ExportError(DELTA_UNAVAILABLE.format(jars_dir=jars_dir))
    return jars


@dataclass(slots=True)
class SkippedRange:
    path: str
    valid_bytes: int
    size_bytes: int
    error: str

    @property
    def skipped_bytes(self) -> int:
        return max(0, self.size_bytes - self.valid_bytes)


@dataclass(slots=True)
class ExportResult:
    out_dir: str
    format: str
    rows: int
    files: int
    bytes_out: int
    bytes_in: int
    segments: int
    skipped: list[SkippedRange] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def records_per_s(self) -> float:
        return self.rows / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "out_dir": self.out_dir,
            "format": self.format,
            "rows": self.rows,
            "files": self.files,
            "bytes_out": self.bytes_out,
            "bytes_in": self.bytes_in,
            "segments": self.segments,
            "skipped": [
                {
                    "path": s.path,
                    "valid_bytes": s.valid_bytes,
                    "size_bytes": s.size_bytes,
                    "skipped_bytes": s.skipped_bytes,
                    "error": s.error,
                }
                for s in self.skipped
            ],
            "elapsed_s": round(self.elapsed_s, 3),
            "records_per_s": round(self.records_per_s, 1),
        }


def _parquet_stats(out_dir: str) -> tuple[int, int, int]:
    """(rows, files, bytes) of the Parquet files under ``out_dir`` (from their footers)."""
    import pyarrow.parquet as pq

    rows = files = size = 0
    for path in Path(out_dir).rglob("*.parquet"):
        files += 1
        size += path.stat().st_size
        rows += pq.ParquetFile(path).metadata.num_rows
    return rows, files, size


class StageProgress:
    """Polls Spark's status tracker in a thread and reports (done, total) tasks of the running job."""

    def __init__(self, spark: Any, callback: Callable[[int, int], None], interval: float = 0.5) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._callback = callback
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                done = total = 0
                for sid in self._tracker.getActiveStageIds():
                    info = self._tracker.getStageInfo(sid)
                    if info is not None:
                        done += info.numCompletedTasks
                        total += info.numTasks
                if total:
                    self._callback(done, total)
            except Exception:  # the JVM may be shutting down
                return

    def __enter__(self) -> StageProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


def write_slices(
    task: int, slices: Sequence[Any], opts: Any, out_dir: str, partition_by: Sequence[str]
) -> dict[str, int]:
    """Executor side of the ``arrow`` writer: read the slices, write Parquet files under ``out_dir``."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from logdoctor.spark.sources import read_slice

    rows = 0
    chunk: list[pa.RecordBatch] = []
    chunk_rows = 0
    part = 0

    def flush() -> None:
        nonlocal chunk, chunk_rows, part
        if not chunk:
            return
        table = pa.Table.from_batches(chunk)
        ds.write_dataset(
            table,
            out_dir,
            format="parquet",
            partitioning=list(partition_by) or None,
            partitioning_flavor="hive" if partition_by else None,
            basename_template=f"part-{task:05d}-{part:04d}-{{i}}.parquet",
            existing_data_behavior="overwrite_or_ignore",
            max_rows_per_group=128 * 1024,
        )
        part += 1
        chunk, chunk_rows = [], 0

    for sl in slices:
        for rb in read_slice(sl, opts):
            chunk.append(rb)
            chunk_rows += rb.num_rows
            rows += rb.num_rows
            if chunk_rows >= ROWS_PER_FILE:
                flush()
    flush()
    return {"task": task, "rows": rows}


def _export_arrow(
    spark: Any, items: list[str], out: str, opts_map: Mapping[str, str], partition_by: Sequence[str]
) -> int:
    import shutil

    from logdoctor.spark.planning import discover, pack_slices, parse_read_options, plan_slices

    opts = parse_read_options(opts_map)
    slices = plan_slices(discover(items), opts)
    groups = pack_slices(slices, opts.max_partition_bytes, opts.min_partitions)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)
    if not groups:
        return 0
    cols = tuple(partition_by)
    tasks = list(enumerate(groups))
    done = (
        spark.sparkContext.parallelize(tasks, len(tasks))
        .map(lambda t: write_slices(t[0], t[1], opts, out, cols))
        .collect()
    )
    Path(out, "_SUCCESS").write_bytes(b"")
    return sum(d["rows"] for d in done)


def run_export(
    spark: Any,
    paths: Sequence[str] | str,
    out_dir: str | os.PathLike[str],
    *,
    fmt: str = "parquet",
    partition_by: Sequence[str] = ("topic", "partition"),
    options: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    writer: str | None = None,
) -> ExportResult:
    """Read PATHS as ``kafka-log`` (``options`` as for that source) and write the table to ``out_dir``.

    ``writer``: "arrow" (default for parquet) or "spark" (the DataFrame writer; always for delta).
    """
    from logdoctor.spark.planning import discover, split_paths, topic_matcher
    from logdoctor.spark.schema import records_fields

    if fmt not in FORMATS:
        raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "delta":
        check_delta()
    writer = writer or ("spark" if fmt == "delta" else "arrow")
    if writer not in WRITERS:
        raise ExportError(f"--writer must be one of {', '.join(WRITERS)}, got {writer!r}")
    if fmt == "delta" and writer != "spark":
        raise ExportError("--format delta is written by Spark's DataFrame writer (--writer spark)")
    opts = {k: str(v) for k, v in (options or {}).items() if v is not None}
    items = split_paths(paths)
    known = {name for name, _, _ in records_fields(True)}
    bad = [c for c in partition_by if c not in known]
    if bad:
        raise ExportError(f"--partition-by: unknown column(s) {', '.join(bad)}")
    out = str(out_dir)
    started = time.perf_counter()
    tracker = StageProgress(spark, progress) if progress is not None else None
    if tracker is not None:
        tracker.__enter__()
    try:
        if writer == "arrow":
            _export_arrow(spark, items, out, opts, partition_by)
        else:
            df = spark.read.format("kafka-log").options(**opts).load(items)
            w = df.write.mode("overwrite")
            if partition_by:
                w = w.partitionBy(*partition_by)
            w.format(fmt).save(out)
    finally:
        if tracker is not None:
            tracker.__exit__(None, None, None)
    elapsed = time.perf_counter() - started
    rows, files, size = _parquet_stats(out)
    match = topic_matcher(opts.get("topics"))
    segs = [s for ref in discover(items) if match(ref.topic) for s in ref.segments]
    skipped: list[SkippedRange] = []
    bad_rows = (
        spark.read.format("kafka-log-segments")
        .options(**({"topics": opts["topics"]} if "topics" in opts else {}))
        .load(items)
        .where("error is not null")
        .select("path", "valid_bytes", "size_bytes", "error")
        .collect()
    )
    for r in bad_rows:
        skipped.append(SkippedRange(r["path"], int(r["valid_bytes"]), int(r["size_bytes"]), r["error"]))
    skipped.sort(key=lambda s: s.path)
    return ExportResult(
        out_dir=out,
        format=fmt,
        rows=rows,
        files=files,
        bytes_out=size,
        bytes_in=sum(s.size for s in segs),
        segments=len(segs),
        skipped=skipped,
        elapsed_s=elapsed,
    )

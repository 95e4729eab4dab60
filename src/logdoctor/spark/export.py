"""Export the records of log dirs to Parquet, or any format the session has jars for.

logdoctor bundles no data source jars: ``fmt`` other than ``parquet`` is handed to Spark's DataFrame
writer as is, so Spark's built-in sources work and any other (Delta Lake, Iceberg...) needs its jars
given to Spark (``--conf spark.jars.packages=...``, or spark-submit's ``--packages``/``--jars``); a
format Spark cannot find raises :class:`FormatUnavailableError` before anything is written.

Two writers, same table (hive-style ``topic=/partition=`` folders, the ``kafka-log`` schema):

- ``spark`` (default on a cluster, i.e. a master that is not ``local[...]``, or for an ``--out`` URI):
  ``spark.read.format("kafka-log")...write.format(fmt).mode(mode).save(out)``. Task retries,
  speculation and the job commit are Spark's output committer's; ``_SUCCESS`` marks a committed job.
- ``arrow`` (default for a ``local[...]`` master writing Parquet to a local folder, and only
  allowed there): Spark schedules one task per group of segment slices (the input partitions
  ``kafka-log`` would use) and each task writes its Arrow batches straight to Parquet with pyarrow
  into its own task-attempt folder ``OUT/_temporary/<job>/<task>-<attempt>``; when the job has
  succeeded the driver moves the files of the one attempt per task that Spark reported done into
  ``OUT`` and deletes ``_temporary`` (a failed, retried or speculative attempt leaves nothing).

``mode``: ``error`` (default; refuse an existing non-empty ``OUT``), ``overwrite`` (replace it, after
the job succeeded for the arrow writer) or ``append``. ``OUT`` at, inside or above an input is
always refused before anything is written or deleted (:mod:`logdoctor.logdir.outputs`).

The corrupt ranges that were skipped come from ``kafka-log-segments`` over the same segments; with the
arrow writer its rows are made by the write tasks themselves (:func:`damaged_segments`, the same code, in
the same Spark job: no second job), and its tasks report the remote tier's segments (``remoteStorage``)
they could not read, so that the remote tier is read once. The batches skipped alone (the rows go on
after them):
those whose records do not decode, and those whose CRC does not match where the framing is intact after
them (named with both CRCs), come from the arrow writer's tasks, or for the spark writer from
``kafka-log-segments`` (``crc_mismatches``; ``undecodable`` with ``checkRecords``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.logdir.read_options import ReadOptions

WRITERS = ("arrow", "spark")
MODES = ("error", "overwrite", "append")
TEMPORARY = "_temporary"
ROWS_PER_FILE = 1_000_000
FORMAT_UNAVAILABLE = (
    "--format {fmt}: Spark has no data source named {fmt!r} (nothing was written). logdoctor bundles no "
    "data source jars: give Spark the format's jars and the confs it needs, e.g. --conf "
    "spark.jars.packages=GROUP:ARTIFACT:VERSION (fetched from Maven Central when the session starts) or "
    "--conf spark.jars=/path/to/a.jar,/path/to/b.jar (docs/cluster.md, Export formats), or use "
    "--format parquet"
)


class ExportError(RuntimeError):
    """The export cannot run as asked."""


class FormatUnavailableError(ExportError):
    """Spark has no data source of the ``--format`` name: its jars were not given (nothing written)."""


class OutputExistsError(ExportError):
    """``--mode error`` and the output already holds data (nothing was written or deleted)."""


def is_local_path(location: str) -> bool:
    """A plain path or a ``file:`` URI (the arrow writer's only kind of output)."""
    from urllib.parse import urlsplit

    scheme = urlsplit(str(location)).scheme
    return scheme in ("", "file") or len(scheme) == 1  # "C:" is a drive, not a scheme


def _local(location: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(str(location))
    return parts.path if parts.scheme == "file" else str(location)


def output_has_data(out: str) -> bool:
    """Whether ``out`` exists and holds anything (local path or a pyarrow-understood URI)."""
    if is_local_path(out):
        path = _local(out)
        return os.path.exists(path) and (not os.path.isdir(path) or any(os.scandir(path)))
    try:
        import pyarrow.fs as pafs

        fs, root = pafs.FileSystem.from_uri(out)
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            return False
        if info.type == pafs.FileType.File:
            return True
        return bool(fs.get_file_info(pafs.FileSelector(root, recursive=False, allow_not_found=True)))
    except Exception:  # no filesystem for the scheme here: Spark's writer will say (mode error)
        return False


def overwrite_refusal(out: str, fmt: str) -> str | None:
    """Why ``--mode overwrite`` may not replace ``out`` (None: it holds only an earlier export's files,
    or nothing): :mod:`logdoctor.spark.export_output`, a local folder or a URI's objects (a store that
    cannot be listed here is left to Spark's writer)."""
    from logdoctor.spark.export_output import export_output, foreign_objects, refusal_text

    if not is_local_path(out):
        return refusal_text(out, foreign_objects(out, fmt) or [])
    return export_output(_local(out), fmt).refusal()


def _list_files(out: str) -> dict[str, int]:
    """{relative path: size} of the data files under ``out`` (not ``_``/``.`` files), best effort."""
    files: dict[str, int] = {}
    if is_local_path(out):
        root = _local(out)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
            for name in filenames:
                if not name.startswith(("_", ".")):
                    full = os.path.join(dirpath, name)
                    files[os.path.relpath(full, root)] = os.path.getsize(full)
        return files
    try:
        import pyarrow.fs as pafs

        fs, root = pafs.FileSystem.from_uri(out)
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
            rel = info.path[len(root) :].lstrip("/")
            if info.type == pafs.FileType.File and not any(p.startswith(("_", ".")) for p in rel.split("/")):
                files[rel] = info.size or 0
    except Exception:
        pass
    return files


@dataclass(slots=True)
class SkippedRange:
    """Bytes of a segment whose records were not exported: from ``start`` to ``end`` (file positions).
    Damage of the batch framing (CRC, torn or zero-filled tail) ends a segment's rows: ``start`` is then
    its valid bytes and ``end`` its size. A batch whose records do not decode is skipped alone
    (``end`` - ``start`` is its size, with its offsets); the rows go on after it."""

    path: str
    valid_bytes: int
    size_bytes: int
    error: str
    start: int | None = None
    end: int | None = None
    base_offset: int | None = None
    last_offset: int | None = None

    @classmethod
    def batch(
        cls, path: str, position: int, size: int, error: str, base_offset: Any, last_offset: Any
    ) -> SkippedRange:
        """One batch of ``size`` bytes at ``position``, skipped alone (the rows go on after it)."""
        end = position + size
        return cls(path, position, end, error, position, end, base_offset, last_offset)

    @property
    def range_start(self) -> int:
        return self.valid_bytes if self.start is None else self.start

    @property
    def range_end(self) -> int:
        return self.size_bytes if self.end is None else self.end

    @property
    def skipped_bytes(self) -> int:
        return max(0, self.range_end - self.range_start)

    def describe(self) -> str:
        """``bytes A..B`` (and ``offsets X..Y`` for one batch)."""
        text = f"bytes {self.range_start:,}..{self.range_end:,}"
        if self.last_offset is not None:
            first = "?" if self.base_offset is None else f"{self.base_offset}"
            text += f", offsets {first}..{self.last_offset}"
        return text


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
    writer: str = "arrow"
    mode: str = "error"
    #: internal topics the export left out (logdoctor.logdir.read_plan)
    left_out: list[str] = field(default_factory=list)
    #: per partition, what the isolation level left out (logdoctor.logdir.consumer_view)
    transactions: list[dict[str, Any]] = field(default_factory=list)
    isolation_level: str = "read_committed"
    #: ``history`` or ``latest``; per partition what the latest view counted (logdoctor.spark.latest)
    view: str = "history"
    latest: list[dict[str, Any]] = field(default_factory=list)
    #: --typed: per topic what was decoded and sent to the side table (logdoctor.spark.typed_job.TypedSummary)
    typed: Any = None
    #: seconds of each part of the run, in order: "planning" (the read plan, the output checked; a table
    #: opened and checked), "writing" (the tasks and the commit: ``elapsed_s``), "sweep" (a table's
    #: files earlier exports left uncommitted, removed) and "skipped ranges" (naming the ranges not
    #: exported; a table export's is "segments pass": a Spark pass over the segments, as its tasks do
    #: not check them)
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def records_per_s(self) -> float:
        return self.rows / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "out_dir": self.out_dir,
            "format": self.format,
            "writer": self.writer,
            "mode": self.mode,
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
                    "start": s.range_start,
                    "end": s.range_end,
                    "base_offset": s.base_offset,
                    "last_offset": s.last_offset,
                    "error": s.error,
                }
                for s in self.skipped
            ],
            "elapsed_s": round(self.elapsed_s, 3),
            "records_per_s": round(self.records_per_s, 1),
            "internal_topics_left_out": list(self.left_out),
            "isolation_level": self.isolation_level,
            "transactions": list(self.transactions),
            "view": self.view,
            "latest": list(self.latest),
            **({"typed": self.typed.to_json()} if self.typed is not None else {}),
            "phases_s": {k: round(v, 3) for k, v in self.phases.items()},
        }


class StageProgress:
    """Polls Spark's status tracker in a thread and reports (done, total) tasks of the running job."""

    def __init__(self, spark: Any, callback: Callable[[int, int], None], interval: float = 0.5) -> None:
        try:
            self._tracker: Any = spark.sparkContext.statusTracker()
        except Exception:  # Spark Connect: no SparkContext on the client, hence no progress
            self._tracker = None
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
        if self._tracker is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)


def tracking(spark: Any, progress: Callable[[int, int], None] | None) -> Any:
    """A context that reports the running Spark job's tasks to ``progress`` (none when None)."""
    return StageProgress(spark, progress) if progress is not None else contextlib.nullcontext()


@dataclass(slots=True)
class ExportJob:
    """The sequence every export driver runs (issue 86), each driver only what differs (its checks of the
    output, its tasks, its commit): the read plan of PATHS, the output checked against every input and the
    transactions (:meth:`planned`); the typed plan's first pass (:meth:`survey`); the read restarted above
    what a table holds (:meth:`restart_above`); the slices packed into tasks (:meth:`groups`); the tasks run
    as one Spark job (:meth:`collect`); the ranges not read, named (:meth:`skipped`); the seconds of each part
    of the run (:meth:`lap`); the result's common fields (:meth:`result`). The drivers:
    :func:`run_export`, ``tables.export.run_table_export``, ``tables.typed_export.run_typed_table_export``
    and ``cdc_job.run_cdc_export``."""

    spark: Any
    out: str
    opts: ReadOptions
    plan: Any  # logdoctor.logdir.read_plan.ReadPlan
    txns: dict[tuple[str, str, int], Any]
    mode: str = "error"
    mark: float = 0.0  # when the last part of the run (:meth:`lap`) ended, or planning began
    done: list[dict[str, Any]] = field(default_factory=list)
    loaded: Any = None  # the typed plan's registry and the plan (:meth:`survey`)
    typed: Any = None
    phases: dict[str, float] = field(default_factory=dict)

    @classmethod
    def planned(
        cls, spark: Any, paths: Sequence[str] | str, out: str, opts: ReadOptions, mode: str = "error"
    ) -> ExportJob:
        from logdoctor.logdir.outputs import absolute_location, check_output_location
        from logdoctor.logdir.slices import plan_transactions, read_plan

        begun = time.perf_counter()
        if mode not in MODES:
            raise ExportError(f"--mode must be one of {', '.join(MODES)}, got {mode!r}")
        out = absolute_location(out)  # what is written and printed must not depend on the folder it ran in
        plan = read_plan(paths, opts)  # the remote tier too (issue 31)
        # never write or delete at, inside or above an input (the items and the log dirs found in them)
        check_output_location(out, [*plan.items, *plan.log_dirs])
        return cls(spark, out, opts, plan, plan_transactions(plan.refs, opts, plan.decisions), mode, begun)

    @property
    def items(self) -> list[str]:
        return list(self.plan.items)

    def refuse_existing(self, modes: str = "overwrite / append") -> None:
        """``--mode error`` and an output that holds data: :class:`OutputExistsError` (``modes``: those the
        message offers), before anything is written or deleted."""
        if self.mode == "error" and output_has_data(self.out):
            raise OutputExistsError(
                f"output {self.out} exists and is not empty: choose another --out, or --mode {modes} "
                "(nothing was written or deleted)"
            )

    def survey(self) -> Any:
        """The typed plan's first pass (:mod:`logdoctor.spark.typed_job`): the registry of the inputs loaded
        (``loaded``), then each topic's types found by one Spark job. Returns the typed plan (``typed``)."""
        from logdoctor.spark.typed_job import load_typed_registry, survey_job

        self.loaded = load_typed_registry(self.items, self.opts)
        self.typed = survey_job(self.spark, self.plan.refs, self.opts, self.txns, self.loaded.registry)
        return self.typed

    def typed_summary(self, tables: Mapping[str, str] | None = None, parts: Any = None) -> Any:
        """The typed export's summary: per topic its counts (the tasks', unless ``parts``) and its table
        (``OUT/<topic>`` unless ``tables``)."""
        from logdoctor.spark.typed_job import summary_of

        parts = [d["typed"] for d in self.done if d.get("typed")] if parts is None else parts
        tables = {t: f"{self.out.rstrip('/')}/{t}" for t in self.typed.topics} if tables is None else tables
        return summary_of(parts, self.loaded, tables)

    def restart_above(self, above: Mapping[tuple[str, int], int]) -> ReadOptions:
        """``--mode append``: each partition read from after the last offset its table holds (``above``;
        not when the read starts at a timestamp), and the transactions planned again for that read.
        Returns the options of the read."""
        from logdoctor.logdir.slices import EARLIEST, LATEST, PerPartition, plan_transactions

        opts = self.opts
        if not above or opts.starting_timestamps.default is not None or opts.starting_timestamps.by_partition:
            return opts
        start = opts.starting_offsets
        by = dict(start.by_partition)
        for key, last in above.items():
            given = start.get(*key)
            if given != LATEST and (given is None or given == EARLIEST or given < last + 1):
                by[key] = last + 1
        self.opts = dataclasses.replace(opts, starting_offsets=PerPartition(start.default, by))
        self.txns = plan_transactions(self.plan.refs, self.opts, self.plan.decisions)
        return self.opts

    def groups(self, refs: Sequence[Any] | None = None) -> list[Any]:
        """The slices of ``refs`` (all the plan's when None) packed into tasks."""
        from logdoctor.logdir.slices import plan_slices, task_groups

        refs = self.plan.refs if refs is None else refs
        return task_groups(plan_slices(refs, self.opts, self.txns), self.opts)

    def collect(
        self, tasks: Sequence[Any], run: Callable[[Any, Any], Any], shared: Any = None, progress: Any = None
    ) -> list[dict[str, Any]]:
        """``run(task, shared)`` over ``tasks`` as one Spark job, a task each (``shared``, e.g. a typed plan,
        shipped once per executor; the tasks told to ``progress``): their results (``done``); a task that
        found the disk full raises here, before anything is committed (:func:`raise_if_no_space`)."""
        if tasks:
            from logdoctor.spark.typed import broadcast, shipped

            value = broadcast(self.spark, shared)
            parallel = self.spark.sparkContext.parallelize(list(tasks), len(tasks))
            with tracking(self.spark, progress):
                self.done = parallel.map(lambda t: run(t, shipped(value))).collect()
        raise_if_no_space(self.out, self.done)
        return self.done

    def lap(self, part: str) -> None:
        """The seconds since the last part of the run ended (the first part: since planning began), as the
        result's phase ``part`` (ExportResult.phases)."""
        now = time.perf_counter()
        self.phases[part] = now - self.mark
        self.mark = now

    def skipped(self, writer: str = "arrow", damaged: Sequence[Any] | None = None) -> list[SkippedRange]:
        """Every range the export could not read (:func:`skipped_ranges`), with what the tasks reported."""
        return skipped_ranges(
            self.spark,
            self.items,
            self.opts,
            writer,
            [u for d in self.done for u in d.get("undecodable") or ()],
            [p for d in self.done for p in d.get("skipped") or ()],
            self.plan,
            damaged,
            self.txns,
        )

    def result(self, cls: type[ExportResult] = ExportResult, **fields: Any) -> Any:
        """``cls`` with the fields every export's result has from its plan, its tasks (the rows they wrote and
        the ranges not read, unless ``fields`` names them) and its phases (``writing``: ``elapsed_s``), and
        ``fields``."""
        from logdoctor.logdir.consumer_view import transaction_summary

        segs = [s for ref in self.plan.refs for s in ref.segments]
        common = {
            "out_dir": self.out,
            "rows": sum(int(d.get("rows") or 0) for d in self.done),
            "bytes_in": sum(s.size for s in segs),
            "segments": len(segs),
            "left_out": list(self.plan.left_out),
            "transactions": transaction_summary(self.plan.refs, self.txns, self.opts),
            "isolation_level": self.opts.isolation_level,
            "view": self.opts.view,
            "latest": [x for d in self.done for x in d.get("latest") or ()],
            "mode": self.mode,
            "elapsed_s": self.phases.get("writing", 0.0),
            "phases": dict(self.phases),
        }
        if "skipped" not in fields:
            common["skipped"] = self.skipped()
        return cls(**{**common, **fields})


def task_attempt() -> int | None:
    """This Spark task's attempt number (None outside a task)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return None if ctx is None else ctx.attemptNumber()


def fail_if_first_attempt() -> None:
    """``fail_first_attempt``'s failure (the tests'): a task's first attempt fails after writing its files."""
    if task_attempt() == 0:
        raise RuntimeError("logdoctor test: first task attempt fails after writing its files")


def attempt_dir(out_dir: str, job: str, task: int, attempt: int) -> str:
    """The folder one task attempt of the arrow writer writes into (under ``OUT/_temporary``)."""
    return os.path.join(out_dir, TEMPORARY, job, f"task-{task:05d}-attempt-{attempt}")


def write_slices(
    task: int,
    slices: Sequence[Any],
    opts: Any,
    out_dir: str,
    partition_by: Sequence[str],
    job: str = "0",
    attempt: int | None = None,
    typed: Any = None,
) -> dict[str, Any]:
    """Executor side of the ``arrow`` writer: read the slices, write Parquet files into this task
    attempt's own folder (:func:`attempt_dir`); the driver commits them (:func:`commit_attempts`).
    ``typed`` (a :class:`logdoctor.spark.typed.TypedPlan`): one folder per topic and ``_undecoded``."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from logdoctor.spark.latest import latest_json
    from logdoctor.spark.sources.slice_reader import WRITE_FLUSH_BYTES, read_slices

    if attempt is None:
        attempt = task_attempt() or 0
    target = attempt_dir(out_dir, job, task, attempt)
    if os.path.isdir(target):  # a previous run of this very attempt id (cannot be committed)
        import shutil

        shutil.rmtree(target)

    rows = 0
    # one chunk per table: the export's one table (key None), or with ``typed`` one per topic and the side
    # table (logdoctor.spark.typed), each written into its own folder of the attempt
    chunks: dict[str | None, list[pa.RecordBatch]] = {}
    held_rows: dict[str | None, int] = {}
    held_bytes: dict[str | None, int] = {}
    parts: dict[str | None, int] = {}

    def flush(name: str | None) -> None:
        chunk = chunks.pop(name, None)
        held_rows.pop(name, None)
        held_bytes.pop(name, None)
        if not chunk:
            return
        table = pa.Table.from_batches(chunk)
        part = parts.get(name, 0)
        parts[name] = part + 1
        hive = name is None and bool(partition_by)
        ds.write_dataset(
            table,
            target if name is None else os.path.join(target, name),
            format="parquet",
            partitioning=list(partition_by) if hive else None,
            partitioning_flavor="hive" if hive else None,
            basename_template=f"part-{task:05d}-{job}-{part:04d}-{{i}}.parquet",
            existing_data_behavior="overwrite_or_ignore",
            max_rows_per_group=128 * 1024,
        )

    def hold(name: str | None, rb: pa.RecordBatch) -> None:
        nonlocal rows
        chunks.setdefault(name, []).append(rb)
        held_rows[name] = held_rows.get(name, 0) + rb.num_rows
        held_bytes[name] = held_bytes.get(name, 0) + rb.nbytes
        if held_rows[name] >= ROWS_PER_FILE or sum(held_bytes.values()) >= WRITE_FLUSH_BYTES:
            flush(max(held_bytes, key=lambda k: held_bytes[k]))

    problems: list[dict[str, Any]] = []
    undecodable: list[dict[str, Any]] = []
    latest: dict[tuple[str, str, int], Any] = {}
    splitter = None
    if typed is not None:
        from logdoctor.spark.typed import UNDECODED, TypedBatches

        splitter = TypedBatches(typed)
    try:
        for rb in read_slices(slices, opts, undecodable=undecodable, problems=problems, latest=latest):
            if splitter is None:
                rows += rb.num_rows
                hold(None, rb)
                continue
            topic, good, bad = splitter.split(rb)
            if good is not None and good.num_rows:
                rows += good.num_rows
                hold(topic, good)
            if bad is not None and bad.num_rows:
                hold(UNDECODED, bad)
        for name in list(chunks):
            flush(name)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        import shutil

        shutil.rmtree(target, ignore_errors=True)  # a full disk: the task says so, the driver stops the job
        return {"task": task, "rows": 0, "dir": target, "no_space": f"{exc}"}
    result = {
        "task": task,
        "rows": rows,
        "dir": target,
        "skipped": problems,
        "undecodable": undecodable,
        "latest": latest_json(latest),
    }
    if splitter is not None:
        from logdoctor.spark.typed import counts_json

        result["typed"] = counts_json(splitter.counts)
    return result


def raise_if_no_space(out: str, done: Sequence[Mapping[str, Any]]) -> None:
    """A task that found the disk full (ENOSPC) returned instead of failing (Spark would log its traceback
    and retry it): the driver raises the OSError here, before anything is committed."""
    full = [d["no_space"] for d in done if d.get("no_space")]
    if full:
        raise OSError(errno.ENOSPC, f"No space left on device ({full[0]})", out)


def commit_attempts(
    out_dir: str, job: str, done: Sequence[Mapping[str, Any]], mode: str = "error"
) -> list[str]:
    """Driver side: move the files of each task's committed attempt into ``out_dir``, drop the rest
    (``--mode overwrite``: what an earlier export wrote there deleted first, :func:`_clear_output`).

    ``done`` are the results Spark returned: exactly one per task, from the attempt that
    succeeded. Files of failed, killed or speculative duplicate attempts stay under
    ``_temporary/<job>`` and are deleted with it. Returns the committed files (relative paths).
    """
    import shutil

    if mode == "overwrite":
        _clear_output(out_dir)
    committed: list[str] = []
    for result in sorted(done, key=lambda d: d["task"]):
        src = str(result["dir"])
        for dirpath, _, filenames in os.walk(src):
            rel_dir = os.path.relpath(dirpath, src)
            dest_dir = os.path.normpath(os.path.join(out_dir, rel_dir))
            os.makedirs(dest_dir, exist_ok=True)
            for name in sorted(filenames):
                dest = os.path.join(dest_dir, name)
                if os.path.exists(dest):
                    raise ExportError(f"commit: {dest} exists already (a file name of another job?)")
                os.replace(os.path.join(dirpath, name), dest)
                committed.append(os.path.relpath(dest, out_dir))
    shutil.rmtree(os.path.join(out_dir, TEMPORARY, job), ignore_errors=True)
    with contextlib.suppress(OSError):  # only when no other job is writing there
        os.rmdir(os.path.join(out_dir, TEMPORARY))
    return committed


def _abort_job(spark: Any, out_dir: str, job: str, created: bool) -> None:
    """A failed job: delete its attempt folders (once the tasks Spark is cancelling have stopped)."""
    import shutil

    wait_for_cancelled_tasks(spark)
    # A cancelled task's Python worker may still be writing for up to spark.python.task.killTimeout
    # (2 s) after its JVM thread stopped: delete until nothing has reappeared for that long and more.
    job_dir = os.path.join(out_dir, TEMPORARY, job)
    quiet_since = time.monotonic()
    deadline = quiet_since + 15
    while time.monotonic() < deadline:
        if os.path.lexists(job_dir):
            shutil.rmtree(job_dir, ignore_errors=True)
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 3:
            break
        time.sleep(0.25)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.join(out_dir, TEMPORARY))
        if created:
            os.rmdir(out_dir)


def wait_for_cancelled_tasks(spark: Any, timeout_s: float = 30) -> None:
    """Until the tasks Spark is cancelling after a failed job have stopped (their JVM side), at most
    ``timeout_s``: a file they were writing is then complete, and can be deleted."""
    with contextlib.suppress(Exception):  # Spark Connect: no SparkContext here; a JVM shutting down
        tracker = spark.sparkContext.statusTracker()
        deadline = time.monotonic() + timeout_s
        while tracker.getActiveStageIds() and time.monotonic() < deadline:
            time.sleep(0.2)


def _clear_output(out_dir: str) -> None:
    """``--mode overwrite``: delete what an earlier export wrote in ``out_dir`` (not this job's
    ``_temporary``); anything else stays (:mod:`logdoctor.spark.export_output`, checked before the job)."""
    from logdoctor.spark.export_output import export_output

    export_output(out_dir).clear()


def segments_pass_options(opts: ReadOptions, writer: str) -> ReadOptions:
    """The options of the ``kafka-log-segments`` pass that finds an export's damaged segments: the
    topics, and for the spark writer the remote tier and ``checkRecords`` (the arrow writer's tasks
    report the remote segments and the batches skipped alone themselves)."""
    if writer == "arrow":
        return opts.only("topics", "include_internal")
    return dataclasses.replace(opts.only("topics", "include_internal", "remote"), check_records=True)


def damaged_segments(checks: Sequence[tuple[int, Any]]) -> list[dict[str, Any]]:
    """Executor side: of ``checks`` ((index, segment) pairs), the segments whose ``kafka-log-segments``
    row (:func:`logdoctor.spark.sources.segment_summary.segment_summary`, the same code) has an error, as
    {index, path, valid_bytes, size_bytes, error}."""
    from logdoctor.spark.sources.segment_summary import segment_summary

    out: list[dict[str, Any]] = []
    for index, seg in checks:
        row = segment_summary(seg)
        if row["error"] is not None:
            keys = ("path", "valid_bytes", "size_bytes", "error")
            out.append({"index": index, **{k: row[k] for k in keys}})
    return out


#: the segments pass of an arrow-writer export over local segments of at most this many bytes in all runs
#: on the driver (:func:`driver_damaged`): milliseconds, where a Spark pass on a cold JVM costs seconds
DRIVER_PASS_BYTES = 64 * 1024 * 1024


def driver_damaged(
    items: Sequence[str], seg_opts: ReadOptions, limit: int = DRIVER_PASS_BYTES
) -> list[dict[str, Any]] | None:
    """The rows with an error the ``kafka-log-segments`` pass over ``items`` would give (its plan, its
    segments and its not-read rows, :func:`damaged_segments`' code), made on the driver; None (run the pass)
    when a segment is read by byte ranges (a URI, the remote tier) or they are over ``limit`` bytes."""
    from logdoctor.logdir.read_plan import one_remote_copy
    from logdoctor.logdir.slices import read_plan
    from logdoctor.spark.sources.segment_summary import not_read_row

    plan = read_plan(items, seg_opts)
    segs = [s for ref in one_remote_copy(plan.refs) for s in ref.segments]
    if any(s.ranged for s in segs) or sum(s.size for s in segs) > limit:
        return None
    rows = damaged_segments(list(enumerate(segs)))
    return rows + [r for r in map(not_read_row, plan.not_read) if r["error"] is not None]


def assign_checks(
    groups: Sequence[Sequence[Any]], segs: Sequence[Any]
) -> tuple[list[tuple[tuple[int, Any], ...]], list[tuple[tuple[int, Any], ...]]]:
    """Which write task checks which segment of the segments pass (``segs``): the task that reads its
    first slice (its bytes are then in the page cache), else extra tasks grouped as ``kafka-log-segments``
    groups them. Returns (the checks of each group, the extra tasks' checks)."""
    from logdoctor.spark.sources.kafka_log_segments import segment_groups

    owner: dict[str, int] = {}
    for g, group in enumerate(groups):
        for sl in group:
            owner.setdefault(sl.segment.path, g)
    per_group: list[list[tuple[int, Any]]] = [[] for _ in groups]
    rest: list[tuple[int, Any]] = []
    for i, seg in enumerate(segs):
        g = owner.get(seg.path)
        (rest if g is None else per_group[g]).append((i, seg))
    by_seg = {id(seg): (i, seg) for i, seg in rest}
    extra = [tuple(by_seg[id(seg)] for seg in group) for group in segment_groups([seg for _, seg in rest])]
    return [tuple(c) for c in per_group], extra


def _export_arrow(
    job: ExportJob,
    out: str,
    partition_by: Sequence[str],
    mode: str = "error",
    fail_first_attempt: bool = False,
    check: Sequence[Any] = (),
    typed: Any = None,
) -> tuple[list[str], list[dict[str, Any]]]:
    """The arrow writer's job: tasks write into attempt folders, the driver commits by rename. Returns the
    committed files and the damaged segments of ``check``.

    ``check``: the segments whose damage the export reports (the segments pass's); each is checked by a
    task of the same job (:func:`assign_checks`), no second job. ``fail_first_attempt`` (tests only) makes
    every task's first attempt write its files and then fail, so Spark retries it (needs
    ``spark.task.maxFailures`` >= 2, e.g. ``local[2,2]``).
    """
    import uuid

    groups = job.groups()
    checks, extra = assign_checks(groups, check)
    created = not os.path.exists(out)
    os.makedirs(out, exist_ok=True)
    job_id = uuid.uuid4().hex[:12]
    opts, cols = job.opts, tuple(partition_by)
    tasks = list(enumerate(zip([*groups, *[()] * len(extra)], [*checks, *extra], strict=True)))

    def run(t: tuple[int, Any], typed_plan: Any) -> dict[str, Any]:
        result = write_slices(t[0], t[1][0], opts, out, cols, job_id, typed=typed_plan)
        if not result.get("no_space"):
            result["damaged"] = damaged_segments(t[1][1])
        if fail_first_attempt:
            fail_if_first_attempt()
        return result

    try:
        done = job.collect(tasks, run, typed)  # the registry and the topics' types: once per executor
    except BaseException:
        _abort_job(job.spark, out, job_id, created)
        raise
    committed = commit_attempts(out, job_id, done, mode)
    Path(out, "_SUCCESS").write_bytes(b"")
    return committed, sorted((r for d in done for r in d.get("damaged") or ()), key=lambda r: r["index"])


def not_read_ranges(plan: Any) -> list[SkippedRange]:
    """The offsets the read plan names as not read once (a remote segment with no object, a second copy
    of a segment not read, offsets below the first remote segment): :mod:`logdoctor.logdir.read_plan`."""
    return [
        SkippedRange(
            p.path, 0, 0, p.error, start=0, end=0, base_offset=p.first_offset, last_offset=p.last_offset
        )
        for p in plan.not_read
    ]


def skipped_ranges(
    spark: Any,
    items: Sequence[str],
    opts: ReadOptions,
    writer: str,
    undecodable: list[dict[str, Any]],
    remote_skipped: Sequence[Mapping[str, Any]],
    plan: Any = None,
    damaged: Sequence[Mapping[str, Any]] | None = None,
    txns: Mapping[Any, Any] | None = None,
) -> list[SkippedRange]:
    """Every range an export could not read, named: the corrupt ranges of ``kafka-log-segments`` over the
    same segments, the remote-tier segments the arrow writer's tasks could not read (``remote_skipped``),
    and the batches whose records do not decode (``undecodable``: the arrow writer's tasks report them;
    for the spark writer ``kafka-log-segments`` with ``checkRecords`` finds them). Shared by the Parquet
    export and the table export (:mod:`logdoctor.spark.tables.export`).

    ``damaged``: the ``kafka-log-segments`` rows with an error, already found by the arrow writer's tasks
    (:func:`damaged_segments`, in the segments pass's order): then no segments pass runs.

    ``txns`` (:func:`logdoctor.logdir.slices.plan_transactions`): the markers Kafka's validation refuses
    that decided their transaction (``PartitionTransactions.invalid_markers``, :func:`invalid_marker_ranges`)
    are named too, once."""
    skipped: list[SkippedRange] = []
    # The arrow writer's tasks reported the remote-tier segments they could not read: the segments pass
    # then lists the log dirs' segments only (the remote tier is not read twice).
    seg_opts = segments_pass_options(opts, writer)
    if damaged is None and writer == "arrow":  # small local inputs: the same rows found on the driver
        damaged = driver_damaged(items, seg_opts)
    if damaged is not None:
        bad_rows: Sequence[Any] = damaged
    else:
        from logdoctor.spark.sources import register

        register(spark)  # idempotent: a session built without the sources (get_spark(sql=False))
        bad_rows = (
            spark.read.format("kafka-log-segments")
            .options(**seg_opts.to_options())
            .load(items)
            .where(
                "error is not null"
                + (" or size(undecodable) > 0 or size(crc_mismatches) > 0" if writer != "arrow" else "")
            )
            .select("path", "valid_bytes", "size_bytes", "error", "undecodable", "crc_mismatches")
            .collect()
        )
    for r in bad_rows:
        if r["error"] is not None:
            skipped.append(SkippedRange(r["path"], int(r["valid_bytes"]), int(r["size_bytes"]), r["error"]))
        if writer != "arrow":  # the arrow writer's tasks named both kinds of batches skipped alone
            undecodable.extend({"path": r["path"], **u.asDict()} for u in r["undecodable"] or ())
            undecodable.extend({"path": r["path"], **u.asDict()} for u in r["crc_mismatches"] or ())
    if writer == "arrow" and plan is not None:  # the segments pass did not plan the remote tier
        # (what it did plan, a local file or folder this user cannot read, it named already: once)
        seen = {(s.path, s.error) for s in skipped}
        skipped.extend(r for r in not_read_ranges(plan) if (r.path, r.error) not in seen)
    for p in remote_skipped:  # remote-tier segments the arrow writer's tasks could not read
        skipped.append(SkippedRange(p["path"], int(p["valid_bytes"]), int(p["size_bytes"]), p["error"]))
    for u in undecodable:  # a CRC mismatch names the stored and computed CRCs in its error already
        why = (
            u["error"]
            if u.get("stored_crc") is not None
            else f"the records of this batch do not decode: {u['error']}"
        )
        pos, size = int(u["position"]), int(u["size"])
        skipped.append(SkippedRange.batch(u["path"], pos, size, why, u["base_offset"], u["last_offset"]))
    named = {(s.path, s.range_start) for s in skipped}
    skipped.extend(r for r in invalid_marker_ranges(txns or {}) if (r.path, r.range_start) not in named)
    skipped.sort(key=lambda s: (s.path, s.range_start))
    return skipped


def invalid_marker_ranges(txns: Mapping[Any, Any]) -> list[SkippedRange]:
    """The transaction markers whose header Kafka's validation refuses, one range each: the marker still
    decided its transaction, as Kafka's producer state takes it (:mod:`logdoctor.logdir.transactions`),
    and is named, never a silent cut."""
    why = (
        "a transaction marker Kafka's validation refuses (it still decided its transaction, from its base "
        "offset, as Kafka's producer state does): "
    )
    return [
        SkippedRange.batch(m.path, m.position, m.size, why + m.error, m.base_offset, m.last_offset)
        for t in txns.values()
        for m in t.invalid_markers
    ]


def session_is_local(spark: Any) -> bool:
    """Whether the session's master is ``local[...]`` (False for a cluster or Spark Connect)."""
    from logdoctor.spark.session import is_local_master

    try:
        return is_local_master(spark.sparkContext.master)
    except Exception:  # Spark Connect: no SparkContext on this side
        return False


def choose_writer(spark: Any, out: str, fmt: str, writer: str | None) -> str:
    """The writer to use: ``arrow`` only for a local master, a local ``out`` and Parquet."""
    arrow_ok = fmt == "parquet" and is_local_path(out) and session_is_local(spark)
    if writer is None:
        return "arrow" if arrow_ok else "spark"
    if writer not in WRITERS:
        raise ExportError(f"--writer must be one of {', '.join(WRITERS)}, got {writer!r}")
    if writer == "arrow" and not arrow_ok:
        raise ExportError(
            "--writer arrow writes Parquet to a local folder from a local[...] master only "
            "(its files would land on each executor's own disk); use --writer spark, or --format "
            "iceberg|delta (pyarrow tasks on any cluster, one commit of the table format)"
        )
    return writer


def run_export(
    spark: Any,
    paths: Sequence[str] | str,
    out_dir: str | os.PathLike[str],
    *,
    fmt: str = "parquet",
    partition_by: Sequence[str] = ("topic", "partition"),
    options: ReadOptions | Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    writer: str | None = None,
    mode: str = "error",
    fail_first_attempt: bool = False,
) -> ExportResult:
    """Read PATHS as ``kafka-log`` (``options`` as for that source) and write the table to ``out_dir``.

    ``writer``: "arrow" or "spark" (see the module doc; None picks). ``fmt``: for the spark writer
    any format the session has jars for. ``mode``: error | overwrite | append. Raises
    :class:`~logdoctor.errors.OutputOverlapsInputError` when ``out_dir`` is at, inside or above an
    input, and :class:`OutputExistsError` for ``mode="error"`` and an existing output, in both cases
    before anything is written or deleted.
    """
    from logdoctor.logdir.discovery import split_paths
    from logdoctor.logdir.outputs import absolute_location
    from logdoctor.logdir.read_plan import one_remote_copy
    from logdoctor.logdir.slices import read_plan
    from logdoctor.spark.schema import records_fields
    from logdoctor.spark.sources.segment_summary import not_read_row

    if not fmt or not fmt.replace("_", "").replace("-", "").replace(".", "").isalnum():
        raise ExportError(f"--format: not a data source name: {fmt!r}")
    read_opts = ReadOptions.of(options)
    if mode == "append" and read_opts.view == "latest":
        from logdoctor.spark.latest import APPEND_REFUSAL

        raise ExportError(APPEND_REFUSAL)
    out = absolute_location(out_dir)  # Spark's workers do not run in this folder
    writer = choose_writer(spark, out, fmt, writer)
    items = split_paths(paths)
    known = {name for name, _, _ in records_fields(True)}
    bad = [c for c in partition_by if c not in known]
    if bad:
        raise ExportError(f"--partition-by: unknown column(s) {', '.join(bad)}")
    job = ExportJob.planned(spark, items, out, read_opts, mode)
    job.refuse_existing()
    refusal = overwrite_refusal(out, fmt) if mode == "overwrite" else None
    if refusal is not None:
        raise OutputExistsError(refusal)
    before = _list_files(out) if mode == "append" else {}
    job.lap("planning")
    typed_plan = typed_parts = None
    if read_opts.typed:  # one table per topic: the registry, then the first pass (logdoctor.spark.typed)
        typed_plan = job.survey()
        partition_by = ()
    damaged: list[dict[str, Any]] | None = None
    with tracking(spark, progress):
        if writer == "arrow":
            # the segments kafka-log-segments would list: the write tasks check them (no second job)
            check_plan = read_plan(items, segments_pass_options(read_opts, writer))
            check = [s for ref in one_remote_copy(check_plan.refs) for s in ref.segments]
            committed, damaged = _export_arrow(
                job, _local(out), partition_by, mode, fail_first_attempt, check, typed_plan
            )
            rows = sum(int(d["rows"]) for d in job.done)
            damaged += [r for r in map(not_read_row, check_plan.not_read) if r["error"] is not None]
            root = _local(out)
            sizes = {rel: os.path.getsize(os.path.join(root, rel)) for rel in committed}
        elif typed_plan is not None:  # one frame per topic and the side table, each by Spark's committer
            from logdoctor.spark.sources import register
            from logdoctor.spark.typed_job import write_with_spark

            register(spark)
            rows, typed_parts = write_with_spark(spark, items, read_opts, typed_plan, out, fmt, mode)
        else:
            from pyspark.sql import Observation
            from pyspark.sql import functions as F

            from logdoctor.spark.sources import register

            register(spark)  # idempotent: a session built without the sources (get_spark(sql=False))
            observation = Observation("logdoctor-export")
            df = spark.read.format("kafka-log").options(**read_opts.to_options()).load(items)
            df = df.observe(observation, F.count(F.lit(1)).alias("rows"))
            w = df.write.mode("errorifexists" if mode == "error" else mode)
            if mode == "overwrite":  # replace the whole output, not only the partitions written
                w = w.option("partitionOverwriteMode", "static")
            if partition_by:
                w = w.partitionBy(*partition_by)
            try:
                w.format(fmt).save(out)
            except Exception as exc:  # Spark looks the source up before it writes anything
                if "DATA_SOURCE_NOT_FOUND" in str(exc) or "Failed to find the data source" in str(exc):
                    raise FormatUnavailableError(FORMAT_UNAVAILABLE.format(fmt=fmt)) from None
                raise
            rows = int(observation.get.get("rows", 0))
    if writer != "arrow":
        sizes = {rel: size for rel, size in _list_files(out).items() if rel not in before}
    job.lap("writing")
    skipped = job.skipped(writer, damaged)
    job.lap("skipped ranges")
    return job.result(
        format=fmt,
        rows=rows,
        files=len(sizes),
        bytes_out=sum(sizes.values()),
        skipped=skipped,
        writer=writer,
        typed=None if typed_plan is None else job.typed_summary(parts=typed_parts),
    )

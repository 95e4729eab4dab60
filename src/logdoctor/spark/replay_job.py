"""A replay at scale (issue 72): each source partition's replay is one Spark task, and the offset map is
written through the table writers of ``export``.

- :func:`spark_runner`: the :data:`~logdoctor.replay.apply.PartitionRunner` of
  :func:`~logdoctor.replay.apply.apply_replay` on Spark. The plan's partitions are parallelized one per
  slice; each task runs :func:`~logdoctor.replay.apply.replay_partition`, the one apply engine the local
  loop runs, with the partition's transactional id and replay group: a retried task (or a rerun after the
  driver was killed) fences the earlier attempt's producer and resumes from the progress committed with
  its records. The driver keeps the plan, the topics' creation, the conflict checks, the leases (whose
  group metadata the tasks commit with) and ``--groups``. A task's refusal or failure comes back as its
  result and is raised on the driver as the local loop raises it; anything else fails the task, which
  Spark retries (``spark.task.maxFailures``).
- :func:`write_offset_map_table`: the whole offset map of the replay (every record replayed so far, by this
  run and earlier ones), read back from the target and checked against the source in the tasks: one task per
  source partition, or per re-hashed target topic (whose map pairs each target partition with all the
  topic's source partitions: :func:`logdoctor.replay.offset_map`). ``parquet``: a DataFrame of the tasks'
  Arrow batches (``mapInArrow``), written by Spark's Parquet writer and its output committer, as ``export``
  writes Parquet; ``delta``: the tasks write Parquet files into the table's folder and the driver commits
  them in one Delta transaction (:class:`logdoctor.spark.tables.delta.DeltaLakeTable`), as ``export
  --format delta`` does. One table either way, the schema of the map without Spark
  (:func:`logdoctor.replay.offset_map_schema`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from logdoctor.replay.apply import (
    PartitionJob,
    PartitionResult,
    PartitionRunner,
    ReplayFailed,
    ReplayRefused,
    replay_partition,
)
from logdoctor.replay.offset_map import ReplayMismatch, offset_map, offset_map_schema
from logdoctor.replay.plan import ReplayPlan

__all__ = ["offset_map_units", "spark_runner", "write_offset_map_table"]

_ERRORS: dict[str, type[Exception]] = {
    "refused": ReplayRefused,
    "failed": ReplayFailed,
    "mismatch": ReplayMismatch,
}


def _run_task(job: PartitionJob, on_transaction: Callable[..., None] | None) -> dict[str, Any]:
    """Executor side: one source partition's replay; a refusal or failure as the result (not retried:
    the local loop stops at it too, and a rerun resumes)."""
    from confluent_kafka import KafkaException

    try:
        return {"result": replay_partition(job, on_transaction=on_transaction)}
    except ReplayRefused as exc:
        return {"error": "refused", "message": str(exc)}
    except (ReplayFailed, KafkaException, RuntimeError) as exc:
        return {"error": "failed", "message": f"{job.partition.name}: {exc}"}


def _spark_error(exc: BaseException) -> str:
    """The Python error a failed Spark job reports (its last ``...Error: ...`` line), else its first line."""
    text = str(exc)
    found = re.findall(r"^(?:\w+\.)*\w+(?:Error|Exception|Refused|Failed|Mismatch): .*$", text, re.M)
    return found[-1] if found else (text.strip().splitlines() or [type(exc).__name__])[0]


def spark_runner(spark: Any, *, on_transaction: Callable[..., None] | None = None) -> PartitionRunner:
    """A runner for :func:`~logdoctor.replay.apply.apply_replay`: one Spark task per job (the module
    doc). ``on_transaction``: called in the task after each commit (a test seam: picklable)."""

    def run(jobs: list[PartitionJob]) -> list[PartitionResult]:
        if not jobs:
            return []
        sc = spark.sparkContext
        sc.setJobDescription(f"logdoctor replay: {len(jobs)} partition(s)")
        try:
            done = sc.parallelize(jobs, len(jobs)).map(lambda job: _run_task(job, on_transaction)).collect()
        except Exception as exc:
            if type(exc).__name__ not in ("Py4JJavaError", "PythonException"):
                raise
            raise ReplayFailed(f"a replay task failed: {_spark_error(exc)}") from None
        errors = [d for d in done if "error" in d]
        if errors:  # a refusal first: nothing of that partition was written
            errors.sort(key=lambda d: d["error"] != "refused")
            first = errors[0]
            more = f" (and {len(errors) - 1} more partition(s))" if len(errors) > 1 else ""
            raise _ERRORS[first["error"]](first["message"] + more)
        return [d["result"] for d in done]

    return run


def offset_map_units(plan: ReplayPlan) -> list[list[str]]:
    """The source partitions each offset map task maps: each one alone, a re-hashed topic's together."""
    units: list[list[str]] = []
    rehashed: dict[str, list[str]] = {}
    for pp in plan.partitions:
        if pp.rehashed:
            if pp.target_topic not in rehashed:
                rehashed[pp.target_topic] = []
                units.append(rehashed[pp.target_topic])
            rehashed[pp.target_topic].append(pp.name)
        else:
            units.append([pp.name])
    return units


def _unit_batches(plan: ReplayPlan, names: Sequence[str], timeout: float) -> Iterator[Any]:
    """Executor side: the map of one unit's source partitions, read back and checked."""
    chosen = set(names)
    topics = {pp.target_topic for pp in plan.partitions if pp.name in chosen}
    # the partitions the unit reads: its own, and, re-hashed, its target topic's (the plan's others stay home)
    slim = dataclasses.replace(
        plan, partitions=[pp for pp in plan.partitions if pp.target_topic in topics], groups=None
    )
    yield from offset_map(slim, only=names, timeout=timeout)


def write_offset_map_table(
    spark: Any, plan: ReplayPlan, location: str, timeout: float, fmt: str = "parquet"
) -> dict[str, Any]:
    """The whole offset map written by Spark at ``location`` (the module doc); it replaces the map before.
    Raises :class:`~logdoctor.replay.ReplayMismatch` when the target does not hold what the source's
    records are."""
    units = offset_map_units(plan)
    if fmt == "delta":
        return _delta_map(spark, plan, units, location, timeout)
    if fmt != "parquet":
        raise ValueError(f"not an offset map format: {fmt!r}")
    import pyarrow.dataset as pads
    from pyspark.sql.pandas.types import from_arrow_schema

    from logdoctor.spark.tables.files import filesystem

    def batches(ids: Iterator[Any]) -> Iterator[Any]:
        for rb in ids:
            for i in rb.column(0).to_pylist():
                yield from _unit_batches(plan, units[i], timeout)

    n = max(1, len(units))
    frame = spark.range(0, len(units), 1, n).mapInArrow(batches, from_arrow_schema(offset_map_schema()))
    spark.sparkContext.setJobDescription("logdoctor replay: the offset map")
    try:
        frame.write.mode("overwrite").parquet(location)
    except Exception as exc:
        if type(exc).__name__ not in ("Py4JJavaError", "PythonException", "AnalysisException"):
            raise
        raise ReplayMismatch(f"the offset map: {_spark_error(exc)}") from None
    fs, root = filesystem(location)
    written = pads.dataset(root, filesystem=fs, format="parquet")
    rows, cleaned = written.count_rows(), written.count_rows(filter=pads.field("target_offset").is_null())
    return {"location": location, "format": "parquet", "rows": rows, "cleaned": cleaned, "writer": "spark"}


def _delta_map(
    spark: Any, plan: ReplayPlan, units: list[list[str]], location: str, timeout: float
) -> dict[str, Any]:
    import pyarrow as pa

    import logdoctor
    from logdoctor.spark.tables.delta import DeltaLakeTable
    from logdoctor.spark.tables.files import (
        FileLayout,
        keeping_files_unless_known,
        new_job_id,
        probe_writable,
        write_file,
    )

    layout = FileLayout(location, new_job_id(), partition_columns_in_file=True)
    probe_writable(location, layout.job)
    table = DeltaLakeTable(location, partition_topic=False)
    table.load()

    def task(item: tuple[int, list[str]]) -> list[Any]:
        from logdoctor.spark.export import task_attempt

        attempt = task_attempt() or 0
        batches = list(_unit_batches(plan, item[1], timeout))
        if not batches:
            return []
        rows = pa.Table.from_batches(batches, schema=offset_map_schema())
        return [write_file(rows, layout, item[0], attempt, {})]

    files: list[Any] = []
    # a commit that may have landed (CommitUnknownError, Ctrl-C): the files kept (export's sweep names them)
    with keeping_files_unless_known(layout, spark=spark) as committed:
        try:
            if units:
                spark.sparkContext.setJobDescription("logdoctor replay: the offset map")
                done = spark.sparkContext.parallelize(list(enumerate(units)), len(units)).map(task).collect()
                files = [f for fs in done for f in fs]
        except Exception as exc:
            if type(exc).__name__ not in ("Py4JJavaError", "PythonException"):
                raise
            raise ReplayMismatch(f"the offset map: {_spark_error(exc)}") from None
        table.commit(files, offset_map_schema(), "overwrite", {"logdoctor.version": logdoctor.__version__})
        committed.extend(f.path for f in files)
    version = table.load().version()
    return {
        "location": location,
        "format": "delta",
        "rows": sum(f.rows for f in files),
        "cleaned": sum(f.null_counts.get("target_offset", 0) for f in files),
        "version": version,
        "writer": "spark",
    }

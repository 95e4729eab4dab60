"""Task side of the table exports: decode slices and write Parquet files with pyarrow into a table's storage.

A Spark task (or a plain call, in tests) reads its group of segment slices (:func:`read_slice`),
keeps the rows above the offsets the table already holds, and writes one Parquet file per table
partition (the topic, and the UTC day of the record timestamp when asked) straight into the table's
data folder: a local folder or any URI pyarrow opens (``s3://``, ``gs://``, ``hdfs://``,
``abfs://``). Rows in a file are sorted by partition and offset. It returns what the driver needs
to commit the files in one transaction of the table format's library (:class:`WrittenFile`: path,
size, rows, partition values, per-column statistics).

File names carry the job id, the task and its attempt: files of an attempt that failed or was a
speculative duplicate are never committed, and the driver deletes every file of its job that the
commit does not reference (:func:`remove_uncommitted`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

ROW_GROUP_ROWS = 128 * 1024
DAY_COLUMN = "timestamp_day"  # Delta's partition column for --partition-by-day (Iceberg uses day(timestamp))


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """One Parquet file a task wrote (not yet part of any table)."""

    path: str  # as the table will reference it: a local absolute path or the URI
    size: int
    rows: int
    partition: Mapping[str, str | None]  # partition column -> value as text (Delta's partitionValues)
    min_values: Mapping[str, Any] = field(default_factory=dict)
    max_values: Mapping[str, Any] = field(default_factory=dict)
    null_counts: Mapping[str, int] = field(default_factory=dict)
    offsets: Mapping[tuple[str, int], tuple[int, int]] = field(default_factory=dict)  # first, last


@dataclass(frozen=True, slots=True)
class FileLayout:
    """How a task lays out its files: where, which partition columns, which columns in the file."""

    data_uri: str  # the table's data folder (local path or URI)
    job: str
    by_day: bool = False
    partition_columns_in_file: bool = True  # Iceberg keeps them (add_files infers the partition), Delta not
    day_column: bool = False  # Delta: a date column DAY_COLUMN derived from the timestamp
    int16_as_int32: bool = False  # Iceberg has no 16-bit integer: producer_epoch is written as int


def filesystem(uri: str) -> tuple[Any, str]:
    """(pyarrow FileSystem, path in it) for a local path, file: URI or any URI pyarrow opens."""
    import pyarrow.fs as pafs

    from logdoctor.spark.export import is_local_path

    if is_local_path(uri):
        from urllib.parse import urlsplit

        parts = urlsplit(uri)
        local = parts.path if parts.scheme == "file" else uri
        return pafs.LocalFileSystem(), os.path.abspath(local)
    return pafs.FileSystem.from_uri(uri)


def join_uri(base: str, *parts: str) -> str:
    base = base.rstrip("/")
    return "/".join([base, *(p.strip("/") for p in parts)])


def keep_above(table: Any, above: Mapping[tuple[str, int], int]) -> Any:
    """The rows whose offset is above what the table holds for their (topic, partition)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not above or table.num_rows == 0:
        return table
    topics = table.column("topic").to_pylist()
    parts = table.column("partition").to_pylist()
    limits = pa.array([above.get((t, p), -1) for t, p in zip(topics, parts, strict=True)], pa.int64())
    return table.filter(pc.greater(table.column("offset"), limits))


def prepare(table: Any, layout: FileLayout) -> Any:
    """The table's column types (int16 -> int32 for Iceberg) and Delta's day column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if layout.int16_as_int32 and "producer_epoch" in table.column_names:
        i = table.column_names.index("producer_epoch")
        table = table.set_column(i, "producer_epoch", table.column(i).cast(pa.int32()))
    if layout.day_column:
        table = table.append_column(DAY_COLUMN, pc.cast(table.column("timestamp"), pa.date32()))
    return table


def _day(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def _groups(table: Any, layout: FileLayout) -> list[tuple[dict[str, str | None], Any]]:
    """(partition values, rows) per table partition: topic, then the UTC day when asked."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = ["topic"]
    if layout.by_day:
        day = pc.cast(table.column("timestamp"), pa.date32())
        table = table.append_column("__day", day)
        keys.append("__day")
    out = []
    distinct = table.select(keys).group_by(keys).aggregate([]).to_pylist()
    for d in sorted(distinct, key=lambda r: (r["topic"], r.get("__day") or dt.date.min)):
        mask = pc.equal(table.column("topic"), d["topic"])
        values: dict[str, str | None] = {"topic": d["topic"]}
        if layout.by_day:
            if d["__day"] is None:
                mask = pc.and_(mask, pc.is_null(table.column("__day")))
            else:
                mask = pc.and_(mask, pc.equal(table.column("__day"), pa.scalar(d["__day"], pa.date32())))
            values[DAY_COLUMN] = _day(d["__day"])
        rows = table.filter(mask)
        if layout.by_day:
            rows = rows.drop_columns(["__day"])
        out.append((values, rows))
    return out


def _stats(rows: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, int]]:
    """Min, max and null count of each top-level primitive column (Delta's file statistics). A float
    column holding NaN has a null count only."""
    import pyarrow as pa
    import pyarrow.compute as pc

    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name in rows.column_names:
        col = rows.column(name)
        if pa.types.is_nested(col.type):
            continue
        nulls[name] = col.null_count
        if pa.types.is_binary(col.type) or col.null_count == len(col):
            continue
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
            # no min or max: Arrow's leave NaN out, while Spark orders NaN above every number (a file
            # holding NaN and at most 3 would be skipped for ``x > 5``, which NaN matches there)
            continue
        mm = pc.min_max(col)
        mins[name], maxs[name] = mm["min"].as_py(), mm["max"].as_py()
    return mins, maxs, nulls


def offset_ranges(rows: Any, topic: str | None = None) -> dict[tuple[str, int], tuple[int, int]]:
    """(first, last) offset per (topic, partition) of ``rows`` (columns topic, partition, offset; ``topic``:
    every row's, when they have no topic column)."""
    grouped = rows.group_by(["partition"] if topic else ["topic", "partition"]).aggregate(
        [("offset", "min"), ("offset", "max")]
    )
    return {
        (topic or r["topic"], r["partition"]): (r["offset_min"], r["offset_max"]) for r in grouped.to_pylist()
    }


def last_offsets(rows: Any) -> dict[tuple[str, int], int]:
    """The last offset of ``rows`` per (topic, partition): what a table of them holds."""
    return {key: hi for key, (_, hi) in offset_ranges(rows).items()}


def write_table_files(
    table: Any, layout: FileLayout, task: int, attempt: int, fs: Any = None, root: str | None = None
) -> list[WrittenFile]:
    """Write ``table`` (Arrow, the ``kafka-log`` schema) as one file per table partition."""

    if table.num_rows == 0:
        return []
    if fs is None or root is None:
        fs, root = filesystem(layout.data_uri)
    written: list[WrittenFile] = []
    for values, rows in _groups(prepare(table, layout), layout):
        rows = rows.sort_by([("partition", "ascending"), ("offset", "ascending")])
        stats, offsets = _stats(rows), offset_ranges(rows)
        if not layout.partition_columns_in_file:
            rows = rows.drop_columns([k for k in values if k in rows.column_names])
        written.append(write_file(rows, layout, task, attempt, offsets, values, stats, fs, root))
    return written


def write_file(
    rows: Any,
    layout: FileLayout,
    task: int,
    attempt: int,
    offsets: Mapping[tuple[str, int], tuple[int, int]],
    partition: Mapping[str, str | None] | None = None,
    stats: tuple[dict[str, Any], dict[str, Any], dict[str, int]] | None = None,
    fs: Any = None,
    root: str | None = None,
) -> WrittenFile:
    """One Parquet file of ``rows`` in the table's data folder (in the Hive folder of its ``partition``
    values), with Delta's statistics (``stats``: :func:`_stats` of ``rows`` when None)."""
    import pyarrow.parquet as pq

    if fs is None or root is None:
        fs, root = filesystem(layout.data_uri)
    partition = partition or {}
    folder = "".join(f"{k}={_escape(v)}/" for k, v in partition.items())
    rel = f"{folder}{layout.job}-{task:05d}-{attempt}-{uuid.uuid4().hex[:8]}.parquet"
    fs.create_dir(f"{root}/{folder}".rstrip("/"), recursive=True)
    with fs.open_output_stream(f"{root}/{rel}") as sink:
        pq.write_table(rows, sink, row_group_size=ROW_GROUP_ROWS, compression="snappy")
    size, path = int(fs.get_file_info(f"{root}/{rel}").size), join_uri(layout.data_uri, rel)
    return WrittenFile(path, size, rows.num_rows, partition, *(stats or _stats(rows)), offsets)


def _escape(value: str | None) -> str:
    """A partition value in a folder name (Hive's escaping of the characters paths cannot hold)."""
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(f"%{ord(c):02X}" if c in "\"#%'*/:=?\\\x7f{}[]^" or ord(c) < 32 else c for c in value)


def write_task(
    task: int,
    slices: Sequence[Any],
    opts: Any,
    layout: FileLayout,
    above: Mapping[tuple[str, int], int],
    attempt: int | None = None,
    rows_per_file: int = 1_000_000,
    tombstones: bool = False,
) -> dict[str, Any]:
    """Executor side: read the slices, keep rows above ``above``, write them (at most about
    ``rows_per_file`` rows, or ``WRITE_FLUSH_BYTES`` of them, are held before they are written). Returns
    the task's files and rows. ``tombstones`` (an upsert of the latest view): the keys whose latest record
    is a tombstone are written too, into files of their own (``tombstones`` in the result, named
    ``<job>-tomb-...``: never committed, they say which keys the commit deletes)."""
    import pyarrow as pa

    from logdoctor.spark.export import task_attempt
    from logdoctor.spark.latest import latest_json
    from logdoctor.spark.sources.slice_reader import WRITE_FLUSH_BYTES, read_slices

    if attempt is None:
        attempt = task_attempt() or 0
    fs, root = filesystem(layout.data_uri)
    files: list[WrittenFile] = []
    chunk: list[Any] = []
    held = held_bytes = 0
    rows = 0

    dead_files: list[WrittenFile] = []
    dead_layout = dataclasses.replace(layout, job=f"{layout.job}-tomb")

    def flush() -> None:
        nonlocal chunk, held, held_bytes
        if chunk:
            table = keep_above(pa.Table.from_batches(chunk), above)
            if tombstones:
                import pyarrow.compute as pc

                dead = pc.is_null(table.column("value"))
                dead_files.extend(write_table_files(table.filter(dead), dead_layout, task, attempt, fs, root))
                table = table.filter(pc.invert(dead))
            files.extend(write_table_files(table, layout, task, attempt, fs, root))
        chunk, held, held_bytes = [], 0, 0

    # what could not be read is named, never dropped silently: batches whose records do not decode and
    # remote-tier segments not read whole (spark.export.skipped_ranges turns both into skipped ranges)
    undecodable: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    latest: dict[tuple[str, str, int], Any] = {}
    try:
        for rb in read_slices(
            slices, opts, undecodable=undecodable, problems=problems, latest=latest, tombstones=tombstones
        ):
            chunk.append(rb)
            held += rb.num_rows
            held_bytes += rb.nbytes
            if held >= rows_per_file or held_bytes >= WRITE_FLUSH_BYTES:
                flush()
        flush()
    except OSError as exc:
        import errno

        if exc.errno != errno.ENOSPC:
            raise
        # a full disk: the task says so instead of failing (Spark would log its traceback and retry it);
        # the driver raises before the commit and removes the job's files (spark.export.raise_if_no_space)
        return {"task": task, "attempt": attempt, "rows": 0, "files": files, "no_space": f"{exc}"}
    rows = sum(f.rows for f in files)
    return {
        "task": task,
        "attempt": attempt,
        "rows": rows,
        "files": files,
        "undecodable": undecodable,
        "skipped": problems,
        "latest": latest_json(latest),
        "tombstones": dead_files,
    }


def job_files(layout: FileLayout) -> list[str]:
    """Every file this job's tasks wrote (any attempt), as URIs/paths like :attr:`WrittenFile.path`."""
    import pyarrow.fs as pafs

    fs, root = filesystem(layout.data_uri)
    return [
        join_uri(layout.data_uri, info.path[len(root) :])
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        if info.type == pafs.FileType.File and info.base_name.startswith(f"{layout.job}-")
    ]


def remove_uncommitted(layout: FileLayout, committed: Iterable[str]) -> list[str]:
    """Delete the files of this job that the commit does not reference (failed or speculative
    attempts, or every file of a job that failed). Returns what was deleted."""
    keep = set(committed)
    fs, root = filesystem(layout.data_uri)
    removed = []
    for path in job_files(layout):
        if path not in keep:
            rel = path[len(layout.data_uri.rstrip("/")) :]
            fs.delete_file(f"{root}{rel}")
            removed.append(path)
    return removed


@contextmanager
def keeping_files_unless_known(*layouts: Any, spark: Any = None) -> Iterator[list[str]]:
    """Around the commits of the files of ``layouts``' job: yields the list the caller fills with the paths
    the commits reference once they landed. On leaving, every other file of the job is deleted (best effort:
    :func:`~logdoctor.spark.tables.files.remove_uncommitted`; a commit that failed and is known not to have
    landed takes none; with ``spark`` and nothing committed, once the tasks Spark is cancelling stopped),
    except after :class:`~logdoctor.spark.tables.CommitUnknownError` or a Ctrl-C, when a commit may have
    landed: then nothing is deleted (a table that holds the commit needs its files; the next export's sweep
    removes those no commit references, :mod:`.orphans`)."""
    from logdoctor.spark.export import wait_for_cancelled_tasks
    from logdoctor.spark.tables import CommitUnknownError

    committed: list[str] = []
    keep = False
    try:
        yield committed
    except (CommitUnknownError, KeyboardInterrupt):
        keep = True
        raise
    finally:
        if not keep and spark is not None and not committed:
            wait_for_cancelled_tasks(spark)
        for layout in () if keep else layouts:
            with contextlib.suppress(Exception):  # best effort: the tables are already right
                remove_uncommitted(layout, committed)


def probe_writable(data_uri: str, job: str) -> None:
    """Write and delete one small file in the table's data folder: storage that cannot be written is
    refused by the driver (one line) before any task starts. Raises OSError."""
    fs, root = filesystem(data_uri)
    fs.create_dir(root, recursive=True)
    probe = f"{root}/{job}-probe"
    with fs.open_output_stream(probe) as sink:
        sink.write(b"logdoctor")
    fs.delete_file(probe)


def check_writable(what: str, data_uris: Sequence[str], job: str, unchanged: str = "the table is") -> None:
    """:func:`probe_writable` of each of ``data_uris``: one that cannot be written raises :class:`TableError`
    naming ``what`` (nothing was written; ``unchanged`` unchanged)."""
    from logdoctor.spark.tables import TableError

    try:
        for uri in data_uris:
            probe_writable(uri, job)
    except Exception as exc:
        raise TableError(
            f"{what} cannot be written: {' '.join(str(exc).split())[:300]} (nothing was written; {unchanged} "
            "unchanged)"
        ) from None


@contextmanager
def table_tasks(
    job: Any, what: str, layouts: Sequence[Any], run: Any, shared: Any = None, progress: Any = None, **kw: str
) -> Iterator[list[str]]:
    """The tasks of a table export (``job``: :class:`logdoctor.spark.export.ExportJob`): its slices packed
    into tasks, the data folders of ``layouts`` checked when there is a task (:func:`check_writable`, ``what``
    and ``kw``), then ``run`` over them as one Spark job (``job.done``) within
    :func:`keeping_files_unless_known`, whose list of committed paths it yields."""
    groups = job.groups()
    if groups:
        check_writable(what, [y.data_uri for y in layouts], layouts[0].job, **kw)
    with keeping_files_unless_known(*layouts, spark=job.spark) as committed:
        job.collect(list(enumerate(groups)), run, shared, progress)  # a full disk raises: no commit
        yield committed


def new_job_id() -> str:
    return "ld" + uuid.uuid4().hex[:12]

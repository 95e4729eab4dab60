"""Typed tables as Iceberg or Delta tables: one table per topic at ``OUT/<topic>``, and ``OUT/_undecoded``.

The same steps as the records table export (:mod:`.export`), per table: before anything is written the
output must not overlap an input and ``--mode error`` refuses existing tables; the first pass plans each
topic's table type (:mod:`logdoctor.spark.typed_job`); one Spark task per group of segment slices decodes
its rows (:class:`logdoctor.spark.typed.TypedBatches`) and writes Parquet files with pyarrow into each
table's data folder; the driver then commits each table's files in one transaction of the format's
library (each table on its own: a failure leaves every table not yet committed as it was), and deletes
every file of the job no commit references.

``--mode append`` reads the offsets each table holds from its ``logdoctor.offsets`` property and exports
only the offsets above them (each topic from its own table's; ``_undecoded``, committed first, keeps only
the rows above its own: :func:`commit_order`, so a run killed between two commits loses nothing); a topic
whose writer schemas changed evolves its table's schema (Iceberg's ``union_by_name``; Delta: columns
added).

Each table holds the types its format has (:func:`logdoctor.spark.typed.format_type`).
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from logdoctor.logdir.read_options import ReadOptions
from logdoctor.spark.tables.export import (
    PROPERTY_PREFIX,
    TableExportResult,
    commit_files,
    merged_offsets,
    table_properties,
)
from logdoctor.spark.tables.files import FileLayout, WrittenFile, offset_ranges, write_file
from logdoctor.spark.typed import format_schema


def to_format(batch: pa.Table, schema: pa.Schema) -> pa.Table:
    """The rows of ``batch`` in the format's types (``schema``: :func:`format_schema` of theirs)."""
    if batch.schema.equals(schema):
        return batch
    cols = []
    for f in schema:
        col = batch.column(f.name)
        if pa.types.is_duration(col.type):
            col = col.cast(pa.int64())
        cols.append(col.cast(f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def table_identifier(base: str | None, topic: str) -> str:
    """The Iceberg identifier of a topic's table: ``NAMESPACE.TOPIC`` (characters Iceberg catalogs do not
    take in a name, such as ``.`` and ``-``, as ``_``)."""
    namespace = (base or "logdoctor").split(".")[0]
    return f"{namespace}.{re.sub(r'[^A-Za-z0-9_]', '_', topic)}"


def open_typed_table(
    fmt: str, out: str, topic: str, catalog: Mapping[str, str] | None, table_name: str | None
) -> Any:
    from logdoctor.spark.tables.export import open_table

    if fmt == "iceberg":
        from logdoctor.spark.tables.iceberg import catalog_properties

        catalog = catalog_properties(out, catalog)  # one catalog for the export's tables, beside OUT
        table_name = table_identifier(table_name, topic)
    location = f"{out.rstrip('/')}/{topic}"
    return open_table(fmt, location, catalog=catalog, table_name=table_name, partition_topic=False)


def open_typed_tables(
    fmt: str,
    out: str,
    names: Sequence[str],
    mode: str,
    catalog: Mapping[str, str] | None,
    table_name: str | None,
) -> tuple[dict[str, Any], list[str]]:
    """The tables of ``names`` under ``out`` and those of them that exist; ``--mode error`` refuses any
    existing one (:class:`~logdoctor.spark.tables.TableExistsError`, nothing written)."""
    from logdoctor.spark.tables import TableExistsError

    tables = {n: open_typed_table(fmt, out, n, catalog, table_name) for n in names}
    existing = [n for n, t in tables.items() if t.exists()]
    if existing and mode == "error":
        raise TableExistsError(
            f"{fmt} table(s) {', '.join(f'{out}/{n}' for n in existing)} exist: choose another --out, or "
            "--mode append / overwrite (nothing was written)"
        )
    return tables, existing


def write_typed_task(
    task: int,
    slices: Sequence[Any],
    opts: Any,
    plan: Any,
    layouts: Mapping[str, FileLayout],
    schemas: Mapping[str, pa.Schema],
    above: Mapping[tuple[str, int], int],
    attempt: int | None = None,
    side_above: Mapping[tuple[str, int], int] | None = None,
) -> dict[str, Any]:
    """Executor side: read the slices, keep the rows above ``above`` (what the topics' tables hold),
    decode, keep the undecodable ones above ``side_above`` (what ``_undecoded`` holds), write each
    table's files."""
    from logdoctor.spark.export import task_attempt
    from logdoctor.spark.latest import latest_json
    from logdoctor.spark.sources.slice_reader import WRITE_FLUSH_BYTES, read_slices
    from logdoctor.spark.typed import UNDECODED, TypedBatches, counts_json

    if attempt is None:
        attempt = task_attempt() or 0
    splitter = TypedBatches(plan)
    files: dict[str, list[WrittenFile]] = {}
    chunks: dict[str, list[pa.RecordBatch]] = {}
    held = 0

    def flush() -> None:
        nonlocal held
        for name, chunk in chunks.items():
            rows = to_format(pa.Table.from_batches(chunk), schemas[name])
            if name == UNDECODED:
                offsets = offset_ranges(rows)
            else:  # a topic's table: its rows' Kafka columns in the struct ``kafka``
                kafka = rows.column("kafka").combine_chunks()
                at = pa.table([kafka.field("partition"), kafka.field("offset")], ["partition", "offset"])
                offsets = offset_ranges(at, name)
            files.setdefault(name, []).append(write_file(rows, layouts[name], task, attempt, offsets))
        chunks.clear()
        held = 0

    undecodable: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    latest: dict[tuple[str, str, int], Any] = {}
    try:
        for raw in read_slices(slices, opts, undecodable=undecodable, problems=problems, latest=latest):
            if above:
                raw = _rows_above(raw, above)
                if raw.num_rows == 0:
                    continue
            topic, good, bad = splitter.split(raw)
            if side_above and bad is not None and bad.num_rows:
                # the undecodable rows _undecoded does not hold yet (a run killed after it committed and
                # before a topic's table did reads those records again: their rows are in _undecoded once)
                bad = _rows_above(bad, side_above)
            for name, rb in ((topic, good), (UNDECODED, bad)):
                if rb is not None and rb.num_rows:
                    chunks.setdefault(name, []).append(rb)  # type: ignore[arg-type]
                    held += rb.nbytes
            if held >= WRITE_FLUSH_BYTES:
                flush()
        flush()
    except OSError as exc:
        import errno

        if exc.errno != errno.ENOSPC:
            raise
        return {"task": task, "attempt": attempt, "rows": 0, "files": {}, "no_space": f"{exc}"}
    return {
        "task": task,
        "attempt": attempt,
        "rows": sum(f.rows for n, fs in files.items() if n != UNDECODED for f in fs),
        "files": files,
        "undecodable": undecodable,
        "skipped": problems,
        "latest": latest_json(latest),
        "typed": counts_json(splitter.counts),
    }


def _rows_above(rows: pa.RecordBatch, held: Mapping[tuple[str, int], int]) -> pa.RecordBatch:
    """The rows of ``rows`` above what a table holds (``held``, :func:`~.files.keep_above`), as a batch."""
    from logdoctor.spark.tables.files import keep_above

    kept = keep_above(pa.Table.from_batches([rows]), held)
    return kept.combine_chunks().to_batches()[0] if kept.num_rows else rows.slice(0, 0)


def commit_order(topics: Sequence[str]) -> list[str]:
    """The order of the tables' commits: ``_undecoded`` first, then each topic's table. A topic table's
    recorded offsets say where the next ``--mode append`` reads its topic from, so they may only cover
    records whose undecodable rows are committed already: whatever the moment a run is killed, a record is
    in its topic's table, in ``_undecoded``, or read again by the rerun (which keeps, for ``_undecoded``,
    only the rows above what it holds)."""
    from logdoctor.spark.typed import UNDECODED

    return [UNDECODED, *(t for t in topics if t != UNDECODED)]


def run_typed_table_export(
    spark: Any,
    paths: Sequence[str] | str,
    out: str,
    *,
    fmt: str,
    mode: str = "error",
    options: ReadOptions | Mapping[str, str] | None = None,
    catalog: Mapping[str, str] | None = None,
    table_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    watch: Any = None,
) -> Any:
    """Export PATHS as one ``fmt`` table per topic under ``out`` (see the module doc). ``watch``
    (:class:`~logdoctor.spark.tables.outcome.CommitWatch`): told each table once opened, to say after a
    Ctrl-C what each holds."""
    from logdoctor.spark.export import ExportError, ExportJob
    from logdoctor.spark.tables.export import _pause  # at the call: the tests' seam may replace it
    from logdoctor.spark.tables.files import new_job_id, table_tasks
    from logdoctor.spark.typed import UNDECODED, undecoded_schema

    opts = ReadOptions.of(options)
    if opts.view == "latest" and mode == "append":
        raise ExportError(
            "--typed --view latest --mode append: the typed tables' append adds rows; give --mode overwrite "
            "for the latest view as typed tables (nothing was written)"
        )
    job = ExportJob.planned(spark, paths, out, opts, mode)
    out, items = job.out, job.items
    started = time.perf_counter()
    typed = job.survey()
    names = [*typed.topics, UNDECODED]
    tables, existing = open_typed_tables(fmt, out, names, mode, catalog, table_name)
    if watch is not None:
        for table in tables.values():
            watch.opened(table, table.location)
    # where the read starts: what the topics' tables recorded (commit_order: their undecodable records are
    # in _undecoded up to there); _undecoded's own rows are kept above what it holds (side_above)
    above: dict[tuple[str, int], int] = {}
    held_by: dict[str, dict[tuple[str, int], int]] = {}
    if mode == "append":
        for n in existing:
            held = json.loads(tables[n].properties().get(f"{PROPERTY_PREFIX}offsets", "{}"))
            held_by[n] = {(t, int(p)): int(last) for t, parts in held.items() for p, last in parts.items()}
            if n == UNDECODED:
                continue
            for key, last in held_by[n].items():
                above[key] = max(above.get(key, -1), last)
    side_above = held_by.get(UNDECODED, {})
    opts = job.restart_above(above)
    job_id = new_job_id()
    schemas = {n: format_schema(tp.schema(), fmt) for n, tp in typed.topics.items()}
    schemas[UNDECODED] = format_schema(undecoded_schema(), fmt)
    layouts = {n: FileLayout(data_uri=t.data_uri, job=job_id) for n, t in tables.items()}

    def run(t: tuple[int, Any], plan: Any) -> dict[str, Any]:
        return write_typed_task(t[0], t[1], opts, plan, layouts, schemas, above, side_above=side_above)

    # a commit that may have landed (CommitUnknownError, Ctrl-C): no file is deleted (the next export's sweep
    # removes what no commit references; the CLI says from the tables what each holds, .outcome)
    where = f"{fmt} tables under {out}"  # the tasks given the registry and the types (once per executor)
    with table_tasks(
        job, where, list(layouts.values()), run, typed, progress, unchanged="the tables are"
    ) as committed:

        def files_of(name: str) -> list[WrittenFile]:
            return [f for d in sorted(job.done, key=lambda d: d["task"]) for f in d["files"].get(name, ())]

        for name in commit_order(list(typed.topics)):
            files = files_of(name)
            if not files and (name in existing or name == UNDECODED):
                continue  # nothing new: no commit, the table is unchanged (no empty side table is made)
            # a topic table's recorded offsets: per partition the last offset of the topic's records this
            # export put in the table or in _undecoded (committed before it, commit_order)
            if name == UNDECODED:
                offsets = merged_offsets(held_by.get(name, {}), files)
            else:
                offsets = merged_offsets(held_by.get(name, {}), [*files, *files_of(UNDECODED)], name)
            table, schema = tables[name], schemas[name]
            grown = fmt == "delta" and name in existing  # Delta: the columns the table gains (Iceberg's own)
            have = table_columns(table) if grown else set()
            add = [f.name for f in schema if grown and f.name not in have]
            properties = table_properties(items, offsets, f"typed-{opts.view}")
            pause = functools.partial(_pause, table=name)
            commit_files(table, fmt, files, schema, mode, properties, add, pause=pause)
            committed.extend(f.path for f in files)
    elapsed = time.perf_counter() - started
    return job.result(
        TableExportResult,
        format=fmt,
        files=len(committed),
        bytes_out=sum(f.size for d in job.done for fs in d["files"].values() for f in fs),
        elapsed_s=elapsed,
        typed=job.typed_summary({n: tables[n].location for n in typed.topics}),
    )


def table_columns(table: Any, *, loaded: bool = False) -> set[str]:
    """The columns of ``table`` (loaded again, or as last loaded when ``loaded``; none when it does not
    exist)."""
    t = table._table if loaded else table.load()
    return {f.name for f in t.schema().fields} if t is not None else set()

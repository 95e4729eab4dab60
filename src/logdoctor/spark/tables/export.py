"""The table export job: check the table, run the tasks on Spark, commit once, remove the rest.

1. Before anything is written: the output must not overlap an input; the table (if it exists) must have
   the export's schema (:class:`TableSchemaError` names the difference; a logdoctor column the table
   lacks is added by the format's schema evolution at commit); ``--mode error`` refuses an existing
   table.
2. ``--mode append`` reads the last offset per (topic, partition) from the table's own rows and exports
   only the offsets above it (the plan starts there; tasks drop anything at or below it).
3. Spark runs one task per group of segment slices (the input partitions ``kafka-log`` would use); each
   task writes Parquet files with pyarrow into the table's data folder (:mod:`.files`) and returns them.
4. The driver commits the files of the one successful attempt per task in one transaction of the format's
   library, with the table properties (source inputs, logdoctor version, offsets per partition).
5. Every file of this job that the commit does not reference (failed or speculative attempts; every
   file when the job or the commit failed) is deleted. A driver killed before or during the commit
   leaves the table at its previous snapshot and its files in the storage: the next export of the table
   removes those older than 3 days and names the younger ones (:mod:`.orphans`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logdoctor.logdir.read_options import ReadOptions
from logdoctor.spark.export import ExportResult, fail_if_first_attempt
from logdoctor.spark.tables import PAUSE_ENV, TABLE_FORMATS, TableExistsError, TableSchemaError
from logdoctor.spark.tables.concurrent import first_offsets
from logdoctor.spark.tables.files import FileLayout, new_job_id, table_tasks, write_task
from logdoctor.spark.tables.orphans import MIN_AGE_S, Orphans, sweep
from logdoctor.spark.tables.outcome import CommitWatch

PROPERTY_PREFIX = "logdoctor."


@dataclass(slots=True)
class TableExportResult(ExportResult):
    """:class:`ExportResult` and the files earlier exports left uncommitted (:mod:`.orphans`)."""

    uncommitted: Orphans | None = None

    def to_json(self) -> dict[str, Any]:
        out = ExportResult.to_json(self)
        out["uncommitted_files"] = None if self.uncommitted is None else self.uncommitted.to_json()
        return out


def open_table(
    fmt: str,
    out: str,
    *,
    by_day: bool = False,
    catalog: Mapping[str, str] | None = None,
    table_name: str | None = None,
    partition_topic: bool = True,
) -> Any:
    """The table object of ``fmt`` at ``out`` (not yet loaded; ``partition_topic``: the records table's)."""
    if fmt == "iceberg":
        from logdoctor.spark.tables.iceberg import IcebergTable

        return IcebergTable(out, table_name, catalog, by_day, partition_topic)
    if fmt == "delta":
        from logdoctor.spark.tables.delta import DeltaLakeTable

        if catalog:
            from logdoctor.spark.export import ExportError

            raise ExportError("--catalog is for --format iceberg (a Delta table is its folder or URI)")
        return DeltaLakeTable(out, by_day, partition_topic)
    raise ValueError(f"not a table format: {fmt!r} (one of {', '.join(TABLE_FORMATS)})")


def _pause(stage: str, table: str | None = None) -> None:
    """The test seam of :data:`PAUSE_ENV` (tests only): ``STAGE:SECONDS``, or ``STAGE@TABLE:SECONDS`` at
    the commit of the table ``table`` only (an export of several tables)."""
    spec = os.environ.get(PAUSE_ENV, "")
    if not spec:
        return
    where, _, seconds = spec.rpartition(":")
    want, _, only = where.partition("@")
    if want != stage or (only and only != table):
        return
    at = f" of {table}" if table is not None else ""
    print(f"logdoctor-test: pausing {stage} the commit{at}", flush=True)
    time.sleep(float(seconds))


def read_upto(
    refs: Sequence[Any],
    opts: Any,
    txns: Mapping[tuple[str, str, int], Any],
    above: Mapping[tuple[str, int], int],
) -> dict[str, dict[str, int]]:
    """{topic: {partition: the offset the latest view was read to}}: the end the export asked for, else the
    log end, capped by what the isolation level leaves out (a transaction open now comes in once its marker
    is there); never below where this run started (``above`` + 1)."""
    from logdoctor.logdir.slices import resolve_range, txn_key

    out: dict[str, dict[str, int]] = {}
    for ref in refs:
        t = txns.get(txn_key(ref))
        if t is None or t.log_end_offset is None:
            continue
        bounds = [t.log_end_offset]
        end = resolve_range(ref, opts).end_offset
        if end is not None:
            bounds.append(end)
        stable = t.stable_end(opts.isolation_level, opts.upto_high_watermark)
        if stable is not None:
            bounds.append(stable)
        start = above.get((ref.topic, ref.partition), -1) + 1
        out.setdefault(ref.topic, {})[str(ref.partition)] = max(start, min(bounds))
    return out


def table_properties(items: Sequence[str], offsets: Mapping[str, Any], view: str) -> dict[str, str]:
    """logdoctor's properties of a table: version, sources, the offsets it holds, its view."""
    import logdoctor

    return {
        f"{PROPERTY_PREFIX}version": logdoctor.__version__,
        f"{PROPERTY_PREFIX}sources": json.dumps(list(items)),
        f"{PROPERTY_PREFIX}offsets": json.dumps(offsets, separators=(",", ":")),
        f"{PROPERTY_PREFIX}view": view,
    }


def commit_files(
    table: Any,
    fmt: str,
    files: Sequence[Any],
    schema: Any,
    mode: str,
    properties: Mapping[str, str],
    add_columns: Sequence[str] = (),
    first: Mapping[tuple[str, int], int] | None = None,
    pause: Callable[..., None] | None = None,
) -> None:
    """One commit of ``files`` (:class:`~.files.WrittenFile`) in ``fmt``'s library: Iceberg registers their
    paths (the rows in the snapshot's summary; ``first``: :func:`.concurrent.first_offsets`), Delta adds
    them (``add_columns``: the columns the table gains). ``pause``: :func:`_pause` when None."""
    pause = pause or _pause  # looked up now: the tests' seam replaces it
    if fmt == "iceberg":
        rows = {f"{PROPERTY_PREFIX}rows": str(sum(f.rows for f in files))}
        table.commit([f.path for f in files], schema, mode, properties, {**rows, **properties}, pause, first)
    else:
        table.commit(files, schema, mode, properties, list(add_columns), pause=pause)


def merged_offsets(
    before: Mapping[tuple[str, int], int], files: Sequence[Any], topic: str | None = None
) -> dict[str, dict[str, int]]:
    """{topic: {partition: last offset}} the table holds after the commit (``topic``: of the files' offsets,
    that topic's only)."""
    last = dict(before)
    for f in files:
        for key, (_, hi) in f.offsets.items():
            if topic is None or key[0] == topic:
                last[key] = max(last.get(key, -1), hi)
    out: dict[str, dict[str, int]] = {}
    for (t, p), hi in sorted(last.items()):
        out.setdefault(t, {})[str(p)] = hi
    return out


def run_table_export(
    spark: Any,
    paths: Sequence[str] | str,
    out: str,
    *,
    fmt: str,
    mode: str = "error",
    options: ReadOptions | Mapping[str, str] | None = None,
    by_day: bool = False,
    catalog: Mapping[str, str] | None = None,
    table_name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    fail_first_attempt: bool = False,
    orphan_min_age_s: float = MIN_AGE_S,
    watch: CommitWatch | None = None,
) -> TableExportResult:
    """Export PATHS into the ``fmt`` table at ``out`` (see the module doc). After the commit, the files
    earlier exports of the table left uncommitted that are older than ``orphan_min_age_s`` are removed
    (:mod:`.orphans`). ``watch``: told the table once it is opened, to say after a Ctrl-C whether the
    commit landed (:mod:`.outcome`)."""
    from logdoctor.spark.export import ExportError, ExportJob
    from logdoctor.spark.schema import records_arrow_schema, records_fields

    job = ExportJob.planned(spark, paths, out, ReadOptions.of(options), mode)
    out, opts = job.out, job.opts
    table = open_table(fmt, out, by_day=by_day, catalog=catalog, table_name=table_name)
    export_schema = records_arrow_schema(opts.decoded)
    known = [name for name, _, _ in records_fields(True)]
    exists = table.exists()
    if watch is not None:
        watch.opened(table)
    if exists:
        if mode == "error":
            raise TableExistsError(
                f"{fmt} table {out} exists: choose another --out, or --mode append / overwrite "
                "(nothing was written)"
            )
        problems, add_columns = table.schema_difference(export_schema, known)
        if problems:
            raise TableSchemaError(
                f"{fmt} table {out} has another schema than the export: {'; '.join(problems)} "
                "(nothing was written)"
            )
    else:
        add_columns = []
    view = opts.view
    upsert = view == "latest" and exists and mode == "append"
    held_properties = table.properties() if exists and mode == "append" else {}
    if exists and mode == "append":
        held = held_properties.get(f"{PROPERTY_PREFIX}view", "history")
        if held != view:
            raise ExportError(
                f"{fmt} table {out} holds the {held} view, this export the {view} view: --mode append would "
                f"mix them; give --view {held}, or --mode overwrite (nothing was written)"
            )
    if upsert:  # the offsets the latest view was read to (not its rows': superseded records leave none)
        held_upto = json.loads(held_properties.get(f"{PROPERTY_PREFIX}latest_upto", "{}"))
        above = {(t, int(p)): int(n) - 1 for t, parts in held_upto.items() for p, n in parts.items()}
    else:
        above = table.offsets() if exists and mode == "append" else {}
    opts = job.restart_above(above)
    layout = FileLayout(
        data_uri=table.data_uri,
        job=new_job_id(),
        by_day=by_day,
        partition_columns_in_file=fmt == "iceberg",
        day_column=fmt == "delta" and by_day,
        int16_as_int32=fmt == "iceberg",
    )
    job.lap("planning")

    def run(t: tuple[int, Any], _: Any) -> dict[str, Any]:
        result = write_task(t[0], t[1], opts, layout, above, tombstones=upsert)
        if fail_first_attempt:
            fail_if_first_attempt()
        return result

    # Ctrl-C or CommitUnknownError: the commit may have landed, nothing is deleted (the next export's sweep
    # removes what no commit references, .orphans; the CLI says from the table whether it landed, .outcome)
    with table_tasks(
        job, f"{fmt} table {out}: {layout.data_uri}", [layout], run, progress=progress
    ) as committed:
        files = [f for d in sorted(job.done, key=lambda d: d["task"]) for f in d["files"]]
        offsets = merged_offsets(above if mode == "append" else {}, files)
        properties = table_properties(job.items, offsets, view)
        dead = [f for d in sorted(job.done, key=lambda d: d["task"]) for f in d.get("tombstones") or ()]
        if view == "latest":
            upto = read_upto(job.plan.refs, opts, job.txns, above)
            properties[f"{PROPERTY_PREFIX}latest_upto"] = json.dumps(upto, separators=(",", ":"))
        if not files and not dead and mode == "append":
            pass  # nothing above what the table holds: no commit, the table is unchanged
        elif upsert and fmt == "iceberg":
            paths = [f.path for f in files]
            table.upsert(paths, [*paths, *(f.path for f in dead)], export_schema, properties, properties)
        elif upsert:
            table.upsert([*files, *dead], export_schema, properties)
            files = []  # the merge wrote files of its own: the task files are removed with the job's
        else:
            commit_files(
                table, fmt, files, export_schema, mode, properties, add_columns, first_offsets(files)
            )
        committed.extend(f.path for f in files)
    job.lap("writing")
    uncommitted = _sweep(table, layout, orphan_min_age_s)
    job.lap("sweep")
    skipped = job.skipped()
    job.lap("segments pass")
    return job.result(
        TableExportResult,
        format=fmt,
        files=len(committed),
        bytes_out=sum(f.size for d in job.done for f in d["files"]),
        skipped=skipped,
        uncommitted=uncommitted,
    )


def _sweep(table: Any, layout: FileLayout, min_age_s: float) -> Orphans | None:
    """Remove what earlier exports left uncommitted (best effort: a failure is reported, not raised).
    Only in a table that exists: without one, no snapshot says which files are its."""
    if table.load() is None:
        return None
    try:
        return sweep(
            table.data_uri, table.referenced_file_names(), running_job=layout.job, min_age_s=min_age_s
        )
    except Exception as exc:
        return Orphans(min_age_s=min_age_s, error=" ".join(f"{type(exc).__name__}: {exc}".split())[:300])

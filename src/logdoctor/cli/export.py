"""`logdoctor export PATHS... --out DIR`: the records of log dirs as a Parquet table, with Spark.

Exit codes: 0 done, 1 done but corrupt ranges were skipped, 64 usage, 69 Spark unavailable
(no Java 17+) or no data source of the --format name (its jars not given), 70 tool failure, 73 --out
at, inside or above an input, or (--mode error) not empty; --format iceberg|delta: see export_tables.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import fail, usage_error
from logdoctor.cli.exit_codes import EX_CANTCREAT, EX_NOPERM, EX_OK, EX_UNAVAILABLE, EX_WARNINGS
from logdoctor.cli.export_tables import (
    CatalogOption,
    PartitionByDayOption,
    TableNameOption,
    interrupted_line,
    is_table_format,
    table_export_cli,
    time_parts,
)
from logdoctor.cli.input_checks import refuse_overlapping_outputs
from logdoctor.cli.interrupts import spark_interruptible
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.output import text_console
from logdoctor.cli.progress import spark_progress
from logdoctor.cli.record_options import RecordReadArgs, plan_records, reads_records
from logdoctor.cli.spark_options import start_spark
from logdoctor.logdir.disk import human_bytes

if TYPE_CHECKING:
    from logdoctor.logdir.read_options import ReadOptions


def outputs_this_run_creates(
    out: str, fmt: str, writer: str | None, catalog: Sequence[str] | None
) -> list[str]:
    """The local paths this export creates (the output folder; Iceberg's default catalog file beside it)
    that do not exist yet: what a failed run removes so that it leaves nothing behind."""
    paths = [out]
    if fmt == "iceberg" and is_table_format(fmt, writer) and not catalog:
        from logdoctor.spark.tables.iceberg import default_catalog_file

        paths.append(default_catalog_file(out))
    return [os.path.abspath(p) for p in paths if "://" not in p and not os.path.lexists(p)]


#: what stops an export writing its output, by errno, and the words Python's and Java's errors use for it
_UNWRITABLE = (
    (errno.ENOSPC, ("No space left on device", "[Errno 28]"), "no space left on device"),
    (errno.EROFS, ("Read-only file system", "[Errno 30]"), "read-only file system"),
)


def _unwritable(exc: BaseException, out: str | None) -> str | None:
    """Why ``exc`` (or what caused it) says the output cannot be written, or None: a full disk, a read-only
    file system, and (with ``out``) a permission denied on ``out`` or below it."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        text = str(cur)
        for code, words, why in _UNWRITABLE:
            if (isinstance(cur, OSError) and cur.errno == code) or any(w in text for w in words):
                return why
        if out is not None and "://" not in out:
            if isinstance(cur, PermissionError) and str(cur.filename or "").startswith(os.path.abspath(out)):
                return "permission denied"
            if ("Permission denied" in text or "AccessDenied" in text) and os.path.abspath(out) in text:
                return "permission denied"
        cur = cur.__cause__ or cur.__context__
    return None


@contextlib.contextmanager
def no_space_exits_73(out: str, fresh: Sequence[str]) -> Iterator[None]:
    """A full disk, a read-only file system or a folder this user may not write, while the export writes:
    one line naming the output, exit 73 (77 for a permission denied, docs/exit-codes.md), and what this run
    created (``fresh``: :func:`outputs_this_run_creates`) removed, instead of Spark's and pyarrow's
    tracebacks."""
    try:
        yield
    except Exception as exc:
        why = _unwritable(exc, out)
        if why is None:
            raise
        for path in fresh:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        fail(
            f"error: {out}: {why}: the export stopped and removed what it had written "
            "(nothing was exported; free space or choose another --out)"
            if why == "no space left on device"
            else f"error: {out}: {why}: nothing was exported (choose another --out)",
            EX_NOPERM if why == "permission denied" else EX_CANTCREAT,
        )


@contextlib.contextmanager
def export_spark(
    out: str,
    fmt: str,
    writer: str | None,
    catalog: Sequence[str] | None,
    mode: str,
    master: str | None,
    confs: dict[str, str],
    remote: str | None,
    err: Any,
) -> Iterator[tuple[Any, Any, float]]:
    """Spark started for an export, a Ctrl-C said in one line (:func:`interrupted_line`) and a full disk
    exiting 73 (:func:`no_space_exits_73`) until the block ends: (the session, the commit watch of a table
    export or None, time.perf_counter() before Spark started: the printed time includes Spark's start)."""
    fresh = outputs_this_run_creates(out, fmt, writer, catalog)
    watch, stopped = interrupted_line(out, is_table_format(fmt, writer), mode)
    with spark_interruptible(stopped), no_space_exits_73(out, fresh):
        started = time.perf_counter()
        # The SQL side is built when a DataFrame needs it (not by the arrow writer's one RDD job).
        spark = start_spark(err, master, "logdoctor export", conf=confs, remote=remote, sql=False)
        yield spark, watch, started


#: ``export --help``'s order, as it always was: the read options (logdoctor.cli.record_options) among the
#: export's own
_HELP_ORDER = (
    "paths", "out", "fmt", "mode", "partition_by", "master", "conf", "remote", "topics", "starting_offsets",
    "ending_offsets", "starting_timestamp", "ending_timestamp", "include_control", "isolation_level", "upto",
    "open_transactions", "cut_at",
    "view", "include_internal", "decoder", "max_partition_bytes", "writer", "remote_storage", "remote_layout",
    "remote_private_key", "typed", "schemas", "placeholder", "json_out", "catalog", "table_name",
    "partition_by_day", "keep_cache", "max_read_rate",
)  # fmt: skip


@app.command("export")
@reads_records(help_order=_HELP_ORDER)
def export_command(
    read: RecordReadArgs,
    out: Annotated[str, typer.Option("--out", "-o", help="Output folder or URI (s3://..., hdfs://...).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="parquet (default); iceberg or delta (a table committed by pyiceberg / deltalake, "
            "docs/tables.md); or, with --writer spark, the name of any data source Spark has or is "
            "given jars for with --conf spark.jars.packages=... (none is bundled).",
        ),
    ] = "parquet",
    mode: Annotated[
        str,
        typer.Option(
            "--mode", help="error (refuse an existing non-empty --out; default), overwrite or append."
        ),
    ] = "error",
    partition_by: Annotated[
        str | None,
        typer.Option(
            "--partition-by",
            help="Comma-separated columns ('' for none; default topic,partition). Parquet only: an Iceberg "
            "or Delta table is partitioned by topic (--partition-by-day adds the day).",
        ),
    ] = None,
    decoder: Annotated[
        str, typer.Option("--decoder", help="none|auto|consumer-offsets|transactions|cluster-metadata")
    ] = "none",
    writer: Annotated[
        str | None,
        typer.Option(
            "--writer",
            help="spark (Spark's DataFrame writer and commit protocol; default on a cluster or for an "
            "--out URI) or arrow (tasks write Parquet with pyarrow; default and only allowed for a "
            "local[...] master writing Parquet to a local folder).",
        ),
    ] = None,
    typed: Annotated[
        bool,
        typer.Option(
            "--typed",
            help="One typed table per topic at OUT/TOPIC: keys and values decoded (Avro, Protobuf, JSON "
            "Schema, Kafka Connect JSON) with the schemas of the _schemas topic among the inputs and "
            "--schemas; records that do not decode go to OUT/_undecoded with their reason "
            "(docs/typed-tables.md).",
        ),
    ] = False,
    schemas: Annotated[
        list[str] | None,
        typer.Option(
            "--schemas",
            metavar="PATH",
            help="With --typed or --view cdc: more places holding a _schemas topic (another broker's log "
            "dir, a partition folder, a URI); repeat for several.",
        ),
    ] = None,
    placeholder: Annotated[
        str | None,
        typer.Option(
            "--placeholder",
            metavar="VALUE",
            help="With --view cdc: Debezium's unavailable.value.placeholder, if the connector set another "
            "than __debezium_unavailable_value.",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    catalog: CatalogOption = None,
    table_name: TableNameOption = None,
    partition_by_day: PartitionByDayOption = False,
) -> None:
    """Export the records of Kafka log dirs to Parquet (one row per record, Spark's Kafka columns first)."""
    from logdoctor.errors import OutputOverlapsInputError
    from logdoctor.logdir.consumer_view import summary_lines
    from logdoctor.logdir.discovery import split_paths
    from logdoctor.logdir.outputs import absolute_location
    from logdoctor.logdir.slices import PlanningError
    from logdoctor.spark.export import (
        ExportError,
        FormatUnavailableError,
        OutputExistsError,
        output_has_data,
        overwrite_refusal,
        run_export,
    )
    from logdoctor.spark.latest import latest_lines

    err = text_console(stderr=True)
    console = text_console()
    out = absolute_location(out)  # what is written and printed works from any folder
    if schemas and not typed and read.view.strip().lower() != "cdc":  # --view cdc always decodes
        usage_error("--schemas names where the registry's schemas are: it goes with --typed or --view cdc")
    if typed and partition_by is not None:
        usage_error("--partition-by applies to the records export; --typed writes one table per topic")
    if mode == "append" and read.view.strip().lower() == "latest" and not is_table_format(fmt, writer):
        from logdoctor.spark.latest import APPEND_REFUSAL

        usage_error(APPEND_REFUSAL)
    if partition_by is not None and is_table_format(fmt, writer):  # refused, never silently ignored
        usage_error(
            f"--partition-by applies to the Parquet export; a {fmt} table is partitioned by topic "
            "(--partition-by-day adds the day of the record timestamp)"
        )
    # the read options checked (64), the inputs found (66, 77) and planned, the same for every command that
    # reads records (logdoctor.cli.record_options); the export's own options that shape the read with them
    records = plan_records(
        read, extra=export_read_extra(decoder=decoder, typed=typed, schemas=schemas), err=err
    )
    paths, options, plan, confs = records.paths, records.options, records.plan, dict(records.confs)
    master, remote = read.master, read.remote
    refs = list(plan.found)
    not_read = list(records.not_read)
    denied = records.denied
    # Before Spark starts: never write or delete at, inside or above an input (exit 73).
    refuse_overlapping_outputs([out], [*split_paths(paths), *sorted({r.log_dir for r in refs})])
    if mode == "error" and output_has_data(out):  # refused before Spark starts (it takes 8-22 s)
        fail(
            f"refused: output {out} exists and is not empty: choose another --out, or --mode overwrite / "
            "append (nothing was written or deleted)",
            EX_CANTCREAT,
        )
    if mode == "overwrite" and not is_table_format(fmt, writer):  # only an earlier export's files go
        refusal = overwrite_refusal(out, fmt)
        if refusal is not None:
            fail(f"refused: {refusal}", EX_CANTCREAT)
    if placeholder is not None and options.view != "cdc":
        usage_error("--placeholder goes with --view cdc")
    if options.view == "cdc":
        if partition_by is not None:
            usage_error("--partition-by applies to the records export; --view cdc writes one table per topic")
        cdc_export_cli(
            paths, out, fmt=fmt, mode=mode, options=options, placeholder=placeholder, master=master,
            confs=confs, remote=remote, catalog=catalog, table=table_name, json_out=json_out,
            console=console, err=err, not_read=not_read,
        )  # fmt: skip
    given = partition_by if partition_by is not None else "topic,partition"
    cols = tuple(c.strip() for c in given.split(",") if c.strip())
    with export_spark(out, fmt, writer, catalog, mode, master, confs, remote, err) as (spark, watch, started):
        spark_start_s = time.perf_counter() - started
        if is_table_format(fmt, writer):  # Iceberg / Delta: pyarrow tasks, one commit of the format's library
            table_export_cli(
                spark, paths, out, fmt=fmt, mode=mode, options=options, by_day=partition_by_day,
                catalog=catalog, table=table_name, json_out=json_out, console=console, err=err,
                not_read=not_read, started=started, spark_start_s=spark_start_s, watch=watch,
                denied=bool(denied),
            )  # fmt: skip
        try:
            with spark_progress(err, "export", "tasks", disable=json_out) as progress:
                result = run_export(
                    spark,
                    paths,
                    out,
                    fmt=fmt,
                    partition_by=cols,
                    options=options,
                    progress=progress,
                    writer=writer,
                    mode=mode,
                )
        except (OutputOverlapsInputError, OutputExistsError) as exc:
            fail(f"refused: {exc}", EX_CANTCREAT)
        except FormatUnavailableError as exc:
            fail(f"error: {exc}", EX_UNAVAILABLE)
        except (ExportError, PlanningError) as exc:
            usage_error(str(exc))
    if json_out:
        print_json({**result.to_json(), "remote_tier_not_read": not_read}, indent=2)
    else:
        console.print(
            Text.assemble(  # the out dir is text, never markup
                "Exported ",
                (f"{result.rows:,}", "bold"),
                f" records from {result.segments:,} segments ({human_bytes(result.bytes_in)} of logs) to "
                f"{result.out_dir} as {result.format}: {result.files} files, "
                f"{human_bytes(result.bytes_out)}, in "
                + time_parts(time.perf_counter() - started, spark_start_s, result),
            )
        )
        if result.skipped:
            table = Table(
                title="Skipped corrupt ranges (broken framing ends its segment's rows; a batch whose CRC "
                "does not match or whose records do not decode is skipped alone; remote segments: the "
                "offsets not read)"
            )
            for c in ("segment", "range", "skipped bytes", "why"):
                table.add_column(c, overflow="fold")
            for s in result.skipped:
                table.add_row(s.path, s.describe(), f"{s.skipped_bytes:,}", s.error)
            console.print(table)
        else:
            console.print("No corrupt range was skipped.")
        if result.left_out:
            console.print(f"Left out: {plan.left_out_text()}", soft_wrap=True, markup=False)
        for line in summary_lines(result.transactions):
            console.print(f"Transactions: {line}", soft_wrap=True, markup=False)
        for line in latest_lines(result.latest):
            console.print(f"Latest: {line}", soft_wrap=True, markup=False)
        for line in not_read:
            console.print(f"Not exported: {line}", soft_wrap=True, markup=False)
        for line in result.typed.lines() if result.typed is not None else ():  # none without --typed
            console.print(f"Typed: {line}", soft_wrap=True, markup=False)
    undecoded = result.typed is not None and result.typed.undecoded > 0
    if denied:
        raise typer.Exit(EX_NOPERM)
    raise typer.Exit(EX_WARNINGS if result.skipped or not_read or undecoded else EX_OK)


def export_read_extra(*, decoder: str, typed: bool, schemas: Sequence[str] | None) -> dict[str, object]:
    """The export's own options that shape its read, by their data-source names (the ``extra`` of
    :func:`logdoctor.cli.record_options.record_read_options`: read and checked with the shared ones)."""
    return {"decoder": decoder, "typed": typed, "schemas": json.dumps(list(schemas)) if schemas else None}


def cdc_export_cli(
    paths: Sequence[str],
    out: str,
    *,
    fmt: str,
    mode: str,
    options: ReadOptions,
    placeholder: str | None,
    master: str | None,
    confs: dict[str, str],
    remote: str | None,
    catalog: Sequence[str] | None,
    table: str | None,
    json_out: bool,
    console: object,
    err: object,
    not_read: Sequence[str],
) -> None:
    """``export --view cdc``: the Debezium topics folded into their tables (logdoctor.spark.cdc_job);
    exits."""
    from logdoctor.cli.export_tables import parse_catalog, table_failures_exit
    from logdoctor.spark.cdc_job import run_cdc_export

    with (
        export_spark(out, fmt, None, catalog, mode, master, confs, remote, err) as (spark, watch, started),
        table_failures_exit(),
        spark_progress(err, "export", "tasks", disable=json_out) as progress,
    ):
        result = run_cdc_export(
            spark,
            list(paths),
            out,
            fmt=fmt,
            mode=mode,
            options=options,
            placeholder=placeholder,
            catalog=parse_catalog(catalog) if fmt == "iceberg" else None,
            table_name=table,
            progress=progress,
            watch=watch,
        )
    summary = result.typed
    if json_out:
        print_json({**result.to_json(), "remote_tier_not_read": list(not_read)}, indent=2)
    else:
        console.print(  # type: ignore[attr-defined]
            f"Folded {sum(s.events_folded for s in summary.stats.values()):,} change events into "
            f"{result.rows:,} rows of {len(summary.tables)} table(s) under {out} as {fmt}, in "
            f"{time.perf_counter() - started:.1f} s",
            soft_wrap=True,
            markup=False,
        )
        for s in result.skipped:
            console.print(  # type: ignore[attr-defined]
                f"  skipped: {s.path} {s.describe()} ({s.skipped_bytes:,} bytes): {s.error}",
                soft_wrap=True,
                markup=False,
            )
        for line in summary.lines():
            console.print(f"CDC: {line}", soft_wrap=True, markup=False)  # type: ignore[attr-defined]
        for line in not_read:
            console.print(  # type: ignore[attr-defined]
                f"Not exported: {line}", soft_wrap=True, markup=False
            )
    refused = any(s.refused for s in summary.stats.values())
    warn = result.skipped or not_read or summary.undecoded or refused
    raise typer.Exit(EX_WARNINGS if warn else EX_OK)

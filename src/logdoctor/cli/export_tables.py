"""`logdoctor export --format iceberg|delta`: the CLI side of the table export (logdoctor.spark.tables).

Exit codes as for `export`, and 73 (nothing committed, the table unchanged) for a table whose schema is
not the export's, an existing table with --mode error, an unreachable catalog, storage that cannot be
written or a commit that lost to other writers more often than the library retries.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from logdoctor.cli.error_lines import fail, usage_error
from logdoctor.cli.exit_codes import EX_CANTCREAT, EX_NOPERM, EX_OK, EX_WARNINGS
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.progress import spark_progress
from logdoctor.cli.spark_options import parse_conf
from logdoctor.logdir.disk import human_bytes

if TYPE_CHECKING:
    from logdoctor.logdir.read_options import ReadOptions

CatalogOption = Annotated[
    list[str] | None,
    typer.Option(
        "--catalog",
        metavar="KEY=VALUE",
        help="--format iceberg: a pyiceberg catalog property (repeatable), e.g. type=rest, uri=...; "
        "default: a SQLite catalog in the file OUT.catalog.db beside the table folder.",
    ),
]
TableNameOption = Annotated[
    str | None,
    typer.Option("--table", metavar="NAMESPACE.NAME", help="--format iceberg: the table name."),
]
PartitionByDayOption = Annotated[
    bool,
    typer.Option(
        "--partition-by-day",
        help="--format iceberg|delta: partition by topic and the UTC day of the record timestamp.",
    ),
]


#: what the summary line says of each --mode: the mode's own name "error" read like a failure (issue 31)
_MODE_WORDS = {"error": "new table", "append": "appended", "overwrite": "overwritten"}


def is_table_format(fmt: str, writer: str | None) -> bool:
    """Whether the export goes through logdoctor's table commit (``--writer spark`` keeps Spark's own
    data source of that name, which needs its jars)."""
    from logdoctor.spark.tables import TABLE_FORMATS

    return fmt in TABLE_FORMATS and writer != "spark"


def parse_catalog(pairs: Sequence[str] | None) -> dict[str, str]:
    try:
        return parse_conf(pairs, "--catalog", " (a pyiceberg catalog property)")
    except ValueError as exc:
        usage_error(str(exc))


def interrupted_line(out: str, table_format: bool, mode: str) -> tuple[Any, str | Callable[[], str]]:
    """What a Ctrl-C of an export says (for :func:`logdoctor.cli.interrupts.spark_interruptible`) and the
    :class:`~logdoctor.spark.tables.outcome.CommitWatch` the export tells each table it opens (None for
    Parquet): of tables, what each holds, read from it once the JVM is stopped; of Parquet, that the output
    is incomplete."""
    if not table_format:
        return None, f"logdoctor export was stopped; its output {out} is incomplete"
    from logdoctor.spark.tables.outcome import CommitWatch

    watch = CommitWatch(mode)
    return watch, lambda: f"logdoctor export was stopped: {watch.line()}"


@contextlib.contextmanager
def table_failures_exit() -> Iterator[None]:
    """An export's refusal or a table's failure: one line naming the cause and the exit code (73 for a
    refusal or a table that cannot be written, 64 for a bad option)."""
    from logdoctor.errors import OutputOverlapsInputError
    from logdoctor.logdir.slices import PlanningError
    from logdoctor.spark.export import ExportError, OutputExistsError
    from logdoctor.spark.tables import TableError, TableExistsError, TableSchemaError

    try:
        yield
    except (OutputOverlapsInputError, OutputExistsError, TableExistsError, TableSchemaError) as exc:
        fail(f"refused: {exc}", EX_CANTCREAT)
    except TableError as exc:
        fail(f"error: {exc}", EX_CANTCREAT)
    except (ExportError, PlanningError) as exc:
        usage_error(str(exc))


def how_to_read(fmt: str, out: str, table: str | None, catalog: Mapping[str, str]) -> str:
    """The Python lines that read the table back with the format's own library."""
    if fmt == "delta":
        # Through delta-rs's own query engine, not DeltaTable.to_pyarrow_table(): with deltalake
        # 1.6 and pyarrow 26 the latter aborts at interpreter exit in most runs ("terminate called
        # without an active exception", after printing its result; delta-io/delta-rs#2184), so a
        # printed one-liner built on it exits 134 (tests/spark/test_tables_commit.py runs it 5 times).
        return (
            "import pyarrow as pa; from deltalake import DeltaTable, QueryBuilder; "
            f"pa.table(QueryBuilder().register('records', DeltaTable({out!r}))"
            ".execute('SELECT * FROM records').read_all())"
        )
    from logdoctor.spark.tables.iceberg import DEFAULT_IDENTIFIER, catalog_properties

    props = {k: v for k, v in catalog_properties(out, catalog).items() if k != "init_catalog_tables"}
    name = table or DEFAULT_IDENTIFIER
    return (  # keep_null_lists: pyiceberg 0.12 reads a null list of structs as [] (its doc)
        "from logdoctor.spark.tables.iceberg import keep_null_lists; keep_null_lists(); "
        "from pyiceberg.catalog import load_catalog; "
        f"load_catalog('logdoctor', **{props!r}).load_table({name!r}).scan().to_arrow()"
    )


def table_export_cli(
    spark: Any,
    paths: Sequence[str],
    out: str,
    *,
    fmt: str,
    mode: str,
    options: ReadOptions,
    by_day: bool,
    catalog: Sequence[str] | None,
    table: str | None,
    json_out: bool,
    console: Any,
    err: Any,
    not_read: Sequence[str] = (),
    started: float | None = None,
    spark_start_s: float = 0.0,
    watch: Any = None,
    denied: bool = False,
) -> NoReturn:
    """``export --format iceberg|delta``: run, print the summary and how to read the table, exit.
    ``started`` (time.perf_counter() before Spark started) and ``spark_start_s``: the time printed is the
    whole run's, and says how much of it Spark's start took."""
    props = parse_catalog(catalog)
    common = {"fmt": fmt, "mode": mode, "options": options, "catalog": props, "table_name": table}
    # a refusal or a table failure exits with one line naming the cause
    with spark_progress(err, "export", "tasks", disable=json_out) as progress, table_failures_exit():
        if options.typed:  # one table per topic (logdoctor.spark.tables.typed_export)
            from logdoctor.spark.tables.typed_export import run_typed_table_export

            if by_day:
                usage_error(
                    "--partition-by-day applies to the records table; typed tables are not partitioned"
                )
            result = run_typed_table_export(spark, list(paths), out, progress=progress, watch=watch, **common)
        else:
            from logdoctor.spark.tables.export import run_table_export

            result = run_table_export(
                spark, list(paths), out, by_day=by_day, progress=progress, watch=watch, **common
            )
    typed = getattr(result, "typed", None)
    if typed is not None:  # one table per topic: read any of them the same way
        from logdoctor.spark.tables.typed_export import table_identifier

        first = next(iter(sorted(typed.tables)), None)
        location = typed.tables[first] if first is not None else out
        name = table_identifier(table, first) if first is not None else table
        read = how_to_read(fmt, location, name, props or _typed_catalog(fmt, out))
    else:
        read = how_to_read(fmt, out, table, props)
    if json_out:
        print_json({**result.to_json(), "read_with": read, "remote_tier_not_read": list(not_read)}, indent=2)
    else:
        console.print(
            f"Committed [bold]{result.rows:,}[/bold] records from {result.segments:,} segments to the "
            f"{fmt} table {out} ({_MODE_WORDS.get(mode, mode)}): {result.files} files, "
            f"{human_bytes(result.bytes_out)}, in "
            + (
                time_parts(time.perf_counter() - started, spark_start_s, result)
                if started is not None
                else f"{result.elapsed_s:.1f} s ({result.records_per_s:,.0f} records/s)"
            )
        )
        for s in result.skipped:
            console.print(
                f"  skipped: {s.path} {s.describe()} ({s.skipped_bytes:,} bytes): {s.error}", soft_wrap=True
            )
        if result.left_out:
            console.print(
                f"Left out: internal topics {', '.join(result.left_out)} (name them in --topics, or give "
                "--include-internal, to export them)",
                soft_wrap=True,
                markup=False,
            )
        console.print(f"Read it with:\n  {read}", soft_wrap=True, markup=False)
        from logdoctor.logdir.consumer_view import summary_lines

        for line in summary_lines(result.transactions):
            console.print(f"Transactions: {line}", soft_wrap=True, markup=False)
        from logdoctor.spark.latest import latest_lines

        for line in latest_lines(result.latest):
            console.print(f"Latest: {line}", soft_wrap=True, markup=False)
        for line in result.uncommitted.lines() if result.uncommitted is not None else ():
            console.print(f"Storage: {line}", soft_wrap=True, markup=False)
        for line in typed.lines() if typed is not None else ():
            console.print(f"Typed: {line}", soft_wrap=True, markup=False)
    for line in not_read:  # a tiered partition's remote tier not read (record_options.remote_tier_not_read)
        console.print(f"Not exported: {line}", soft_wrap=True, markup=False)
    undecoded = typed is not None and typed.undecoded > 0
    if denied:  # what this user cannot read was named (skipped) and the rest exported: 77
        raise typer.Exit(EX_NOPERM)
    raise typer.Exit(EX_WARNINGS if result.skipped or not_read or undecoded else EX_OK)


#: what each of TableExportResult.phases is, as the summary line names it
_PHASE_WORDS = {
    "planning": "planning (the read plan; the table opened and checked)",
    "writing": "writing and committing",
    "sweep": "sweeping earlier runs' uncommitted files",
    "skipped ranges": "naming the skipped ranges",
    "segments pass": "a Spark pass over the segments naming the skipped ranges",
}


def time_parts(total_s: float, spark_start_s: float, result: Any) -> str:
    """``22.8 s: 4.7 s starting Spark, ...``: the run's time and every part of it, the parts adding up to
    it (what no part measured is said as "other", never left out)."""
    parts = [("starting Spark", spark_start_s)]
    phases = getattr(result, "phases", None) or {"writing": result.elapsed_s}
    for name, seconds in phases.items():
        words = _PHASE_WORDS.get(name, name)
        if name == "writing":
            words += f", {result.records_per_s:,.0f} records/s"
        parts.append((words, seconds))
    rest = total_s - sum(s for _, s in parts)
    if rest >= 0.05:
        parts.append(("other (Python and the summary)", rest))
    return f"{total_s:.1f} s: " + ", ".join(f"{s:.1f} s {words}" for words, s in parts)


def _typed_catalog(fmt: str, out: str) -> dict[str, str]:
    """The embedded catalog of typed Iceberg tables: one for the export, beside ``out``."""
    if fmt != "iceberg":
        return {}
    from logdoctor.spark.tables.iceberg import catalog_properties

    return {k: v for k, v in catalog_properties(out, None).items() if k != "init_catalog_tables"}

"""`logdoctor census PATHS... --out DIR`: the fleet view across brokers, computed with local Spark.

Exit codes: 0 clean (info only), 1 warnings, 2 errors, 64 usage (or a path that is not a log dir nor
holds one), 66 a missing path, 69 Spark unavailable (no Java 17+), 73 --out/--html at, inside or
above an input.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import fail, usage_error
from logdoctor.cli.exit_codes import EX_DATA, EX_NOINPUT, EX_OK, EX_WARNINGS
from logdoctor.cli.findings_output import HtmlOption, VerboseOption, render_findings
from logdoctor.cli.input_checks import refuse_overlapping_outputs
from logdoctor.cli.interrupts import spark_interruptible
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.output import text_console
from logdoctor.cli.progress import spark_progress
from logdoctor.cli.spark_options import ConfOption, RemoteOption
from logdoctor.cli.timeparse import parse_now
from logdoctor.cli.topic_options import (
    NowOption,
    ServerPropertiesOption,
    TopicConfigOption,
    read_config_inputs,
)
from logdoctor.logdir.words import counted


def render_census(console: Console, result: Any, *, verbose: bool = False) -> None:
    """Tables for people: lagging replicas, log dirs, findings with the command that fixes each."""
    from logdoctor.logdir.disk import human_bytes
    from logdoctor.spark.census import used_pct

    c = result.counts()
    console.print(
        f"[bold]Fleet census[/bold]: {counted(result.brokers, 'broker')}, "
        f"{counted(len(result.log_dirs), 'log dir')}, "
        f"{counted(_total(result, 'partitions'), 'topic-partition')}, "
        f"{counted(_total(result, 'replicas'), 'replica')}; "
        f"[bold red]{counted(c['error'], 'error')}[/bold red], "
        f"[yellow]{counted(c['warning'], 'warning')}[/yellow], {c['info']} info"
    )
    lag = Table(
        *("partition", "broker", "log end offset", "leader's", "lag (offsets)", "lag (size)", "in ISR?"),
        title="Replicas behind the most advanced one",
    )
    # a diverged replica does not lag: it loses records when it fetches (REPLICA_DIVERGED, below)
    diverged = {f["path"] for f in result.findings if f["code"] == "REPLICA_DIVERGED"}
    for r in result.replicas:
        if (r.get("lag_offsets") or 0) > 0 and r.get("path") not in diverged:
            lag.add_row(
                f"{r['topic']}-{r['partition']}",
                r["broker"],
                str(r["log_end_offset"]),
                str(r["max_log_end_offset"]),
                f"{r['lag_offsets']:,}",
                human_bytes(r["lag_bytes"] or 0),
                "[red]no (below HW)[/red]" if r.get("below_high_watermark") else "maybe",
            )
    if lag.row_count:
        console.print(lag)
    elif diverged:
        console.print("No replica lags behind its partition's most advanced one but the diverged ones below.")
    else:
        console.print("Every replica is at its partition's log end offset.")
    if diverged:
        console.print(
            f"{len(diverged)} diverged replica(s), not lagging: they lose records when they fetch "
            "(REPLICA_DIVERGED, under findings): " + ", ".join(sorted(diverged)),
            markup=False,
            emoji=False,
        )
    dirs = Table(title="Log dirs")
    for col in ("broker", "log dir", "partitions", "size", "disk used", "from"):
        dirs.add_column(col, overflow="fold")
    for d in result.log_dirs:
        used = d.get("disk_used_fraction")
        style = "red" if used is not None and used >= 0.85 else ""
        dirs.add_row(
            d["broker"],
            d["log_dir"],
            str(d.get("partitions") or 0),
            human_bytes(d.get("bytes") or 0),
            f"[{style}]{used_pct(d)}[/{style}]" if style else used_pct(d),
            d.get("disk_source") or "",
        )
    console.print(dirs)
    if result.findings:
        console.print("[bold]Findings and the command that fixes each[/bold]")
    shown = []
    for f in result.findings:
        if not f["fix_command"] or not f["fix_command"].startswith("logdoctor "):
            # nothing to run (SEVERAL_CLUSTERS), or a command for the running cluster (TRANSACTION_HANGING's
            # kafka-transactions.sh abort): the fix, which gives that command, says what to do
            f = {**f, "fix_command": f["fix"]}
        elif not command_exists(f["fix_command"]):
            note = f"{f['fix_command']} (not a command of this logdoctor yet; meanwhile: {f['fix']})"
            f = {**f, "fix_command": note}
        shown.append(f)
    render_findings(console, shown, verbose=verbose)
    console.print(f"Tables (Parquet) and summary.txt in {result.out_dir}", markup=False, emoji=False)


def _total(result: Any, table: str) -> int:
    """Rows of a census table (a big fleet's result lists only the first rows of each)."""
    total = getattr(result, "total", None)
    return total(table) if callable(total) else len(getattr(result, table))


def command_exists(command_line: str) -> bool:
    """Whether ``logdoctor <name> ...`` names one of logdoctor's commands.

    Asked of the one list of commands (cli/registry.py), not of the app: commands register on the app
    only when their module is imported, and `census` imports none of the others."""
    from logdoctor.cli.registry import COMMANDS

    words = command_line.split()
    if len(words) < 2 or words[0] != "logdoctor":
        return False
    return any(entry.name == words[1] for entry in COMMANDS)


def refuse_non_log_dirs(items: list[str]) -> None:
    """Census takes log dirs and folders holding them (and inventories, sorted out before); refuse a
    partition folder, any other file or folder."""
    from logdoctor.logdir.recognize import PathKind, recognize

    for item in items:
        r = recognize(item)
        if r.kind is PathKind.MISSING:
            fail(f"error: {r.refusal()}", EX_NOINPUT)
        if r.kind in (PathKind.PARTITION_DIR, PathKind.FILE, PathKind.OTHER_DIR):
            usage_error(r.refusal())


def _is_inventory(item: str) -> bool:
    """An inventory file, or a folder of them (and no log dir): census inputs like log dirs."""
    import os

    from logdoctor.spark.census_inputs import INVENTORY_SUFFIXES

    if os.path.isfile(item):
        return item.endswith(INVENTORY_SUFFIXES)
    return os.path.isdir(item) and any(n.endswith(INVENTORY_SUFFIXES) for n in os.listdir(item))


def exit_code(result: Any) -> int:
    c = result.counts()
    return EX_DATA if c["error"] else EX_WARNINGS if c["warning"] else EX_OK


def run_census_cli(
    paths: list[str],
    out: Path,
    master: str | None,
    json_out: bool,
    console: Console,
    err: Console,
    *,
    html_out: Path | None = None,
    now_ms: int | None = None,
    verbose: bool = False,
    config_inputs: Any = None,
    conf: list[str] | None = None,
    remote: str | None = None,
    remote_storage: str | None = None,
    remote_inventory: str | None = None,
) -> Any:
    from logdoctor.cli.spark_options import parse_conf, start_spark
    from logdoctor.logdir.slices import PlanningError
    from logdoctor.spark.census import CensusError, run_census, scan_ahead, small_inputs
    from logdoctor.spark.session import is_local_master, under_spark_submit

    try:
        confs = parse_conf(conf)
    except ValueError as exc:
        usage_error(str(exc))
    if remote is not None:  # run_census schedules its scans with the RDD API (sparkContext)
        usage_error(
            "census needs a SparkContext (it schedules one scan task per broker), which Spark Connect "
            "does not offer; use --master URL or spark-submit"
        )
    try:
        from logdoctor.spark.census_inputs import classify, is_uri

        # the inputs classified once, here, and passed down to the census job (the refusals of a local
        # path that is no log dir nor holds one come first, as for every command)
        classified = classify(
            paths,
            check=lambda items: refuse_non_log_dirs(
                [i for i in items if not is_uri(i) and not _is_inventory(i)]
            ),
        )
        for note in classified.left_out:
            print(f"note: {note}", file=sys.stderr)
        brokers = classified.brokers()
    except (CensusError, PlanningError) as exc:
        usage_error(str(exc))
    items = [i for i in classified.items if not is_uri(i)]
    inputs = [*items, *(ld for b in brokers for ld in b.log_dirs), *classified.inventories]
    refuse_overlapping_outputs([out, html_out], inputs)
    # a small census (a local JVM this process starts, few brokers' log dirs or inventories) scans its log
    # dirs on the driver: started now, in a thread, while Spark starts; and its JVM is a short job's (C1 JIT)
    small = (
        remote_storage is None
        and remote_inventory is None
        and not under_spark_submit()
        and is_local_master(master)
        and small_inputs(classified)
    )
    if now_ms is None:
        now_ms = int(time.time() * 1000)  # the scans' and the census's moment
    with spark_interruptible(f"logdoctor census was stopped; its output {out} is incomplete"):
        scans = scan_ahead(classified, now_ms, config_inputs=config_inputs) if small else None
        spark = start_spark(err, master, "logdoctor census", conf=confs, remote=remote, short_job=small)
        with spark_progress(err, "census", "brokers", disable=json_out) as progress:
            result = run_census(
                spark,
                classified,
                out,
                now_ms=now_ms,
                progress=progress,
                config_inputs=config_inputs,
                remote_storage=remote_storage,
                remote_inventory=remote_inventory,
                driver_scans=scans,
            )
    if html_out is not None:
        from logdoctor.report import write_census_report

        write_census_report(result, html_out, now_ms=result.now_ms, config_inputs=config_inputs)
    if json_out:
        print_json(result.to_json(), indent=2, default=str)
    else:
        render_census(console, result, verbose=verbose)
        if html_out is not None:
            console.print(f"HTML report: {html_out}", markup=False, emoji=False)
    return result


@app.command("census")
def census_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Broker folders (each holding log dirs), log dirs, inventories (of `logdoctor inventory`: "
            "files, folders of them, URIs), or globs."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", metavar="DIR", help="Folder for the Parquet tables and summary.")
    ],
    master: Annotated[
        str | None, typer.Option("--master", metavar="URL", help="Spark master (default local[*]).")
    ] = None,
    conf: ConfOption = None,
    remote: RemoteOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the census as JSON.")] = False,
    html_out: HtmlOption = None,
    now: NowOption = None,
    verbose: VerboseOption = False,
    topic_config: TopicConfigOption = None,
    server_properties: ServerPropertiesOption = None,
    remote_storage: Annotated[
        str | None,
        typer.Option(
            "--remote-storage",
            metavar="DIR|URI",
            help="Audit the tiered topics' remote store (listed once, recursively, never read) against the "
            "__remote_log_metadata partitions of the log dirs.",
        ),
    ] = None,
    remote_inventory: Annotated[
        str | None,
        typer.Option(
            "--remote-inventory",
            metavar="MANIFEST",
            help="Audit the remote store from an S3 Inventory report (its manifest.json): one Spark task per "
            "data file.",
        ),
    ] = None,
) -> None:
    """Fleet census: replica offsets and lag across brokers, disk use per log dir, findings and fixes."""
    result = run_census_cli(
        paths,
        out,
        master,
        json_out,
        text_console(),
        text_console(stderr=True),
        html_out=html_out,
        now_ms=parse_now(now),
        verbose=verbose,
        config_inputs=read_config_inputs(topic_config, server_properties),
        conf=conf,
        remote=remote,
        remote_storage=remote_storage,
        remote_inventory=remote_inventory,
    )
    raise typer.Exit(exit_code(result))

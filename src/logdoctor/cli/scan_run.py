"""What `logdoctor scan` does with its options, without the CLI framework: :func:`run_scan` (the options
to the exit code: the scan, then its JSON or its report). A call of log dirs and on/off flags only
(``logdoctor scan --deep --json LOGDIR...``) runs it without typer from :mod:`logdoctor.cli.scan_fast`
(:mod:`logdoctor.cli.fast`), which starts a deep scan's early walks before it imports this module; the
typer command (:mod:`logdoctor.cli.scan`) parses every other call and runs the same :func:`run_scan`.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING

from logdoctor.checks.access import BrokerUser
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.disk_space import NEARLY_FULL_ERROR, NEARLY_FULL_WARN
from logdoctor.checks.findings import Severity
from logdoctor.checks.gc_pause import no_automatic_collections
from logdoctor.checks.scanner import ScanReport, ScanUsageError, scan
from logdoctor.cli.error_lines import tool_failure, usage_error
from logdoctor.cli.input_checks import (
    EMPTY_DIR_REFUSAL,
    leave_out_own,
    read_config_inputs,
    refuse_overlapping_outputs,
    require_log_dirs,
)
from logdoctor.cli.jsonout import print_json_rows
from logdoctor.cli.progress import progress_bar
from logdoctor.cli.timeparse import parse_now
from logdoctor.logdir.disk import DiskUsage, human_bytes
from logdoctor.logdir.recognize import PathKind, recognize

if TYPE_CHECKING:  # rich (25 ms) is imported to print a report: `scan --json` never needs it
    from rich.console import Console
    from rich.text import Text

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "dim"}

__all__ = ["render_report", "render_tiered", "run_scan"]


def run_scan(
    log_dirs: list[Path],
    *,
    quick: bool = False,
    deep: bool = False,
    json_out: bool = False,
    jobs: int | None = None,
    broker_user: str | None = None,
    now: str | None = None,
    retention_ms: int | None = None,
    topic_config: list[str] | None = None,
    server_properties: Path | None = None,
    verbose: bool = False,
    html_out: Path | None = None,
    remote_storage: str | None = None,
    remote_inventory: str | None = None,
) -> int:
    """`logdoctor scan` with these options: the exit code (usage errors and tool failures exit through
    :mod:`logdoctor.cli.error_lines`)."""
    if quick and deep:
        usage_error("--quick and --deep exclude each other")
    depth = Depth.QUICK if quick else Depth.DEEP if deep else Depth.DEFAULT
    try:
        user = BrokerUser.named(broker_user) if broker_user else None
    except KeyError:
        usage_error(f"no such user {broker_user!r}")
    inputs = read_config_inputs(topic_config, server_properties, retention_ms)
    options = ScanOptions(
        depth=depth,
        now_ms=parse_now(now),
        broker_user=user,
        config_inputs=inputs,
        remote_storage=remote_storage,
        remote_inventory=remote_inventory,
    )
    log_dirs = leave_out_own(log_dirs)
    # an empty folder among other dirs is scanned, to be refused after unless it is a lost controller's
    # (CONTROLLER_METADATA_LOST: its disk replaced, while scanned brokers hold the metadata log)
    empty = [p for p in log_dirs if len(log_dirs) > 1 and recognize(p).kind is PathKind.EMPTY_DIR]
    require_log_dirs([p for p in log_dirs if p not in empty], refuse_empty=True)
    refuse_overlapping_outputs([html_out], log_dirs)
    # The scan and its output are the run's work, then it ends: they run without automatic collections
    # (checks.gc_pause), and what the scan keeps is frozen once it is done, as main() freezes it at exit.
    # The scan collects its young generations itself only where partitions left cycles (checks.scanner);
    # turned back on after it, the collector walked every object of the scan for no garbage: a young
    # collection of all of them, or the full collection the scan's own had counted towards (0.3-0.7 s of a
    # text `scan --quick` of 50,000 partitions; issue 49 goal 4, BENCHMARKS.md "Scan").
    with no_automatic_collections():
        try:
            with progress_bar(not json_out, "scanning partitions") as progress:
                report = scan(log_dirs, options, jobs=jobs, progress=progress)
        except ScanUsageError as e:
            usage_error(str(e))
        except Exception as e:  # a bug or an environment failure, never a finding
            tool_failure("scan", e)
        gc.freeze()
    lost = {os.path.abspath(f.path) for f in report.findings if f.code == "CONTROLLER_METADATA_LOST"}
    for p in empty:
        if os.path.abspath(p) not in lost:
            usage_error(EMPTY_DIR_REFUSAL.format(path=os.fspath(p)))
    if html_out is not None:
        from logdoctor.report import write_scan_report

        write_scan_report(report, html_out, config_inputs=inputs)
    with no_automatic_collections():  # a dict per partition and its line, or the report's modules and table
        if json_out:
            print_json_rows(report.to_json(), shared_last="topic_config")  # one per topic
        else:
            from logdoctor.cli.output import text_console

            render_report(text_console(), report, verbose=verbose)
            if html_out is not None:
                text_console(stderr=True).print(f"HTML report: {html_out}")
        gc.freeze()
    return report.exit_code


def render_report(console: Console, report: ScanReport, *, verbose: bool = False) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"logdoctor scan ({report.depth.name.lower()})", show_lines=False)
    columns = ("log dir", "mode", "cluster.id", "node", "partitions", "clean shutdown", "locked", "disk used")
    for col in columns:
        table.add_column(col, no_wrap=col == "disk used")
    for d in report.log_dirs:
        table.add_row(
            d.path,
            d.mode or "?",
            d.cluster_id or "-",
            str(d.node_id if d.node_id is not None else "-"),
            str(d.partitions),
            "yes" if d.clean_shutdown else "no",
            "YES" if d.locked else "no",
            _disk_cell(d.disk),
        )
    console.print(table)
    segs = sum(p.segments for p in report.partitions)
    size = sum(p.bytes for p in report.partitions)
    console.print(
        f"{len(report.partitions)} partitions, {segs} segments, {human_bytes(size)} of log; read "
        f"{human_bytes(report.bytes_read)} in {report.elapsed_s:.2f} s"
    )
    compacted = [p for p in report.partitions if p.cleaner is not None]
    if compacted:  # where the log cleaner stands (checks.compaction; --json: each partition's "cleaner")
        due = [p for p in compacted if p.cleaner["cleanable_now"]]
        worst = max(compacted, key=lambda p: p.cleaner["cleanable_ratio"])
        w = worst.cleaner
        console.print(
            f"log cleaner: {len(compacted)} compacted partition(s), {len(due)} cleanable now; dirtiest "
            f"{worst.topic}-{worst.partition} (cleanable ratio {w['cleanable_ratio']:.2f} against "
            f"min.cleanable.dirty.ratio {w['min_cleanable_dirty_ratio']}, "
            f"{human_bytes(w['cleanable_bytes'])} uncompacted from offset {w['first_dirty_offset']}); "
            "--json: each one's cleaner state",
            soft_wrap=True,
            markup=False,
        )
    render_tiered(console, report, verbose=verbose)
    if report.findings:
        console.print()
        from logdoctor.cli.render import render_findings  # findings_output's, without its typer option

        render_findings(console, report.findings, verbose=verbose)
    c = report.counts()
    console.print()
    verdict = Text()
    verdict.append(f"{c['errors']} error(s)", style=_STYLE[Severity.ERROR] if c["errors"] else "green")
    verdict.append(
        f", {c['warnings']} warning(s)", style=_STYLE[Severity.WARNING] if c["warnings"] else "green"
    )
    verdict.append(f", {c['info']} note(s)")
    if c["consequences"]:
        verdict.append(f" (and {c['consequences']} consequence(s) of them, listed under their causes)")
    console.print(verdict)


def render_tiered(console: Console, report: ScanReport, *, verbose: bool = False) -> None:
    """The partitions whose log start offset is not their local log start offset (tiered ones: the
    offsets between are in the remote tier), each with the evidence that it is tiered."""
    from rich.table import Table
    from rich.text import Text

    from logdoctor.cli.render import EXAMPLES

    rows = [
        p
        for p in report.partitions
        if p.remote_log_enabled
        or (p.log_start_offset is not None and p.log_start_offset != p.local_log_start_offset)
    ]
    if not rows:
        return
    console.print()
    table = Table(
        *("partition", "log dir", "log start", "local log start", "log end", "tiered because"),
        title="tiered partitions (remote storage on): log start offset and local log start offset",
    )
    shown = rows if verbose or len(rows) <= EXAMPLES + 1 else rows[:EXAMPLES]
    for p in shown:
        table.add_row(
            f"{p.topic}-{p.partition}",
            p.log_dir,
            str(p.log_start_offset),
            str(p.local_log_start_offset),
            str(p.log_end_offset),
            p.tiering_evidence,
        )
    console.print(table)
    if len(shown) < len(rows):
        console.print(Text(f"... and {len(rows) - len(shown)} more (--verbose lists every one)", style="dim"))


def _disk_cell(disk: DiskUsage | None) -> Text:
    """df's Use% and the size of the log dir's file system ("97% of 8.0 MiB"), red from the warning on."""
    from rich.text import Text

    if disk is None or disk.used_percent is None or disk.total_bytes is None:
        return Text("?")
    size = float(disk.total_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            break
        size /= 1024
    frac = disk.used_fraction or 0.0
    style = "bold red" if frac >= NEARLY_FULL_ERROR else "yellow" if frac >= NEARLY_FULL_WARN else ""
    return Text(f"{disk.used_percent}% of {size:.1f} {unit}", style=style)

"""`logdoctor retention LOGDIR...`: which segments Kafka's retention would delete at --now, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from logdoctor.checks.retention import retention
from logdoctor.checks.retention_round import REMOTE_RETENTION, WAITS_FOR_UPLOAD, RetentionReport
from logdoctor.checks.scanner import ScanUsageError
from logdoctor.checks.state.time_words import iso
from logdoctor.cli.app import app
from logdoctor.cli.error_lines import tool_failure, usage_error
from logdoctor.cli.findings_output import VerboseOption, render_findings
from logdoctor.cli.input_checks import leave_out_own, require_log_dirs
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.output import text_console
from logdoctor.cli.progress import progress_bar
from logdoctor.cli.timeparse import parse_now
from logdoctor.cli.topic_options import ServerPropertiesOption, TopicConfigOption, read_config_inputs
from logdoctor.logdir.disk import human_bytes


def render(console: Console, report: RetentionReport, show_all: bool, verbose: bool = False) -> None:
    console.print(f"retention at {iso(report.now_ms)} ({report.now_ms})")
    for p in report.partitions:
        if not p.deleted and not p.waiting and not show_all:
            continue
        if p.tiered:
            cfg = p.topic_config
            local = "; ".join(
                f"{name}={s.describe()}"
                for name, s in (
                    ("local.retention.ms", cfg.local_retention_ms),
                    ("local.retention.bytes", cfg.local_retention_bytes),
                )
                if s is not None
            )
            if p.config.delays_upload:
                local += f"; delayed upload: {p.config.copy_lag_source}"
            title = (
                f"{p.topic}-{p.partition} ({p.log_dir}): TIERED ({p.tiered_evidence}); {local}; log start "
                f"{p.log_start_offset} (kept: local deletions do not move it), local log start "
                f"{p.local_log_start_offset} -> {p.new_local_log_start_offset}, end {p.log_end_offset}, high "
                f"watermark {p.high_watermark} ({p.high_watermark_source}); upload state: {p.upload_state}; "
                f"{cfg.describe()}: {REMOTE_RETENTION}; rules: {p.release_rule}"
            )
        else:
            title = (
                f"{p.topic}-{p.partition} ({p.log_dir}): {p.topic_config.describe()}; log start "
                f"{p.log_start_offset} -> {p.new_log_start_offset}, end {p.log_end_offset}, high watermark "
                f"{p.high_watermark} ({p.high_watermark_source})"
            )
        console.print(Text(title, style="italic"), soft_wrap=True)  # one line, however long
        table = Table("segment", "bytes", "broker largest ts", "true largest ts", "verdict")
        for s in p.segments:
            verdict = s.reason or "kept"
            style = None
            if s.at_risk:
                verdict = f"DELETED EARLY ({s.reason}; kept with true timestamps)"
                style = "bold red"
            elif s.reason:
                style = "yellow"
            elif s.risk_at is not None:
                verdict = f"kept; DELETED EARLY at {iso(s.risk_at)} (RETENTION_RISK)"
                style = "red"
            elif s.upload_held_by:
                verdict = f"kept: not in remote storage: {s.upload_held_by}"
                style = "cyan"
            elif s.kept_because:
                verdict = f"kept: {s.kept_because}"
                style = "magenta" if s.future_timestamp else None
            elif s.waits_for_upload and p.upload_known:
                verdict = (
                    f"kept: not in remote storage yet (highest uploaded offset {p.highest_remote_offset}); "
                    f"{s.waits_for_upload} once uploaded"
                )
                style = "cyan"
            elif s.waits_for_upload:
                verdict = f"kept: {WAITS_FOR_UPLOAD} ({s.waits_for_upload} once uploaded)"
                style = "cyan"
            table.add_row(
                f"{s.base_offset:020d}{' (active)' if s.active else ''}",
                f"{s.size:,}",
                f"{iso(s.broker_largest_timestamp)} [{s.broker_timestamp_source}]",
                iso(s.true_largest_timestamp),
                verdict,
                style=style,
            )
        console.print(table)
    j = report.to_json()["summary"]
    console.print(
        f"{j['deleted_segments']} segment(s), {human_bytes(j['deleted_bytes'])} would be deleted; "
        f"{j['retention_risk_segments']} only because of a wrong largest timestamp (RETENTION_RISK)"
    )
    future = sum(1 for p in report.partitions for s in p.segments if s.future_timestamp and s.kept_because)
    if future:
        console.print(
            f"{future} segment(s) have a largest timestamp in the future: time retention keeps them and "
            "every segment after them (Kafka 4.3.1 and 4.4.0 alike, tiered or not)"
        )
    held = sum(1 for p in report.partitions for s in p.segments if s.upload_held_by)
    if held:
        console.print(
            f"{held} segment(s) of tiered partitions are held local only by delayed upload "
            "(remote.copy.lag.*, Kafka 4.4)"
        )
    unknown = sum(len(p.waiting) for p in report.partitions if not p.upload_known)
    known = sum(len(p.waiting) for p in report.partitions if p.upload_known)
    if known:
        console.print(
            f"{known} segment(s) of tiered partitions are not in remote storage yet (the remote log "
            "metadata says so) and would be deleted locally once uploaded"
        )
    if unknown:
        console.print(
            f"{unknown} segment(s) of tiered partitions would be deleted locally once uploaded "
            f"({WAITS_FOR_UPLOAD}: the upload state is in the remote log metadata, not among the inputs)"
        )
    for g in report.consumer_groups:
        console.print(
            f"consumer group {g['group']}: its committed offset {g['committed_offset']} of {g['topic']}-"
            f"{g['partition']} would be below the new log start {g['log_start_offset']}: with "
            f"auto.offset.reset=earliest it skips {g['earliest_skips']} offsets, with latest "
            f"{g['latest_skips']}",
            soft_wrap=True,
        )
    if report.findings:
        console.print()
        render_findings(console, report.findings, verbose=verbose)


@app.command("retention")
def retention_command(
    log_dirs: Annotated[
        list[Path], typer.Argument(metavar="LOGDIR", readable=False, help="Log dirs of one broker.")
    ],
    retention_ms: Annotated[
        int | None,
        typer.Option(
            "--retention-ms",
            help="log.retention.ms for every topic without its own retention.ms, -1: no time limit "
            "(default: from --server-properties, the KRaft metadata log, else Kafka's 7 days).",
        ),
    ] = None,
    retention_bytes: Annotated[
        int | None,
        typer.Option(
            "--retention-bytes",
            help="log.retention.bytes per partition for every topic without its own, -1: no size limit.",
        ),
    ] = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now", metavar="TIME", help="When retention runs: epoch ms or ISO-8601 (default: now)."
        ),
    ] = None,
    topic_config: TopicConfigOption = None,
    server_properties: ServerPropertiesOption = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list partitions that keep every segment.")
    ] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes.")] = None,
    verbose: VerboseOption = False,
) -> None:
    """Simulate Kafka's retention (log start offset, size, time) like UnifiedLog.deleteOldSegments."""
    inputs = read_config_inputs(topic_config, server_properties, retention_ms, retention_bytes)
    now_ms = parse_now(now)
    log_dirs = leave_out_own(log_dirs)
    require_log_dirs(log_dirs)
    try:
        with progress_bar(not json_out, "reading segments") as progress:
            report = retention(log_dirs, now_ms=now_ms, config_inputs=inputs, jobs=jobs, progress=progress)
    except ScanUsageError as e:
        usage_error(str(e))
    except Exception as e:
        tool_failure("retention", e)
    if json_out:
        print_json(report.to_json())
    else:
        render(text_console(), report, show_all, verbose)
    raise typer.Exit(report.exit_code)

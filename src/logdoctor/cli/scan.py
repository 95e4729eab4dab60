"""`logdoctor scan LOGDIR...`: find every known failure of a log dir before the broker does.

Exit codes: 0 clean (info only), 1 warnings only, 2 errors, 64 usage (or a path that is not a log
dir), 66 a missing log dir, 70 tool failure, 73 --html at or inside a log dir.

The options' work is :func:`logdoctor.cli.scan_run.run_scan` (typer-free: a call of log dirs and flags
only runs it without this module, :func:`logdoctor.cli.scan_fast.run_fast`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logdoctor.cli.app import app
from logdoctor.cli.findings_output import HtmlOption, VerboseOption
from logdoctor.cli.read_options import KeepCacheOption, MaxReadRateOption, apply_read_discipline
from logdoctor.cli.scan_run import run_scan
from logdoctor.cli.topic_options import NowOption, ServerPropertiesOption, TopicConfigOption

__all__ = ["scan_command"]


@app.command("scan")
def scan_command(
    log_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="LOGDIR",
            readable=False,
            help="Log dirs of one broker (entries of log.dirs), or of several brokers of one cluster: "
            "several brokers' dirs scanned together are how diverged replicas are found (REPLICA_DIVERGED, "
            "with who loses which records), not an error.",
        ),
    ],
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="Only what KIP-263 checks at startup: names, sizes, "
            "checkpoints, index headers and each partition's active segment.",
        ),
    ] = False,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also every batch CRC of every segment, indexes against the log, offsets across segments.",
        ),
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: log_dirs, partitions, findings.")
    ] = False,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores).")
    ] = None,
    broker_user: Annotated[
        str | None,
        typer.Option(
            "--broker-user",
            metavar="USER",
            help="The user the broker runs as, for permission checks (default: each log dir's owner).",
        ),
    ] = None,
    now: NowOption = None,
    retention_ms: Annotated[
        int | None,
        typer.Option(
            "--retention-ms",
            help="log.retention.ms for every topic without its own retention.ms (default: from "
            "--server-properties, the KRaft metadata log, else Kafka's 7 days).",
        ),
    ] = None,
    topic_config: TopicConfigOption = None,
    server_properties: ServerPropertiesOption = None,
    verbose: VerboseOption = False,
    html_out: HtmlOption = None,
    remote_storage: Annotated[
        str | None,
        typer.Option(
            "--remote-storage",
            metavar="DIR|URI",
            help="The tiered topics' remote store (a folder, or a URI such as s3://bucket/prefix), listed "
            "(never read) and audited against __remote_log_metadata and the log dirs: leaked objects, "
            "missing segments, overlaps, leader-epoch breaks; unfinished uploads list their objects.",
        ),
    ] = None,
    remote_inventory: Annotated[
        str | None,
        typer.Option(
            "--remote-inventory",
            metavar="MANIFEST",
            help="Audit the store from an S3 Inventory report instead of listing it: its manifest.json "
            "(a path or s3:// URI; its CSV, Parquet or ORC data files are read where it names them).",
        ),
    ] = None,
    keep_cache: KeepCacheOption = False,
    max_read_rate: MaxReadRateOption = None,
) -> None:
    """Check log dirs offline for every failure the broker would hit at startup or later.

    Give several brokers' log dirs together to compare their replicas: that is how divergence is found.
    """
    apply_read_discipline(keep_cache, max_read_rate)
    raise typer.Exit(
        run_scan(
            log_dirs,
            quick=quick,
            deep=deep,
            json_out=json_out,
            jobs=jobs,
            broker_user=broker_user,
            now=now,
            retention_ms=retention_ms,
            topic_config=topic_config,
            server_properties=server_properties,
            verbose=verbose,
            html_out=html_out,
            remote_storage=remote_storage,
            remote_inventory=remote_inventory,
        )
    )

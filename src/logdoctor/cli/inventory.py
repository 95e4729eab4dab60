"""`logdoctor inventory LOGDIR... --out FILE_OR_URI`: one broker's inventory for the fleet census.

Runs on the broker's host, read only and safe next to a running broker (the ``.lock`` is only probed,
never taken; nothing is opened for writing inside a log dir). Writes one Parquet file (JSON Lines with
``--json``) to a local path or a URI (``s3://bucket/inventories/broker-1.parquet``); ``logdoctor census``
reads such files from every broker together. Format: docs/inventory.md.

Exit codes: 0 written, 64 usage (a path that is not a log dir), 66 a missing log dir, 70 tool failure,
73 --out at, inside or above a log dir, or a folder, or an existing file that is not an inventory, or
another broker's inventory (an inventory is replaced only by the same broker's: cluster id and node
id), 77 a log dir this user cannot list.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from logdoctor.checks.context import Depth
from logdoctor.cli.app import app
from logdoctor.cli.error_lines import fail, os_error, tool_failure, usage_error
from logdoctor.cli.exit_codes import EX_CANTCREAT, EX_OK
from logdoctor.cli.input_checks import leave_out_own, refuse_overlapping_outputs, require_log_dirs
from logdoctor.cli.output import text_console
from logdoctor.cli.read_options import KeepCacheOption, MaxReadRateOption, apply_read_discipline
from logdoctor.cli.timeparse import parse_now
from logdoctor.cli.topic_options import (
    NowOption,
    ServerPropertiesOption,
    TopicConfigOption,
    read_config_inputs,
)
from logdoctor.logdir.words import counted

_DEPTHS = {d.name.lower(): d for d in Depth}


@app.command("inventory")
def inventory_command(
    log_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="LOGDIR", readable=False, help="Log dirs of one broker (entries of log.dirs)."
        ),
    ],
    out: Annotated[
        str,
        typer.Option(
            "--out", "-o", metavar="FILE_OR_URI", help="Where to write the inventory (local path or URI)."
        ),
    ],
    depth: Annotated[
        str,
        typer.Option("--depth", metavar="quick|default|deep", help="Scan depth of the findings it records."),
    ] = "default",
    json_out: Annotated[bool, typer.Option("--json", help="Write JSON Lines instead of Parquet.")] = False,
    jobs: Annotated[
        int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores).")
    ] = None,
    now: NowOption = None,
    topic_config: TopicConfigOption = None,
    server_properties: ServerPropertiesOption = None,
    keep_cache: KeepCacheOption = False,
    max_read_rate: MaxReadRateOption = None,
) -> None:
    """Collect one broker's inventory (offsets, disks, findings) for the fleet census; read only."""
    apply_read_discipline(keep_cache, max_read_rate)
    from logdoctor.checks.inventory import (
        InventoryOutputError,
        broker_identity,
        build_inventory,
        check_inventory_output,
        write_inventory,
    )

    if depth not in _DEPTHS:
        usage_error(f"--depth must be one of {', '.join(_DEPTHS)}, not {depth!r}")
    log_dirs = leave_out_own(log_dirs)
    require_log_dirs(log_dirs)
    refuse_overlapping_outputs([out], log_dirs)
    owner = broker_identity([str(p) for p in log_dirs])
    try:  # before the scan: a folder, a file that is not an inventory, another broker's: refused
        check_inventory_output(out, owner)
    except InventoryOutputError as e:
        fail(f"refused (nothing written): {e}", EX_CANTCREAT)
    inputs = read_config_inputs(topic_config, server_properties)
    try:
        inv = build_inventory(
            [str(p) for p in log_dirs], _DEPTHS[depth], now_ms=parse_now(now), jobs=jobs, config_inputs=inputs
        )
        written = write_inventory(inv, out, json_lines=json_out, owner=owner)
    except InventoryOutputError as e:
        fail(f"refused (nothing written): {e}", EX_CANTCREAT)
    except OSError as e:  # writing --out: a read-only file system, no space, permission
        said = os_error(e)
        if said is None:
            tool_failure("inventory", e)
        fail(f"error: inventory not written to {out}: {os.strerror(e.errno or 0)}", said[1])
    except Exception as e:  # a bug or an environment failure (the data's problems are findings)
        tool_failure("inventory", e)
    running = (
        "running (its .lock is held; nothing was locked or written)" if inv.broker_running else "stopped"
    )
    text_console(stderr=True).print(
        f"inventory of {inv.broker}: {counted(inv.count('log_dir'), 'log dir')}, "
        f"{counted(inv.count('replica'), 'replica')}, {counted(inv.count('finding'), 'finding')} ({depth}); "
        f"broker {running}; {inv.elapsed_s:.2f} s -> {written}"
    )
    raise typer.Exit(EX_OK)

"""`logdoctor demo [DIR]`: generate a sample fleet with planted faults, collect an inventory of each broker
(DIR/inventories) and run the census over them, as a real fleet would be checked."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from logdoctor.cli.app import app
from logdoctor.cli.error_lines import fail
from logdoctor.cli.exit_codes import EX_CANTCREAT
from logdoctor.cli.output import text_console
from logdoctor.cli.timeparse import parse_now
from logdoctor.logdir.words import counted

if TYPE_CHECKING:
    from logdoctor.sample.fleet import DemoFleet

DEMO_MARKER = ".logdoctor-demo-fleet"  # written into DIR/fleet: the demo may replace that folder
_OLD_DEMO_DISKS = "df.json"  # what demos before the marker wrote beside each broker's log dirs


def _was_written_by_demo(fleet_dir: Path) -> bool:
    """DIR/fleet holds the marker, or (a fleet of an older demo) only broker-N folders each with df.json."""
    if (fleet_dir / DEMO_MARKER).is_file():
        return True
    entries = list(fleet_dir.iterdir())
    return all(
        e.is_dir() and re.fullmatch(r"broker-[0-9]+", e.name) and (e / _OLD_DEMO_DISKS).is_file()
        for e in entries
    )


def refuse_unsafe_demo_dir(out: Path) -> None:
    """Exit 73 (nothing written or deleted) unless DIR is a place where the demo may write and replace.

    The demo replaces DIR/fleet: never when DIR is or lies inside a log dir or partition folder, and
    never when DIR/fleet exists and was not written by the demo.
    """
    from logdoctor.logdir.recognize import PathKind, recognize

    here = out.resolve()
    for folder in (here, *here.parents):
        if not folder.is_dir():
            continue
        r = recognize(folder)
        if r.kind in (PathKind.LOG_DIR, PathKind.PARTITION_DIR):
            fail(
                f"refused: demo DIR {out} {'is' if folder == here else 'lies inside'} the Kafka "
                f"{'log dir' if r.kind is PathKind.LOG_DIR else 'partition folder'} {folder}: "
                "choose a folder outside every log dir (nothing was written or deleted)",
                EX_CANTCREAT,
            )
    fleet_dir = out / "fleet"
    if fleet_dir.exists() and not (fleet_dir.is_dir() and _was_written_by_demo(fleet_dir)):
        fail(
            f"refused: {fleet_dir} exists and was not written by logdoctor demo, which would replace it: "
            "choose another DIR (nothing was written or deleted)",
            EX_CANTCREAT,
        )


def collect_inventories(
    fleet_dir: Path, folder: Path, now_ms: int, console: Console | None, simulated_disks: Any = None
) -> Path:
    """`logdoctor inventory` of every generated broker (as each broker's host would run it) into FOLDER.

    FOLDER is the demo's own: its inventory files of an earlier run are replaced, nothing else. The
    planted nearly full disk is ``simulated_disks`` (the sample fleet's; the printed `logdoctor
    inventory` commands, run by hand, read the real disk)."""
    from logdoctor.checks.context import Depth
    from logdoctor.checks.inventory import build_inventory, write_inventory

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("broker-*.parquet"):
        old.unlink()
    if console is not None:
        console.print("\n[bold]Step 1[/bold]: an inventory on each broker (read only, safe while it runs):")
    for broker in sorted(
        p for p in fleet_dir.iterdir() if p.is_dir() and re.fullmatch(r"broker-[0-9]+", p.name)
    ):
        dirs = sorted(str(d) for d in broker.iterdir() if d.is_dir())
        inv = build_inventory(dirs, Depth.DEFAULT, now_ms=now_ms, jobs=1, simulated_disks=simulated_disks)
        target = folder / f"{broker.name}.parquet"
        write_inventory(inv, str(target))
        if console is not None:
            console.print(
                f"  logdoctor inventory {' '.join(dirs)} --out {target} --now {now_ms}   "
                f"# {counted(inv.count('replica'), 'replica')}, {counted(inv.count('finding'), 'finding')}"
            )
    if console is not None:
        console.print("[bold]Step 2[/bold]: the census of every inventory together, on Spark.")
    return folder


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Argument(help="Where to write the sample fleet and the census.")] = Path(
        "out/demo"
    ),
    master: Annotated[
        str | None, typer.Option("--master", metavar="URL", help="Spark master (default local[*]).")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the census as JSON.")] = False,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            help="The time the sample data is generated for and the census runs at (epoch ms or ISO-8601; "
            "default: now). The same --now gives the same fleet.",
        ),
    ] = None,
) -> None:
    """Generate a 4-broker sample fleet with planted faults, inventory each, run the census, show fixes.

    Three ZooKeeper-era brokers and a KRaft broker with two log dirs; the census runs on local Spark."""
    from logdoctor.cli.census import run_census_cli
    from logdoctor.sample.fleet import generate_demo_fleet

    console = text_console()
    err = text_console(stderr=True)
    fleet_dir = out / "fleet"
    refuse_unsafe_demo_dir(out)
    if fleet_dir.exists():
        shutil.rmtree(fleet_dir)
    now_ms = parse_now(now)
    demo = generate_demo_fleet(fleet_dir, now_ms=now_ms)
    (fleet_dir / DEMO_MARKER).write_text("written by `logdoctor demo`, which replaces this folder\n")
    if not json_out:
        console.print(
            Text.assemble(
                ("Sample fleet", "bold"), f" written to {fleet_dir} ({_brokers_and_replicas(demo)}). Planted:"
            )
        )
        for p in demo.planted:
            console.print(f"  - {p}", markup=False, emoji=False)
    inventories = collect_inventories(
        fleet_dir, out / "inventories", demo.now_ms, console if not json_out else None, demo.simulated_disks
    )
    if not json_out:
        console.print(
            f"\nRunning: logdoctor census {out / 'inventories'} --out {out / 'census'} "
            f"--html {out / 'report.html'} --now {demo.now_ms}\n"
        )
    run_census_cli(
        [str(inventories)],
        out / "census",
        master,
        json_out,
        console,
        err,
        html_out=out / "report.html",
        now_ms=demo.now_ms,
    )
    export_demo_table(fleet_dir, out / "records", master, console if not json_out else None)
    hint = path_hint()
    if hint is not None and not json_out:
        console.print(f"\n{hint}", soft_wrap=True, markup=False)
    raise typer.Exit(0)


def path_hint() -> str | None:
    """How to put ``logdoctor`` on PATH when it is not (``make demo`` runs .venv/bin/logdoctor): every
    command the demo prints starts with ``logdoctor``, and runs as printed once it is. None: it is."""
    import sys

    here = os.path.join(os.path.dirname(sys.executable), "logdoctor")
    found = shutil.which("logdoctor")
    if found is not None and os.path.realpath(found) == os.path.realpath(here):
        return None
    venv = os.path.relpath(os.path.dirname(os.path.dirname(here))) if os.path.exists(here) else None
    if venv is None:
        return None
    return (
        f"logdoctor is in {venv}/bin, not on PATH: run `. {venv}/bin/activate` first, and every command "
        "printed above runs as printed."
    )


def export_demo_table(fleet_dir: Path, table: Path, master: str | None, console: Console | None) -> None:
    """Step 3: the fleet's records into an Iceberg table (docs/tables.md), replaced on each run,
    and how to read it with pyiceberg."""
    from logdoctor.cli.export_tables import how_to_read
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.sample.remote_tier import REMOTE_STORE_DIR
    from logdoctor.spark.session import get_spark
    from logdoctor.spark.tables.export import run_table_export

    table = Path(os.path.abspath(table))  # the printed read command works from any folder
    log_dirs = f"{fleet_dir}/broker-*/kafka-logs-*"  # a glob, as the printed command has it
    store = f"{fleet_dir}/{REMOTE_STORE_DIR}"  # the remote tier of the tiered partition (orders-2)
    if console is not None:
        console.print(
            f"\n[bold]Step 3[/bold]: the fleet's records into an Iceberg table:\n"
            f"  logdoctor export {log_dirs} --remote-storage {store} --out {table} --format iceberg "
            "--mode overwrite",
            soft_wrap=True,
        )
    spark = get_spark(master, "logdoctor demo")
    options = ReadOptions.from_options({"remoteStorage": store})
    result = run_table_export(spark, [log_dirs], str(table), fmt="iceberg", mode="overwrite", options=options)
    if console is not None:
        console.print(
            f"  {result.rows:,} records in {result.files} files, committed to the table "
            f"logdoctor.records at {table} (catalog {table}.catalog.db): a row per replica, so a "
            "record of a partition with 3 replicas is there 3 times (column log_dir tells them apart; "
            "SELECT DISTINCT topic, partition, offset, key, value for one copy); the remote tier is one "
            "copy, its rows' log_dir the store. Read it with:"
        )
        console.print(f"  {how_to_read('iceberg', str(table), None, {})}", soft_wrap=True, markup=False)


def _brokers_and_replicas(demo: DemoFleet) -> str:
    """ "3 ZooKeeper-era brokers and 1 KRaft broker, 39 replicas and its metadata log" (the census counts
    the ``__cluster_metadata-0`` folder as one more replica)."""
    fleets = [demo.fleet] if demo.kraft is None else [demo.fleet, demo.kraft]
    replicas = sum(len(f.replicas) for f in fleets)
    text = f"{len(demo.fleet.log_dirs)} ZooKeeper-era brokers"
    if demo.kraft is not None:
        text += f" and {len(demo.kraft.log_dirs)} KRaft broker"
    return f"{text}, {replicas} replicas" + (" and its metadata log" if demo.kraft is not None else "")

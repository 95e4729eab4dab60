"""`logdoctor demo [DIR]`: generate a sample fleet with planted faults and run the census on it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from logdoctor.cli.common import parse_now
from logdoctor.cli.main import app


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Argument(help="Where to write the sample fleet and the census.")] = Path(
        "out/demo"
    ),
    master: Annotated[str | None, typer.Option("--master", help="Spark master (default local[*]).")] = None,
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
    """Generate a 3-broker sample fleet with planted faults, run the census with local Spark, show fixes."""
    from logdoctor.cli.census import run_census_cli
    from logdoctor.sample.fleet import generate_demo_fleet

    console = Console()
    err = Console(stderr=True)
    fleet_dir = out / "fleet"
    if fleet_dir.exists():
        shutil.rmtree(fleet_dir)
    now_ms = parse_now(now)
    demo = generate_demo_fleet(fleet_dir, now_ms=now_ms)
    if not json_out:
        console.print(
            f"[bold]Sample fleet[/bold] written to {fleet_dir} "
            f"({len(demo.fleet.log_dirs)} brokers, {len(demo.fleet.replicas)} replicas). Planted:"
        )
        for p in demo.planted:
            console.print(f"  - {p}")
        console.print(
            f"Running: logdoctor census {fleet_dir} --out {out / 'census'} --html {out / 'report.html'} "
            f"--now {demo.now_ms}\n"
        )
    run_census_cli(
        [str(fleet_dir)],
        out / "census",
        master,
        json_out,
        console,
        err,
        html_out=out / "report.html",
        now_ms=demo.now_ms,
    )
    raise typer.Exit(0)

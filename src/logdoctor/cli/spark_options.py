"""The Spark session options of the commands that start Spark (export, census, demo)."""

from __future__ import annotations

from typing import Annotated

import typer

# --- Spark session options --------------------------------------------------------------------

ConfOption = Annotated[
    list[str] | None,
    typer.Option(
        "--conf",
        metavar="KEY=VALUE",
        help="A Spark conf (repeatable), e.g. spark.jars.packages=..., spark.executor.memory=4g.",
    ),
]
RemoteOption = Annotated[
    str | None,
    typer.Option("--remote", metavar="sc://HOST:PORT", help="Spark Connect server (docs/cluster.md)."),
]


__all__ = [
    "ConfOption",
    "RemoteOption",
]

"""The Spark session options of the commands that start Spark (export, census, demo), and `--conf`'s parse."""

from __future__ import annotations

from collections.abc import Sequence
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
    "parse_conf",
]


def parse_conf(pairs: Sequence[str] | None, option: str = "--conf", what: str = "") -> dict[str, str]:
    """``["k=v", ...]`` (the values of a repeated ``option``) as a dict; ValueError on a pair without =."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} expects key=value{what}, got {pair!r}")
        out[key.strip()] = value
    return out

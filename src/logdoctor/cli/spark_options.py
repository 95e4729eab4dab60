"""The Spark session options of the commands that start Spark (export, census, demo), `--conf`'s parse, and
the start of their Spark session."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Annotated, Any

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
    "start_spark",
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


def start_spark(err: Any, master: str | None, app_name: str, **options: Any) -> Any:
    """The command's Spark session (:func:`logdoctor.spark.session.get_spark`), with "starting Spark…" on
    ``err`` while it starts (None: said nowhere, ``--json``); a Spark that cannot start exits 69."""
    from logdoctor.cli.error_lines import fail
    from logdoctor.cli.exit_codes import EX_UNAVAILABLE
    from logdoctor.spark.session import SparkUnavailableError, get_spark

    try:
        with err.status("starting Spark…") if err is not None else contextlib.nullcontext():
            return get_spark(master, app_name, **options)
    except SparkUnavailableError as exc:
        fail(f"error: {exc}", EX_UNAVAILABLE)

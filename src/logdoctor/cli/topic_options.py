"""Topic-config options of `scan`, `retention`, `repair`, `census` (resolved by checks.topic_config; read by
:func:`logdoctor.cli.input_checks.read_config_inputs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logdoctor.cli.input_checks import read_config_inputs  # the options' values read (typer-free)

TopicConfigOption = Annotated[
    list[str] | None,
    typer.Option(
        "--topic-config",
        metavar="TOPIC:KEY=VALUE",
        help="A topic's retention.ms, retention.bytes, cleanup.policy, remote.storage.enable, "
        "local.retention.ms, local.retention.bytes, min.cleanable.dirty.ratio, min.compaction.lag.ms or "
        "max.compaction.lag.ms (repeatable); wins over the topic configs found in the KRaft metadata log.",
    ),
]
NowOption = Annotated[
    str | None,
    typer.Option("--now", metavar="TIME", help="Current time (epoch ms or ISO-8601) for timestamp checks."),
]
ServerPropertiesOption = Annotated[
    Path | None,
    typer.Option(
        "--server-properties",
        metavar="FILE",
        help="The broker's server.properties: log.retention.ms/.minutes/.hours, log.retention.bytes, "
        "log.cleanup.policy, log.local.retention.ms/.bytes as broker defaults, and "
        "remote.log.storage.system.enable.",
    ),
]


__all__ = ["NowOption", "ServerPropertiesOption", "TopicConfigOption", "read_config_inputs"]

"""Topic-config options of `scan`, `retention`, `repair`, `census` (resolved by checks.topic_config)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from logdoctor.checks.topic_config import ConfigInputs, config_inputs
from logdoctor.cli.error_lines import fail, usage_error
from logdoctor.cli.exit_codes import EX_IOERR, EX_NOINPUT, EX_NOPERM

TopicConfigOption = Annotated[
    list[str] | None,
    typer.Option(
        "--topic-config",
        metavar="TOPIC:KEY=VALUE",
        help="A topic's retention.ms, retention.bytes, cleanup.policy, remote.storage.enable, "
        "local.retention.ms or local.retention.bytes (repeatable); wins over the topic configs found in "
        "the KRaft metadata log.",
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


def read_config_inputs(
    topic_config: list[str] | None,
    server_properties: Path | None,
    retention_ms: int | None = None,
    retention_bytes: int | None = None,
) -> ConfigInputs:
    """ConfigInputs from the options, or one error line naming the bad option or file: a bad value 64
    (usage), a missing --server-properties file 66 (no input), an unreadable one 77, an I/O error 74."""
    try:
        return config_inputs(
            topic_config=topic_config or [],
            server_properties=server_properties,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
        )
    except OSError as e:  # the file named: missing or a folder 66, unreadable 77, else an I/O error 74
        code = (
            EX_NOINPUT
            if isinstance(e, FileNotFoundError | IsADirectoryError | NotADirectoryError)
            else EX_NOPERM
            if isinstance(e, PermissionError)
            else EX_IOERR
        )
        fail(f"error: --server-properties {server_properties}: {e.strerror or e}", code)
    except ValueError as e:
        where = (
            f"{server_properties}: "
            if server_properties is not None and "--topic-config" not in str(e)
            else ""
        )
        usage_error(f"{where}{e}")

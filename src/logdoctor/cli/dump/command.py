"""The ``logdoctor dump`` command: its options, turned into :class:`~logdoctor.cli.dump.DumpOptions`
for :func:`logdoctor.cli.dump.run` (a call of files and flags only takes :mod:`logdoctor.cli.dump.fast`
instead, without importing this module or typer)."""

from __future__ import annotations

from typing import Annotated

import typer

from logdoctor.cli.app import app
from logdoctor.cli.dump import run
from logdoctor.cli.dump.options import DecoderChoice, UsageProblem, dump_options
from logdoctor.cli.error_lines import fail
from logdoctor.cli.exit_codes import EX_USAGE
from logdoctor.cli.read_options import KeepCacheOption, MaxReadRateOption, apply_read_discipline
from logdoctor.cli.remote_options import (
    RemoteLayoutOption,
    RemotePrivateKeyOption,
    remote_options,
    require_remote_inputs,
)

__all__ = ["dump"]


@app.command("dump")
def dump(
    files: Annotated[
        list[str],  # kept as given: with --remote-storage they may be URIs (a Path folds s3:// to s3:/)
        typer.Argument(help="Files of a log dir; the kind is decided by the name."),
    ],
    deep: Annotated[
        bool,
        typer.Option(
            "--deep", "-d", help="Every record of every batch (inner messages of v0/v1 wrappers too)."
        ),
    ] = False,
    print_data: Annotated[
        bool, typer.Option("--print-data", "-p", help="Show keys, values and headers (implies --deep).")
    ] = False,
    max_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-bytes", min=1, help="Read at most N bytes of batches per log (from the seek position)."
        ),
    ] = None,
    max_batches: Annotated[
        int | None,
        typer.Option(
            "--max-batches",
            min=1,
            help="Read at most N batches per log (from the seek position), and only the bytes they need.",
        ),
    ] = None,
    offsets: Annotated[
        str | None,
        typer.Option(
            "--offsets",
            metavar="A:B",
            help="Only offsets A..B (inclusive; A: or :B open). Seeks with the .index.",
        ),
    ] = None,
    timestamps: Annotated[
        str | None,
        typer.Option(
            "--timestamps",
            metavar="A:B",
            help="Only timestamps A..B (epoch ms or ISO-8601). Seeks with the .timeindex.",
        ),
    ] = None,
    decoder: Annotated[
        DecoderChoice,
        typer.Option(
            "--decoder",
            help="Decode internal topics' keys and values (and Schema Registry's _schemas); auto picks by "
            "the partition folder name, and with --print-data types a data topic's keys and values with the "
            "Schema Registry of its log dir's _schemas partition or --schemas (typed: always).",
        ),
    ] = DecoderChoice.AUTO,
    verify_index: Annotated[
        bool,
        typer.Option("--verify-index", help="Check indexes against their log and report every mismatch."),
    ] = False,
    verify_index_only: Annotated[
        bool,
        typer.Option(
            "--verify-index-only",
            help="Like DumpLogSegments --verify-index-only: verify .index/.timeindex files against their "
            ".log without printing their entries (findings and summary only).",
        ),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help='JSON Lines: one object per batch, record, entry or finding, with a "type".'
        ),
    ] = False,
    no_crc: Annotated[bool, typer.Option("--no-crc", help="Skip computing batch CRCs.")] = False,
    remote_storage: Annotated[
        str | None,
        typer.Option(
            "--remote-storage",
            metavar="URI",
            help="The remote tier's store (folder, s3://, gs://, hdfs://...): FILES are then remote "
            "segment objects (.log, .rsm-manifest; paths, URIs or keys under URI) or partition folders "
            "(their remote segments).",
        ),
    ] = None,
    remote_layout: RemoteLayoutOption = None,
    remote_private_key: RemotePrivateKeyOption = None,
    schemas: Annotated[
        list[str] | None,
        typer.Option(
            "--schemas",
            metavar="PATH",
            help="The Schema Registry's _schemas partition (a log dir, or a partition folder of any name) "
            "that types the keys and values shown by --print-data; by default the dumped log dir's own.",
        ),
    ] = None,
    keep_cache: KeepCacheOption = False,
    max_read_rate: MaxReadRateOption = None,
) -> None:
    """Dump log-dir files like Kafka's DumpLogSegments, and more."""
    apply_read_discipline(keep_cache, max_read_rate)
    try:
        opts = dump_options(
            deep=deep,
            print_data=print_data,
            max_bytes=max_bytes,
            max_batches=max_batches,
            offsets=offsets,
            timestamps=timestamps,
            decoder=decoder,
            verify_index=verify_index,
            verify_index_only=verify_index_only,
            no_crc=no_crc,
            schemas=tuple(schemas or ()),
        )
    except UsageProblem as e:
        fail(f"logdoctor dump: {e}", EX_USAGE)
    remote = None
    if remote_storage is not None or remote_layout is not None or remote_private_key is not None:
        from logdoctor.logdir.remote_store import RemoteTierError

        try:
            remote = remote_options(remote_storage, remote_layout, remote_private_key)
        except RemoteTierError as e:
            fail(f"logdoctor dump: {e}", EX_USAGE)
        require_remote_inputs(remote_storage, remote_private_key)
    if opts.schemas:  # read once here: a path that holds no _schemas partition is a usage error
        from logdoctor.cli.dump.typed import registry_for
        from logdoctor.logdir.discovery import DiscoveryError

        try:
            registry_for(None, opts.schemas)
        except DiscoveryError as e:
            fail(f"logdoctor dump: --schemas: {e}", EX_USAGE)
    raise typer.Exit(run(files, opts, json_out=json_out, remote=remote))

"""Producer snapshots, checkpoints, partition.metadata, meta.properties, quorum-state, markers, .lock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from logdoctor.cli.dump.context import DumpFailure, Event, FileContext, file_event, summary_event
from logdoctor.cli.exit_codes import EX_DATA
from logdoctor.cli.jsonvalues import to_jsonable
from logdoctor.logdir import names
from logdoctor.logdir.files import read_file


def dump_producer_snapshot(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.producer_snapshot import parse_producer_snapshot

    data = read_file(ctx.path)
    snap = parse_producer_snapshot(data, source=ctx.file)
    yield file_event(
        ctx,
        len(data),
        snapshot_offset=ctx.info.base_offset,
        version=snap.version,
        crc=snap.crc,
        entries=len(snap.entries),
    )
    for e in snap.entries:
        ev: Event = {"type": "producer_state", "file": ctx.file}
        ev.update(to_jsonable(e))
        ev["first_sequence"] = e.first_sequence
        yield ev
    yield summary_event(ctx, entries=len(snap.entries), trailing_bytes=len(snap.trailing))


def _checkpoint_problems(ctx: FileContext, problems: list[Any]) -> None:
    if problems:
        p = problems[0]
        where = f"{ctx.file}@{p.position}" if p.position is not None else ctx.file
        line = f" (line {p.line})" if p.line is not None else ""
        ctx.failure = DumpFailure(f"{where}: format: {p.message}{line}", EX_DATA, p.position)


def _dump_checkpoint(
    ctx: FileContext, scan_file: Any, kind: str, fields: tuple[str, ...], **head: Any
) -> Iterator[Event]:
    data = read_file(ctx.path)
    scan = scan_file(data, source=ctx.file)
    cp = scan.checkpoint
    count = cp.count if cp.count is not None else len(cp.entries)
    yield file_event(ctx, len(data), **head, version=cp.version, count=count, empty=len(data) == 0)
    for entry in cp.entries:
        yield {"type": kind, "file": ctx.file, **dict(zip(fields, entry, strict=True))}
    yield summary_event(ctx, entries=len(cp.entries), problems=len(scan.problems))
    _checkpoint_problems(ctx, scan.problems)


def dump_offset_checkpoint(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.checkpoint import scan_offset_checkpoint

    name = ctx.path.name.removesuffix(names.TMP_SUFFIX)
    fields = ("topic", "partition", "offset")
    return _dump_checkpoint(ctx, scan_offset_checkpoint, "checkpoint_entry", fields, checkpoint=name)


def dump_leader_epoch_checkpoint(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.checkpoint import scan_leader_epoch_checkpoint

    return _dump_checkpoint(
        ctx, scan_leader_epoch_checkpoint, "leader_epoch_entry", ("epoch", "start_offset")
    )


def dump_partition_metadata(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.partition_metadata import parse_partition_metadata

    data = read_file(ctx.path)
    meta = parse_partition_metadata(data, source=ctx.file)
    yield {
        "type": "partition_metadata",
        "file": ctx.file,
        "version": meta.version,
        "topic_id": meta.topic_id,
        "topic_uuid": str(meta.topic_uuid),
        "trailing_bytes": len(meta.trailing),
    }


def dump_meta_properties(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.properties import parse_meta_properties

    data = read_file(ctx.path)
    meta = parse_meta_properties(data, source=ctx.file)
    props = meta.properties
    yield {
        "type": "meta_properties",
        "file": ctx.file,
        "version": meta.version,
        "mode": "kraft" if meta.version == 1 else "zookeeper",
        "node_id": meta.node_id,
        "cluster_id": meta.cluster_id,
        "directory_id": meta.directory_id,
        "properties": {k: props.get(k) for k in props.keys()} if props is not None else {},  # noqa: SIM118
    }


def dump_quorum_state(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.quorum_state import parse_quorum_state

    data = read_file(ctx.path)
    state = parse_quorum_state(data, source=ctx.file)
    ev: Event = {"type": "quorum_state", "file": ctx.file}
    ev.update(to_jsonable(state))
    ev.pop("trailing", None)
    ev["trailing_bytes"] = len(state.trailing)
    yield ev


def dump_clean_shutdown(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.formats.cleanshutdown import parse_clean_shutdown

    data = read_file(ctx.path)
    marker = parse_clean_shutdown(data, source=ctx.file)
    ev: Event = {"type": "clean_shutdown", "file": ctx.file}
    ev.update(to_jsonable(marker))
    yield ev


def dump_lock(ctx: FileContext) -> Iterator[Event]:
    from logdoctor.logdir.lock import is_locked

    size = ctx.path.stat().st_size
    try:
        locked: bool | None = bool(is_locked(ctx.path.parent))
    except OSError:
        locked = None
    yield {"type": "lock", "file": ctx.file, "size": size, "locked": locked}

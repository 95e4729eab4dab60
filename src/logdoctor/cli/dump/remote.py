"""``dump --remote-storage URI``: segments of the remote tier (KIP-405), read from their store.

Each FILE is then a remote segment's object (its ``.log`` or, for Aiven's layout, ``.rsm-manifest``: a
path or URI, or a key relative to the store's root) or a partition folder of a log dir, which stands for
every remote segment of that partition (the partition's remote part, found by its topic id in the
store; :mod:`logdoctor.logdir.remote_reader`). The segment is dumped as a ``.log`` file is, its original
bytes read from the store (decompressed and decrypted for Aiven's layout), indexes from the store too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from logdoctor.cli.dump.context import (
    PARTITIONS,
    DumpFailure,
    FileContext,
    finish_file,
    format_failure,
    os_failure,
)
from logdoctor.cli.dump.kinds import FileInfo, FileKind
from logdoctor.cli.dump.options import DumpOptions
from logdoctor.cli.dump.sink import Sink
from logdoctor.cli.exit_codes import EX_DATA, EX_NOINPUT
from logdoctor.errors import FormatError
from logdoctor.logdir.refs import RemoteSegment, SegmentRef
from logdoctor.logdir.remote_store import RemoteOptions, RemoteTierError
from logdoctor.logdir.storage import Storage, is_uri

__all__ = ["dump_remote", "remote_segments"]

_OBJECT = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.(log|rsm-manifest|indexes)$")


def _object_ref(arg: str, opts: RemoteOptions) -> SegmentRef:
    storage, root = Storage.of(opts.storage)
    if is_uri(arg) or os.path.exists(arg):
        storage, location = Storage.of(arg)
    else:
        location = storage.join(root, arg.lstrip("/"))
    name = storage.basename(location)
    m = _OBJECT.match(name)
    if m is None:
        raise RemoteTierError(
            f"{arg}: not a remote segment object (<20-digit start offset>-<segment id>.log or .rsm-manifest) "
            "nor a partition folder"
        )
    stem = location[: -len(name)] + f"{m.group(1)}-{m.group(2)}"
    layout = opts.layout
    if layout is None:
        layout = "aiven" if storage.info(stem + ".rsm-manifest") is not None else "kafka-local"
    log = stem + ".log"
    info = storage.info(log)
    remote = RemoteSegment(
        layout,
        m.group(2),
        opts.storage,
        manifest=stem + ".rsm-manifest" if layout == "aiven" else None,
        indexes=stem + ".indexes" if layout == "aiven" else None,
        private_key=opts.private_key,
    )
    return SegmentRef(
        "", "", -1, int(m.group(1)), log, 0 if info is None else info.size, None, storage, remote
    )


def remote_segments(args: list[str], opts: RemoteOptions) -> Iterator[SegmentRef | DumpFailure]:
    """The remote segments FILES name (see the module doc), or a failure per FILE that names none, and
    for a partition folder one per remote segment the plan names as not there (read_plan)."""
    from logdoctor.logdir.discovery import DiscoveryError
    from logdoctor.logdir.names import parse_partition_dir
    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.logdir.read_plan import plan_read

    for arg in args:
        try:
            if os.path.isdir(arg) and parse_partition_dir(os.path.basename(os.path.abspath(arg))) is not None:
                # the read plan every output uses (logdir.read_plan): the listing checked against the
                # remote log metadata of the partition's log dir; what is not there is named
                plan = plan_read([arg], ReadOptions(remote=opts), keep_local_copies=True)
                segs = [s for r in plan.refs for s in r.segments if s.remote is not None]
                PARTITIONS.update({s.path: r for r in plan.refs for s in r.segments if s.remote is not None})
                if not segs and not plan.not_read:
                    yield DumpFailure(
                        f"{arg}: no remote segment of this partition in {opts.storage}", EX_NOINPUT
                    )
                order = sorted(
                    [(s.base_offset, 0, s) for s in segs] + [(p.first_offset, 1, p) for p in plan.not_read],
                    key=lambda t: (t[0], t[1]),
                )
                for _o, _k, item in order:
                    if isinstance(item, SegmentRef):
                        yield item
                    else:
                        yield DumpFailure(f"{item.path}: {item.error}", EX_DATA)
            else:
                yield _object_ref(arg, opts)
        except (RemoteTierError, DiscoveryError, ValueError) as exc:
            yield DumpFailure(f"{arg}: {exc}", EX_NOINPUT)
        except OSError as exc:
            yield os_failure(Path(arg), exc)


def dump_remote(seg: SegmentRef, opts: DumpOptions, sink: Sink) -> int:
    """Dump one remote segment into ``sink`` (as :func:`logdoctor.cli.dump.dump_one` does a file)."""
    from logdoctor.cli.dump.log import dump_log

    ctx = FileContext(Path(seg.storage.basename(seg.path)), FileInfo(FileKind.LOG, seg.base_offset), opts)
    ctx.remote = seg
    where = seg.path  # named as given: a Path would fold ``s3://`` to ``s3:/`` (the sinks take its str())
    try:
        for ev in dump_log(ctx):
            sink.event(ev)
    except FormatError as e:
        ctx.failure = format_failure(where, e)  # type: ignore[arg-type]
    except OSError as e:
        ctx.failure = os_failure(where, e)  # type: ignore[arg-type]
    return finish_file(sink, ctx, where)

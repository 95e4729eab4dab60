"""``rebuild-index``: write a new ``.index``/``.timeindex``/``.txnindex`` rebuilt from its segment's ``.log``.

The ``.log`` is written by an earlier step; the index is rebuilt as ``LogSegment.recover`` writes it
(``restore``, for an index the store lacks).

Invariants: the rebuilt bytes' sha256 is kept in the backup dir before the rename; the target must not
exist; a ``.log`` that is not whole valid batches gets no index; undo removes it.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import fsync_dir
from logdoctor.repair import backup as bk
from logdoctor.repair import copies
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import (
    AFTER,
    BEFORE,
    OTHER,
    Operation,
    StepContext,
    StepStateError,
    _file_sha,
    _remove_temps,
)
from logdoctor.repair.steps.copying import manifest_rel, read_manifest


class RebuildIndex(Operation):
    """Write a new index file of a segment, rebuilt from the segment's ``.log`` (already in the log dir:
    an earlier step restored it) by :func:`logdoctor.formats.recovery.rebuild_indexes`, the project's
    restatement of K:storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java
    ``recover``: the same bytes a broker writes when it recovers the segment. The rebuilt bytes are
    known only once the ``.log`` is there, so their sha256 goes to the backup dir (:func:`manifest_rel`)
    before the file is renamed into place (``atomic_write``); a ``.txnindex`` without an entry is not
    written (Kafka creates it on its first aborted transaction), the manifest saying so. The target must
    not exist (a restore never replaces a file). Undo removes it.

    params: log (the segment's path), base_offset, index (``.index``, ``.timeindex`` or ``.txnindex``),
    interval (index.interval.bytes), open_transactions {producer id: first offset} at the base offset
    (before ``replay``), replay [[base offset, .log path], ...] (earlier segments walked first for the
    producer state, LogLoader's way when no snapshot is at the base offset), manifest (rel)|None.
    """

    op = "rebuild-index"

    def state(self, step: Step, ctx: StepContext) -> str:
        manifest = read_manifest(ctx, step)
        if not os.path.lexists(step.path):
            return AFTER if manifest == {} else BEFORE  # {}: rebuilt empty, nothing to write
        if manifest and _file_sha(step.path) == manifest.get("."):
            return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not the rebuilt index"):
            return
        _remove_temps(step.path)
        data = rebuilt_index(step.params)
        checksums = {".": bk.sha256_bytes(data)} if data or step.params["index"] != ".txnindex" else {}
        body = json.dumps(
            {"source": step.params["log"], "rebuilt": step.path, "hash": "sha256", "checksums": checksums},
            indent=1,
            sort_keys=True,
        )
        bk.write_durable(ctx.backup_path(manifest_rel(step)), body.encode())
        ctx.crash(step.number, "backed-up")
        if checksums:
            atomic.atomic_write(step.path, data, before_rename=lambda: ctx.crash(step.number, "temp-written"))
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        _remove_temps(step.path)
        s = self.state(step, ctx)
        if s == OTHER:
            raise StepStateError(f"{step.path} is not the rebuilt index: it is kept")
        if os.path.lexists(step.path):
            os.unlink(step.path)
            fsync_dir(os.path.dirname(step.path))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(ctx.backup_path(manifest_rel(step)))  # an empty .txnindex's "after" is its "before"


# the last rebuild of this process: (log identity, params) -> indexes (a segment's steps walk it once)
_rebuilt: dict[str, Any] = {}
# (segment, identity, interval, open transactions at its base) -> the ones open at its end: a replay
# over many segments walks each once per process
_txns_after: dict[str, dict[int, int]] = {}


def rebuilt_index(params: dict[str, Any]) -> bytes:
    """The bytes of ``params["index"]`` rebuilt from ``params["log"]`` (see :class:`RebuildIndex`);
    StepStateError unless the whole ``.log`` is valid batches."""
    log = params["log"]
    interval = int(params["interval"])
    txns = {int(k): int(v) for k, v in (params.get("open_transactions") or {}).items()}
    for base, path in params.get("replay") or []:
        after_key = _txn_key(path, interval, txns)
        if after_key not in _txns_after:
            _txns_after[after_key] = _walk(path, int(base), interval, txns).open_transactions
        txns = _txns_after[after_key]
    key = _txn_key(log, interval, txns)
    if _rebuilt.get("key") != key:
        built = _walk(log, int(params["base_offset"]), interval, txns)
        _rebuilt.clear()
        _rebuilt.update(key=key, built=built)
        _txns_after[key] = built.open_transactions
    built = _rebuilt["built"]
    return {".index": built.offset_index, ".timeindex": built.time_index, ".txnindex": built.txn_index}[
        params["index"]
    ]


def _txn_key(path: str, interval: int, txns: dict[int, int]) -> str:
    return json.dumps([path, copies.identity(path), interval, sorted(txns.items())])


def _walk(path: str, base_offset: int, interval: int, txns: dict[int, int]) -> Any:
    from logdoctor.checks.state.fast_lane import crc_checked_prefix
    from logdoctor.checks.state.file_records import read_buffer, release
    from logdoctor.formats.recovery import rebuild_indexes

    view, handle, _ = read_buffer(path)
    try:
        built = rebuild_indexes(
            view,
            base_offset,
            index_interval_bytes=interval,
            source=path,
            open_transactions=txns,
            crc_checked_until=crc_checked_prefix(view),
        )
        if built.error is not None or built.valid_bytes != len(view):
            why = built.error or f"whole batches end at byte {built.valid_bytes} of {len(view)}"
            raise StepStateError(f"{path}: {why}; its indexes are not rebuilt")
        return built
    finally:
        release(view, handle)


def rebuild_index(
    path: str,
    log: str,
    base_offset: int,
    interval: int,
    open_transactions: dict[int, int] | None = None,
    replay: list[tuple[int, str]] | None = None,
) -> Step:
    """Write the new index file ``path`` (its suffix says which) rebuilt from the segment ``log`` (see
    :class:`RebuildIndex`)."""
    return Step(
        RebuildIndex.op,
        path,
        {
            "log": log,
            "base_offset": base_offset,
            "index": os.path.splitext(path)[1],
            "interval": interval,
            "open_transactions": {str(k): v for k, v in (open_transactions or {}).items()},
            "replay": [[b, p] for b, p in (replay or [])],
            "manifest": None,
        },
    )

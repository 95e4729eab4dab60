"""Two more reversible operations for the repair engine, used by the operator procedures.

``copy-partition``  copy a partition folder to a new path: the copy is made under
                    ``<dst>.logdoctor-partial`` while the source bytes are hashed (BLAKE2b), read
                    back, its checksums saved in the backup dir (``manifests/<step>.json``), then
                    renamed into place. Planning reads no contents: the source's sizes and mtimes
                    are the "unchanged since the plan" check. Undo removes the copy.
                    params: dst, fingerprint {rel: [size, mtime_ns]}, size, manifest (rel).
``remove-copied``   delete a partition folder whose verified copy exists elsewhere (a move across
                    file systems: keeping the source in the backup would not free the disk). The
                    folder is first renamed to Kafka's own deletion name ``<tp>.<uuid>-delete``
                    (a broker started before the run finishes deletes it itself,
                    K:core/src/main/scala/kafka/log/LogManager.scala), then removed. Undo copies it
                    back from the copy, checked against the manifest.
                    params: copy (path of the copy), manifest (rel), trash (path), fingerprint.

Both are registered in :data:`logdoctor.repair.actions.OPERATIONS` when this module is imported
(``logdoctor.repair.procedures`` imports it; the CLI imports that), so the engine's apply, resume
and rollback, including ``logdoctor repair --resume/--rollback``, run them like its own.

Crash points (``LOGDOCTOR_CRASH_AT=N:PHASE``): copy-partition ``temp-written`` (half the partial
copy written), ``backed-up`` (partial copy complete and verified, manifest saved, not renamed),
``applied`` (renamed); remove-copied ``backed-up`` (copy checked), ``temp-written`` (renamed to
the ``-delete`` name, not removed), ``applied`` (removed).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from logdoctor.logdir.atomic import fsync_dir
from logdoctor.repair import backup as bk
from logdoctor.repair.actions import (
    AFTER,
    BEFORE,
    OPERATIONS,
    OTHER,
    PARTIAL,
    Operation,
    StepContext,
    StepStateError,
)
from logdoctor.repair.plan import Step
from logdoctor.repair.procedures import copy as cp

PARTIAL_SUFFIX = ".logdoctor-partial"
RESTORE_SUFFIX = ".logdoctor-restore"

# --- progress ----------------------------------------------------------------------------------------

_progress: list[cp.Progress] = []


@contextlib.contextmanager
def copy_progress(callback: cp.Progress) -> Iterator[None]:
    """Send the byte counts of copies made by these operations to ``callback`` while inside."""
    _progress.append(callback)
    try:
        yield
    finally:
        _progress.remove(callback)


def _report(n: int) -> None:
    for cb in _progress:
        cb(n)


# verified copies of this process: path -> identity at the time the checksums matched
_verified: dict[str, dict[str, list[int]]] = {}


def _manifest(ctx: StepContext, step: Step) -> dict[str, str] | None:
    try:
        data = json.loads(Path(ctx.backup_path(step.params["manifest"])).read_text())
    except (OSError, ValueError):
        return None
    return data.get("checksums") if isinstance(data, dict) else None


def _matches_manifest(path: str, manifest: dict[str, str]) -> bool:
    """Checksums of ``path`` equal the manifest (skipped when this process verified it unchanged)."""
    if not os.path.isdir(path):
        return False
    ident = cp.identity(path)
    if _verified.get(path) == ident and set(ident) == set(manifest):
        return True
    if cp.verify_tree(path, manifest):
        return False
    _verified[path] = ident
    return True


def _fingerprint_ok(step: Step, path: str) -> bool:
    return os.path.isdir(path) and cp.fingerprint(path) == step.params["fingerprint"]


class CopyPartition(Operation):
    op = "copy-partition"

    def state(self, step: Step, ctx: StepContext) -> str:
        dst = step.params["dst"]
        if not os.path.lexists(dst):
            return BEFORE
        manifest = _manifest(ctx, step)
        if manifest is not None and _matches_manifest(dst, manifest):
            return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s != BEFORE:
            raise StepStateError(f"{step.params['dst']} exists and is not the planned copy")
        if not _fingerprint_ok(step, step.path):
            raise StepStateError(f"{step.path} changed since the plan was made (file sizes or mtimes differ)")
        dst = step.params["dst"]
        partial = dst + PARTIAL_SUFFIX
        cp.remove_tree(partial)
        checksums = cp.copy_tree(
            step.path,
            partial,
            progress=_report,
            after_first_file=lambda: ctx.crash(step.number, "temp-written"),
        )
        if not _fingerprint_ok(step, step.path):
            raise StepStateError(f"{step.path} changed while it was copied")
        problems = cp.verify_tree(partial, checksums)
        if problems:
            raise StepStateError(f"the copy of {step.path} does not read back the same: {problems[0]}")
        body = json.dumps(
            {"source": step.path, "copy": dst, "hash": cp.HASH_NAME, "checksums": checksums},
            indent=1,
            sort_keys=True,
        )
        bk.write_durable(ctx.backup_path(step.params["manifest"]), body.encode())
        _verified[dst] = {rel: v for rel, v in cp.identity(partial).items()}
        ctx.crash(step.number, "backed-up")
        os.rename(partial, dst)
        fsync_dir(os.path.dirname(dst))
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        dst = step.params["dst"]
        cp.remove_tree(dst + PARTIAL_SUFFIX)
        cp.remove_tree(dst)
        _verified.pop(dst, None)

    def live_cost(self, step: Step) -> int:
        return int(step.params.get("size") or 0)


class RemoveCopied(Operation):
    op = "remove-copied"

    def state(self, step: Step, ctx: StepContext) -> str:
        live = os.path.lexists(step.path)
        trash = os.path.lexists(step.params["trash"])
        restoring = os.path.lexists(step.path + RESTORE_SUFFIX)
        if live and not trash and not restoring:
            return BEFORE
        if not live and not trash and not restoring:
            return AFTER
        if not live and (trash or restoring):
            return PARTIAL
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} and {step.params['trash']} both exist")
        manifest = _manifest(ctx, step)
        if manifest is None or not _matches_manifest(step.params["copy"], manifest):
            raise StepStateError(f"the copy {step.params['copy']} is not verified: {step.path} is kept")
        cp.remove_tree(step.path + RESTORE_SUFFIX)  # an undo interrupted while copying back
        if s == BEFORE:
            if not _fingerprint_ok(step, step.path):
                raise StepStateError(f"{step.path} changed since it was copied: it is kept")
            ctx.crash(step.number, "backed-up")
            os.rename(step.path, step.params["trash"])
            fsync_dir(os.path.dirname(step.path))
            ctx.crash(step.number, "temp-written")
        cp.remove_tree(step.params["trash"])
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        s = self.state(step, ctx)
        if s == BEFORE:
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} and {step.params['trash']} both exist")
        trash = step.params["trash"]
        if os.path.isdir(trash) and _fingerprint_ok(step, trash):
            os.rename(trash, step.path)  # renamed but nothing removed yet
            fsync_dir(os.path.dirname(step.path))
            return
        manifest = _manifest(ctx, step)
        if manifest is None or not _matches_manifest(step.params["copy"], manifest):
            raise StepStateError(
                f"cannot restore {step.path}: its copy {step.params['copy']} is missing or changed"
            )
        cp.remove_tree(trash)  # partly removed: the copy is the whole source
        restore = step.path + RESTORE_SUFFIX
        cp.remove_tree(restore)
        checksums = cp.copy_tree(step.params["copy"], restore, progress=_report)
        if checksums != manifest or cp.verify_tree(restore, manifest):
            raise StepStateError(f"the copy back to {step.path} does not match the manifest")
        os.rename(restore, step.path)
        fsync_dir(os.path.dirname(step.path))


def register() -> None:
    """Add the operations to the engine's table (idempotent)."""
    for op in (CopyPartition(), RemoveCopied()):
        OPERATIONS.setdefault(op.op, op)


register()


def copy_partition(src: str, dst: str, manifest: str) -> Step:
    """Copy the partition folder ``src`` to ``dst`` (which must not exist); ``manifest`` is relative
    to the backup dir."""
    fp = cp.fingerprint(src)
    return Step(
        CopyPartition.op,
        src,
        {"dst": dst, "fingerprint": fp, "size": sum(v[0] for v in fp.values()), "manifest": manifest},
    )


def remove_copied(src: str, copy: str, manifest: str, trash: str) -> Step:
    """Remove ``src`` once ``copy`` is verified against ``manifest`` (written by a copy-partition step)."""
    return Step(
        RemoveCopied.op,
        src,
        {"copy": copy, "manifest": manifest, "trash": trash, "fingerprint": cp.fingerprint(src)},
    )


__all__ = [
    "PARTIAL_SUFFIX",
    "CopyPartition",
    "RemoveCopied",
    "copy_partition",
    "copy_progress",
    "register",
    "remove_copied",
]

"""Two more reversible operations for the repair engine, used by the operator procedures.

``copy-partition``  copy a partition folder to a new path: the engine's ``copy-tree``
                    (:class:`logdoctor.repair.actions.CopyTree`) under the procedures' own name: the
                    copy is made under ``<dst>.logdoctor-partial`` while the source bytes are hashed
                    (BLAKE2b), read back, its checksums saved in the backup dir (``manifest``), then
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

import os

from logdoctor.repair import copies
from logdoctor.repair.actions import (
    AFTER,
    BEFORE,
    OPERATIONS,
    OTHER,
    PARTIAL,
    PARTIAL_SUFFIX,
    CopyTree,
    Operation,
    StepContext,
    StepStateError,
    copy_progress,
    copy_tree,
    fingerprint_ok,
    matches_manifest,
    read_manifest,
    report_copied,
)
from logdoctor.repair.plan import Step

RESTORE_SUFFIX = ".logdoctor-restore"


class CopyPartition(CopyTree):
    op = "copy-partition"


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
        manifest = read_manifest(ctx, step)
        if manifest is None or not matches_manifest(step.params["copy"], manifest):
            raise StepStateError(f"the copy {step.params['copy']} is not verified: {step.path} is kept")
        copies.remove_tree(step.path + RESTORE_SUFFIX)  # an undo interrupted while copying back
        if s == BEFORE:
            if not fingerprint_ok(step, step.path):
                raise StepStateError(f"{step.path} changed since it was copied: it is kept")
            ctx.crash(step.number, "backed-up")
            copies.rename_durable(step.path, step.params["trash"])
            ctx.crash(step.number, "temp-written")
        copies.remove_tree(step.params["trash"])
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        s = self.state(step, ctx)
        if s == BEFORE:
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} and {step.params['trash']} both exist")
        trash = step.params["trash"]
        if os.path.isdir(trash) and fingerprint_ok(step, trash):
            copies.rename_durable(trash, step.path)  # renamed but nothing removed yet
            return
        manifest = read_manifest(ctx, step)
        if manifest is None or not matches_manifest(step.params["copy"], manifest):
            raise StepStateError(
                f"cannot restore {step.path}: its copy {step.params['copy']} is missing or changed"
            )
        copies.remove_tree(trash)  # partly removed: the copy is the whole source
        restore = step.path + RESTORE_SUFFIX
        copies.remove_tree(restore)
        checksums = copies.copy_tree(step.params["copy"], restore, progress=report_copied)
        if checksums != manifest or copies.verify_tree(restore, manifest):
            raise StepStateError(f"the copy back to {step.path} does not match the manifest")
        copies.rename_durable(restore, step.path)


def register() -> None:
    """Add the operations to the engine's table (idempotent)."""
    for op in (CopyPartition(), RemoveCopied()):
        OPERATIONS.setdefault(op.op, op)


register()


def copy_partition(src: str, dst: str, manifest: str) -> Step:
    """Copy the partition folder ``src`` to ``dst`` (which must not exist); ``manifest`` is relative
    to the backup dir."""
    return Step(CopyPartition.op, src, copy_tree(src, dst, manifest).params)


def remove_copied(src: str, copy: str, manifest: str, trash: str) -> Step:
    """Remove ``src`` once ``copy`` is verified against ``manifest`` (written by a copy-partition step)."""
    return Step(
        RemoveCopied.op,
        src,
        {"copy": copy, "manifest": manifest, "trash": trash, "fingerprint": copies.fingerprint(src)},
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

"""The operator procedures' verified copies (move-partition, sync-replica).

``copy-tree``       copy a folder (or file) to a new path, fsync, verify checksums (kept in the backup
                    dir); undo removes the copy.
``copy-partition``  copy a partition folder to a new path: ``copy-tree`` under the procedures' own name:
                    the copy is made under ``<dst>.logdoctor-partial`` while the source bytes are hashed
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

Invariants: a copy is renamed into place only once read back equal to its source's checksums, saved
first; a source is removed only while its copy matches the manifest and the source its planned fingerprint.
"""

from __future__ import annotations

import json
import os

from logdoctor.repair import backup as bk
from logdoctor.repair import copies
from logdoctor.repair import snapshot as snap
from logdoctor.repair.plan import Step
from logdoctor.repair.steps.base import (
    AFTER,
    BEFORE,
    OTHER,
    PARTIAL,
    PARTIAL_SUFFIX,
    Operation,
    StepContext,
    StepStateError,
)
from logdoctor.repair.steps.copying import (
    _verified,
    fingerprint_ok,
    manifest_rel,
    matches_manifest,
    read_manifest,
    report_copied,
)


class CopyTree(Operation):
    """Copy a folder (or file) to ``dst``: made under ``<dst>.logdoctor-partial`` while the source bytes
    are hashed (BLAKE2b), read back, its checksums saved in the backup dir (:func:`manifest_rel`), then
    renamed into place. Planning reads no contents: the source's sizes and mtimes are the "unchanged
    since the plan" check. Undo removes the copy.

    params: dst, fingerprint {rel: [size, mtime_ns]}, size, manifest (rel)|None.
    """

    op = "copy-tree"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.SOURCE, step.params["dst"]: snap.CONTENT}

    def unplanned(self, step: Step) -> str | None:
        return None if fingerprint_ok(step, step.path) else "its file sizes or mtimes differ"

    def state(self, step: Step, ctx: StepContext) -> str:
        dst = step.params["dst"]
        if not os.path.lexists(dst):
            return BEFORE
        manifest = read_manifest(ctx, step)
        if manifest is not None and matches_manifest(dst, manifest):
            return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"{step.params['dst']} exists and is not the planned copy"):
            return
        if not fingerprint_ok(step, step.path):
            raise StepStateError(f"{step.path} changed since the plan was made (file sizes or mtimes differ)")
        dst = step.params["dst"]
        partial = dst + PARTIAL_SUFFIX
        copies.remove_tree(partial)
        checksums = copies.copy_tree(
            step.path,
            partial,
            progress=report_copied,
            after_first_file=lambda: ctx.crash(step.number, "temp-written"),
        )
        if not fingerprint_ok(step, step.path):
            raise StepStateError(f"{step.path} changed while it was copied")
        problems = copies.verify_tree(partial, checksums)
        if problems:
            raise StepStateError(f"the copy of {step.path} does not read back the same: {problems[0]}")
        body = json.dumps(
            {"source": step.path, "copy": dst, "hash": copies.HASH_NAME, "checksums": checksums},
            indent=1,
            sort_keys=True,
        )
        bk.write_durable(ctx.backup_path(manifest_rel(step)), body.encode())
        _verified[dst] = copies.identity(partial)
        ctx.crash(step.number, "backed-up")
        copies.rename_durable(partial, dst)
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        dst = step.params["dst"]
        copies.remove_tree(dst + PARTIAL_SUFFIX)
        copies.remove_tree(dst)
        _verified.pop(dst, None)

    def live_cost(self, step: Step) -> int:
        return int(step.params.get("size") or 0)

    def live_files(self, step: Step) -> int:
        return max(1, len(step.params.get("fingerprint") or {}))


RESTORE_SUFFIX = ".logdoctor-restore"


class CopyPartition(CopyTree):
    op = "copy-partition"


class RemoveCopied(Operation):
    op = "remove-copied"
    unplanned = CopyTree.unplanned  # the source as planned: its sizes and mtimes

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

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return sum(int(v[0]) for v in (step.params.get("fingerprint") or {}).values())

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


def copy_tree(src: str, dst: str, manifest: str | None = None) -> Step:
    """Copy a file or folder to ``dst`` (which must not exist), verified by checksums; undo removes it.

    Planning reads no contents (sizes and mtimes only). ``manifest``: where the checksums go, relative
    to the backup dir (default ``manifests/<step number>.json``).
    """
    fp = copies.fingerprint(src)
    if not fp and not os.path.isdir(src):
        raise FileNotFoundError(src)
    return Step(
        CopyTree.op,
        src,
        {"dst": dst, "fingerprint": fp, "size": sum(v[0] for v in fp.values()), "manifest": manifest},
    )


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

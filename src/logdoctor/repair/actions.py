"""The primitive, reversible operations a plan is made of, and builders for reusable actions.

Each operation can tell, from the file system alone, whether its target is still in the
"before" state, already in the "after" state, or neither (someone else changed it): that is
what makes ``--resume`` (redo what is not "after") and ``--rollback`` (undo what is not
"before") safe after a crash at any point. Every operation keeps what it removes in the backup
dir before it removes it, and checks its post-condition (``verify``) before it is journaled done.

Operations (``Step.op``):

``write``     replace or create a file with staged bytes (atomic: temp, fsync, rename, fsync dir);
              the original is kept in ``files/``; optional owner/mode for the result.
``truncate``  cut a file to ``size_after`` in place; the removed tail is kept in ``tails/``.
``move``      delete with backup: move a file or folder into ``files/`` (rename, or copy+verify+delete).
``rename``    rename a file or folder inside the log dirs (never over an existing target).
``chmod``     set owner, group and permission bits.
``copy-tree`` copy a folder (or file) to a new path, fsync, verify checksums (kept in the backup
              dir); undo removes the copy.
``mkdir``     create a folder (a restored partition's); undo removes it.
``fetch-remote`` write a new file with a remote-tier segment's original bytes (``restore``), streamed
              in ranged reads (a local kafka-local object: copied by the kernel), CRC-32C checked
              against the source and batch-walked in one read back, its checksum kept in the backup
              dir; undo removes it.
``rebuild-index`` write a new ``.index``/``.timeindex``/``.txnindex`` rebuilt from its segment's ``.log``
              (written by an earlier step) as ``LogSegment.recover`` writes it (``restore``, for an index
              the store lacks); its sha256 kept in the backup dir before the rename; undo removes it.

The operator procedures' own (move-partition, sync-replica):

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

A new step kind (a new writing command's own operation) is a subclass of :class:`Operation` added to
:data:`OPERATIONS` under its ``op`` name, and provides:

``state(step, ctx)``   BEFORE / AFTER / PARTIAL / OTHER, from the file system and ``step.params`` alone
``apply(step, ctx)``   idempotent: from BEFORE or PARTIAL to AFTER; keeps what it removes in the backup
``undo(step, ctx)``    idempotent: from AFTER or PARTIAL back to BEFORE, from the backup
``verify``             (default: ``state == AFTER``), checked before the step is journaled done
``groupable(step)``, ``prepare(step, ctx, barrier)``   (optional) the step in two halves, its fsyncs
                       left to a shared barrier, so that a run of such steps shares its durability
                       (:func:`logdoctor.repair.apply._run_group`; new files and folders only)
``unplanned(step)``    (default None) what ``state`` does not see that makes the plan stale before the
                       run (a copy's source changed since planning): the run is refused, 65
``watched(step)``      the live paths it changes or reads, each with how much of it matters
                       (:mod:`logdoctor.repair.snapshot` levels: ``content``, ``meta`` for owner and mode,
                       ``source`` for a path it only reads); default: every path of ``step.touched()``
                       at ``content``. The engine records their snapshots (before the run, after the step)
                       and refuses any apply, resume or rollback that finds one different
                       (:func:`logdoctor.repair.apply.check_recorded`): a step never needs its own check
                       against changes made after it ran.
``backup_cost``, ``live_cost``, ``live_files``, ``live_freed``   bytes it needs in the backup dir and
                       in the log dirs, and frees there, for the space check before the run
                       (:mod:`logdoctor.repair.space`).

Builders (:func:`write_file`, :func:`truncate_file`, :func:`delete_with_backup`, :func:`rename_path`,
:func:`set_owner_mode`, :func:`copy_tree`, :func:`copy_partition`, :func:`remove_copied`) create the
steps with their "before" fingerprint taken now, for the planner and for the operator procedures
(moving partitions between log dirs, copying a leader's partition to a follower).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import stat
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import fsync_dir
from logdoctor.logdir.files import open_regular, read_range
from logdoctor.logdir.sparse import copy_range_sparse, data_bytes
from logdoctor.repair import backup as bk
from logdoctor.repair import copies
from logdoctor.repair import snapshot as snap
from logdoctor.repair.plan import Step

BEFORE, AFTER, OTHER, PARTIAL = "before", "after", "other", "partial"
PARTIAL_SUFFIX = ".logdoctor-partial"  # a copy being made, renamed to its name once verified


class StepStateError(Exception):
    """The target is neither as planned nor as the step leaves it: someone else changed it."""


# --- context --------------------------------------------------------------------------------------


@dataclass(slots=True)
class StepContext:
    """What an operation needs besides its step: the backup root and the crash hook."""

    backup_dir: str
    crash: Callable[[int, str], None] = lambda step, phase: None
    staged: dict[int, bytes] = field(default_factory=dict)
    #: while a group of steps is prepared (apply._run_group): each folder's temp names, listed once
    listings: dict[str, list[str]] | None = None
    #: while a group of steps is prepared: the thread that checks a step's result while the next step
    #: makes its own (:meth:`check_behind`), and the check in flight
    checker: Executor | None = None
    checking: Future[None] | None = None

    def check_behind(self, work: Callable[[], None]) -> None:
        """Run ``work`` (a step's checks of what it made, before it is renamed into place) on the group's
        check thread while the caller goes on to the next step (without one: now). One check at a time:
        the caller settles the one before first (:meth:`settle`)."""
        self.settle()
        if self.checker is None:
            work()
        else:
            self.checking = self.checker.submit(work)

    def settle(self) -> None:
        """Wait for the check in flight (:meth:`check_behind`); raise its error."""
        pending, self.checking = self.checking, None
        if pending is not None:
            pending.result()

    def backup_path(self, rel: str) -> str:
        return os.path.join(self.backup_dir, rel)

    def staged_bytes(self, step: Step) -> bytes:
        data = self.staged.get(step.number)
        if data is None:
            path = self.backup_path(step.params["staged"])
            at = step.params.get("staged_at")  # [offset, size] in a file of all the plan's steps
            data = read_range(path, int(at[0]), int(at[1])) if at else Path(path).read_bytes()
            if bk.sha256_bytes(data) != step.params["sha_after"]:
                raise StepStateError(f"staged content of step {step.number} is damaged")
            self.staged[step.number] = data
        return data


def _meta(path: str) -> dict[str, int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return {"uid": st.st_uid, "gid": st.st_gid, "mode": stat.S_IMODE(st.st_mode)}


def _set_meta(path: str, meta: dict[str, int], *, owner_set: Callable[[], None] | None = None) -> None:
    """Owner, then mode (two system calls: a kill between them leaves the new owner with the old mode;
    :meth:`SetOwnerMode.state` knows that state). ``owner_set`` runs between them (crash testing)."""
    st = os.lstat(path)
    if (st.st_uid, st.st_gid) != (meta["uid"], meta["gid"]):
        os.chown(path, meta["uid"], meta["gid"], follow_symlinks=False)
        if owner_set is not None:
            owner_set()
    if stat.S_IMODE(st.st_mode) != meta["mode"]:
        os.chmod(path, meta["mode"])


def _meta_matches(path: str, meta: dict[str, int] | None) -> bool:
    return meta is None or _meta(path) == meta


def _file_sha(path: str) -> str | None:
    try:
        return bk.sha256_file(path)
    except FileNotFoundError:
        return None


def _remove_temps(
    path: str, barrier: atomic.SyncBarrier | None = None, listings: dict[str, list[str]] | None = None
) -> None:
    """Remove temp files atomic_write leaves when killed between writing and renaming (and make the
    removal durable: now, or when ``barrier`` is flushed). ``listings``: the names in each folder, listed
    once for a group of steps (:attr:`StepContext.listings`; no two steps of a group write the same
    path, so a temp of this path's name is one an earlier run left, listed before the group began)."""
    folder, name = os.path.split(path)
    if listings is None:
        temps = glob.glob(os.path.join(glob.escape(folder), f".{glob.escape(name)}.*.tmp"))
    else:
        if folder not in listings:
            try:
                listings[folder] = [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(".tmp")]
            except FileNotFoundError:
                listings[folder] = []
        head = f".{name}."  # the glob's ".<name>.*.tmp": every listed name ends with ".tmp"
        names = listings[folder]
        temps = [os.path.join(folder, n) for n in names if n.startswith(head) and len(n) > len(head) + 3]
    removed = False
    for tmp in temps:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
            removed = True
    if removed and os.path.isdir(folder):
        if barrier is None:
            fsync_dir(folder)
        else:
            barrier.folder(folder)


# --- operations ------------------------------------------------------------------------------------


class Operation:
    op = ""

    def state(self, step: Step, ctx: StepContext) -> str:
        raise NotImplementedError

    def apply(self, step: Step, ctx: StepContext) -> None:
        raise NotImplementedError

    def undo(self, step: Step, ctx: StepContext) -> None:
        raise NotImplementedError

    def verify(self, step: Step, ctx: StepContext) -> bool:
        return self.state(step, ctx) == AFTER

    def watched(self, step: Step) -> dict[str, str]:
        """{live path: snapshot level} whose recorded state this step depends on (see the module doc)."""
        return {p: snap.CONTENT for p in step.touched()}

    def unplanned(self, step: Step) -> str | None:
        """Before a run, beyond ``state() == BEFORE``: what is no longer as planned (None: nothing), for
        what ``state`` does not look at (a copy's source)."""
        return None

    def to_do(self, step: Step, ctx: StepContext, changed: str) -> bool:
        """Whether ``apply`` has work left: False when the step is done ("after"), True when its target
        is as planned ("before"), StepStateError(``changed``) when it is neither."""
        s = self.state(step, ctx)
        if s == AFTER:
            return False
        if s != BEFORE:
            raise StepStateError(changed)
        return True

    def groupable(self, step: Step) -> bool:
        """Whether the step can run in a group (:meth:`prepare` then its commit), its durability
        shared with the group's other steps (:func:`logdoctor.repair.apply` ``_run_group``)."""
        return False

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        """The grouped :meth:`apply`, first half: everything up to the rename that puts the result in
        place, with every fsync left to ``barrier`` (registered there, not done); returns the second
        half (the rename; its folder registered in the barrier of the group's second flush), or None
        when nothing is left to do. The engine flushes the barrier between the halves, so that no file
        is renamed into place before its bytes are durable, and again before the steps are journaled
        done. Same states as :meth:`apply` after each half (a kill anywhere: resume or undo as usual)."""
        raise NotImplementedError

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        """Bytes this step adds to the backup dir."""
        return 0

    def live_cost(self, step: Step) -> int:
        """Bytes of the new file(s) it writes in a log dir (under a temp name first, beside the target:
        ``params["dst"]`` or the step's path)."""
        return 0

    def live_files(self, step: Step) -> int:
        """How many new files :meth:`live_cost` counts (each takes whole blocks)."""
        return 1

    def live_freed(self, step: Step, backup_dir: str) -> int:
        """Bytes it frees on the file system of the step's path once done (a replaced original, a cut
        tail, a folder moved to another file system): :mod:`logdoctor.repair.space` counts them for the
        steps after it."""
        return 0


class WriteFile(Operation):
    """params: sha_before|None, size_before, meta_before|None, sha_after, size_after, staged,
    backup (rel)|None, meta_after|None (owner/mode to set on the result)."""

    op = "write"

    def state(self, step: Step, ctx: StepContext) -> str:
        p = step.params
        sha = _file_sha(step.path)
        if sha == p["sha_after"] and _meta_matches(step.path, p.get("meta_after")):
            return AFTER
        if sha == p["sha_before"]:  # None == None: absent before and now
            return BEFORE
        if sha == p["sha_after"]:
            return PARTIAL  # content written, owner/mode not yet
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == OTHER:
            raise StepStateError(
                f"{step.path} changed since the plan was made (neither original nor repaired)"
            )
        if s == BEFORE:
            _remove_temps(step.path)  # left by an earlier run killed inside atomic_write
            if p["sha_before"] is not None:
                dst = ctx.backup_path(p["backup"])
                if _file_sha(dst) != p["sha_before"]:
                    bk.copy_file_durable(step.path, dst)
                    if _file_sha(dst) != p["sha_before"]:
                        raise StepStateError(f"backup of {step.path} does not match it")
            ctx.crash(step.number, "backed-up")
            data = ctx.staged_bytes(step)
            meta = p.get("meta_after")
            atomic.atomic_write(
                step.path,
                data,
                mode=meta["mode"] if meta else None,
                before_rename=lambda: ctx.crash(step.number, "temp-written"),
            )
        if p.get("meta_after"):
            _set_meta(step.path, p["meta_after"])
        ctx.crash(step.number, "applied")

    def groupable(self, step: Step) -> bool:
        # a new file only: nothing to back up first, no owner to set after the rename
        return step.params["sha_before"] is None and not step.params.get("meta_after")

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        changed = f"{step.path} changed since the plan was made (neither original nor repaired)"
        if not self.to_do(step, ctx, changed):
            return None
        _remove_temps(step.path, barrier, ctx.listings)  # left by an earlier run killed inside atomic_write
        ctx.crash(step.number, "backed-up")
        tmp = atomic.write_temp(step.path, ctx.staged_bytes(step), sync=False)
        barrier.file(tmp)

        def commit() -> None:
            ctx.crash(step.number, "temp-written")  # the temp file is durable (the barrier), not renamed
            try:
                os.replace(tmp, step.path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            barrier.folder(os.path.dirname(step.path))
            ctx.crash(step.number, "applied")

        return commit

    def undo(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        _remove_temps(step.path)
        sha = _file_sha(step.path)
        if p["sha_before"] is None:
            if sha is not None:
                os.unlink(step.path)
                fsync_dir(os.path.dirname(step.path))
            return
        if sha != p["sha_before"]:
            data = Path(ctx.backup_path(p["backup"])).read_bytes()
            if bk.sha256_bytes(data) != p["sha_before"]:
                raise StepStateError(f"the backup of {step.path} is damaged; cannot restore it")
            atomic.atomic_write(step.path, data, mode=p["meta_before"]["mode"])
        _set_meta(step.path, p["meta_before"])

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        return int(step.params.get("size_before") or 0) + int(step.params["size_after"])

    def live_cost(self, step: Step) -> int:
        return int(step.params["size_after"])

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return int(step.params.get("size_before") or 0)  # the original, unlinked by the rename


class TruncateFile(Operation):
    """params: size_before, size_after, tail_sha, backup (rel of the tail file)."""

    op = "truncate"

    def _tail_ok(self, step: Step, ctx: StepContext) -> bool:
        return _file_sha(ctx.backup_path(step.params["backup"])) == step.params["tail_sha"]

    def state(self, step: Step, ctx: StepContext) -> str:
        p = step.params
        try:
            size = os.stat(step.path).st_size
        except FileNotFoundError:
            return OTHER
        if size == p["size_before"]:
            tail = bk.sha256_file(step.path, p["size_after"], p["size_before"] - p["size_after"])
            return BEFORE if tail == p["tail_sha"] else OTHER
        if size == p["size_after"]:
            return AFTER if self._tail_ok(step, ctx) else OTHER
        if p["size_after"] < size < p["size_before"]:
            return PARTIAL  # an undo that was interrupted while writing the tail back
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == PARTIAL:
            self.undo(step, ctx)
            s = self.state(step, ctx)
        if s != BEFORE:
            raise StepStateError(f"{step.path} changed since the plan was made")
        if not self._tail_ok(step, ctx):
            # holes stay holes: a sparse .log's tail is not written out as real zeros (issue 24)
            bk.copy_range_durable(
                step.path, ctx.backup_path(p["backup"]), p["size_after"], p["size_before"] - p["size_after"]
            )
            if not self._tail_ok(step, ctx):
                raise StepStateError(f"the backup of the tail of {step.path} does not match it")
        ctx.crash(step.number, "backed-up")
        fd = os.open(step.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, p["size_after"])
            os.fsync(fd)
        finally:
            os.close(fd)
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        p = step.params
        size = os.stat(step.path).st_size
        if size == p["size_before"]:
            return
        if not self._tail_ok(step, ctx):
            raise StepStateError(f"the backup of the tail of {step.path} is missing or damaged")
        fd = os.open(step.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.ftruncate(fd, p["size_after"])
            fin = open_regular(ctx.backup_path(p["backup"]))
            try:
                copy_range_sparse(fin, fd, 0, None, p["size_after"])  # holes come back as holes
            finally:
                os.close(fin)
            os.fsync(fd)
        finally:
            os.close(fd)

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        """The tail's data bytes: its holes take no space in the backup."""
        p = step.params
        try:
            fd = open_regular(step.path)
        except OSError:
            return int(p["size_before"]) - int(p["size_after"])
        try:
            return data_bytes(fd, int(p["size_after"]), int(p["size_before"]))
        finally:
            os.close(fd)

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return int(step.params["size_before"]) - int(step.params["size_after"])


class MoveToBackup(Operation):
    """Delete with backup. params: backup (rel), size, is_dir."""

    op = "move"

    def state(self, step: Step, ctx: StepContext) -> str:
        live = os.path.lexists(step.path)
        saved = os.path.lexists(ctx.backup_path(step.params["backup"]))
        if live and not saved:
            return BEFORE
        if saved and not live:
            return AFTER
        if live and saved:
            return PARTIAL  # a cross-device copy finished but the source was not yet removed
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        dst = ctx.backup_path(step.params["backup"])
        s = self.state(step, ctx)
        if s == AFTER:
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} is gone and not in the backup")
        if s == PARTIAL:  # redo the copy from the live source, which is intact
            copies.remove_tree(dst)
        bk.move_durable(step.path, dst)
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        dst = ctx.backup_path(step.params["backup"])
        s = self.state(step, ctx)
        if s in (BEFORE, PARTIAL):
            if s == PARTIAL:  # the live source is intact; drop the copy
                copies.remove_tree(dst)
            return
        if s == OTHER:
            raise StepStateError(f"{step.path} is gone and not in the backup")
        bk.move_durable(dst, step.path)

    def backup_cost(self, step: Step, backup_dir: str) -> int:
        if os.path.lexists(step.path) and bk.same_device(step.path, backup_dir):
            return 0
        return int(step.params.get("size") or 0)

    def live_freed(self, step: Step, backup_dir: str) -> int:
        return self.backup_cost(step, backup_dir)  # moved to another file system: freed here


class RenamePath(Operation):
    """params: dst. Never overwrites: a planner moves an existing target to the backup first."""

    op = "rename"

    def state(self, step: Step, ctx: StepContext) -> str:
        src, dst = os.path.lexists(step.path), os.path.lexists(step.params["dst"])
        if src and not dst:
            return BEFORE
        if dst and not src:
            return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        both_or_neither = f"cannot rename {step.path} to {step.params['dst']}: both or neither exist"
        if not self.to_do(step, ctx, both_or_neither):
            return
        copies.rename_durable(step.path, step.params["dst"])
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        s = self.state(step, ctx)
        if s == BEFORE:
            return
        if s != AFTER:
            raise StepStateError(f"cannot rename {step.params['dst']} back to {step.path}")
        copies.rename_durable(step.params["dst"], step.path)


class SetOwnerMode(Operation):
    """params: meta_before, meta_after ({uid, gid, mode})."""

    op = "chmod"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.META}

    def state(self, step: Step, ctx: StepContext) -> str:
        before, after = step.params["meta_before"], step.params["meta_after"]
        m = _meta(step.path)
        if m == after:
            return AFTER
        if m == before:
            return BEFORE
        if m is not None and m == {**after, "mode": before["mode"]}:
            # killed between the chown and the chmod of _set_meta (found by test_external_kill: a
            # SIGKILL right after the journal's plan record): the step is begun, apply finishes it
            return BEFORE
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"owner or mode of {step.path} changed since the plan was made"):
            return
        _set_meta(step.path, step.params["meta_after"], owner_set=lambda: ctx.crash(step.number, "owner-set"))
        ctx.crash(step.number, "applied")

    def undo(self, step: Step, ctx: StepContext) -> None:
        if _meta(step.path) is not None:
            _set_meta(step.path, step.params["meta_before"])


# --- verified copies --------------------------------------------------------------------------------

_progress: list[copies.Progress] = []


@contextlib.contextmanager
def copy_progress(callback: copies.Progress) -> Iterator[None]:
    """Send the byte counts of copies made by the copy operations to ``callback`` while inside."""
    _progress.append(callback)
    try:
        yield
    finally:
        _progress.remove(callback)


def report_copied(n: int) -> None:
    for cb in _progress:
        cb(n)


# verified copies of this process: path -> identity at the time the checksums matched
_verified: dict[str, dict[str, list[int]]] = {}


def manifest_rel(step: Step) -> str:
    """Where (relative to the backup dir) a copy step keeps the checksums of its copy."""
    return step.params.get("manifest") or os.path.join("manifests", f"{step.number:06d}.json")


#: the checksums of every segment a run's ``fetch-remote`` steps restored, one JSON line each (relative to
#: the backup dir): one file appended to, not one created per segment (a step's own manifest file, which
#: a journal of an older logdoctor names, is read first)
FETCHED_REL = os.path.join("manifests", "fetched.jsonl")
_fetched_cache: dict[str, tuple[tuple[int, int, int], dict[int, dict[str, str]]]] = {}
_fetched_lock = threading.Lock()


def _fetched_records(path: str) -> dict[int, dict[str, str]]:
    """{step number: checksums} of :data:`FETCHED_REL` at ``path`` (the last line of a step wins; a line
    torn by a kill is skipped), parsed again only when the file changed."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    ident = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _fetched_lock:
        cached = _fetched_cache.get(path)
        if cached is not None and cached[0] == ident:
            return cached[1]
    records: dict[int, dict[str, str]] = {}
    with open(path, "rb") as fh:
        for line in fh.read().splitlines():
            try:
                rec = json.loads(line)
                records[int(rec["step"])] = dict(rec["checksums"])
            except (ValueError, KeyError, TypeError):
                continue  # torn by a kill while it was written: its step is not done, its file not renamed
    with _fetched_lock:
        _fetched_cache[path] = (ident, records)
    return records


def _append_fetched(
    ctx: StepContext, step: Step, record: dict[str, Any], barrier: atomic.SyncBarrier | None
) -> None:
    """One line of :data:`FETCHED_REL` for ``step`` (after a line a kill tore, on a line of its own), durable
    now, or (with ``barrier``) once the barrier is flushed: the file fsynced once then, not once per line."""
    path = ctx.backup_path(FETCHED_REL)
    line = json.dumps({"step": step.number, **record}, sort_keys=True).encode() + b"\n"
    with atomic.naming(path):
        bk.makedirs_durable(os.path.dirname(path))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            if barrier is None:
                os.fsync(fd)
        finally:
            os.close(fd)
    if barrier is None:
        fsync_dir(os.path.dirname(path))
    else:
        barrier.file_at_flush(path)
        barrier.folder(os.path.dirname(path))


def read_manifest(ctx: StepContext, step: Step) -> dict[str, str] | None:
    try:
        data = json.loads(Path(ctx.backup_path(manifest_rel(step))).read_text())
    except (OSError, ValueError):
        if step.op != FetchRemote.op:
            return None
        return _fetched_records(ctx.backup_path(FETCHED_REL)).get(step.number)
    return data.get("checksums") if isinstance(data, dict) else None


def matches_manifest(path: str, manifest: dict[str, str]) -> bool:
    """Checksums of ``path`` equal the manifest (skipped when this process verified it unchanged)."""
    if not os.path.lexists(path):
        return False
    ident = copies.identity(path)
    if _verified.get(path) == ident and set(ident) == set(manifest):
        return True
    if copies.verify_tree(path, manifest):
        return False
    _verified[path] = ident
    return True


def fingerprint_ok(step: Step, path: str) -> bool:
    """``path`` (a folder or a file) has the sizes and mtimes of ``step.params["fingerprint"]``."""
    if not (os.path.isdir(path) or os.path.isfile(path)):
        return False
    return copies.fingerprint(path) == step.params["fingerprint"]


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

    def unplanned(self, step: Step) -> str | None:
        return None if fingerprint_ok(step, step.path) else "its file sizes or mtimes differ"

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


# --- restoring from the remote tier -----------------------------------------------------------------


class MakeDir(Operation):
    """Create a folder (a restored partition's). params: mode. Undo removes it (empty by then: the steps
    that filled it are undone first)."""

    op = "mkdir"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.META}  # the folder itself; what goes in it is the later steps' concern

    def state(self, step: Step, ctx: StepContext) -> str:
        if not os.path.lexists(step.path):
            return BEFORE
        return AFTER if os.path.isdir(step.path) and not os.path.islink(step.path) else OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not a folder"):
            return
        os.mkdir(step.path, int(step.params.get("mode") or 0o755))
        fsync_dir(os.path.dirname(step.path))
        ctx.crash(step.number, "applied")

    def groupable(self, step: Step) -> bool:
        return True

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        # the folder is made now (the group's later steps write into it); its entry is durable with the
        # group's first flush, before anything is renamed into it
        if self.to_do(step, ctx, f"{step.path} exists and is not a folder"):
            os.mkdir(step.path, int(step.params.get("mode") or 0o755))
            barrier.folder(os.path.dirname(step.path))
            ctx.crash(step.number, "applied")
        return None

    def undo(self, step: Step, ctx: StepContext) -> None:
        if self.state(step, ctx) == AFTER:
            os.rmdir(step.path)
            fsync_dir(os.path.dirname(step.path))


def _remote_segment(source: dict[str, Any]) -> Any:
    from logdoctor.logdir.refs import RemoteSegment, SegmentRef
    from logdoctor.logdir.storage import Storage

    storage, _ = Storage.of(source["storage"])
    remote = RemoteSegment(
        source["layout"],
        source["segment_id"],
        source["storage"],
        manifest=source.get("manifest"),
        indexes=source.get("indexes"),
        private_key=source.get("private_key"),
    )
    return SegmentRef(
        "",
        source["topic"],
        int(source["partition"]),
        int(source["base_offset"]),
        source["log"],
        int(source["object_size"]),
        None,
        storage,
        remote,
    )


FETCH_HASH_NAME = "crc32c"


def fetched_checksum(path: str) -> str:
    """The CRC-32C (hex) of a file a ``fetch-remote`` step wrote: a copy check at memory speed (the
    hardware CRC of :mod:`logdoctor.formats.crc`, several times a cryptographic hash's speed), the
    segment's batches carrying their own CRC-32C besides."""
    from logdoctor.formats.crc import crc32c

    crc = 0
    fd = open_regular(path)
    try:
        while chunk := os.read(fd, copies.CHUNK):
            crc = crc32c(chunk, crc)
    finally:
        os.close(fd)
    return f"{crc:08x}"


def _local_object(source: dict[str, Any]) -> str | None:
    """The path of a segment object that is the segment's bytes on this machine's file system (the
    kafka-local layout in a local store): copied by the kernel. None for any other."""
    from logdoctor.logdir.storage import Storage, local_path

    if source.get("layout") != "kafka-local":
        return None
    storage, _ = Storage.of(source["storage"])
    return storage.path(local_path(source["log"])) if storage.is_local else None


def _buffer_crc(path: str) -> str:
    """:func:`fetched_checksum` read through one mapping (no copy into Python's memory)."""
    from logdoctor.checks.state import read_buffer, release
    from logdoctor.formats.crc import crc32c

    view, handle, _ = read_buffer(path)
    try:
        return f"{crc32c(view):08x}"
    finally:
        release(view, handle)


def _check_restored(path: str, source: dict[str, Any], fetched: str) -> str:
    """The checks of a restored segment before it is renamed into place, in one read of it (a mapping:
    page-cache speed); StepStateError naming the object unless both hold. Returns its CRC-32C.

    - Read-back: the CRC-32C of the whole file equals ``fetched``, the CRC-32C of the bytes that were
      fetched (streamed) or of the source file (a kernel copy, which never hands the bytes to us).
      It covers every byte, the 21 bytes of each batch's header before its CRC'd part (base offset,
      length, partition leader epoch, magic, the CRC field itself) included, which no batch CRC covers;
      and it is the checksum the manifest keeps, by which resume, rollback and verify know the file.
    - Offsets (:func:`logdoctor.formats.records.consecutive_offsets_error`): every batch's offsets right
      after the previous one's, from the segment's base offset, each count fitting its offset range; the
      base offset is outside the batch CRC, so a moved one passes the walk below (issue 48).
    - Batch walk, as LogSegment.recover walks a segment (formats.recovery.rebuild_indexes, its C lane
      without the GIL): whole record batches from the first byte to the last, every CRC matching. It
      checks the object itself (a segment damaged before or at upload, bytes after the last batch, a
      torn last batch), which the read-back cannot see (both sides are the same damaged bytes), so
      that such a segment is never restored below the broker's recovery point, where the broker would
      not check it."""
    from logdoctor.checks.state import crc_checked_prefix, read_buffer, release
    from logdoctor.formats.crc import crc32c
    from logdoctor.formats.records import consecutive_offsets_error
    from logdoctor.formats.recovery import rebuild_indexes

    view, handle, _ = read_buffer(path)
    try:
        digest = f"{crc32c(view):08x}"
        if digest != fetched:
            raise StepStateError(f"the restored {path} does not read back as fetched from {source['log']}")
        built = rebuild_indexes(
            view, int(source["base_offset"]), source=source["log"], crc_checked_until=crc_checked_prefix(view)
        )
        size = len(view)
        offsets = None
        if built.error is None and built.valid_bytes == size:
            offsets = consecutive_offsets_error(view, int(source["base_offset"]), source=source["log"])
    finally:
        release(view, handle)
    if built.error is not None or built.valid_bytes != size or offsets is not None:
        why = built.error or offsets or f"whole batches end at byte {built.valid_bytes} of {size}"
        raise StepStateError(f"{source['log']} (offsets from {source['base_offset']}): {why}; not restored")
    return digest


def _kernel_copy(src: str, fd: int, size: int, step: Step, ctx: StepContext) -> bool:
    """Copy the local file ``src`` into ``fd`` in the kernel (``os.copy_file_range``: no pass through
    Python's memory); False when the file system cannot (nothing written: copy it another way)."""
    try:
        fin = open_regular(src)
    except FileNotFoundError:
        raise StepStateError(f"{src}: the segment object is missing: plan again") from None
    try:
        found = os.fstat(fin).st_size
        if found != size:
            raise StepStateError(f"{src}: the segment has {found} bytes, planned {size}: plan again")
        pos = 0
        while pos < size:
            try:
                n = os.copy_file_range(fin, fd, min(copies.CHUNK, size - pos), pos, pos)
            except OSError as e:
                if pos == 0 and e.errno in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
                    return False
                raise
            if n == 0:
                raise StepStateError(f"{src}: the object ends at byte {pos} of {size}")
            pos += n
            report_copied(n)
            ctx.crash(step.number, "temp-written")
    finally:
        os.close(fin)
    return True


#: what planning read of a segment to fetch, for the fetch in the same process (:func:`hold_planned_read`)
_PLANNED_READS: dict[tuple[str, str, str, str], tuple[Any, Any]] = {}
_PLANNED_LOCK = threading.Lock()


def _planned_key(step: Step) -> tuple[str, str, str, str]:
    source = step.params["source"]
    return (step.path, str(source["storage"]), str(source["log"]), str(source.get("segment_id")))


def hold_planned_read(step: Step, loaded: Any, opened: Any) -> None:
    """Keep, in this process's memory, what planning read of a ``fetch-remote`` step's segment (Aiven's
    manifest and data key ``loaded``; the ``.log`` object of a remote store ``opened``, a RangeReader: its
    size as the store answered, no file descriptor): the step's fetch in this process takes it (once)
    instead of asking the store again. A journal resumed in
    another process has none: its fetch reads the manifest and opens the object afresh, with every check.
    Either way the fetched bytes are checked (short reads, each chunk, the read-back CRC-32C, the batch
    walk: :func:`_check_restored`)."""
    with _PLANNED_LOCK:
        _PLANNED_READS[_planned_key(step)] = (loaded, opened)


def _take_planned_read(step: Step) -> tuple[Any, Any]:
    with _PLANNED_LOCK:
        return _PLANNED_READS.pop(_planned_key(step), (None, None))


class FetchRemote(Operation):
    """Write a new file with a remote-tier segment's original ``.log`` bytes (a restore), streamed in
    ranged reads (:func:`logdoctor.logdir.remote_reader.open_remote_log`: never the whole object in
    memory; an object on this machine's file system that is the segment's bytes: ``os.copy_file_range``),
    made under ``<path>.logdoctor-partial``, fsynced, read back and walked (:func:`_check_restored`), its
    checksum (:func:`fetched_checksum`) saved in the backup dir (a line of :data:`FETCHED_REL`), then
    renamed into place. The target must not exist (a restore never replaces a file). Undo removes it.

    params: source {storage, layout, segment_id, topic, partition, base_offset, log, object_size,
    manifest, indexes, private_key}, size (the segment's bytes), manifest (rel)|None.
    """

    op = "fetch-remote"

    def watched(self, step: Step) -> dict[str, str]:
        return {step.path: snap.SEGMENT}  # a segment: its size and the hash of its ends (snapshot doc)

    def state(self, step: Step, ctx: StepContext) -> str:
        if not os.path.lexists(step.path):
            return BEFORE
        manifest = read_manifest(ctx, step)
        if manifest is not None and set(manifest) == {"."}:
            ident = copies.identity(step.path)
            if _verified.get(step.path) == ident or fetched_checksum(step.path) == manifest["."]:
                _verified[step.path] = ident
                return AFTER
        return OTHER

    def apply(self, step: Step, ctx: StepContext) -> None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not the restored segment"):
            return
        partial = self._fetch(step, ctx, None)
        copies.rename_durable(partial, step.path)
        ctx.crash(step.number, "applied")

    def groupable(self, step: Step) -> bool:
        return True

    def prepare(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier) -> Callable[[], None] | None:
        if not self.to_do(step, ctx, f"{step.path} exists and is not the restored segment"):
            return None
        partial = step.path + PARTIAL_SUFFIX
        source = step.params["source"]
        fetched, local = self._copy(step, ctx, barrier, partial, source)
        try:
            ctx.settle()  # the step before's check: its failure stops the group here
        except BaseException:
            copies.remove_tree(partial)
            raise
        # this segment's checks (and its manifest) on the group's check thread while the next is fetched;
        # every check is settled before the group's barrier, so before anything is renamed into place
        ctx.check_behind(lambda: self._check(step, ctx, barrier, partial, source, fetched, local))

        def commit() -> None:
            os.rename(partial, step.path)
            barrier.folder(os.path.dirname(step.path))
            ctx.crash(step.number, "applied")

        return commit

    def _fetch(self, step: Step, ctx: StepContext, barrier: atomic.SyncBarrier | None) -> str:
        """The segment in ``<path>.logdoctor-partial``, checked, its manifest saved: durable now, or (with
        ``barrier``) once the barrier is flushed. Returns the partial file's path."""
        partial = step.path + PARTIAL_SUFFIX
        source = step.params["source"]
        fetched, local = self._copy(step, ctx, barrier, partial, source)
        self._check(step, ctx, barrier, partial, source, fetched, local)
        return partial

    def _copy(
        self,
        step: Step,
        ctx: StepContext,
        barrier: atomic.SyncBarrier | None,
        partial: str,
        source: dict[str, Any],
    ) -> tuple[str | None, str | None]:
        """The segment's bytes into ``partial`` (fsynced now, or registered in ``barrier``): (the CRC-32C of
        the bytes fetched, None for a kernel copy; the local object copied by the kernel, else None)."""
        copies.remove_tree(partial)
        size = int(step.params["size"])
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            try:
                local = _local_object(source)
                if local is not None and _kernel_copy(local, fd, size, step, ctx):
                    fetched = None
                else:
                    local, fetched = None, self._stream(step, ctx, fd, source, size)
                if barrier is None:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if barrier is not None:
                barrier.file(partial)  # written out by the disk while it is checked
        except BaseException:
            copies.remove_tree(partial)  # a failed fetch leaves nothing in the log dir
            raise
        return fetched, local

    def _check(
        self,
        step: Step,
        ctx: StepContext,
        barrier: atomic.SyncBarrier | None,
        partial: str,
        source: dict[str, Any],
        fetched: str | None,
        local: str | None,
    ) -> None:
        """The checks of the fetched ``partial`` (:func:`_check_restored`; a kernel copy's source read
        for its CRC-32C after the copy: a source changed meanwhile does not match), then its manifest
        saved (durable now, or once ``barrier`` is flushed). A failure removes the partial file."""
        try:
            if fetched is None:
                assert local is not None
                fetched = _buffer_crc(local)
            digest = _check_restored(partial, source, fetched)
        except BaseException:
            copies.remove_tree(partial)  # a failed fetch leaves nothing in the log dir
            raise
        record = {"source": source["log"], "copy": step.path, "hash": FETCH_HASH_NAME}
        _append_fetched(ctx, step, {**record, "checksums": {".": digest}}, barrier)
        _verified[step.path] = copies.identity(partial)
        ctx.crash(step.number, "backed-up")

    def _stream(self, step: Step, ctx: StepContext, fd: int, source: dict[str, Any], size: int) -> str:
        """Stream the segment's original bytes into ``fd`` in ranged reads; their CRC-32C (hex)."""
        from logdoctor.errors import FormatError
        from logdoctor.formats.crc import crc32c
        from logdoctor.logdir.remote_aiven import AivenLogReader
        from logdoctor.logdir.remote_reader import open_remote_log

        crc = 0
        try:
            with open_remote_log(_remote_segment(source), *_take_planned_read(step)) as reader:
                if reader.size != size:
                    raise StepStateError(
                        f"{source['log']}: the segment has {reader.size} bytes, planned {size}: plan again"
                    )
                if isinstance(reader, AivenLogReader):
                    return self._stream_spans(step, ctx, fd, reader, source, size)
                pos = 0
                while pos < size:
                    chunk = reader.read_at(pos, min(copies.CHUNK, size - pos))
                    if not chunk:
                        raise StepStateError(f"{source['log']}: the object ends at byte {pos} of {size}")
                    crc = crc32c(chunk, crc)
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
                    pos += len(chunk)
                    report_copied(len(chunk))
                    ctx.crash(step.number, "temp-written")
        except FormatError as e:
            raise StepStateError(f"{source['log']} (offsets from {source['base_offset']}): {e}") from None
        return f"{crc:08x}"

    def _stream_spans(
        self, step: Step, ctx: StepContext, fd: int, reader: Any, source: dict[str, Any], size: int
    ) -> str:
        """An Aiven segment, span by span on the reader's threads (``AivenLogReader.for_each_span``): each
        span detransformed into a reused buffer, its CRC-32C taken and written at its position
        (``os.pwrite``) on the thread that detransformed it, while the next span is read and
        decompressed; the spans' CRCs joined in order. Their CRC-32C (hex)."""
        from logdoctor.formats.crc import crc32c, crc32c_combine

        def work(pos: int, view: memoryview) -> int:
            crc = crc32c(view)
            while view:
                n = os.pwrite(fd, view, pos)
                view, pos = view[n:], pos + n
            return crc

        state = {"crc": 0, "end": 0}

        def done(pos: int, length: int, crc: int) -> None:
            assert pos == state["end"]
            state["crc"] = crc32c_combine(state["crc"], crc, length)
            state["end"] = pos + length
            report_copied(length)
            ctx.crash(step.number, "temp-written")

        reader.for_each_span(work, done, span=copies.CHUNK)
        if state["end"] != size:
            raise StepStateError(f"{source['log']}: the object ends at byte {state['end']} of {size}")
        return f"{state['crc']:08x}"

    def undo(self, step: Step, ctx: StepContext) -> None:
        copies.remove_tree(step.path + PARTIAL_SUFFIX)
        if self.state(step, ctx) == OTHER:
            raise StepStateError(f"{step.path} is not the restored segment: it is kept")
        copies.remove_tree(step.path)
        _verified.pop(step.path, None)

    def live_cost(self, step: Step) -> int:
        return int(step.params.get("size") or 0)


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
    from logdoctor.checks.state import crc_checked_prefix, read_buffer, release
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


OPERATIONS: dict[str, Operation] = {
    o.op: o
    for o in (
        WriteFile(),
        TruncateFile(),
        MoveToBackup(),
        RenamePath(),
        SetOwnerMode(),
        CopyTree(),
        CopyPartition(),
        RemoveCopied(),
        MakeDir(),
        FetchRemote(),
        RebuildIndex(),
    )
}
"""Every operation a journal can name, by ``Step.op``: a static table, so resume and rollback of any
plan (repair or an operator procedure) need no other import.

Crash points (``LOGDOCTOR_CRASH_AT=N:PHASE``) of the procedures' operations: copy-partition
``temp-written`` (half the partial copy written), ``backed-up`` (partial copy complete and verified,
manifest saved, not renamed), ``applied`` (renamed); remove-copied ``backed-up`` (copy checked),
``temp-written`` (renamed to the ``-delete`` name, not removed), ``applied`` (removed); rebuild-index
``backed-up`` (rebuilt, its sha256 saved, nothing written), ``temp-written`` (temp file written, not renamed),
``applied``.
"""


def operation(step: Step) -> Operation:
    op = OPERATIONS.get(step.op)
    if op is None:
        raise StepStateError(f"unknown operation {step.op!r} in step {step.number}")
    return op


# --- builders ---------------------------------------------------------------------------------------


class BackupNames:
    """Unique backup paths for one plan: ``files/<n>-<log dir>/<relative path>`` (``~k`` if taken)."""

    def __init__(self, log_dirs: list[str]) -> None:
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        self.used: set[str] = set()

    def claim(self, kind: str, path: str, suffix: str = "") -> str:
        label, rel = bk.relative_to_log_dir(os.path.abspath(path), self.log_dirs)
        base = os.path.join(kind, label, rel if rel != "." else "_log_dir_") + suffix
        name, k = base, 1
        while name in self.used:
            k += 1
            name = f"{base}~{k}"
        self.used.add(name)
        return name


def write_file(
    path: str, data: bytes, names: BackupNames, *, meta_after: dict[str, int] | None = None
) -> Step:
    """Replace (or create) ``path`` with ``data``; the original goes to the backup."""
    try:
        before = Path(path).read_bytes()
    except FileNotFoundError:
        before = None
    params: dict[str, Any] = {
        "sha_before": bk.sha256_bytes(before) if before is not None else None,
        "size_before": len(before) if before is not None else None,
        "meta_before": _meta(path),
        "sha_after": bk.sha256_bytes(data),
        "size_after": len(data),
        "backup": names.claim("files", path) if before is not None else None,
        "staged": None,  # set when the plan is staged
        "meta_after": meta_after,
    }
    return Step("write", path, params, data=data)


def truncate_file(path: str, size_after: int, names: BackupNames) -> Step:
    size = os.stat(path).st_size
    if not 0 <= size_after <= size:
        raise ValueError(f"cannot truncate {path} ({size} bytes) to {size_after}")
    tail_sha = bk.sha256_file(path, size_after, size - size_after)
    return Step(
        "truncate",
        path,
        {
            "size_before": size,
            "size_after": size_after,
            "tail_sha": tail_sha,
            "backup": names.claim("tails", path, f".{size_after}.tail"),
        },
    )


def delete_with_backup(path: str, names: BackupNames) -> Step:
    st = os.lstat(path)
    is_dir = stat.S_ISDIR(st.st_mode)
    size = sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file()) if is_dir else st.st_size
    return Step("move", path, {"backup": names.claim("files", path), "size": size, "is_dir": is_dir})


def rename_path(src: str, dst: str) -> Step:
    return Step("rename", src, {"dst": dst})


def set_owner_mode(path: str, uid: int, gid: int, mode: int) -> Step:
    before = _meta(path)
    if before is None:
        raise FileNotFoundError(path)
    return Step("chmod", path, {"meta_before": before, "meta_after": {"uid": uid, "gid": gid, "mode": mode}})


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


__all__ = [
    "AFTER",
    "BEFORE",
    "OPERATIONS",
    "OTHER",
    "PARTIAL",
    "PARTIAL_SUFFIX",
    "BackupNames",
    "CopyTree",
    "Operation",
    "StepContext",
    "StepStateError",
    "copy_progress",
    "copy_tree",
    "delete_with_backup",
    "fingerprint_ok",
    "hold_planned_read",
    "manifest_rel",
    "matches_manifest",
    "operation",
    "read_manifest",
    "rename_path",
    "report_copied",
    "set_owner_mode",
    "truncate_file",
    "write_file",
]


def make_dir(path: str, mode: int = 0o755) -> Step:
    """Create the folder ``path`` (which must not exist)."""
    return Step(MakeDir.op, path, {"mode": mode})


def fetch_remote(path: str, source: dict[str, Any], size: int) -> Step:
    """Write the new file ``path`` with the original bytes of the remote segment ``source`` (see
    :class:`FetchRemote`)."""
    return Step(FetchRemote.op, path, {"source": source, "size": size, "manifest": None})


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

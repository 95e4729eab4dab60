"""What every step kind of a plan keeps, and what the apply engine gives it.

Invariants of every operation (:class:`Operation`):

- It can tell, from the file system and ``step.params`` alone, whether its target is still in the
  "before" state, already in the "after" state, or neither (someone else changed it): that is what
  makes ``--resume`` (redo what is not "after") and ``--rollback`` (undo what is not "before") safe after
  a crash at any point.
- ``apply`` and ``undo`` are idempotent; each keeps what it removes in the backup dir before it removes
  it, and ``verify`` (its post-condition) holds before the step is journaled done.

A new step kind (a new writing command's own operation) is a subclass of :class:`Operation` added to
:data:`logdoctor.repair.steps.registry.OPERATIONS` under its ``op`` name, and provides:

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

Each step kind's module also holds its builder, which creates the steps with their "before" fingerprint
taken now, for the planner and for the operator procedures (moving partitions between log dirs, copying
a leader's partition to a follower). :class:`BackupNames` gives a plan's steps their unique backup paths.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import fsync_dir
from logdoctor.logdir.files import read_range
from logdoctor.repair import backup as bk
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


def _file_sha(path: str) -> str | None:
    try:
        return bk.sha256_file(path)
    except FileNotFoundError:
        return None


def _temp_names(folder: str) -> list[str]:
    """The names in ``folder`` that atomic_write's temp files have (``.<name>.<random>.tmp``)."""
    try:
        return [n for n in os.listdir(folder) if n.startswith(".") and n.endswith(".tmp")]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _remove_temps(
    path: str, barrier: atomic.SyncBarrier | None = None, listings: dict[str, list[str]] | None = None
) -> None:
    """Remove temp files atomic_write leaves when killed between writing and renaming (and make the
    removal durable: now, or when ``barrier`` is flushed). ``listings``: the names in each folder, listed
    once for a group of steps (:attr:`StepContext.listings`; no two steps of a group write the same
    path, so a temp of this path's name is one an earlier run left, listed before the group began)."""
    folder, name = os.path.split(path)
    if listings is None:
        names = _temp_names(folder)  # listed now (a glob's fnmatch of every name cost ~10x more)
    else:
        if folder not in listings:
            listings[folder] = _temp_names(folder)
        names = listings[folder]
    head = f".{name}."  # the glob ".<name>.*.tmp": every listed name ends with ".tmp"
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

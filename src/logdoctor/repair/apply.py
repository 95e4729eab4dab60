"""Run a plan: apply it, resume it after a crash, or roll it back, with the journal as the record.

Apply, in order, writing nothing until every check passed:
1. hold logdoctor's own lock of every log dir (a second writing run of it is refused, 75; a command
   takes it before its planning scan: :func:`hold_dir_locks`); refuse when a log dir's lock is held by
   another process (a broker), when a step would touch a path outside the log dirs, when the backup
   dir is in a log dir or not empty, when the targets are no longer as planned, when another run's
   journal of the same log dir is unfinished (:func:`check_journals`), or when the backup dir (or a
   log dir) lacks the space the steps need, in order (:mod:`logdoctor.repair.space`);
2. take a snapshot of every path the steps watch (:mod:`logdoctor.repair.snapshot`);
3. stage new contents in the backup dir, then write the journal's plan record with the snapshots
   (the commit point);
4. hold every log dir's lock (as the broker does) for the whole run;
5. for each step: journal ``begin``, apply (backup first, then the atomic change), verify,
   journal ``done`` with the snapshot of its paths after it.
A file system that fills up while steps run (another writer took the space checked in 1) undoes the
run's steps and raises NoSpaceError naming the path: nothing is left half-done.

Resume and rollback pass one check before they write anything, for every step of every command's
plan (repair, move-partition, sync-replica, and any operation added to ``steps.registry.OPERATIONS``):
the journal is not rolled back already, no later run of the same log dir stands on it, no broker
holds a lock, and every watched path is in the state the journal recorded (:func:`check_recorded`);
else the whole run is refused (:class:`PlanChangedError`, exit 65) naming the file and what differs.

Crash testing: ``LOGDOCTOR_CRASH_AFTER_STEP=N`` SIGKILLs the process right after step N is
journaled done; ``LOGDOCTOR_CRASH_AT=N:PHASE`` at a phase of step N: ``begin`` (journaled begin,
nothing changed), ``backed-up`` (original saved), ``temp-written`` (atomic write's temp file
fsynced, not renamed), ``owner-set`` (a chmod step's new owner set, its mode not yet), ``applied``
(change made, not verified), ``synced`` (a group of steps that share their durability, ``_run_group``:
all prepared and fsynced, none renamed into place), ``verified``, ``journaled``.

Lock testing: ``LOGDOCTOR_PAUSE_LOCKED=FIFO`` makes a writing command stop right after it took every log
dir's own lock (:func:`hold_dir_locks`, before its planning scan) until the FIFO's writer closes it: the
test opens the FIFO for writing (which returns once this run holds the locks), runs a second command, and
closes it to let this one go on. Two runs are thus made to overlap by the kernel, not by timing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import shlex
import shutil
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.logdir.atomic import SyncBarrier, fsync_dir
from logdoctor.logdir.lock import hold_dir_lock, hold_lock
from logdoctor.logdir.names import LOCK_FILE
from logdoctor.repair import backup as bk
from logdoctor.repair import safety, space
from logdoctor.repair import snapshot as snap
from logdoctor.repair.journal import (
    JOURNAL_NAME,
    Journal,
    JournalError,
    JournalInfo,
    JournalState,
    journal_info,
    journals_near,
    read_journal,
)
from logdoctor.repair.plan import Plan, Step
from logdoctor.repair.steps.base import BEFORE, OTHER, PARTIAL_SUFFIX, StepContext, StepStateError
from logdoctor.repair.steps.registry import operation

CRASH_AFTER_STEP_ENV = "LOGDOCTOR_CRASH_AFTER_STEP"
CRASH_AT_ENV = "LOGDOCTOR_CRASH_AT"
PAUSE_LOCKED_ENV = "LOGDOCTOR_PAUSE_LOCKED"
PHASES = ("begin", "backed-up", "temp-written", "owner-set", "applied", "synced", "verified", "journaled")


class RefusedError(Exception):
    """Apply refused before writing anything (see the message)."""


class PlanChangedError(RefusedError):
    """A log dir is not as the plan expects: it changed since planning (nothing written; plan again)."""


class FilesChangedError(PlanChangedError):
    """A file a step changes is not in the state the journal recorded (nothing written)."""


class JournalFinishedError(PlanChangedError):
    """The journal's run was rolled back: it cannot be resumed or rolled back again."""


class OtherJournalError(PlanChangedError):
    """Another run's journal of the same log dir stands in the way (unfinished, or later)."""


@dataclass(frozen=True, slots=True)
class CrashHook:
    """Kill this process with SIGKILL at a chosen point (tests of crash safety)."""

    after_step: int | None = None
    at: tuple[int, str] | None = None

    @classmethod
    def from_env(cls) -> CrashHook:
        after = os.environ.get(CRASH_AFTER_STEP_ENV)
        at = os.environ.get(CRASH_AT_ENV)
        point = None
        if at:
            n, _, phase = at.partition(":")
            if phase not in PHASES:
                raise ValueError(f"{CRASH_AT_ENV}: phase must be one of {', '.join(PHASES)}")
            point = (int(n), phase)
        return cls(int(after) if after else None, point)

    def __call__(self, step: int, phase: str) -> None:
        if self.at == (step, phase) or (phase == "journaled" and self.after_step == step):
            os.kill(os.getpid(), signal.SIGKILL)


@dataclass(slots=True)
class RunResult:
    status: str  # applied | rolled-back | failed | nothing-to-do
    journal: str | None
    backup_dir: str
    steps_total: int
    steps_run: int = 0
    error: str | None = None
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "rolled-back", "nothing-to-do")

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "log"}


def _hold_locks(log_dirs: list[str], hold: Callable[[str], Any] = hold_lock) -> contextlib.ExitStack:
    """Hold every log dir's lock (the broker's; ``hold_dir_lock``: logdoctor's own), released when the
    returned stack closes."""
    stack = contextlib.ExitStack()
    try:
        for d in log_dirs:
            stack.enter_context(hold(d))
    except BaseException:
        stack.close()
        raise
    return stack


def _drop_created_locks(dirs: list[str]) -> None:
    """Remove ``.lock`` files the repair created (the tree is left as it was found)."""
    for d in dirs:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(d, LOCK_FILE))
            fsync_dir(d)


def _first_missing(path: str) -> str | None:
    """The topmost folder of ``path`` that does not exist yet (``path`` itself, or a parent), else None."""
    top = None
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        top = p
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return top


def _remove_staged(backup_dir: str, made: str | None) -> None:
    """Before the commit point only what this run staged is in the backup dir (it had to be new or
    empty): remove the folders it made (``made``: the topmost), or empty the one it was given."""
    if made:
        shutil.rmtree(backup_dir, ignore_errors=True)
        p = os.path.dirname(os.path.abspath(backup_dir))
        top = os.path.abspath(made)
        while len(p) >= len(top):  # the parents it made, each only when empty (another run may use one)
            try:
                os.rmdir(p)
            except OSError:
                break
            p = os.path.dirname(p)
        return
    try:
        names = os.listdir(backup_dir)
    except OSError:
        return
    for name in names:  # each on its own: one that cannot be removed leaves the others to be
        path = os.path.join(backup_dir, name)
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


def _check_paths(plan: Plan) -> None:
    for step in plan.steps:
        for p in step.touched():
            safety.resolve_inside(p, plan.log_dirs)


def check_preconditions(plan: Plan) -> None:
    """Every step whose paths no earlier step touches must find its target as planned."""
    ctx = StepContext(plan.backup_dir)
    touched: set[str] = set()
    for step in plan.steps:
        paths = step.touched()
        if not touched.intersection(paths):
            op = operation(step)
            state = op.state(step, ctx)
            if state != BEFORE:
                raise PlanChangedError(
                    f"{step.path} is not as planned (step {step.number} {step.op}: {state}); plan again"
                )
            why = op.unplanned(step)
            if why is not None:
                raise PlanChangedError(
                    f"{step.path} is not as planned (step {step.number} {step.op}): {why}; plan again"
                )
        touched.update(paths)


# --- the recorded state of every path: one check for every step of every command ---------------------


def _watched(step: Step) -> dict[str, str]:
    return operation(step).watched(step)


def commit_snapshots(plan: Plan) -> dict[str, snap.Snapshot]:
    """The state of every path the plan watches, as it is now (taken just before the commit point)."""
    levels: dict[str, str] = {}
    for step in plan.steps:
        for p, level in _watched(step).items():
            if levels.get(p) in (None, snap.META):
                levels[p] = snap.CONTENT if level == snap.SOURCE else level
    return {p: snap.snapshot(p, level) for p, level in levels.items()}


def _after_snapshots(step: Step) -> dict[str, snap.Snapshot]:
    return {
        p: snap.snapshot(p, snap.CONTENT if level == snap.SOURCE else level)
        for p, level in _watched(step).items()
    }


def _inside_rels(root: str, paths: set[str]) -> set[str]:
    prefix = root.rstrip(os.sep) + os.sep
    return {os.path.relpath(p, root) for p in paths if p.startswith(prefix)}


def check_recorded(plan: Plan, state: JournalState, mode: str, journal: str = "") -> None:
    """Before a resume (``mode="resume"``) or rollback writes anything: every path a step of the plan
    watches must be in the state the journal recorded, else :class:`FilesChangedError` naming the first
    one that differs and how (the whole run is refused, nothing written).

    Per path, the steps that watch it in plan order decide what it must be like:

    - resume: the first step not done yet. Not begun: the ``after`` snapshot of the last done step on
      the path, or the plan record's snapshot when none is done. Begun but not done (killed inside it,
      or undone by an interrupted rollback): the step's own classification must not be "other". No
      step left: the ``after`` snapshot of the last one (a copy's source too: what is left to do builds
      on the copy made of it).
    - rollback: the newest step begun and not undone. Done (and no newer step on the path undone): its
      ``after`` snapshot. Otherwise (inside it, or after an undo of a newer one): its classification
      must not be "other". A path a step only reads (a copy's source) is not the rollback's concern.

    A journal of an older logdoctor (no snapshots) gets the classification check only.
    """
    ctx = StepContext(plan.backup_dir)
    snaps: dict[str, snap.Snapshot] = state.header.get("snapshots") or {}
    after: dict[int, dict[str, snap.Snapshot]] = {}
    for r in state.records:
        if r.get("t") == "done" and isinstance(r.get("after"), dict):
            after[int(r["step"])] = r["after"]
    done, begun, undone = state.done, state.begun, state.undone
    events: dict[str, list[tuple[Step, str]]] = {}
    for step in plan.steps:
        for p, level in _watched(step).items():
            events.setdefault(p, []).append((step, level))
    content = {p for p, evs in events.items() if any(lv != snap.META for _, lv in evs)}
    where = f" {journal}" if journal else ""

    def flux(step: Step, p: str) -> None:
        s = operation(step).state(step, ctx)
        if s == OTHER:
            raise FilesChangedError(
                f"{p} is neither as step {step.number} ({step.op}) of the run found it nor as it leaves it: "
                f"it changed after the run of the journal{where}"
            )

    def exact(p: str, recorded: snap.Snapshot | None, step: Step | None, what: str) -> None:
        if recorded is None:
            if step is not None:
                flux(step, p)
            return
        if "size" not in recorded and "tree" not in recorded:
            level = snap.META
        else:
            level = snap.SEGMENT if recorded.get("ends") else snap.CONTENT
        diff = snap.differs(recorded, snap.snapshot(p, level), _inside_rels(p, content))
        if diff is not None:
            raise FilesChangedError(f"{p} is not as the journal{where} recorded it {what}: {diff}")

    for p, evs in events.items():
        if mode == "resume":
            pending = [(s, lv) for s, lv in evs if s.number not in done]
            first = pending[0][0] if pending else None
            if first is not None and first.number in begun:
                flux(first, p)
                continue
            prior = [s for s, _ in evs if s.number in done and (first is None or s.number < first.number)]
            if prior:
                last = prior[-1]
                exact(p, after.get(last.number, {}).get(p), last, f"after step {last.number} ({last.op})")
            elif first is not None:
                exact(p, snaps.get(p), first, "before the run")
        else:
            live = [s for s, lv in evs if lv != snap.SOURCE and s.number in begun]
            if not live:
                continue
            kept = [s for s in live if s.number not in undone]
            if not kept:
                continue  # every step on it undone: as the run found it
            last = kept[-1]
            newer_undone = any(s.number > last.number for s in live if s.number in undone)
            if last.number in done and not newer_undone:
                exact(p, after.get(last.number, {}).get(p), last, f"after step {last.number} ({last.op})")
            else:
                flux(last, p)


def check_journals(
    plan: Plan, *, journal: str | None = None, allow_unfinished: bool = False
) -> list[JournalInfo]:
    """The other runs' journals of the plan's log dirs (found beside each log dir and beside the backup
    dir: :func:`logdoctor.repair.journal.journals_near`), checked before anything is written:

    - a new run (``journal=None``) is refused while one of them is unfinished (neither applied to its
      end nor rolled back), unless ``allow_unfinished``: :class:`OtherJournalError` with the commands
      that finish or undo it;
    - a resume or rollback of ``journal`` is refused when a run that started after it changed the same
      log dir and was not rolled back (its files now build on that later run: undo that one first).

    Returns the unfinished ones (for the plan's note)."""
    if journal is None:
        return check_unfinished(plan.log_dirs, plan.backup_dir, allow_unfinished=allow_unfinished)
    dirs = {os.path.realpath(d) for d in plan.log_dirs}
    others = _other_journals(dirs, plan.backup_dir, journal)
    mine = journal_info(journal)
    later = [i for i in others if i.started_ms > mine.started_ms and i.status != "rolled-back"]
    if later:
        k = later[-1]
        raise OtherJournalError(
            f"a later run changed {', '.join(sorted(dirs.intersection(k.log_dirs)))} after this one "
            f"(journal {k.path}, {k.status or 'unfinished'}): this journal no longer describes the files; "
            f"undo that run first with `logdoctor {k.command} --rollback {shlex.quote(k.path)} --apply`"
        )
    return [i for i in others if not i.finished]


def _other_journals(dirs: set[str], backup_dir: str | None, journal: str | None) -> list[JournalInfo]:
    near = [os.path.dirname(d.rstrip(os.sep)) for d in dirs]
    if backup_dir:
        near.append(os.path.dirname(os.path.abspath(backup_dir).rstrip(os.sep)))
    me = os.path.realpath(journal) if journal else None
    return [
        i for i in journals_near(near) if dirs.intersection(i.log_dirs) and os.path.realpath(i.path) != me
    ]


def check_unfinished(
    log_dirs: list[str] | list[os.PathLike[str]] | list[str | os.PathLike[str]],
    backup_dir: str | None = None,
    *,
    allow_unfinished: bool = False,
) -> list[JournalInfo]:
    """The unfinished journals of other runs of ``log_dirs``; :class:`OtherJournalError` (65) unless
    ``allow_unfinished``. A writing command calls it before its planning scan (once it holds the dirs'
    own lock), and the engine again before it writes."""
    dirs = {os.path.realpath(d) for d in log_dirs}
    unfinished = [i for i in _other_journals(dirs, backup_dir, None) if not i.finished]
    if unfinished and not allow_unfinished:
        raise OtherJournalError(unfinished_note(unfinished[0]) + "; or plan with --allow-unfinished-journal")
    return unfinished


def unfinished_note(info: JournalInfo) -> str:
    """One line: an unfinished run of the same log dir, and the commands that finish or undo it."""
    q = shlex.quote(info.path)
    return (
        f"an unfinished run changed {', '.join(info.log_dirs)} ({info.steps_done} of {info.steps_total} "
        f"step(s) done, {info.status or 'interrupted'}; journal {info.path}): finish it with "
        f"`logdoctor {info.command} --resume {q} --apply` or undo it with "
        f"`logdoctor {info.command} --rollback {q} --apply` first"
    )


def note_unfinished(plan: Plan) -> list[JournalInfo]:
    """Add a note to the plan for each unfinished journal of its log dirs (for the dry run)."""
    found = check_journals(plan, allow_unfinished=True)
    for info in found:
        plan.notes.append(unfinished_note(info))
    return found


def _refuse_finished(state: JournalState, journal: str | os.PathLike[str]) -> None:
    if state.status == "rolled-back":
        raise JournalFinishedError(
            f"{journal}: this run was rolled back already; it cannot be resumed or rolled back again "
            "(plan a new one)"
        )


STAGED_PACK = os.path.join("staged", "steps.bin")


def _stage(plan: Plan, barrier: SyncBarrier | None = None) -> None:
    """Every write step's new bytes into the backup dir, one after the other in one file
    (:data:`STAGED_PACK`; each step's ``staged`` names it and ``staged_at`` its ``[offset, size]`` there),
    made durable at once (one file and folder fsync before the journal's plan record, the commit point,
    names them; now, or when ``barrier`` is flushed): one file created and fsynced for a plan of many small
    writes (a restore's indexes and checkpoints), not one each. A step's bytes are checked against its
    ``sha_after`` when read back (:meth:`~logdoctor.repair.steps.base.StepContext.staged_bytes`)."""
    parts: list[bytes] = []
    pos = 0
    for step in plan.steps:
        if step.op == "write":
            if step.data is None:
                raise ValueError(f"write step {step.number} has no data")
            step.params["staged"] = STAGED_PACK
            step.params["staged_at"] = [pos, len(step.data)]
            parts.append(step.data)
            pos += len(step.data)
    if parts:
        bk.write_durable(os.path.join(plan.backup_dir, STAGED_PACK), b"".join(parts), barrier)


def _fail(result: RunResult, journal: Journal, e: Exception, status: str = "failed") -> RunResult:
    """Record a run stopped by ``e`` in ``result`` and as the journal's ``end`` record (``status``)."""
    result.status, result.error = "failed", f"{type(e).__name__}: {e}"
    journal.append({"t": "end", "status": status, "error": result.error})
    return result


def _recheck(plan: Plan, state: JournalState) -> tuple[list[str], list[str]]:
    """Before a resume or rollback: refuse again as apply did (a broker holds a lock, a path outside the
    log dirs); (the log dirs, the ``.lock`` files the first run created)."""
    log_dirs = [os.path.abspath(d) for d in plan.log_dirs]
    safety.refuse_if_locked(log_dirs)
    _check_paths(plan)
    return log_dirs, list(state.header.get("created_locks") or [])


def _run_forward(
    plan: Plan,
    journal: Journal,
    ctx: StepContext,
    done: set[int],
    result: RunResult,
    begun: list[int] | None = None,
) -> None:
    todo = [s for s in plan.steps if s.number not in done]  # done: journaled after it verified
    for group in _groups(todo):
        if len(group) > 1:
            _run_group(group, journal, ctx, result, begun)
            continue
        step = group[0]
        op = operation(step)
        journal.append({"t": "begin", "step": step.number, "op": step.op, "path": step.path})
        if begun is not None:
            begun.append(step.number)
        ctx.crash(step.number, "begin")
        op.apply(step, ctx)
        journal.append(_verified(step, ctx))
        result.steps_run += 1
        ctx.crash(step.number, "journaled")


def _verified(step: Step, ctx: StepContext) -> dict[str, Any]:
    """The journal's ``done`` record of an applied step, once its post-condition holds."""
    if not operation(step).verify(step, ctx):
        raise StepStateError(f"step {step.number} ({step.op} {step.path}) did not verify after applying")
    ctx.crash(step.number, "verified")
    return {"t": "done", "step": step.number, "after": _after_snapshots(step)}


GROUP_STEPS = 256
GROUP_BYTES = 1 << 30


def _groups(steps: list[Step]) -> list[list[Step]]:
    """``steps`` in runs that share their durability (:func:`_run_group`): consecutive steps whose
    operation can be grouped (new files and folders: a restore's segments, indexes, snapshots), no two
    on the same path, at most :data:`GROUP_STEPS` steps and about :data:`GROUP_BYTES` of new bytes (what
    a crash makes the resume redo); every other step alone."""
    out: list[list[Step]] = []
    group: list[Step] = []
    paths: set[str] = set()
    size = 0
    for step in steps:
        op = operation(step)
        touched = set(step.touched())
        if not op.groupable(step):
            if group:
                out.append(group)
            out.append([step])
            group, paths, size = [], set(), 0
            continue
        cost = op.live_cost(step)
        if group and (paths & touched or len(group) >= GROUP_STEPS or size + cost > GROUP_BYTES):
            out.append(group)
            group, paths, size = [], set(), 0
        group.append(step)
        paths |= touched
        size += cost
    if group:
        out.append(group)
    return out


def _run_group(
    group: list[Step], journal: Journal, ctx: StepContext, result: RunResult, begun: list[int] | None
) -> None:
    """Run ``group`` with its durability shared: one journal record of all their ``begin``s (one
    fsync), each step's first half (:meth:`~logdoctor.repair.steps.base.Operation.prepare`: new files under
    temp names, each fsynced from a thread as soon as it is written while the next is made), one barrier
    (those fsyncs awaited, their folders fsynced), the second halves (the renames into place), one
    barrier for the folders, each step verified, one record of all their ``done``s. The journal and the
    files keep the per-step rules: a step is journaled begun (durably) before it changes anything, no
    file is renamed into place before its bytes are durable, and no step is journaled done before its
    result is durable and verified; so a kill at any point leaves each step of the group as before, in
    between (temp or partial files, which its ``apply`` and ``undo`` remove), or done, and
    ``--resume``/``--rollback`` finish or undo them as any step. Crash points: each step's own, and
    ``synced`` (after the first barrier)."""
    journal.append_many([{"t": "begin", "step": s.number, "op": s.op, "path": s.path} for s in group])
    if begun is not None:
        begun.extend(s.number for s in group)
    with SyncBarrier() as barrier, ThreadPoolExecutor(1, thread_name_prefix="check") as checker:
        commits = []
        ctx.listings = {}  # each folder listed once for the group's leftover temp files
        ctx.checker = checker  # a step's checks run while the next step makes its file
        try:
            for step in group:
                ctx.crash(step.number, "begin")
                commits.append(operation(step).prepare(step, ctx, barrier))
            ctx.settle()  # every check passed (and registered its files) before the barrier
        finally:
            ctx.listings = ctx.checker = None
            with contextlib.suppress(Exception):
                ctx.settle()  # after an error: the check in flight finished before the group ends
        barrier.flush()
        for step in group:
            ctx.crash(step.number, "synced")
        for commit in commits:
            if commit is not None:
                commit()
        barrier.flush()
    journal.append_many([_verified(step, ctx) for step in group])
    result.steps_run += len(group)
    for step in group:
        ctx.crash(step.number, "journaled")


def _undo(plan: Plan, journal: Journal, ctx: StepContext, begun: set[int], result: RunResult) -> None:
    """Undo every step of ``begun``, newest first (journaled ``undo-begin``/``undo-done``)."""
    for step in reversed(plan.steps):
        if step.number not in begun:
            continue  # never started: its target is untouched
        op = operation(step)
        journal.append({"t": "undo-begin", "step": step.number})
        op.undo(step, ctx)
        if op.state(step, ctx) != BEFORE:
            raise StepStateError(f"undo of step {step.number} ({step.op} {step.path}) did not restore it")
        journal.append({"t": "undo-done", "step": step.number})
        result.steps_run += 1


_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


#: files named by the line of a run left half-done (the rest: how many more)
LEFT_SHOWN = 5


def _undo_after_full(
    plan: Plan,
    journal: Journal,
    ctx: StepContext,
    begun: list[int],
    e: OSError,
    result: RunResult,
    command: str = "repair",
) -> bk.NoSpaceError:
    """A file system filled up while the run wrote (another writer took the space it had checked): undo
    what this run did, so that nothing is left half-done, and say where it ran out. When the undo fails too
    (the disk is still full): :class:`~logdoctor.repair.backup.PartlyWrittenError` saying which of the run's
    files are on disk and the ``command``'s resume and rollback lines."""
    where = os.fsdecode(e.filename) if e.filename is not None else plan.backup_dir
    reason = f"{where}: {e.strerror or os.strerror(e.errno or 0)}"
    undone = RunResult("rolled-back", result.journal, plan.backup_dir, result.steps_total)
    try:
        _undo(plan, journal, ctx, set(begun), undone)
        journal.append({"t": "end", "status": "rolled-back", "error": reason})
    except (OSError, StepStateError) as e2:
        with contextlib.suppress(OSError):
            journal.append({"t": "end", "status": "failed", "error": f"{reason}; undo: {e2}"})
        left = _left_on_disk(plan, journal, begun)
        more = len(left) - LEFT_SHOWN
        shown = ", ".join(left[:LEFT_SHOWN]) + (f" and {more} more" if more > 0 else "")
        on_disk = (
            f"the log dirs hold {len(left)} file(s) or folder(s) of this run: {shown}"
            if left
            else "none of this run's files is in the log dirs, its journal still lists its steps"
        )
        return bk.PartlyWrittenError(
            f"{reason} (step {begun[-1] if begun else 0} of {result.steps_total}); undoing the run failed "
            f"too ({e2}): {on_disk}. Finish it with `logdoctor {command} --resume {result.journal} --apply` "
            f"or undo it with `logdoctor {command} --rollback {result.journal} --apply` once there is space",
            left,
        )
    return bk.NoSpaceError(
        f"{reason} (step {begun[-1] if begun else 0} of {result.steps_total}); the {len(begun)} step(s) "
        f"begun were undone, the log dirs are as they were (journal {result.journal}, rolled back); free "
        "space or give --backup-dir on another file system, then plan again"
    )


def _left_on_disk(plan: Plan, journal: Journal, begun: list[int]) -> list[str]:
    """The paths of the steps begun and not undone (the journal's undo records) that exist on disk."""
    try:
        undone = read_journal(journal.path).undone
    except (OSError, JournalError):
        undone = set()
    by_number = {s.number: s for s in plan.steps}
    out: list[str] = []
    for n in begun:
        step = by_number.get(n)
        if step is None or n in undone:
            continue
        for path in (step.path, step.path + PARTIAL_SUFFIX):
            if os.path.lexists(path) and path not in out:
                out.append(path)
    return out


def hold_dir_locks(log_dirs: list[str | os.PathLike[str]]) -> contextlib.ExitStack:
    """logdoctor's own lock on each log dir (logdir.lock.hold_dir_lock), for a writing command to hold
    from before its planning scan to its end: a second writing run of the same dir is refused (75)."""
    stack = _hold_locks([os.path.abspath(d) for d in log_dirs], hold_dir_lock)
    fifo = os.environ.get(PAUSE_LOCKED_ENV)
    if fifo:
        try:
            _pause_locked(fifo)
        except BaseException:
            stack.close()
            raise
    return stack


def _pause_locked(fifo: str) -> None:
    """Wait, holding the locks, until the writer of ``fifo`` closes it (module doc: lock testing)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_CLOEXEC)  # returns once the test opened it for writing
    try:
        while os.read(fd, 4096):
            pass
    finally:
        os.close(fd)


def apply_plan(
    plan: Plan, *, crash: CrashHook | None = None, command: str = "repair", allow_unfinished: bool = False
) -> RunResult:
    """Apply ``plan`` (see the module doc). Raises RefusedError/BrokerRunningError/NoSpaceError
    before writing anything; a failure after the start is journaled and returned as ``failed`` (a file
    system filling up: the run is undone and NoSpaceError raised). ``command`` is the command whose
    ``--resume``/``--rollback`` finish the journal; ``allow_unfinished``: run although another run's
    journal of the same log dir is unfinished (:func:`check_journals`)."""
    crash = crash if crash is not None else CrashHook.from_env()
    plan.number_steps()
    result = RunResult("nothing-to-do", None, plan.backup_dir, len(plan.steps))
    if plan.empty:
        return result
    log_dirs = [os.path.abspath(d) for d in plan.log_dirs]
    with _hold_locks(log_dirs, hold_dir_lock):
        return _apply(plan, log_dirs, crash, result, command, allow_unfinished)


def _apply(
    plan: Plan, log_dirs: list[str], crash: CrashHook, result: RunResult, command: str, allow_unfinished: bool
) -> RunResult:
    safety.refuse_if_locked(log_dirs)
    safety.check_backup_location(plan.backup_dir, log_dirs)
    _check_paths(plan)
    if os.path.lexists(plan.backup_dir) and (
        not os.path.isdir(plan.backup_dir) or os.listdir(plan.backup_dir)
    ):
        raise RefusedError(f"backup dir {plan.backup_dir} exists and is not empty")
    check_preconditions(plan)
    check_journals(plan, allow_unfinished=allow_unfinished)
    space.check(plan)
    snapshots = commit_snapshots(plan)
    journal_path = os.path.join(plan.backup_dir, JOURNAL_NAME)
    result.journal = journal_path
    # Nothing of the log dirs is written before the journal holds the plan record (the commit point),
    # and the journal is born with it (Journal.create): a kill before it leaves the log dirs as they
    # were (no journal; not even a new .lock, which is taken after), a kill after it leaves a journal
    # that --resume and --rollback read, whose plan record lists the .lock files this run creates.
    # Ctrl-C or a failure while staging (before the commit point): only what this run staged is removed.
    # Everything from the first staged byte to the journal's birth is one stretch: Ctrl-C anywhere in it
    # (the plan record of many steps takes milliseconds to build) leaves nothing staged behind.
    made_backup_dir = _first_missing(plan.backup_dir)  # what this run creates (.logdoctor-backups too)
    try:
        bk.makedirs_durable(plan.backup_dir)
        with SyncBarrier() as barrier:  # the staged bytes and the README fsynced at once, then their folders
            _stage(plan, barrier)
            readme = bk.README_TEXT.format(journal=journal_path).encode()
            bk.write_durable(os.path.join(plan.backup_dir, "README.txt"), readme, barrier)
            barrier.flush()  # durable before the journal's plan record names them
        created = [d for d in log_dirs if not os.path.lexists(os.path.join(d, LOCK_FILE))]
        record = {
            "t": "plan",
            "plan": plan.to_json(),
            "created_locks": created,
            "started_ms": int(time.time() * 1000),
            "snapshots": snapshots,
            "command": command,
        }
        journal_cm = Journal.create(journal_path, record)
    except BaseException:
        _remove_staged(plan.backup_dir, made_backup_dir)
        raise
    with journal_cm as journal:
        try:
            locks = _hold_locks(log_dirs)
        except Exception as e:  # a broker or another tool took a lock since the check: nothing written
            journal.append({"t": "end", "status": "failed", "error": f"{type(e).__name__}: {e}"})
            raise
        with locks:
            ctx = StepContext(
                plan.backup_dir, crash, {s.number: s.data for s in plan.steps if s.data is not None}
            )
            begun: list[int] = []
            try:
                _run_forward(plan, journal, ctx, set(), result, begun)
            except OSError as e:
                if e.errno in _FULL:
                    err = _undo_after_full(plan, journal, ctx, begun, e, result, command)
                    if read_journal(journal.path).status == "rolled-back":
                        _drop_created_locks(created)
                    raise err from e
                return _fail(result, journal, e)
            except StepStateError as e:
                return _fail(result, journal, e)
            journal.append({"t": "end", "status": "applied"})
            _drop_created_locks(created)
    result.status = "applied"
    return result


def load_journal(journal_path: str | os.PathLike[str]) -> tuple[Plan, JournalState]:
    state = read_journal(journal_path)
    try:
        plan = Plan.from_json(state.header["plan"])
    except (KeyError, TypeError, ValueError) as e:
        raise JournalError(f"{journal_path}: the plan record is not readable ({e})") from None
    plan.number_steps()
    if Path(plan.backup_dir).resolve() != Path(journal_path).resolve().parent:
        raise JournalError(f"{journal_path} is not in the backup dir it names ({plan.backup_dir})")
    return plan, state


def _check_journal(journal_path: str | os.PathLike[str], plan: Plan, state: JournalState, mode: str) -> None:
    """Every refusal of a resume or rollback, before anything is written: a rolled-back journal, a later
    run of the same log dir, a broker holding a lock, a step outside the log dirs, a file not as the
    journal recorded it."""
    _refuse_finished(state, journal_path)
    check_journals(plan, journal=os.fspath(journal_path))
    _recheck(plan, state)
    check_recorded(plan, state, mode, os.fspath(journal_path))


def resume(journal_path: str | os.PathLike[str], *, crash: CrashHook | None = None) -> RunResult:
    """Finish an interrupted apply: redo every step not yet in its "after" state."""
    return _finish(journal_path, "resume", crash)


def rollback(journal_path: str | os.PathLike[str], *, crash: CrashHook | None = None) -> RunResult:
    """Undo every step that was begun, newest first, restoring originals from the backup."""
    return _finish(journal_path, "rollback", crash)


def _finish(journal_path: str | os.PathLike[str], mode: str, crash: CrashHook | None) -> RunResult:
    """:func:`resume` (``mode="resume"``) or :func:`rollback` of a journal, under every log dir's locks."""
    crash = crash if crash is not None else CrashHook.from_env()
    plan, state = load_journal(journal_path)
    status = "applied" if mode == "resume" else "rolled-back"
    result = RunResult(status, os.fspath(journal_path), plan.backup_dir, len(plan.steps))
    log_dirs = [os.path.abspath(d) for d in plan.log_dirs]
    created = list(state.header.get("created_locks") or [])
    with _hold_locks(log_dirs, hold_dir_lock):
        _check_journal(journal_path, plan, state, mode)
        with _hold_locks(log_dirs), Journal(journal_path) as journal:
            if mode == "resume":
                journal.append({"t": "note", "what": "resume", "ms": int(time.time() * 1000)})
            ctx = StepContext(plan.backup_dir, crash)
            try:
                if mode == "resume":
                    _run_forward(plan, journal, ctx, state.done, result)
                else:
                    _undo(plan, journal, ctx, state.begun, result)
            except (OSError, StepStateError) as e:
                return _fail(result, journal, e, "failed" if mode == "resume" else "rollback-failed")
            journal.append({"t": "end", "status": status})
            _drop_created_locks(created)
    return result


@dataclass(slots=True)
class JournalPreview:
    """What ``--resume`` or ``--rollback`` of a journal would do, computed without writing anything."""

    mode: str  # "resume" | "rollback"
    journal: str
    plan: Plan
    status: str  # the journal's last status ("applied", "failed", "rolled-back", ...; "" if it has none)
    steps: list[Step]  # the steps it would run (resume: in order; rollback: the begun ones, newest first)

    def to_json(self) -> dict:
        return {
            "mode": self.mode,
            "journal": self.journal,
            "journal_status": self.status,
            "steps_total": len(self.plan.steps),
            "steps": [s.to_json() for s in self.steps],
            "plan": self.plan.to_json(),
        }


def preview(journal_path: str | os.PathLike[str], mode: str) -> JournalPreview:
    """The dry run of :func:`resume` (``mode="resume"``) or :func:`rollback`: the same refusals (a
    rolled-back journal to resume, a broker holding a lock, a step outside the log dirs), no write."""
    if mode not in ("resume", "rollback"):
        raise ValueError(f"mode must be resume or rollback, not {mode!r}")
    plan, state = load_journal(journal_path)
    status = str(state.status or "")
    _check_journal(journal_path, plan, state, mode)
    if mode == "resume":
        steps = [s for s in plan.steps if s.number not in state.done]
    else:
        steps = [s for s in reversed(plan.steps) if s.number in state.begun]
    return JournalPreview(mode, os.fspath(journal_path), plan, status, steps)


__all__ = [
    "CRASH_AFTER_STEP_ENV",
    "CRASH_AT_ENV",
    "PAUSE_LOCKED_ENV",
    "PHASES",
    "CrashHook",
    "FilesChangedError",
    "JournalFinishedError",
    "JournalPreview",
    "OtherJournalError",
    "PlanChangedError",
    "RefusedError",
    "RunResult",
    "apply_plan",
    "check_journals",
    "check_preconditions",
    "check_recorded",
    "check_unfinished",
    "commit_snapshots",
    "hold_dir_locks",
    "note_unfinished",
    "preview",
    "resume",
    "rollback",
    "unfinished_note",
]

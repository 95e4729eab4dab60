"""Run a plan: apply it, resume it after a crash, or roll it back, with the journal as the record.

Apply, in order, writing nothing until every check passed:
1. refuse when a log dir's lock is held by another process (a broker), when a step would touch a
   path outside the log dirs, when the backup dir is in a log dir or not empty, when the targets
   are no longer as planned, or when the backup dir (or a log dir) lacks the space (os.statvfs);
2. hold every log dir's lock (as the broker does) for the whole run;
3. stage new contents in the backup dir, then write the journal's plan record (the commit point);
4. for each step: journal ``begin``, apply (backup first, then the atomic change), verify,
   journal ``done``.

Crash testing: ``LOGDOCTOR_CRASH_AFTER_STEP=N`` SIGKILLs the process right after step N is
journaled done; ``LOGDOCTOR_CRASH_AT=N:PHASE`` at a phase of step N: ``begin`` (journaled begin,
nothing changed), ``backed-up`` (original saved), ``temp-written`` (atomic write's temp file
fsynced, not renamed), ``owner-set`` (a chmod step's new owner set, its mode not yet), ``applied``
(change made, not verified), ``verified``, ``journaled``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.logdir.atomic import fsync_dir
from logdoctor.logdir.lock import hold_lock
from logdoctor.logdir.names import LOCK_FILE
from logdoctor.repair import backup as bk
from logdoctor.repair import safety
from logdoctor.repair.actions import BEFORE, StepContext, StepStateError, operation
from logdoctor.repair.journal import JOURNAL_NAME, Journal, JournalError, read_journal
from logdoctor.repair.plan import Plan, Step

CRASH_AFTER_STEP_ENV = "LOGDOCTOR_CRASH_AFTER_STEP"
CRASH_AT_ENV = "LOGDOCTOR_CRASH_AT"
PHASES = ("begin", "backed-up", "temp-written", "owner-set", "applied", "verified", "journaled")


class RefusedError(Exception):
    """Apply refused before writing anything (see the message)."""


class PlanChangedError(RefusedError):
    """A log dir is not as the plan expects: it changed since planning (nothing written; plan again)."""


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
        return {
            "status": self.status,
            "journal": self.journal,
            "backup_dir": self.backup_dir,
            "steps_total": self.steps_total,
            "steps_run": self.steps_run,
            "error": self.error,
        }


def _hold_locks(log_dirs: list[str]) -> contextlib.ExitStack:
    """Hold every log dir's lock (released when the returned stack closes)."""
    stack = contextlib.ExitStack()
    try:
        for d in log_dirs:
            stack.enter_context(hold_lock(d))
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


def _remove_staged(backup_dir: str, made: bool) -> None:
    """Before the commit point only what this run staged is in the backup dir (it had to be new or
    empty): remove the folder it made, or empty the one it was given."""
    if made:
        shutil.rmtree(backup_dir, ignore_errors=True)
        return
    with contextlib.suppress(OSError):
        for name in os.listdir(backup_dir):
            path = os.path.join(backup_dir, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)


def _check_paths(plan: Plan) -> None:
    for step in plan.steps:
        for p in step.touched():
            safety.resolve_inside(p, plan.log_dirs)


def _space_needs(plan: Plan) -> list[tuple[str, int]]:
    backup_need = 0
    live_need: dict[str, int] = {}
    for step in plan.steps:
        op = operation(step)
        backup_need += op.backup_cost(step, plan.backup_dir)
        live = op.live_cost(step)
        if live:
            d = os.path.dirname(step.params.get("dst") or step.path)
            live_need[d] = max(live_need.get(d, 0), live)
    needs = [(plan.backup_dir, backup_need)]
    needs.extend(live_need.items())
    return needs


def check_preconditions(plan: Plan) -> None:
    """Every step whose paths no earlier step touches must find its target as planned."""
    ctx = StepContext(plan.backup_dir)
    touched: set[str] = set()
    for step in plan.steps:
        paths = step.touched()
        if not touched.intersection(paths):
            state = operation(step).state(step, ctx)
            if state != BEFORE:
                raise PlanChangedError(
                    f"{step.path} is not as planned (step {step.number} {step.op}: {state}); plan again"
                )
        touched.update(paths)


def _stage(plan: Plan) -> None:
    for step in plan.steps:
        if step.op == "write":
            if step.data is None:
                raise ValueError(f"write step {step.number} has no data")
            rel = os.path.join("staged", f"{step.number:06d}.bin")
            bk.write_durable(os.path.join(plan.backup_dir, rel), step.data)
            step.params["staged"] = rel


def _fail(result: RunResult, journal: Journal, e: Exception, status: str = "failed") -> RunResult:
    """Record a run stopped by ``e`` in ``result`` and as the journal's ``end`` record (``status``)."""
    result.status, result.error = "failed", f"{type(e).__name__}: {e}"
    journal.append({"t": "end", "status": status, "error": result.error})
    return result


def _recheck(plan: Plan, state: object) -> tuple[list[str], list[str]]:
    """Before a resume or rollback: refuse again as apply did (a broker holds a lock, a path outside the
    log dirs); (the log dirs, the ``.lock`` files the first run created)."""
    log_dirs = [os.path.abspath(d) for d in plan.log_dirs]
    safety.refuse_if_locked(log_dirs)
    _check_paths(plan)
    return log_dirs, list(state.header.get("created_locks") or [])  # type: ignore[attr-defined]


def _run_forward(plan: Plan, journal: Journal, ctx: StepContext, done: set[int], result: RunResult) -> None:
    for step in plan.steps:
        op = operation(step)
        if step.number in done:
            continue  # journaled done after it verified (a later step may have moved its path since)
        journal.append({"t": "begin", "step": step.number, "op": step.op, "path": step.path})
        ctx.crash(step.number, "begin")
        op.apply(step, ctx)
        if not op.verify(step, ctx):
            raise StepStateError(f"step {step.number} ({step.op} {step.path}) did not verify after applying")
        ctx.crash(step.number, "verified")
        journal.append({"t": "done", "step": step.number})
        result.steps_run += 1
        ctx.crash(step.number, "journaled")


def apply_plan(plan: Plan, *, crash: CrashHook | None = None) -> RunResult:
    """Apply ``plan`` (see the module doc). Raises RefusedError/BrokerRunningError/NoSpaceError
    before writing anything; a failure after the start is journaled and returned as ``failed``."""
    crash = crash if crash is not None else CrashHook.from_env()
    plan.number_steps()
    result = RunResult("nothing-to-do", None, plan.backup_dir, len(plan.steps))
    if plan.empty:
        return result
    log_dirs = [os.path.abspath(d) for d in plan.log_dirs]
    safety.refuse_if_locked(log_dirs)
    safety.check_backup_location(plan.backup_dir, log_dirs)
    _check_paths(plan)
    if os.path.lexists(plan.backup_dir) and (
        not os.path.isdir(plan.backup_dir) or os.listdir(plan.backup_dir)
    ):
        raise RefusedError(f"backup dir {plan.backup_dir} exists and is not empty")
    check_preconditions(plan)
    bk.check_space(_space_needs(plan))
    journal_path = os.path.join(plan.backup_dir, JOURNAL_NAME)
    result.journal = journal_path
    # Nothing of the log dirs is written before the journal holds the plan record (the commit point),
    # and the journal is born with it (Journal.create): a kill before it leaves the log dirs as they
    # were (no journal; not even a new .lock, which is taken after), a kill after it leaves a journal
    # that --resume and --rollback read, whose plan record lists the .lock files this run creates.
    # Ctrl-C or a failure while staging (before the commit point): only what this run staged is removed.
    made_backup_dir = not os.path.lexists(plan.backup_dir)
    try:
        bk.makedirs_durable(plan.backup_dir)
        _stage(plan)
        bk.write_durable(
            os.path.join(plan.backup_dir, "README.txt"), bk.README_TEXT.format(journal=journal_path).encode()
        )
    except BaseException:
        _remove_staged(plan.backup_dir, made_backup_dir)
        raise
    created = [d for d in log_dirs if not os.path.lexists(os.path.join(d, LOCK_FILE))]
    record = {
        "t": "plan",
        "plan": plan.to_json(),
        "created_locks": created,
        "started_ms": int(time.time() * 1000),
    }
    with Journal.create(journal_path, record) as journal:
        try:
            locks = _hold_locks(log_dirs)
        except Exception as e:  # a broker or another tool took a lock since the check: nothing written
            journal.append({"t": "end", "status": "failed", "error": f"{type(e).__name__}: {e}"})
            raise
        with locks:
            ctx = StepContext(
                plan.backup_dir, crash, {s.number: s.data for s in plan.steps if s.data is not None}
            )
            try:
                _run_forward(plan, journal, ctx, set(), result)
            except (OSError, StepStateError) as e:
                return _fail(result, journal, e)
            journal.append({"t": "end", "status": "applied"})
            _drop_created_locks(created)
    result.status = "applied"
    return result


def load_journal(journal_path: str | os.PathLike[str]) -> tuple[Plan, object]:
    state = read_journal(journal_path)
    try:
        plan = Plan.from_json(state.header["plan"])
    except (KeyError, TypeError, ValueError) as e:
        raise JournalError(f"{journal_path}: the plan record is not readable ({e})") from None
    plan.number_steps()
    if Path(plan.backup_dir).resolve() != Path(journal_path).resolve().parent:
        raise JournalError(f"{journal_path} is not in the backup dir it names ({plan.backup_dir})")
    return plan, state


def resume(journal_path: str | os.PathLike[str], *, crash: CrashHook | None = None) -> RunResult:
    """Finish an interrupted apply: redo every step not yet in its "after" state."""
    crash = crash if crash is not None else CrashHook.from_env()
    plan, state = load_journal(journal_path)
    result = RunResult("applied", os.fspath(journal_path), plan.backup_dir, len(plan.steps))
    if state.status == "rolled-back":  # type: ignore[attr-defined]
        raise RefusedError(f"{journal_path}: this repair was rolled back; plan a new one")
    log_dirs, created = _recheck(plan, state)
    with _hold_locks(log_dirs), Journal(journal_path) as journal:
        journal.append({"t": "note", "what": "resume", "ms": int(time.time() * 1000)})
        ctx = StepContext(plan.backup_dir, crash)
        try:
            _run_forward(plan, journal, ctx, state.done, result)  # type: ignore[attr-defined]
        except (OSError, StepStateError) as e:
            return _fail(result, journal, e)
        journal.append({"t": "end", "status": "applied"})
        _drop_created_locks(created)
    return result


def rollback(journal_path: str | os.PathLike[str], *, crash: CrashHook | None = None) -> RunResult:
    """Undo every step that was begun, newest first, restoring originals from the backup."""
    crash = crash if crash is not None else CrashHook.from_env()
    plan, state = load_journal(journal_path)
    result = RunResult("rolled-back", os.fspath(journal_path), plan.backup_dir, len(plan.steps))
    log_dirs, created = _recheck(plan, state)
    begun: set[int] = state.begun  # type: ignore[attr-defined]
    with _hold_locks(log_dirs), Journal(journal_path) as journal:
        ctx = StepContext(plan.backup_dir, crash)
        try:
            for step in reversed(plan.steps):
                if step.number not in begun:
                    continue  # never started: its target is untouched
                op = operation(step)
                journal.append({"t": "undo-begin", "step": step.number})
                op.undo(step, ctx)
                if op.state(step, ctx) != BEFORE:
                    raise StepStateError(
                        f"undo of step {step.number} ({step.op} {step.path}) did not restore it"
                    )
                journal.append({"t": "undo-done", "step": step.number})
                result.steps_run += 1
        except (OSError, StepStateError) as e:
            return _fail(result, journal, e, "rollback-failed")
        journal.append({"t": "end", "status": "rolled-back"})
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
    status = str(getattr(state, "status", "") or "")
    if mode == "resume" and status == "rolled-back":
        raise RefusedError(f"{journal_path}: this repair was rolled back; plan a new one")
    _recheck(plan, state)
    if mode == "resume":
        done: set[int] = state.done  # type: ignore[attr-defined]
        steps = [s for s in plan.steps if s.number not in done]
    else:
        begun: set[int] = state.begun  # type: ignore[attr-defined]
        steps = [s for s in reversed(plan.steps) if s.number in begun]
    return JournalPreview(mode, os.fspath(journal_path), plan, status, steps)


def steps_of(plan: Plan) -> list[Step]:
    plan.number_steps()
    return plan.steps


__all__ = [
    "CRASH_AFTER_STEP_ENV",
    "CRASH_AT_ENV",
    "PHASES",
    "CrashHook",
    "JournalPreview",
    "RefusedError",
    "RunResult",
    "apply_plan",
    "check_preconditions",
    "preview",
    "resume",
    "rollback",
]

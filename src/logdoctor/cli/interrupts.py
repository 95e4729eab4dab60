"""Ctrl-C (SIGINT) ends every command with one line on stderr and exit 130 (128 + SIGINT, as a shell
reports a command it interrupted): what was interrupted and, for a run that writes, where its journal is
and the exact commands that finish or undo it.

Three places catch it:

- :func:`run_interrupts` around ``--apply``, ``--resume`` and ``--rollback`` of `repair`,
  `move-partition` and `sync-replica`: how far the journal got (read back from it) and the
  ``--resume``/``--rollback`` commands, quoted for the shell;
- :func:`spark_interruptible` around a Spark command (`census`, `export`): PySpark's own SIGINT handler
  calls the JVM from inside the signal handler while the main thread waits on the same py4j
  connection, which fails with a reentrant-call error and some 90 lines of py4j traceback; ours only
  raises :class:`KeyboardInterrupt`, any error met after the interrupt is the interrupt's, and the
  gateway JVM (started by PySpark ignoring SIGINT) is stopped before the line is printed;
- :meth:`logdoctor.cli.common.LogdoctorGroup.invoke` for every other moment of every command.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

__all__ = ["RunInterrupts", "interrupted", "run_interrupted_line", "run_interrupts", "spark_interruptible"]


def interrupted(what: str) -> NoReturn:
    """``interrupted: WHAT`` on stderr and exit 130 (:attr:`ExitCode.INTERRUPTED`)."""
    from logdoctor.cli.error_lines import fail
    from logdoctor.cli.exit_codes import ExitCode

    fail(f"interrupted: {what}", ExitCode.INTERRUPTED)


def _q(path: str | os.PathLike[str]) -> str:
    return shlex.quote(os.path.abspath(os.fspath(path)))


def run_interrupted_line(command: str, mode: str, journal: str | os.PathLike[str] | None) -> str:
    """What an interrupted ``logdoctor COMMAND MODE`` left, from its journal (``mode``: ``--apply``,
    ``--resume`` or ``--rollback``)."""
    from logdoctor.repair.journal import JournalError, read_journal

    state = None
    if journal is not None and os.path.exists(journal):
        try:
            state = read_journal(journal)
        except JournalError:
            state = None
    if state is None and mode != "--apply":  # a journal it could not read: it was refused before this
        return f"logdoctor {command} {mode} {journal} was stopped"
    if state is None:  # stopped before the journal's plan record: the commit point of a run
        return (
            f"logdoctor {command} {mode} stopped before its first change: nothing in the log dirs was "
            "changed (plan again to run it)"
        )
    path = os.path.abspath(os.fspath(journal))  # type: ignore[arg-type]
    steps = len(_steps(state.header.get("plan") or {}))
    undone = f", {len(state.undone)} undone" if mode == "--rollback" else ""
    return (
        f"logdoctor {command} {mode} stopped with {len(state.done)} of {steps} step(s) done{undone}; "
        f"journal: {path}; finish it with `logdoctor {command} --resume {_q(path)} --apply` "
        f"or undo it with `logdoctor {command} --rollback {_q(path)} --apply`"
    )


def _steps(plan_json: dict) -> list[object]:
    return [s for a in plan_json.get("actions") or [] for s in a.get("steps") or []]


class RunInterrupts:
    """What a command that plans and writes is doing, for the line a Ctrl-C prints: nothing written
    yet, or a run (``--apply``, ``--resume``, ``--rollback``) with its journal."""

    __slots__ = ("command", "journal", "mode")

    def __init__(self, command: str) -> None:
        self.command = command
        self.mode: str | None = None
        self.journal: str | os.PathLike[str] | None = None

    def writing(self, mode: str, journal: str | os.PathLike[str]) -> None:
        """From here on a Ctrl-C leaves the run of ``journal`` (which may not exist yet)."""
        self.mode, self.journal = mode, journal

    def line(self) -> str:
        if self.mode is None:
            return f"logdoctor {self.command} was stopped before it wrote anything"
        return run_interrupted_line(self.command, self.mode, self.journal)


@contextmanager
def run_interrupts(command: str) -> Iterator[RunInterrupts]:
    """Ctrl-C in a command that plans and writes (`repair`, `move-partition`, `sync-replica`): one
    line (:meth:`RunInterrupts.line`) and exit 130."""
    state = RunInterrupts(command)
    try:
        yield state
    except KeyboardInterrupt:
        interrupted(state.line())


@contextmanager
def spark_interruptible(what: str | Callable[[], str]) -> Iterator[None]:
    """Ctrl-C while a Spark command runs: ``interrupted: WHAT``, exit 130, no py4j traceback, and the
    gateway JVM stopped (:func:`_stop_gateway`). ``what`` may be a function, called once the JVM is
    stopped (a table export reads its table then: :mod:`logdoctor.spark.tables.outcome`).

    Our SIGINT handler only raises :class:`KeyboardInterrupt`; while the block runs, PySpark's
    SparkContext is kept from putting its own in place (it calls the JVM from inside the handler,
    which fails while the main thread waits on the same py4j connection: "reentrant call").
    """
    hit = False

    def handler(signum: int, frame: object) -> None:
        nonlocal hit
        hit = True
        # py4j logs (on the root logger) every exception that ends a call to the JVM, this one included
        logging.disable(logging.CRITICAL)
        raise KeyboardInterrupt

    real_signal = signal.signal
    me = os.getpid()

    def keep_ours(signum: int, action: Any) -> Any:  # SparkContext.__init__: signal.signal(SIGINT, ...)
        # Only this process's handler is kept: PySpark starts its gateway JVM through a preexec_fn that sets
        # SIGINT to SIG_IGN in the forked child, so that the JVM and the Python workers it starts ignore the
        # terminal's Ctrl-C (a worker's interpreter would otherwise raise KeyboardInterrupt mid-import and
        # the JVM print its traceback under our one line); refusing that too left them all to SIGINT.
        if signum == signal.SIGINT and action is not handler and os.getpid() == me:
            return signal.getsignal(signal.SIGINT)
        return real_signal(signum, action)

    previous = real_signal(signal.SIGINT, handler)
    signal.signal = keep_ours  # type: ignore[assignment]
    try:
        yield
    except BaseException as e:
        import typer

        if not hit and (isinstance(e, typer.Exit) or not isinstance(e, KeyboardInterrupt)):
            raise
        real_signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the line short
        _quiet_accumulator_server()
        _quiet_spark_log()
        _stop_gateway()
        interrupted(what() if callable(what) else what)
    finally:
        signal.signal = real_signal  # type: ignore[assignment]
        if not hit:
            real_signal(signal.SIGINT, previous)

def _children() -> list[int]:
    """This process's child processes (Linux /proc; none elsewhere)."""
    me, found = os.getpid(), []
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:  # pragma: no cover - no /proc
        return []
    for name in entries:
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


def _quiet_accumulator_server() -> None:
    """PySpark's accumulator server, a thread of this process reading the JVM's updates, prints a
    traceback (EOFError) when the JVM's connection ends in the middle of a read, as it does when a task
    runs on while :func:`_stop_gateway` stops the JVM: after the interrupt that error is the interrupt's,
    which the one line says."""
    import sys

    pyspark = sys.modules.get("pyspark")
    context = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, client_address: None


def _quiet_spark_log(wait_s: float = 5.0) -> None:
    """Spark's log level OFF before its JVM is stopped: the tasks the stop kills are the interrupt's, yet
    each running one logged an ``ERROR Executor: Exception in task ...`` (or a Delta/Iceberg writer's
    error) under the one line. Through a fresh py4j call in a thread of its own, given ``wait_s`` at
    most: a JVM that does not answer is stopped anyway."""
    import sys
    import threading

    pyspark = sys.modules.get("pyspark")
    context = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    if context is None:
        return

    def off() -> None:
        with contextlib.suppress(Exception):
            context.setLogLevel("OFF")

    worker = threading.Thread(target=off, name="logdoctor-quiet-spark", daemon=True)
    worker.start()
    worker.join(wait_s)


def _stop_gateway(grace_s: float = 15.0) -> None:
    """Stop the Spark gateway JVM this process started (local Spark; any child process): SIGTERM, so
    that its shutdown hooks remove its temporary folders, then SIGKILL after ``grace_s``. PySpark starts
    it ignoring SIGINT; it stops by itself only when it sees this process go, which a JVM interrupted
    while Spark starts does not (it was left running, orphaned)."""
    import time

    pids = _children()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pids:
        for pid in list(pids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # already reaped (PySpark's Popen)
                done = pid
            if done:
                pids.remove(pid)
        if pids and time.monotonic() > deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        if pids:
            time.sleep(0.05)

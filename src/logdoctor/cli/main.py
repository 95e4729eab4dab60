"""The `logdoctor` command's entry point: the app (:mod:`logdoctor.cli.app`) with the command it
runs loaded (:mod:`logdoctor.cli.registry`), or, for ``--help``, every command's summary."""

from __future__ import annotations

import gc
import sys

TYPE_CHECKING = False  # typing (and signal: enum) not imported before a replayed --help needs them
if TYPE_CHECKING:
    from typing import Any

__all__ = ["app", "main"]  # noqa: F822 - app: module __getattr__


def __getattr__(name: str) -> Any:
    """``app`` (the typer application), imported on first use: ``dump`` of files alone never needs it."""
    if name == "app":
        from logdoctor.cli.app import app

        return app
    raise AttributeError(name)


def _register() -> None:
    """Every command (tests, and anyone driving the app with a CliRunner)."""
    from logdoctor.cli import registry

    registry.load_all()


# Commands that only read and print: when what reads their output goes away (``dump -p F | head``),
# they end quietly as cat and grep do (SIGPIPE), instead of blaming the file they were reading. The
# commands that write keep Python's EPIPE error, so that a closed pipe never stops a run mid-step.
QUIET_ON_CLOSED_PIPE = frozenset({"dump", "scan", "retention"})
# The writing commands read and print only without --apply (a dry run, a journal's preview): then the same.
QUIET_WITHOUT_APPLY = frozenset({"repair", "move-partition", "sync-replica"})


def _quiet_on_closed_pipe(name: str, argv: list[str]) -> bool:
    return name in QUIET_ON_CLOSED_PIPE or (name in QUIET_WITHOUT_APPLY and "--apply" not in argv)


def _without_the_framework(entry: Any, args: list[str]) -> None:
    """A call of files and on/off flags only of a command that can run so (``dump``, ``scan``:
    :mod:`logdoctor.cli.fast`): run and exit here, with the typer command's results, without importing
    typer; any other call returns to the typer command. The module is loaded as :func:`_load_uncollected`
    loads a command's."""
    from logdoctor.cli import registry

    module = _load_uncollected(registry.load_fast, entry)
    try:
        code = module.run_fast(args)
    except KeyboardInterrupt:  # as LogdoctorGroup.invoke says it for every command
        sys.stderr.write(f"interrupted: logdoctor {entry.name} was stopped by Ctrl-C\n")
        raise SystemExit(130) from None
    except Exception as e:
        # cli.error_lines ends a run with typer.Exit (typer imported then, on that error path only), as
        # the typer command does; click turns it into the process's exit code
        typer = sys.modules.get("typer")
        if typer is None or not isinstance(e, typer.Exit):
            raise
        code = e.exit_code
    if code is not None:
        gc.freeze()  # as after app(): nothing left for the collector's last walk at exit
        raise SystemExit(code)


def _load_uncollected(load: Any, entry: Any) -> Any:
    """``load(entry)`` (the command's modules imported: typer, click, the checks, ...) with the automatic
    garbage collector off, and what it made frozen after: those modules, classes and functions live as
    long as the process, yet each automatic collection walked them again (the young ones while they
    were made, 124 young and 11 middle collections in a `repair` of 1 GiB, and the full collection of
    the run after walked every one of them: ~0.05-0.09 s of a 0.4 s run, issue 35)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return load(entry)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main() -> None:
    help_call = _help_call(sys.argv)
    if help_call and _replay_help(sys.argv):
        raise SystemExit(0)
    import faulthandler
    import signal

    # `kill -USR1 PID`: every thread's Python stack to stderr, the command going on (where a command that
    # seems stuck waits: a Ctrl-C that does not end it, a commit, the JVM's stop)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    try:
        from logdoctor.cli import registry

        entry = registry.find(sys.argv[1] if len(sys.argv) > 1 else None)
        quiet = entry is not None and _quiet_on_closed_pipe(entry.name, sys.argv[2:])
        if quiet and hasattr(signal, "SIGPIPE"):
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        if entry is not None and entry.fast is not None:
            _without_the_framework(entry, sys.argv[2:])
        if entry is not None:
            _load_uncollected(registry.load, entry)
        else:
            registry.add_summaries()
    except KeyboardInterrupt:  # Ctrl-C while the command's modules load (a command's own: cli.interrupts)
        sys.stderr.write("interrupted: logdoctor was stopped before it started\n")
        raise SystemExit(130) from None
    from logdoctor.cli.app import app

    try:
        if help_call:
            from logdoctor.cli import helpcache

            helpcache.record(sys.argv, app)
        else:
            app()
    finally:
        # The process ends here: what is left to the collector is frozen, so that the interpreter's last
        # collection at exit does not walk it. A scan of 50,000 partitions leaves ~200,000 objects in
        # reference cycles (each Partition and its LogDir) that only a full collection frees: 0.14 s
        # walking them, ~0.2 s of the run's exit in all, for memory the OS takes back anyway. Files are
        # closed by the commands themselves (with blocks), never by the collector at exit.
        gc.freeze()


def _help_call(argv: list[str]) -> bool:
    """``--help`` of the app or of one command, whose text :mod:`logdoctor.cli.helpcache` keeps."""
    import os  # imported by the interpreter's start (site) already

    return len(argv) in (2, 3) and argv[-1] == "--help" and os.environ.get("LOGDOCTOR_HELP_CACHE") != "0"


def _replay_help(argv: list[str]) -> bool:
    from logdoctor.cli import helpcache

    try:
        return helpcache.replay(argv)
    except BrokenPipeError:
        if len(argv) == 3 and _quiet_on_closed_pipe(argv[1], argv[2:]):
            import os
            import signal

            signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # ends as the typer path does (main())
            os.kill(os.getpid(), signal.SIGPIPE)
        raise


if __name__ == "__main__":
    main()

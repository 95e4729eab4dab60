"""The command and group classes every command shares (usage errors exit 64, help without types): all
that `logdoctor --help` imports of the commands' plumbing.

The rest of what this module held lives in one module per concern, which the commands import by name:
:mod:`.exit_codes` (ExitCode, EX_*), :mod:`.error_lines` (fail, usage_error, refused, tool_failure,
os_error), :mod:`.input_checks` (require_log_dirs, refuse_overlapping_outputs, ...), :mod:`.timeparse`
(--now), :mod:`.jsonout` (--json), :mod:`.progress` (bars), :mod:`.findings_output` (findings, --verbose),
:mod:`.spark_options` (--conf, --remote), :mod:`.plan_options` (--apply, --resume, --rollback),
:mod:`.plan_output` (plans, dry runs) and :mod:`.run_status` (how a run ended, run_errors). Their names are
still found here (``logdoctor.cli.common.ExitCode``), imported on first use so that ``--help`` imports none.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["LogdoctorCommand", "LogdoctorGroup", "UsageExit64"]

_CLICK_USAGE_ERRORS = frozenset(
    {
        "UsageError",
        "BadParameter",
        "MissingParameter",
        "NoSuchOption",
        "BadOptionUsage",
        "BadArgumentUsage",
        "NoArgsIsHelpError",
    }
)


def _usage_exit(e: BaseException) -> None:
    """click's usage errors (exit 2 there) exit 64 here: 2 means errors found in the data."""
    if hasattr(e, "exit_code") and type(e).__name__ in _CLICK_USAGE_ERRORS:
        from logdoctor.cli.exit_codes import EX_USAGE

        e.exit_code = EX_USAGE


class LogdoctorCommand(TyperCommand):
    """Every command: usage errors exit 64, and help reads like kafka-dump-log's (see :mod:`.helptext`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from logdoctor.cli.coercion import install

        install(self.get_params(ctx))  # typer's coercion, without importing pydantic where not needed
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            _usage_exit(e)
            raise

    def get_params(self, ctx: Any) -> list[Any]:
        from logdoctor.cli.helptext import humanize

        return humanize(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from logdoctor.cli.helptext import fold_long_words

        fold_long_words()  # long words go on over the next line, never cut with "…"
        super().format_help(ctx, formatter)


class LogdoctorGroup(TyperGroup):
    """The ``logdoctor`` group: no command prints the help on stderr and exits 64, as does an unknown
    command (with its usage error); help without types."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            import contextlib

            from logdoctor.cli.exit_codes import EX_USAGE

            # typer's rich help prints itself on stdout: a call without a command is a bad call, so the
            # help it gets goes where errors go (docs/commands.md)
            with contextlib.redirect_stdout(sys.stderr):
                typer.echo(ctx.get_help(), err=True, nl=False)
            raise typer.Exit(EX_USAGE)
        from logdoctor.cli.coercion import install

        install(self.get_params(ctx))  # as LogdoctorCommand's
        try:
            return super().parse_args(ctx, args)
        except Exception as e:
            _usage_exit(e)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C where no command said more (logdoctor.cli.interrupts)
            from logdoctor.cli.error_lines import fail
            from logdoctor.cli.exit_codes import ExitCode

            name = f"logdoctor {ctx.invoked_subcommand or ''}".rstrip()
            fail(f"interrupted: {name} was stopped by Ctrl-C", ExitCode.INTERRUPTED)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except Exception as e:  # "No such command": click says 2, a bad call here is 64
            _usage_exit(e)
            raise

    def get_params(self, ctx: Any) -> list[Any]:
        from logdoctor.cli.helptext import humanize

        return humanize(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from logdoctor.cli.helptext import fold_long_words

        fold_long_words()  # long words go on over the next line, never cut with "…"
        super().format_help(ctx, formatter)


UsageExit64 = LogdoctorCommand  # the old name


#: the names this module held, by the module of one concern that holds each now
MOVED: dict[str, str] = {
    "fail": "error_lines",
    "os_error": "error_lines",
    "refused": "error_lines",
    "tool_failure": "error_lines",
    "usage_error": "error_lines",
    "EX_CANTCREAT": "exit_codes",
    "EX_DATA": "exit_codes",
    "EX_DATAERR": "exit_codes",
    "EX_FAILED": "exit_codes",
    "EX_IOERR": "exit_codes",
    "EX_NOINPUT": "exit_codes",
    "EX_NOPERM": "exit_codes",
    "EX_OK": "exit_codes",
    "EX_REFUSED": "exit_codes",
    "EX_SOFTWARE": "exit_codes",
    "EX_TEMPFAIL": "exit_codes",
    "EX_UNAVAILABLE": "exit_codes",
    "EX_USAGE": "exit_codes",
    "EX_WARNINGS": "exit_codes",
    "ExitCode": "exit_codes",
    "VerboseOption": "findings_output",
    "render_findings": "findings_output",
    "refuse_overlapping_outputs": "input_checks",
    "require_input_file": "input_checks",
    "require_inputs_exist": "input_checks",
    "require_log_dirs": "input_checks",
    "print_json": "jsonout",
    "ApplyOption": "plan_options",
    "JsonOption": "plan_options",
    "journal_options": "plan_options",
    "one_mode": "plan_options",
    "DRY_RUN_LINE": "plan_output",
    "print_code_paths": "plan_output",
    "print_journal_preview": "plan_output",
    "print_plan": "plan_output",
    "CopyProgress": "progress",
    "PROGRESS_MIN_BYTES": "progress",
    "progress_bar": "progress",
    "spark_progress": "progress",
    "print_run_paths": "run_status",
    "print_run_status": "run_status",
    "run_errors": "run_status",
    "ConfOption": "spark_options",
    "RemoteOption": "spark_options",
    "parse_epoch_ms": "timeparse",
    "parse_now": "timeparse",
}


def __getattr__(name: str) -> Any:
    """``logdoctor.cli.common.NAME`` of a name that moved (:data:`MOVED`), imported on first use."""
    module = MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"logdoctor.cli.{module}"), name)

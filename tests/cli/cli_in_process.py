"""A command line run in this process as ``subprocess.run([python, "-c", PROGRAM, *args], env=ENV, cwd=CWD,
capture_output=True, text=True)`` would run it, for the side of a comparison that is not the one under test
(test_dump_fast, test_scan_fast: the typer command beside the fast path's real process). It saves the
second interpreter's start and imports (~0.1 s of CPU per call, ~90 calls in `make test-fast`), not the
work: the command runs whole, with the same ``sys.argv``, environment (nothing but ``env``), working folder
and exit code as in that process; stdout and stderr are encoded as the process's (UTF-8, the C locale
coerced) and decoded as ``text=True`` decodes them (universal newlines). An exception the command lets out
is raised here (that process would print a traceback of its own frames, which no comparison can match)."""

from __future__ import annotations

import io
import os
import sys
import types
from collections.abc import Callable, Mapping
from contextlib import redirect_stderr, redirect_stdout
from typing import Any


def _exit_status(code: object) -> tuple[int, str]:
    """The process's exit status for ``SystemExit(code)`` and what the interpreter prints for it."""
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code & 0xFF, ""
    return 1, f"{code}\n"


def _as_text(raw: bytes) -> str:
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", newline=None).read()


def run(
    command: Callable[[], object],
    argv: list[str],
    env: Mapping[str, str],
    cwd: os.PathLike[str] | str | None = None,
) -> tuple[int, str, str]:
    """``command()`` with ``sys.argv = argv``, ``os.environ = env``, in ``cwd``: (exit status, stdout,
    stderr)."""
    raw_out, raw_err = io.BytesIO(), io.BytesIO()
    out, err = (
        io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
        for raw in (raw_out, raw_err)
    )
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    saved_main = sys.modules["__main__"]
    status, last_words = 0, ""
    try:
        os.environ.clear()
        os.environ.update(env)
        sys.argv = list(argv)
        # the ``__main__`` of ``python -c``: click names the program in its usage lines after ``__main__``'s
        # package ("python -m pytest.logdoctor" under pytest) before ``sys.argv[0]`` ("logdoctor")
        sys.modules["__main__"] = types.ModuleType("__main__")
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                command()
            except SystemExit as e:
                status, last_words = _exit_status(e.code)
            err.write(last_words)
            out.flush()
            err.flush()
    finally:
        sys.modules["__main__"] = saved_main
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    return status, _as_text(raw_out.getvalue()), _as_text(raw_err.getvalue())


def typer_command(name: str) -> Any:
    """The click command typer builds for ``logdoctor NAME`` (its ``params``: every option's spellings,
    type and checks), the reference each fast path's table of flags and values is compared with."""
    import typer.main

    from logdoctor.cli.main import _register, app

    _register()
    info = next(i for i in app.registered_commands if i.name == name)
    return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)

"""``logdoctor ARGS`` run in the test's own process, for a test that checks what a command prints, exits
with and writes, not what its process does (issue 76: a kill -9, a signal, a real process's streams, a
command run as printed by a shell keep a process of their own).

:func:`logdoctor` gives what ``subprocess.run([python, "-c", "from logdoctor.cli.main import main;
main()", *ARGS], env={**os.environ, **env}, capture_output=True, text=True)`` gives: the same typer command
(the one :func:`logdoctor.cli.main.main` loads for ``ARGS[0]``), ``sys.argv``, environment, working folder,
exit status, stdout and stderr (tests/cli/cli_in_process.py). It saves the second interpreter's start and
the command's imports, ~0.2 s of CPU a call. Left out: main()'s fast paths without typer (``dump`` of
files, ``scan`` and ``repair`` of flags only), whose results equal the typer command's
(tests/cli/test_dump_fast.py, test_scan_fast.py, test_repair_fast.py), its help cache (off in the tests),
and what it does to the process itself (SIGPIPE, SIGUSR1, the collector frozen at exit)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _cli_in_process():
    """tests/cli/cli_in_process.py, one module whichever way it is imported."""
    module = sys.modules.get("cli_in_process")
    if module is None:
        spec = importlib.util.spec_from_file_location("cli_in_process", _HERE / "cli" / "cli_in_process.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["cli_in_process"] = module
        spec.loader.exec_module(module)
    return module


def _command() -> None:
    from logdoctor.cli import registry
    from logdoctor.cli.app import app

    entry = registry.find(sys.argv[1] if len(sys.argv) > 1 else None)
    if entry is not None:
        registry.load(entry)
    else:  # main() lists the summaries alone; a process that ran other commands has them loaded already
        registry.load_all()
    app()


def logdoctor(
    *args: object, env: Mapping[str, str] | None = None, cwd: os.PathLike[str] | str | None = None
) -> subprocess.CompletedProcess[str]:
    """``logdoctor ARGS`` in this process, with ``os.environ`` plus ``env``: its exit status as
    ``returncode``, its stdout and stderr as text."""
    argv = ["logdoctor", *map(str, args)]
    status, out, err = _cli_in_process().run(_command, argv, {**os.environ, **(env or {})}, cwd)
    return subprocess.CompletedProcess(argv, status, out, err)

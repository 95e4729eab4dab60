"""A command run without the CLI framework when its line holds only file arguments and on/off flags:
``logdoctor dump FILE...`` (:mod:`logdoctor.cli.dump.fast`), ``logdoctor scan --deep --json LOGDIR...``
(:mod:`logdoctor.cli.scan_fast`, then :mod:`logdoctor.cli.scan_run`). Importing typer and the command's
typer module, and building and parsing the command, costs CPU before any work: ~13 ms for `scan` (10 ms
the imports, 3 ms the command; measured with the collector off, as :func:`logdoctor.cli.main.main` loads a
command): the start-up of an operator's loop over files, and of each `scan` (BENCHMARKS.md, issue 35).

:func:`files_and_flags` takes exactly such a line; any other token (``--help``, an option with a value,
``--``, combined short flags, ``-`` as a file, an unknown option, no file at all) answers None and the
typer command parses the line as always, so that its messages, help and exit codes stay the only ones.
A command may also name options that take one plain value (``values``: each spelling -> its keyword), given
as ``--option VALUE``: the value is kept as the string it is (the caller turns it into what the typer option
would, where that is certain, e.g. a Path); ``--option=VALUE``, a missing value or a value starting with
``-`` answers None (typer's own parsing and messages). A command lists its fast module in
:data:`logdoctor.cli.registry.COMMANDS` (``fast``); that module's ``run_fast(args)`` answers the exit code,
or None for the typer command, and :func:`logdoctor.cli.main.main` runs it. Its tests compare both paths'
stdout, stderr and exit code.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

__all__ = ["WALKING_SWITCH_INTERVAL_S", "files_and_flags", "import_beside"]

#: the interpreter's switch interval while a command's modules load beside the threads it started first (a
#: `scan --deep`'s early walks, a `repair`'s early mappings). Such a thread takes the GIL back after each call
#: into C (a read, a chunk's batches, its records; a chunk's populate) and waits for it until the importing
#: thread lets go, at the latest after the switch interval (5 ms by default, for ~1 ms of work in C): the
#: threads then crawl while the imports run. Measured under load (paired rounds, BENCHMARKS.md): the early
#: walks with 5 ms +16 ms against none, with 0.5 ms -22 ms.
WALKING_SWITCH_INTERVAL_S = 0.0005


def import_beside(started: bool, module: str) -> ModuleType:
    """``module`` imported as :func:`logdoctor.cli.main.main` loads a command's modules, with the switch
    interval at :data:`WALKING_SWITCH_INTERVAL_S` while it loads when threads were ``started`` before it
    (put back after, whatever happens)."""
    from logdoctor.cli.main import _load_uncollected

    interval = sys.getswitchinterval()
    if started:
        sys.setswitchinterval(WALKING_SWITCH_INTERVAL_S)
    try:
        loaded: ModuleType = _load_uncollected(importlib.import_module, module)
    finally:
        sys.setswitchinterval(interval)
    return loaded


def files_and_flags(
    args: Sequence[str], flags: Mapping[str, str], values: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, Any]] | None:
    """The file arguments of ``args`` and the keywords its flags set (``flags``: each spelling of an on/off
    option -> the keyword of the command it sets; ``values``: each spelling of an option taking one
    value -> its keyword, set to the value's string; given twice: the last one, as typer takes it);
    None when ``args`` hold anything else or no file."""
    on: dict[str, Any] = {}
    files: list[str] = []
    it = iter(args)
    for arg in it:
        if arg.startswith("-"):
            name = flags.get(arg)
            if name is not None:
                on[name] = True
                continue
            name = (values or {}).get(arg)
            value = next(it, None)
            if name is None or value is None or value.startswith("-"):
                return None
            on[name] = value
        else:
            files.append(arg)
    if not files:
        return None
    return files, on

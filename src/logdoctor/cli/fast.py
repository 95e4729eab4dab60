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

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["files_and_flags"]


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

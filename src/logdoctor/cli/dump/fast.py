"""``logdoctor dump FILE... [FLAGS]`` without the CLI framework: the common call of an operator's loop
over thousands of files (``for f in */*.index; do logdoctor dump "$f"; done``) spends most of its time
importing typer (and what it imports) to parse a line that holds only file names and on/off flags.

:func:`run_fast` takes exactly that line (:func:`logdoctor.cli.fast.files_and_flags`): file arguments
and the boolean flags of :data:`FLAGS`; any other call answers None and the typer command parses the line
as always, so its messages, help and exit codes stay the only ones. What runs is the same
:func:`logdoctor.cli.dump.run` with the same :class:`~logdoctor.cli.dump.options.DumpOptions`
(``tests/cli/test_dump_fast.py`` compares both paths' stdout, stderr and exit code on every real file).
"""

from __future__ import annotations

from collections.abc import Sequence

from logdoctor.cli.fast import files_and_flags

__all__ = ["FLAGS", "run_fast"]

# flag -> the keyword of dump_options it sets (the typer command's boolean options, every spelling)
FLAGS: dict[str, str] = {
    "--deep": "deep",
    "-d": "deep",
    "--print-data": "print_data",
    "-p": "print_data",
    "--verify-index": "verify_index",
    "--verify-index-only": "verify_index_only",
    "--json": "json_out",
    "--no-crc": "no_crc",
    "--keep-cache": "keep_cache",
}


def run_fast(args: Sequence[str]) -> int | None:
    """Dump as ``logdoctor dump ARGS`` would and return its exit code; None when ARGS hold anything
    but files and :data:`FLAGS` (the caller then runs the typer command)."""
    got = files_and_flags(args, FLAGS)
    if got is None:
        return None
    files, flags = got
    from logdoctor.cli.dump import run
    from logdoctor.cli.dump.options import dump_options

    json_out = flags.pop("json_out", False)
    from logdoctor.logdir import page_cache

    page_cache.leave_as_found(not flags.pop("keep_cache", False))  # as the typer command sets it
    return run(files, dump_options(**flags), json_out=json_out)

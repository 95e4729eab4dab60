"""Where the dump's events go: the sink interface (errors and warnings on stderr) and JSON Lines."""

from __future__ import annotations

import sys
from pathlib import Path

from logdoctor.cli.dump.context import DumpFailure, Event, FileContext
from logdoctor.cli.escape import printable
from logdoctor.cli.jsonvalues import JsonLinesWriter


class Sink:
    """Where events go: JSON Lines (:class:`JsonSink`) or aligned text (:class:`TextSink`)."""

    #: takes ``record_lines`` events (a batch's record lines as printed text) in place of ``record`` events
    #: where the dumper can write them (``FileContext.record_lines``)
    takes_record_lines = False

    def event(self, ev: Event) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def error(self, path: Path, failure: DumpFailure) -> None:
        # "error: " as every command's error line starts (cli.error_lines), the JSON message without it
        print(printable(f"error: {failure.line}", keep_newlines=True), file=sys.stderr, flush=True)

    def warning(self, line: str) -> None:
        print(printable(f"warning: {line}", keep_newlines=True), file=sys.stderr, flush=True)

    def end_file(self, ctx: FileContext) -> None:
        pass

    def close(self) -> None:
        pass


class JsonSink(Sink):
    def __init__(self) -> None:
        self.out = JsonLinesWriter(sys.stdout)

    def event(self, ev: Event) -> None:
        self.out.write(ev)

    def error(self, path: Path, failure: DumpFailure) -> None:
        super().error(path, failure)
        self.out.write(
            {
                "type": "error",
                "file": str(path),
                "position": failure.position,
                "exit_code": failure.code,
                "message": failure.line,
            }
        )

    def close(self) -> None:
        sys.stdout.flush()

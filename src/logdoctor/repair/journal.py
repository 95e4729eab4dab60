"""The repair journal: an append-only JSON-lines file, fsynced after every record.

Record types (``"t"``): ``plan`` (first record: the whole plan, staged hashes, locks created),
``begin``/``done`` around each step, ``undo-begin``/``undo-done`` around each undo, ``note``,
``end`` (``status``: applied | rolled-back | failed). A crash can leave a torn last line; readers
ignore it (the step it would have recorded is redone or undone from the file state, which every
step can classify on its own).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.logdir.atomic import fsync_dir

JOURNAL_NAME = "journal.jsonl"


class JournalError(Exception):
    """The journal cannot be read or does not describe a plan."""


class EmptyJournalError(JournalError):
    """The journal holds no complete record: its run was stopped before its plan record (the commit
    point), so it changed nothing in the log dirs."""


class Journal:
    """Append records durably: write the line, fsync the file (and the folder on creation)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        existed = self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if not existed:
            os.fsync(self._fd)
            fsync_dir(self.path.parent)

    @classmethod
    def create(cls, path: str | os.PathLike[str], first: dict[str, Any]) -> Journal:
        """Create the journal with its first record at once: written and fsynced under a temp name,
        then renamed (and the folder fsynced). A kill at any moment leaves no journal or a journal
        that starts with ``first``, never an empty one that ``--resume``/``--rollback`` could not read.
        Refuses (FileExistsError) when ``path`` exists."""
        target = Path(path)
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, "a journal is already there", str(target))
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        data = (json.dumps(first, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)  # unlike rename, never replaces a journal that appeared meanwhile
        finally:
            os.unlink(tmp)
        fsync_dir(target.parent)
        return cls(target)

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), sort_keys=True) + "\n"
        data = line.encode("utf-8")
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(slots=True)
class JournalState:
    """What a journal says happened."""

    header: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    torn_tail: bool = False

    @property
    def begun(self) -> set[int]:
        return {r["step"] for r in self.records if r.get("t") == "begin"}

    @property
    def done(self) -> set[int]:
        """Steps whose last forward record is ``done`` and that were not undone since."""
        state: dict[int, str] = {}
        for r in self.records:
            t = r.get("t")
            if t in ("begin", "done", "undo-begin", "undo-done"):
                state[r["step"]] = t
        return {n for n, t in state.items() if t == "done"}

    @property
    def undone(self) -> set[int]:
        return {r["step"] for r in self.records if r.get("t") == "undo-done"}

    @property
    def status(self) -> str | None:
        ends = [r for r in self.records if r.get("t") == "end"]
        return ends[-1].get("status") if ends else None


def parse_lines(lines: Iterable[bytes]) -> tuple[list[dict[str, Any]], bool]:
    out: list[dict[str, Any]] = []
    torn = False
    items = list(lines)
    for i, raw in enumerate(items):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except ValueError:
            if i == len(items) - 1:
                torn = True  # a crash while appending: the last line is incomplete
                break
            raise JournalError(f"line {i + 1} of the journal is not JSON") from None
        if not isinstance(rec, dict):
            raise JournalError(f"line {i + 1} of the journal is not a JSON object")
        out.append(rec)
    return out, torn


def read_journal(path: str | os.PathLike[str]) -> JournalState:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise JournalError(f"cannot read journal {path}: {e.strerror}") from None
    records, torn = parse_lines(data.split(b"\n"))
    if not records:
        raise EmptyJournalError(
            f"{path} holds no plan record: the run that created it stopped before it changed anything "
            "(an older logdoctor created the journal before writing its plan)"
        )
    if records[0].get("t") != "plan":
        raise JournalError(f"{path} does not start with a plan record: not a logdoctor repair journal")
    return JournalState(records[0], records[1:], torn)


__all__ = ["JOURNAL_NAME", "EmptyJournalError", "Journal", "JournalError", "JournalState", "read_journal"]

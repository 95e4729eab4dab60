"""The repair journal: an append-only JSON-lines file, fsynced after every record.

Record types (``"t"``): ``plan`` (first record: the whole plan, staged hashes, locks created),
``begin``/``done`` around each step, ``undo-begin``/``undo-done`` around each undo, ``note``,
``end`` (``status``: applied | rolled-back | failed | rollback-failed). The plan record also holds
``snapshots`` (the state of every path the plan changes, taken just before the commit point), and each
``done`` record ``after`` (the state of the step's paths once it verified): what
:func:`logdoctor.repair.apply.check_recorded` compares with the files before a resume or rollback
writes anything (:mod:`logdoctor.repair.snapshot`); ``command`` names the command whose ``--resume``
and ``--rollback`` finish it. A crash can leave a torn last line; readers
ignore it (the step it would have recorded is redone or undone from the file state, which every
step can classify on its own).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logdoctor.logdir.atomic import fsync_dir, naming
from logdoctor.logdir.names import BACKUPS_FOLDER
from logdoctor.repair.backup import write_all

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
            with naming(target):
                write_all(fd, data)
                os.fsync(fd)
        except BaseException:
            os.unlink(tmp)
            raise
        finally:
            os.close(fd)
        try:
            os.link(tmp, target)  # unlike rename, never replaces a journal that appeared meanwhile
        finally:
            os.unlink(tmp)
        fsync_dir(target.parent)
        return cls(target)

    def append(self, record: dict[str, Any]) -> None:
        self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` in one write and one fsync (a group of steps' begin or done records: a
        crash leaves a prefix of them, the last line possibly torn, which :func:`parse_lines` drops)."""
        lines = "".join(json.dumps(r, separators=(",", ":"), sort_keys=True) + "\n" for r in records)
        data = lines.encode("utf-8")
        end = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            with naming(self.path):
                write_all(self._fd, data)
                os.fsync(self._fd)
        except OSError:
            # a full disk: no half record left for the next one to follow (the journal stays readable)
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, end)
            raise

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


@dataclass(frozen=True, slots=True)
class JournalInfo:
    """Another run's journal, as the check for unfinished and later runs of a log dir sees it."""

    path: str
    log_dirs: tuple[str, ...]  # real paths
    status: str | None
    started_ms: int
    command: str  # the command whose --resume/--rollback finishes it
    steps_total: int
    steps_done: int

    @property
    def finished(self) -> bool:
        """Applied to its end or rolled back: nothing of it is left half-done."""
        return self.status in ("applied", "rolled-back")


def journal_info(path: str | os.PathLike[str]) -> JournalInfo:
    """What :class:`JournalInfo` says of the journal at ``path`` (JournalError when unreadable)."""
    state = read_journal(path)
    plan = state.header.get("plan")
    if not isinstance(plan, dict):
        raise JournalError(f"{path}: no plan in its first record")
    dirs = tuple(os.path.realpath(d) for d in plan.get("log_dirs") or [])
    total = sum(len(a.get("steps") or []) for a in plan.get("actions") or [])
    return JournalInfo(
        os.path.abspath(path),
        dirs,
        state.status,
        int(state.header.get("started_ms") or 0),
        str(state.header.get("command") or "repair"),
        total,
        len(state.done),
    )


def journals_near(folders: Iterable[str | os.PathLike[str]]) -> list[JournalInfo]:
    """The journals in the sub-folders of ``folders`` and of their hidden ``.logdoctor-backups``
    (``<folder>/*/journal.jsonl``, ``<folder>/.logdoctor-backups/*/journal.jsonl``): where the default
    backup dirs go (beside each log dir; before issue 59 as ``<log dir>.logdoctor-backup-<time>``) and
    where ``--backup-dir`` is usually given. Unreadable or empty journals are left out (they record no
    change)."""
    out: dict[str, JournalInfo] = {}
    real = {os.path.realpath(f) for f in folders}
    for folder in real | {os.path.join(f, BACKUPS_FOLDER) for f in real}:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            try:
                if not e.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            path = os.path.join(e.path, JOURNAL_NAME)
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                info = journal_info(path)
            except (JournalError, OSError, ValueError, TypeError):
                continue
            out[os.path.realpath(path)] = info
    return sorted(out.values(), key=lambda i: (i.started_ms, i.path))


__all__ = [
    "JOURNAL_NAME",
    "EmptyJournalError",
    "Journal",
    "JournalError",
    "JournalInfo",
    "JournalState",
    "journal_info",
    "journals_near",
    "read_journal",
]

"""The state every repair rule shares while one plan is built: the plan itself, the backup names, which
live paths are already written or moved (one step per path), and what is known of the log dirs
(topic ids, KRaft, remote storage). The rules add their actions through :class:`PlanContext`; each
partition's progress through the rules is a :class:`PartitionPlan`."""

from __future__ import annotations

import difflib
import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field

from logdoctor.checks.context import Depth, PartitionReport
from logdoctor.checks.findings import Finding
from logdoctor.checks.tiered import BrokerRemoteEvidence
from logdoctor.logdir import files
from logdoctor.logdir.model import Partition
from logdoctor.logdir.names import parse_segment_file
from logdoctor.repair.plan import Action, Change, Plan, Step, Unrepaired
from logdoctor.repair.steps.base import BackupNames
from logdoctor.repair.steps.move import delete_with_backup
from logdoctor.repair.steps.write import write_file

_DIFF_LIMIT = 64 << 10
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


@dataclass(slots=True)
class PartitionPlan:
    """One partition's findings and what the rules already planned for it."""

    part: Partition
    report: PartitionReport | None
    findings: list[Finding] = field(default_factory=list)
    removed: set[int] = field(default_factory=set)  # base offsets of segments going to the backup
    rebuilt: set[int] = field(default_factory=set)  # segments whose three index files were rewritten
    new_leo: int | None = None  # after a truncation
    moved_paths: set[str] = field(default_factory=set)


def diff(path: str, before: bytes | None, after: bytes | None) -> str | None:
    if (before is not None and len(before) > _DIFF_LIMIT) or (after is not None and len(after) > _DIFF_LIMIT):
        return None
    a = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"{path} (now)", f"{path} (repaired)"))


def read(path: str) -> bytes | None:
    try:
        return files.read_file(path)
    except FileNotFoundError:
        return None


def segment_base(path: str) -> int | None:
    parsed = parse_segment_file(os.path.basename(path))
    return parsed.base_offset if parsed is not None else None


class SiblingModes:
    """The modes of a folder's entries, read once per folder (one scandir) for a whole plan: a plan is
    built before anything is written, so the folder does not change while it is asked. Asking for each
    of a partition's thousands of segments re-read the whole folder each time (quadratic in segments)."""

    def __init__(self) -> None:
        # folder -> (path -> (is a folder, owner, mode) of each entry, {(is a folder, owner): mode counts})
        self._folders: dict[
            str, tuple[dict[str, tuple[bool, int, int]], dict[tuple[bool, int], Counter[int]]]
        ] = {}

    def _read(
        self, folder: str
    ) -> tuple[dict[str, tuple[bool, int, int]], dict[tuple[bool, int], Counter[int]]]:
        known = self._folders.get(folder)
        if known is not None:
            return known
        entries: dict[str, tuple[bool, int, int]] = {}
        counts: dict[tuple[bool, int], Counter[int]] = {}
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.is_symlink():
                        continue
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    is_dir, mode = stat.S_ISDIR(st.st_mode), stat.S_IMODE(st.st_mode)
                    entries[e.path] = (is_dir, st.st_uid, mode)
                    if mode & (0o700 if is_dir else 0o600) == (0o700 if is_dir else 0o600):
                        counts.setdefault((is_dir, st.st_uid), Counter())[mode] += 1
        except OSError:
            pass
        self._folders[folder] = (entries, counts)
        return entries, counts

    def mode(self, path: str, is_dir: bool, uid: int) -> int:
        """The mode most siblings of ``path`` of its kind (file or folder) and owner have (default
        755/644), ``path`` itself not counted."""
        entries, counts = self._read(os.path.dirname(path))
        modes = counts.get((is_dir, uid))
        own = entries.get(path)
        if modes is not None and own is not None and own[:2] == (is_dir, uid) and own[2] in modes:
            modes = modes.copy()
            modes[own[2]] -= 1
        return next((m for m, n in (modes or Counter()).most_common() if n > 0), 0o755 if is_dir else 0o644)


class PlanContext:
    """The plan being built and the shared helpers of the rules (add, write_step, move_step)."""

    def __init__(
        self,
        log_dirs: list[str],
        backup_dir: str,
        codes: set[str],
        index_interval_bytes: int,
        depth: Depth = Depth.DEFAULT,
        allow_metadata_loss: bool = False,
    ) -> None:
        self.depth = depth
        self.allow_metadata_loss = allow_metadata_loss
        self.log_dirs = log_dirs
        self.backup_dir = backup_dir
        self.codes = codes
        self.interval = index_interval_bytes
        self.names = BackupNames(log_dirs)
        self.plan = Plan(log_dirs, backup_dir, created_ms=int(time.time() * 1000), depth=depth.name.lower())
        self.written: dict[str, Step] = {}  # live path -> its write step (one per path)
        self.moved: set[str] = set()
        self.dir_owner: dict[str, tuple[int, int]] = {}
        self.sibling_modes = SiblingModes()
        # what the scan tells of the log dirs (set by the planner before the rules run)
        self.image_topic_ids: dict[str, str] = {}
        self.topic_ids: dict[str, dict[str, str]] = {}  # topic -> {topic id: a partition.metadata holding it}
        self.kraft: str | None = None
        self.remote: BrokerRemoteEvidence | None = None
        #: partition folder -> its log end offset after the plan's truncation (the consumer-group notes)
        self.new_log_ends: dict[str, int] = {}

    def unrepaired(self, f: Finding, why: str) -> None:
        self.plan.unrepaired.append(Unrepaired(f.code, f.path, why))

    def left_alone(self, path: str) -> bool:
        """True when ``path`` exists and is not a regular file (a symlink, a FIFO, a socket, a device): it is
        never read or written through, so the step that would replace it is left out of the plan (the rest
        is planned) and the plan says why, under the scan's own finding for it."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        if stat.S_ISREG(st.st_mode):
            return False
        if stat.S_ISLNK(st.st_mode):
            code, what = "SYMLINK_IN_LOG_DIR", f"a symlink (to {os.readlink(path)})"
        else:
            code, what = "NOT_A_REGULAR_FILE", files.file_kind(st.st_mode)
            what = f"a {what}"
        why = (
            f"{path} is {what}, not a regular file: repair never reads or writes through it, so what it "
            "would rewrite there is left out of the plan (the rest is planned); move it out of the log dir "
            "and repair again"
        )
        for i, u in enumerate(self.plan.unrepaired):
            if u.path == path and u.code == code:
                self.plan.unrepaired[i] = Unrepaired(code, path, why, u.severity)
                return True
        self.plan.unrepaired.append(Unrepaired(code, path, why))
        return True

    def add(self, action: Action) -> None:
        if action.steps:
            self.plan.actions.append(action)

    def write_step(
        self,
        action: Action,
        path: str,
        data: bytes,
        note: str = "",
        meta_after: dict[str, int] | None = None,
        text: bool = False,
    ) -> bool:
        """Add a write of ``path`` unless it already holds ``data`` (or is not a regular file:
        :meth:`left_alone`). True when added."""
        if self.left_alone(path):
            return False
        before = read(path)
        if before == data:
            return False
        if path in self.written:
            raise AssertionError(f"{path} written twice in one plan")
        step = write_file(path, data, self.names, meta_after=meta_after if before is None else None)
        self.written[path] = step
        action.steps.append(step)
        action.changes.append(
            Change(
                path,
                None if before is None else len(before),
                len(data),
                diff(path, before, data) if text else None,
                note,
            )
        )
        return True

    def move_step(self, action: Action, path: str, note: str = "") -> None:
        if path in self.moved or not os.path.lexists(path):
            return
        if os.path.islink(path) and self.left_alone(path):
            return
        self.moved.add(path)
        step = delete_with_backup(path, self.names)
        action.steps.append(step)
        action.changes.append(
            Change(path, int(step.params["size"]), None, None, note or "moved to the backup dir")
        )

    def owner_of(self, log_dir: str) -> tuple[int, int]:
        if log_dir not in self.dir_owner:
            st = os.stat(log_dir)
            self.dir_owner[log_dir] = (st.st_uid, st.st_gid)
        return self.dir_owner[log_dir]

    def log_dir_of(self, path: str) -> str | None:
        for d in self.log_dirs:
            if path == d or path.startswith(d.rstrip(os.sep) + os.sep):
                return d
        return None

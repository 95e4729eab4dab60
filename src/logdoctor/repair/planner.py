"""Findings -> plan: what to do about each repairable finding of a scan, the way Kafka's own startup
recovery would resolve it, with nothing lost (everything removed goes to the backup dir).

Per code (K: = apache/kafka source):

- INDEX_CORRUPT / INDEX_MISSING / RETENTION_RISK: rebuild the segment's index files from its .log
  exactly as LogSegment.recover does (:func:`logdoctor.formats.recovery.rebuild_indexes`); only the
  files named by the findings are written (RETENTION_RISK: the .timeindex, so the largest timestamp
  is the true one). The .txnindex is seeded with the transactions open at the segment's base
  offset (producer snapshot there, else replayed from the partition's first segment).
- LOG_CORRUPT: truncate the segment at the first invalid batch (``valid_bytes``; the tail goes to
  the backup), rebuild its indexes, then what K:storage/.../log/LogLoader.java recoverLog does after
  a truncation: delete every later segment of the partition (to the backup), drop producer
  snapshots beyond the new log end, and truncate the leader epoch cache at the new log end
  (LeaderEpochFileCache.truncateFromEnd: entries with start offset >= log end go).
  Exactly as K:storage/.../log/LogSegment.java recover: the walk stops at the first batch failing
  ``ensureValid`` (CRC, size) and the log is cut at the bytes before it; an offset index append
  failing with InvalidOffsetException (offsets not increasing) makes recoverLog truncate the whole
  segment to its base offset (``segment.truncateTo(baseOffset)``: 0 bytes); an offset beyond the
  int32 range (LogSegmentOffsetOverflowException) is not truncated but split by the broker
  (LogLoader.retryOnOffsetOverflow), which logdoctor leaves to it. The recovery point becomes
  ``min(recovery point, new log end)`` (recoverLog's RecoveryOffsets). A CRC mismatch in a segment
  the broker does not re-read at startup (clean shutdown, below the recovery point) is found only
  by ``scan --deep``; ``repair --deep`` plans the same truncation for it, as if the broker had
  recovered that segment.
- ORPHAN_FILE: as LogLoader.removeTempFilesAndCollectSwapFiles and load(): ``.deleted`` removed;
  ``.cleaned`` removed; ``.swap`` files at or above the smallest ``.cleaned`` offset removed; the
  other ``.swap`` segments replace the files in [min swap base, max swap next offset) (removed)
  and are renamed into place; index files without a .log, temp files and partial snapshots removed.
  Folders (-delete, -future, -stray) are left to the broker.
- CHECKPOINT_MISMATCH / CHECKPOINT_CORRUPT: rewrite the offset checkpoints so the count line
  agrees and entries agree with the partitions present: absent partitions dropped; missing ones
  added (recovery point and high watermark at the log start offset, which is what the broker
  assumes for them); recovery point and high watermark clamped to the log end offset, the high
  watermark and cleaner offset raised to the local log start (UnifiedLog raises them to
  localLogStartOffset). log-start-offset-checkpoint entries are never raised: an entry of a tiered
  partition, or below the first local segment, is kept as it is (raised, it would make the broker's
  RemoteLogManager delete the remote segments below it; without remote storage LogLoader takes
  max(entry, first segment) itself); an entry beyond the log end (LogLoader.recoverLog would delete
  every segment) becomes the first offset on disk, except where the partition is or may be tiered
  (then it is left and listed as not repaired, with why: :func:`_log_start_decision`).
  leader-epoch-checkpoint: rewritten from its readable entries below the log end.
- LEADER_EPOCH_BEYOND_LOG_END: as the broker, truncate the epoch cache at the log end offset.
- PRODUCER_SNAPSHOT_AHEAD: remove the snapshot (the broker deletes it).
- PERMISSION_DENIED: owner and group of the log dir (the broker's user), mode like the siblings.
- PARTITION_METADATA_INVALID (empty or unparsable ``partition.metadata``): the broker cannot read
  it (K:storage/.../checkpoint/PartitionMetadataReadBuffer.java: no ``version: 0`` line; an empty
  file gives readLine() == null) and fails to load the log. When the file is absent,
  K:core/.../log/UnifiedLog.scala initializeTopicId reads no id and the broker writes the file again
  once it learns the topic id (assignTopicId -> PartitionMetadataFile.maybeFlush, ``version: 0\n
  topic_id: <id>``). So: when the topic id is known from another partition of the same topic in the
  log dirs given, write exactly what maybeFlush writes; else, in ZooKeeper mode, remove the file (to
  the backup) and let the broker write it (the controller's LeaderAndIsr carries the id; below IBP
  2.8 the broker deletes the file itself). In KRaft mode a log without a topic id is a stray log
  (K:core/.../log/LogManager.scala isStrayKraftReplica), so removing the file is never planned
  there: the id must come from the cluster (a person).
- META_PROPERTIES_INVALID: not changed. What a broker does with an empty meta.properties depends on
  its version (catalog.META_PROPERTIES_EMPTY_BY_VERSION: 0.9-2.7 fail to start, ZooKeeper-mode 2.8-3.6
  rewrite it only when no other log dir holds a full one, 3.7-3.9 rewrite it, KRaft refuses), and only
  a person can restore node.id, cluster.id and directory.id.
"""

from __future__ import annotations

import difflib
import os
import shlex
import stat
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from logdoctor.checks import catalog
from logdoctor.checks.context import Depth, PartitionReport, ScanOptions
from logdoctor.checks.findings import Finding, Severity
from logdoctor.checks.metadata_log import metadata_log_loss
from logdoctor.checks.scanner import ScanReport, scan
from logdoctor.checks.tiered import REMOTE_TIER_RULE, broker_remote_evidence, could_be_tiered
from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import (
    LeaderEpochCheckpoint,
    OffsetCheckpoint,
    scan_leader_epoch_checkpoint,
    scan_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from logdoctor.formats.partition_metadata import (
    PARTITION_METADATA_VERSION,
    PartitionMetadata,
    write_partition_metadata,
)
from logdoctor.formats.producer_snapshot import parse_producer_snapshot
from logdoctor.formats.records import iter_batches
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES, RebuiltIndexes, rebuild_indexes
from logdoctor.logdir import files
from logdoctor.logdir.model import LogDir, Partition, Segment
from logdoctor.logdir.names import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    METADATA_TOPIC,
    OFFSET_CHECKPOINT_FILES,
    PARTITION_METADATA_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    DirKind,
    parse_segment_file,
    segment_file_name,
)
from logdoctor.logdir.recognize import recognize
from logdoctor.repair import actions as act
from logdoctor.repair import backup as bk
from logdoctor.repair import safety
from logdoctor.repair.plan import Action, Change, Plan, Step, Unrepaired

REPAIRABLE = (
    "INDEX_CORRUPT",
    "INDEX_MISSING",
    "RETENTION_RISK",
    "LOG_CORRUPT",
    "ORPHAN_FILE",
    "CHECKPOINT_MISMATCH",
    "CHECKPOINT_CORRUPT",
    "LEADER_EPOCH_BEYOND_LOG_END",
    "PRODUCER_SNAPSHOT_AHEAD",
    "PERMISSION_DENIED",
    "PARTITION_METADATA_INVALID",
)
_META_PROPERTIES_WHY = (
    "meta.properties holds the broker's identity, which only a person can confirm, so repair never writes "
    "it; for an empty one: "
    + catalog.META_PROPERTIES_EMPTY_BY_VERSION
    + ". Where the broker would not rewrite it, restore it from another log dir of the same broker "
    "(version, broker.id or node.id, cluster.id; a KRaft dir keeps its own directory.id)"
)
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
_DIFF_LIMIT = 64 << 10


class PlanUsageError(Exception):
    """Bad input to the planner (unknown code, not a directory)."""


@dataclass(slots=True)
class _PartitionPlan:
    part: Partition
    report: PartitionReport | None
    findings: list[Finding] = field(default_factory=list)
    removed: set[int] = field(default_factory=set)  # base offsets of segments going to the backup
    rebuilt: set[int] = field(default_factory=set)  # segments whose three index files were rewritten
    new_leo: int | None = None  # after a truncation
    moved_paths: set[str] = field(default_factory=set)


def _diff(path: str, before: bytes | None, after: bytes | None) -> str | None:
    if (before is not None and len(before) > _DIFF_LIMIT) or (after is not None and len(after) > _DIFF_LIMIT):
        return None
    a = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"{path} (now)", f"{path} (repaired)"))


def _read(path: str) -> bytes | None:
    try:
        return files.read_file(path)
    except FileNotFoundError:
        return None


class Planner:
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
        self.names = act.BackupNames(log_dirs)
        self.plan = Plan(log_dirs, backup_dir, created_ms=int(time.time() * 1000), depth=depth.name.lower())
        self.written: dict[str, Step] = {}  # live path -> its write step (one per path)
        self.moved: set[str] = set()
        self.dir_owner: dict[str, tuple[int, int]] = {}

    # helpers ---------------------------------------------------------------------------------------
    def unrepaired(self, f: Finding, why: str) -> None:
        self.plan.unrepaired.append(Unrepaired(f.code, f.path, why))

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
        """Add a write of ``path`` unless it already holds ``data``. True when added."""
        before = _read(path)
        if before == data:
            return False
        if path in self.written:
            raise AssertionError(f"{path} written twice in one plan")
        step = act.write_file(path, data, self.names, meta_after=meta_after if before is None else None)
        self.written[path] = step
        action.steps.append(step)
        action.changes.append(
            Change(
                path,
                None if before is None else len(before),
                len(data),
                _diff(path, before, data) if text else None,
                note,
            )
        )
        return True

    def move_step(self, action: Action, path: str, note: str = "") -> None:
        if path in self.moved or not os.path.lexists(path):
            return
        self.moved.add(path)
        step = act.delete_with_backup(path, self.names)
        action.steps.append(step)
        action.changes.append(
            Change(path, int(step.params["size"]), None, None, note or "moved to the backup dir")
        )

    def owner_of(self, log_dir: str) -> tuple[int, int]:
        if log_dir not in self.dir_owner:
            st = os.stat(log_dir)
            self.dir_owner[log_dir] = (st.st_uid, st.st_gid)
        return self.dir_owner[log_dir]

    # entry point -----------------------------------------------------------------------------------
    def build(self, report: ScanReport) -> Plan:
        by_dir: dict[str, list[Finding]] = {d: [] for d in self.log_dirs}
        for f in report.findings:
            d = self._log_dir_of(f.path)
            if f.code not in self.codes:
                if f.severity >= Severity.WARNING and d is not None:
                    if f.code in REPAIRABLE:
                        self.unrepaired(f, f"not selected by --only (add {f.code} to repair it)")
                    elif f.code == "META_PROPERTIES_INVALID":
                        self.unrepaired(f, _META_PROPERTIES_WHY)
                    else:
                        self.unrepaired(f, "not something logdoctor repair changes: " + f.fix)
                continue
            if d is None:
                self.unrepaired(f, "not inside the log dirs given")
                continue
            if not safety.is_contained(f.path, [d]):
                self.unrepaired(f, "its path leaves the log dir (symlink or '..'): never written through")
                continue
            by_dir[d].append(f)
        reports = {(r.log_dir, r.path): r for r in report.partitions}
        image = report.metadata
        self.image_topic_ids: dict[str, str] = dict(image.topics) if image is not None else {}
        self.topic_ids: dict[str, dict[str, str]] = {}  # topic -> {topic id: a partition.metadata holding it}
        for r in report.partitions:
            if r.topic_id:
                self.topic_ids.setdefault(r.topic, {}).setdefault(
                    r.topic_id, os.path.join(r.path, PARTITION_METADATA_FILE)
                )
        self.kraft = self._kraft_evidence(report)
        self.remote = broker_remote_evidence(self.log_dirs)
        perm = [f for fs in by_dir.values() for f in fs if f.code == "PERMISSION_DENIED"]
        for f in perm:
            self._permission(f)
        for d in self.log_dirs:
            self._log_dir(d, [f for f in by_dir[d] if f.code != "PERMISSION_DENIED"], reports)
        note = tiered_note([r for r in report.partitions if r.log_dir in self.log_dirs])
        if note:
            self.plan.notes.insert(0, note)
        self._consequences_with_their_cause(report.findings)
        self.plan.number_steps()
        return self.plan

    def _consequences_with_their_cause(self, findings: list[Finding]) -> None:
        """A finding caused by another (checks.consequences) that an action repairs goes with that action,
        not to "Not repaired" (e.g. the stray warning of a KRaft replica whose partition.metadata the plan
        rewrites)."""
        handled: dict[tuple[str, str], Action] = {}
        for a in self.plan.actions:
            for code in a.codes:
                for path in a.finding_paths:
                    handled.setdefault((code, path), a)
        causes = {(f.code, f.path): f.caused_by for f in findings if f.caused_by is not None}
        keep: list[Unrepaired] = []
        for u in self.plan.unrepaired:
            cause = causes.get((u.code, u.path))
            action = handled.get((cause.code, cause.path)) if cause is not None else None
            if action is None:
                keep.append(u)
                continue
            if u.code not in action.codes:
                action.codes.append(u.code)
            action.finding_paths.append(u.path)
            action.reason += f"; and with it {u.code} {u.path}, its consequence"
        self.plan.unrepaired = keep

    def _kraft_evidence(self, report: ScanReport) -> str | None:
        """Why these log dirs look like a KRaft broker's (None: nothing says KRaft)."""
        for r in report.log_dirs:
            if r.mode == "kraft":
                return f"{r.path}/meta.properties is version 1 (KRaft)"
        for d in self.log_dirs:
            if os.path.exists(os.path.join(d, "__cluster_metadata-0")):
                return f"{d} holds __cluster_metadata-0 (KRaft)"
            try:
                meta = LogDir(d).meta_properties
            except OSError:
                meta = None
            if meta is not None and getattr(meta, "is_kraft", False):
                return f"{d}/meta.properties is version 1 (KRaft)"
        return None

    def _partition_metadata(self, pp: _PartitionPlan, f: Finding) -> None:
        topic = pp.part.topic
        ids = self.topic_ids.get(topic, {})
        action = Action("fix-partition-metadata", f.path, f"{f.code}: {f.message}", [f.code], [f.path])
        image_id = self.image_topic_ids.get(topic)
        if not ids and image_id is not None:  # KRaft: the id the broker's own metadata log holds
            ids = {image_id: "the cluster metadata log (__cluster_metadata-0 of these log dirs)"}
        if len(ids) == 1:
            ((topic_id, source),) = ids.items()
            data = write_partition_metadata(PartitionMetadata(PARTITION_METADATA_VERSION, topic_id, b""))
            self.write_step(
                action,
                f.path,
                data,
                f"topic id {topic_id} of {topic} from {source}: the bytes the broker writes "
                "(PartitionMetadataFile.maybeFlush)",
                text=True,
            )
            self.add(action)
            return
        if len(ids) > 1:
            self.unrepaired(
                f,
                f"partitions of {topic} disagree on its topic id ({', '.join(sorted(ids))}): which one is "
                "the cluster's needs a person (`kafka-topics --describe --topic " + topic + "`)",
            )
            return
        if self.kraft is not None:
            self.unrepaired(
                f,
                f"KRaft ({self.kraft}): without partition.metadata the broker treats the log as stray "
                "(LogManager.isStrayKraftReplica) and the topic id is in no file given; a person writes "
                f"'version: 0\\ntopic_id: <id>' with the id from `kafka-topics --describe --topic {topic}`",
            )
            return
        self.move_step(
            action,
            f.path,
            "ZooKeeper mode: with no partition.metadata the broker loads the log and writes the file again "
            "once the controller sends the topic id (UnifiedLog.initializeTopicId / assignTopicId -> "
            "maybeFlushMetadataFile); the unreadable file fails the log's load (PartitionMetadataReadBuffer)",
        )
        self.add(action)

    def _log_dir_of(self, path: str) -> str | None:
        for d in self.log_dirs:
            if path == d or path.startswith(d.rstrip(os.sep) + os.sep):
                return d
        return None

    # permissions -----------------------------------------------------------------------------------
    def _permission(self, f: Finding) -> None:
        d = self._log_dir_of(f.path)
        assert d is not None
        path = f.path
        try:
            st = os.lstat(path)
        except OSError as e:
            self.unrepaired(f, f"cannot stat it: {e.strerror}")
            return
        if stat.S_ISLNK(st.st_mode):
            self.unrepaired(f, "a symlink: never changed")
            return
        uid, gid = self.owner_of(d)
        is_dir = stat.S_ISDIR(st.st_mode)
        if path == d:
            uid, gid = st.st_uid, st.st_gid  # the log dir's owner is the broker's user
            mode = stat.S_IMODE(st.st_mode) | 0o700
        else:
            mode = self._sibling_mode(path, is_dir, uid) | (0o700 if is_dir else 0o600)
        if (st.st_uid, st.st_gid) != (uid, gid) and os.geteuid() != 0:
            self.unrepaired(f, "changing the owner needs root")
            return
        if (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (uid, gid, mode):
            return
        step = act.set_owner_mode(path, uid, gid, mode)
        before = step.params["meta_before"]
        self.add(
            Action(
                "fix-permissions",
                path,
                f"{f.code}: {f.message}",
                [f.code],
                [f.path],
                [step],
                [
                    Change(
                        path,
                        None,
                        None,
                        None,
                        f"owner {before['uid']}:{before['gid']} mode {before['mode']:o} -> "
                        f"owner {uid}:{gid} mode {mode:o}",
                    )
                ],
            )
        )

    def _sibling_mode(self, path: str, is_dir: bool, uid: int) -> int:
        folder = os.path.dirname(path)
        modes: Counter[int] = Counter()
        need = 0o700 if is_dir else 0o600
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.path == path or e.is_symlink():
                        continue
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if (
                        stat.S_ISDIR(st.st_mode) == is_dir
                        and st.st_uid == uid
                        and stat.S_IMODE(st.st_mode) & need == need
                    ):
                        modes[stat.S_IMODE(st.st_mode)] += 1
        except OSError:
            pass
        if modes:
            return modes.most_common(1)[0][0]
        return 0o755 if is_dir else 0o644

    # one log dir -----------------------------------------------------------------------------------
    def _log_dir(
        self, d: str, findings: list[Finding], reports: dict[tuple[str, str], PartitionReport]
    ) -> None:
        ld = LogDir(d)
        parts = {str(p.path): p for p in ld.partitions}
        root: list[Finding] = []
        per_part: dict[str, list[Finding]] = {}
        for f in findings:
            rel = os.path.relpath(f.path, d)
            top = rel.split(os.sep)[0]
            folder = os.path.join(d, top)
            if rel != "." and os.sep in rel and folder in parts:
                per_part.setdefault(folder, []).append(f)
            else:
                root.append(f)
        states: dict[tuple[str, int], _PartitionPlan] = {}
        for folder, fs in sorted(per_part.items()):
            part = parts[folder]
            if not safety.is_contained(folder, [d]) or os.path.realpath(folder) != os.path.join(
                os.path.realpath(d), os.path.basename(folder)
            ):
                for f in fs:
                    self.unrepaired(f, "the partition folder is a symlink: never written through")
                continue
            pp = _PartitionPlan(part, reports.get((d, folder)), fs)
            self._partition(pp)
            states[(part.topic, part.partition)] = pp
        if "RETENTION_RISK" in self.codes:
            for folder, part in sorted(parts.items()):
                if folder not in per_part and safety.is_contained(folder, [d]) and not os.path.islink(folder):
                    states.setdefault(
                        (part.topic, part.partition), _PartitionPlan(part, reports.get((d, folder)))
                    )
            for st in states.values():
                self._latent_retention(st)
        for f in root:
            if f.code == "ORPHAN_FILE" and f.details.get("kind") == "tmp-file":
                a = Action("remove-orphan", f.path, f"{f.code}: {f.message}", [f.code], [f.path])
                self.move_step(a, f.path, "left by an interrupted write; moved to the backup dir")
                self.add(a)
            elif f.code in ("CHECKPOINT_MISMATCH", "CHECKPOINT_CORRUPT") and os.path.basename(f.path) in (
                OFFSET_CHECKPOINT_FILES
            ):
                continue  # below
            else:
                self.unrepaired(
                    f,
                    "left to the broker (it resolves it at startup)"
                    if f.code == "ORPHAN_FILE"
                    else "no automatic repair for this finding: " + f.fix,
                )
        self._checkpoints(
            d,
            ld,
            [f for f in root if f.code in ("CHECKPOINT_MISMATCH", "CHECKPOINT_CORRUPT")],
            reports,
            states,
        )

    # one partition ---------------------------------------------------------------------------------
    def _partition(self, pp: _PartitionPlan) -> None:
        orphans = [f for f in pp.findings if f.code == "ORPHAN_FILE"]
        if orphans:
            self._orphans(pp, orphans)
        segs = {s.base_offset: s for s in pp.part.segments}
        corrupt = sorted(
            (
                b
                for f in pp.findings
                if f.code == "LOG_CORRUPT"
                for b in [self._segment_base(f.path)]
                if b is not None and b in segs and b not in pp.removed
            ),
        )
        if corrupt:
            self._truncate(pp, segs[corrupt[0]], [f for f in pp.findings if f.code == "LOG_CORRUPT"])
        for f in pp.findings:
            if f.code == "PARTITION_METADATA_INVALID":
                self._partition_metadata(pp, f)
        wanted: dict[int, dict[str, list[Finding]]] = {}
        for f in pp.findings:
            base = self._segment_base(f.path)
            if base is None or base not in segs:
                continue
            if f.code == "INDEX_CORRUPT":
                suffix = Path(f.path).suffix
                if suffix in _INDEX_SUFFIXES:
                    wanted.setdefault(base, {}).setdefault(suffix, []).append(f)
            elif f.code == "INDEX_MISSING":
                for m in f.details.get("missing") or [".index", ".timeindex"]:
                    wanted.setdefault(base, {}).setdefault(m, []).append(f)
            elif f.code == "RETENTION_RISK":
                wanted.setdefault(base, {}).setdefault(".timeindex", []).append(f)
        for base, which in sorted(wanted.items()):
            if base in pp.removed or base in pp.rebuilt:
                continue
            self._rebuild(pp, segs[base], which)
        self._small_files(pp)

    def _latent_retention(self, pp: _PartitionPlan) -> None:
        """Inactive segments whose time index would give retention a wrong largest timestamp once the
        segment is below the recovery point (the scan reports it only then; a repaired recovery-point
        checkpoint can expose it): rebuild their .timeindex too."""
        try:
            segs = pp.part.segments
        except OSError:
            return
        for seg in segs[:-1]:
            base = seg.base_offset
            path = os.path.join(str(pp.part.path), segment_file_name(base, ".timeindex"))
            if base in pp.removed or base in pp.rebuilt or path in self.written or path in self.moved:
                continue
            try:
                if seg.size == 0:
                    continue
                size = os.path.getsize(path) if os.path.exists(path) else 0
                last = files.read_range(path, (size // 12 - 1) * 12, 12) if size >= 12 else b""
            except OSError:
                continue
            if len(last) == 12 and int.from_bytes(last[:8], "big", signed=True) > 0:
                continue
            r = self._rebuilt(pp, seg, False)
            if r.max_timestamp < 0 or _read(path) == r.time_index:
                continue
            a = Action(
                "rebuild-indexes",
                str(seg.log_path),
                f"RETENTION_RISK (latent): {path} gives no true largest timestamp (empty, zero or "
                f"missing); once the segment is below the recovery point, time retention would use 0 or "
                f"the .log mtime instead of {r.max_timestamp}",
                ["RETENTION_RISK"],
                [path],
            )
            self._write_indexes(pp, seg, a, r, [".timeindex"])
            pp.rebuilt.add(base)
            self.add(a)

    @staticmethod
    def _segment_base(path: str) -> int | None:
        parsed = parse_segment_file(os.path.basename(path))
        return parsed.base_offset if parsed is not None else None

    def _orphans(self, pp: _PartitionPlan, orphans: list[Finding]) -> None:
        folder = str(pp.part.path)
        kinds = {f.details.get("kind") for f in orphans}
        action = Action(
            "resolve-orphans",
            folder,
            "; ".join(f"{f.code}: {f.message}" for f in orphans),
            ["ORPHAN_FILE"],
            [f.path for f in orphans],
        )
        simple = [
            f
            for f in orphans
            if f.details.get("kind") in ("deleted", "index-without-log", "tmp-file", "partial-snapshot")
        ]
        for f in simple:
            self.move_step(action, f.path, f"{f.details.get('kind')}: removed as the broker does at startup")
        if kinds & {"swap", "cleaned"}:
            self._swaps(pp, action)
        for f in orphans:
            if f.details.get("kind") not in (
                "deleted",
                "index-without-log",
                "tmp-file",
                "partial-snapshot",
                "swap",
                "cleaned",
            ):
                self.unrepaired(f, "unknown orphan kind")
        self.add(action)

    def _swaps(self, pp: _PartitionPlan, action: Action) -> None:
        """K:storage/.../log/LogLoader.java removeTempFilesAndCollectSwapFiles + load() passes 2 and 3."""
        folder = str(pp.part.path)
        names = sorted(os.listdir(folder))
        cleaned = [n for n in names if n.endswith(".cleaned")]
        swaps = [n for n in names if n.endswith(".swap")]
        min_cleaned = min((int(n.split(".")[0]) for n in cleaned if n.split(".")[0].isdigit()), default=None)
        for n in names:
            if n.endswith(".deleted"):
                self.move_step(action, os.path.join(folder, n), ".deleted: removed as the broker does")
        valid = []
        for n in swaps:
            off = int(n.split(".")[0]) if n.split(".")[0].isdigit() else None
            if off is None:
                continue
            if min_cleaned is not None and off >= min_cleaned:
                self.move_step(
                    action,
                    os.path.join(folder, n),
                    "swap at or above a .cleaned offset (an incomplete split): removed as the broker does",
                )
            else:
                valid.append((off, n))
        for n in cleaned:
            self.move_step(action, os.path.join(folder, n), ".cleaned: removed as the broker does")
        lo, hi = None, None
        for off, n in valid:
            if not n.endswith(".log.swap"):
                continue
            nxt = off
            try:
                for b in iter_batches(files.map_file(os.path.join(folder, n)), source=n):
                    nxt = b.last_offset + 1
            except FormatError:
                pass
            lo = off if lo is None else min(lo, off)
            hi = nxt if hi is None else max(hi, nxt)
        if lo is not None and hi is not None:
            for n in names:
                head = n.split(".")[0]
                if n.endswith(".swap") or not head.isdigit():
                    continue
                if lo <= int(head) < hi:
                    self.move_step(
                        action,
                        os.path.join(folder, n),
                        "replaced by a compacted/split .swap segment: removed as the broker does",
                    )
                    parsed = parse_segment_file(n)
                    if parsed is not None:
                        pp.removed.add(parsed.base_offset)
        for _off, n in sorted(valid):
            src = os.path.join(folder, n)
            dst = src[: -len(".swap")]
            if os.path.lexists(dst) and dst not in self.moved:
                self.move_step(action, dst, "replaced by its .swap file")
            action.steps.append(act.rename_path(src, dst))
            action.changes.append(Change(dst, None, os.path.getsize(src), None, f"renamed from {n}"))
            parsed = parse_segment_file(os.path.basename(dst))
            if parsed is not None:
                pp.removed.discard(parsed.base_offset)
                pp.rebuilt.add(parsed.base_offset)  # its indexes come with it; rescan after

    # truncation ------------------------------------------------------------------------------------
    def _open_transactions(self, pp: _PartitionPlan, seg: Segment) -> dict[int, int]:
        """Transactions open at ``seg``'s base offset, as LogLoader rebuilds producer state."""
        snap = dict(pp.part.producer_snapshots).get(seg.base_offset)
        if snap is not None:
            try:
                return parse_producer_snapshot(files.read_file(snap), source=str(snap)).ongoing_transactions()
            except (FormatError, OSError):
                pass
        open_txns: dict[int, int] = {}
        for s in pp.part.segments:
            if s.base_offset >= seg.base_offset:
                break
            r = rebuild_indexes(
                s.map_log(),
                s.base_offset,
                index_interval_bytes=self.interval,
                source=str(s.log_path),
                open_transactions=open_txns,
            )
            open_txns = r.open_transactions
        return open_txns

    def _rebuilt(self, pp: _PartitionPlan, seg: Segment, need_txn: bool) -> RebuiltIndexes:
        txns = self._open_transactions(pp, seg) if need_txn else None
        return rebuild_indexes(
            seg.map_log(),
            seg.base_offset,
            index_interval_bytes=self.interval,
            source=str(seg.log_path),
            open_transactions=txns,
        )

    def _index_meta(self, seg: Segment) -> dict[str, int]:
        """Owner and mode of a new index file: the broker's user (the log dir's owner), mode like siblings."""
        log_dir = self._log_dir_of(str(seg.log_path))
        assert log_dir is not None
        uid, gid = self.owner_of(log_dir)
        return {"uid": uid, "gid": gid, "mode": self._sibling_mode(str(seg.log_path), False, uid) | 0o600}

    def _write_indexes(
        self, pp: _PartitionPlan, seg: Segment, action: Action, r: RebuiltIndexes, which: Iterable[str]
    ) -> None:
        folder = str(pp.part.path)
        meta = self._index_meta(seg)
        data = {".index": r.offset_index, ".timeindex": r.time_index, ".txnindex": r.txn_index}
        for suffix in which:
            path = os.path.join(folder, segment_file_name(seg.base_offset, suffix))
            if suffix == ".txnindex" and not os.path.exists(path) and not r.txn_index:
                continue  # Kafka creates a .txnindex only when it has an entry
            self.write_step(
                action,
                path,
                data[suffix],
                "rebuilt from the .log as LogSegment.recover does",
                meta_after=meta,
            )

    def _rebuild(self, pp: _PartitionPlan, seg: Segment, which: dict[str, list[Finding]]) -> None:
        fs = [f for v in which.values() for f in v]
        uniq = list(dict.fromkeys(f.path for f in fs))
        action = Action(
            "rebuild-indexes",
            str(seg.log_path),
            "; ".join(dict.fromkeys(f"{f.code}: {f.message}" for f in fs)),
            sorted({f.code for f in fs}),
            uniq,
        )
        r = self._rebuilt(pp, seg, ".txnindex" in which)
        log_path = str(seg.log_path)
        if r.valid_bytes < seg.size and r.error is not None:
            # the .log itself has an invalid batch the scan at this depth did not report (below the
            # recovery point after a clean shutdown the broker never re-reads it): the rebuilt
            # indexes cover the valid bytes only, as recovery's would; the cut is repair --deep's
            cut = (
                f"its batch at byte position {r.valid_bytes} is invalid ({r.error}); the rebuilt "
                "indexes stop there. `logdoctor repair --deep` truncates the segment there as the "
                "broker's recovery would (the cut bytes kept in the backup)"
            )
            if not any(u.code == "LOG_CORRUPT" and u.path == log_path for u in self.plan.unrepaired):
                self.plan.unrepaired.append(Unrepaired("LOG_CORRUPT", log_path, cut, Severity.ERROR.label))
            for f in fs:
                if f.code == "RETENTION_RISK":  # the true largest timestamp may lie beyond the cut
                    self.unrepaired(f, f"{seg.log_name}: " + cut)
        self._write_indexes(pp, seg, action, r, sorted(which))
        self.add(action)

    def _truncate(self, pp: _PartitionPlan, seg: Segment, fs: list[Finding]) -> None:
        r = self._rebuilt(pp, seg, True)
        size = seg.size
        if r.valid_bytes >= size:
            overlap = any(f.details.get("kind") == "overlap" for f in fs)
            for f in fs:
                if f.details.get("kind") == "overlap" or overlap:
                    why = (
                        "segments overlap but every batch is valid: the broker's recovery truncates nothing "
                        "here, and which copy of the overlapping offsets is right needs a person"
                    )
                elif self.depth < Depth.DEEP:
                    why = "recovery finds no invalid batch to truncate at (rescan with --deep)"
                else:
                    why = "the broker's recovery reads every batch of this segment as valid: nothing to cut"
                self.unrepaired(f, why)
            return
        if r.error is not None and _is_offset_overflow(r.error):
            for f in fs:
                self.unrepaired(
                    f,
                    "an offset beyond the int32 range of the segment's base offset: the broker splits such a "
                    "segment at startup (LogLoader.retryOnOffsetOverflow / splitOverflowedSegment) instead "
                    "of truncating it; logdoctor leaves that to the broker",
                )
            return
        if r.error is not None and _is_index_offset_error(r.error):
            # InvalidOffsetException from OffsetIndex.append: recoverLog truncates the whole segment
            # to its base offset (LogLoader.recoverLog: segment.truncateTo(startOffset))
            r = rebuild_indexes(
                b"", seg.base_offset, index_interval_bytes=self.interval, source=str(seg.log_path)
            )
        loss_note = ""
        if pp.part.topic == METADATA_TOPIC:
            # the KRaft metadata log: what the cut loses, and the last voter's consent (checks.metadata_log)
            loss = metadata_log_loss(
                str(seg.log_path), r.valid_bytes, pp.report.log_end_offset if pp.report else None
            )
            if loss.last_voter and not self.allow_metadata_loss:
                consent = (
                    f"logdoctor repair {' '.join(self.log_dirs)} --only LOG_CORRUPT"
                    f"{' --deep' if self.depth >= Depth.DEEP else ''} --allow-metadata-loss"
                )
                for f in fs:
                    self.unrepaired(
                        f,
                        "refused: the KRaft metadata log of a node no other voter backs "
                        f"({loss.voters_text()}); "
                        f"{loss.loss_text()}. Copy {pp.part.path} first; `{consent}` prints the plan that "
                        "truncates it (explicit consent), add --apply to make it",
                    )
                return
            if not any(f.details.get("metadata_log") for f in fs):  # the finding says it already
                loss_note = f" KRaft metadata log ({loss.voters_text()}): {loss.loss_text()}."
        action = Action(
            "truncate-log",
            str(seg.log_path),
            "; ".join(f"{f.code}: {f.message}" for f in fs) + loss_note,
            ["LOG_CORRUPT"],
            [f.path for f in fs],
        )
        step = act.truncate_file(str(seg.log_path), r.valid_bytes, self.names)
        action.steps.append(step)
        action.changes.append(
            Change(
                str(seg.log_path),
                size,
                r.valid_bytes,
                None,
                f"{size - r.valid_bytes} bytes from position {r.valid_bytes} on go to the backup "
                f"(LogSegment.recover stops there: {r.error})",
            )
        )
        self._write_indexes(pp, seg, action, r, _INDEX_SUFFIXES)
        pp.rebuilt.add(seg.base_offset)
        new_leo = r.next_offset if r.next_offset is not None else seg.base_offset
        pp.new_leo = new_leo
        for later in pp.part.segments:
            if later.base_offset <= seg.base_offset:
                continue
            pp.removed.add(later.base_offset)
            for p in (later.log_path, later.index_path, later.timeindex_path, later.txnindex_path):
                if p is not None:
                    self.move_step(
                        action,
                        str(p),
                        "a later segment: recovery deletes it after a truncation (kept in the backup dir)",
                    )
        for off, spath in pp.part.producer_snapshots:
            if off > new_leo:
                self.move_step(action, str(spath), f"producer snapshot beyond the new log end {new_leo}")
        self.add(action)

    # per-partition small files ---------------------------------------------------------------------
    def _small_files(self, pp: _PartitionPlan) -> None:
        leo = pp.new_leo if pp.new_leo is not None else (pp.report.log_end_offset if pp.report else None)
        epoch_findings = [
            f
            for f in pp.findings
            if os.path.basename(f.path) == LEADER_EPOCH_CHECKPOINT_FILE
            and f.code in ("LEADER_EPOCH_BEYOND_LOG_END", "CHECKPOINT_CORRUPT")
        ]
        path = os.path.join(str(pp.part.path), LEADER_EPOCH_CHECKPOINT_FILE)
        data = _read(path)
        if data is not None and leo is not None and (epoch_findings or pp.new_leo is not None):
            try:
                cp = scan_leader_epoch_checkpoint(data, source=path).checkpoint
                entries = [(e, s) for e, s in cp.entries if s < leo]
                new = write_leader_epoch_checkpoint(LeaderEpochCheckpoint(0, entries))
            except (FormatError, ValueError):
                new = None
            if new is not None and new != data:
                a = Action(
                    "rewrite-leader-epochs",
                    path,
                    "; ".join(f"{f.code}: {f.message}" for f in epoch_findings)
                    or f"the log end moves to {leo}: the broker truncates the epoch cache there",
                    sorted({f.code for f in epoch_findings}) or ["LOG_CORRUPT"],
                    [f.path for f in epoch_findings],
                )
                self.write_step(
                    a,
                    path,
                    new,
                    "entries at or beyond the log end dropped (LeaderEpochFileCache.truncateFromEnd)",
                    text=True,
                )
                self.add(a)
        for f in pp.findings:
            if f.code == "PRODUCER_SNAPSHOT_AHEAD":
                a = Action("remove-snapshot", f.path, f"{f.code}: {f.message}", [f.code], [f.path])
                self.move_step(a, f.path, "the broker deletes it at startup")
                self.add(a)

    # offset checkpoints ----------------------------------------------------------------------------
    def _checkpoints(
        self,
        d: str,
        ld: LogDir,
        fs: list[Finding],
        reports: dict[tuple[str, str], PartitionReport],
        states: dict[tuple[str, int], _PartitionPlan],
    ) -> None:
        truncated = {tp: s.new_leo for tp, s in states.items() if s.new_leo is not None}
        live: dict[tuple[str, int], _Bounds | None] = {}  # None: present but unreadable
        lsc_read = ld.checkpoint(LOG_START_OFFSET_CHECKPOINT)
        lsc = dict(lsc_read.offsets) if lsc_read.checkpoint is not None else {}
        for (log_dir, _path), r in reports.items():
            if log_dir != d or r.kind != DirKind.LOG.value or r.topic == "__cluster_metadata":
                continue
            leo = truncated.get((r.topic, r.partition), r.log_end_offset)
            if leo is None or r.first_base_offset is None:
                live[(r.topic, r.partition)] = None  # present but unreadable: its entries are kept
                continue
            live[(r.topic, r.partition)] = _Bounds(
                r.first_base_offset,
                leo,
                r.remote_log_enabled,
                r.tiering_evidence,
                maybe_tiered=could_be_tiered(r.topic, r.topic_config, self.remote),
            )
        # the log start entries first: what each will be after the plan, and why (the other files are
        # clamped to the local log start that follows from it)
        decisions: dict[tuple[str, int], _LogStartDecision] = {}
        for tp, o in lsc.items():
            b = live.get(tp)
            if b is not None:
                decisions[tp] = _log_start_decision(tp, o, b, d)
        for tp, b in live.items():
            if b is not None:
                entry = decisions[tp].value if tp in decisions else lsc.get(tp)
                b.local_start = b.first if entry is None else max(b.first, min(entry, b.leo))
        by_file: dict[str, list[Finding]] = {}
        for f in fs:
            by_file.setdefault(os.path.basename(f.path), []).append(f)
        for name in OFFSET_CHECKPOINT_FILES:
            path = os.path.join(d, name)
            mine = by_file.get(name, [])
            touched = set(truncated)
            if name == LOG_START_OFFSET_CHECKPOINT:
                # an entry the broker would act on at startup is planned even when only another file
                # of the log dir had a finding (a log start beyond the log end: all segments deleted)
                touched |= {tp for tp, dec in decisions.items() if dec.changed}
            if not mine and not touched:
                continue
            before = _read(path)
            if before is None and not (name == RECOVERY_POINT_CHECKPOINT and mine):
                continue
            # without a finding on this file, only the entries of the partitions truncated here change
            new = self._desired_checkpoint(name, before, path, live, decisions, None if mine else touched)
            notes = [
                dec.note
                for tp, dec in sorted(decisions.items())
                if name == LOG_START_OFFSET_CHECKPOINT and dec.note
            ]
            if name == LOG_START_OFFSET_CHECKPOINT:
                for _tp, dec in sorted(decisions.items()):
                    if dec.refused:
                        self.plan.unrepaired.append(Unrepaired("CHECKPOINT_MISMATCH", path, dec.note))
            if new is None or new == before:
                if notes and before is not None:
                    self.plan.notes.extend(f"{path}: {n}" for n in notes)
                continue
            reason = "; ".join(f"{f.code}: {f.message}" for f in mine) or (
                "log end offsets change by the truncations in this plan"
                if name != LOG_START_OFFSET_CHECKPOINT or truncated
                else "CHECKPOINT_MISMATCH: a log start offset beyond the log end"
            )
            a = Action(
                "rewrite-checkpoint",
                path,
                reason,
                sorted({f.code for f in mine}) or (["LOG_CORRUPT"] if truncated else ["CHECKPOINT_MISMATCH"]),
                [f.path for f in mine],
            )
            meta = None
            if before is None:
                st = os.stat(d)
                meta = {"uid": st.st_uid, "gid": st.st_gid, "mode": 0o644}
            note = "count line and entries agree with the partitions present"
            if notes:
                note += "; " + "; ".join(notes)
            self.write_step(a, path, new, note, meta_after=meta, text=True)
            self.add(a)

    @staticmethod
    def _desired_checkpoint(
        name: str,
        before: bytes | None,
        path: str,
        live: dict[tuple[str, int], _Bounds | None],
        decisions: dict[tuple[str, int], _LogStartDecision],
        only: set[tuple[str, int]] | None = None,
    ) -> bytes | None:
        entries: list[tuple[str, int, int]] = []
        if before:
            try:
                scanned = scan_offset_checkpoint(before, source=path)
            except FormatError:
                scanned = None
            if scanned is not None:
                assert isinstance(scanned.checkpoint, OffsetCheckpoint)
                entries = list(scanned.checkpoint.entries)
                if only is not None and scanned.problems:
                    return None  # a file with its own problems is rewritten only when asked

        def value(tp: tuple[str, int], o: int) -> int:
            bounds = live.get(tp)
            if bounds is None:
                return o
            if name == LOG_START_OFFSET_CHECKPOINT:
                dec = decisions.get(tp)
                return dec.value if dec is not None else o
            if name == RECOVERY_POINT_CHECKPOINT:
                return min(o, bounds.leo)
            # high watermark, cleaner offset: within [local log start, log end] (UnifiedLog raises the
            # high watermark to the local log start; the cleaner works on local segments)
            return max(bounds.local_start, min(o, bounds.leo))

        if only is not None:
            clamped = [(t, p, value((t, p), o) if (t, p) in only else o) for t, p, o in entries]
            try:
                return write_offset_checkpoint(OffsetCheckpoint(0, clamped))
            except ValueError:
                return None
        values: dict[tuple[str, int], int] = {}
        order: list[tuple[str, int]] = []
        for t, p, o in entries:
            if (t, p) not in values:
                order.append((t, p))
            values[(t, p)] = o  # a later duplicate wins, as in the broker's map
        out: list[tuple[str, int, int]] = []
        for tp in order:
            if tp not in live:
                continue  # absent partition (the broker drops it at its next checkpoint)
            out.append((tp[0], tp[1], value(tp, values[tp])))
        if name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
            for tp in sorted(live):
                bounds = live[tp]
                if tp not in values and bounds is not None:
                    out.append((tp[0], tp[1], bounds.local_start))
        try:
            return write_offset_checkpoint(OffsetCheckpoint(0, out))
        except ValueError:
            return None


@dataclass(slots=True)
class _Bounds:
    """A live partition's offsets as the plan leaves them (log end after any truncation here)."""

    first: int  # first local segment's base offset
    leo: int
    tiered: bool
    evidence: str
    local_start: int = 0  # the local log start after the plan (set once the log start entries are decided)
    maybe_tiered: bool = False  # nothing excludes remote storage and the broker shows it


@dataclass(frozen=True, slots=True)
class _LogStartDecision:
    value: int  # the entry after the plan
    changed: bool
    note: str = ""  # why (empty: nothing to say)
    refused: bool = False  # the entry is wrong but left as it is: listed under "Not repaired"


def _log_start_decision(
    tp: tuple[str, int], o: int, b: _Bounds, log_dir: str
) -> _LogStartDecision:
    """What the plan does with one log-start-offset-checkpoint entry ``o``: never raise nor rewrite the
    log start of a tiered partition, nor of any partition whose entry is below its first local segment;
    lower an entry beyond the log end to the first offset on disk (issue 24), never for a tiered one.

    K:storage/.../log/LogLoader.java load: ``isRemoteLogEnabled ? logStartOffsetCheckpoint :
    Math.max(logStartOffsetCheckpoint, first segment)`` (an entry below the first segment is harmless
    without remote storage, and the whole log with it); recoverLog deleteSegmentsIfLogStartGreaterThanLogEnd:
    'Deleting all segments because logEndOffset ... is smaller than logStartOffset' (an entry beyond the
    log end loses every local record at startup); K:core/.../log/remote/RemoteLogManager.java
    RLMExpirationTask: remote segments below the log start offset are deleted from the remote storage.
    """
    name = f"{tp[0]}-{tp[1]}"
    if b.tiered:
        if o > b.leo:
            return _LogStartDecision(
                o,
                False,
                f"{name} is tiered ({b.evidence}) and its entry claims log start {o}, beyond its local log "
                f"end {b.leo}: at startup the broker would delete every local segment (LogLoader.recoverLog: "
                f"'Deleting all segments because logEndOffset ... is smaller than logStartOffset') and "
                f"{REMOTE_TIER_RULE}. Left as it is: a lower entry lets the broker delete the remote "
                "segments below it, and where the remote tier starts is not known offline. Set the entry "
                "by hand to the partition's log start offset as the leader or the remote log metadata has "
                "it (kafka-get-offsets --time -2 on a running cluster), at most "
                f"{b.first} (the first local offset), with the broker stopped",
                refused=True,
            )
        return _LogStartDecision(
            o,
            False,
            f"{name} {o} kept as it is (tiered, local log start {max(b.first, o)}: a raised entry would "
            "make the broker delete the remote segments below it)",
        )
    if o < b.first:
        return _LogStartDecision(
            o,
            False,
            f"{name} {o} kept as it is (below the first local segment {b.first}: without remote storage the "
            "broker uses max(entry, first segment) itself, LogLoader.load; with it the entry is where the "
            "remote tier starts)",
        )
    if o > b.leo and b.maybe_tiered:
        return _LogStartDecision(
            o,
            False,
            f"{name}: the checkpoint claims log start {o}, beyond the log end {b.leo}; at startup the "
            "broker would delete every local segment (LogLoader.recoverLog: 'Deleting all segments because "
            "logEndOffset ... is smaller than logStartOffset'). Left as it is: the log dirs show remote "
            f"storage (__remote_log_metadata or remote-log-index-cache) and nothing says whether {tp[0]} is "
            f"tiered; if it is, {REMOTE_TIER_RULE}, and a lower entry would delete the remote segments below "
            f"it. If {tp[0]} has no remote.storage.enable, `logdoctor repair {shlex.quote(log_dir)} "
            f"--topic-config {shlex.quote(tp[0] + ':remote.storage.enable=false')}` sets the entry to the "
            "first offset on disk; if it has, set the entry by hand to the partition's log start offset as "
            "the leader or the remote log metadata has it, with the broker stopped",
            refused=True,
        )
    if o > b.leo:
        return _LogStartDecision(
            b.first,
            True,
            f"{name} {o} -> {b.first}: the checkpoint claimed log start {o}, beyond the log end {b.leo}; at "
            f"startup the broker would delete all its segments (LogLoader.recoverLog: 'Deleting all segments "
            f"because logEndOffset ({b.leo}) is smaller than logStartOffset {o}') and start empty at {o}; "
            f"set to the first offset on disk so every record of [{b.first}, {b.leo}) stays readable",
        )
    return _LogStartDecision(o, False)


def tiered_note(partitions: Iterable[PartitionReport]) -> str | None:
    """The plan's word on the tiered partitions of its log dirs (None: none is tiered)."""
    tiered = [r for r in partitions if r.remote_log_enabled]
    if not tiered:
        return None
    shown = ", ".join(
        f"{r.topic}-{r.partition} (log start {r.log_start_offset}, "
        f"local log start {r.local_log_start_offset})"
        for r in tiered[:10]
    )
    more = f" and {len(tiered) - 10} more" if len(tiered) > 10 else ""
    return (
        f"tiered partitions (remote storage on: {tiered[0].tiering_evidence}): {shown}{more}. "
        f"Their offsets below the local log start are in the remote tier; {REMOTE_TIER_RULE}. This plan "
        "never raises nor rewrites their log-start-offset-checkpoint entries, so the broker keeps every "
        "remote segment it has now"
    )


def _is_offset_overflow(error: FormatError) -> bool:
    """LogSegmentOffsetOverflowException: a last offset outside [base, base + int32 max]."""
    return str(getattr(error, "expected", "")).startswith("a last offset within int32")


def _is_index_offset_error(error: FormatError) -> bool:
    """InvalidOffsetException of OffsetIndex.append: an offset not above the last indexed one."""
    return str(getattr(error, "expected", "")).startswith("an offset above the last indexed offset")


def parse_only(text: str | None) -> set[str]:
    if not text:
        return set(REPAIRABLE)
    codes = {c.strip().upper() for c in text.split(",") if c.strip()}
    unknown = codes - set(REPAIRABLE)
    if unknown:
        raise PlanUsageError(
            f"--only: {', '.join(sorted(unknown))} not repairable; choose from {', '.join(REPAIRABLE)}"
        )
    return codes


def plan_repair(
    log_dirs: Iterable[str | os.PathLike[str]],
    *,
    only: set[str] | None = None,
    backup_dir: str | None = None,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    report: ScanReport | None = None,
    jobs: int | None = None,
    now_ms: int | None = None,
    deep: bool = False,
    config_inputs: ConfigInputs | None = None,
    allow_metadata_loss: bool = False,
) -> tuple[Plan, ScanReport]:
    """Scan (unless ``report`` is given) and plan the repair of the findings. Reads only.

    ``config_inputs``: ``--topic-config`` / ``--server-properties`` (whether a topic is tiered, which
    decides what is done with its log start offset: :mod:`logdoctor.checks.tiered`).

    ``deep``: scan at ``--deep`` depth (every batch's CRC), so that what only ``scan --deep`` finds
    (a CRC mismatch in a segment the broker does not re-read at startup) is planned too.
    ``allow_metadata_loss``: consent to truncating a KRaft metadata log no other voter holds."""
    dirs = []
    for d in log_dirs:
        p = os.path.abspath(os.fspath(d))
        what = recognize(p)
        if not what.is_log_dir:  # a partition folder's files are not "unknown files" to remove
            raise PlanUsageError(what.refusal())
        dirs.append(p)
    if not dirs:
        raise PlanUsageError("no log dir given")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if report is None:
        options = ScanOptions(
            depth=Depth.DEEP if deep else Depth.DEFAULT, now_ms=now, config_inputs=config_inputs
        )
        report = scan(dirs, options, jobs=jobs)
    backup = os.path.abspath(backup_dir) if backup_dir else bk.default_backup_dir(dirs[0], now)
    safety.check_backup_location(backup, dirs)
    planner = Planner(
        dirs,
        backup,
        set(only) if only is not None else set(REPAIRABLE),
        index_interval_bytes,
        depth=max(report.depth, Depth.DEFAULT),
        allow_metadata_loss=allow_metadata_loss,
    )
    return planner.build(report), report


__all__ = ["REPAIRABLE", "PlanUsageError", "Planner", "parse_only", "plan_repair"]

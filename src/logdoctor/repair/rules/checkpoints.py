"""The offset checkpoint files of a log dir: CHECKPOINT_MISMATCH, CHECKPOINT_CORRUPT.

Restates K:server-common/.../server/common/CheckpointFile.java and
K:storage/.../checkpoint/OffsetCheckpointFile.java (the format: version line, count line,
``topic partition offset`` lines; the count must agree) and what
K:core/src/main/scala/kafka/log/LogManager.scala
and K:core/src/main/scala/kafka/log/UnifiedLog.scala do with the entries at startup. The files
(recovery-point-offset-checkpoint, replication-offset-checkpoint, log-start-offset-checkpoint,
cleaner-offset-checkpoint) are rewritten so the count line agrees and the entries agree with the
partitions present: absent partitions dropped (the broker drops them at its next checkpoint); missing
ones added to the recovery point and high watermark files at the log start offset (what the broker
assumes for them); the recovery point clamped to the log end offset (also after a truncation of this
plan: LogLoader.recoverLog's RecoveryOffsets); the high watermark and cleaner offset within
[local log start, log end] (UnifiedLog raises them to localLogStartOffset).

The tiered log-start rule (:func:`_log_start_decision`): log-start-offset-checkpoint entries are never
raised. An entry of a tiered partition, or below the first local segment, is kept
(K:storage/.../log/LogLoader.java load: ``isRemoteLogEnabled ? logStartOffsetCheckpoint :
max(entry, first segment)``; raised, it would make K:core/src/main/java/kafka/log/remote/RemoteLogManager.java
RLMExpirationTask delete the remote segments below it). An entry beyond the log end (recoverLog would
delete every segment) becomes the first offset on disk, except
where the partition is or may be tiered: then it is left and listed as not repaired, with why.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from logdoctor.checks.context import PartitionReport
from logdoctor.checks.findings import Finding
from logdoctor.checks.tiered import REMOTE_TIER_RULE, could_be_tiered
from logdoctor.errors import FormatError
from logdoctor.formats.checkpoint import OffsetCheckpoint, scan_offset_checkpoint, write_offset_checkpoint
from logdoctor.logdir.model import LogDir
from logdoctor.logdir.names import (
    LOG_START_OFFSET_CHECKPOINT,
    OFFSET_CHECKPOINT_FILES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    DirKind,
)
from logdoctor.repair.plan import Action, Unrepaired
from logdoctor.repair.rules.context import PartitionPlan, PlanContext, read

CODES = ("CHECKPOINT_MISMATCH", "CHECKPOINT_CORRUPT")


def plan(
    ctx: PlanContext,
    d: str,
    ld: LogDir,
    fs: list[Finding],
    reports: dict[tuple[str, str], PartitionReport],
    states: dict[tuple[str, int], PartitionPlan],
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
            maybe_tiered=could_be_tiered(r.topic, r.topic_config, ctx.remote),
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
        if ctx.left_alone(path):
            continue
        before = read(path)
        if before is None and not (name == RECOVERY_POINT_CHECKPOINT and mine):
            continue
        # without a finding on this file, only the entries of the partitions truncated here change
        new = desired_checkpoint(name, before, path, live, decisions, None if mine else touched)
        notes = [
            dec.note
            for tp, dec in sorted(decisions.items())
            if name == LOG_START_OFFSET_CHECKPOINT and dec.note
        ]
        if name == LOG_START_OFFSET_CHECKPOINT:
            for _tp, dec in sorted(decisions.items()):
                if dec.refused:
                    ctx.plan.unrepaired.append(Unrepaired("CHECKPOINT_MISMATCH", path, dec.note))
        if new is None or new == before:
            if notes and before is not None:
                ctx.plan.notes.extend(f"{path}: {n}" for n in notes)
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
        ctx.write_step(a, path, new, note, meta_after=meta, text=True)
        ctx.add(a)


def desired_checkpoint(
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
        # recovery point, high watermark, cleaner offset: within [local log start, log end] (UnifiedLog's
        # constructor, updateLocalLogStartOffset, raises the recovery point and the high watermark to the
        # local log start, as scan's CHECKPOINT_MISMATCH says; the cleaner works on local segments)
        return max(bounds.local_start, min(o, bounds.leo))

    if only is not None:
        clamped = [(t, p, value((t, p), o) if (t, p) in only else o) for t, p, o in entries]
        try:
            return write_offset_checkpoint(OffsetCheckpoint(0, clamped))
        except ValueError:
            return None
    # a later duplicate wins, as in the broker's map (a dict keeps the first one's place)
    values = {(t, p): o for t, p, o in entries}
    # an absent partition's entry goes (the broker drops it at its next checkpoint)
    out = [(tp[0], tp[1], value(tp, o)) for tp, o in values.items() if tp in live]
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


def _log_start_decision(tp: tuple[str, int], o: int, b: _Bounds, log_dir: str) -> _LogStartDecision:
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

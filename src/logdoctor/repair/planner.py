"""Findings -> plan: what to do about each repairable finding of a scan, the way Kafka's own startup
recovery would resolve it, with nothing lost (everything removed goes to the backup dir).

Each rule family is one module of :mod:`logdoctor.repair.rules` naming its finding codes and the Kafka
source it restates (docs/repair-rules.md: the rules in the order a broker applies them). This module
only sorts the findings by log dir and partition, runs the rules in the broker's order and assembles
the plan:

1. permissions (:mod:`~logdoctor.repair.rules.permissions`), so every later file can be read;
2. per partition: orphan, temp and swap files (:mod:`~logdoctor.repair.rules.orphans`,
   LogLoader.removeTempFilesAndCollectSwapFiles), the truncation of a corrupt log and its aftermath
   (:mod:`~logdoctor.repair.rules.truncation`, LogSegment.recover / LogLoader.recoverLog),
   partition.metadata (:mod:`~logdoctor.repair.rules.properties`), index rebuilds
   (:mod:`~logdoctor.repair.rules.indexes`, LogSegment.recover), the leader epoch cache
   (:mod:`~logdoctor.repair.rules.leader_epochs`) and producer snapshots
   (:mod:`~logdoctor.repair.rules.producer_snapshots`);
3. per log dir: latent retention risks (indexes), root temp files (orphans), then the offset
   checkpoints (:mod:`~logdoctor.repair.rules.checkpoints`, incl. the tiered log-start rule), which
   see the log ends the truncations leave;
4. a finding caused by another (checks.consequences) goes with the action that repairs its cause.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from logdoctor.checks.context import Depth, PartitionReport, ScanOptions
from logdoctor.checks.findings import Finding, Severity
from logdoctor.checks.scanner import ScanReport, scan
from logdoctor.checks.tiered import broker_remote_evidence
from logdoctor.checks.topic_config import ConfigInputs
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from logdoctor.logdir.model import LogDir
from logdoctor.logdir.names import OFFSET_CHECKPOINT_FILES, PARTITION_METADATA_FILE
from logdoctor.logdir.recognize import recognize
from logdoctor.repair import backup as bk
from logdoctor.repair import safety
from logdoctor.repair.plan import Action, Plan, Unrepaired
from logdoctor.repair.rules import (
    checkpoints,
    indexes,
    leader_epochs,
    orphans,
    permissions,
    producer_snapshots,
    properties,
    truncation,
)
from logdoctor.repair.rules.checkpoints import tiered_note
from logdoctor.repair.rules.context import PartitionPlan, PlanContext

# the codes each rule plans for, in the order of --only's help
REPAIRABLE = (
    *indexes.CODES,
    *truncation.CODES,
    *orphans.CODES,
    *checkpoints.CODES,
    *leader_epochs.CODES,
    *producer_snapshots.CODES,
    *permissions.CODES,
    *properties.CODES,
)


class PlanUsageError(Exception):
    """Bad input to the planner (unknown code, not a directory)."""


def build(ctx: PlanContext, report: ScanReport) -> Plan:
    by_dir: dict[str, list[Finding]] = {d: [] for d in ctx.log_dirs}
    for f in report.findings:
        d = ctx.log_dir_of(f.path)
        if f.code not in ctx.codes:
            if f.severity >= Severity.WARNING and d is not None:
                if f.code in REPAIRABLE:
                    ctx.unrepaired(f, f"not selected by --only (add {f.code} to repair it)")
                elif f.code == "META_PROPERTIES_INVALID":
                    ctx.unrepaired(f, properties.meta_properties_why(f))
                else:
                    ctx.unrepaired(f, "not something logdoctor repair changes: " + f.fix)
            continue
        if d is None:
            ctx.unrepaired(f, "not inside the log dirs given")
            continue
        if not safety.is_contained(f.path, [d]):
            ctx.unrepaired(f, "its path leaves the log dir (symlink or '..'): never written through")
            continue
        by_dir[d].append(f)
    reports = {(r.log_dir, r.path): r for r in report.partitions}
    image = report.metadata
    ctx.image_topic_ids = dict(image.topics) if image is not None else {}
    ctx.topic_ids = {}
    for r in report.partitions:
        if r.topic_id:
            ctx.topic_ids.setdefault(r.topic, {}).setdefault(
                r.topic_id, os.path.join(r.path, PARTITION_METADATA_FILE)
            )
    ctx.kraft = properties.kraft_evidence(ctx, report)
    ctx.remote = broker_remote_evidence(ctx.log_dirs)
    perm = [f for fs in by_dir.values() for f in fs if f.code == "PERMISSION_DENIED"]
    for f in perm:
        permissions.permission(ctx, f)
    for d in ctx.log_dirs:
        log_dir(ctx, d, [f for f in by_dir[d] if f.code != "PERMISSION_DENIED"], reports)
    note = tiered_note([r for r in report.partitions if r.log_dir in ctx.log_dirs])
    if note:
        ctx.plan.notes.insert(0, note)
    consequences_with_their_cause(ctx, report.findings)
    ctx.plan.notes.extend(consumer_group_notes(report, ctx.new_log_ends))
    ctx.plan.number_steps()
    return ctx.plan


def consumer_group_notes(report: ScanReport, new_log_ends: dict[str, int]) -> list[str]:
    """One note per consumer group and partition the plan moves out of its log range (a truncation below
    its committed offset, a log start raised above it), with what each auto.offset.reset does then
    (:func:`logdoctor.checks.consumer_groups.moved_out_of_range`)."""
    if not new_log_ends:
        return []
    from logdoctor.checks.consumer_groups import clusters_of, moved_out_of_range, plan_note
    from logdoctor.checks.cross_dir import broker_groups

    ranges = {}
    for r in report.partitions:
        end = new_log_ends.get(r.path)
        if end is not None:
            start = r.log_start_offset if r.log_start_offset is not None else (r.first_base_offset or 0)
            ranges[r.path] = (min(start, end), end)  # UnifiedLog.truncateTo below the log start: starts there
    clusters = clusters_of(broker_groups(report.log_dirs))
    return [plan_note(o) for o in moved_out_of_range(report.partitions, clusters, ranges)]


def consequences_with_their_cause(ctx: PlanContext, findings: list[Finding]) -> None:
    """A finding caused by another (checks.consequences) that an action repairs goes with that action,
    not to "Not repaired" (e.g. the stray warning of a KRaft replica whose partition.metadata the plan
    rewrites)."""
    handled: dict[tuple[str, str], Action] = {}
    for a in ctx.plan.actions:
        for code in a.codes:
            for path in a.finding_paths:
                handled.setdefault((code, path), a)
    causes = {(f.code, f.path): f.caused_by for f in findings if f.caused_by is not None}
    keep: list[Unrepaired] = []
    for u in ctx.plan.unrepaired:
        cause = causes.get((u.code, u.path))
        action = handled.get((cause.code, cause.path)) if cause is not None else None
        if action is None:
            keep.append(u)
            continue
        if u.code not in action.codes:
            action.codes.append(u.code)
        action.finding_paths.append(u.path)
        action.reason += f"; and with it {u.code} {u.path}, its consequence"
    ctx.plan.unrepaired = keep


def log_dir(
    ctx: PlanContext, d: str, findings: list[Finding], reports: dict[tuple[str, str], PartitionReport]
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
    states: dict[tuple[str, int], PartitionPlan] = {}
    for folder, fs in sorted(per_part.items()):
        part = parts[folder]
        if not safety.is_contained(folder, [d]) or os.path.realpath(folder) != os.path.join(
            os.path.realpath(d), os.path.basename(folder)
        ):
            for f in fs:
                ctx.unrepaired(f, "the partition folder is a symlink: never written through")
            continue
        pp = PartitionPlan(part, reports.get((d, folder)), fs)
        partition(ctx, pp)
        states[(part.topic, part.partition)] = pp
        if pp.new_leo is not None:
            ctx.new_log_ends[folder] = pp.new_leo
    if "RETENTION_RISK" in ctx.codes:
        for folder, part in sorted(parts.items()):
            if folder not in per_part and safety.is_contained(folder, [d]) and not os.path.islink(folder):
                states.setdefault((part.topic, part.partition), PartitionPlan(part, reports.get((d, folder))))
        for st in states.values():
            indexes.latent_retention(ctx, st)
    for f in root:
        if f.code == "ORPHAN_FILE" and f.details.get("kind") == "tmp-file":
            orphans.root_tmp_file(ctx, f)
        elif f.code in ("CHECKPOINT_MISMATCH", "CHECKPOINT_CORRUPT") and os.path.basename(f.path) in (
            OFFSET_CHECKPOINT_FILES
        ):
            continue  # below
        else:
            ctx.unrepaired(
                f,
                "left to the broker (it resolves it at startup)"
                if f.code == "ORPHAN_FILE"
                else "no automatic repair for this finding: " + f.fix,
            )
    checkpoints.plan(
        ctx,
        d,
        ld,
        [f for f in root if f.code in ("CHECKPOINT_MISMATCH", "CHECKPOINT_CORRUPT")],
        reports,
        states,
    )


def partition(ctx: PlanContext, pp: PartitionPlan) -> None:
    """The rules of one partition, in the broker's order (LogLoader.load)."""
    found = [f for f in pp.findings if f.code == "ORPHAN_FILE"]
    if found:
        orphans.resolve(ctx, pp, found)
    segs = {s.base_offset: s for s in pp.part.segments}
    truncation.plan(ctx, pp, segs)
    properties.plan(ctx, pp)
    indexes.plan(ctx, pp, segs)
    leader_epochs.plan(ctx, pp)
    producer_snapshots.plan(ctx, pp)


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
            depth=Depth.DEEP if deep else Depth.DEFAULT,
            now_ms=now,
            config_inputs=config_inputs,
            one_broker=True,
        )
        report = scan(dirs, options, jobs=jobs)
    backup = os.path.abspath(backup_dir) if backup_dir else bk.default_backup_dir(dirs[0], now)
    safety.check_backup_location(backup, dirs)
    ctx = PlanContext(
        dirs,
        backup,
        set(only) if only is not None else set(REPAIRABLE),
        index_interval_bytes,
        depth=max(report.depth, Depth.DEFAULT),
        allow_metadata_loss=allow_metadata_loss,
    )
    return build(ctx, report), report


__all__ = [
    "REPAIRABLE",
    "PlanUsageError",
    "build",
    "consumer_group_notes",
    "parse_only",
    "plan_repair",
    "tiered_note",
]

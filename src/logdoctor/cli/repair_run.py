"""What `logdoctor repair` does with its options, without the CLI framework: :func:`run_repair` (the
options to the exit code), run by the typer command (:mod:`logdoctor.cli.repair`: its options, help and
exit codes) and by :func:`logdoctor.cli.repair_fast.run_fast`, a call of log dirs, on/off flags,
``--backup-dir DIR`` and ``--only CODE,...`` run without typer (:mod:`logdoctor.cli.fast`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.findings import Finding, Severity, exit_code
from logdoctor.checks.scanner import ScanReport, scan
from logdoctor.checks.state.kept_mappings import mappings_kept, unmap_ahead
from logdoctor.cli.error_lines import usage_error
from logdoctor.cli.exit_codes import EX_FAILED
from logdoctor.cli.input_checks import (
    leave_out_own,
    read_config_inputs,
    require_input_file,
    require_log_dirs,
)
from logdoctor.cli.interrupts import run_interrupts
from logdoctor.cli.jsonout import print_json
from logdoctor.cli.lines import Lines, lines_for
from logdoctor.cli.plan_output import DRY_RUN_LINE, print_code_paths, print_journal_preview, print_plan
from logdoctor.cli.run_status import one_mode, print_run_paths, print_run_status, run_errors
from logdoctor.formats.recovery import DEFAULT_INDEX_INTERVAL_BYTES
from logdoctor.repair.apply import (
    RefusedError,
    RunResult,
    apply_plan,
    check_unfinished,
    hold_dir_locks,
    note_unfinished,
    preview,
    resume,
    rollback,
)
from logdoctor.repair.journal import JOURNAL_NAME, JournalError
from logdoctor.repair.plan import Plan
from logdoctor.repair.planner import REPAIRABLE, PlanUsageError, parse_only, plan_repair
from logdoctor.repair.safety import BackupLocationError, UnsafePathError, refuse_if_locked

__all__ = ["run_repair"]


def _post_scan(plan: Plan) -> ScanReport:
    depth = Depth.DEEP if plan.depth == "deep" else Depth.DEFAULT
    return scan(plan.log_dirs, ScanOptions(depth=depth, one_broker=True), jobs=None)


def _remaining(
    findings: list[Finding], plan: Plan, targeted: set[tuple[str, str]] | None = None
) -> list[dict[str, Any]]:
    """Every warning or error still found, with why repair leaves it (from the plan, else its fix)."""
    why = {(u.code, u.path): u.why for u in plan.unrepaired}
    out = []
    for f in findings:
        if f.severity < Severity.WARNING:
            continue
        reason = why.get((f.code, f.path))
        if reason is None and targeted is not None and (f.code, f.path) in targeted:
            reason = "still found after the repair's action for it"
        if reason is None and f.code in REPAIRABLE and plan.depth != "deep" and f.code == "LOG_CORRUPT":
            reason = "found at --deep only: run `logdoctor repair --deep`"
        if reason is None:
            reason = "not repaired offline: " + f.fix
        out.append({**f.to_json(), "why": reason})
    seen = {(f["code"], f["path"]) for f in out}
    for u in plan.unrepaired:  # what planning found beyond the scan (an invalid batch met on the way)
        if u.severity is not None and (u.code, u.path) not in seen:
            seen.add((u.code, u.path))
            out.append({"code": u.code, "path": u.path, "severity": u.severity, "why": u.why})
    return out


def _code_of(remaining: list[dict[str, Any]], scan_code: int) -> int:
    worst = max((Severity[f["severity"].upper()] for f in remaining), default=Severity.INFO)
    return max(scan_code, int(worst) if worst >= Severity.WARNING else 0)


def _print_remaining(out: Lines, remaining: list[dict[str, Any]], depth: str, verbose: bool = False) -> None:
    if not remaining:
        return
    out.line()
    out.line(f"Left after repair at {depth} depth, still found ({len(remaining)}):", "bold red")
    rows = [(f"still found: {f['severity'].upper()} {f['code']}", f["path"], f["why"]) for f in remaining]
    print_code_paths(out, rows, verbose=verbose, style="red")


def _save_removed_records(out: Lines, plan: Plan, json_out: bool) -> None:
    """Before a truncation runs: the intact records it removes, saved as Parquet beside the backup dir
    (:mod:`logdoctor.repair.removed_records`); nothing is applied when they cannot be saved."""
    from logdoctor.repair.removed_records import removed_by_plan
    from logdoctor.spark.records_file import write_removed_records

    for removed in removed_by_plan(plan):
        if not removed.intact:
            continue
        rows = write_removed_records(removed)
        if not json_out:
            out.line(
                f"saved {rows} intact record(s) of {removed.topic}-{removed.partition} the truncation "
                f"removes (offsets [{removed.intact_first}, {removed.intact_last}]) to {removed.destination}"
            )


def _finish(
    out: Lines,
    result: RunResult,
    json_out: bool,
    extra: dict[str, Any],
    scan_code: int,
    depth: str,
    verbose: bool = False,
) -> int:
    code = scan_code if result.ok else EX_FAILED
    if json_out:
        print_json({**extra, "result": result.to_json(), "exit_code": code})
        return code
    print_run_status(out, "repair", result, code)
    print_run_paths(out, result)
    _print_remaining(out, extra.get("remaining") or [], depth, verbose)
    return code


def run_repair(
    log_dirs: list[Path] | None,
    *,
    do_apply: bool = False,
    only: str | None = None,
    backup_dir: Path | None = None,
    json_out: bool = False,
    resume_journal: Path | None = None,
    rollback_journal: Path | None = None,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    jobs: int | None = None,
    verbose: bool = False,
    deep: bool = False,
    topic_config: list[str] | None = None,
    server_properties: Path | None = None,
    allow_metadata_loss: bool = False,
    allow_unfinished: bool = False,
) -> int:
    """`logdoctor repair` with these options: the exit code (usage errors, refusals and tool failures
    exit through :mod:`logdoctor.cli.error_lines`)."""
    out = lines_for()
    if not one_mode(bool(log_dirs), resume_journal, rollback_journal):
        usage_error("give LOGDIR... or --resume JOURNAL or --rollback JOURNAL (one of them)")
    with (
        run_errors(
            "repair",
            usage=(PlanUsageError, BackupLocationError, JournalError),
            refusals=(RefusedError, UnsafePathError),
        ),
        run_interrupts("repair") as interrupts,
        contextlib.ExitStack() as held,
    ):
        if resume_journal is not None or rollback_journal is not None:
            journal = resume_journal or rollback_journal
            assert journal is not None
            require_input_file(journal, "journal")
            if not do_apply:
                mode = "resume" if resume_journal is not None else "rollback"
                print_journal_preview(out, "repair", preview(journal, mode), json_out)
                return 0
            interrupts.writing("--resume" if resume_journal is not None else "--rollback", journal)
            result = resume(journal) if resume_journal is not None else rollback(journal)
            extra: dict[str, Any] = {}
            scan_code = 0
            depth = "default"
            if resume_journal is not None and result.ok:
                from logdoctor.repair.apply import load_journal

                plan, _ = load_journal(journal)
                depth = plan.depth
                targeted = {(c, p) for a in plan.actions for c in a.codes for p in a.finding_paths}
                after = _post_scan(plan).findings
                if not targeted:
                    # another procedure's journal (move-partition, sync-replica: actions without finding
                    # codes): it answers for what it did, not for the log dirs' other findings
                    after = []
                # a repair's journal: the exit code and what is left are those of the same repair run
                # straight through (the scan at the plan's depth after it)
                extra["remaining"] = _remaining(after, plan, targeted)
                scan_code = _code_of(extra["remaining"], exit_code(after))
            return _finish(out, result, json_out, extra, scan_code, depth, verbose)
        assert log_dirs is not None
        # the planning scan, the index rebuild and the scan after read the same segments: each mapped once
        held.enter_context(mappings_kept())
        codes = parse_only(only)
        log_dirs = leave_out_own(log_dirs)
        require_log_dirs(log_dirs)
        if do_apply:
            # a broker holding a lock refuses --apply (75) before planning, whatever the plan; and so does
            # another writing run of the same dir: its lock is held from before the planning scan to the end
            held.enter_context(hold_dir_locks(list(log_dirs)))
            refuse_if_locked([str(d) for d in log_dirs])
            check_unfinished(
                list(log_dirs), str(backup_dir) if backup_dir else None, allow_unfinished=allow_unfinished
            )
        plan, report = plan_repair(
            [str(d) for d in log_dirs],
            only=codes,
            backup_dir=str(backup_dir) if backup_dir else None,
            index_interval_bytes=index_interval_bytes,
            jobs=jobs,
            deep=deep,
            config_inputs=read_config_inputs(topic_config, server_properties),
            allow_metadata_loss=allow_metadata_loss,
        )
        if not plan.empty:
            note_unfinished(plan)
        if plan.empty:
            # "Nothing to repair" is a clean bill only when the scan at this depth is clean
            remaining = _remaining(report.findings, plan)
            code = _code_of(remaining, report.exit_code)
            if json_out:
                print_json(
                    {"plan": plan.to_json(), "applied": False, "remaining": remaining, "exit_code": code}
                )
            else:
                print_plan(out, plan)
                _print_remaining(out, remaining, plan.depth)
            return code
        if not do_apply:
            from logdoctor.repair import space

            fit = space.fits(plan)
            if not fit["fits"]:
                plan.notes.append(f"DOES NOT FIT: {fit['text']}")
            if json_out:
                print_json({"plan": plan.to_json(), "applied": False})
            else:
                print_plan(out, plan, verbose=verbose)
                if not plan.empty:
                    out.line(DRY_RUN_LINE)
            return 0
        if not json_out:
            print_plan(out, plan, verbose=verbose)
        skipped = {u.path for u in plan.unrepaired}
        # (code, path) of every finding an action repairs: one set, not every action per finding
        acted = {(c, p) for a in plan.actions for p in a.finding_paths for c in a.codes}
        targeted = {
            (f.code, f.path)
            for f in report.findings
            if f.code in codes and f.path not in skipped and (f.code, f.path) in acted
        }
        _save_removed_records(out, plan, json_out)
        interrupts.writing("--apply", os.path.join(plan.backup_dir, JOURNAL_NAME))
        unmap_ahead()  # what the scan after will not walk again, unmapped while the apply waits on the disk
        result = apply_plan(plan, command="repair", allow_unfinished=allow_unfinished)
        extra = {"plan": plan.to_json()}
        scan_code = 0
        if result.status == "applied":
            after = _post_scan(plan)
            extra["remaining"] = _remaining(after.findings, plan, targeted)
            scan_code = _code_of(extra["remaining"], after.exit_code)
        return _finish(out, result, json_out, extra, scan_code, plan.depth, verbose)

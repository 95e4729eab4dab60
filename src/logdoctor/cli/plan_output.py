"""A plan printed for people (repair, move-partition, sync-replica), and the dry run of --resume or
--rollback."""

from __future__ import annotations

from collections import Counter
from typing import Any

from logdoctor.cli.jsonout import print_json
from logdoctor.cli.lines import EXAMPLES, Lines, wrap

DRY_RUN_LINE = "Dry run: nothing was written. Add --apply to make these changes."


def print_journal_preview(out: Lines, command: str, preview: Any, json_out: bool) -> None:
    """The dry run of ``COMMAND --resume/--rollback JOURNAL``: the steps it would run, nothing written."""
    if json_out:
        print_json({"preview": preview.to_json(), "applied": False})
        return
    verb = "finish" if preview.mode == "resume" else "undo"
    total = len(preview.plan.steps)
    status = f" (journal status: {preview.status})" if preview.status else " (the run did not end)"
    out.line(
        f"--{preview.mode} {preview.journal}{status}: would {verb} {len(preview.steps)} of {total} "
        "step(s)" + (":" if preview.steps else "."),
        "bold",
    )
    for step in preview.steps:
        dst = step.params.get("dst")
        out.line(f"  step {step.number}: {step.op} {step.path}" + (f" -> {dst}" if dst else ""))
    out.line(
        f"Dry run: nothing was written. Run `logdoctor {command} --{preview.mode} {preview.journal} "
        "--apply` to make these changes."
    )


def _size(n: int | None) -> str:
    return "absent" if n is None else f"{n:,} B"


def print_plan(out: Lines, plan: Any, *, verbose: bool = False) -> None:
    """Every action of a repair plan: what, why, each file's size before -> after, small diffs.

    At fleet scale (hundreds of the same action) the first few of each kind are shown in full and the
    rest counted; ``verbose`` shows every one (``--json`` always has the whole plan).
    """
    if plan.empty:
        out.line("Nothing to repair.")
    kinds = Counter(a.kind for a in plan.actions)
    shown: Counter[str] = Counter()
    for i, a in enumerate(plan.actions, 1):
        shown[a.kind] += 1
        if not verbose and kinds[a.kind] > EXAMPLES + 1 and shown[a.kind] > EXAMPLES:
            if shown[a.kind] == EXAMPLES + 1:
                rest = kinds[a.kind] - EXAMPLES
                out.line(
                    f"... and {rest} more {a.kind} action(s) like these, from [{i}] on "
                    "(--verbose lists every one, --json has the whole plan)",
                    "dim",
                )
            continue
        out.spans((f"[{i}] {a.kind} ", "bold"), (a.target, ""))
        wrap(out, a.reason, "         ", "yellow", first="    why: ")
        for c in a.changes:
            after = _size(c.size_after) if c.size_after is not None else "removed"
            line = f"    {c.path}: {_size(c.size_before)} -> {after}"
            if c.size_before is None and c.size_after is None:
                line = f"    {c.path}:"
            out.line(line + (f"  ({c.note})" if c.note else ""))
            if c.diff:
                for dl in c.diff.rstrip("\n").split("\n"):
                    style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else "dim"
                    out.line("      " + dl, style)
    for note in getattr(plan, "notes", ()):
        wrap(out, note, "      ", "yellow", first="note: ")
    if plan.unrepaired:
        out.line()
        out.line(f"Not repaired ({len(plan.unrepaired)}):", "bold")
        print_code_paths(out, [(u.code, u.path, u.why) for u in plan.unrepaired], verbose=verbose)
    out.line()
    if plan.actions or plan.steps:  # nothing to do: no backup dir to speak of
        out.line(f"{len(plan.actions)} action(s), {len(plan.steps)} step(s); backup dir: {plan.backup_dir}")
    else:
        out.line("Nothing to do: no action, no backup.")


def print_code_paths(
    out: Lines, rows: list[tuple[str, str, str]], *, verbose: bool = False, style: str = "dim"
) -> None:
    """``CODE path: why`` lines grouped by code; a code with many paths shows a few and their count."""
    by_code: dict[str, list[tuple[str, str]]] = {}
    for code, path, why in rows:
        by_code.setdefault(code, []).append((path, why))
    for code, items in by_code.items():
        if verbose or len(items) <= EXAMPLES + 1:
            for path, why in items:
                out.line(f"  {code} {path}:", style)
                wrap(out, why, "      ", style)
            continue
        out.line(f"  {code}: {len(items)} files", style or "bold")
        for path, _why in items[:EXAMPLES]:
            out.line(f"    {path}", style)
        out.line(f"    ... and {len(items) - EXAMPLES} more (--verbose lists every one)", "dim")
        whys = {why for _p, why in items}
        label = "    why: " if len(whys) == 1 else "    why (the first's): "
        wrap(out, items[0][1], "      ", style, first=label)


__all__ = [
    "DRY_RUN_LINE",
    "print_code_paths",
    "print_journal_preview",
    "print_plan",
]

"""Issue 32's matrix: {repair, move-partition, sync-replica} x {apply, resume, rollback} x {files changed
after the step, journal already finished, a second journal of the same dir, a second run at the same
time}. Every cell ends refused (65 or 75) with every byte of the whole work tree as it was (log dirs,
backup dirs, journals), or done exactly (the tree an uninterrupted run leaves, or the original after a
rollback). The real command line: the uninterrupted reference run, the crashed runs (the crash hook,
LOGDOCTOR_CRASH_AFTER_STEP, leaves the unfinished journals), the one holding the lock and the simultaneous
ones in subprocesses; the others, whose exit code, output and writes are checked, in this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage
import write_runs as wr

import cli_runs
import tiers

CASES = {"repair": wr.repair_case, "move-partition": wr.move_case, "sync-replica": wr.sync_case}
MODES = ("apply", "resume", "rollback")
CONDITIONS = ("changed", "finished", "second-journal", "same-time")


class Cell:
    """One command's template, the tree an uninterrupted run leaves, and its number of steps."""

    def __init__(self, case: wr.Case, work: Path) -> None:
        self.case = case
        self.original = wr.tree(case.template)
        root = wr.clone(case.template, work / "root")
        r = wr.cli(*case.args(root, work / "backup"))
        assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, r.stderr[-2000:]
        self.reference = wr.tree(root)
        self.steps = len(_steps(work / "backup" / "journal.jsonl"))
        assert self.steps >= 2


@pytest.fixture(scope="module", params=list(CASES))
def cell(request, tmp_path_factory) -> Cell:
    if request.param == "repair" and os.geteuid() != 0:
        pytest.skip("needs root: the repair's log dir belongs to a broker user")
    work = tmp_path_factory.mktemp(request.param)
    return Cell(CASES[request.param](work), work)


def _steps(journal: Path) -> list[dict]:
    plan = json.loads(journal.read_text().splitlines()[0])["plan"]
    return [s for a in plan["actions"] for s in a["steps"]]


def _done_after(journal: Path) -> dict[int, dict]:
    out = {}
    for line in journal.read_text().splitlines()[1:]:
        r = json.loads(line)
        if r.get("t") == "done":
            out[r["step"]] = r["after"]
    return out


def _change(journal: Path) -> str:
    """Change a file a done step of the journal left (append to it, or add a file to its folder, or
    create what it removed): what a broker or an operator does after the run. Returns the path."""
    for _n, after in sorted(_done_after(journal).items(), reverse=True):
        for path, snap in sorted(after.items()):
            if snap["kind"] == "file":
                with open(path, "ab") as f:
                    f.write(b"appended after the run")
                return path
            if snap["kind"] == "dir":
                files = sorted(p for p in Path(path).rglob("*.log"))
                target = files[-1] if files else Path(path) / "new-file"
                with open(target, "ab") as f:
                    f.write(b"appended after the run")
                return str(target)
    raise AssertionError(f"no done step left a file to change in {journal}")


def _run(cell: Cell, *args: object) -> subprocess.CompletedProcess[str]:
    return cli_runs.logdoctor(cell.case.command, *args)


def _refused(r: subprocess.CompletedProcess[str], codes: tuple[int, ...] = (65, 75)) -> None:
    assert r.returncode in codes, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert r.stderr.startswith("refused (nothing written):") and r.stderr.count("\n") == 1, r.stderr


def _done(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode in (0, 1, 2), (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert r.returncode == 0 or "applied:" in r.stdout or "rolled-back:" in r.stdout, r.stdout[-2000:]


TOGETHER = """
import os, sys, time
from logdoctor.cli import move_partition, repair, sync_replica  # noqa: F401  (imported before the start)
from logdoctor.cli.main import main
ready, go = sys.argv.pop(1), sys.argv.pop(1)
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.0005)
sys.argv[0] = "logdoctor"
main()
"""


def _together(work: Path, *argvs: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Start the command lines at the same moment (each waits, imports done, for one file to appear)."""
    go = work / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", TOGETHER, str(work / f"ready{k}"), str(go), *argv],
                         env=wr.cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for k, argv in enumerate(argvs)
    ]  # fmt: skip
    while not all((work / f"ready{k}").exists() for k in range(len(argvs))):
        assert all(p.poll() is None for p in procs)
        time.sleep(0.001)
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    return [
        subprocess.CompletedProcess(p.args, p.returncode, o, e) for p, (o, e) in zip(procs, outs, strict=True)
    ]


def _second_run(cell: Cell, root: Path, backup: Path) -> subprocess.CompletedProcess[str]:
    """Another run of the same dir after the first one finished: a repair after new damage, a move back,
    a sync of the follower again after the leader grew."""
    c = cell.case
    if c.command == "repair":
        part = damage.biggest_partition(root / "logs")
        assert part is not None
        index = sorted(part.glob("*.index"))[0]
        damage.pad_index(index, 8)
        return cli_runs.logdoctor(*c.args(root, backup))
    if c.command == "move-partition":
        args = c.args(root, backup)
        i, j = args.index("--from"), args.index("--to")
        args[i + 1], args[j + 1] = args[j + 1], args[i + 1]
        return cli_runs.logdoctor(*args)
    args = c.args(root, backup)
    follower = Path(args[args.index("--follower") + 1])
    victim = sorted((follower / "orders-0").glob("*.log"))[-1]
    damage.cut_final_batch(victim)  # the follower lost its tail again
    return cli_runs.logdoctor(*args)


@pytest.mark.parametrize("condition", tiers.one_in_test_fast(CONDITIONS, fast="changed"))
@pytest.mark.parametrize("mode", MODES)
def test_matrix(tmp_path, cell, mode, condition):
    c = cell.case
    root = wr.clone(c.template, tmp_path / "root")
    b1, b2 = tmp_path / "backup1", tmp_path / "backup2"
    j1 = b1 / "journal.jsonl"

    if mode == "apply":
        if condition == "changed":
            # the plan's targets change after planning, before apply writes: the engine refuses (65)
            plan = _plan_in_process(c, root, b1)
            first = plan.steps[0]
            target = first.path if os.path.isfile(first.path) else sorted(Path(first.path).rglob("*.log"))[-1]
            with open(target, "ab") as f:
                f.write(b"appended after planning")
            before = wr.tree(tmp_path)
            from logdoctor.repair.apply import PlanChangedError, apply_plan

            with pytest.raises(PlanChangedError):
                apply_plan(plan, command=c.command)
            assert wr.tree(tmp_path) == before
        elif condition == "finished":
            # an earlier run of the dir, rolled back (finished): a new run is not held back by it
            assert cli_runs.logdoctor(*c.args(root, b1)).returncode in (0, 1, 2)
            assert _run(cell, "--rollback", j1, "--apply").returncode == 0
            _done(cli_runs.logdoctor(*c.args(root, b2)))
            assert wr.tree(root) == cell.reference
        elif condition == "second-journal":
            assert wr.cli(*c.args(root, b1), LOGDOCTOR_CRASH_AFTER_STEP="1").returncode == -9
            before = wr.tree(tmp_path)
            r = cli_runs.logdoctor(*c.args(root, b2))
            _refused(r, (65,))
            assert str(j1) in r.stderr and "--resume" in r.stderr
            assert wr.tree(tmp_path) == before
        else:
            # the second run started while the first holds the dirs' lock (paused there: no timing)
            first, hold = wr.start_holding_lock(tmp_path / "pause", *c.args(root, b1))
            try:
                before = wr.tree(tmp_path)
                second = cli_runs.logdoctor(*c.args(root, b2))
                _refused(second, (75,))
                assert "another logdoctor run" in second.stderr, second.stderr
                assert wr.tree(tmp_path) == before
            finally:
                os.close(hold)
            _, err = first.communicate(timeout=300)
            assert first.returncode in (0, 1, 2), err[-2000:]
            assert wr.tree(root) == cell.reference
        return

    # resume and rollback: a journal to finish or undo
    if mode == "resume" or condition == "second-journal":
        crashed = wr.cli(*c.args(root, b1), LOGDOCTOR_CRASH_AFTER_STEP="1")
        assert crashed.returncode == -9, crashed.stderr[-2000:]
    else:
        _done(cli_runs.logdoctor(*c.args(root, b1)))
    if condition == "changed":
        changed = _change(j1)
        before = wr.tree(tmp_path)
        for args in ((f"--{mode}", j1, "--apply"), (f"--{mode}", j1)):
            r = _run(cell, *args)
            _refused(r, (65,))
            assert changed in r.stderr or os.path.dirname(changed) in r.stderr, r.stderr
            assert wr.tree(tmp_path) == before
    elif condition == "finished":
        if mode == "resume":
            _done(_run(cell, "--resume", j1, "--apply"))
            assert wr.tree(root) == cell.reference
            again = _run(cell, "--resume", j1, "--apply")  # applied to its end: nothing left to do
            _done(again)
            assert wr.tree(root) == cell.reference
        assert _run(cell, "--rollback", j1, "--apply").returncode == 0
        assert wr.tree(root) == cell.original
        before = wr.tree(tmp_path)
        for args in (("--rollback", j1, "--apply"), ("--resume", j1, "--apply")):
            r = _run(cell, *args)
            _refused(r, (65,))
            assert "rolled back already" in r.stderr
            assert wr.tree(tmp_path) == before
    elif condition == "second-journal":
        # the first run is unfinished; a second run of the same dir applied with the explicit flag
        second = cli_runs.logdoctor(*c.args(root, b2), "--allow-unfinished-journal")
        if second.returncode not in (0, 1, 2):
            # the second run refuses for the state the first left (move/sync: the partition is half moved):
            # its refusal wrote nothing, and the first run's journal still finishes exactly
            _refused(second, (64, 65, 78))
            r = _run(cell, f"--{mode}", j1, "--apply")
            _done(r)
            assert wr.tree(root) == (cell.reference if mode == "resume" else cell.original)
            return
        before = wr.tree(tmp_path)
        r = _run(cell, f"--{mode}", j1, "--apply")
        _refused(r, (65,))
        assert "a later run changed" in r.stderr and str(b2 / "journal.jsonl") in r.stderr
        assert wr.tree(tmp_path) == before
    else:
        outs = _together(tmp_path, cell_args := [c.command, f"--{mode}", str(j1), "--apply"], cell_args)
        codes = [r.returncode for r in outs]
        winners = [r for r in outs if r.returncode in (0, 1, 2)]
        assert winners, [(r.returncode, r.stderr[-300:]) for r in outs]
        for r in outs:
            if r.returncode not in (0, 1, 2):  # the other: locked out (75), or it came after (65)
                _refused(r)
        assert len(winners) == 1 or mode == "resume", codes  # a second resume after the first: nothing to do
        expected = cell.reference if mode == "resume" else cell.original
        assert wr.tree(root) == expected


def _plan_in_process(c: wr.Case, root: Path, backup: Path):
    args = c.args(root, backup)
    if c.command == "repair":
        from logdoctor.repair import plan_repair

        plan, _ = plan_repair([args[1]], backup_dir=str(backup), jobs=1)
        return plan
    if c.command == "move-partition":
        from logdoctor.repair.procedures.common import parse_topic_partition
        from logdoctor.repair.procedures.move_partition import plan_move

        tps = [parse_topic_partition(a) for a in args[1 : args.index("--from")]]
        return plan_move(
            args[args.index("--from") + 1], args[args.index("--to") + 1], tps, backup_dir=str(backup),
            force_copy=True,
        ).plan  # fmt: skip
    from logdoctor.repair.procedures.common import parse_topic_partition
    from logdoctor.repair.procedures.sync_replica import plan_sync

    return plan_sync(
        parse_topic_partition(args[1]), args[args.index("--leader") + 1], args[args.index("--follower") + 1],
        backup_dir=str(backup),
    ).plan  # fmt: skip

"""The apply engine's grouped durability (apply._run_group): consecutive steps that only make new files
and folders share one begin record, one fsync barrier and one done record. A SIGKILL at every phase of
every step of such a plan (beside a step that cannot be grouped: a file replaced), then --resume leaves
the tree an uninterrupted run leaves, --rollback the tree as it was: byte for byte, no temp or partial
file left."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "procedures"))

import helpers

from logdoctor.repair.apply import PHASES, CrashHook, _groups, apply_plan, resume, rollback
from logdoctor.repair.plan import Action, Plan
from logdoctor.repair.steps.base import BackupNames
from logdoctor.repair.steps.mkdir import make_dir
from logdoctor.repair.steps.write import write_file


def _dir(root: Path) -> Path:
    log_dir = root / "logs"
    (log_dir / "t-0").mkdir(parents=True)
    (log_dir / "t-0" / "leader-epoch-checkpoint").write_bytes(b"0\n0\n")
    return log_dir


def _plan(log_dir: Path, backup: Path) -> Plan:
    """mkdir t-1, two new files in it, a new file in t-0, a replaced file (alone), two more new files."""
    plan = Plan([str(log_dir)], str(backup))
    names = BackupNames([str(log_dir)])
    new = log_dir / "t-1"
    steps = [
        make_dir(str(new)),
        write_file(str(new / "00000000000000000000.index"), b"\x00" * 4096, names),
        write_file(str(new / "00000000000000000000.timeindex"), b"\x01" * 1200, names),
        write_file(str(log_dir / "t-0" / "partition.metadata"), b"version: 0\ntopic_id: x\n", names),
        write_file(str(log_dir / "t-0" / "leader-epoch-checkpoint"), b"0\n1\n0 0\n", names),
        write_file(str(new / "leader-epoch-checkpoint"), b"0\n1\n0 0\n", names),
        write_file(str(log_dir / "log-start-offset-checkpoint"), b"0\n1\nt 1 0\n", names),
    ]
    for s in steps:
        plan.actions.append(Action("test", s.path, "grouped steps", steps=[s]))
    return plan


def _journal_kinds(journal: Path) -> list[str]:
    return [json.loads(line)["t"] for line in journal.read_text().splitlines() if line.strip()]


def test_groups_are_runs_of_new_files_and_folders(tmp_path):
    plan = _plan(_dir(tmp_path), tmp_path / "b")
    plan.number_steps()
    assert [[s.number for s in g] for g in _groups(plan.steps)] == [[1, 2, 3, 4], [5], [6, 7]]
    # a second step on a path of the group starts a new group
    twice = [*plan.steps[:3], plan.steps[1]]
    assert [[s.number for s in g] for g in _groups(twice)] == [[1, 2, 3], [2]]


def test_uninterrupted_run_journals_each_group_at_once(tmp_path):
    log_dir = _dir(tmp_path)
    plan = _plan(log_dir, tmp_path / "b")
    assert apply_plan(plan).status == "applied"
    kinds = _journal_kinds(tmp_path / "b" / "journal.jsonl")
    assert kinds == [
        "plan",
        *["begin"] * 4,
        *["done"] * 4,
        "begin",
        "done",
        "begin",
        "begin",
        "done",
        "done",
        "end",
    ]
    for s in plan.steps:
        if s.op == "write":
            assert Path(s.path).read_bytes() == s.data
    assert not list(log_dir.rglob(".*.tmp"))


@pytest.mark.slow  # a crash matrix (docs/install.md: make test runs it, make test-fast does not)
@pytest.mark.parametrize("then", ["resume", "rollback"])
def test_kill_at_every_phase_then_resume_or_rollback(tmp_path, then):
    ref_root = tmp_path / "ref"
    ref_dir = _dir(ref_root)
    assert apply_plan(_plan(ref_dir, ref_root / "b")).status == "applied"
    reference = helpers.tree(ref_dir)
    kills = 0
    for step in range(1, 8):
        for phase in PHASES:
            work = tmp_path / f"w{step}-{phase}"
            log_dir = _dir(work)
            original = helpers.tree(log_dir)
            plan = _plan(log_dir, work / "b")
            status = helpers.run_forked(
                lambda p=plan, at=(step, phase): apply_plan(p, crash=CrashHook(at=at))
            )
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            assert killed or os.WEXITSTATUS(status) == 0, (step, phase, status)
            if not killed:
                continue
            kills += 1
            journal = work / "b" / "journal.jsonl"
            if then == "resume":
                assert resume(journal).status == "applied", (step, phase)
                assert helpers.tree(log_dir) == reference, (step, phase)
            else:
                assert rollback(journal).status == "rolled-back", (step, phase)
                assert helpers.tree(log_dir) == original, (step, phase)
    # grouped steps: begin, backed-up, temp-written, applied, synced, verified, journaled (mkdir: no
    # backed-up/temp-written); the replaced file alone: no synced
    assert kills >= 7 * 5


def test_staged_bytes_in_one_file_each_steps_bytes_checked_on_resume(tmp_path):
    """Every write step's new bytes are staged in one file of the backup dir (one file created and
    fsynced, not one per step) at the offset its step names; a resume in another process reads each
    step's bytes from there and refuses a step whose bytes were damaged, naming it."""
    log_dir = _dir(tmp_path)
    original = helpers.tree(log_dir)
    plan = _plan(log_dir, tmp_path / "b")
    plan.number_steps()
    status = helpers.run_forked(lambda: apply_plan(plan, crash=CrashHook(at=(1, "synced"))))
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    staged = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b" / "staged").rglob("*"))
    assert [str(p) for p in staged] == ["staged/steps.bin"]
    pack = (tmp_path / "b" / "staged" / "steps.bin").read_bytes()
    header = json.loads((tmp_path / "b" / "journal.jsonl").read_text().splitlines()[0])
    writes = [s for s in plan.steps if s.op == "write"]
    recorded = {s["path"]: s["params"] for a in header["plan"]["actions"] for s in a["steps"]}
    for s in writes:
        at, size = recorded[s.path]["staged_at"]
        assert pack[at : at + size] == s.data
    assert sum(len(s.data) for s in writes) == len(pack)
    # damage the bytes of the fifth step (a replaced file, not yet begun): the resume refuses it
    fifth = next(s for s in plan.steps if s.number == 5)
    at = recorded[fifth.path]["staged_at"][0]
    flipped = bytearray(pack)
    flipped[at] ^= 0xFF
    (tmp_path / "b" / "staged" / "steps.bin").write_bytes(bytes(flipped))
    journal = tmp_path / "b" / "journal.jsonl"
    result = resume(journal)
    assert result.status == "failed"
    assert "staged content of step 5 is damaged" in (result.error or "")
    assert rollback(journal).status == "rolled-back"
    assert helpers.tree(log_dir) == original


@pytest.mark.parametrize("given_backup_dir", [False, True], ids=["new-backup-dir", "empty-backup-dir"])
def test_ctrl_c_anywhere_before_the_journal_leaves_nothing_staged(tmp_path, monkeypatch, given_backup_dir):
    """Ctrl-C (KeyboardInterrupt) at every call from the first staged byte to the journal's birth (the
    staging, the README, the plan record, the journal written under its temp name, and linked in place):
    the log dir as it was, and nothing left in the backup dir (a new one removed, a given empty one
    emptied), so that the same --backup-dir can be used again. The plan record was once built outside
    that stretch: a Ctrl-C there left the staged bytes and the README behind (test_failures_end_cleanly,
    one run in ~50)."""
    from logdoctor.repair import apply, backup, journal

    log_dir = _dir(tmp_path)
    original = helpers.tree(log_dir)
    points = [
        (apply, "_stage"),
        (backup, "write_durable"),
        (Plan, "to_json"),
        (journal, "naming"),  # the journal's first record under its temp name
        (journal.Journal, "create"),  # the journal in place
    ]
    for n, (owner, name) in enumerate(points):
        backup_dir = tmp_path / f"b{n}"
        if given_backup_dir:
            backup_dir.mkdir()
        real = getattr(owner, name)
        calls = []

        def interrupted(*args, real=real, calls=calls, **kwargs):
            calls.append(1)
            real(*args, **kwargs)  # done, then Ctrl-C: the latest moment of each call
            raise KeyboardInterrupt

        with monkeypatch.context() as m:
            m.setattr(owner, name, interrupted)
            with pytest.raises(KeyboardInterrupt):
                apply_plan(_plan(log_dir, backup_dir))
        assert calls, name
        assert helpers.tree(log_dir) == original, name
        assert (sorted(backup_dir.iterdir()) == []) if given_backup_dir else not backup_dir.exists(), name

"""`repair` of a broker's dir whose indexes were lost (KIP-263's situation: thousands of segments to load),
on copies of real log dirs owned by a broker user: the rebuilt index files (new files, born with the
owner and mode of their siblings) share their durability in groups (apply._run_group: one journal
record of the group's begins, one fsync barrier, one record of its dones), not four fsyncs and a
listing of the partition's folder each; the plan reads each folder's modes once, not once a segment.

SIGKILL (the crash hook, in a forked process) at each of the group's commit points, for the first and
last step of a group and the first of the next: `--resume` leaves what an uninterrupted run leaves and
`--rollback` the dir as it was, byte for byte, with owners and modes, and no temp file left."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "procedures"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage
import helpers

import realworld
from logdoctor.repair import apply
from logdoctor.repair.apply import CrashHook, apply_plan, resume, rollback
from logdoctor.repair.planner import plan_repair
from logdoctor.repair.rules import context
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

GROUP = 8  # steps a group: several groups on a real log dir of tens of segments
MODE = 0o640  # the copy's files: the rebuilt indexes take their siblings' mode
NOW_MS = 1_800_000_000_000


def _most_segments() -> Path:
    root = realworld.require()
    return max((root / n for n in realworld.log_dir_names()), key=lambda d: len(list(d.rglob("*.log"))))


def _lost_indexes(dst: Path) -> Path:
    """A copy of the real log dir with the most segments, files mode 640, every .index and .timeindex
    gone."""
    log_dir = damage.copy_log_dir(_most_segments(), dst)
    for p in log_dir.rglob("*"):
        if p.is_file():
            p.chmod(MODE)
    for p in [*log_dir.rglob("*.index"), *log_dir.rglob("*.timeindex")]:
        p.unlink()
    return log_dir


def _plan(log_dir: Path, backup: Path):
    plan, _ = plan_repair([str(log_dir)], backup_dir=str(backup), now_ms=NOW_MS, only={"INDEX_MISSING"})
    plan.number_steps()
    assert len(plan.steps) > 3 * GROUP
    assert {a.kind for a in plan.actions} == {"rebuild-indexes"}
    return plan


def _kinds(journal: Path) -> list[str]:
    return [json.loads(line)["t"] for line in journal.read_text().splitlines() if line.strip()]


def test_rebuilt_indexes_share_their_durability_born_with_owner_and_mode(tmp_path, monkeypatch):
    monkeypatch.setattr(apply, "GROUP_STEPS", GROUP)
    log_dir = _lost_indexes(tmp_path / "logs")
    plan = _plan(log_dir, tmp_path / "b")
    n = len(plan.steps)
    assert apply_plan(plan).status == "applied"
    kinds = _kinds(tmp_path / "b" / "journal.jsonl")
    groups = [min(GROUP, n - i) for i in range(0, n, GROUP)]
    assert kinds == ["plan", *[k for g in groups for k in ["begin"] * g + ["done"] * g], "end"]
    for s in plan.steps:
        st = os.lstat(s.path)
        assert Path(s.path).read_bytes() == s.data
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (damage.BROKER_UID, damage.BROKER_UID, MODE)
    assert not list(log_dir.rglob(".*.tmp"))


def test_the_plan_reads_each_folders_modes_once(tmp_path, monkeypatch):
    """The mode of a new index is its siblings' (context.SiblingModes): one listing of the partition's
    folder for the plan, not one per segment (quadratic: 20 s of planning for 1,191 segments)."""
    topic = TopicSpec("t", partitions=1, records_per_partition=4000, value_size=100, segment_bytes=16 * 1024)
    log_dir, _ = generate_log_dir(tmp_path / "gen", [topic])
    part = log_dir / "t-0"
    for p in [*part.glob("*.index"), *part.glob("*.timeindex")]:
        p.unlink()
    listed: list[str] = []
    real = os.scandir

    def counted(path=".", *args, **kwargs):
        if sys._getframe(1).f_globals.get("__name__") == context.__name__:  # the plan's rules only
            listed.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(context.os, "scandir", counted)
    plan, _ = plan_repair(
        [str(log_dir)], backup_dir=str(tmp_path / "b"), now_ms=NOW_MS, only={"INDEX_MISSING"}
    )
    rebuilt = [a for a in plan.actions if a.kind == "rebuild-indexes"]
    assert len(rebuilt) == len(list(part.glob("*.log"))) >= 20
    assert listed.count(str(part)) == 1, listed.count(str(part))


@pytest.mark.slow  # a crash matrix (docs/install.md: make test runs it, make test-fast does not)
@pytest.mark.parametrize("then", ["resume", "rollback"])
def test_kill_at_each_commit_point_of_a_group_then_resume_or_rollback(tmp_path, monkeypatch, then):
    monkeypatch.setattr(apply, "GROUP_STEPS", GROUP)
    ref = _lost_indexes(tmp_path / "ref" / "logs")
    assert apply_plan(_plan(ref, tmp_path / "ref" / "b")).status == "applied"
    reference = damage.tree(ref)
    every = ("begin", "backed-up", "temp-written", "synced", "applied", "verified", "journaled")
    points = [
        *((1, phase) for phase in every),  # the group's first step, at each of its phases
        (GROUP, "temp-written"),  # its last: durable under the temp name, not renamed
        (GROUP, "verified"),  # all renamed and verified, the dones not journaled
        (GROUP, "journaled"),  # the whole group done, the next not begun
        (GROUP + 1, "synced"),  # the next group in its turn
    ]
    for step, phase in points:
        work = tmp_path / f"w{step}-{phase}"
        log_dir = _lost_indexes(work / "logs")
        original = damage.tree(log_dir)
        plan = _plan(log_dir, work / "b")
        status = helpers.run_forked(lambda p=plan, at=(step, phase): apply_plan(p, crash=CrashHook(at=at)))
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (step, phase, status)
        journal = work / "b" / "journal.jsonl"
        if then == "resume":
            assert resume(journal).status == "applied", (step, phase)
            assert damage.tree(log_dir) == reference, (step, phase)
        else:
            assert rollback(journal).status == "rolled-back", (step, phase)
            assert damage.tree(log_dir) == original, (step, phase)
        assert not list(log_dir.rglob(".*.tmp")), (step, phase)

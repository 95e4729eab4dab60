"""Issue 32: every write checks what it replaces. Rollback and resume trusted the journal, not the files:
after a repair and a later append to the repaired segment, the rollback cut the new batch off (exit 0);
a rolled-back journal rolled back again; the undo printed by an interrupted run, run after a later
repair, restored what that repair built on. Two `repair --apply` of one dir at once both ran. A disk
filling up while a repair wrote ended with a traceback line on stdout and exit 2.

Each of them against the real command line (a subprocess) on generated log dirs: refused (65, 75, 73)
with every byte of the tree as it was, or done exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tiers
import tmpfs

sys.path.insert(0, str(Path(__file__).resolve().parent))

import write_runs as wr

pytestmark = pytest.mark.needs_root


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> wr.Case:
    return wr.repair_case(tmp_path_factory.mktemp("recorded"))


def _journal_steps(journal: Path) -> list[dict]:
    plan = json.loads(journal.read_text().splitlines()[0])["plan"]
    return [s for a in plan["actions"] for s in a["steps"]]


def test_rollback_after_an_append_to_the_repaired_segment_is_refused(tmp_path, case):
    root = wr.clone(case.template, tmp_path / "root")
    backup = tmp_path / "backup"
    r = wr.cli(*case.args(root, backup))
    assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, r.stderr[-2000:]
    journal = backup / "journal.jsonl"
    segment = Path(next(s["path"] for s in _journal_steps(journal) if s["op"] == "truncate"))
    with open(segment, "ab") as f:
        f.write(b"a batch the broker appended after the repair")
    before = wr.tree(tmp_path)
    for args in (
        ("--rollback", journal, "--apply"),
        ("--rollback", journal),
        ("--resume", journal, "--apply"),
    ):
        r = wr.cli("repair", *args)
        assert r.returncode == 65, (args, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
        line = r.stderr.strip()
        assert "\n" not in line and str(segment) in line and "size" in line, line
        assert wr.tree(tmp_path) == before  # not a byte written, the journal included


def test_a_rolled_back_journal_cannot_be_rolled_back_or_resumed_again(tmp_path, case):
    root = wr.clone(case.template, tmp_path / "root")
    original = wr.tree(root)
    backup = tmp_path / "backup"
    assert wr.cli(*case.args(root, backup)).returncode in (0, 1, 2)
    journal = backup / "journal.jsonl"
    r = wr.cli("repair", "--rollback", journal, "--apply")
    assert r.returncode == 0, r.stderr[-2000:]
    assert wr.tree(root) == original
    before = wr.tree(tmp_path)
    for args in (
        ("--rollback", journal, "--apply"),
        ("--resume", journal, "--apply"),
        ("--rollback", journal),
    ):
        r = wr.cli("repair", *args)
        assert r.returncode == 65, (args, r.returncode, r.stderr[-2000:])
        assert "rolled back already" in r.stderr and str(journal) in r.stderr
        assert wr.tree(tmp_path) == before


def test_the_undo_of_an_interrupted_run_after_a_later_repair_is_refused(tmp_path, case):
    root = wr.clone(case.template, tmp_path / "root")
    b1, b2 = tmp_path / "backup1", tmp_path / "backup2"
    first = wr.cli(*case.args(root, b1), LOGDOCTOR_CRASH_AFTER_STEP="6")
    assert first.returncode == -9, first.stderr[-2000:]
    j1 = b1 / "journal.jsonl"
    # a new repair of the same dir: its plan says so, and --apply is refused until the first is finished
    dry = wr.cli("repair", root / "logs", "--jobs", "1", "--backup-dir", b2)
    assert dry.returncode == 0 and "an unfinished run changed" in dry.stdout and str(j1) in dry.stdout
    before = wr.tree(tmp_path)
    refused = wr.cli(*case.args(root, b2))
    assert refused.returncode == 65, (refused.returncode, refused.stderr[-2000:])
    assert wr.tree(tmp_path) == before
    printed = wr.printed_commands(refused.stderr)
    assert [c.split()[2] for c in printed] == ["--resume", "--rollback"], refused.stderr
    # with the explicit flag the later repair runs; the first run's undo is then refused (it would restore
    # what the later repair built on), its resume too
    later = wr.cli(*case.args(root, b2), "--allow-unfinished-journal")
    assert later.returncode in (0, 1, 2) and "applied:" in later.stdout, later.stderr[-2000:]
    after_later = wr.tree(tmp_path)
    for command in printed:
        r = wr.run_printed(command)
        assert r.returncode == 65, (command, r.returncode, r.stderr[-2000:])
        assert "a later run changed" in r.stderr and str(b2 / "journal.jsonl") in r.stderr
        assert wr.tree(tmp_path) == after_later
    # the way out it prints works as printed: undo the later run, then the first one's commands run
    (undo_later,) = wr.printed_commands(r.stderr)
    assert wr.run_printed(undo_later).returncode == 0
    r = wr.run_printed(printed[1])  # the first run's rollback
    assert r.returncode == 0, r.stderr[-2000:]
    assert wr.tree(root) == wr.tree(case.template)


def test_the_printed_resume_of_an_unfinished_run_works_and_the_new_repair_then_runs(tmp_path, case):
    root = wr.clone(case.template, tmp_path / "root")
    straight = wr.clone(case.template, tmp_path / "straight")
    assert wr.cli(*case.args(straight, tmp_path / "straight-backup")).returncode in (0, 1, 2)
    b1, b2 = tmp_path / "backup1", tmp_path / "backup2"
    assert wr.cli(*case.args(root, b1), LOGDOCTOR_CRASH_AFTER_STEP="4").returncode == -9
    refused = wr.cli(*case.args(root, b2))
    assert refused.returncode == 65
    resume = wr.printed_commands(refused.stderr)[0]
    r = wr.run_printed(resume)
    assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, r.stderr[-2000:]
    assert wr.tree(root / "logs") == wr.tree(straight / "logs")
    again = wr.cli(*case.args(root, b2))  # the first run is finished: nothing left to repair
    assert again.returncode in (0, 1, 2), again.stderr[-2000:]
    assert "an unfinished run" not in again.stdout


# --- item 6: two `repair --apply` of one dir at once -------------------------------------------------


@pytest.fixture(scope="module")
def bigger(tmp_path_factory) -> wr.Case:
    """Big enough that a repair takes longer than a second process needs to start."""
    return wr.repair_case(tmp_path_factory.mktemp("concurrent"), partitions=4, records=4000)


# Two runs of the command line started together, over and over: one process (imports done, as main() has
# them when the command starts) forks the two runs of each trial; each run waits in its own process for
# the file "go" of its trial, then runs main() as `logdoctor ARGS` does (stdout, stderr: files of the
# trial). Forked from one process instead of two interpreters started for each trial (~0.1 s of CPU each).
TOGETHER = """
import json, os, sys, time
from logdoctor.cli import repair_fast, repair_run  # noqa: F401  (what main() runs, imported before the start)
from logdoctor.cli.main import main
for line in sys.stdin:
    trial, runs = json.loads(line)
    pids = []
    for k, args in enumerate(runs):
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            for fd, name in ((1, "out"), (2, "err")):
                os.dup2(os.open(os.path.join(trial, f"{name}{k}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            open(os.path.join(trial, f"ready{k}"), "w").close()
            while not os.path.exists(os.path.join(trial, "go")):
                time.sleep(0.0005)
            sys.argv = ["logdoctor", *args]
            main()
        pids.append(pid)
    print(json.dumps([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]), flush=True)
"""


def _two_runs_outcome(
    codes: list[int], outs: list[tuple[str, str]], d: Path, reference: dict, root: Path
) -> str:
    """What two repairs of one dir started together did, checked: "overlapped" (one held the lock while
    the other started: that one refused, 75, nothing of it written) or "one after the other" (under load
    the first can end before the second starts: the second then found the dir repaired and planned
    nothing). Anything else (both applied, both refused, a tree not as one repair leaves it) fails."""
    why = (d.name, codes, [out[-300:] for out, _ in outs], [err[-500:] for _, err in outs])
    assert wr.tree(root / "logs") == reference, why
    applied = [k for k in (0, 1) if codes[k] in (0, 1, 2) and "applied:" in outs[k][0]]
    assert len(applied) == 1, why  # exactly one run changed the dir
    other = 1 - applied[0]
    if codes[other] == 75:
        assert "another logdoctor run" in outs[other][1], why
        assert not (d / f"backup{other}").exists(), why
        return "overlapped"
    # it ran after the first had ended: its planning scan found nothing to repair, so nothing was written
    assert codes[other] in (0, 1, 2) and "Nothing to repair." in outs[other][0], why
    assert outs[other][1] == "" and not (d / f"backup{other}").exists(), why
    return "one after the other"


def test_two_repairs_of_one_dir_at_once_the_second_is_refused_every_time(tmp_path, bigger):
    work = tmp_path / "straight"
    work.mkdir()
    straight = wr.clone(bigger.template, work / "root")
    assert wr.cli(*bigger.args(straight, work / "backup")).returncode in (0, 1, 2)
    reference = wr.tree(straight / "logs")
    trials = tiers.examples(20)  # 10 in test-fast: the overlaps are chance, the refusal is proven below
    seen: list[str] = []
    runner = subprocess.Popen([sys.executable, "-c", TOGETHER], env=wr.cli_env(), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert runner.stdin is not None and runner.stdout is not None
    try:
        for trial in range(trials):
            d = tmp_path / f"t{trial}"
            d.mkdir()
            root = wr.clone(bigger.template, d / "root")
            runs = [[str(a) for a in bigger.args(root, d / f"backup{k}")] for k in (0, 1)]
            runner.stdin.write(json.dumps([str(d), runs]) + "\n")
            runner.stdin.flush()
            while not all((d / f"ready{k}").exists() for k in (0, 1)):
                assert runner.poll() is None
                time.sleep(0.001)
            (d / "go").touch()  # both start their run at once (imports done)
            codes = json.loads(runner.stdout.readline())
            outs = [((d / f"out{k}").read_text(), (d / f"err{k}").read_text()) for k in (0, 1)]
            seen.append(_two_runs_outcome(codes, outs, d, reference, root))
    finally:
        runner.stdin.close()
        assert runner.wait(timeout=60) == 0
    # how often they overlapped depends on the machine's load; that an overlap is always refused is proven
    # without timing by test_a_repair_started_while_another_holds_the_lock_is_refused
    assert len(seen) == trials, seen


def test_two_repairs_one_after_the_other_are_told_apart_from_a_race(tmp_path, bigger):
    """What a loaded machine does to the trials above (the first run ends before the second starts),
    made to happen: the second run plans nothing, and that is not taken for a failed lock."""
    work = tmp_path / "straight"
    work.mkdir()
    straight = wr.clone(bigger.template, work / "root")
    assert wr.cli(*bigger.args(straight, work / "backup")).returncode in (0, 1, 2)
    reference = wr.tree(straight / "logs")
    d = tmp_path / "t"
    d.mkdir()
    root = wr.clone(bigger.template, d / "root")
    runs = [wr.cli(*bigger.args(root, d / f"backup{k}")) for k in (0, 1)]
    outs = [(r.stdout, r.stderr) for r in runs]
    assert _two_runs_outcome([r.returncode for r in runs], outs, d, reference, root) == "one after the other"


def test_a_repair_started_while_another_holds_the_lock_is_refused(tmp_path, bigger):
    """The interleaving the trials above hope for, forced: the first run stops right after it took the log
    dir's lock (LOGDOCTOR_PAUSE_LOCKED: it waits on a FIFO, so the test knows it holds the lock when its
    own open of the FIFO returns); the second run, started then, is refused (75) and writes nothing; the
    first, let go, repairs the dir as a run alone does."""
    work = tmp_path / "straight"
    work.mkdir()
    straight = wr.clone(bigger.template, work / "root")
    assert wr.cli(*bigger.args(straight, work / "backup")).returncode in (0, 1, 2)
    reference = wr.tree(straight / "logs")
    root = wr.clone(bigger.template, tmp_path / "root")
    first, hold = wr.start_holding_lock(tmp_path / "pause", *bigger.args(root, tmp_path / "backup0"))
    try:
        before = wr.tree(tmp_path)
        second = wr.cli(*bigger.args(root, tmp_path / "backup1"))
        assert second.returncode == 75, (second.returncode, second.stdout[-2000:], second.stderr[-2000:])
        assert "another logdoctor run" in second.stderr and "\n" not in second.stderr.strip(), second.stderr
        assert f"(pid {first.pid})" in second.stderr, second.stderr
        assert wr.tree(tmp_path) == before  # not a byte written by the refused run
        assert first.poll() is None  # the first run still waits, holding the lock
    finally:
        os.close(hold)
    out, err = first.communicate(timeout=300)
    assert first.returncode in (0, 1, 2) and "applied:" in out, err[-2000:]
    assert wr.tree(root / "logs") == reference


# --- item 12: the disk fills up while the repair writes ----------------------------------------------

FILL_WRAPPER = """
import sys
from logdoctor.repair import space
space.check = lambda plan: None  # the space was there when checked; another writer took it since
from logdoctor.cli.main import main
sys.argv[0] = "logdoctor"
main()
"""


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs.mounted(tmp_path / "disk", "96k") as mnt:
        yield mnt


@pytest.mark.parametrize("free", [0, 40_000, 70_000])
def test_a_disk_filling_up_during_the_repair_is_one_line_73_and_nothing_half_done(
    tmp_path, case, small_disk, free
):
    """The backup dir on a 96 KiB file system filled up to leave ``free`` bytes: the staging, or the
    backups of the steps, run out of space."""
    root = wr.clone(case.template, tmp_path / "root")
    original = wr.tree(root)
    st = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - free))
    backup = small_disk / "backup"
    r = subprocess.run(
        [sys.executable, "-c", FILL_WRAPPER, *case.args(root, backup)[:-2]],  # without --jobs 1
        env=wr.cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 73, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    line = r.stderr.strip()
    assert "\n" not in line and "No space left on device" in line and str(small_disk) in line, line
    assert "Errno" not in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert wr.tree(root) == original  # nothing half-done: the log dir is byte for byte as it was
    journal = backup / "journal.jsonl"
    if journal.exists():  # the run had begun: its journal says it was undone, and it cannot be resumed
        ends = [json.loads(x) for x in journal.read_text().splitlines() if '"t":"end"' in x]
        assert ends and ends[-1]["status"] == "rolled-back", ends
    else:
        assert not backup.exists() or not any(backup.iterdir())


def test_a_sync_rolls_back_after_the_leader_grew(tmp_path):
    """The rollback of a sync-replica removes the follower's new copy and puts its old one back: what the
    leader did since (it only read it) is no concern of the rollback, nor of its check."""
    case = wr.sync_case(tmp_path / "case")
    root = wr.clone(case.template, tmp_path / "root")
    original = wr.tree(root)
    backup = tmp_path / "backup"
    r = wr.cli(*case.args(root, backup))
    assert r.returncode == 0, r.stderr[-2000:]
    leader = Path(case.args(root, backup)[case.args(root, backup).index("--leader") + 1])
    log = sorted((leader / "orders-0").glob("*.log"))[-1]
    with open(log, "ab") as f:
        f.write(b"the leader appended after the sync")
    grown = wr.tree(leader)
    r = wr.cli("sync-replica", "--rollback", backup / "journal.jsonl", "--apply")
    assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    now = wr.tree(root)
    lead_rel = str(leader.relative_to(root))
    assert {k: v for k, v in now.items() if not k.startswith(lead_rel)} == {
        k: v for k, v in original.items() if not k.startswith(lead_rel)
    }
    assert wr.tree(leader) == grown

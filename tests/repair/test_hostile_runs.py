"""Issue 24, from the reliability audit: a `.lock` held with flock(2) by another process, and runs
killed around the journal's creation.

- Another process holding ``.lock`` with flock(2) (not the POSIX lock a JVM takes) was not seen: every
  writing command, resume and rollback included, wrote. Each must refuse with 75 and write nothing.
- Killed between creating its journal and writing its first record, a run left an empty journal that
  ``--resume`` and ``--rollback`` rejected (64); killed before the journal, it left a new empty ``.lock``
  (move-partition in its target dir). The kill here is a real SIGKILL of the real command line, sent
  by the process itself at the exact point (the journal class patched in a wrapper): afterwards the
  dirs are as they were, or the journal resumes and rolls back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage
from test_repair_realworld import damage_log_dir

from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet, generate_log_dir

SRC = Path(__file__).resolve().parents[2] / "src"

FLOCK_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
"""

# The CLI with the journal patched to SIGKILL the process: "create" when the journal is created (before
# any record), "first-record" at its first append.
KILLED_CLI = """
import os, signal, sys
from logdoctor.repair import journal
where = sys.argv.pop(1)

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

if where == "create":
    journal.Journal.__init__ = die
else:
    journal.Journal.append = die
from logdoctor.cli.main import main
sys.argv[0] = "logdoctor"
main()
"""


PLAIN_CLI = "import sys\nfrom logdoctor.cli.main import main\nsys.argv[0] = 'logdoctor'\nmain()"


def _cli(*args: object, kill: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("LOGDOCTOR_CRASH_AT", None)
    env.pop("LOGDOCTOR_CRASH_AFTER_STEP", None)
    code = KILLED_CLI if kill else PLAIN_CLI
    argv = [sys.executable, "-c", code, *([kill] if kill else []), *map(str, args)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)


@contextmanager
def _flock_held(log_dir: Path):
    proc = subprocess.Popen([sys.executable, "-c", FLOCK_HOLDER, str(log_dir / ".lock")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    """A generated log dir with damage to repair (torn tail, bad indexes, checkpoints, orphans) and no
    ``.lock`` (so that a run creating one shows)."""
    work = tmp_path_factory.mktemp("hostile-runs")
    gen, _ = generate_log_dir(
        work / "gen",
        [TopicSpec("orders", partitions=2, records_per_partition=600, records_per_batch=5,
                   segment_bytes=50_000)],
        seed=24,
    )
    root = damage.copy_log_dir(gen, work / "template" / "logs")
    damage_log_dir(root, 1)
    (root / ".lock").unlink(missing_ok=True)
    return root


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """Two log dirs of one broker, neither with a ``.lock``; the partitions of the first to move."""
    work = tmp_path_factory.mktemp("hostile-move")
    f = generate_fleet(
        work / "template",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=2, records_per_partition=500, records_per_batch=5)],
            brokers=(BrokerSpec(0, log_dirs=2),),
            seed=24,
        ),
    )
    src, dst = f.log_dirs[0]
    for d in (src, dst):
        (d / ".lock").unlink(missing_ok=True)
    moved = sorted(p.name for p in src.iterdir() if p.name.startswith("orders-"))
    assert moved
    return src, dst, moved


def _clone(src: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


def test_a_flock_lock_refuses_repair_resume_and_rollback(tmp_path, damaged):
    root = _clone(damaged, tmp_path / "logs")
    original = damage.tree(root)
    # a journal to resume and roll back: a run killed at its first step's record
    backup = tmp_path / "backup"
    run = _cli("repair", root, "--apply", "--backup-dir", backup, "--jobs", "1", kill="first-record")
    assert run.returncode == -9, run.stderr[-2000:]
    journal = backup / "journal.jsonl"
    after_kill = damage.tree(root)
    with _flock_held(root):
        locked = damage.tree(root)
        r = _cli("repair", root, "--apply", "--backup-dir", tmp_path / "other-backup", "--jobs", "1")
        assert r.returncode == 75, (r.returncode, r.stderr[-2000:])
        assert not (tmp_path / "other-backup").exists()
        for mode in ("--resume", "--rollback"):
            r = _cli("repair", mode, journal, "--apply")
            assert r.returncode == 75, (mode, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
        assert damage.tree(root) == locked
    assert locked == after_kill
    r = _cli("repair", "--rollback", journal, "--apply")
    assert r.returncode == 0, r.stderr[-2000:]
    assert damage.tree(root) == original  # the .lock the killed run created is gone too


def test_a_flock_lock_refuses_move_partition(tmp_path, fleet):
    src_t, dst_t, moved = fleet
    root = _clone(src_t.parent, tmp_path / "fleet")
    src, dst = root / src_t.name, root / dst_t.name
    with _flock_held(dst):
        before = damage.tree(root)
        r = _cli("move-partition", *moved, "--from", src, "--to", dst, "--copy", "--apply",
                 "--backup-dir", tmp_path / "backup")  # fmt: skip
        assert r.returncode == 75, (r.returncode, r.stderr[-2000:])
        assert damage.tree(root) == before and not (tmp_path / "backup").exists()


@pytest.mark.parametrize("kill", ["create", "first-record"])
def test_a_repair_killed_around_its_journal_leaves_the_dir_as_it_was_or_resumable(tmp_path, damaged, kill):
    # a resumed repair exits as the same repair run straight through (the scan after it judges the dir)
    straight = _cli("repair", _clone(damaged, tmp_path / "straight"), "--apply", "--backup-dir",
                    tmp_path / "straight-backup", "--jobs", "1").returncode  # fmt: skip
    for finish in ("resume", "rollback"):
        work = tmp_path / finish
        work.mkdir()
        root = _clone(damaged, work / "logs")
        original = damage.tree(root)
        backup = work / "backup"
        run = _cli("repair", root, "--apply", "--backup-dir", backup, "--jobs", "1", kill=kill)
        assert run.returncode == -9, run.stderr[-2000:]
        journal = backup / "journal.jsonl"
        if not journal.exists():
            assert damage.tree(root) == original, "killed before its journal, the run changed the log dir"
            continue
        r = _cli("repair", f"--{finish}", journal, "--apply", "--json")
        expected = straight if finish == "resume" else 0
        assert r.returncode == expected, (finish, r.returncode, straight, r.stderr[-2000:])
        status = json.loads(r.stdout)["result"]["status"]
        if finish == "rollback":
            assert status == "rolled-back"
            assert damage.tree(root) == original
        else:
            assert status == "applied"
            assert not (root / ".lock").exists()  # the run's own .lock is gone again
            assert damage.tree(root) != original


@pytest.mark.parametrize("kill", ["create", "first-record"])
def test_move_partition_killed_around_its_journal_leaves_no_lock_behind(tmp_path, fleet, kill):
    src_t, dst_t, moved = fleet
    root = _clone(src_t.parent, tmp_path / "fleet")
    src, dst = root / src_t.name, root / dst_t.name
    original = damage.tree(root)
    backup = tmp_path / "backup"
    args = ("move-partition", *moved, "--from", src, "--to", dst, "--copy", "--apply", "--backup-dir", backup)
    run = _cli(*args, kill=kill)
    assert run.returncode == -9, run.stderr[-2000:]
    journal = backup / "journal.jsonl"
    if journal.exists():
        r = _cli("move-partition", "--rollback", journal, "--apply", "--json")
        assert r.returncode == 0, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert damage.tree(root) == original  # not even a new empty .lock in the target dir


def test_an_empty_journal_is_nothing_to_resume_or_roll_back(tmp_path):
    """An empty journal (left by a logdoctor before this fix, killed between creating it and writing its
    plan record): the run changed nothing, so --resume and --rollback say so and exit 0 (was 64)."""
    backup = tmp_path / "backup"
    backup.mkdir()
    journal = backup / "journal.jsonl"
    journal.write_bytes(b"")
    for command in ("repair", "move-partition"):
        for mode in ("--resume", "--rollback"):
            r = _cli(command, mode, journal, "--apply")
            assert r.returncode == 0, (command, mode, r.returncode, r.stderr)
            assert "nothing to resume or roll back" in r.stderr and str(journal) in r.stderr

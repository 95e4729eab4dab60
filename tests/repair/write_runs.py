"""Helpers for the tests of the writing commands' preconditions (issue 32): the real command line in a
subprocess, generated log dirs to repair, move and sync, whole-tree snapshots, printed commands run as
printed."""

from __future__ import annotations

import errno
import hashlib
import os
import shlex
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import damage
from test_repair_realworld import damage_log_dir

from logdoctor.sample.logdir import (
    BrokerSpec,
    FleetSpec,
    LaggingReplica,
    TopicSpec,
    generate_fleet,
    generate_log_dir,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def cli_argv(*args: object) -> list[str]:
    return [sys.executable, "-m", "logdoctor", *map(str, args)]


def cli_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), **extra}
    for var in ("LOGDOCTOR_CRASH_AT", "LOGDOCTOR_CRASH_AFTER_STEP", "LOGDOCTOR_PAUSE_LOCKED"):
        if var not in extra:
            env.pop(var, None)
    return env


def cli(*args: object, **env: str) -> subprocess.CompletedProcess[str]:
    """The real command line, in a subprocess (``env``: extra variables, e.g. the crash hook)."""
    return subprocess.run(cli_argv(*args), env=cli_env(**env), capture_output=True, text=True, timeout=300)


def start_holding_lock(fifo: Path, *args: object) -> tuple[subprocess.Popen[str], int]:
    """The command line started with ``LOGDOCTOR_PAUSE_LOCKED`` (logdoctor.repair.apply): returned once
    it holds its log dirs' own locks and waits, with the write end of ``fifo``, whose close lets it go on
    (``communicate`` it then). Fails when the run ends without waiting."""
    os.mkfifo(fifo)
    proc = subprocess.Popen(cli_argv(*args), env=cli_env(LOGDOCTOR_PAUSE_LOCKED=str(fifo)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    while True:
        try:  # ENXIO until the run opened the FIFO for reading (it holds the locks then)
            return proc, os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        if proc.poll() is not None:
            _, err = proc.communicate()
            raise AssertionError(f"the run ended ({proc.returncode}): {err[-2000:]}")
        time.sleep(0.01)


def run_printed(command: str) -> subprocess.CompletedProcess[str]:
    """A printed ``logdoctor ...`` command, run exactly as printed."""
    argv = shlex.split(command)
    assert argv[0] == "logdoctor", command
    return cli(*argv[1:])


def printed_commands(text: str) -> list[str]:
    """The `logdoctor ...` commands quoted with backticks in ``text``."""
    parts = text.split("`")
    return [p for p in parts[1::2] if p.startswith("logdoctor ")]


def clone(template: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", str(template), str(dst)], check=True)
    return dst


def tree(root: Path) -> dict[str, tuple]:
    """Every file and folder under ``root``: contents, modes, owners (as damage.tree); a symlink by
    where it points, a FIFO or socket by its kind (never opened)."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            meta = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None, *meta)
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", hashlib.sha256(Path(p).read_bytes()).hexdigest(), *meta)
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.readlink(p))
            else:
                out[rel] = (stat.S_IFMT(st.st_mode), None, *meta)
    return out


@dataclass
class Case:
    """One writing command on a template tree: ``apply_args(root, backup)`` is its ``--apply`` command
    line for a copy of the template at ``root``; ``dirs`` its log dirs relative to ``root``."""

    command: str
    template: Path
    dirs: list[str]
    apply_args: object  # Callable[[Path, Path], list[str]]

    def args(self, root: Path, backup: Path) -> list[str]:
        return self.apply_args(root, backup)  # type: ignore[operator]


def repair_case(work: Path, *, partitions: int = 2, records: int = 600) -> Case:
    """A generated log dir with the damage test_crash_and_refusals plants (torn tail, padded and
    unreadable indexes, checkpoints, orphans, owner and mode)."""
    gen, _ = generate_log_dir(
        work / "gen",
        [
            TopicSpec("orders", partitions=partitions, records_per_partition=records, records_per_batch=5,
                      segment_bytes=50_000),
        ],
        seed=32,
    )  # fmt: skip
    root = damage.copy_log_dir(gen, work / "template" / "logs")
    damage_log_dir(root, 2)
    return Case(
        "repair",
        work / "template",
        ["logs"],
        lambda r, b: ["repair", str(r / "logs"), "--apply", "--backup-dir", str(b), "--jobs", "1"],
    )


def move_case(work: Path) -> Case:
    """Two log dirs of one broker; every orders partition of the first copied to the second (--copy)."""
    fleet = generate_fleet(
        work / "template",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=2, records_per_partition=500, records_per_batch=5)],
            brokers=(BrokerSpec(0, log_dirs=2),),
            seed=32,
        ),
    )
    src, dst = (p.relative_to(fleet.root) for p in fleet.log_dirs[0])
    moved = sorted(p.name for p in (fleet.root / src).iterdir() if p.name.startswith("orders-"))
    assert moved
    return Case(
        "move-partition",
        fleet.root,
        [str(src), str(dst)],
        lambda r, b: ["move-partition", *moved, "--from", str(r / src), "--to", str(r / dst), "--copy",
                      "--apply", "--backup-dir", str(b)],
    )  # fmt: skip


def sync_case(work: Path) -> Case:
    """A follower 200 of 1,500 records behind; its copy replaced by the leader's, checkpoints synced."""
    fleet = generate_fleet(
        work / "template",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=1, replication_factor=2, records_per_partition=1500,
                              records_per_batch=5, segment_bytes=50_000, leader_epochs=3)],
            brokers=(BrokerSpec(0), BrokerSpec(1)),
            faults=[LaggingReplica(1, "orders", 0, 200)],
            seed=32,
        ),
    )  # fmt: skip
    leader, follower = (fleet.log_dirs[b][0].relative_to(fleet.root) for b in (0, 1))
    return Case(
        "sync-replica",
        fleet.root,
        [str(leader), str(follower)],
        lambda r, b: ["sync-replica", "orders-0", "--leader", str(r / leader), "--follower",
                      str(r / follower), "--apply", "--backup-dir", str(b)],
    )  # fmt: skip

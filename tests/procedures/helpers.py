"""Helpers for the procedure tests: log dir copies, a second log dir of the same broker, tree
snapshots, a child process holding the broker lock, and an independent record reader (kafka-python)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from kafka.record import MemoryRecords

import realworld
from logdoctor.formats.checkpoint import parse_offset_checkpoint
from logdoctor.logdir.names import DirKind, parse_partition_dir

CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def copy_log_dir(src: Path, dst: Path) -> Path:
    """A writable copy of a (read-only, real) log dir with a broker's ordinary modes."""
    realworld.writable_copy(src, dst)
    return dst


def second_log_dir(first: Path, path: Path) -> Path:
    """Another (empty) log dir of the same broker: the same meta.properties but, where the first has a
    directory.id (KIP-858), a new one of its own (a broker refuses two dirs with one id); empty
    checkpoints."""
    from logdoctor.formats.properties import parse_meta_properties, write_meta_properties

    path.mkdir(parents=True)
    meta_path = first / "meta.properties"
    meta = parse_meta_properties(meta_path.read_bytes(), source=str(meta_path))
    if meta.directory_id is not None:
        digest = hashlib.sha256(str(path).encode()).digest()[:16]
        meta.directory_id = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    (path / "meta.properties").write_bytes(write_meta_properties(meta))
    for name in CHECKPOINTS[:3]:
        (path / name).write_bytes(b"0\n0\n")
    return path


def tree(root: Path) -> dict[str, tuple]:
    """relative path -> (kind, sha256, mode) of every file and folder (folder mtimes aside)."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None, stat.S_IMODE(st.st_mode))
            else:
                out[rel] = (
                    "file",
                    hashlib.sha256(Path(p).read_bytes()).hexdigest(),
                    stat.S_IMODE(st.st_mode),
                )
    return out


def live_partitions(log_dir: Path) -> set[str]:
    """Names of the folders the broker would load as logs."""
    out = set()
    for p in log_dir.iterdir():
        parsed = parse_partition_dir(p.name)
        if p.is_dir() and parsed is not None and parsed.kind is DirKind.LOG:
            out.add(p.name)
    return out


def other_dirs(log_dir: Path) -> set[str]:
    """Folders that are not plain live partitions (partial copies, -delete folders, ...)."""
    return {p.name for p in log_dir.iterdir() if p.is_dir() and p.name not in live_partitions(log_dir)}


def checkpoint(log_dir: Path, name: str) -> dict[tuple[str, int], int]:
    """Entries of a checkpoint, parsed strictly (as the broker reads it: count line must match)."""
    p = log_dir / name
    if not p.exists():
        return {}
    return parse_offset_checkpoint(p.read_bytes(), source=str(p)).offsets()


def read_records(part: Path) -> dict[int, tuple]:
    """{offset: (key, value, timestamp)} of every record of a partition folder, read with kafka-python."""
    recs: dict[int, tuple] = {}
    for log in sorted(part.glob("*.log")):
        mr = MemoryRecords(log.read_bytes())
        while mr.has_next():
            batch = mr.next_batch()
            if batch is None:
                break
            assert batch.validate_crc(), log
            for r in batch:
                recs[r.offset] = (r.key, r.value, r.timestamp)
    return recs


HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def broker_holding_lock(log_dir: Path) -> Iterator[int]:
    """A child process locking ``<log dir>/.lock`` as the broker does (fcntl F_SETLK, whole file)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(log_dir / ".lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def run_forked(fn) -> int:
    """Run ``fn`` in a forked child; return its wait status (a SIGKILL from the crash hook shows as such)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            fn()
        except BaseException:
            code = 3
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status

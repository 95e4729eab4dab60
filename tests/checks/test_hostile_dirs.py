"""Hostile log dirs: FIFOs, folders and symlinks where Kafka expects regular files.

A real log dir is copied, then planted with: FIFOs named like a segment's ``.log``, ``.index`` and
``.timeindex``; a FIFO ``.lock``; a folder named like a ``.log``; a ``.log``, a ``.timeindex``, a
partition folder and a checkpoint that are symlinks to a folder outside the log dir. Every command
runs as a subprocess with a timeout (a read blocked on a FIFO fails the test instead of hanging the
suite) and must:

- never block, never crash (no traceback, no internal-error exit code);
- report each planted entry as a finding (NOT_A_REGULAR_FILE, SYMLINK_IN_LOG_DIR);
- never open, read or change anything outside the folders it was given. The outside folder is
  watched with inotify (IN_OPEN/IN_ACCESS/IN_MODIFY/... are delivered for the target file or folder
  whatever path reached it, so a read through a symlink is seen), one of the symlinks points at an
  outside FIFO (following it would block), and the outside tree (names, types, modes, sizes,
  contents, mtimes and ctimes) is compared before and after.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import realworld

pytestmark = pytest.mark.realworld

NAME = "zk-pre2.8-volodymyrzee"  # a ZooKeeper-mode dir with .lock, indexes and non-empty segments
SRC = Path(__file__).resolve().parents[2] / "src"
TIMEOUT_S = 60
SEG = "00000000000000000000"

# <sys/inotify.h>
IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x1, 0x2, 0x4, 0x8
IN_OPEN, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE = 0x20, 0x40, 0x80, 0x100
IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x200, 0x400, 0x800
IN_Q_OVERFLOW = 0x4000
WATCH_MASK = (
    IN_ACCESS
    | IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_OPEN
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
_EVENT = struct.Struct("iIII")


class Inotify:
    """Every event on the folders (and their files) under ``root``, from any process."""

    def __init__(self, root: Path) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            pytest.skip(f"required: inotify ({os.strerror(ctypes.get_errno())})")
        self.watches: dict[int, str] = {}
        folders = [folder for folder, _dirs, _files in os.walk(root)]  # listed before watching
        for folder in folders:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), WATCH_MASK)
            assert wd >= 0, os.strerror(ctypes.get_errno())
            self.watches[wd] = folder

    def events(self) -> list[str]:
        out = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            i = 0
            while i < len(data):
                wd, mask, _cookie, n = _EVENT.unpack_from(data, i)
                name = data[i + _EVENT.size : i + _EVENT.size + n].rstrip(b"\0").decode()
                i += _EVENT.size + n
                if mask & IN_Q_OVERFLOW:
                    out.append("queue overflow")
                else:
                    out.append(f"{hex(mask)} {os.path.join(self.watches.get(wd, '?'), name)}")

    def close(self) -> None:
        os.close(self.fd)


def snapshot(root: Path) -> dict[str, tuple]:
    """Type, mode, size, mtime, ctime and content hash (link target) of everything under ``root``,
    read without opening a FIFO."""
    out: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in [".", *sorted(files), *[d for d in dirs if os.path.islink(os.path.join(folder, d))]]:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            content: str | None = None
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    content = hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(p)
            key = os.path.normpath(os.path.relpath(p, root))
            out[key] = (
                stat.S_IFMT(st.st_mode),
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                content,
            )
    return out


@dataclass
class World:
    root: Path
    logdir: Path
    outside: Path

    def p(self, rel: str) -> str:
        return str(self.logdir / rel)


def plant(root: Path, *, fifo_lock: bool = True) -> World:
    """A copy of the real log dir with every hostile entry planted; the link targets in ``outside``."""
    logdir = realworld.writable_copy(realworld.require() / NAME, root / "kafka-logs")
    outside = root / "outside"
    outside.mkdir()
    # (1) FIFOs named like a segment's files
    for suffix in (".log", ".index", ".timeindex"):
        f = logdir / "first_topic-0" / (SEG + suffix)
        f.unlink()
        os.mkfifo(f)
    # (2) a FIFO .lock at the root
    if fifo_lock:
        (logdir / ".lock").unlink()
        os.mkfifo(logdir / ".lock")
    # (3) a folder named like a .log
    d = logdir / "first_topic-1" / "00000000000000000042.log"
    d.mkdir()
    (d / "inside").write_bytes(b"not a segment\n")
    # (4) a segment .log that is a symlink to a (real, readable) file outside; its .timeindex a symlink to
    # an outside FIFO (following that link blocks)
    part = logdir / "first_topic-2"
    shutil.move(part / (SEG + ".log"), outside / "segment.log")
    os.symlink(outside / "segment.log", part / (SEG + ".log"))
    (part / (SEG + ".timeindex")).unlink()
    os.mkfifo(outside / "fifo")
    os.symlink(outside / "fifo", part / (SEG + ".timeindex"))
    # (5) a partition folder that is a symlink to a folder outside
    shutil.move(logdir / "new_topic-0", outside / "new_topic-0")
    os.symlink(outside / "new_topic-0", logdir / "new_topic-0")
    # (6) a checkpoint that is a symlink to a file outside
    shutil.move(logdir / "replication-offset-checkpoint", outside / "replication-offset-checkpoint")
    os.symlink(outside / "replication-offset-checkpoint", logdir / "replication-offset-checkpoint")
    return World(root, logdir, outside)


FIFOS = [f"first_topic-0/{SEG}.log", f"first_topic-0/{SEG}.index", f"first_topic-0/{SEG}.timeindex"]
FOLDER_AS_FILE = "first_topic-1/00000000000000000042.log"
LINKS = [
    f"first_topic-2/{SEG}.log",
    f"first_topic-2/{SEG}.timeindex",
    "new_topic-0",
    "replication-offset-checkpoint",
]


def run(world: World, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``logdoctor ARGS`` with the outside folder watched; fails on a timeout, an internal error, or any
    access to the outside folder, and when the outside tree changed."""
    before = snapshot(world.outside)
    watch = Inotify(world.outside)
    try:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "logdoctor", *args],
                env={**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"},
                cwd=cwd or world.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"logdoctor {' '.join(args)} blocked for {TIMEOUT_S}s (a FIFO read?): {e.stdout!r}")
        events = watch.events()
    finally:
        watch.close()
    assert not events, f"logdoctor {' '.join(args)} touched the outside folder: {events}"
    assert snapshot(world.outside) == before, f"logdoctor {' '.join(args)} changed the outside folder"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 70, proc.stderr  # EX_SOFTWARE: an internal error
    return proc


def plants_intact(world: World, *, fifo_lock: bool = True) -> None:
    for rel in [*FIFOS, ".lock"] if fifo_lock else FIFOS:
        assert stat.S_ISFIFO(os.lstat(world.p(rel)).st_mode), rel
    assert os.path.isdir(world.p(FOLDER_AS_FILE)) and not os.path.islink(world.p(FOLDER_AS_FILE))
    for rel in LINKS:
        assert os.path.islink(world.p(rel)), rel
        assert os.readlink(world.p(rel)).startswith(str(world.outside)), rel


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return plant(tmp_path_factory.mktemp("hostile"))


def _findings(stdout: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in json.loads(stdout)["findings"]:
        out.setdefault(f["path"], set()).add(f["code"])
        if f["code"] == "SYMLINK_IN_LOG_DIR":
            assert f["details"]["case"] == "outside", f  # every planted link leads out
    return out


def assert_planted_reported(world: World, findings: dict[str, set[str]]) -> None:
    for rel in [*FIFOS, ".lock", FOLDER_AS_FILE]:
        assert "NOT_A_REGULAR_FILE" in findings.get(world.p(rel), set()), (rel, findings.get(world.p(rel)))
    for rel in LINKS:
        assert "SYMLINK_IN_LOG_DIR" in findings.get(world.p(rel), set()), (rel, findings.get(world.p(rel)))


@pytest.mark.parametrize("depth", ["--quick", "--default", "--deep"])
def test_scan_reports_and_never_follows(world: World, depth: str) -> None:
    args = ["scan", str(world.logdir), "--json", "-j", "2"] + ([depth] if depth != "--default" else [])
    proc = run(world, *args)
    assert proc.returncode == 2, proc.stderr  # errors: the FIFOs
    findings = _findings(proc.stdout)
    assert_planted_reported(world, findings)
    # nothing else is said about the planted entries: not a permission problem, not a leftover
    for rel in [*FIFOS, ".lock", FOLDER_AS_FILE, *LINKS]:
        assert findings.get(world.p(rel), set()) <= {"NOT_A_REGULAR_FILE", "SYMLINK_IN_LOG_DIR"}, rel
    # the partition behind the symlink is not checked, nor called missing from the checkpoints
    report = json.loads(proc.stdout)
    assert "new_topic" not in {p["topic"] for p in report["partitions"]}
    for f in report["findings"]:
        if f["code"] != "SYMLINK_IN_LOG_DIR":
            assert "new_topic-0" not in json.dumps(f.get("details", {})), f  # e.g. a stale checkpoint entry
    # the real segments beside the plants are still checked
    part2 = next(p for p in report["partitions"] if (p["topic"], p["partition"]) == ("first_topic", 2))
    assert part2["segments"] == 0  # its only .log is the symlink
    part1 = next(p for p in report["partitions"] if (p["topic"], p["partition"]) == ("first_topic", 1))
    assert part1["segments"] == 1 and part1["log_end_offset"] and part1["log_end_offset"] > 0
    plants_intact(world)


def test_scan_text_output_names_the_plants(world: World) -> None:
    proc = run(world, "scan", str(world.logdir), "-v", "-j", "1")
    assert proc.returncode == 2, proc.stderr
    assert "NOT_A_REGULAR_FILE" in proc.stdout and "SYMLINK_IN_LOG_DIR" in proc.stdout


@pytest.mark.parametrize(
    "rel",
    [*FIFOS, FOLDER_AS_FILE, ".lock", *LINKS[:2], "replication-offset-checkpoint", f"new_topic-0/{SEG}.log"],
)
def test_dump_refuses_what_is_not_a_regular_file(world: World, rel: str) -> None:
    proc = run(world, "dump", world.p(rel))
    assert proc.returncode != 0, proc.stdout
    said = proc.stderr + proc.stdout
    assert any(w in said for w in ("not a regular file", "symlink", "is a directory, not a file")), said


def test_dump_beside_the_plants_still_works(world: World) -> None:
    proc = run(world, "dump", world.p(f"first_topic-1/{SEG}.log"), "--deep")
    assert proc.returncode == 0, proc.stderr
    assert "base offset 0" in proc.stdout and "crc" in proc.stdout


def test_retention(world: World) -> None:
    proc = run(world, "retention", str(world.logdir), "--json", "--all", "-j", "1")
    assert proc.returncode in (0, 1, 2), proc.stderr
    json.loads(proc.stdout)


def test_inventory(world: World) -> None:
    out = world.root / "inv" / "broker.jsonl"
    out.parent.mkdir(exist_ok=True)
    proc = run(world, "inventory", str(world.logdir), "--out", str(out), "--json", "-j", "1")
    assert proc.returncode in (0, 1, 2), proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    codes = {r.get("code") for r in rows if r.get("record") == "finding"}
    assert {"NOT_A_REGULAR_FILE", "SYMLINK_IN_LOG_DIR"} <= codes, codes


def test_repair_dry_run(world: World) -> None:
    proc = run(
        world, "repair", str(world.logdir), "--backup-dir", str(world.root / "never"), "--json", "-j", "1"
    )
    assert proc.returncode in (0, 1, 2), proc.stderr
    plan = json.loads(proc.stdout)["plan"]
    touched = json.dumps(plan["actions"])
    for rel in [*FIFOS, ".lock", FOLDER_AS_FILE, *LINKS]:
        assert f'"{world.p(rel)}"' not in touched, rel
    assert not (world.root / "never").exists()
    plants_intact(world)


def test_repair_apply_refuses_a_fifo_lock(tmp_path: Path) -> None:
    w = plant(tmp_path)
    (w.logdir / "cleaner-offset-checkpoint.tmp").write_bytes(b"0\n0\n")  # a repairable leftover
    before = snapshot(w.logdir)
    proc = run(w, "repair", str(w.logdir), "--apply", "--backup-dir", str(tmp_path / "backup"), "-j", "1")
    assert proc.returncode == 78, proc.stderr  # refused: nothing written
    assert ".lock" in proc.stderr and "not a regular file" in proc.stderr, proc.stderr
    assert snapshot(w.logdir) == before
    plants_intact(w)


def test_repair_apply_leaves_the_plants_alone(tmp_path: Path) -> None:
    w = plant(tmp_path, fifo_lock=False)
    leftover = w.logdir / "cleaner-offset-checkpoint.tmp"
    leftover.write_bytes(b"0\n0\n")  # a repairable leftover: moved to the backup
    backup = tmp_path / "backup"
    proc = run(w, "repair", str(w.logdir), "--apply", "--backup-dir", str(backup), "--json", "-j", "1")
    assert proc.returncode in (0, 1, 2), proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert result["status"] == "applied", result
    assert not leftover.exists()
    plants_intact(w, fifo_lock=False)
    for rel in FIFOS:
        assert stat.S_ISFIFO(os.lstat(w.p(rel)).st_mode)
    # the planted entries are still reported afterwards
    after = run(w, "scan", str(w.logdir), "--json", "-j", "1")
    found = _findings(after.stdout)
    for rel in [*FIFOS, FOLDER_AS_FILE]:
        assert "NOT_A_REGULAR_FILE" in found.get(w.p(rel), set()), rel
    for rel in LINKS:
        assert "SYMLINK_IN_LOG_DIR" in found.get(w.p(rel), set()), rel


def test_o_nofollow_is_what_the_readers_use(tmp_path: Path) -> None:
    """The read helpers refuse a symlink and a FIFO without blocking (the unit behind the above)."""
    from logdoctor.logdir import files

    target = tmp_path / "target"
    target.write_bytes(b"x" * 10)
    os.symlink(target, tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    for read in (files.read_file, files.map_file, lambda p: files.read_range(p, 0)):
        with pytest.raises(files.NotRegularFileError) as e:
            read(tmp_path / "link")
        assert e.value.errno == errno.ELOOP and "symlink" in str(e.value)
        with pytest.raises(files.NotRegularFileError) as e:
            read(tmp_path / "fifo")
        assert "FIFO" in str(e.value)
        assert bytes(read(target)) == b"x" * 10


def test_lock_probe_and_hold_refuse_a_fifo_lock(tmp_path: Path) -> None:
    """The lock probe answers at once for a FIFO or symlinked .lock (None: nothing probed), and taking
    the lock refuses both."""
    from logdoctor.logdir import files, lock

    os.mkfifo(tmp_path / ".lock")
    assert lock.lock_file_problem(tmp_path) == "a FIFO"
    assert lock.lock_holder(tmp_path) is None
    with pytest.raises(files.NotRegularFileError), lock.hold_lock(tmp_path):
        pass
    (tmp_path / ".lock").unlink()
    (tmp_path / "elsewhere").write_bytes(b"")
    os.symlink(tmp_path / "elsewhere", tmp_path / ".lock")
    assert lock.lock_file_problem(tmp_path) == f"a symlink to {tmp_path / 'elsewhere'}"
    assert lock.lock_holder(tmp_path) is None
    with pytest.raises(files.NotRegularFileError), lock.hold_lock(tmp_path):
        pass


def test_kraft_replica_behind_a_symlink_is_not_missing(tmp_path: Path) -> None:
    """KRaft: the metadata log assigns this broker a partition whose folder is a symlink out of the log
    dir. The scan reports the symlink, never follows it, and does not call the replica missing."""
    logdir = realworld.writable_copy(realworld.require() / "kraft-4.2-nomanazeem", tmp_path / "kafka-logs")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(logdir / "__consumer_offsets-15", outside / "__consumer_offsets-15")
    os.symlink(outside / "__consumer_offsets-15", logdir / "__consumer_offsets-15")
    w = World(tmp_path, logdir, outside)
    proc = run(w, "scan", str(logdir), "--json", "-j", "1")
    found = _findings(proc.stdout)
    assert found.get(w.p("__consumer_offsets-15")) == {"SYMLINK_IN_LOG_DIR"}, found

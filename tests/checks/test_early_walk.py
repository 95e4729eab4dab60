"""Issue 35: `logdoctor scan --deep` of a few big partitions starts walking their .log files before the
scan's modules load (checks.early_walk, checks.walk_ahead), and the scan takes those walks instead of
walking the files again. The scan must report exactly what it reports without them, never read early a
.log the broker's user cannot read, and walk again a file changed since (or being written when) it was
walked early. Real data (../shared/realworld) as found and damaged; the threshold of "big" is lowered so
that its small segments count."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

import realworld

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "repair"))

import damage

from logdoctor.checks import early_walk, walk_ahead
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.checks.state import early_mappings, file_records, partition, segment_walk
from logdoctor.formats import native
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.skipif(native.scan_v2 is None, reason="needs the C extension and crc32c")

NOW_MS = 1_800_000_000_000


@pytest.fixture
def small_is_big(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every .log counts as big (walked in chunks, walked early), on two walk threads, any number of
    partitions (the scans here run with jobs=1: every partition in this process)."""
    monkeypatch.setattr(early_mappings, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(file_records, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(early_walk, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(early_walk, "EARLY_PARTITIONS", 10**6)
    monkeypatch.setattr(walk_ahead, "cores", lambda: 2)
    monkeypatch.setattr(walk_ahead, "_early", None)


def _scan_json(log_dir: Path) -> str:
    rep = scan([log_dir], ScanOptions(depth=Depth.DEEP, now_ms=NOW_MS), jobs=1)
    out = rep.to_json()
    for d in out["log_dirs"]:
        d.pop("disk")  # the file system's free bytes move with everything else on the machine
    return json.dumps(out, indent=1, sort_keys=True)


def _walked(path: Path) -> walk_ahead.RawWalk | None:
    """The early walk of ``path`` once it is done (None: not taken), left to be taken."""
    assert walk_ahead._early is not None
    walk = walk_ahead._early.walks[str(path)]
    with walk.done:
        return walk.got[1] if walk.got is not None else None


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths whose early walk the scan takes, recorded."""
    taken: list[str] = []
    take = file_records._take_early

    def recorded(path: str, *args: bool) -> segment_walk.WalkResult | None:
        got = take(path, *args)
        if got is not None:
            taken.append(path)
        return got

    monkeypatch.setattr(partition, "_take_early", recorded)
    return taken


@pytest.fixture(scope="module")
def settled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The log dirs of the tests below, made at once and then left alone for walk_ahead.SETTLED_NS (only files
    that have not changed for that long are walked early): one wait for the module instead of one a test. Each
    test has a dir of its own (they damage them)."""
    root = tmp_path_factory.mktemp("early")
    made = {"damaged-v2": _damaged_v2_copy(root / "damaged")} if realworld.available() else {}
    for name, records in (("changed", 400), ("being-written", 200), ("command-line", 300)):
        topics = [TopicSpec("t", records_per_partition=records, value_size=100, segment_bytes=16 * 1024)]
        made[name], _ = generate_log_dir(root / name / "fleet", topics)
    time.sleep(walk_ahead.SETTLED_NS / 1e9 + 0.05)
    return made


def _logs(log_dir: Path) -> list[Path]:
    return sorted(p for p in log_dir.glob("*/*.log") if p.stat().st_size)


def test_early_walks_are_taken_and_the_scan_reports_what_it_reports_without_them(
    settled: dict[str, Path], monkeypatch: pytest.MonkeyPatch, small_is_big: None
) -> None:
    """A real log dir of v2 batches (the fast lane's), its biggest partition split into four segments,
    one with a flipped byte (a CRC mismatch) and one with a torn tail: the same JSON with and without
    early walks; the early walks of the whole segments are taken, the damaged ones walked again by the
    scan (which words them)."""
    realworld.require()  # skips with the realworld reason where ../shared is absent
    log_dir = settled["damaged-v2"]
    without = _scan_json(log_dir)
    assert "LOG_CORRUPT" in {f["code"] for f in json.loads(without)["findings"]}
    taken = _taken(monkeypatch)
    early_walk.start([str(log_dir)])
    assert _scan_json(log_dir) == without
    logs = _logs(log_dir)
    damaged = {str(p) for p in logs if _damaged(p, without)}
    assert len(damaged) == 2
    assert sorted(taken) == sorted({str(p) for p in logs} - damaged)


def _damaged_v2_copy(where: Path) -> Path:
    root = realworld.require()  # skips with the realworld reason where ../shared is absent
    src = next(root / n for n in realworld.log_dir_names() if n == "zk-3.0-tuyen-nnt-b0")
    log_dir = damage.copy_log_dir(src, where / "logs")
    part = damage.biggest_partition(log_dir, min_batches=16)
    assert part is not None
    damage.split_flip_and_cut(part)
    return log_dir


def _damaged(log: Path, scan_json: str) -> bool:
    findings = json.loads(scan_json)["findings"]
    return any(f["path"] == str(log) and f["code"] == "LOG_CORRUPT" for f in findings)


@pytest.mark.parametrize("src", realworld.params(realworld.log_dirs()))
def test_deep_scan_of_real_log_dirs_with_early_walks(
    monkeypatch: pytest.MonkeyPatch, small_is_big: None, src: Path
) -> None:
    """Every real log dir, every .log walked early: the same JSON."""
    without = _scan_json(src)
    taken = _taken(monkeypatch)
    early_walk.start([str(src)])
    assert _scan_json(src) == without
    assert taken or not walk_ahead._early or not walk_ahead._early.walks  # every walk started early was taken


def test_a_log_changed_after_its_early_walk_is_walked_again(
    settled: dict[str, Path], monkeypatch: pytest.MonkeyPatch, small_is_big: None
) -> None:
    """A byte flipped in a batch after the early walk, the size and mtime put back (only the ctime
    tells): the scan walks the file again and finds the CRC mismatch."""
    log_dir = settled["changed"]
    logs = _logs(log_dir)
    assert len(logs) >= 3
    taken = _taken(monkeypatch)
    early_walk.start([str(log_dir)])
    assert all(_walked(p) is not None for p in logs)  # walked early, all of them
    victim = logs[1]
    st = victim.stat()
    data = bytearray(victim.read_bytes())
    data[200] ^= 0x01
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    got = _scan_json(log_dir)
    assert sorted(taken) == sorted(str(p) for p in logs if p != victim)
    assert _damaged(victim, got)
    assert got == _scan_json(log_dir)  # and without early walks: the same


def test_a_log_being_written_is_not_walked_early(
    settled: dict[str, Path], monkeypatch: pytest.MonkeyPatch, small_is_big: None
) -> None:
    """A file changed less than SETTLED_NS before its early walk could still change within the same tick
    of its ctime: it is left to the scan."""
    log_dir = settled["being-written"]
    logs = _logs(log_dir)
    os.utime(logs[-1])  # its ctime is now
    taken = _taken(monkeypatch)
    early_walk.start([str(log_dir)])
    assert _walked(logs[-1]) is None
    _scan_json(log_dir)
    assert str(logs[-1]) not in taken and len(taken) == len(logs) - 1


def test_which_logs_are_walked_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only log dirs, at most EARLY_PARTITIONS partition folders in all, big regular .log files, and only
    those the broker's user (the log dir's owner) can read."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the log dir belongs to a broker user")
    monkeypatch.setattr(early_walk, "MMAP_THRESHOLD", 1000)
    topics = [TopicSpec("t", partitions=4, records_per_partition=60, value_size=100, segment_bytes=4096)]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    damage.give_to_broker(log_dir, 4242)
    logs = [p for p in _logs(log_dir) if p.stat().st_size >= 1000]
    assert len(logs) > 8
    assert early_walk.early_logs([str(log_dir)]) == [str(p) for p in logs]
    hidden = logs[2]
    os.chown(hidden, 0, 0)
    os.chmod(hidden, 0o600)  # root reads it; the broker's user (4242) cannot
    (logs[3].parent / "00000000000000999999.log.deleted").write_bytes(b"x" * 2000)
    os.symlink(logs[0], logs[0].parent / "00000000000001000000.log")
    expected = [str(p) for p in logs if p != hidden]
    assert early_walk.early_logs([str(log_dir)]) == expected
    assert early_walk.early_logs([str(logs[0].parent)]) == []  # a partition folder: the scan refuses it
    first = [p for p in logs if p != hidden][:4]  # EARLY_BYTES (8 GiB) at most, the first ones
    monkeypatch.setattr(early_walk, "EARLY_BYTES", sum(p.stat().st_size for p in first))
    assert early_walk.early_logs([str(log_dir)]) == [str(p) for p in first]
    monkeypatch.undo()
    monkeypatch.setattr(early_walk, "MMAP_THRESHOLD", 1000)
    (log_dir / "t-4").mkdir()
    assert early_walk.early_logs([str(log_dir)]) == []  # five partitions: some may go to the scan's pool
    started: list[list[str]] = []
    monkeypatch.setattr(walk_ahead, "start", lambda paths: started.append(paths) or len(paths))
    assert early_walk.start([str(log_dir)]) == 0
    assert started == [[]]


def test_the_command_line_walks_early_and_puts_the_switch_interval_back(
    settled: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    small_is_big: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`logdoctor scan --deep --json LOGDIR` (cli.scan_fast): the early walks are started and taken, the
    interpreter's switch interval is lowered only while the scan's modules load, and the JSON is the
    scan's without them."""
    from logdoctor.cli import scan_fast

    log_dir = settled["command-line"]
    intervals: list[float] = []
    set_interval = sys.setswitchinterval
    monkeypatch.setattr(sys, "setswitchinterval", lambda s: intervals.append(s) or set_interval(s))
    before = sys.getswitchinterval()
    taken = _taken(monkeypatch)
    assert scan_fast.run_fast(["--deep", "--json", str(log_dir)]) == 0
    assert intervals == [scan_fast.WALKING_SWITCH_INTERVAL_S, before] and sys.getswitchinterval() == before
    assert sorted(taken) == [str(p) for p in _logs(log_dir)]
    got = json.loads(capsys.readouterr().out)
    assert got["findings"] == json.loads(_scan_json(log_dir))["findings"]

"""Issue 35: `logdoctor repair LOGDIR...` maps its big .log files on a thread while its modules load
(early_mappings.map_early, chosen by checks.early_walk.early_logs, populated by _speedups.populate_read
without the GIL), and its planning scan's kept mappings (kept_mappings.mappings_kept) adopt them instead of
mapping the files again. The repair must do exactly what it does without them (real log dirs, and a generated
one of big segments), adopt a mapping only for the same inode at the same size, never map early a file the
broker's user cannot read, and leave nothing of one run to the next in the same process."""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from state_reads import read_through_state

import realworld

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "repair"))

import cli_in_process
import damage

from logdoctor.checks import early_walk
from logdoctor.checks.state import early_mappings, file_records, kept_mappings
from logdoctor.cli import registry
from logdoctor.cli.main import _without_the_framework
from logdoctor.formats import native
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.skipif(native.populate_read is None, reason="needs the C extension")

MIB = 1 << 20
_ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "120"}
_CREATED = re.compile(r'"created_ms": \d+|logdoctor-backup-\d{8}T\d{6}\.\d{9}Z-\d+')


@pytest.fixture
def maps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file of 1 byte or more is big (mapped, kept, mapped early), any number of partitions; the
    paths of every mapping made (early or not), in order."""
    made: list[str] = []
    real = mmap.mmap

    def counted(fd: int, *args, **kwargs):
        if fd >= 0:
            made.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd, *args, **kwargs)

    monkeypatch.setattr(early_mappings, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(file_records, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(early_mappings, "SETTLED_NS", 0)  # the files just written count as settled
    monkeypatch.setattr(kept_mappings, "SETTLED_NS", 0)
    monkeypatch.setattr(early_walk, "MMAP_THRESHOLD", 1)
    monkeypatch.setattr(early_walk, "EARLY_PARTITIONS", 10**6)
    monkeypatch.setattr(mmap, "mmap", counted)
    return made


@pytest.fixture
def adopted(monkeypatch: pytest.MonkeyPatch) -> list[mmap.mmap]:
    """The early mappings the kept mappings adopt, recorded."""
    got: list[mmap.mmap] = []
    adopt = early_mappings._adopt_early

    def recorded(key: tuple[int, int, int]) -> mmap.mmap | None:
        mm = adopt(key)
        if mm is not None:
            got.append(mm)
        return mm

    monkeypatch.setattr(kept_mappings, "_adopt_early", recorded)
    return got


def _early_thread_done() -> None:
    early = early_mappings._early_maps
    assert early is not None and early.thread is not None
    early.thread.join()


def _segments(tmp_path: Path, n: int = 3) -> list[Path]:
    files = [tmp_path / f"{i:020d}.log" for i in range(n)]
    for f in files:
        f.write_bytes(os.urandom(2 * MIB))
    return files


def test_early_mappings_are_adopted_once_and_closed_on_leaving(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap]
) -> None:
    files = _segments(tmp_path)
    assert early_mappings.map_early([str(f) for f in files]) == 3
    _early_thread_done()
    assert maps == [str(f) for f in files]  # mapped early, each once
    early = list(early_mappings._early_maps.maps.values())  # type: ignore[union-attr]
    with kept_mappings.mappings_kept():
        for f in files * 2:
            assert read_through_state(f) == (f.read_bytes(), True)
        assert maps == [str(f) for f in files]  # not mapped again: the early mappings are the kept ones
        assert kept_mappings._kept is not None and list(kept_mappings._kept.maps.values()) == early == adopted
        assert kept_mappings._kept.bytes == 3 * 2 * MIB  # counted against the kept limit
    assert early_mappings._early_maps is None and all(mm.closed for mm in early)


def test_a_file_replaced_cut_or_grown_since_its_early_mapping_is_mapped_anew(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap]
) -> None:
    replaced, cut, grown, same = _segments(tmp_path, 4)
    early_mappings.map_early([str(f) for f in (replaced, cut, grown, same)])
    _early_thread_done()
    early = list(early_mappings._early_maps.maps.values())  # type: ignore[union-attr]
    new = tmp_path / "new.tmp"
    new.write_bytes(os.urandom(2 * MIB))
    os.replace(new, replaced)  # the same size, another inode
    os.truncate(cut, MIB)
    with open(grown, "ab") as w:
        w.write(b"\x07" * 4096)
    with kept_mappings.mappings_kept():
        for f in (replaced, cut, grown, same):
            assert read_through_state(f) == (f.read_bytes(), True)
        assert len(adopted) == 1 and adopted[0] is early[3]
        assert maps[4:] == [str(replaced), str(cut), str(grown)]  # mapped anew
    assert all(mm.closed for mm in early)  # those not adopted too


def test_room_is_counted_and_what_does_not_fit_is_not_mapped_early(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap]
) -> None:
    files = _segments(tmp_path)
    early_mappings.map_early([str(f) for f in files], limit=5 * MIB)
    _early_thread_done()
    assert maps == [str(files[0]), str(files[1])]  # the third would pass the limit
    with kept_mappings.mappings_kept(limit=3 * MIB):
        for f in files:
            assert read_through_state(f)[0] == f.read_bytes()
        assert len(adopted) == 1  # the second has no room: read as outside (mapped, unmapped)
        assert maps[2:] == [str(files[1]), str(files[2])]
    assert early_mappings._early_maps is None


def _early_with_a_waiting_populate(
    f: Path, monkeypatch: pytest.MonkeyPatch, populating: Callable[[memoryview], object], result: bool
) -> threading.Event:
    """``f`` mapped early with a populate (early_mappings.POPULATE) that holds its buffer as the C one does
    and waits for the returned event before ``populating(buffer)`` and returning ``result``; returns once it
    waits."""
    holding, go = threading.Event(), threading.Event()

    def slow_populate(buffer: mmap.mmap | memoryview, advise: bool) -> bool:
        with memoryview(buffer) as view:
            holding.set()
            go.wait()
            populating(view)
        return result

    monkeypatch.setattr(early_mappings, "POPULATE", slow_populate)
    monkeypatch.setattr(file_records, "POPULATE", slow_populate)
    early_mappings.map_early([str(f)])
    holding.wait()
    return go


def test_a_populate_still_running_is_joined_before_its_mapping_is_closed(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The populate of an adopted mapping still holds its buffer when the kept mappings are unmapped (a
    slow populate, here one that waits): the thread is joined first, and every mapping closed. The thread
    runs niced (EARLY_NICE)."""
    (f,) = _segments(tmp_path, 1)
    seen: list[bytes] = []
    nice: list[int] = []

    def populating(view: memoryview) -> None:
        nice.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        seen.append(bytes(view[:64]))  # read after the wait, the buffer held all along

    go = _early_with_a_waiting_populate(f, monkeypatch, populating, True)
    with kept_mappings.mappings_kept():
        try:
            assert read_through_state(f) == (f.read_bytes(), True)
            assert len(adopted) == 1
        finally:  # let go a little after leaving starts (whatever failed: never left waiting)
            threading.Timer(0.05, go.set).start()
    assert adopted[0].closed and seen == [f.read_bytes()[:64]]
    # the thread at a lower priority than the importing one (this one's is left as it was)
    assert nice == [os.getpriority(os.PRIO_PROCESS, 0) + early_mappings.EARLY_NICE] or nice == [19]


@pytest.mark.parametrize("outer", [0, 5, 15])
def test_the_thread_is_niced_lower_than_the_process_never_higher(outer: int) -> None:
    """Issue 77 item 6: run under ``nice -n 15`` (as root: it could raise its priority), the early mappings'
    thread takes the process's nice value plus EARLY_NICE, capped at 19, never EARLY_NICE outright."""
    code = (
        "import os, threading\n"
        "from logdoctor.checks.state import early_mappings as em\n"
        "got = []\n"
        "def run():\n"
        "    em.lower_this_thread()\n"
        "    got.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))\n"
        "t = threading.Thread(target=run); t.start(); t.join()\n"
        "print(os.getpriority(os.PRIO_PROCESS, 0), got[0])\n"
    )
    out = subprocess.run(
        ["nice", "-n", str(outer), sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    process, thread = int(out[0]), int(out[1])
    assert process == min(19, os.getpriority(os.PRIO_PROCESS, 0) + outer)
    assert thread == min(19, process + early_mappings.EARLY_NICE)


def test_unmap_ahead_stops_the_populate_within_a_chunk(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a repair's apply (kept_mappings.unmap_ahead) the thread is stopped after the chunk it is
    populating, then joined, and the mapping unmapped."""
    (f,) = _segments(tmp_path, 1)
    monkeypatch.setattr(early_mappings, "EARLY_POPULATE_CHUNK", 4096)
    calls: list[int] = []
    go = _early_with_a_waiting_populate(f, monkeypatch, lambda view: calls.append(len(view)), False)
    with kept_mappings.mappings_kept():
        try:
            assert read_through_state(f) == (f.read_bytes(), True)
        finally:
            threading.Timer(0.05, go.set).start()
        kept_mappings.unmap_ahead()
        assert calls == [4096]  # the first of 512 chunks, then stopped
        assert kept_mappings._kept is not None
        for thread in kept_mappings._kept.behind:
            thread.join()
        assert adopted[0].closed


def test_another_process_and_a_later_run_never_see_them(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap]
) -> None:
    (f,) = _segments(tmp_path, 1)
    early_mappings.map_early([str(f)])
    _early_thread_done()
    pid = os.fork()
    if pid == 0:  # a forked pool worker: maps as without them
        try:
            with kept_mappings.mappings_kept():
                ok = read_through_state(f) == (f.read_bytes(), True) and not adopted
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    early = list(early_mappings._early_maps.maps.values())  # type: ignore[union-attr]
    early_mappings.drop_early_mappings()  # a run that ended before its planning scan
    assert early_mappings._early_maps is None and early[0].closed
    with kept_mappings.mappings_kept():
        assert read_through_state(f) == (f.read_bytes(), True)
    assert not adopted and maps == [str(f), str(f)]


def test_a_file_being_written_is_not_mapped_early(
    tmp_path: Path, maps: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed within SETTLED_NS (a broker's active segment being appended to: its size would
    differ by the scan, and a cut under the mapping would make a read of it SIGBUS) is left to the scan."""
    monkeypatch.setattr(early_mappings, "SETTLED_NS", 10**12)
    monkeypatch.setattr(kept_mappings, "SETTLED_NS", 10**12)
    assert early_mappings.map_early([str(f) for f in _segments(tmp_path)]) == 3
    _early_thread_done()
    assert maps == [] and not early_mappings._early_maps.maps  # type: ignore[union-attr]
    early_mappings.drop_early_mappings()


def test_without_the_c_populate_nothing_is_mapped_early(
    tmp_path: Path, maps: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(early_mappings, "POPULATE", None)
    monkeypatch.setattr(file_records, "POPULATE", None)
    assert early_mappings.map_early([str(f) for f in _segments(tmp_path)]) == 0
    assert early_mappings._early_maps is None and maps == []


# --- the command line: the same repair with and without early mappings ---------------------------------


def _repair(args: list[str], here: Path) -> tuple[int, str, str]:
    """``logdoctor repair ARGS`` through the fast path (cli.repair_fast), in this process: exit code,
    stdout, stderr (the copy's folder written as HERE, the plan's time of making left out)."""

    def command() -> None:  # as main() runs it (its errors: typer.Exit turned into the exit code)
        _without_the_framework(registry.find("repair"), args)

    code, out, err = cli_in_process.run(command, ["logdoctor", "repair", *args], _ENV)
    out, err = out.replace(str(here), "HERE"), err.replace(str(here), "HERE")
    return code, _CREATED.sub("TIME", out), err


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _with_and_without(
    src: Path, here: Path, flags: list[str], monkeypatch: pytest.MonkeyPatch, adopted: list[mmap.mmap]
) -> list[tuple[tuple[int, str, str], dict[str, bytes]]]:
    """A copy of ``src`` without its indexes repaired (``repair FLAGS --backup-dir``) without early
    mappings, then another copy at the same place with them: (output, files) of each."""
    got = []
    for early in (False, True):
        shutil.rmtree(here, ignore_errors=True)
        log_dir = realworld.writable_copy(src, here / "logs")
        for p in log_dir.rglob("*"):
            if p.suffix in (".index", ".timeindex"):
                p.unlink()
        with monkeypatch.context() as m:
            if not early:
                m.setattr(early_mappings, "POPULATE", None)
                m.setattr(file_records, "POPULATE", None)
            out = _repair([*flags, "--backup-dir", str(here / "backup"), str(log_dir)], here)
        got.append((out, _files(log_dir)))
        assert early_mappings._early_maps is None
        # with them, adopted (and only then), when there is a .log to map
        assert bool(adopted) == (early and any(p.stat().st_size for p in log_dir.rglob("*.log")))
    return got


@pytest.mark.realworld
@pytest.mark.slow  # 50 repairs --apply, every real log dir: make test; make test-fast runs the big segments'
@pytest.mark.parametrize("src", realworld.params(realworld.log_dirs()))
def test_repair_of_real_log_dirs_with_early_mappings(
    src: Path, tmp_path: Path, maps: list[str], adopted: list[mmap.mmap], monkeypatch: pytest.MonkeyPatch
) -> None:
    without, with_them = _with_and_without(src, tmp_path / "run", ["--apply", "--json"], monkeypatch, adopted)
    assert with_them == without


def test_repair_of_big_segments_with_early_mappings(
    tmp_path: Path, adopted: list[mmap.mmap], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segments from MMAP_THRESHOLD (64 MiB) as they are, the thresholds untouched: the same text output,
    exit code and files (the indexes rebuilt as the generator wrote them)."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=340_000, value_size=200, segment_bytes=72 * MIB)
    ]
    src, _ = generate_log_dir(tmp_path / "fleet", topics)
    monkeypatch.setattr(early_mappings, "SETTLED_NS", 0)  # the copies just written count as settled
    monkeypatch.setattr(kept_mappings, "SETTLED_NS", 0)
    logs = sorted((src / "t-0").glob("*.log"))
    assert len(logs) == 2 and logs[0].stat().st_size >= file_records.MMAP_THRESHOLD
    indexes = {str(p.relative_to(src)): p.read_bytes() for p in sorted(src.rglob("*index"))}
    without, with_them = _with_and_without(src, tmp_path / "run", ["--apply"], monkeypatch, adopted)
    assert with_them == without and without[0][0] == 0
    assert {k: v for k, v in with_them[1].items() if k.endswith("index")} == indexes
    assert len(adopted) == 1  # the small active segment is read, not mapped

    # `logdoctor repair` in a process of its own: the early mappings' thread starts before the repair's
    # modules (and the scan's) are imported
    time.sleep(max(0.0, 1.05 - (time.time() - logs[0].stat().st_ctime)))  # settled
    program = (
        "import json, sys, threading\n"
        "started = []\n"
        "real = threading.Thread.start\n"
        "def start(self):\n"
        "    names = ('logdoctor.cli.repair_run', 'logdoctor.checks.context')\n"
        "    loaded = [m for m in names if m in sys.modules]\n"
        "    started.append([self.name, loaded])\n"
        "    real(self)\n"
        "threading.Thread.start = start\n"
        "from logdoctor.cli.main import main\n"
        "sys.argv = ['logdoctor', 'repair', '--json', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(started), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", program, str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    started = json.loads(done.stderr.strip().splitlines()[-1])
    assert started[0] == ["logdoctor-map-early", []], started


def test_the_command_line_maps_early_and_puts_the_switch_interval_back(
    tmp_path: Path, maps: list[str], adopted: list[mmap.mmap], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`logdoctor repair LOGDIR` (cli.repair_fast): the early mappings are made and adopted, the
    interpreter's switch interval lowered only while the repair's modules load (as a `scan --deep`'s early
    walks lower it); a call with no log dir to map maps nothing early and leaves the interval alone."""
    from logdoctor.cli import scan_fast

    topics = [TopicSpec("t", records_per_partition=300, value_size=100, segment_bytes=16 * 1024)]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    logs = [p for p in log_dir.glob("*/*.log") if p.stat().st_size]
    for p in log_dir.glob("*/*index"):
        p.unlink()  # every segment read by the planning scan
    intervals: list[float] = []
    set_interval = sys.setswitchinterval
    monkeypatch.setattr(sys, "setswitchinterval", lambda s: intervals.append(s) or set_interval(s))
    before = sys.getswitchinterval()
    code, out, _ = _repair(["--json", str(log_dir)], tmp_path)
    assert code == 0 and '"applied": false' in out
    assert intervals == [scan_fast.WALKING_SWITCH_INTERVAL_S, before] and sys.getswitchinterval() == before
    assert len(logs) > 2 and len(adopted) == len(logs) and early_mappings._early_maps is None
    intervals.clear()
    made = len(maps)
    code, _, _ = _repair(["--json", str(tmp_path / "missing")], tmp_path)  # not a log dir: nothing mapped
    assert code == 66 and intervals == [before] and len(maps) == made and early_mappings._early_maps is None


@pytest.mark.needs_root
def test_a_log_the_broker_cannot_read_is_not_mapped_early(tmp_path: Path, maps: list[str]) -> None:
    topics = [TopicSpec("t", partitions=2, records_per_partition=60, value_size=100, segment_bytes=4096)]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    damage.give_to_broker(log_dir, 4242)
    logs = sorted(p for p in log_dir.glob("*/*.log") if p.stat().st_size)
    hidden = logs[1]
    os.chown(hidden, 0, 0)
    os.chmod(hidden, 0o600)  # root reads it; the broker's user (4242) cannot
    assert early_walk.start_mappings([str(log_dir)]) == len(logs) - 1
    _early_thread_done()
    assert sorted(maps) == sorted(str(p) for p in logs if p != hidden)
    early_mappings.drop_early_mappings()

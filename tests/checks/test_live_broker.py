"""Issue 58 items 1 and 4: read-only commands on a live log dir (a broker holding ``.lock`` and appending,
rolling and deleting segments: tests/live_broker.py) report no damage for a running broker's normal state,
find real damage in a closed segment, never write in the dir nor take its lock (traced with strace), and the
write commands still refuse it (75).

Every wait is for the writer's events, never for a time: the tests hold at any load."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from live_broker import ROLL_BYTES, LiveBroker
from logdoctor.checks.inventory import read_inventory_rows
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app

SOURCE = "kraft-4.2-nomanazeem"  # KRaft 4.2: the newest broker; demo-topic-0/1 are the topics it appends to
WRITTEN = ["demo-topic-0", "demo-topic-1"]
ROUNDS = 3  # commands run per test, a roll of the writer between two
# true on this data: demo-group committed offset 0 on demo-topic-0/1 and the writer's retention deleted it
# the census's too: its one-voter quorum (a combined-mode node), CONTROLLER_QUORUM_TOO_SMALL
TRUE_OF_THE_DATA = {"CONSUMER_OFFSET_OUT_OF_RANGE", "CONTROLLER_QUORUM_TOO_SMALL"}
STRACE = shutil.which("strace")


@pytest.fixture
def live_dir(tmp_path: Path) -> Path:
    return realworld.writable_copy(realworld.require() / SOURCE, tmp_path / "kafka-logs")


def _scan(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["scan", "--json", *args])
    assert result.exit_code in (0, 1, 2), result.output
    return result.exit_code, json.loads(result.stdout)


def _not_normal(report: dict) -> list[dict]:
    """The findings a running broker's normal state must not cause."""
    return [f for f in report["findings"] if f["severity"] != "info" and f["code"] not in TRUE_OF_THE_DATA]


@pytest.mark.parametrize("depth", ["--quick", "--default", "--deep"])
def test_scan_of_a_live_dir_reports_no_damage(live_dir: Path, depth: str) -> None:
    """Before: BROKER_RUNNING an error (exit 2), INDEX_CORRUPT on the active segment's indexes, RETENTION_RISK
    on a segment renamed .deleted meanwhile, ORPHAN_FILE on .deleted and .tmp files, CHECKPOINT_MISMATCH for
    a recovery point behind the log start, a crash (exit 70) on a segment deleted while read."""
    args = [] if depth == "--default" else [depth]
    with LiveBroker(live_dir, WRITTEN) as broker:
        broker.wait_for("delete")
        for _ in range(ROUNDS):
            code, report = _scan(*args, str(live_dir))
            assert _not_normal(report) == [], json.dumps(_not_normal(report), indent=1)
            assert code in (0, 1)
            running = [f for f in report["findings"] if f["code"] == "BROKER_RUNNING"]
            assert [f["severity"] for f in running] == ["info"]
            assert "read as of one moment" in running[0]["message"]
            assert "refuse it while the lock is held (exit 75)" in running[0]["message"]
            assert report["log_dirs"][0]["locked"] is True
            broker.wait_for("roll")  # the dir changed under the next round
        assert broker.counts["delete"] >= 1


def test_dump_and_inventory_of_a_live_dir(live_dir: Path, tmp_path: Path) -> None:
    """dump of the active segment (growing, its indexes preallocated: before, its .timeindex failed Kafka's
    sanity check, exit 2, as DumpLogSegments does on a live broker); inventory of the dir."""
    with LiveBroker(live_dir, WRITTEN, roll_bytes=4 << 20) as broker:  # no roll while dump runs
        broker.wait_for("append", 100)  # more than one index entry
        for i in range(ROUNDS):
            folder = live_dir / WRITTEN[0]
            active = sorted(folder.glob("*.log"))[-1]
            files = [str(active.with_suffix(s)) for s in (".log", ".index", ".timeindex")]
            r = CliRunner().invoke(app, ["dump", *files])
            assert r.exit_code == 0, r.output
            assert "the active segment of a running broker (.lock held): read as of its" in r.output
            assert "the active segment's index of a running broker (.lock held): preallocated" in r.output
            out = tmp_path / f"inv{i}.jsonl"
            r = CliRunner().invoke(app, ["inventory", str(live_dir), "--out", str(out)])
            assert r.exit_code in (0, 1), r.output
            rows = read_inventory_rows(str(out))
            assert next(r for r in rows if r["record"] == "broker")["broker_running"] is True
            errors = [r for r in rows if r["record"] == "finding" and r.get("severity") == "error"]
            assert errors == []
            broker.roll()  # the next round's active segment a new one (segment.ms's roll)


def test_damage_in_a_closed_segment_is_found_on_a_live_dir(live_dir: Path) -> None:
    """A broken index entry of a closed segment of demo-topic-1 while the broker appends to demo-topic-0."""
    with LiveBroker(live_dir, WRITTEN) as broker:
        broker.wait_for("roll", 4)  # closed segments in both partitions
    folder = live_dir / "demo-topic-1"
    closed = sorted(folder.glob("*.index"))[-2]  # the last closed segment (the writer keeps 3)
    assert closed.stat().st_size > 0
    with open(closed, "r+b") as f:
        f.write(struct.pack(">ii", 1, 1 << 30))  # entry 0: a position far past the log
    with LiveBroker(live_dir, WRITTEN[:1]) as broker:
        broker.wait_for("roll")
        code, report = _scan(str(live_dir))
    assert code == 2
    found = [f for f in report["findings"] if f["path"] == str(closed)]
    assert [f["code"] for f in found] == ["INDEX_CORRUPT"]
    assert found[0]["severity"] == "error"


def test_write_commands_refuse_a_live_dir(live_dir: Path) -> None:
    with LiveBroker(live_dir, WRITTEN) as broker:
        broker.wait_for("roll")
        r = CliRunner().invoke(app, ["repair", str(live_dir), "--apply"])
        assert r.exit_code == 75, r.output
        assert "refused" in r.output


# --- read only, proven: strace ------------------------------------------------------------------------------

# calls that create, change or remove a name (trace=%file); open flags that could write
_CHANGING = re.compile(
    r"\b(unlink|unlinkat|rename|renameat|renameat2|mkdir|mkdirat|rmdir|truncate|chmod|fchmodat|chown|"
    r"lchown|fchownat|link|linkat|symlink|symlinkat|utimensat|utimes|utime|mknod|mknodat|setxattr|"
    r"lsetxattr|removexattr|lremovexattr)\("
)
_WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
_LOCK_SET = re.compile(r"F_SETLK|F_SETLKW|F_OFD_SETLK|F_OFD_SETLKW|LOCK_EX|LOCK_SH")


def _traced(log_dir: Path, argv: list[str], trace: Path) -> list[str]:
    """Run ``logdoctor ARGV`` under strace (every process it starts too); the traced lines that touch
    ``log_dir``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [
            STRACE,
            "-f",
            "-y",
            "-qq",
            "-e",
            "trace=%file,write,fcntl,flock",
            "-o",
            str(trace),
            sys.executable,
            "-m",
            "logdoctor",
            *argv,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    root = str(log_dir)
    return [line for line in trace.read_text().splitlines() if root in line]


def _violations(lines: list[str]) -> list[str]:
    bad = []
    for line in lines:
        call = line.split(None, 1)[-1]  # after the pid (strace -f pads it)
        opened_to_write = re.match(r"(open|openat|creat)\(", call) and _WRITE_FLAGS.search(call)
        wrote = re.match(r"(write|pwrite64|writev)\(", call)
        locked = re.match(r"(fcntl|flock)\(", call) and _LOCK_SET.search(call)
        if _CHANGING.search(call) or opened_to_write or wrote or locked:
            bad.append(line)
    return bad


@pytest.mark.skipif(STRACE is None, reason="required: strace (apt-get install strace) to trace the reads")
@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "--deep", "--json", "{d}"],
        ["scan", "--quick", "--json", "{d}"],
        ["dump", "--json", "{active}", "{index}", "{timeindex}"],
        ["inventory", "{d}", "--out", "{out}"],
    ],
    ids=["scan-deep", "scan-quick", "dump", "inventory"],
)
def test_read_only_commands_never_write_nor_lock_a_live_dir(live_dir: Path, tmp_path: Path, argv) -> None:
    """Before: nothing proved it. strace -f of the whole run (its worker processes too) on a live dir: no name
    created, changed or removed, no file opened for writing, no byte written, no lock set in the log dir
    (the broker's lock is only asked about: F_OFD_GETLK)."""
    dump = argv[0] == "dump"  # of the active segment: it must not roll away before the traced run opens it
    with LiveBroker(live_dir, WRITTEN, roll_bytes=(4 << 20) if dump else ROLL_BYTES) as broker:
        broker.wait_for("append", 100) if dump else broker.wait_for("roll", 2)
        active = sorted((live_dir / WRITTEN[0]).glob("*.log"))[-1]
        values = {
            "d": str(live_dir),
            "active": str(active),
            "index": str(active.with_suffix(".index")),
            "timeindex": str(active.with_suffix(".timeindex")),
            "out": str(tmp_path / "inventory.jsonl"),
        }
        lines = _traced(live_dir, [a.format(**values) for a in argv], tmp_path / "trace")
    assert lines, "strace saw no read of the log dir"
    assert (
        any("F_OFD_GETLK" in line or "F_GETLK" in line for line in lines if ".lock" in line)
        or argv[0] == "dump"
    )
    assert _violations(lines) == []


@pytest.mark.skipif(STRACE is None, reason="required: strace (apt-get install strace) to trace the reads")
def test_the_trace_sees_a_write_and_a_lock(live_dir: Path, tmp_path: Path) -> None:
    """The check above is no tautology: the same trace of a run that takes the dir's lock as a repair does
    (hold_lock: .lock opened read-write, F_OFD_SETLK) on the same dir, stopped, is caught."""
    trace = tmp_path / "trace"
    code = "import sys; from logdoctor.logdir.lock import hold_lock\nwith hold_lock(sys.argv[1]): pass"
    strace = [STRACE, "-f", "-y", "-qq", "-e", "trace=%file,write,fcntl,flock", "-o", str(trace)]
    subprocess.run(
        [*strace, sys.executable, "-c", code, str(live_dir)],
        check=True,
        timeout=600,
    )
    bad = _violations([line for line in trace.read_text().splitlines() if str(live_dir) in line])
    assert any("F_OFD_SETLK" in line or "F_SETLK" in line for line in bad)
    assert any("O_RDWR" in line for line in bad)


def test_export_names_a_segment_removed_since_the_plan(live_dir: Path) -> None:
    """export plans its segments, then reads them: one renamed .deleted meanwhile is read there; one removed
    is named as removed by the broker, not as corrupt or unreadable."""
    from logdoctor.logdir.slices import discover_refs, parse_read_options, plan_slices
    from logdoctor.spark.sources.segment_summary import segment_summary
    from logdoctor.spark.sources.slice_reader import read_slice

    with LiveBroker(live_dir, WRITTEN[:1]) as broker:
        broker.wait_for("roll", 2)
    opts = parse_read_options({})
    planned = plan_slices(discover_refs([str(live_dir)]), opts)
    slices = [s for s in planned if WRITTEN[0] in s.segment.path]
    first, second = slices[0], slices[1]
    rows = sum(rb.num_rows for rb in read_slice(first, opts))
    os.rename(first.segment.path, first.segment.path + ".deleted")  # retention's rename
    assert sum(rb.num_rows for rb in read_slice(first, opts)) == rows > 0
    assert segment_summary(first.segment)["error"] is None
    os.remove(second.segment.path)  # and its removal file.delete.delay.ms later
    error = segment_summary(second.segment)["error"]
    assert error.endswith("removed since the plan (a running broker's retention or log cleaner)")


def test_a_partition_is_read_again_when_a_segment_is_removed_under_it(live_dir: Path, monkeypatch) -> None:
    """A segment removed between the listing and its read: the partition is read again as of a new moment;
    removed every time (a broker rolling and expiring within seconds): a note, never a crash (exit 70)."""
    from logdoctor.checks import partition

    real = partition._check_partition
    calls: list[str] = []

    def removed_once(task, listed, tiers):
        calls.append(task.name)
        if task.name == WRITTEN[0] and calls.count(task.name) == 1:
            raise FileNotFoundError(2, "No such file or directory", f"{task.path}/00000000000000000000.log")
        return real(task, listed, tiers)

    with LiveBroker(live_dir, []):
        monkeypatch.setattr(partition, "_check_partition", removed_once)
        code, report = _scan("--jobs", "1", str(live_dir))
        assert code == 0 and calls.count(WRITTEN[0]) == 2
        assert _not_normal(report) == []

        def removed_always(task, listed, tiers):
            if task.name == WRITTEN[0]:
                raise FileNotFoundError(2, "No such file or directory", f"{task.path}/0.log")
            return real(task, listed, tiers)

        monkeypatch.setattr(partition, "_check_partition", removed_always)
        code, report = _scan("--jobs", "1", str(live_dir))
    assert _not_normal(report) == [], _not_normal(report)
    assert code == 0
    (note,) = [f for f in report["findings"] if f["code"] == "PARTITION_CHANGED_WHILE_READ"]
    assert note["severity"] == "info" and note["path"] == str(live_dir / WRITTEN[0])


@pytest.mark.spark
def test_census_of_a_live_dir_reports_no_damage(live_dir: Path, tmp_path: Path, spark) -> None:
    """The census reads a live dir with the scan's checks on its executors: the broker's work in progress is
    no finding there either (before: BROKER_RUNNING an error, and what the scan reported)."""
    import pyarrow.parquet as pq

    from logdoctor.spark.census import run_census

    with LiveBroker(live_dir, WRITTEN) as broker:
        broker.wait_for("delete")
        result = run_census(spark, [str(live_dir)], tmp_path / "census")
        assert broker.wait_for("roll") > 1
    rows = pq.read_table(result.tables["findings"]).to_pylist()
    assert [r for r in rows if r["severity"] != "info" and r["code"] not in TRUE_OF_THE_DATA] == []
    assert [r["severity"] for r in rows if r["code"] == "BROKER_RUNNING"] == ["info"]


class _Writer:
    """The broker's appends to one partition made in this process (tests/live_broker.py's), on its own clock:
    ``append(part)`` begins one (``part`` of its batch written) and returns what ends it."""

    def __init__(self, folder: Path) -> None:
        from live_broker import begin_append, open_partition

        self.begin = begin_append
        self.p = open_partition(folder)
        self.now = 1_800_000_000_000

    def append(self, part: float = 1.0):
        self.now += 1000
        return self.begin(self.p, self.now, part)

    def appended(self, batches: int) -> None:
        for _ in range(batches):
            self.append()()


class _AppendsAfterTheListing(_Writer):
    """The broker of demo-topic-0 in this process, its appends placed between a read's listing of the
    partition and its read, without a sleep: ``torn()`` begins an append (half the batch written: the dir
    is listed with a batch torn at the active segment's end); the hook on checks.live.Moment.of (taken
    right after the listing, before any read) ends it and appends three batches more. ``seen``: per read,
    the log end as listed (the offset after the last whole batch then, as the writer knows it) and the
    active .log's size as listed."""

    def __init__(self, folder: Path, monkeypatch) -> None:
        from logdoctor.checks import live

        super().__init__(folder)
        self.pending: list = []
        self.seen: list[tuple[int, int]] = []
        real = live.Moment.of.__func__

        def of(cls, segments):
            moment = real(cls, segments)
            if self.pending and segments and segments[-1].log_file.startswith(f"{folder}/"):
                self.seen.append((self.p.next_offset, segments[-1].size))
                self.pending.pop()()  # the append under way ends
                self.appended(3)
            return moment

        monkeypatch.setattr(live.Moment, "of", classmethod(of))

    def torn(self) -> None:
        self.pending.append(self.append(0.5))


def test_a_live_partition_is_read_as_of_its_listing(live_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """scan at every depth and inventory report the log end as of the listing while the broker appends
    between the listing and the read: the offset after the last whole batch within the active segment's
    listed size, a batch torn at that edge no finding; the JSON gives the size listed. Before: the log end
    was where the read ended (the batches appended after the listing read too)."""
    folder = live_dir / WRITTEN[0]
    with LiveBroker(live_dir, []):  # the lock held; demo-topic-0 appended to in this process
        w = _AppendsAfterTheListing(folder, monkeypatch)
        w.appended(5)
        for depth in (["--quick"], [], ["--deep"]):
            w.torn()
            code, report = _scan(*depth, "--jobs", "1", str(live_dir))
            leo, listed = w.seen[-1]
            assert w.p.next_offset > leo  # the broker appended between the listing and the read
            assert _not_normal(report) == [], json.dumps(_not_normal(report), indent=1)
            assert code in (0, 1)
            (part,) = [p for p in report["partitions"] if p["topic"] == "demo-topic" and p["partition"] == 0]
            assert part["log_end_offset"] == leo, depth
            assert part["read_as_of_bytes"] == listed
            assert listed < os.path.getsize(sorted(folder.glob("*.log"))[-1])
        w.torn()
        out = tmp_path / "inv.jsonl"
        r = CliRunner().invoke(app, ["inventory", "--jobs", "1", str(live_dir), "--out", str(out)])
        assert r.exit_code in (0, 1), r.output
        leo, _ = w.seen[-1]
        assert w.p.next_offset > leo
        rows = read_inventory_rows(str(out))
        (row,) = [x for x in rows if x["record"] == "replica" and x["path"] == str(folder)]
        assert row["log_end_offset"] == leo
        assert [x for x in rows if x["record"] == "finding" and x.get("severity") != "info"] == []


def test_export_reads_what_it_planned_of_a_live_partition(live_dir: Path) -> None:
    """export's Spark task reads a segment up to its size in the read plan: batches the broker appended
    after the plan are not exported (before: read to the file's end at the task's time), and a batch it
    was writing when the plan listed the size (torn at the plan's edge) is not yet written, no error."""
    from logdoctor.logdir.slices import discover_refs, parse_read_options, plan_slices
    from logdoctor.spark.sources.segment_summary import segment_summary
    from logdoctor.spark.sources.slice_reader import read_slice

    folder = live_dir / WRITTEN[0]
    with LiveBroker(live_dir, []):
        w = _Writer(folder)
        w.appended(5)
        under_way = w.append(0.5)
        opts = parse_read_options({})
        refs = discover_refs([str(live_dir)])
        planned = [s for s in plan_slices(refs, opts) if str(folder) in s.segment.path]
        at_plan = w.p.next_offset
        under_way()
        w.appended(3)
        active = planned[-1]
        offsets = [o for rb in read_slice(active, opts) for o in rb.column("offset").to_pylist()]
        assert offsets[-1] == at_plan - 1 < w.p.next_offset - 1
        summary = segment_summary(active.segment)
        assert summary["error"] is None
        assert summary["size_bytes"] == active.segment.size < os.path.getsize(active.segment.path)


def test_dump_of_a_live_active_segment_opened_mid_write(live_dir: Path) -> None:
    """dump of the active segment opened while the broker writes a batch (half of it in the file): the batch
    torn at the moment's edge is not yet written, a note, not invalid bytes (before: LOG_INVALID_BYTES,
    exit 2); the batches before it are dumped, the log end is theirs."""
    folder = live_dir / WRITTEN[0]
    with LiveBroker(live_dir, []):
        w = _Writer(folder)
        w.appended(3)
        under_way = w.append(0.5)
        active = folder / f"{w.p.base:020d}.log"
        r = CliRunner().invoke(app, ["dump", "--json", str(active)])
        under_way()
    assert r.exit_code == 0, r.output
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    (summary,) = [e for e in events if e.get("type") == "summary"]
    assert summary["last_offset"] == w.p.next_offset - 20 - 1  # the batch under way (20 records) not dumped
    assert summary["invalid_bytes"] == 0
    assert "was being written when the file was opened" in r.output


@pytest.mark.parametrize("depth", ["--quick", "--default", "--deep"])
def test_a_segment_rolled_before_its_first_append_has_no_indexes_yet(live_dir: Path, depth: str) -> None:
    """A running broker opens a new segment's .index and .timeindex at its first append
    (K:storage/.../log/LazyIndex.java: the file is made at the first get(); LogSegment.append), so a read
    between a roll and that append lists the .log alone: its normal state, no INDEX_MISSING (a scan that
    fell in that window failed test_scan_of_a_live_dir_reports_no_damage once, at load). The same folder
    without a running broker is still INDEX_MISSING."""
    from live_broker import _roll, open_partition

    p = open_partition(live_dir / WRITTEN[0])
    _roll(p)  # the old active segment trimmed, a new one at the log end
    for suffix in (".index", ".timeindex"):
        p.path(p.base, suffix).unlink()  # as between the roll and the first append
    args = [] if depth == "--default" else [depth]
    with LiveBroker(live_dir, []):
        _, report = _scan(*args, str(live_dir))
    assert _not_normal(report) == [], _not_normal(report)
    _, stopped = _scan(*args, str(live_dir))
    missing = [f for f in stopped["findings"] if f["code"] == "INDEX_MISSING"]
    assert [f["path"] for f in missing] == [str(p.path(p.base, ".log"))]

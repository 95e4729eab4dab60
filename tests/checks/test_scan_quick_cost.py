"""What a scan of many partitions no longer does per partition (issue 26: ``scan --quick`` of 50,000
partitions): no :class:`pathlib.Path` made for each partition folder, no line object for each checkpoint
line, no name parse of each partition folder to recognize the log dir; with the same report."""

from __future__ import annotations

import json
import pathlib
import time
from pathlib import Path

import pytest

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.formats import checkpoint as cp
from logdoctor.logdir import recognize as rec
from logdoctor.logdir.names import RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT

PARTITIONS = 300
NOW_MS = 1_700_000_000_000


def _log_dir(root: Path, stale: int = 0) -> Path:
    """``PARTITIONS`` empty partition folders, checkpoints as a broker writes them naming each of them
    (plus ``stale`` entries of partitions that have no folder)."""
    (root / "meta.properties").write_text("version=0\nbroker.id=0\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\n")
    (root / ".kafka_cleanshutdown").write_text("")
    entries = []
    for i in range(PARTITIONS):
        (root / f"bench.t{i // 100}-{i % 100}").mkdir()
        entries.append((f"bench.t{i // 100}", i % 100, 0))
    entries += [("gone", i, 5) for i in range(stale)]
    data = cp.write_offset_checkpoint(cp.new_offset_checkpoint(entries))
    for name in (RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
        (root / name).write_bytes(data)
    return root


def _report(d: Path) -> dict:
    rep = scan([d], ScanOptions(depth=Depth.QUICK, now_ms=NOW_MS), jobs=1)
    return _comparable(rep.to_json())


def _comparable(out: dict) -> dict:
    out.pop("elapsed_s", None)
    for ld in out["log_dirs"]:
        ld.pop("disk", None)  # free space changes between two runs (other processes write)
    return out


def test_no_path_object_is_made_per_partition_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _log_dir(tmp_path)
    made = 0
    real_new = pathlib.Path.__new__

    def counting_new(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal made
        made += 1
        return real_new(cls, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "__new__", counting_new)
    rep = scan([d], ScanOptions(depth=Depth.QUICK, now_ms=NOW_MS), jobs=1)
    assert len(rep.partitions) == PARTITIONS
    assert made < PARTITIONS // 10, made  # before: two per partition (the root listing, the check)


def test_checkpoints_as_written_are_read_without_a_line_object_per_line_and_report_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast reading (formats.checkpoint) against the general one, on a scan whose checkpoints name
    partitions without a folder (findings with the byte position of each stale line)."""
    d = _log_dir(tmp_path, stale=3)
    lines = 0
    real_split = cp.split_lines

    def counting_split(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal lines
        out = real_split(*args, **kwargs)
        lines += len(out)
        return out

    monkeypatch.setattr(cp, "split_lines", counting_split)
    fast = _report(d)
    assert lines == 0
    stale = [f for f in fast["findings"] if f["path"].endswith(RECOVERY_POINT_CHECKPOINT)]
    assert stale, fast["findings"]
    monkeypatch.setattr(cp, "_as_written", lambda data: None)  # the general reading, line by line
    monkeypatch.setattr(cp, "line_positions", lambda data: [ln.position for ln in real_split(data)])
    general = _report(d)
    assert lines > 2 * PARTITIONS  # it did read line by line
    assert json.dumps(fast, sort_keys=True) == json.dumps(general, sort_keys=True)


def test_recognizing_a_log_dir_parses_no_partition_folder_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = _log_dir(tmp_path)
    (d / "remote-log-index-cache").mkdir()
    classified: list[str] = []
    real = rec.classify_root_entry

    def counting(name: str, is_dir: bool):  # type: ignore[no-untyped-def]
        classified.append(name)
        return real(name, is_dir)

    monkeypatch.setattr(rec, "classify_root_entry", counting)
    r = rec.recognize(d)
    assert r.is_log_dir and r.evidence == "has meta.properties"
    assert all("bench.t" not in n for n in classified), classified
    # the index cache folder is still a (weak) marker, found without classifying every folder
    (d / "meta.properties").unlink()
    (d / RECOVERY_POINT_CHECKPOINT).unlink()
    (d / REPLICATION_OFFSET_CHECKPOINT).unlink()
    for p in d.iterdir():
        if p.name.startswith("bench.t"):
            p.rmdir()
    assert rec.recognize(d).evidence == "has .kafka_cleanshutdown, remote-log-index-cache and nothing else"


def test_cheap_partitions_are_checked_without_a_process_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each partition sent to a worker costs the parent more than an empty partition's check: with jobs=2
    the scan of empty partitions starts no worker (it did, and was slower than one process)."""
    from logdoctor.checks import scanner

    d = _log_dir(tmp_path)

    def no_pool(*a: object, **kw: object) -> None:
        raise AssertionError("a process pool was started for partitions that cost microseconds each")

    monkeypatch.setattr(scanner, "ProcessPoolExecutor", no_pool)
    rep = scan([d], ScanOptions(depth=Depth.QUICK, now_ms=NOW_MS), jobs=2)
    assert len(rep.partitions) == PARTITIONS


def test_a_slow_first_check_and_one_more_start_no_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's first check pays for lazy imports (~100 us in a fresh process, as much as the limit): with
    one more slow check among the first four (a garbage collection in a long-lived process: seen in
    `make test` at load 15) the scan of empty partitions started a pool; the first check is now left out
    of the decision, and the median of the other three resists one slow check. The checks' CPU times are
    the scanner's clock's, set here (30 us each, 2 ms for the first and the third): measured ones on a
    loaded machine spiked past the limit now and then, a second slow check the median cannot resist."""
    from logdoctor.checks import scanner

    d = _log_dir(tmp_path)
    calls = []
    real_check = scanner.check_partition

    class Clock:
        now = 0.0

        def __getattr__(self, name: str) -> object:
            return getattr(time, name)

        def thread_time(self) -> float:
            return self.now

    clock = Clock()
    monkeypatch.setattr(scanner, "time", clock)

    def first_and_third_slow(task, *listed):  # type: ignore[no-untyped-def]
        calls.append(1)
        clock.now += 0.002 if len(calls) in (1, 3) else 30e-6
        return real_check(task, *listed)

    def no_pool(*a: object, **kw: object) -> None:
        raise AssertionError("a process pool was started for partitions that cost microseconds each")

    monkeypatch.setattr(scanner, "ProcessPoolExecutor", no_pool)
    monkeypatch.setattr(scanner, "check_partition", first_and_third_slow)
    rep = scan([d], ScanOptions(depth=Depth.QUICK, now_ms=NOW_MS), jobs=2)
    assert len(rep.partitions) == PARTITIONS == len(calls)


def _costly_check(task, *listed):  # type: ignore[no-untyped-def]
    """check_partition with ~2 ms of CPU more (a module-level function: the pool pickles it by name); the
    folder's listing and the tiering decisions passed on (the checks made in the scan's process)."""
    import time

    from logdoctor.checks.partition import check_partition

    end = time.thread_time() + 0.002
    while time.thread_time() < end:
        pass
    return check_partition(task, *listed)


def test_costly_partitions_still_go_to_the_process_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from logdoctor.checks import scanner

    d = _log_dir(tmp_path)
    expected = _report(d)
    pools = []
    real_pool = scanner.ProcessPoolExecutor

    def counting_pool(*a: object, **kw: object):  # type: ignore[no-untyped-def]
        pools.append(1)
        return real_pool(*a, **kw)

    monkeypatch.setattr(scanner, "ProcessPoolExecutor", counting_pool)
    monkeypatch.setattr(scanner, "check_partition", _costly_check)
    rep = _comparable(scan([d], ScanOptions(depth=Depth.QUICK, now_ms=NOW_MS), jobs=2).to_json())
    assert pools == [1]
    assert json.dumps(rep, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_inventory_lists_each_log_dir_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inventory's leader epochs come from the folders the scan listed: the root of 50,000 partitions
    was listed a second time (a Partition and a Path per folder) only to find them."""
    from logdoctor.checks.inventory import build_inventory
    from logdoctor.logdir import model

    d = _log_dir(tmp_path)
    (d / "bench.t0-5" / "leader-epoch-checkpoint").write_bytes(b"0\n2\n0 0\n3 52\n")
    (d / "bench.t1-7" / "leader-epoch-checkpoint").write_bytes(b"0\n1\n4 x\n")  # a malformed line
    listed = 0
    real_init = model.Partition.__init__

    def counting_init(self: model.Partition, *a: object, **kw: object) -> None:
        nonlocal listed
        real_init(self, *a, **kw)  # type: ignore[arg-type]
        listed += a[0] is not None  # made by a LogDir's listing of its root

    monkeypatch.setattr(model.Partition, "__init__", counting_init)
    inv = build_inventory([str(d)], Depth.QUICK, now_ms=NOW_MS, jobs=1)
    # none at all since issue 49: the scan makes its tasks from LogDir.partition_folders, no Partition each
    assert listed == 0
    epochs = {(r["topic"], r["partition"]): r["leader_epochs"] for r in inv.rows if r["record"] == "replica"}
    assert epochs[("bench.t0", 5)] == [{"epoch": 0, "start_offset": 0}, {"epoch": 3, "start_offset": 52}]
    assert epochs[("bench.t1", 7)] == []  # no readable entry (the scan reports the file)
    assert epochs[("bench.t2", 0)] == []
    assert len(epochs) == PARTITIONS


@pytest.mark.realworld
@pytest.mark.parametrize(
    ("name", "with_epochs"),
    [("zk-2.8-seanorth", True), ("kraft-3.9-duongnvt2110", True), ("zk-corrupt-znsio", False)],
)
def test_inventory_leader_epochs_of_real_log_dirs_are_the_files(
    realworld_dir: Path, name: str, with_epochs: bool
) -> None:
    """Each replica's leader epochs against its leader-epoch-checkpoint as Kafka wrote it (read here with
    str.split: version, count, then "epoch start_offset" lines); [] where there is none."""
    from logdoctor.checks.inventory import build_inventory
    from logdoctor.logdir.model import LogDir

    d = realworld_dir / name
    inv = build_inventory([str(d)], Depth.QUICK, now_ms=NOW_MS, jobs=1)
    replicas = [r for r in inv.rows if r["record"] == "replica"]
    assert replicas
    seen = 0
    for r in replicas:
        lec = Path(r["path"]) / "leader-epoch-checkpoint"
        expected: list = []
        if lec.is_file():
            lines = lec.read_text(errors="replace").split("\n")
            try:
                expected = [tuple(map(int, line.split())) for line in lines[2 : 2 + int(lines[1])]]
                seen += bool(expected)
            except (ValueError, IndexError):  # a damaged file: what the log dir model reads of it
                expected = LogDir(d).partition(r["topic"], r["partition"]).leader_epochs
        assert [(e["epoch"], e["start_offset"]) for e in r["leader_epochs"]] == expected, r["path"]
    assert bool(seen) is with_epochs

"""`scan` reports a nearly full disk (LOG_DIR_NEARLY_FULL; before, only the census did) and its table shows
each log dir's use as `df` prints it. The disk is a real small file system (an 8 MiB tmpfs, root only) or,
for the move-partition advice across two file systems, the explicit in-process seam of logdoctor.logdir.disk.
Every printed fix command is run exactly as printed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tmpfs
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.logdir.disk import SimulatedDisk
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet, generate_log_dir

SIZE = 8 * 2**20
runner = CliRunner()


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs.mounted(tmp_path / "disk", SIZE) as mnt:
        yield mnt


def _df_pcent(path: Path) -> str:
    """What coreutils' df prints in its Use% column (an implementation this project did not write)."""
    out = subprocess.run(["df", "--output=pcent", str(path)], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[1].strip()


def _fill_to(mnt: Path, fraction: float, name: str) -> None:
    st = os.statvfs(mnt)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    (mnt / name).write_bytes(b"\0" * max(0, int(fraction * SIZE) - used))


def _run_printed(command: str) -> subprocess.CompletedProcess[str]:
    """Run a printed `logdoctor ...` command exactly as printed (the installed entry point)."""
    argv = shlex.split(command)
    assert argv[0] == "logdoctor", command
    exe = Path(os.environ.get("VIRTUAL_ENV", "")) / "bin" / "logdoctor"
    if not exe.exists():
        exe = Path(shutil.which("logdoctor") or Path(sys.executable).parent / "logdoctor")
    return subprocess.run([str(exe), *argv[1:]], capture_output=True, text=True, timeout=300)


@pytest.mark.needs_root
def test_scan_reports_a_nearly_full_tmpfs_and_shows_each_dirs_use(small_disk: Path, tmp_path: Path) -> None:
    built, _ = generate_log_dir(
        tmp_path / "gen", [TopicSpec("orders", partitions=2, records_per_partition=200)]
    )
    log_dir = small_disk / built.name
    shutil.copytree(built, log_dir)
    clean = runner.invoke(app, ["scan", str(log_dir), "--json"])
    assert "LOG_DIR_NEARLY_FULL" not in {f["code"] for f in json.loads(clean.stdout)["findings"]}
    _fill_to(small_disk, 0.93, "ballast")  # between the warning (85%) and the error (95%)
    want = _df_pcent(small_disk)
    for depth in ([], ["--quick"], ["--deep"]):
        r = runner.invoke(app, ["scan", str(log_dir), "--json", *depth])
        doc = json.loads(r.stdout)
        full = [f for f in doc["findings"] if f["code"] == "LOG_DIR_NEARLY_FULL"]
        assert len(full) == 1 and full[0]["severity"] == "warning", (depth, full)
        assert f" is {want} full " in full[0]["message"]
        assert doc["log_dirs"][0]["disk"]["used_percent"] == int(want.rstrip("%"))
        assert doc["log_dirs"][0]["disk"]["total_bytes"] == SIZE
        assert r.exit_code == 1, r.output
    text = runner.invoke(app, ["scan", str(log_dir)], env={"COLUMNS": "250"})
    assert f"{want} of 8.0 MiB" in text.stdout, text.stdout
    assert "LOG_DIR_NEARLY_FULL" in text.stdout
    # one log dir: the advice is retention; the command it names runs as printed
    fix = json.loads(runner.invoke(app, ["scan", str(log_dir), "--json"]).stdout)["findings"]
    command = next(f["fix"] for f in fix if f["code"] == "LOG_DIR_NEARLY_FULL").split("`")[1]
    assert command == f"logdoctor retention {log_dir}"
    done = _run_printed(command)
    assert done.returncode in (0, 1, 2), done.stderr
    # past 95% it is an error
    _fill_to(small_disk, 0.99, "more")
    doc = json.loads(runner.invoke(app, ["scan", str(log_dir), "--json"]).stdout)
    assert [f["severity"] for f in doc["findings"] if f["code"] == "LOG_DIR_NEARLY_FULL"] == ["error"]


def _two_dir_broker(tmp_path: Path) -> tuple[str, str]:
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=4, records_per_partition=50, segment_bytes=4000)],
            brokers=(BrokerSpec(0, log_dirs=2),),
        ),
    )
    full_dir, other = (str(d) for d in fleet.log_dirs[0])
    return full_dir, other


@pytest.fixture
def other_file_system(tmp_path: Path):
    """A folder on another real file system than tmp_path (/dev/shm, a tmpfs), removed afterwards."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system (/dev/shm) here")
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="logdoctor-test-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_the_fix_moves_the_biggest_partition_to_a_dir_on_another_disk(tmp_path: Path, other_file_system):
    """Issue 32 item 9: the move is printed only to a log dir on another file system with room for the
    partition; it runs as printed (dry run: says it fits; --apply: the partition leaves the full one)."""
    full_dir, other = _two_dir_broker(tmp_path)
    moved = other_file_system / "kafka-logs-1"
    shutil.move(other, moved)
    other = str(moved)
    disks = {full_dir: SimulatedDisk(10**12, 3 * 10**10)}  # the full one simulated, the other real
    report = scan([full_dir, other], ScanOptions(Depth.DEFAULT, simulated_disks=disks), jobs=1)
    full = [f for f in report.findings if f.code == "LOG_DIR_NEARLY_FULL"]
    assert [f.path for f in full] == [full_dir] and full[0].severity.label == "error"  # 97%
    sizes = {p.path: p.bytes for p in report.partitions if p.log_dir == full_dir}
    biggest = Path(max(sizes, key=lambda k: sizes[k])).name
    command = full[0].fix.split("`")[1]
    assert command == f"logdoctor move-partition {biggest} --from {full_dir} --to {other}"
    assert "on another file system" in full[0].fix
    before = sorted(p.name for p in Path(full_dir).iterdir())
    done = _run_printed(command)  # the dry run it says it is, saying whether it fits
    assert done.returncode == 0, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert "Dry run" in said and "fits: the space --apply needs is free" in said
    folder = sum(f.stat().st_size for f in (Path(full_dir) / biggest).rglob("*") if f.is_file())
    assert f"frees {folder:,} bytes on {full_dir}'s file system" in said
    assert sorted(p.name for p in Path(full_dir).iterdir()) == before
    applied = _run_printed(command + " --apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert not (Path(full_dir) / biggest).exists() and (Path(other) / biggest).is_dir()


def test_no_move_within_one_file_system(tmp_path: Path) -> None:
    """Both dirs on one real file system (the demo's case, its disks simulated): a move frees nothing
    there, so the fix is retention or another disk, not move-partition."""
    full_dir, other = _two_dir_broker(tmp_path)
    disks = {full_dir: SimulatedDisk(10**12, 3 * 10**10), other: SimulatedDisk(10**12, 6 * 10**11)}
    report = scan([full_dir, other], ScanOptions(Depth.DEFAULT, simulated_disks=disks), jobs=1)
    (full,) = [f for f in report.findings if f.code == "LOG_DIR_NEARLY_FULL"]
    assert "move-partition" not in full.fix and f"`logdoctor retention {full_dir}`" in full.fix
    assert [d.disk.used_percent for d in report.log_dirs] == [97, 40]
    # the real disks of the same dirs (one file system) are what the CLI reads: no simulation leaks
    plain = scan([full_dir, other], ScanOptions(Depth.DEFAULT), jobs=1)
    assert all(d.disk is not None and d.disk.source == "statvfs" for d in plain.log_dirs)


def test_move_margin_is_the_procedures():
    from logdoctor.checks.disk_space import move_margin
    from logdoctor.repair.procedures.common import space_margin

    for n in (0, 10**6, 10**9, 10**12):
        assert move_margin(n) == space_margin(n)


def _row(log_dir: str, total: int, free: int, source: str = "statvfs") -> dict:
    used = (total - free) / total
    return {
        "broker": "broker-0",
        "log_dir": log_dir,
        "disk_total_bytes": total,
        "disk_available_bytes": free,
        "disk_used_fraction": used,
        "disk_used_percent": round(used * 100),
        "disk_source": source,
    }


@pytest.mark.parametrize(
    ("other", "moves"),
    [
        (_row("/b", 10**12, 6 * 10**11), True),  # another file system with room
        (_row("/b", 10**12, 3 * 10**10), False),  # the same file system (same size, same free bytes)
        (_row("/b", 10**9, 10**6), False),  # another one, but no room for the partition
        (_row("/b", 10**12, 6 * 10**11, "simulated"), False),  # a simulated disk: where it lies is unknown
    ],
)
def test_census_moves_only_to_another_file_system_with_room(other, moves):
    """The census's LOG_DIR_NEARLY_FULL (its rows carry no device): the same rule as scan's."""
    from logdoctor.spark.census_rules import fleet_findings

    full = _row("/a", 10**12, 3 * 10**10)
    replica = {"broker": "broker-0", "log_dir": "/a", "topic": "orders", "partition": 0, "bytes": 5 * 10**8,
               "log_end_offset": 10, "path": "/a/orders-0", "lag_offsets": 0}  # fmt: skip
    f = next(x for x in fleet_findings([replica], [full, other]) if x["log_dir"] == "/a")
    expected = "logdoctor move-partition orders-0 --from /a --to /b" if moves else "logdoctor retention /a"
    assert f["fix_command"] == expected


def test_sizes_in_the_text_are_read_as_people_do(tmp_path: Path) -> None:
    """Issue 59 item 10: the message says "27.9 GiB of 931.3 GiB free", not "30000000000 of
    1000000000000 bytes free" (df -h's units, binary), and the fix's command is its argv too."""
    full_dir, other = _two_dir_broker(tmp_path)
    disks = {full_dir: SimulatedDisk(10**12, 3 * 10**10), other: SimulatedDisk(10**12, 6 * 10**11)}
    report = scan([full_dir, other], ScanOptions(Depth.DEFAULT, simulated_disks=disks), jobs=1)
    (full,) = [f for f in report.findings if f.code == "LOG_DIR_NEARLY_FULL"]
    assert "(27.9 GiB of 931.3 GiB free, from " in full.message, full.message
    assert "bytes free" not in full.message + full.fix
    assert full.fix_argv == (("logdoctor", "retention", full_dir),)

"""Issue 26, "offline work at disk speed": logdoctor's whole-process runs against the limits of the machine,
in one invocation on the same files.

    .venv/bin/python benchmarks/bench_disk_speed.py [--gb 1] [--partitions 50000] [--repeat 3] [--src DIR]
        [--only limits,startup,deep,repair,quick,inventory]

``--src`` runs another checkout's ``src`` in the logdoctor processes (PYTHONPATH), e.g. the code before a
change (``git archive <commit> src | tar -x -C /tmp/before``; copy the built ``_speedups*.so`` into its
``src/logdoctor/formats``): the "before" figures. ``--before DIR`` measures such a ``src`` and this one in
the same run instead: the ``cat``, ``scan --deep`` and ``repair --apply`` runs interleaved (one of each
in turn, ``--repeat`` rounds), so that both meet the same load on a shared machine.

Rows (wall time, best and median of ``--repeat`` runs, page cache warm):
- the limits: ``cat`` of the partition's .log files to /dev/null (the read limit from the page cache) and
  crc32c (the ``crc32c`` package) over the same bytes, mapped, in this process (the checksum limit);
- ``logdoctor scan --deep --json`` of a log dir of one partition of ``--gb`` GiB in four segments of 1 KiB
  records (the whole process: start, imports, scan, JSON out);
- ``logdoctor repair --apply`` of a copy of that log dir (hard links to the same .log files) whose .index
  and .timeindex files are removed before each run: the whole process, its planning scan, the rebuild
  and the scan after; the rebuilt indexes are checked byte for byte against the log dir's (written with
  ``formats.recovery.rebuild_indexes``, LogSegment.recover's bytes);
- ``logdoctor scan --quick`` (text, and ``--json``) of a log dir of ``--partitions`` empty partition
  folders (with meta.properties, clean-shutdown marker and checkpoints naming every partition at offset 0);
  ``find LOGDIR -maxdepth 2`` (every folder opened and listed) is the listing limit;
- ``logdoctor inventory --depth quick`` (Parquet, and ``--json``) of the same ``--partitions`` folders;
- the fixed cost of a run, measured apart: ``python -c pass``, ``import logdoctor.cli.main`` and
  ``logdoctor --help``.
GB/s figures are bytes of the .log files / wall seconds; ratios are logdoctor's time over the limit's. The
rows of BENCHMARKS.md's "Scan", "Repair" and "Census" tables follow (``scan --deep``, ``repair --apply`` and
``inventory`` against ``cat`` or ``find``, medians; not with ``--src``, whose tree is not this commit's).
Data is generated once with logdoctor.sample into /tmp/logdoctor-bench (never into the repo).
"""

from __future__ import annotations

import argparse
import math
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, TableRows, Timing, command, machine, ratio, timed, timed_interleaved
from logdoctor.formats.checkpoint import new_offset_checkpoint, write_offset_checkpoint
from logdoctor.formats.recovery import rebuild_indexes
from logdoctor.sample.records import RecordDataSpec, write_segment

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LOGDOCTOR = BIN / "logdoctor"
TOPIC = "bench.disk"
SEGMENTS = 4
SEGMENT_BYTES = 1 << 30  # Kafka's default log.segment.bytes; a segment's positions must fit an int32
ROOT_FILES = {
    "meta.properties": "version=0\nbroker.id=0\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\n",
    ".kafka_cleanshutdown": "",
}


def _root_files(log_dir: Path, entries: list[tuple[str, int, int]]) -> None:
    cp = write_offset_checkpoint(new_offset_checkpoint(entries))
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (log_dir / name).write_bytes(cp)
    for name, text in ROOT_FILES.items():
        (log_dir / name).write_text(text)


def data_dir(gb: float, segments: int | None = None) -> Path:
    """A log dir of one partition: ``gb`` GiB of 1 KiB JSON records in four segments, offsets and
    timestamps continuing from one segment to the next, indexes as LogSegment.recover writes them. Four
    segments, or as many 1 GiB segments as ``gb`` needs (10 GiB: ten), or ``segments``."""
    root = BENCH_TMP / (f"disk-speed-{gb:g}g" + (f"-{segments}s" if segments else ""))
    log_dir = root / "logs"
    if (root / "DONE").exists():
        return log_dir
    shutil.rmtree(root, ignore_errors=True)
    part = log_dir / f"{TOPIC}-0"
    part.mkdir(parents=True)
    t0 = time.perf_counter()
    base, ts = 0, 1_700_000_000_000
    segments = segments or max(SEGMENTS, math.ceil(gb * (1 << 30) / SEGMENT_BYTES))
    for _ in range(segments):
        spec = RecordDataSpec(
            seed=base, record_count=None, target_bytes=int(gb * (1 << 30)) // segments, value_size=1024,
            base_offset=base, start_timestamp_ms=ts,
        )
        log = part / f"{base:020d}.log"
        info = write_segment(log, spec, keep_batches=False)
        with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            r = rebuild_indexes(memoryview(m), base, source=str(log))
            assert r.error is None, r.error
            (part / f"{base:020d}.index").write_bytes(r.offset_index)
            (part / f"{base:020d}.timeindex").write_bytes(r.time_index)
            del r
        base, ts = info.next_offset, info.max_timestamp + 1
    _root_files(log_dir, [(TOPIC, 0, base)])
    (root / "DONE").write_text("")
    print(f"  generated {log_dir} in {time.perf_counter() - t0:.1f}s", flush=True)
    return log_dir


def empty_partitions_dir(n: int) -> Path:
    """A log dir of ``n`` empty partition folders (100 per topic), generated once."""
    root = BENCH_TMP / f"empty-partitions-{n}"
    log_dir = root / "logs"
    if (root / "DONE").exists():
        return log_dir
    shutil.rmtree(root, ignore_errors=True)
    log_dir.mkdir(parents=True)
    entries = []
    for i in range(n):
        topic, p = f"bench.empty-{i // 100:05d}", i % 100
        (log_dir / f"{topic}-{p}").mkdir()
        entries.append((topic, p, 0))
    _root_files(log_dir, entries)
    (root / "DONE").write_text("")
    return log_dir


def _logs(log_dir: Path) -> list[Path]:
    return sorted((log_dir / f"{TOPIC}-0").glob("*.log"))


ENV = dict(os.environ)


def _run(argv: list[str], ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> int:
    env = ENV if env is None else env
    rc = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False
    ).returncode
    if rc not in ok:
        out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        raise SystemExit(f"{' '.join(argv)} exited {rc}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return rc


def _crc(logs: list[Path]) -> None:
    import crc32c

    for p in logs:
        with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            crc32c.crc32c(m)


def _repair_copy(src: Path) -> Path:
    """A second log dir with the same .log files (hard links) and its own root files; its indexes are
    removed before each repair run."""
    dst = src.parent / "repair"
    part_src, part_dst = src / f"{TOPIC}-0", dst / f"{TOPIC}-0"
    part_dst.mkdir(parents=True, exist_ok=True)
    for log in _logs(src):
        if not (part_dst / log.name).exists():
            os.link(log, part_dst / log.name)
    for name in os.listdir(src):
        if (src / name).is_file():
            shutil.copyfile(src / name, dst / name)
    assert part_src.exists()
    return dst


def _repair_once(src: Path, dst: Path, backup: Path, env: dict[str, str] | None = None) -> None:
    part = dst / f"{TOPIC}-0"
    for p in part.iterdir():
        if p.suffix != ".log":
            p.unlink()
    shutil.rmtree(backup, ignore_errors=True)
    shutil.copyfile(src / ".kafka_cleanshutdown", dst / ".kafka_cleanshutdown")
    _run([str(LOGDOCTOR), "repair", "--apply", "--backup-dir", str(backup), str(dst)], env=env)


def _check_rebuilt(src: Path, dst: Path, logs: list[Path]) -> None:
    for log in logs:
        for suffix in (".index", ".timeindex"):
            name = log.with_suffix(suffix).name
            rebuilt = (dst / f"{TOPIC}-0" / name).read_bytes()
            assert rebuilt == (src / f"{TOPIC}-0" / name).read_bytes(), f"{name} differs"


def _interleaved(
    args: argparse.Namespace, d: Path, logs: list[Path], size: int, table: TableRows, labels: tuple[str, str]
) -> list[str]:
    """``cat``, then ``scan --deep`` and ``repair --apply`` of ``--before``'s src and of this one, in turn."""
    before = {**ENV, "PYTHONPATH": str(args.before.resolve())}
    dst = _repair_copy(d)
    backup = d.parent / "repair-backup"
    deep = [str(LOGDOCTOR), "scan", "--deep", "--json", str(d)]

    def repair(env: dict[str, str] | None) -> None:
        _repair_once(d, dst, backup, env)
        _check_rebuilt(d, dst, logs)

    got = timed_interleaved(args.repeat, {
        "cat": lambda: _run(["cat", *map(str, logs)]),
        "deep before": lambda: _run(deep, env=before),
        "deep": lambda: _run(deep),
        "repair before": lambda: repair(before),
        "repair": lambda: repair(None),
    })
    t = {k: v[0] for k, v in got.items()}
    least_cpu = {k: v[1] for k, v in got.items()}
    cat = t["cat"]
    rows = [_row("`cat` of the .log files > /dev/null (read limit)", cat, size, None)]
    for key, label in (("deep", "`logdoctor scan --deep --json`"), ("repair", "`logdoctor repair --apply`")):
        for name, k in (("before", f"{key} before"), ("after", key)):
            row = _row(f"{label}, {name}", t[k], size, cat, "cat")
            rows.append(f"{row} least CPU {least_cpu[k]:.3f} s |")
        rows.append(
            f"|  |  |  |  | after / before: best wall {t[key].best / t[f'{key} before'].best:.2f}, least CPU "
            f"{least_cpu[key] / least_cpu[f'{key} before']:.2f} |"
        )
    for key, label in zip(("deep", "repair"), labels, strict=True):
        _table_rows(table, label, t[key], size, cat)
    return rows


def _table_rows(table: TableRows, label: str, t: Timing, size: int, cat: Timing) -> None:
    """A BENCHMARKS.md row of a run over the .log files against ``cat`` of them, by their medians."""
    table.add(
        label,
        f"{t.median:.2f} s median, {t.best:.2f} s best ({size / t.median / 1e9:.2f} GB/s)",
        f"`cat` of the .log files > /dev/null {cat.median:.2f} s median ({size / cat.median / 1e9:.2f} GB/s)",
        ratio(t.median, cat.median),
    )


def _row(label: str, t: Timing, size: int | None, limit: Timing | None, limit_name: str = "") -> str:
    rate = f" ({size / t.best / 1e9:.2f} GB/s)" if size else ""
    ratio = f"{t.best / limit.best:.2f} x {limit_name}" if limit is not None else ""
    return f"| {label} | {t.best:.2f} s{rate} | {t.median:.2f} s | {t.cpu:.2f} s | {ratio} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0, choices=(1.0, 10.0), help="GiB in the partition")
    ap.add_argument("--partitions", type=int, default=50_000, help="empty partition folders for --quick")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="limits,startup,deep,repair,quick,inventory",
                    help="comma-separated rows: limits, startup, deep, repair, quick, inventory")
    ap.add_argument("--src", type=Path, default=None,
                    help="another checkout's src for the logdoctor processes (PYTHONPATH): 'before' figures")
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout's src: its cat/deep/repair runs interleaved with this one's")
    args = ap.parse_args()
    if args.src is not None:
        ENV["PYTHONPATH"] = str(args.src.resolve())
    only = set(args.only.split(","))
    py = sys.executable
    # the tool as installed: its bytecode compiled, as pip compiles a package it installs (an editable
    # install under PYTHONDONTWRITEBYTECODE would compile every module in every run: ~0.1 s of each)
    import compileall

    import logdoctor

    for src in {Path(logdoctor.__file__).parent, *(p for p in (args.src, args.before) if p)}:
        compileall.compile_dir(str(src), quiet=1)
    d = data_dir(args.gb)
    logs = _logs(d)
    size = sum(p.stat().st_size for p in logs)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    rows: list[str] = []
    table = TableRows()
    deep_label = f"`scan --deep --json` of {args.gb:g} GiB ({len(logs)} segments of 1 KiB records)"
    repair_label = f"`repair --apply` of {args.gb:g} GiB ({len(logs)} segments), every index removed"
    cat = crc = None
    subprocess.run(["cat", *map(str, logs)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    if args.before is not None:
        rows.extend(_interleaved(args, d, logs, size, table, (deep_label, repair_label)))
        only -= {"limits", "deep", "repair"}
    if only & {"limits", "deep", "repair"}:
        cat = timed(args.repeat, lambda: _run(["cat", *map(str, logs)]))
        crc = timed(args.repeat, lambda: _crc(logs))
        rows.append(_row("`cat` of the .log files > /dev/null (read limit)", cat, size, None))
        rows.append(_row("crc32c over the same bytes, one process (checksum limit)", crc, size, cat, "cat"))
    if "startup" in only:
        t = timed(args.repeat, lambda: _run([py, "-c", "pass"]))
        rows.append(_row("`python -c pass`", t, None, None))
        rows.append(_row(
            "`python -c 'import logdoctor.cli.main'`",
            timed(args.repeat, lambda: _run([py, "-c", "import logdoctor.cli.main"])), None, None,
        ))
        rows.append(_row(
            "`logdoctor --help` (fixed cost of a run)",
            timed(args.repeat, lambda: _run([str(LOGDOCTOR), "--help"])), None, None,
        ))
    if "deep" in only:
        t = timed(args.repeat, lambda: _run([str(LOGDOCTOR), "scan", "--deep", "--json", str(d)]))
        assert crc is not None and cat is not None
        label = f"`logdoctor scan --deep --json` ({args.gb:g} GiB, {len(logs)} segments)"
        rows.append(_row(label, t, size, cat, "cat"))
        rows.append(f"|  |  |  |  | {t.best / crc.best:.1f} x crc32c |")
        _table_rows(table, deep_label, t, size, cat)
    if "repair" in only:
        dst = _repair_copy(d)
        backup = d.parent / "repair-backup"
        t = timed(args.repeat, lambda: _repair_once(d, dst, backup))
        _check_rebuilt(d, dst, logs)
        assert cat is not None and crc is not None
        rows.append(_row("`logdoctor repair --apply`, every index removed (rebuilt byte-identical)", t, size,
                         cat, "cat"))
        rows.append(f"|  |  |  |  | {t.best / crc.best:.1f} x crc32c |")
        _table_rows(table, repair_label, t, size, cat)
    if only & {"quick", "inventory"}:
        e = empty_partitions_dir(args.partitions)
        ls = timed(args.repeat, lambda: _run(["find", str(e), "-mindepth", "1", "-maxdepth", "2"]))
        rows.append(_row(f"`find -maxdepth 2` ({args.partitions:,} folders listed; listing limit)", ls, None,
                         None))
    if "quick" in only:
        for fmt in ([], ["--json"]):
            t = timed(args.repeat, lambda f=fmt: _run([str(LOGDOCTOR), "scan", "--quick", *f, str(e)]))
            flag = " --json" if fmt else ""
            label = f"`logdoctor scan --quick{flag}`, {args.partitions:,} empty partitions"
            rows.append(_row(label, t, None, ls, "find"))
    if "inventory" in only:
        for fmt, name in (([], "inventory.parquet"), (["--json"], "inventory.jsonl")):
            out = BENCH_TMP / "inventory-out" / name  # replaced at each run (an inventory it wrote)
            argv = [str(LOGDOCTOR), "inventory", "--depth", "quick", *fmt, "-o", str(out), str(e)]
            t = timed(args.repeat, lambda a=argv: _run(a))
            flag = " --json" if fmt else ""
            label = f"`logdoctor inventory --depth quick{flag}`, {args.partitions:,} empty partitions"
            rows.append(_row(label, t, None, ls, "find"))
            if not fmt:
                table.add(
                    f"`inventory --depth quick` of {args.partitions:,} empty partitions (Parquet)",
                    f"{t.median:.2f} s median, {t.best:.2f} s best",
                    f"`find -maxdepth 2` {ls.median:.2f} s median",
                    ratio(t.median, ls.median),
                )
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    print(f"command: {command()}" + (f" (PYTHONPATH={ENV['PYTHONPATH']})" if args.src else ""))
    print(f"machine: {machine()}")
    print(f"data: {d} ({len(logs)} segments, {size / 1e9:.2f} GB of .log)")
    print(f"load average (1, 5, 15 min) before: {' '.join(load_before)}; after: {' '.join(load_after)}\n")
    least = " least CPU |" if args.before is not None else ""
    print(f"| run | best wall | median wall | CPU (best run) | best / limit |{least}")
    print("|---|---|---|---|---|" + ("---|" if least else ""))
    for r in rows:
        print(r)
    if args.src is None:
        table.print()


if __name__ == "__main__":
    main()

"""Issue 58 item 2, the page cache as it was found: what ``logdoctor scan --deep`` of a 1 GiB segment leaves
in the page cache, measured with util-linux's ``fincore``, and what leaving it as found costs in time.

    .venv/bin/python benchmarks/bench_page_cache.py [--rounds 5]

The data: a log dir of one partition holding one 1 GiB segment of 1 KiB JSON records with its indexes
(bench_disk_speed.data_dir, generated once into /tmp/logdoctor-bench). "Not cached" is made without root:
``posix_fadvise(POSIX_FADV_DONTNEED)`` over every file of the partition (after an fsync), checked with
``fincore`` (0 resident pages before each such run); "cached" by reading the files whole first.

Rows:
- resident bytes and pages of the .log before and after ``scan --deep --json`` (the default: the page cache
  left as found), from not cached and from cached;
- the same with ``--keep-cache`` (the scan as it was before issue 58: every page it read stays cached);
- the CPU and wall time of the ``--deep`` walk of the .log alone in this process, guard off and on,
  alternated;
- the time of ``scan --deep --json`` with ``--keep-cache`` (the walk exactly as before: no guard, no
  callback) against the default, each from not cached and from cached, alternated in one run
  (``--rounds`` rounds, one run of each in turn), whole processes; best and median wall seconds and the
  ratio of the bests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command, machine
from bench_disk_speed import LOGDOCTOR, TOPIC, data_dir


def _files(log_dir: Path) -> list[Path]:
    return sorted(p for p in (log_dir / f"{TOPIC}-0").iterdir() if p.is_file())


def fincore(path: Path) -> tuple[int, int]:
    """(resident bytes, resident pages) of ``path`` as ``fincore`` reports them."""
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES,PAGES", str(path)],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    return int(out[0]), int(out[1])


def uncache(log_dir: Path) -> None:
    for p in _files(log_dir):
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def cache(log_dir: Path) -> None:
    for p in _files(log_dir):
        with p.open("rb") as f:
            while f.read(8 << 20):
                pass


def scan(log_dir: Path, *extra: str) -> float:
    t0 = time.perf_counter()
    rc = subprocess.run(
        [str(LOGDOCTOR), "scan", "--deep", "--json", *extra, str(log_dir)], stdout=subprocess.DEVNULL
    ).returncode
    elapsed = time.perf_counter() - t0
    if rc not in (0, 1):
        raise SystemExit(f"logdoctor scan exited {rc}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    log_dir = data_dir(1.0, segments=1)
    (log,) = [p for p in _files(log_dir) if p.suffix == ".log"]
    size = log.stat().st_size
    load = Path("/proc/loadavg").read_text().split()[:3]

    rows = []
    for label, start, extra in [
        ("not cached, `scan --deep`", uncache, ()),
        ("cached, `scan --deep`", cache, ()),
        ("not cached, `scan --deep --keep-cache`", uncache, ("--keep-cache",)),
        ("cached, `scan --deep --keep-cache`", cache, ("--keep-cache",)),
    ]:
        start(log_dir)
        before = fincore(log)
        scan(log_dir, *extra)
        after = fincore(log)
        rows.append((label, before, after))

    runs: dict[str, list[float]] = {}
    plan = [
        ("not cached, --keep-cache (as before)", uncache, ("--keep-cache",)),
        ("not cached, default (left as found)", uncache, ()),
        ("cached, --keep-cache (as before)", cache, ("--keep-cache",)),
        ("cached, default (left as found)", cache, ()),
    ]
    for _ in range(args.rounds):
        for label, start, extra in plan:
            start(log_dir)
            runs.setdefault(label, []).append(scan(log_dir, *extra))

    walks = walk_alone(log_dir, log, args.rounds)

    print(f"command: {command()}")
    print(f"machine: {machine()}; load before: {' '.join(load)}; after: "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"data: {log} ({size / (1 << 30):.2f} GiB, {(size + 4095) // 4096} pages)\n")
    print("| run | resident before (fincore) | resident after (fincore) | after / size |")
    print("|---|---|---|---|")
    for label, (b_bytes, b_pages), (a_bytes, a_pages) in rows:
        print(f"| {label} | {b_bytes / (1 << 20):.1f} MiB ({b_pages} pages) | "
              f"{a_bytes / (1 << 20):.1f} MiB ({a_pages} pages) | {a_bytes / size:.1%} |")
    print(f"\nwall seconds of whole `scan --deep --json` processes, {args.rounds} rounds alternated\n")
    print("| run | best | median | best / as before |")
    print("|---|---|---|---|")
    for i, (label, _start, _extra) in enumerate(plan):
        anchor = min(runs[plan[i - i % 2][0]])
        best = min(runs[label])
        print(f"| {label} | {best:.2f} | {statistics.median(runs[label]):.2f} | {best / anchor:.3f} |")

    print(f"\nthe --deep walk of the .log alone (checks.walk_ahead.read_walk) in this process, {args.rounds} "
          "rounds alternated: CPU seconds of this process (user + system: what the guard's system calls "
          "cost, less sensitive to the machine's load than wall time)\n")
    print("| run | best CPU | median CPU | best wall | best CPU / as before |")
    print("|---|---|---|---|---|")
    for label, cpus_walls in walks.items():
        cpus = [c for c, _w in cpus_walls]
        anchor = min(c for c, _w in walks[label.replace("left as found", "as before")])
        print(f"| {label} | {min(cpus):.3f} | {statistics.median(cpus):.3f} | "
              f"{min(w for _c, w in cpus_walls):.2f} | {min(cpus) / anchor:.3f} |")


def walk_alone(log_dir: Path, log: Path, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """CPU and wall seconds of the walk of ``log`` with the page cache's guard off (as before) and on."""
    from logdoctor.checks import walk_ahead
    from logdoctor.logdir import page_cache

    buf = walk_ahead.new_chunk()
    out: dict[str, list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for label, start, on in [
            ("not cached, as before", uncache, False),
            ("not cached, left as found", uncache, True),
            ("cached, as before", cache, False),
            ("cached, left as found", cache, True),
        ]:
            start(log_dir)
            page_cache.leave_as_found(on)
            c0, t0 = time.process_time(), time.perf_counter()
            got = walk_ahead.read_walk(str(log), True, True, buf, 0)
            out.setdefault(label, []).append((time.process_time() - c0, time.perf_counter() - t0))
            assert isinstance(got, walk_ahead.RawWalk), got
    page_cache.leave_as_found(False)
    return out


if __name__ == "__main__":
    main()

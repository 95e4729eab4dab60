"""Issue 26, above the page cache: what a cold read of the benchmark's .log files costs on this machine,
with and without logdoctor, so that a cold `scan --deep` figure can be told apart from the machine's.

    sudo .venv/bin/python benchmarks/bench_cold_read.py [--gb 1] [--rounds 4]

Each row is one whole process started after ``sync; echo 3 > /proc/sys/vm/drop_caches`` (root only):
- ``cat`` of the .log files to /dev/null (the kernel copies every page: its cost is system time);
- a 20-line reader with no logdoctor code: each .log mapped, CRC-32C (the ``crc32c`` package) over the
  map, on two threads, with each way of mapping: ``MAP_POPULATE`` (what
  ``checks.state.file_records.read_buffer`` does for a large file), a plain map (pages fault in as the CRC
  reads them), ``MADV_SEQUENTIAL`` and ``MADV_WILLNEED``;
- ``logdoctor scan --deep --json`` of the same log dir;
- first, once, the cost of touching 1 GiB of fresh anonymous memory (how much the virtual machine's
  host charges for memory the guest touches for the first time after it was freed).
Rounds interleave the rows, so a slow spell of the host falls on all of them. Figures: wall, user and
system seconds of the process (its children included). The data is bench_disk_speed.py's (generated
there if missing).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command, machine
from bench_disk_speed import LOGDOCTOR, _logs, data_dir

READER = """
import mmap, os, sys, crc32c
from concurrent.futures import ThreadPoolExecutor
mode = sys.argv[1]
def one(p):
    fd = os.open(p, os.O_RDONLY)
    flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if mode == "populate" else 0)
    m = mmap.mmap(fd, 0, flags=flags, prot=mmap.PROT_READ)
    if mode == "sequential":
        m.madvise(mmap.MADV_SEQUENTIAL)
    elif mode == "willneed":
        m.madvise(mmap.MADV_WILLNEED)
    crc32c.crc32c(m)
    m.close()
    os.close(fd)
with ThreadPoolExecutor(2) as ex:
    list(ex.map(one, sys.argv[2:]))
"""

TOUCH = """
import mmap
m = mmap.mmap(-1, 1 << 30)
for off in range(0, 1 << 30, 4096):
    m[off] = 1
"""


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def run(argv: list[str]) -> tuple[float, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0, choices=(1.0, 10.0))
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench_cold_read: dropping the page cache needs root")
    d = data_dir(args.gb)
    logs = [str(p) for p in _logs(d)]
    size = sum(os.path.getsize(p) for p in logs)
    py = sys.executable
    rows: dict[str, list[tuple[float, float, float]]] = {}
    plan = [("`cat` > /dev/null", ["cat", *logs])]
    plan += [
        (f"map + crc32c, 2 threads, {mode}", [py, "-c", READER, mode, *logs])
        for mode in ("populate", "plain", "sequential", "willneed")
    ]
    plan.append(("`logdoctor scan --deep --json`", [str(LOGDOCTOR), "scan", "--deep", "--json", str(d)]))
    drop_caches()
    touch = run([py, "-c", TOUCH])
    for _ in range(args.rounds):
        for label, argv in plan:
            drop_caches()
            rows.setdefault(label, []).append(run(argv))
    print(f"command: {command()}")
    print(f"machine: {machine()}")
    print(f"data: {d} ({len(logs)} segments, {size / 1e9:.2f} GB of .log), page cache dropped before each")
    print(f"touching 1 GiB of fresh anonymous memory: {touch[0]:.2f} s wall, {touch[2]:.2f} s system\n")
    print("| run (cold) | wall, each round | user, each round | system, each round | best GB/s |")
    print("|---|---|---|---|---|")
    for label, runs in rows.items():
        walls = " / ".join(f"{w:.2f}" for w, _, _ in runs)
        users = " / ".join(f"{u:.2f}" for _, u, _ in runs)
        syss = " / ".join(f"{s:.2f}" for _, _, s in runs)
        print(f"| {label} | {walls} | {users} | {syss} | {size / min(w for w, _, _ in runs) / 1e9:.2f} |")


if __name__ == "__main__":
    main()

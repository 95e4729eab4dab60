"""Start-up of the CLI as an operator's loop meets it: wall and CPU time of `logdoctor --help`,
`logdoctor dump SMALLFILE` and `logdoctor scan --quick` of a one-partition log dir, against
`python -c pass`, side by side in one run (interleaved), best and median of ``--repeat`` runs.

    .venv/bin/python benchmarks/bench_startup.py [--repeat 20] [--src PATH]

``--src`` runs another checkout's ``src`` with this interpreter (PYTHONPATH), e.g. the code before
a change (``git worktree add /tmp/before <commit>``; copy the built ``_speedups*.so`` into its
``src/logdoctor/formats``): figures of the code before a change. Without ``--src`` the rows of
BENCHMARKS.md's "CLI start" table follow (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import TableRows, command, machine, ratio
from logdoctor.formats.checkpoint import OffsetCheckpoint, write_offset_checkpoint
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

ENTRY = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--src", type=Path, default=None)
    args = ap.parse_args()

    table = TableRows()
    work = Path(tempfile.mkdtemp(prefix="logdoctor-startup-"))
    checkpoint = work / "recovery-point-offset-checkpoint"
    checkpoint.write_bytes(write_offset_checkpoint(OffsetCheckpoint(0, [("orders", 3, 8365023)])))
    topics = [TopicSpec("orders", partitions=1, records_per_partition=50)]
    log_dir, _ = generate_log_dir(work / "fleet", topics)

    env = dict(os.environ)
    if args.src is not None:
        env["PYTHONPATH"] = str(args.src.resolve())
    py = sys.executable
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "logdoctor --help": [py, "-c", ENTRY, "--help"],
        "logdoctor dump CHECKPOINT": [py, "-c", ENTRY, "dump", str(checkpoint)],
        "logdoctor dump --json CHECKPOINT": [py, "-c", ENTRY, "dump", "--json", str(checkpoint)],
        "logdoctor scan --quick LOGDIR": [py, "-c", ENTRY, "scan", "--quick", str(log_dir)],
    }
    for argv in cases.values():  # warm the page cache and .pyc files
        timed(argv, env)
    walls: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeat):
        for name, argv in cases.items():
            w, c = timed(argv, env)
            walls[name].append(w)
            cpus[name].append(c)

    print(f"# {command()}")
    print(f"# {machine()}; code: {args.src or 'this checkout'}; {args.repeat} runs each, interleaved")
    base = statistics.median(walls["python -c pass"])
    print(f"{'command':32} {'wall best':>10} {'wall median':>12} {'cpu median':>11} {'x pass':>7}")
    for name in cases:
        wm = statistics.median(walls[name])
        print(
            f"{name:32} {min(walls[name]) * 1e3:8.0f}ms {wm * 1e3:10.0f}ms "
            f"{statistics.median(cpus[name]) * 1e3:9.0f}ms {wm / base:7.1f}"
        )
    anchor = min(walls["python -c pass"])
    for name in ("logdoctor dump CHECKPOINT", "logdoctor dump --json CHECKPOINT"):
        cpu = statistics.median(cpus[name])
        table.add(
            f"`{name}`",
            f"{min(walls[name]) * 1e3:.0f} ms best wall, {cpu * 1e3:.0f} ms CPU median",
            f"`python -c pass` {anchor * 1e3:.0f} ms best wall",
            ratio(min(walls[name]), anchor),
        )
    if args.src is None:
        table.print()


if __name__ == "__main__":
    main()

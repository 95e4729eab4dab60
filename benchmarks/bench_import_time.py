"""What a `logdoctor` command spends importing: the sums of ``python -X importtime``'s self column
(logdoctor's own modules, and all), median of ``--repeat`` runs; ``--python`` another checkout's
interpreter (its editable install: main's ``.venv/bin/python`` for the figures of the code before a change).

    .venv/bin/python benchmarks/bench_import_time.py [--repeat 15] [--python PY] -- scan --deep --json LOGDIR
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_times(python: str, argv: list[str]) -> tuple[float, float]:
    """(logdoctor's own, all) self import time in ms of one run of ``logdoctor ARGV``."""
    err = subprocess.run(
        [python, "-X", "importtime", "-m", "logdoctor", *argv], capture_output=True, text=True, check=False
    ).stderr
    own = total = 0
    for line in err.splitlines():
        m = _LINE.match(line)
        if m:
            total += int(m[1])
            own += int(m[1]) if m[4].startswith("logdoctor") else 0
    return own / 1000, total / 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    runs = [import_times(args.python, argv) for _ in range(args.repeat)]
    own = statistics.median(r[0] for r in runs)
    total = statistics.median(r[1] for r in runs)
    print(f"{args.python} logdoctor {' '.join(argv)}")
    print(f"  import time, median of {args.repeat}: logdoctor's own {own:.1f} ms, all {total:.1f} ms")


if __name__ == "__main__":
    main()

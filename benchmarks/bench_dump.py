"""`logdoctor dump` text output against `--json` on the same files: the CLI as people run it (a
subprocess, stdout to /dev/null), wall time, best of N.

    .venv/bin/python benchmarks/bench_dump.py [--mb 150] [--repeat 3] [--modes batches,deep,print-data]
    .venv/bin/python benchmarks/bench_dump.py --log-dirs [--before SRC] [--repeat 5]

Files: a generated segment of ``--mb`` MB (logdoctor.sample.records: uncompressed, 512-byte JSON values
in the producer's default 16 KiB batches, in /tmp) and, when ../shared/realworld is present, the real
KRaft metadata log kraft-3.5-greenlemont-n1/__cluster_metadata-0/00000000000000000000.log (2 MB of
small metadata records, decoded with the cluster-metadata decoder). Modes: batches (no flag), --deep
(every record) and -p (--print-data: keys, values, decoded records). The last column is text time /
JSON CPU time (user + sys of the logdoctor process, steadier than wall time on a shared machine): at
most 1.0 means text is at least as fast as JSON. Times include the CLI's start (~1 s of imports). The
rows of BENCHMARKS.md's "Dump" table follow (``benchmarks/update_table.py`` puts them in place).

``--log-dirs``: every file of each real KRaft log dir of ../shared/realworld in one call
(``dump -p FILE...``, as `logdoctor dump -p $(find DIR -type f)`), the whole process's CPU, best of
``--repeat``; with ``--before SRC`` (the ``src`` folder of another checkout, its C extension built), the same
calls with that tree's code, alternated with this one's in one run (the ratio column: this / before).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import TableRows, command, machine, ratio, segment
from logdoctor.formats.record_types import Compression
from logdoctor.sample.records import RecordDataSpec

ROOT = Path(__file__).resolve().parents[1]
LOGDOCTOR = ROOT / ".venv" / "bin" / "logdoctor"
METADATA_LOG = (
    ROOT.parent / "shared/realworld/kraft-3.5-greenlemont-n1/__cluster_metadata-0/00000000000000000000.log"
)
MODES = {"batches": [], "deep": ["--deep"], "print-data": ["-p"]}


def _measured(argv: list[str], ok: tuple[int, ...], **popen: Any) -> tuple[float, float]:
    """(wall, CPU: user + sys) of one process ``argv``, stdout to /dev/null; an exit code outside ``ok`` ends
    the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "w") as sink:
        rc = subprocess.run(argv, stdout=sink, check=False, **popen).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc not in ok:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {rc}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(args: list[str], path: Path, repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + sys of the child) of ``repeat`` runs. On a shared
    machine the CPU time is the steadier figure: the ratio column uses it."""
    runs = [_measured([str(LOGDOCTOR), "dump", *args, str(path)], (0, 1)) for _ in range(repeat)]
    return min(w for w, _ in runs), min(c for _, c in runs)


REALWORLD = ROOT.parent / "shared/realworld"


def _dump_cpu(files: list[str], cwd: Path, src: str | None) -> float:
    """CPU (user + sys) of one ``dump -p FILES`` process, with ``src``'s code first on its path."""
    env = {**os.environ, "PYTHONPATH": src} if src else dict(os.environ)
    argv = [sys.executable, "-m", "logdoctor", "dump", "-p", *files]
    return _measured(argv, (0, 1, 2), cwd=cwd, env=env)[1]  # 2: a real dir's truncated small file


def log_dirs(repeat: int, before: str | None) -> None:
    """Every file of each real KRaft log dir dumped in one call, this tree against ``before``."""
    table = TableRows()
    print(f"# {machine()}\n# {command()}\n")
    print("| log dir | files | this tree: CPU | before: CPU | this / before |")
    print("|---|---|---|---|---|")
    for folder in sorted(REALWORLD.glob("kraft-*")):
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        now, old = [], []
        for _ in range(repeat):  # alternated: the two trees see the same machine
            now.append(_dump_cpu(files, folder, None))
            if before:
                old.append(_dump_cpu(files, folder, before))
        ref = f"{min(old):.2f} s" if old else "-"
        print(f"| {folder.name} | {len(files)} | {min(now):.2f} s | {ref} | "
              f"{ratio(min(now), min(old)) if old else '-'} |", flush=True)  # fmt: skip
        counted = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        table.add(
            f"`dump -p` of every file of the real KRaft log dir {folder.name} ({counted}), one call",
            f"{min(now):.2f} s CPU",
            f"the code before: {ref} CPU" if old else "-",
            ratio(min(now), min(old)) if old else "-",
        )
    table.print()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log-dirs", action="store_true", help="every file of each real KRaft log dir, one call")
    ap.add_argument("--before", help="with --log-dirs: another checkout's src folder, measured alternately")
    ap.add_argument("--mb", type=float, default=150.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    args = ap.parse_args()
    if args.log_dirs:
        log_dirs(args.repeat, args.before)
        return
    spec = RecordDataSpec(
        seed=11,
        record_count=None,
        target_bytes=int(args.mb * 1e6),
        value_kind="json",
        value_size=512,
        key_cardinality=100_000,
        compression=Compression.NONE,
    )
    files = [("generated, uncompressed, 512 B JSON values", segment(spec, "dump"))]
    if METADATA_LOG.exists():
        files.append(("real KRaft metadata log (kraft-3.5-greenlemont-n1)", METADATA_LOG))
    table = TableRows()
    print(f"# {machine()}\n# {command()}\n")
    print("| file | size | mode | text: wall, CPU | --json: wall, CPU | text / json (CPU) |")
    print("|---|---|---|---|---|---|")
    for label, path in files:
        size = path.stat().st_size
        for mode in args.modes.split(","):
            flags = MODES[mode]
            w_text, c_text = run(flags, path, args.repeat)
            w_json, c_json = run([*flags, "--json"], path, args.repeat)
            print(
                f"| {label} | {size / 1e6:.1f} MB | {mode} | {w_text:.2f} s, {c_text:.2f} s "
                f"({size / 1e6 / c_text:.1f} MB/s) | {w_json:.2f} s, {c_json:.2f} s "
                f"({size / 1e6 / c_json:.1f} MB/s) "
                f"| {c_text / c_json:.2f} |",
                flush=True,
            )
            table.add(
                f"`dump` text vs `--json`, {label}, {mode}",
                f"{c_text:.2f} s CPU ({w_text:.2f} s wall, {size / 1e6:.1f} MB)",
                f"`--json` {c_json:.2f} s CPU",
                ratio(c_text, c_json),
            )
    table.print()


if __name__ == "__main__":
    main()

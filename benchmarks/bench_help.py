"""`logdoctor --help`, each command's `--help` and `scan --quick` of 50,000 empty partitions against their
anchors, side by side in one hyperfine run each (issue 49, goal 4):

- ``python -c pass``; `logdoctor --help` and `logdoctor COMMAND --help` replayed from the help cache
  (cli/helpcache.py: warmed first, in a cache folder of the benchmark's own), and the same calls rendered by
  typer (``LOGDOCTOR_HELP_CACHE=0``, what every first call pays);
- with ``--partitions N``: ``find DIR -mindepth 1 -maxdepth 2`` (the listing limit) and `logdoctor scan
  --quick` (text and ``--json``) of ``N`` empty partition folders (bench_disk_speed.py's dir, made once);
- with ``--callgrind``: the instructions valgrind counts for ``python -c pass`` and the help calls (one run
  each: repeatable where wall times are not, on a machine shared with other jobs).

    .venv/bin/python benchmarks/bench_help.py [--runs 30] [--partitions 50000] [--scan-runs 5] [--callgrind]
        [--before SRC]

``--before SRC`` adds `scan --quick` rows of another checkout's ``src`` run with this interpreter
(``PYTHONPATH``; copy the built ``_speedups*.so`` into its ``src/logdoctor/formats``), e.g. the code before a
change (``git archive BASE src | tar -x -C /tmp/before``).

hyperfine is required (``apt-get install hyperfine``). Output: one row per command with hyperfine's median
and minimum wall time, its mean CPU (user + system), and the ratio of the median wall and of the CPU to the
anchor's; the load average before and after each run; then the rows of BENCHMARKS.md's "CLI start" and
"Scan" tables (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import TableRows, command, machine, ratio
from bench_disk_speed import empty_partitions_dir

BIN = Path(sys.executable).parent
LOGDOCTOR = BIN / "logdoctor"


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _hyperfine(cases: dict[str, str], runs: int, warmup: int, env: dict[str, str]) -> dict[str, dict]:
    out = Path(tempfile.mkdtemp(prefix="bench-help-")) / "hf.json"
    argv = ["hyperfine", "-N", "--style", "none", "--runs", str(runs), "--warmup", str(warmup)]
    argv += ["--export-json", str(out)]
    for name, cmd in cases.items():
        argv += ["-n", name, cmd]
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    return {r["command"]: r for r in json.loads(out.read_text())["results"]}


def _rows(results: dict[str, dict], anchor: str) -> list[str]:
    base = results[anchor]
    base_cpu = base["user"] + base["system"]
    rows = []
    for name, r in results.items():
        cpu = r["user"] + r["system"]
        rows.append(
            f"| {name} | {r['median'] * 1000:.1f} ms | {r['min'] * 1000:.1f} ms | {cpu * 1000:.1f} ms "
            f"| {r['median'] / base['median']:.2f}x | {cpu / base_cpu:.2f}x |"
        )
    return rows


def _median(r: dict) -> str:
    return f"{r['median'] * 1000:.1f} ms median"


def _help_rows(table: TableRows, results: dict[str, dict]) -> None:
    base = results["python -c pass"]
    anchor = f"`python -c pass` {_median(base)}"
    main = results["logdoctor --help"]
    table.add(
        "`logdoctor --help` (replayed from the help cache)", _median(main), anchor,
        ratio(main["median"], base["median"]),
    )  # fmt: skip
    commands = [
        n for n in results if n.startswith("logdoctor ") and n != "logdoctor --help" and "typer" not in n
    ]
    each = [results[n]["median"] for n in commands]
    table.add(
        "each command's `--help` (replayed from the help cache)",
        f"{min(each) * 1000:.1f}-{max(each) * 1000:.1f} ms median",
        anchor,
        f"{min(each) / base['median']:.2f}-{max(each) / base['median']:.2f}x",
    )
    typer = results["logdoctor --help (typer: LOGDOCTOR_HELP_CACHE=0)"]
    table.add(
        "`logdoctor --help` rendered by typer (a first call, or `LOGDOCTOR_HELP_CACHE=0`)",
        _median(typer), anchor, ratio(typer["median"], base["median"]),
    )  # fmt: skip


def _callgrind(argv: list[str], env: dict[str, str]) -> int:
    out = Path(tempfile.mkdtemp(prefix="bench-help-cg-")) / "cg.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    raise RuntimeError(done.stderr[-2000:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--partitions", type=int, default=0, help="also scan --quick of N empty partitions")
    ap.add_argument("--scan-runs", type=int, default=5)
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--before", type=Path, default=None, help="another checkout's src for scan rows")
    args = ap.parse_args()
    if shutil.which("hyperfine") is None:
        raise SystemExit("hyperfine is required: apt-get install hyperfine")

    from logdoctor.cli.registry import COMMANDS

    cache = Path(tempfile.mkdtemp(prefix="bench-help-cache-"))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "LOGDOCTOR_HELP_CACHE")}
    env["XDG_CACHE_HOME"] = str(cache)
    helps = {"logdoctor --help": [str(LOGDOCTOR), "--help"]}
    helps |= {f"logdoctor {c.name} --help": [str(LOGDOCTOR), c.name, "--help"] for c in COMMANDS}
    for argv in helps.values():  # the cache warmed: each call rendered once by typer
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    cases = {"python -c pass": f"{shlex.quote(sys.executable)} -c pass"}
    cases |= {name: shlex.join(argv) for name, argv in helps.items()}
    typer_cases = {
        f"{name} (typer: LOGDOCTOR_HELP_CACHE=0)": "env LOGDOCTOR_HELP_CACHE=0 " + shlex.join(argv)
        for name, argv in helps.items()
        if name in ("logdoctor --help", "logdoctor scan --help", "logdoctor export --help")
    }

    table = TableRows()
    print(f"# {command()}")
    print(f"# {machine()}")
    header = "| command | median wall | min wall | CPU (mean user + sys) | wall x anchor | CPU x anchor |"
    print(f"\nload before: {_load()}")
    results = _hyperfine({**cases, **typer_cases}, args.runs, 3, env)
    print(f"load after: {_load()}\n")
    print(header)
    print("|---|---|---|---|---|---|")
    print("\n".join(_rows(results, "python -c pass")))
    _help_rows(table, results)

    if args.callgrind:
        print(f"\ncallgrind (instructions, one run each; load {_load()}):\n")
        print("| command | instructions | x `python -c pass` |")
        print("|---|---|---|")
        runs = {"python -c pass": [sys.executable, "-c", "pass"]}
        shown = ("logdoctor --help", "logdoctor scan --help", "logdoctor export --help")
        runs |= {n: helps[n] for n in shown}
        counts = {n: _callgrind(a, env) for n, a in runs.items()}
        off = {**env, "LOGDOCTOR_HELP_CACHE": "0"}
        counts["logdoctor --help (typer)"] = _callgrind(helps["logdoctor --help"], off)
        counts["logdoctor scan --help (typer)"] = _callgrind(helps["logdoctor scan --help"], off)
        for name, n in counts.items():
            print(f"| {name} | {n:,} | {n / counts['python -c pass']:.2f}x |")

    if args.partitions:
        d = empty_partitions_dir(args.partitions)
        scans = {
            f"find -mindepth 1 -maxdepth 2 ({args.partitions:,} folders)": shlex.join(
                ["find", str(d), "-mindepth", "1", "-maxdepth", "2"]
            ),
            f"logdoctor scan --quick ({args.partitions:,} empty partitions)": shlex.join(
                [str(LOGDOCTOR), "scan", "--quick", str(d)]
            ),
            f"logdoctor scan --quick --json ({args.partitions:,})": shlex.join(
                [str(LOGDOCTOR), "scan", "--quick", "--json", str(d)]
            ),
        }
        if args.before is not None:
            entry = "import sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor'; main()"
            before = ["env", f"PYTHONPATH={args.before.resolve()}", sys.executable, "-c", entry]
            scans[f"logdoctor scan --quick, before ({args.before})"] = shlex.join(
                [*before, "scan", "--quick", str(d)]
            )
            scans[f"logdoctor scan --quick --json, before ({args.before})"] = shlex.join(
                [*before, "scan", "--quick", "--json", str(d)]
            )
        print(f"\nload before: {_load()}")
        results = _hyperfine(scans, args.scan_runs, 1, env)
        print(f"load after: {_load()}\n")
        print(header.replace("anchor", "find"))
        print("|---|---|---|---|---|---|")
        print("\n".join(_rows(results, next(iter(scans)))))
        find, quick, quick_json = (results[name] for name in list(scans)[:3])
        anchor = f"`find DIR -mindepth 1 -maxdepth 2` {find['median']:.3f} s median"
        cpu = quick["user"] + quick["system"]
        table.add(
            f"`scan --quick` of {args.partitions:,} empty partitions",
            f"{quick['median']:.3f} s median, {quick['min']:.3f} s min (CPU {cpu:.2f} s)",
            anchor,
            ratio(quick["median"], find["median"]),
        )
        table.add(
            f"`scan --quick --json` of {args.partitions:,} empty partitions",
            f"{quick_json['median']:.3f} s median",
            anchor,
            ratio(quick_json["median"], find["median"]),
        )
    table.print()
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()

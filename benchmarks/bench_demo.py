"""`make demo` from a fresh clone, as a new user runs it: the environment built from nothing, then the demo;
a timeline of where the seconds go.

    python3.11 benchmarks/bench_demo.py [--source DIR] [--no-shared] [--cold] [--installer uv|pip]

Clones ``--source`` (default: this checkout's committed HEAD) into a new folder under /tmp, with
../shared beside it (a link to this checkout's ../shared) unless ``--no-shared``, and runs
``make demo`` there with every output line stamped with the seconds since the start. ``--cold``: empty
pip and uv caches (PIP_CACHE_DIR, UV_CACHE_DIR in the run's folder: every package is downloaded, pyspark's
wheel built from its source archive); otherwise the user's caches, warm or not (said in the output). The
phases are the lines that begin them: make's own command lines, install-env's steps, the demo's steps.
Prints the machine's load before and after: on the shared 2-core machine, wall times follow it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a line that begins a phase of the timeline: (its start, its name)
PHASES = (
    # the Makefile before scripts/install-env.sh (pip, one lock)
    ("python3.11 -m venv", "the venv (pip's)"),
    (".venv/bin/python -m pip install --quiet --disable-pip-version-check -r", "the lock (pip)"),
    (".venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps", "the checkout"),
    (".venv/bin/python -m compileall", "src bytecode"),
    # scripts/install-env.sh
    ("install-env: installing uv", "uv into .tools/uv (pip install --target)"),
    ("install-env: a new", "the venv"),
    ("install-env: requirements", "the lock's packages (download, build, link, bytecode)"),
    ("install-env: this checkout", "the checkout, editable (C extension) + src bytecode"),
    ("PYSPARK_PYTHON=", "logdoctor demo: start, sample fleet"),  # the Makefile before bytecode on demand
    ("PYTHONDONTWRITEBYTECODE= PYSPARK_PYTHON=", "logdoctor demo: start, sample fleet"),
    ("Step 1", "demo: inventories"),
    ("Running: logdoctor census", "demo: census (Spark start, census, HTML report)"),
    ("Step 3", "demo: export to Iceberg"),
)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cache_state(env: dict[str, str]) -> str:
    uv = Path(env.get("UV_CACHE_DIR") or Path.home() / ".cache" / "uv")
    pip = Path(env.get("PIP_CACHE_DIR") or Path.home() / ".cache" / "pip")
    size = {p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) for p in (uv, pip)}
    return ", ".join(f"{p} {size[p] / 1e6:,.0f} MB" for p in (uv, pip))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=str(ROOT), help="the repository to clone (default: this checkout)")
    ap.add_argument("--no-shared", action="store_true", help="no ../shared beside the clone")
    ap.add_argument("--cold", action="store_true", help="empty pip and uv caches")
    ap.add_argument("--installer", choices=("uv", "pip"), default="uv")
    ap.add_argument("--keep", action="store_true", help="keep the clone (it is removed otherwise)")
    args = ap.parse_args()

    base = Path(tempfile.mkdtemp(prefix="logdoctor-bench-demo-"))
    clone = base / "p"
    subprocess.run(["git", "clone", "--quiet", args.source, str(clone)], check=True)
    shared = ROOT.parent / "shared"
    if not args.no_shared and shared.is_dir():
        (base / "shared").symlink_to(shared)
    env = dict(os.environ, INSTALL_ENV_VERBOSE="1")
    if args.cold:
        for name, var in (("pip-cache", "PIP_CACHE_DIR"), ("uv-cache", "UV_CACHE_DIR")):
            (base / name).mkdir()
            env[var] = str(base / name)
    git_log = ["git", "-C", str(clone), "log", "-1", "--format=%h %s"]
    head = subprocess.run(git_log, capture_output=True, text=True, check=False).stdout.strip()
    print(f"clone of {args.source} at {head[:70]} in {clone}")
    shared_state = "present" if (base / "shared").exists() else "absent"
    print(f"../shared: {shared_state}; installer {args.installer}")
    print(f"caches before: {cache_state(env)}")
    print(f"load before: {load()}")
    started = time.perf_counter()
    marks: list[tuple[float, str]] = []
    cmd = ["make", "demo", f"INSTALLER={args.installer}"]
    with subprocess.Popen(
        cmd, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            t = time.perf_counter() - started
            sys.stdout.write(f"{t:7.1f}  {line}")
            for prefix, name in PHASES:
                if line.startswith(prefix):
                    marks.append((t, name))
        rc = proc.wait()
    total = time.perf_counter() - started
    print(f"\nmake demo: exit {rc}, {total:.1f} s; load after: {load()}")
    print("| phase | s |\n|---|---:|")
    ends = [t for t, _ in marks[1:]] + [total]
    print(f"| make's start, git clone excluded | {marks[0][0] if marks else total:.1f} |")
    for (t, name), end in zip(marks, ends, strict=True):
        print(f"| {name} | {end - t:.1f} |")
    print(f"| **total** | **{total:.1f}** |")
    if args.keep:
        print(f"kept: {base}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

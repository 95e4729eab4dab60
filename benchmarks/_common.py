"""Helpers shared by the benchmarks: machine description, timing, cached sample segments in /tmp."""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from logdoctor.sample.records import RecordDataSpec, write_segment

BENCH_TMP = Path(os.environ.get("LOGDOCTOR_BENCH_TMP", "/tmp/logdoctor-bench"))


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores (nproc), {model}, Python {platform.python_version()}, {platform.system()}"


def command() -> str:
    return " ".join([".venv/bin/python", *sys.argv])


def segment(spec: RecordDataSpec, name: str) -> Path:
    """A generated segment in /tmp (never in the repo), reused while its spec is unchanged."""
    BENCH_TMP.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(repr(sorted(asdict(spec).items())).encode()).hexdigest()[:10]
    path = BENCH_TMP / f"{name}-{digest}.log"
    if not path.exists():
        t0 = time.perf_counter()
        tmp = path.with_suffix(".partial")
        info = write_segment(tmp, spec, keep_batches=False)
        tmp.rename(path)
        print(f"  generated {path} ({info.size / 1e6:.0f} MB, {info.batch_count} batches, "
              f"{info.record_count} records) in {time.perf_counter() - t0:.1f}s", flush=True)
    return path


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` runs (one core: everything here is single-threaded)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result

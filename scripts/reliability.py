"""The reliability figures of docs/reliability.md, measured the way the audit of issue 24 measured them.

    .venv/bin/python scripts/reliability.py bombs   [--mib 256]        decompression memory
    .venv/bin/python scripts/reliability.py sparse  [--gib 4]          a .log with a hole
    .venv/bin/python scripts/reliability.py hostile                    hostile dirs, killed runs
    .venv/bin/python scripts/reliability.py fuzz    [--examples 3000]  mutated real files
    .venv/bin/python scripts/reliability.py kill    [--trials 50]      external kill -9 trials

Each prints one JSON line per measurement (also appended to --report FILE). ``bombs`` and ``sparse`` run
the real command lines as subprocesses and take their peak memory as the sum of the resident sets of
the whole process tree (the command, Spark's JVM and its Python workers), sampled every 50 ms from
/proc, and the largest single process besides. The rest run the test
suites that hold the trials (tests/repair/test_external_kill.py, tests/fuzz, tests/checks/
test_hostile_dirs.py, test_sparse_logs.py, tests/repair/test_hostile_runs.py) at the size asked.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"}


# --- measuring a command ------------------------------------------------------------------------------


def _tree_rss(root: int) -> tuple[int, int]:
    """Resident bytes of ``root`` and every descendant (from /proc): (their sum, the largest one)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid = int(fields[1])
            with open(f"/proc/{entry}/statm") as f:
                rss[int(entry)] = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total = largest = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        largest = max(largest, rss.get(pid, 0))
        todo.extend(children.get(pid, ()))
    return total, largest


def measure(args: list[str], timeout: float = 1800) -> dict:
    """Run ``logdoctor ARGS``; its exit code, wall time and peak memory (tree sum and largest process)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([PY, "-m", "logdoctor", *args], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    peak = largest = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak, largest
        while not done.wait(0.05):
            total, one = _tree_rss(proc.pid)
            peak, largest = max(peak, total), max(largest, one)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _, err = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    return {
        "command": "logdoctor " + " ".join(args),
        "exit": proc.returncode,
        "seconds": round(time.monotonic() - t0, 1),
        "peak_tree_mb": round(peak / 2**20),
        "largest_process_mb": round(largest / 2**20),
        "stderr_tail": err.strip().splitlines()[-1][:200] if err.strip() else "",
    }


# --- decompression bombs ------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def bomb_batch(decompressed: int, value_size: int = 64 * 1024) -> tuple[bytes, int]:
    """A CRC-valid gzip v2 batch whose records section decompresses to about ``decompressed`` bytes of
    records with zero values (compressed as it is made: never all in memory). (bytes, record count)."""
    import crc32c

    count = max(1, decompressed // (value_size + 16))
    comp = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = []
    value = bytes(value_size)
    for i in range(count):
        body = b"\x00" + _varint(0) + _varint(i) + _varint(-1) + _varint(value_size) + value + _varint(0)
        parts.append(comp.compress(_varint(len(body)) + body))
    parts.append(comp.flush())
    records = b"".join(parts)
    ts = 1_700_000_000_000
    # attributes .. records: the part the CRC covers (DefaultRecordBatch)
    tail = struct.pack(">hiqqqhii", 1, count - 1, ts, ts, -1, -1, -1, count) + records
    crc = crc32c.crc32c(tail)
    head = struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc)
    return head + tail, count


def bombs(mib: int) -> list[dict]:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    out = []
    with tempfile.TemporaryDirectory(prefix="logdoctor-bombs-") as tmp:
        spec = TopicSpec("bombs", partitions=1, records_per_partition=1)
        root, _ = generate_log_dir(Path(tmp) / "logs", [spec])
        (log,) = sorted(root.glob("bombs-0/*.log"))
        for index in log.parent.glob("*index"):
            index.unlink()
        data, count = bomb_batch(mib << 20)
        log.write_bytes(data)
        facts = {"bomb_mib": mib, "compressed_bytes": len(data), "records": count}
        for args in (
            ["dump", "--print-data", str(log)],
            ["export", str(root), "--out", str(Path(tmp) / "out"), "--master", "local[1]"],
        ):
            out.append({**facts, **measure(args)})
    return out


# --- a sparse .log ------------------------------------------------------------------------------------


def sparse(gib: int) -> list[dict]:
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    out = []
    with tempfile.TemporaryDirectory(prefix="logdoctor-sparse-") as tmp:
        spec = TopicSpec("orders", partitions=1, records_per_partition=200)
        root, _ = generate_log_dir(Path(tmp) / "logs", [spec])
        (log,) = sorted(root.glob("orders-0/*.log"))
        with open(log, "r+b") as f:
            f.truncate(log.stat().st_size + (gib << 30))
        facts = {"hole_gib": gib, "allocated_bytes": log.stat().st_blocks * 512}
        for args in (
            ["scan", "--quick", str(root)],
            ["scan", "--deep", str(root)],
            ["retention", str(root)],
            ["dump", "--deep", str(log)],
            ["repair", str(root), "--apply", "--backup-dir", str(Path(tmp) / "backup"), "--jobs", "1"],
        ):
            row = {**facts, **measure(args)}
            if args[0] == "repair":
                tails = list((Path(tmp) / "backup").rglob("*.tail"))
                row["backup_allocated_bytes"] = sum(p.stat().st_blocks * 512 for p in tails)
            out.append(row)
    return out


# --- the suites ---------------------------------------------------------------------------------------


def _pytest(args: list[str], env: dict[str, str] | None = None) -> dict:
    t0 = time.monotonic()
    p = subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=REPO,
                       env={**os.environ, **(env or {})}, capture_output=True, text=True)  # fmt: skip
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-300:]
    return {"pytest": " ".join(args), "env": env or {}, "exit": p.returncode, "result": last,
            "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("what", choices=["bombs", "sparse", "hostile", "fuzz", "kill"])
    ap.add_argument("--mib", type=int, default=256, help="bombs: MiB a batch decompresses to")
    ap.add_argument("--gib", type=int, default=4, help="sparse: GiB of hole")
    ap.add_argument("--examples", type=int, default=3000, help="fuzz: inputs per parser test")
    ap.add_argument("--trials", type=int, default=50, help="kill: trials per command")
    ap.add_argument("--report", help="append the JSON lines to this file")
    a = ap.parse_args()
    if a.what == "bombs":
        rows = bombs(a.mib)
    elif a.what == "sparse":
        rows = sparse(a.gib)
    elif a.what == "hostile":
        rows = [_pytest(["tests/checks/test_hostile_dirs.py", "tests/checks/test_sparse_logs.py",
                         "tests/repair/test_hostile_runs.py"])]  # fmt: skip
    elif a.what == "fuzz":
        rows = [_pytest(["tests/fuzz"], {"FUZZ_EXAMPLES": str(a.examples)})]
    else:
        report = a.report or os.path.join(tempfile.gettempdir(), "logdoctor-kill-report.jsonl")
        env = {"LOGDOCTOR_KILL_TRIALS": str(a.trials), "LOGDOCTOR_KILL_REPORT": report}
        rows = [_pytest(["-m", "slow", "-s", "tests/repair/test_external_kill.py"], env)]
    for row in rows:
        line = json.dumps(row)
        print(line, flush=True)
        if a.report and a.what != "kill":
            with open(a.report, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()

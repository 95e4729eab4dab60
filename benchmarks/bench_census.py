"""`logdoctor census` over generated inventories (100 vs 1,000 brokers x ~4,000 replicas) on local[2], and
`logdoctor inventory` on bench_scan.py's 100,000-segment log dir at --depth quick and default.

    .venv/bin/python benchmarks/bench_census.py --brokers 100 1000 --replicas 4000

Fleet: ``--brokers`` brokers, each with two log dirs and ~``--replicas`` replicas; partitions have three
replicas on brokers i, i+1, i+2 (mod brokers), 100 partitions per topic, topic ids and the cluster id from
logdoctor.sample (``kafka_uuid``). Planted: a lagging replica in every 97th partition (500 offsets behind,
below the high watermark: REPLICA_LAG errors), an under-replicated partition every 101st (its third
replica missing), a nearly full disk (96%) on every 20th broker (LOG_DIR_NEARLY_FULL), three INDEX_CORRUPT
findings on every 10th broker. The inventory files (one Parquet file per broker, schema of
logdoctor.checks.inventory) are generated once per size and cached in /tmp/logdoctor-bench.

Measured: wall time of the ``logdoctor census DIR --out OUT --master local[2]`` process (Spark start-up
included), and the peak RSS of the driver's two processes, sampled every 0.1 s from /proc: the Python
driver (the CLI) and the JVM it starts (in local mode the JVM also runs the executor threads; its heap
is capped by spark.driver.memory, 1 GiB by default); the Python workers (pyspark.daemon) are listed apart.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, machine, many_segments_dir

REPO = Path(__file__).resolve().parent.parent
PY = Path(sys.executable)
LOGDOCTOR = PY.parent / "logdoctor"


def fleet_inventories(brokers: int, replicas: int, seed: int = 7) -> Path:
    """One inventory file per broker of a generated fleet (cached)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from logdoctor.checks.inventory import SCHEMA_VERSION, arrow_schema
    from logdoctor.sample.logdir import kafka_uuid

    folder = BENCH_TMP / f"census-inventories-{brokers}b-{replicas}r-v{SCHEMA_VERSION}"
    if (folder / "DONE").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    rng = random.Random(seed)
    schema = arrow_schema()
    per = -(-replicas // 3)  # partitions whose first replica is on a broker
    partitions = per * brokers
    topics = [kafka_uuid(rng) for _ in range(-(-partitions // 100))]
    cluster = kafka_uuid(rng)
    now = 1_790_000_000_000
    for b in range(brokers):
        dirs = [f"/var/lib/kafka/data-{d}" for d in (0, 1)]
        rows: dict[str, list] = {name: [] for name in schema.names}

        def add(rows: dict[str, list] = rows, **values: object) -> None:
            for name in schema.names:
                rows[name].append(values.get(name))

        base = {"schema_version": SCHEMA_VERSION, "broker": f"broker-{b}", "broker_id": b}
        add(**base, record="broker", cluster_id=cluster, collected_at_ms=now, depth="default",
            broker_running=True, host=f"kafka-{b}")  # fmt: skip
        full = b % 20 == 0
        for d, path in enumerate(dirs):
            total = 2_000_000_000_000
            used = int(total * (0.96 if full and d == 0 else 0.40 + (b % 7) / 100))
            add(**base, record="log_dir", log_dir=path, real_path=path, cluster_id=cluster, mode="zookeeper",
                directory_id=None, locked=True, clean_shutdown=False, partitions=replicas // 2,
                disk_total_bytes=total, disk_used_bytes=used, disk_available_bytes=total - used,
                disk_used_fraction=used / total, disk_used_percent=-(-100 * used // total),
                disk_source="statvfs", checkpoints=[])  # fmt: skip
        # partitions i with a replica here: i = b - k (mod brokers) + m * brokers, replica number k
        m = np.arange(per)
        for k in range(3):
            first = (b - k) % brokers
            ids = first + m * brokers
            ids = ids[ids < partitions]
            if k == 2:
                ids = ids[ids % 101 != 0]  # under-replicated: the third replica is gone
            leo = 1_000_000 + (ids % 1000) * 1000
            lagging = (ids % 97 == 0) & (k == 2)
            own_leo = np.where(lagging, leo - 500, leo)
            for i, end, lag in zip(ids.tolist(), own_leo.tolist(), lagging.tolist(), strict=True):
                topic, part = divmod(i, 100)
                d = i % 2
                add(**base, record="replica", log_dir=dirs[d], topic=f"topic-{topic:05d}", partition=part,
                    kind="log", path=f"{dirs[d]}/topic-{topic:05d}-{part}", topic_id=topics[topic],
                    log_start_offset=0, log_end_offset=end, high_watermark=end + 500 if lag else end,
                    recovery_point=end, segments=1 + end // 100_000, bytes=end * 120, findings=0,
                    leader_epochs=[{"epoch": 0, "start_offset": 0}])  # fmt: skip
        if b % 10 == 0:
            for j in range(3):
                path = f"{dirs[0]}/topic-{j:05d}-0/00000000000000000000.index"
                add(**base, record="finding", log_dir=dirs[0], code="INDEX_CORRUPT", severity="error",
                    path=path, message=f"{path}: offsets go backwards", fix="rebuild")  # fmt: skip
        pq.write_table(pa.table(rows, schema=schema), folder / f"broker-{b:04d}.parquet", compression="zstd")
    (folder / "DONE").write_text("")
    print(f"  generated {brokers} inventories in {time.perf_counter() - t0:.1f}s -> {folder}", flush=True)
    return folder


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _rss(pid: int) -> tuple[str, int]:
    try:
        with open(f"/proc/{pid}/status") as fh:
            text = fh.read()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "", 0
    rss = next((int(line.split()[1]) for line in text.splitlines() if line.startswith("VmRSS:")), 0)
    kind = (
        "jvm"
        if "java" in cmd.split(" ", 1)[0]
        else "worker"
        if "pyspark.daemon" in cmd or "worker" in cmd
        else "py"
    )
    return kind, rss * 1024


def run_census(folder: Path, out: Path) -> dict[str, float]:
    env = dict(os.environ, PYSPARK_PYTHON=str(PY))
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(LOGDOCTOR), "census", str(folder), "--out", str(out), "--master", "local[2]", "--json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    peak = {"py": 0, "jvm": 0, "worker": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            now = {"py": 0, "jvm": 0, "worker": 0}
            for p in _tree(proc.pid):
                kind, rss = _rss(p)
                if kind == "py" and p != proc.pid:
                    kind = "worker"
                if kind:
                    now[kind] = max(now[kind], rss) if kind != "worker" else now[kind] + rss
            for k in peak:
                peak[k] = max(peak[k], now[k])
            time.sleep(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    t.join()
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"census failed ({proc.returncode}): {err.decode()[-2000:]}")
    return {"wall": wall, **{k: v / 2**20 for k, v in peak.items()}, "rc": proc.returncode}


def inventory_times(repeat: int) -> list[tuple[str, float]]:
    log_dir = many_segments_dir(2000, 50)
    out = []
    for depth in ("quick", "default"):
        best = float("inf")
        for _ in range(repeat):
            target = BENCH_TMP / f"inventory-{depth}.parquet"
            t0 = time.perf_counter()
            subprocess.run(
                [str(LOGDOCTOR), "inventory", str(log_dir), "--out", str(target), "--depth", depth],
                check=True, capture_output=True,
            )  # fmt: skip
            best = min(best, time.perf_counter() - t0)
        out.append((depth, best))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--replicas", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-inventory", action="store_true")
    ap.add_argument("--skip-census", action="store_true")
    args = ap.parse_args()
    print(machine())
    if not args.skip_census:
        print(
            "| brokers | replicas | inventories (MB) | census wall | Python driver peak RSS "
            "| driver JVM peak RSS | Python workers peak RSS (sum) | exit |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for brokers in args.brokers:
            folder = fleet_inventories(brokers, args.replicas)
            size = sum(f.stat().st_size for f in folder.glob("*.parquet")) / 2**20
            runs = [run_census(folder, BENCH_TMP / f"census-out-{brokers}") for _ in range(args.repeat)]
            r = min(runs, key=lambda x: x["wall"])
            replicas = brokers * args.replicas
            print(f"| {brokers:,} | ~{replicas:,} | {size:.0f} | {r['wall']:.1f} s | {r['py']:.0f} MiB | "
                  f"{r['jvm']:.0f} MiB | {r['worker']:.0f} MiB | {r['rc']} |", flush=True)  # fmt: skip
    if not args.skip_inventory:
        print("\n| `logdoctor inventory` on 100,000 segments | best wall (CLI, with start-up) |")
        print("|---|---|")
        for depth, best in inventory_times(args.repeat):
            print(f"| --depth {depth} | {best:.2f} s |", flush=True)


if __name__ == "__main__":
    main()

"""`logdoctor census` over generated inventories (~4,000 replicas per broker) on local[2] and on a Spark
standalone cluster, and `logdoctor inventory` on bench_scan.py's 100,000-segment log dir at --depth quick
and default; with ``--floor``, the census on local[2] against its floor, alternated.

    .venv/bin/python benchmarks/bench_census.py --brokers 100 1000 --replicas 4000
    .venv/bin/python benchmarks/bench_census.py --brokers 100 1000 3000 --master --standalone 2 \
        --skip-inventory
    .venv/bin/python benchmarks/bench_census.py --brokers 1000 --floor --repeat 2

Fleet: ``--brokers`` brokers, each with two log dirs and ~``--replicas`` replicas; partitions have three
replicas on brokers i, i+1, i+2 (mod brokers), 100 partitions per topic, topic ids and the cluster id from
logdoctor.sample (``kafka_uuid``). Planted: a lagging replica in every 97th partition (500 offsets behind,
below the high watermark: REPLICA_LAG errors), an under-replicated partition every 101st (its third
replica missing), a nearly full disk (96%) on every 20th broker (LOG_DIR_NEARLY_FULL), three INDEX_CORRUPT
findings on every 10th broker. The inventory files (one Parquet file per broker, schema of
logdoctor.checks.inventory) are generated once per size and cached in /tmp/logdoctor-bench: one Arrow table
per broker, its replica rows from numpy columns (nulls in the columns they do not set), ``--jobs`` processes
(2: 1,000 brokers in ~35 s); the same rows, in the same order, as the row-by-row generator it replaced.

Measured: wall time of the ``logdoctor census DIR --out OUT --master M --json`` process (Spark start-up
included), the load average (1 min) at its start and end, and the peak RSS sampled every 0.1 s from /proc:
of the driver's two processes, the Python driver (the CLI) and the JVM it starts (in local mode the JVM also
runs the executor threads; its heap is capped by spark.driver.memory, 1 GiB by default), with the Python
workers under it listed apart; on a standalone cluster (``--standalone N``: tests/spark/standalone.py's master
and N one-core workers on 127.0.0.1) the executors are JVMs of their own (CoarseGrainedExecutorBackend, under
the workers), summed apart, with their Python workers. The executors import logdoctor from the src the driver
imports (PYTHONPATH, and ``spark.executorEnv.PYTHONPATH``); the run prints which src their workers had.
``--conf KEY=VALUE`` passes a Spark conf to the census, ``--event-log DIR`` turns on Spark's event log there.
The rows of BENCHMARKS.md's "Census" table follow (``benchmarks/update_table.py`` puts them in place).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, TableRows, machine, many_segments_dir

REPO = Path(__file__).resolve().parent.parent
PY = Path(sys.executable)
LOGDOCTOR = PY.parent / "logdoctor"


def fleet_inventories(brokers: int, replicas: int, seed: int = 7, jobs: int = 2) -> Path:
    """One inventory file per broker of a generated fleet (cached); ``jobs`` processes write them."""
    from logdoctor.checks.inventory import SCHEMA_VERSION

    folder = BENCH_TMP / f"census-inventories-{brokers}b-{replicas}r-v{SCHEMA_VERSION}"
    if (folder / "DONE").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    spans = [range(j, brokers, jobs) for j in range(jobs)]
    if jobs == 1:
        _write_inventories(folder, brokers, replicas, seed, spans[0])
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            pool.starmap(_write_inventories, [(folder, brokers, replicas, seed, s) for s in spans])
    (folder / "DONE").write_text("")
    print(f"  generated {brokers} inventories in {time.perf_counter() - t0:.1f}s -> {folder}", flush=True)
    return folder


def _fleet_ids(brokers: int, replicas: int, seed: int) -> tuple[list[str], str]:
    """The topic ids and the cluster id (one random sequence: the same for every broker's file)."""
    from logdoctor.sample.logdir import kafka_uuid

    rng = random.Random(seed)
    partitions = -(-replicas // 3) * brokers
    topics = [kafka_uuid(rng) for _ in range(-(-partitions // 100))]
    return topics, kafka_uuid(rng)


def _write_inventories(folder: Path, brokers: int, replicas: int, seed: int, which: range) -> None:
    import pyarrow.parquet as pq

    topics, cluster = _fleet_ids(brokers, replicas, seed)
    for b in which:
        table = broker_inventory(b, brokers, replicas, topics, cluster)
        pq.write_table(table, folder / f"broker-{b:04d}.parquet", compression="zstd")


def broker_inventory(b: int, brokers: int, replicas: int, topics: list[str], cluster: str) -> Any:
    """Broker ``b``'s inventory as one Arrow table: its few broker, log-dir and finding rows from dicts,
    its replica rows from numpy columns (every column it does not set is null)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from logdoctor.checks.inventory import SCHEMA_VERSION, arrow_schema

    schema = arrow_schema()
    now = 1_790_000_000_000
    per = -(-replicas // 3)  # partitions whose first replica is on a broker
    partitions = per * brokers
    dirs = [f"/var/lib/kafka/data-{d}" for d in (0, 1)]
    base = {"schema_version": SCHEMA_VERSION, "broker": f"broker-{b}", "broker_id": b}
    head: list[dict[str, object]] = [
        dict(base, record="broker", cluster_id=cluster, collected_at_ms=now, depth="default",
             broker_running=True, host=f"kafka-{b}")
    ]  # fmt: skip
    full = b % 20 == 0
    for d, path in enumerate(dirs):
        total = 2_000_000_000_000
        used = int(total * (0.96 if full and d == 0 else 0.40 + (b % 7) / 100))
        head.append(
            dict(base, record="log_dir", log_dir=path, real_path=path, cluster_id=cluster, mode="zookeeper",
                 directory_id=None, locked=True, clean_shutdown=False, partitions=replicas // 2,
                 disk_total_bytes=total, disk_used_bytes=used, disk_available_bytes=total - used,
                 disk_used_fraction=used / total, disk_used_percent=-(-100 * used // total),
                 disk_source="statvfs", checkpoints=[])
        )  # fmt: skip
    tail: list[dict[str, object]] = []
    if b % 10 == 0:
        for j in range(3):
            path = f"{dirs[0]}/topic-{j:05d}-0/00000000000000000000.index"
            tail.append(
                dict(base, record="finding", log_dir=dirs[0], code="INDEX_CORRUPT", severity="error",
                     path=path, message=f"{path}: offsets go backwards", fix="rebuild")
            )  # fmt: skip
    # partitions i with a replica here: i = b - k (mod brokers) + m * brokers, replica number k
    m = np.arange(per, dtype=np.int64)
    parts_ids, parts_end, parts_lag = [], [], []
    for k in range(3):
        ids = (b - k) % brokers + m * brokers
        ids = ids[ids < partitions]
        if k == 2:
            ids = ids[ids % 101 != 0]  # under-replicated: the third replica is gone
        leo = 1_000_000 + (ids % 1000) * 1000
        lagging = (ids % 97 == 0) & (k == 2)
        parts_ids.append(ids)
        parts_end.append(np.where(lagging, leo - 500, leo))
        parts_lag.append(lagging)
    ids, end, lag = np.concatenate(parts_ids), np.concatenate(parts_end), np.concatenate(parts_lag)
    n = len(ids)
    topic, part, d = ids // 100, ids % 100, ids % 2
    name = pc.binary_join_element_wise(
        "topic-", pc.utf8_lpad(pa.array(topic).cast(pa.string()), width=5, padding="0"), ""
    )
    log_dir = pa.array(dirs).take(pa.array(d))
    path = pc.binary_join_element_wise(
        pc.binary_join_element_wise(log_dir, name, "/"), pa.array(part).cast(pa.string()), "-"
    )
    epochs_type = schema.field("leader_epochs").type
    epoch = pa.StructArray.from_arrays(
        [pa.array(np.zeros(n, np.int32)), pa.array(np.zeros(n, np.int64))],
        fields=list(epochs_type.value_type),
    )
    columns = {
        "schema_version": pa.array(np.full(n, SCHEMA_VERSION, np.int32)),
        "record": pa.array(np.full(n, "replica", object), pa.string()),
        "broker": pa.array(np.full(n, f"broker-{b}", object), pa.string()),
        "broker_id": pa.array(np.full(n, b, np.int32)),
        "log_dir": log_dir,
        "topic": name,
        "partition": pa.array(part.astype(np.int32)),
        "kind": pa.array(np.full(n, "log", object), pa.string()),
        "path": path,
        "topic_id": pa.array(topics).take(pa.array(topic)),
        "log_start_offset": pa.array(np.zeros(n, np.int64)),
        "log_end_offset": pa.array(end),
        "high_watermark": pa.array(np.where(lag, end + 500, end)),
        "recovery_point": pa.array(end),
        "segments": pa.array((1 + end // 100_000).astype(np.int32)),
        "bytes": pa.array(end * 120),
        "findings": pa.array(np.zeros(n, np.int32)),
        "leader_epochs": pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), epoch),
    }
    body = pa.table(
        [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema],
        schema=schema,
    )
    return pa.concat_tables(
        [pa.Table.from_pylist(head, schema=schema), body, pa.Table.from_pylist(tail, schema=schema)]
    ).combine_chunks()


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


def _executors() -> list[int]:
    """This benchmark's standalone cluster's executor JVMs (CoarseGrainedExecutorBackend, run in its workers'
    work dirs: another cluster's on the machine are not counted)."""
    out = []
    work = str(BENCH_TMP / "standalone")
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    executor = b"CoarseGrainedExecutorBackend" in fh.read()
                if executor and os.readlink(f"/proc/{entry}/cwd").startswith(work):
                    out.append(int(entry))
            except OSError:
                continue
    return out


def run_census(
    folder: Path,
    out: Path,
    master: str = "local[2]",
    conf: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    env = dict(env or os.environ, PYSPARK_PYTHON=str(PY))
    shutil.rmtree(out, ignore_errors=True)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    confs = [a for c in conf for a in ("--conf", c)]
    proc = subprocess.Popen(
        [str(LOGDOCTOR), "census", str(folder), "--out", str(out), "--master", master, "--json", *confs],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    kinds = ("py", "jvm", "worker", "executor_jvm", "executor_py")
    peak = dict.fromkeys(kinds, 0)
    sources: set[str] = set()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            now = dict.fromkeys(kinds, 0)
            for p in _tree(proc.pid):
                kind, rss = _rss(p)
                if kind == "py" and p != proc.pid:
                    kind = "worker"
                if kind:
                    now[kind] = max(now[kind], rss) if kind != "worker" else now[kind] + rss
            for e in _executors():  # a standalone cluster's: not the driver's children
                for p in _tree(e):
                    kind, rss = _rss(p)
                    now["executor_jvm" if kind == "jvm" else "executor_py"] += rss
                    if kind != "jvm" and len(sources) < 4:
                        sources.add(_python_path(p))
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
    return {
        "wall": wall, **{k: v / 2**20 for k, v in peak.items()}, "rc": proc.returncode,
        "load": (load0, os.getloadavg()[0]), "executor_src": sorted(sources - {""}),
    }  # fmt: skip


#: the census's floor (issue 60): a fresh ``local[2]`` session reads every inventory once, groups the replica
#: rows by partition and writes the result as Parquet; the process's wall, Spark's start included
FLOOR = """
import sys
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
s = SparkSession.builder.master("local[2]").getOrCreate()
rep = s.read.parquet(sys.argv[1]).where(F.col("record") == "replica")
rep.groupBy("cluster_id", "topic", "partition").agg(
    F.count(F.lit(1)).alias("replicas"), F.max("log_end_offset").alias("max_log_end_offset"),
    F.min("log_end_offset").alias("min_log_end_offset"), F.sum("bytes").alias("bytes"),
).write.mode("overwrite").parquet(sys.argv[2])
s.stop()
"""


def run_floor(folder: Path, out: Path) -> dict[str, Any]:
    """The floor's process (:data:`FLOOR`) on the inventories in ``folder``: its wall and load."""
    shutil.rmtree(out, ignore_errors=True)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    # the inventory files only (the folder also holds the generator's DONE mark)
    files = str(folder / "*.parquet")
    subprocess.run([str(PY), "-c", FLOOR, files, str(out)], check=True, capture_output=True)
    return {"wall": time.perf_counter() - t0, "load": (load0, os.getloadavg()[0])}


def floor_rows(
    brokers: Sequence[int], replicas: int, repeat: int, jobs: int, env: dict[str, str], conf: Sequence[str]
) -> None:
    """The census on ``local[2]`` and its floor, alternated ``repeat`` times per fleet size: a row each, and
    the ratio of each census to the floor run beside it; with confs (``--conf``), the census with them too,
    in each round."""
    print(
        "\n| brokers | replicas | run | census | census wall | floor wall | ratio | load (census; floor) "
        "| driver JVM |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    extra = [c for c in conf if not c.startswith(("spark.executorEnv.", "spark.eventLog."))]
    variants = {"as is": [c for c in conf if c not in extra], **({" ".join(extra): conf} if extra else {})}
    for n in brokers:
        folder = fleet_inventories(n, replicas, jobs=jobs)
        for i in range(repeat):
            for name, confs in variants.items():
                c = run_census(folder, BENCH_TMP / f"census-out-{n}", "local[2]", confs, env)
                f = run_floor(folder, BENCH_TMP / f"census-floor-{n}")
                print(
                    f"| {n:,} | ~{n * replicas:,} | {i + 1} | {name} | {c['wall']:.1f} s | {f['wall']:.1f} s "
                    f"| {c['wall'] / f['wall']:.2f}x | {c['load'][0]:.1f}/{c['load'][1]:.1f}; "
                    f"{f['load'][0]:.1f}/{f['load'][1]:.1f} | {c['jvm']:.0f} MiB |",
                    flush=True,
                )


def _python_path(pid: int) -> str:
    """The PYTHONPATH entry of a worktree's src an executor's Python worker runs with ('' if none)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = dict(e.split(b"=", 1) for e in fh.read().split(b"\0") if b"=" in e)
    except OSError:
        return ""
    return next((p for p in env.get(b"PYTHONPATH", b"").decode().split(":") if p.endswith("/src")), "")


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
    ap.add_argument("--master", nargs="*", default=["local[2]"], help="Spark masters to run the census on")
    ap.add_argument(
        "--standalone", type=int, default=0, metavar="WORKERS",
        help="also run on a standalone cluster of WORKERS one-core workers (tests/spark/standalone.py)",
    )  # fmt: skip
    ap.add_argument("--conf", action="append", default=[], help="a Spark conf for the census (KEY=VALUE)")
    ap.add_argument("--event-log", type=Path, help="write Spark's event logs of the censuses to this folder")
    ap.add_argument("--jobs", type=int, default=2, help="processes that generate the inventories")
    ap.add_argument("--skip-inventory", action="store_true")
    ap.add_argument("--skip-census", action="store_true")
    ap.add_argument(
        "--floor", action="store_true",
        help="only the census on local[2] against its floor (a session: read, group, write), alternated",
    )  # fmt: skip
    args = ap.parse_args()
    print(machine())
    table = TableRows()
    conf = list(args.conf)
    if args.event_log:
        args.event_log.mkdir(parents=True, exist_ok=True)
        conf += ["spark.eventLog.enabled=true", f"spark.eventLog.dir=file://{args.event_log.resolve()}"]
    # the executors import logdoctor from the src this run's driver imports (a worktree's, not the venv's)
    import logdoctor

    src = str(Path(logdoctor.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])))
    conf.append(f"spark.executorEnv.PYTHONPATH={env['PYTHONPATH']}")
    if args.floor:
        floor_rows(args.brokers, args.replicas, args.repeat, args.jobs, env, conf)
        return
    if not args.skip_census:
        with contextlib.ExitStack() as stack:
            masters = {m: m for m in args.master}
            if args.standalone:
                sys.path.insert(0, str(REPO / "tests" / "spark"))
                from standalone import cluster_env, standalone_cluster

                os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the daemons' (and so the executors') too
                cluster = standalone_cluster(BENCH_TMP / "standalone", workers=args.standalone)
                url = stack.enter_context(cluster)
                env = cluster_env({"PYTHONPATH": env["PYTHONPATH"]})
                masters[f"standalone ({args.standalone} workers)"] = url
            print(
                "| master | brokers | replicas | inventories (MB) | census wall | load (start/end) "
                "| Python driver peak RSS | driver JVM peak RSS | Python workers under the driver (sum) "
                "| executor JVMs (sum) | executors' Python workers (sum) | exit |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|---|---|")
            for brokers in args.brokers:
                folder = fleet_inventories(brokers, args.replicas, jobs=args.jobs)
                size = sum(f.stat().st_size for f in folder.glob("*.parquet")) / 2**20
                for name, master in masters.items():
                    out = BENCH_TMP / f"census-out-{brokers}"
                    runs = [run_census(folder, out, master, conf, env) for _ in range(args.repeat)]
                    r = min(runs, key=lambda x: x["wall"])
                    replicas = brokers * args.replicas
                    print(
                        f"| {name} | {brokers:,} | ~{replicas:,} | {size:.0f} | {r['wall']:.1f} s "
                        f"| {r['load'][0]:.1f} / {r['load'][1]:.1f} | {r['py']:.0f} MiB | {r['jvm']:.0f} MiB "
                        f"| {r['worker']:.0f} MiB | {r['executor_jvm']:.0f} MiB | {r['executor_py']:.0f} MiB "
                        f"| {r['rc']} |",
                        flush=True,
                    )
                    table.add(
                        f"census of {brokers:,} brokers x {args.replicas:,} replicas, {name}",
                        f"{r['wall']:.1f} s; Python driver {r['py']:.0f} MiB, driver JVM {r['jvm']:.0f} MiB",
                    )
                    if r["executor_src"]:
                        print(f"  executors' Python workers import from {r['executor_src']}", file=sys.stderr)
    if not args.skip_inventory:
        print("\n| `logdoctor inventory` on 100,000 segments | best wall (CLI, with start-up) |")
        print("|---|---|")
        for depth, best in inventory_times(args.repeat):
            print(f"| --depth {depth} | {best:.2f} s |", flush=True)
            table.add(
                f"`inventory --depth {depth}` of 100,000 segments", f"{best:.2f} s best of {args.repeat}"
            )
    table.print()


if __name__ == "__main__":
    main()

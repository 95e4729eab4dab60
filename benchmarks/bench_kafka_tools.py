"""logdoctor against Kafka's own tools and Kafka's own broker, in the same run, on data a real broker wrote.

    .venv/bin/python benchmarks/bench_kafka_tools.py [--records 1200000] [--segments 2000] [--repeat 3]
        [--parts dump,recovery,startup]

The broker is Kafka 4.4.0 as the tests start it (tests/kafka_cluster.py; `make test` installs it, or
`bash scripts/ensure-kafka.sh`), on 127.0.0.1. Three anchors:

- **dump**: one lz4 segment of ``--records`` records written by the broker (a producer with lz4 batches of
  up to 64 KiB, 100-byte values), then `logdoctor dump --deep SEGMENT` against Kafka's
  `kafka-dump-log.sh --deep-iteration --files SEGMENT` (org.apache.kafka.tools.DumpLogSegments), each
  printing to /dev/null, in pairs (logdoctor, Kafka) ``--repeat`` times: the median wall time, CPU (user +
  sys) and peak RSS (``wait4``) of each whole process, and records/s (logdoctor's output checked once,
  untimed: a record line for every record).
- **recovery**: a broker killed with SIGKILL while producing to 8 partitions; on one copy of its dir the
  broker's own recovery at the next start (its log's ``Loaded N logs in X ms``), on another `logdoctor repair
  DIR --apply` (whole process).
- **startup**: a log dir of ``--segments`` segments (time-rolled: ``segment.ms`` small, one batch a
  segment) whose index files were lost; the broker's start (its log loading, which rebuilds every index: one
  recovery thread per dir) against `logdoctor repair --apply` first (whole process: wall and CPU) and then
  the broker's start: KIP-263's situation, many segments to check at startup. Each start's own log says how
  many segments it rebuilt (LogLoader.loadSegmentFiles: "Could not find offset index file") and recovered
  as unflushed (recoverLog, from the recovery point on).

The rows of BENCHMARKS.md's "Kafka's own tools" table follow at the end (``benchmarks/update_table.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

import kafka_cluster  # noqa: E402
from _common import BENCH_TMP, TableRows, command, machine, ratio  # noqa: E402

LOGDOCTOR = ROOT / ".venv" / "bin" / "logdoctor"


def measured(
    argv: list[str], env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)
) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds (user + sys), peak RSS (KiB) and exit code of ``argv`` with stdout to
    /dev/null, measured with ``wait4`` (the process alone, not its tree's other children)."""
    import tempfile

    with open(os.devnull, "w") as sink, tempfile.TemporaryFile() as errors:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=errors, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    if proc.returncode not in ok_codes or "Exception in thread" in err:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode


def _cluster(root: Path, **config: object) -> kafka_cluster.KafkaCluster:
    shutil.rmtree(root, ignore_errors=True)
    return kafka_cluster.KafkaCluster(root, version=kafka_cluster.NEWEST, broker_config=config)


def _value(i: int) -> bytes:
    """100 bytes a little like a JSON event with an id and a digest in it: lz4 keeps about four fifths of
    it, as it does of real payloads, not nothing."""
    digest = hashlib.blake2b(i.to_bytes(8, "little"), digest_size=32).hexdigest()
    return f'{{"id":{i},"user":"u{i * 7919 % 100003}","sig":"{digest}"}}'.encode().ljust(100, b" ")


def _check_dump(segment: Path, records: int) -> None:
    """What is timed prints every record: `dump --deep` of the segment (once, outside the timing) has one
    record line a record and exits 0 (its record lines are written a batch at a time by
    formats.record_lines: a fast dump that printed less would be no anchor). The output is read as it comes,
    never held: this process's peak RSS is what each child forked from it starts with (Linux keeps the
    high-water mark across exec), so a 100 MB output held here would show in every ``wait4`` figure."""
    with subprocess.Popen([str(LOGDOCTOR), "dump", "--deep", str(segment)], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        lines = sum(1 for line in proc.stdout if line.startswith(b"    | offset "))
    if proc.returncode != 0 or lines != records:
        raise SystemExit(f"dump --deep of {segment}: exit {proc.returncode}, {lines} record lines")


def dump_anchor(records: int, repeat: int, table: TableRows) -> None:
    work = BENCH_TMP / "kafka-tools-dump"
    # named by its base offset, as DumpLogSegments needs (it parses the offset from the name)
    seg_copy = work / f"lz4-{records}" / "00000000000000000000.log"
    if not seg_copy.exists():
        cluster = _cluster(work / "cluster")
        with cluster:
            cluster.create_topic(
                "bench", 1, config={"segment.bytes": 1 << 30, "compression.type": "producer"}
            )
            producer = cluster.producer(compression_type="lz4", linger_ms=50, batch_size=65536)
            cluster.produce("bench", ((None, _value(i)) for i in range(records)), producer=producer)
            del producer  # closed while its broker runs
        seg = cluster.broker(1).log_dirs[0] / "bench-0" / "00000000000000000000.log"
        seg_copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(seg, seg_copy)
        shutil.rmtree(work / "cluster", ignore_errors=True)
    size = seg_copy.stat().st_size
    _check_dump(seg_copy, records)
    kafka_dump = str(kafka_cluster.kafka_bin(kafka_cluster.NEWEST) / "kafka-dump-log.sh")
    runs: dict[str, list[tuple[float, float, int, int]]] = {"logdoctor": [], "kafka": []}
    for _ in range(repeat):
        runs["logdoctor"].append(measured([str(LOGDOCTOR), "dump", "--deep", str(seg_copy)]))
        runs["kafka"].append(measured([kafka_dump, "--deep-iteration", "--files", str(seg_copy)]))
    med = {
        k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v), max(r[2] for r in v))
        for k, v in runs.items()
    }
    print(
        f"\n## dump --deep of one lz4 segment ({records:,} records, {size / 1e6:.0f} MB), "
        f"median of {repeat} pairs"
    )
    print("| tool | wall | CPU | peak RSS | records/s |\n|---|---|---|---|---|")
    for name, (wall, cpu, rss) in med.items():
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {rss / 1024:.0f} MiB | {records / wall:,.0f} |")
    lw, lc, lr = med["logdoctor"]
    kw, kc, kr = med["kafka"]
    label = f"lz4 segment written by Kafka 4.4.0, {records:,} records, {size / 1e6:.0f} MB"
    table.add(
        f"`dump --deep` vs DumpLogSegments --deep-iteration, {label}, wall",
        f"{lw:.2f} s ({records / lw:,.0f} records/s)",
        f"Kafka {kw:.2f} s ({records / kw:,.0f} records/s)",
        ratio(lw, kw),
    )
    table.add(
        f"`dump --deep` vs DumpLogSegments --deep-iteration, {label}, CPU",
        f"{lc:.2f} s",
        f"Kafka {kc:.2f} s",
        ratio(lc, kc),
    )
    table.add(
        f"`dump --deep` vs DumpLogSegments --deep-iteration, {label}, peak RSS",
        f"{lr / 1024:.0f} MiB",
        f"Kafka {kr / 1024:.0f} MiB",
        ratio(lr, kr),
    )


_LOADED = re.compile(r"Loaded (\d+) logs in (\d+)ms")


def _broker_load_ms(cluster: kafka_cluster.KafkaCluster) -> tuple[float, float]:
    """Start the cluster's broker on its dirs: (the broker's own log-loading time in ms, the wall time
    from the process's start to 'Kafka Server started' in s); then stop it."""
    node = cluster.broker(1)
    t0 = time.perf_counter()
    node.start()
    started = time.perf_counter() - t0
    loaded = [int(m.group(2)) for m in _LOADED.finditer(node.log())]
    node.stop()
    return float(sum(loaded)), started


def _copy_cluster(src: kafka_cluster.KafkaCluster, dst_root: Path) -> kafka_cluster.KafkaCluster:
    """A copy of a stopped cluster's whole folder that starts as the same cluster (its configs name its
    own dirs)."""
    shutil.rmtree(dst_root, ignore_errors=True)
    shutil.copytree(src.root, dst_root, symlinks=True)
    copy = kafka_cluster.KafkaCluster.__new__(kafka_cluster.KafkaCluster)
    copy.__dict__.update(src.__dict__)
    copy.root = dst_root
    copy.nodes = []
    for node in src.nodes:
        moved = kafka_cluster.Node(**{**node.__dict__, "proc": None})
        moved.folder = dst_root / node.folder.relative_to(src.root)
        moved.log_dirs = [dst_root / d.relative_to(src.root) for d in node.log_dirs]
        moved.config = {k: str(v).replace(str(src.root), str(dst_root)) for k, v in node.config.items()}
        copy.nodes.append(moved)
    return copy


def _repair(dirs: list[Path]) -> float:
    # exit 1: warnings left, such as UNCLEAN_SHUTDOWN (repair rebuilds and truncates; the recovery point
    # stays where the broker left it, so the broker still re-reads those segments at its start)
    wall, _cpu, _rss, _rc = measured([str(LOGDOCTOR), "repair", *map(str, dirs), "--apply"], ok_codes=(0, 1))
    return wall


def recovery_anchor(repeat: int, table: TableRows) -> None:
    work = BENCH_TMP / "kafka-tools-recovery"
    cluster = _cluster(work / "killed", **{"log.flush.interval.messages": 1 << 62})
    cluster.start()
    cluster.create_topic("bench", 8, config={"segment.bytes": 1 << 20})
    stop = threading.Event()

    def produce() -> None:
        producer = cluster.producer(compression_type="lz4", acks=1, enable_idempotence=False)
        i = 0
        while not stop.is_set():
            try:
                producer.produce("bench", value=_value(i), partition=i % 8)
            except BufferError:
                producer.poll(0.05)
            i += 1
            if i % 1000 == 0:
                producer.poll(0)

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    time.sleep(20)
    cluster.broker(1).kill()
    stop.set()
    writer.join()
    cluster.stop()
    broker_ms, repair_s = [], []
    for i in range(repeat):
        a = _copy_cluster(cluster, work / f"broker-{i}")
        broker_ms.append(_broker_load_ms(a)[0])
        b = _copy_cluster(cluster, work / f"repair-{i}")
        repair_s.append(_repair(b.broker(1).log_dirs))
    size = sum(p.stat().st_size for p in cluster.broker(1).log_dirs[0].rglob("*.log"))
    b_ms, r_s = statistics.median(broker_ms), statistics.median(repair_s)
    print(
        f"\n## after SIGKILL ({size / 1e6:.0f} MB of segments): broker's own log loading {b_ms:.0f} ms, "
        f"logdoctor repair --apply {r_s:.2f} s (medians of {repeat})"
    )
    table.add(
        f"`repair --apply` after SIGKILL of a producing 4.4.0 broker ({size / 1e6:.0f} MB, 8 partitions), "
        "whole process",
        f"{r_s:.2f} s",
        f"the broker's own log loading {b_ms / 1000:.2f} s",
        ratio(r_s, b_ms / 1000),
    )


_REBUILT_AT_LOAD = re.compile(r"Could not find offset index file corresponding to log file \S*/bench-0/")
_RECOVERED_UNFLUSHED = re.compile(r"partition=bench-0, .*Recovering unflushed segment")


def _broker_start(cluster: kafka_cluster.KafkaCluster) -> tuple[float, float, int, int]:
    """Start the cluster's broker on its dirs, then stop it: (wall time from the process's start to 'Kafka
    Server started' in s, the broker's own log loading in ms, how many bench-0 segments its LogLoader
    rebuilt the indexes of because they were missing (loadSegmentFiles), how many it recovered as
    unflushed (recoverLog: from the recovery point on))."""
    node = cluster.broker(1)
    t0 = time.perf_counter()
    node.start()
    started = time.perf_counter() - t0
    log = node.log()
    node.stop()
    loaded = float(sum(int(m.group(2)) for m in _LOADED.finditer(log)))
    return started, loaded, len(_REBUILT_AT_LOAD.findall(log)), len(_RECOVERED_UNFLUSHED.findall(log))


def startup_anchor(segments: int, repeat: int, table: TableRows) -> None:
    work = BENCH_TMP / "kafka-tools-startup"
    cluster = _cluster(work / "many", **{"log.roll.ms": 1})
    with cluster:
        cluster.create_topic("bench", 1, config={"segment.ms": 1, "segment.bytes": 1 << 30})
        producer = cluster.producer(linger_ms=0)
        for i in range(segments):
            cluster.produce("bench", [(None, _value(j)) for j in range(50)], producer=producer)
            if i % 200 == 0:
                print(f"  {i} segments", flush=True)
        del producer
    part = cluster.broker(1).log_dirs[0] / "bench-0"
    count = len(list(part.glob("*.log")))
    alone: list[tuple[float, float, int, int]] = []
    fixed: list[tuple[float, float, int, int]] = []
    repair: list[tuple[float, float]] = []
    for i in range(repeat):
        for label in ("lost", "fixed"):
            copy = _copy_cluster(cluster, work / f"{label}-{i}")
            for idx in (copy.broker(1).log_dirs[0] / "bench-0").glob("*index"):
                idx.unlink()
            (copy.broker(1).log_dirs[0] / ".kafka_cleanshutdown").unlink(missing_ok=True)
            if label == "fixed":
                # exit 1: UNCLEAN_SHUTDOWN is left (nothing to repair: the marker is gone)
                wall, cpu, _rss, _rc = measured(
                    [str(LOGDOCTOR), "repair", *map(str, copy.broker(1).log_dirs), "--apply"], ok_codes=(0, 1)
                )
                repair.append((wall, cpu))
                fixed.append(_broker_start(copy))
            else:
                alone.append(_broker_start(copy))
    med = statistics.median
    b, b_ms = med(a[0] for a in alone), med(a[1] for a in alone)
    f, f_ms = med(x[0] for x in fixed), med(x[1] for x in fixed)
    r, r_cpu = med(x[0] for x in repair), med(x[1] for x in repair)
    b_rebuilt, b_unflushed = alone[0][2], alone[0][3]
    f_rebuilt, f_unflushed = fixed[0][2], fixed[0][3]
    print(
        f"\n## {count} segments, every index lost: broker start {b:.2f} s (log loading {b_ms:.0f} ms, "
        f"indexes of {b_rebuilt} segments rebuilt, {b_unflushed} recovered as unflushed); "
        f"logdoctor repair {r:.2f} s (CPU {r_cpu:.2f} s), then broker start {f:.2f} s (log loading "
        f"{f_ms:.0f} ms, {f_rebuilt} rebuilt, {f_unflushed} recovered as unflushed) (medians of {repeat})"
    )
    table.add(
        f"broker 4.4.0 start, {count} segments whose indexes were lost, with `repair --apply` first",
        f"{r:.2f} s repair (CPU {r_cpu:.2f} s) + {f:.2f} s start (its log loading {f_ms / 1000:.2f} s: "
        f"{f_rebuilt} segments rebuilt, {f_unflushed} recovered)",
        f"start alone {b:.2f} s (its log loading {b_ms / 1000:.2f} s: {b_rebuilt} segments rebuilt, "
        f"{b_unflushed} recovered)",
        ratio(r + f, b),
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_200_000)
    ap.add_argument("--segments", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parts", default="dump,recovery,startup")
    args = ap.parse_args()
    print(f"# {machine()}\n# {command()}")
    table = TableRows()
    parts = args.parts.split(",")
    if "dump" in parts:
        dump_anchor(args.records, args.repeat, table)
    if "recovery" in parts:
        recovery_anchor(args.repeat, table)
    if "startup" in parts:
        startup_anchor(args.segments, args.repeat, table)
    kafka_cluster.stop_all()
    table.print()


if __name__ == "__main__":
    main()

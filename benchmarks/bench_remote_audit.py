"""`logdoctor census --remote-inventory` over an S3 Inventory report of up to 10,000,000 segment objects.

    .venv/bin/python benchmarks/bench_remote_audit.py --objects 1000000 [10000000 ...] \
        [--format csv parquet] [--masters local[2]] [--standalone 2] [--event-log] [--conf k=v]

Generated (cached in /tmp/logdoctor-bench, never in the repo; the segments of each partition come from
its own seeded generator, so the metadata partitions and the data files are written by a process pool
without holding the store in memory: 10,000,000 objects in a few minutes), per size:
- a remote store's listing as an S3 Inventory report as AWS writes one: ``manifest.json`` (sourceBucket,
  destinationBucket ARN, fileFormat CSV or Parquet, fileSchema, files with key, size, MD5checksum) and
  ``--files`` data files: gzip'd CSV without a header (Bucket, Key, Size, LastModifiedDate), or Parquet
  with AWS's snake-case columns (bucket, key, size, last_modified_date as a timestamp in ms), of
  LocalTieredStorage objects (5 per segment: .log, .index, .timeindex, .snapshot,
  .leader_epoch_checkpoint) of 1,000 partitions (10 topics x 100 partitions) with equal numbers of
  segments;
- one broker log dir holding the matching ``__remote_log_metadata-N`` partitions (50, each user
  partition's events where RemoteLogMetadataTopicPartitioner puts them): a COPY_SEGMENT_STARTED and a
  COPY_SEGMENT_FINISHED event per segment, written with the encoder tests/sample checks against Kafka's
  RemoteLogMetadataSerde (shared by both formats);
- planted: 20 leaked segments (objects, no event; in 20 partitions), 20 finished segments whose objects are
  missing, 10 segments stored twice (a second id, same offsets, its events and objects).

Measured: wall time of ``logdoctor census LOGDIR --remote-inventory MANIFEST --out OUT --master M
--json`` (Spark start-up and the broker's own scan included) on each local master and, with
``--standalone N``, on a standalone cluster of N one-core workers (tests/spark/standalone.py); the peak
RSS of the Python driver, of the driver JVM (local mode: it runs the executor threads too), of the local
Python workers and, on the cluster, of its executors (JVMs and their Python workers, summed), sampled
every 0.1 s (bench_census.py's sampler); the load average at the start and end; whether the census found
exactly the planted faults (20 REMOTE_OBJECTS_LEAKED, 20 REMOTE_SEGMENT_MISSING, 10
REMOTE_SEGMENTS_OVERLAP) and a digest of all its REMOTE_* findings (equal digests: the same findings).
``--event-log`` writes Spark's event log (uncompressed) to /tmp/logdoctor-bench/eventlog for the
per-job profile.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import BENCH_TMP, machine
from bench_census import _rss, _tree

PY = Path(sys.executable)
LOGDOCTOR = PY.parent / "logdoctor"
BUCKET = "tiered-bench"
SUFFIXES = ("log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint")
SIZES = {
    "log": 1_048_576,
    "index": 10_240,
    "timeindex": 15_360,
    "snapshot": 256,
    "leader_epoch_checkpoint": 16,
}
TOPICS, PARTITIONS = 10, 100
LEAKED, MISSING, TWICE = 20, 20, 10
CSV_SCHEMA = "Bucket, Key, Size, LastModifiedDate"
#: the fileSchema AWS writes for a Parquet report of these fields (the files carry the same columns)
PARQUET_SCHEMA = (
    "message s3.inventory { required binary bucket (STRING); required binary key (STRING); "
    "optional int64 size; optional int64 last_modified_date (TIMESTAMP(MILLIS,true)); }"
)
MODIFIED = "2026-11-23T10:00:00.000Z"


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).rstrip(b"=").decode()


class _Store:
    """The generated store's layout: which partitions, how many segments each, what is planted; every
    partition's segment ids come from its own seeded generator, so that the metadata partitions and the
    inventory data files are written in separate (parallel) passes without holding the store in memory."""

    def __init__(self, objects: int, seed: int) -> None:
        from logdoctor.logdir.remote_metadata import TopicIdPartition

        rng = random.Random(seed)
        self.seed = seed
        self.parts = [
            TopicIdPartition(_uuid(rng), f"topic-{t:02d}", p)
            for t in range(TOPICS)
            for p in range(PARTITIONS)
        ]
        self.per_part = max(1, objects // len(SUFFIXES) // len(self.parts))
        self.leak = set(rng.sample(range(len(self.parts)), LEAKED))
        self.missing = set(rng.sample(range(len(self.parts)), MISSING))
        self.twice = set(rng.sample(range(len(self.parts)), TWICE))

    def segments(self, i: int) -> Iterator[tuple[str, int, bool, bool]]:
        """(segment id, start offset, has events, has objects) of partition ``i``."""
        rng = random.Random(self.seed * 1_000_003 + i)
        last = self.per_part - 1
        for s in range(self.per_part):
            seg_id, start = _uuid(rng), s * 1000
            events = not (i in self.leak and s == last)
            objects = not (i in self.missing and s == 0)
            yield seg_id, start, events, objects
            if i in self.twice and s == 1:
                yield _uuid(rng), start, events, objects


def _metadata_partition(store: _Store, mp: int, log_dir: Path) -> int:
    from logdoctor.logdir.remote_metadata import SegmentState, metadata_partition_for
    from logdoctor.sample.remote_tier import MetadataEvent, metadata_batches, segment_metadata, segment_update

    ts = 1_790_000_000_000
    evs: list[MetadataEvent] = []
    for i, tip in enumerate(store.parts):
        if metadata_partition_for(tip.topic_id, tip.partition) != mp:
            continue
        for sid, start, with_events, _o in store.segments(i):
            if not with_events:
                continue
            end = start + 999
            kw = dict(broker_id=0, event_timestamp_ms=ts + start)
            evs.append(
                MetadataEvent(
                    segment_metadata(
                        tip, sid, start, end, max_timestamp_ms=ts + end, leader_epochs=[(0, start)],
                        size=SIZES["log"], **kw,
                    ),
                    ts + start,
                )
            )  # fmt: skip
            evs.append(MetadataEvent(segment_update(tip, sid, SegmentState.COPY_SEGMENT_FINISHED, **kw), ts))
    d = log_dir / f"__remote_log_metadata-{mp}"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(metadata_batches(evs, base_offset=0))
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000000.timeindex").write_bytes(b"")
    return len(evs)


def _data_file(store: _Store, f: int, files: int, fmt: str, data_dir: Path) -> tuple[str, bytes, int]:
    """Inventory data file ``f`` (of ``files``): the objects of every ``files``-th partition from ``f``;
    (name, its bytes' MD5 and size are computed by the caller, object count)."""
    keys: list[str] = []
    for i in range(f, len(store.parts), files):
        tip = store.parts[i]
        folder = f"kafka-tiered-storage/{tip.topic}-{tip.partition}-{tip.topic_id}"
        for sid, start, _e, with_objects in store.segments(i):
            if with_objects:
                stem = f"{folder}/{start:020d}-{sid}."
                keys.extend(stem + suf for suf in SUFFIXES)
    sizes = [SIZES[suf] for suf in SUFFIXES] * (len(keys) // len(SUFFIXES))
    stem = hashlib.md5(str(f).encode()).hexdigest()
    if fmt == "csv":
        lines = "".join(f'"{BUCKET}","{k}","{s}","{MODIFIED}"\n' for k, s in zip(keys, sizes, strict=True))
        data = gzip.compress(lines.encode(), compresslevel=1)
        name = f"{stem}.csv.gz"
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        modified = dt.datetime.fromisoformat(MODIFIED.replace("Z", "+00:00"))
        table = pa.table(
            {
                "bucket": pa.array([BUCKET] * len(keys), pa.string()),
                "key": pa.array(keys, pa.string()),
                "size": pa.array(sizes, pa.int64()),
                "last_modified_date": pa.array([modified] * len(keys), pa.timestamp("ms", tz="UTC")),
            }
        )
        sink = io.BytesIO()
        pq.write_table(table, sink, compression="snappy")
        data = sink.getvalue()
        name = f"{stem}.parquet"
    (data_dir / name).write_bytes(data)
    return name, data, len(keys)


def generate(objects: int, files: int, fmt: str = "csv", seed: int = 33) -> tuple[Path, Path]:
    """(broker log dir, manifest.json) of a generated store of ``objects`` objects (cached): the metadata
    partitions are shared by both report formats."""
    from concurrent.futures import ProcessPoolExecutor

    root = BENCH_TMP / f"remote-audit-{objects}-v2"
    log_dir = root / "broker-0" / "kafka-logs"
    report = root / f"inventory-{fmt}-{files}"
    manifest = report / BUCKET / "audit" / "2026-11-24T00-00Z" / "manifest.json"
    if manifest.exists():
        return log_dir, manifest
    t0 = time.perf_counter()
    store = _Store(objects, seed)
    done = log_dir / ".complete"
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        if not done.exists():
            shutil.rmtree(log_dir, ignore_errors=True)
            n_events = sum(pool.map(_metadata_partition, [store] * 50, range(50), [log_dir] * 50))
            done.write_text(str(n_events))
        shutil.rmtree(report, ignore_errors=True)
        data_dir = report / BUCKET / "audit" / "data"
        data_dir.mkdir(parents=True)
        n = files
        written = list(pool.map(_data_file, [store] * n, range(n), [n] * n, [fmt] * n, [data_dir] * n))
    listed = [
        {
            "key": f"{BUCKET}/audit/data/{name}",
            "size": len(data),
            "MD5checksum": hashlib.md5(data).hexdigest(),
        }
        for name, data, _n in written
    ]
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "sourceBucket": BUCKET,
                "destinationBucket": f"arn:aws:s3:::{BUCKET}",
                "version": "2016-11-30",
                "creationTimestamp": "1795454800000",
                "fileFormat": "CSV" if fmt == "csv" else "Parquet",
                "fileSchema": CSV_SCHEMA if fmt == "csv" else PARQUET_SCHEMA,
                "files": listed,
            }
        )
    )
    print(
        f"  generated {sum(n for _a, _b, n in written):,} objects ({len(store.parts)} partitions x "
        f"{store.per_part} segments, {fmt}), {done.read_text()} metadata events in "
        f"{time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return log_dir, manifest


def _cluster_pids(master: str) -> list[int]:
    """The standalone workers of ``master`` (their executors and Python workers are their children)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "deploy.worker.Worker" in cmd and f" {master} " in f"{cmd} ":
                out.append(int(entry))
    return out


def run(
    log_dir: Path,
    manifest: Path,
    out: Path,
    *,
    master: str,
    env: dict[str, str],
    conf: list[str],
    timeout: float | None = None,
) -> dict[str, object]:
    env = dict(env, PYSPARK_PYTHON=str(PY))
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        str(LOGDOCTOR), "census", str(log_dir), "--remote-inventory", str(manifest),
        "--out", str(out), "--master", master, "--json",
    ]  # fmt: skip
    for c in conf:
        cmd += ["--conf", c]
    workers = _cluster_pids(master) if master.startswith("spark://") else []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = {"py": 0, "jvm": 0, "worker": 0, "executors": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            now = {"py": 0, "jvm": 0, "worker": 0, "executors": 0}
            for p in _tree(proc.pid):
                kind, rss = _rss(p)
                if kind == "py" and p != proc.pid:
                    kind = "worker"
                if kind:
                    now[kind] = max(now[kind], rss) if kind != "worker" else now[kind] + rss
            for w in workers:  # executor JVMs and their Python workers, summed over the cluster
                now["executors"] += sum(_rss(p)[1] for p in _tree(w) if p != w)
            for k in peak:
                peak[k] = max(peak[k], now[k])
            time.sleep(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        stdout, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # stopped: the peaks so far, the profile is in the event log
        for p in reversed(_tree(proc.pid)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        proc.communicate()
        stop.set()
        t.join()
        return {
            "wall": time.perf_counter() - t0, **{k: v / 2**20 for k, v in peak.items()}, "codes": "stopped",
            "cmd": " ".join(cmd), "digest": "-",
        }  # fmt: skip
    wall = time.perf_counter() - t0
    stop.set()
    t.join()
    if proc.returncode not in (0, 1, 2) or not stdout.strip():
        raise SystemExit(f"census failed ({proc.returncode}): {err.decode()[-3000:]}")
    findings = json.loads(stdout)["findings"]
    codes: dict[str, int] = {}
    for f in findings:
        if f["code"].startswith("REMOTE_"):
            codes[f["code"]] = codes.get(f["code"], 0) + 1
    digest = hashlib.sha256(
        "\n".join(
            sorted(json.dumps(f, sort_keys=True) for f in findings if f["code"].startswith("REMOTE_"))
        ).encode()
    ).hexdigest()[:12]
    return {
        "wall": wall, **{k: v / 2**20 for k, v in peak.items()}, "codes": codes, "cmd": " ".join(cmd),
        "digest": digest,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--files", type=int, default=20, help="inventory data files (Spark tasks)")
    ap.add_argument("--format", choices=("csv", "parquet"), nargs="+", default=["csv"], help="report format")
    ap.add_argument("--masters", nargs="*", default=["local[2]"], help="local masters to run on")
    ap.add_argument(
        "--standalone", type=int, default=0, metavar="WORKERS",
        help="also run on a standalone cluster of WORKERS one-core workers (tests/spark/standalone.py)",
    )  # fmt: skip
    ap.add_argument("--conf", action="append", default=[], help="a Spark conf for every run (key=value)")
    ap.add_argument("--event-log", action="store_true", help="write Spark event logs to BENCH_TMP/eventlog")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--timeout", type=float, help="stop a census after this many seconds (its peaks so far)")
    args = ap.parse_args()
    print(machine())
    print(f"load average at start: {os.getloadavg()}")
    conf = list(args.conf)
    if args.event_log:
        (BENCH_TMP / "eventlog").mkdir(parents=True, exist_ok=True)
        conf += [
            "spark.eventLog.enabled=true",
            "spark.eventLog.compress=false",
            "spark.eventLog.rolling.enabled=false",
            f"spark.eventLog.dir={BENCH_TMP / 'eventlog'}",
        ]
    data = {(n, fmt): generate(n, args.files, fmt) for n in args.objects for fmt in args.format}
    if args.generate_only:
        return
    print(
        "| objects | format | master | census wall | Python driver peak RSS | driver JVM peak RSS "
        "| local Python workers (sum) | executors (JVMs + Python workers, sum) | planted found "
        "| findings digest | load avg (1 min) start / end |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with contextlib.ExitStack() as stack:
        env = dict(os.environ)
        masters = {m: m for m in args.masters}
        if args.standalone:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "spark"))
            from standalone import cluster_env, standalone_cluster

            url = stack.enter_context(standalone_cluster(BENCH_TMP / "standalone", workers=args.standalone))
            env = cluster_env()
            masters[f"standalone ({args.standalone} workers)"] = url
        for (n, fmt), (log_dir, manifest) in data.items():
            for name, master in masters.items():
                load = os.getloadavg()[0]
                r = run(
                    log_dir,
                    manifest,
                    BENCH_TMP / f"remote-audit-out-{n}",
                    master=master,
                    env=env,
                    conf=conf,
                    timeout=args.timeout,
                )
                codes = r["codes"]
                ok = (
                    isinstance(codes, dict)
                    and codes.get("REMOTE_OBJECTS_LEAKED") == LEAKED
                    and codes.get("REMOTE_SEGMENT_MISSING") == MISSING
                    and codes.get("REMOTE_SEGMENTS_OVERLAP") == TWICE
                )
                print(
                    f"| {n:,} | {fmt} | {name} | {r['wall']:.0f} s | {r['py']:.0f} MiB | "
                    f"{r['jvm']:.0f} MiB | {r['worker']:.0f} MiB | {r['executors']:.0f} MiB | "
                    f"{'yes' if ok else codes} | {r['digest']} | "
                    f"{load:.1f} / {os.getloadavg()[0]:.1f} |",
                    flush=True,
                )
                print(f"  command: {r['cmd']}", flush=True)


if __name__ == "__main__":
    main()

"""`logdoctor census --remote-inventory` over an S3 Inventory report of 1,000,000 remote segment objects.

    .venv/bin/python benchmarks/bench_remote_audit.py --objects 1000000 [100000 ...]

Generated (cached in /tmp/logdoctor-bench, never in the repo), per size:
- a remote store's listing as an S3 Inventory report exactly as AWS writes one: ``manifest.json``
  (sourceBucket, destinationBucket ARN, fileFormat CSV, fileSchema, files with key, size, MD5checksum) and
  ``--files`` gzip'd CSV data files without a header (Bucket, Key, Size, LastModifiedDate), of
  LocalTieredStorage objects (5 per segment: .log, .index, .timeindex, .snapshot,
  .leader_epoch_checkpoint) of 1,000 partitions (10 topics x 100 partitions) with equal numbers of
  segments;
- one broker log dir holding the matching ``__remote_log_metadata-N`` partitions (50, each user
  partition's events where RemoteLogMetadataTopicPartitioner puts them): a COPY_SEGMENT_STARTED and a
  COPY_SEGMENT_FINISHED event per segment, written with the encoder tests/sample checks against Kafka's
  RemoteLogMetadataSerde;
- planted: 20 leaked segments (objects, no event; in 20 partitions), 20 finished segments whose objects are
  missing, 10 segments stored twice (a second id, same offsets, its events and objects).

Measured: wall time of ``logdoctor census LOGDIR --remote-inventory MANIFEST --out OUT --master local[2]
--json`` (Spark start-up and the broker's own scan included), the peak RSS of the Python driver and of the
driver JVM (local mode: it runs the executor threads too), sampled every 0.1 s (bench_census.py's
sampler), the machine's load average at the start, and whether the census found exactly the planted
faults (20 REMOTE_OBJECTS_LEAKED, 20 REMOTE_SEGMENT_MISSING, 10 REMOTE_SEGMENTS_OVERLAP).
"""

from __future__ import annotations

import argparse
import base64
import csv
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
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


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).rstrip(b"=").decode()


def generate(objects: int, files: int, seed: int = 33) -> tuple[Path, Path]:
    """(broker log dir, manifest.json) of a generated store of ``objects`` objects (cached)."""
    from logdoctor.logdir.remote_metadata import SegmentState, TopicIdPartition, metadata_partition_for
    from logdoctor.sample.remote_tier import MetadataEvent, metadata_batches, segment_metadata, segment_update

    root = BENCH_TMP / f"remote-audit-{objects}-{files}-v1"
    log_dir = root / "broker-0" / "kafka-logs"
    manifest = root / "inventory" / BUCKET / "audit" / "2026-11-24T00-00Z" / "manifest.json"
    if manifest.exists():
        return log_dir, manifest
    t0 = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    parts = [
        TopicIdPartition(_uuid(rng), f"topic-{t:02d}", p) for t in range(TOPICS) for p in range(PARTITIONS)
    ]
    per_part = max(1, objects // len(SUFFIXES) // len(parts))
    planted_leak = set(rng.sample(range(len(parts)), LEAKED))
    planted_missing = set(rng.sample(range(len(parts)), MISSING))
    planted_twice = set(rng.sample(range(len(parts)), TWICE))
    events: dict[int, list[MetadataEvent]] = {}
    rows: list[tuple[str, int]] = []
    ts = 1_790_000_000_000
    for i, tip in enumerate(parts):
        folder = f"kafka-tiered-storage/{tip.topic}-{tip.partition}-{tip.topic_id}"
        mp = metadata_partition_for(tip.topic_id, tip.partition)
        evs = events.setdefault(mp, [])
        for s in range(per_part):
            seg_id, start, end = _uuid(rng), s * 1000, s * 1000 + 999
            with_events = not (i in planted_leak and s == per_part - 1)
            with_objects = not (i in planted_missing and s == 0)
            twins = [seg_id, _uuid(rng)] if i in planted_twice and s == 1 else [seg_id]
            for sid in twins:
                if with_events:
                    kw = dict(broker_id=0, event_timestamp_ms=ts + start)
                    evs.append(
                        MetadataEvent(
                            segment_metadata(
                                tip, sid, start, end, max_timestamp_ms=ts + end,
                                leader_epochs=[(0, start)], size=SIZES["log"], **kw,
                            ),
                            ts + start,
                        )
                    )  # fmt: skip
                    evs.append(
                        MetadataEvent(segment_update(tip, sid, SegmentState.COPY_SEGMENT_FINISHED, **kw), ts)
                    )
                if with_objects:
                    rows.extend((f"{folder}/{start:020d}-{sid}.{suf}", SIZES[suf]) for suf in SUFFIXES)
    for mp in range(50):
        d = log_dir / f"__remote_log_metadata-{mp}"
        d.mkdir(parents=True)
        (d / "00000000000000000000.log").write_bytes(metadata_batches(events.get(mp, []), base_offset=0))
        (d / "00000000000000000000.index").write_bytes(b"")
        (d / "00000000000000000000.timeindex").write_bytes(b"")
    data_dir = root / "inventory" / BUCKET / "audit" / "data"
    data_dir.mkdir(parents=True)
    listed = []
    per_file = -(-len(rows) // files)
    for f in range(files):
        buf = io.StringIO()
        w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        for key, size in rows[f * per_file : (f + 1) * per_file]:
            w.writerow([BUCKET, key, size, "2026-11-23T10:00:00.000Z"])
        data = gzip.compress(buf.getvalue().encode(), compresslevel=6)
        name = f"{hashlib.md5(str(f).encode()).hexdigest()}.csv.gz"
        (data_dir / name).write_bytes(data)
        key = f"inventory/{BUCKET}/audit/data/{name}"
        listed.append({"key": key, "size": len(data), "MD5checksum": hashlib.md5(data).hexdigest()})
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "sourceBucket": BUCKET,
                "destinationBucket": f"arn:aws:s3:::{BUCKET}",
                "version": "2016-11-30",
                "creationTimestamp": "1795454800000",
                "fileFormat": "CSV",
                "fileSchema": CSV_SCHEMA,
                "files": listed,
            }
        )
    )
    print(
        f"  generated {len(rows):,} objects ({len(parts)} partitions x {per_part} segments), "
        f"{sum(len(v) for v in events.values()):,} metadata events in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return log_dir, manifest


def run(log_dir: Path, manifest: Path, out: Path) -> dict[str, object]:
    env = dict(os.environ, PYSPARK_PYTHON=str(PY))
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        str(LOGDOCTOR), "census", str(log_dir), "--remote-inventory", str(manifest),
        "--out", str(out), "--master", "local[2]", "--json",
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
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
    stdout, err = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    t.join()
    if proc.returncode not in (0, 1, 2):
        raise SystemExit(f"census failed ({proc.returncode}): {err.decode()[-3000:]}")
    findings = json.loads(stdout)["findings"]
    codes: dict[str, int] = {}
    for f in findings:
        if f["code"].startswith("REMOTE_"):
            codes[f["code"]] = codes.get(f["code"], 0) + 1
    return {"wall": wall, **{k: v / 2**20 for k, v in peak.items()}, "codes": codes, "cmd": " ".join(cmd)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--objects", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--files", type=int, default=20, help="inventory data files (Spark tasks)")
    args = ap.parse_args()
    print(machine())
    print(f"load average at start: {os.getloadavg()}")
    print(
        "| objects | data files | census wall | Python driver peak RSS | driver JVM peak RSS "
        "| Python workers peak RSS (sum) | planted found | load avg (1 min) at start |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in args.objects:
        log_dir, manifest = generate(n, args.files)
        load = os.getloadavg()[0]
        r = run(log_dir, manifest, BENCH_TMP / f"remote-audit-out-{n}")
        codes = r["codes"]
        ok = (
            codes.get("REMOTE_OBJECTS_LEAKED") == LEAKED
            and codes.get("REMOTE_SEGMENT_MISSING") == MISSING
            and codes.get("REMOTE_SEGMENTS_OVERLAP") == TWICE
        )
        print(
            f"| {n:,} | {args.files} | {r['wall']:.0f} s | {r['py']:.0f} MiB | {r['jvm']:.0f} MiB | "
            f"{r['worker']:.0f} MiB | {'yes' if ok else codes} | {load:.1f} |",
            flush=True,
        )
        print(f"  command: {r['cmd']}", flush=True)


if __name__ == "__main__":
    main()

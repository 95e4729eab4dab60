"""`logdoctor export` of a tiered topic with its remote tier on S3 (moto's server) against the same records
exported from a local log dir (issue 23: within 1.2x).

Data (generated once into /tmp/logdoctor-bench, reused while the arguments are unchanged): a log dir of
one topic (logdoctor.sample.logdir, 2 partitions, 200-byte values, 16 records per batch, 4 MiB
segments), then its tiered twin: each partition's last 2 segments stay in the log dir, the others are
in a remote store, in Kafka's LocalTieredStorage layout (the segment files as they are) and in Aiven's
plugin layout with zstd chunks of 4 MiB (written with logdoctor.formats.aiven_rsm, whose reading of the
plugin's own objects the tests check). Both are uploaded to moto's S3 server, run in a child process
on 127.0.0.1 (tests/spark/s3server.py), with fake credentials in the environment before Spark starts.

Runs (each `run_export` with the arrow writer to a local folder, local[2], best of ``--repeat`` after a
warm-up run): the untiered log dir on local disk (the baseline), the untiered log dir on S3, and for
each layout the tiered log dir on local disk (a broker's disk) or on S3, with its remote store on S3.
The bytes the server sent are counted: the remote reads are ranged (only the chunks needed) and
streamed (each byte once).

Usage: .venv/bin/python benchmarks/bench_remote_tier.py [--records 400000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "spark"))

from _common import BENCH_TMP, machine  # noqa: E402

CHUNK = 4 * 1024 * 1024
KEEP_LOCAL = 2


def make_data(records: int) -> tuple[Path, Path, dict[str, Path]]:
    """(untiered log dir, tiered log dir, {layout: store root})."""
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    root = BENCH_TMP / f"remote-tier-{records}"
    marker = root / ".complete"
    full = root / "full"
    tiered = root / "tiered" / "kafka-logs"
    stores = {"kafka-local": root / "store-kafka-local", "aiven": root / "store-aiven"}
    if marker.exists():
        return next(full.glob("broker-0/kafka-logs-0")), tiered, stores
    if root.exists():
        shutil.rmtree(root)
    logs, _ = generate_log_dir(
        full,
        [
            TopicSpec(
                "bench",
                partitions=2,
                records_per_partition=records // 2,
                records_per_batch=16,
                value_size=200,
                key_size=12,
                segment_bytes=4 * 1024 * 1024,
            )
        ],
    )
    shutil.copytree(logs, tiered)
    for part in sorted(tiered.glob("bench-*")):
        topic_id = _topic_id(part)
        p = int(part.name.rsplit("-", 1)[1])
        segs = sorted(part.glob("*.log"))
        for i, log in enumerate(segs[:-KEEP_LOCAL]):
            base = int(log.stem)
            end = int(segs[i + 1].stem) - 1
            seg_id = _segment_id()
            _upload_kafka_local(stores["kafka-local"], log, topic_id, p, seg_id)
            _upload_aiven(stores["aiven"], log, topic_id, p, seg_id, end)
            for f in part.glob(f"{base:020d}.*"):
                f.unlink()
    marker.write_text("ok\n")
    return logs, tiered, stores


def _topic_id(part: Path) -> str:
    from logdoctor.formats.partition_metadata import parse_partition_metadata

    return parse_partition_metadata((part / "partition.metadata").read_bytes()).topic_id


def _segment_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _upload_kafka_local(store: Path, log: Path, topic_id: str, p: int, seg_id: str) -> None:
    folder = store / "kafka-tiered-storage" / f"bench-{p}-{topic_id}"
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(log.with_suffix(suffix), folder / f"{log.stem}-{seg_id}{suffix}")


def _upload_aiven(store: Path, log: Path, topic_id: str, p: int, seg_id: str, end: int) -> None:
    import zstandard

    from logdoctor.formats.aiven_rsm import build_manifest

    folder = store / f"bench-{topic_id}" / str(p)
    folder.mkdir(parents=True, exist_ok=True)
    data = log.read_bytes()
    zc = zstandard.ZstdCompressor()
    chunks = [zc.compress(data[i : i + CHUNK]) for i in range(0, len(data), CHUNK)]
    stem = folder / f"{log.stem}-{seg_id}"
    stem.with_suffix(".log").write_bytes(b"".join(chunks))
    index, tindex = log.with_suffix(".index").read_bytes(), log.with_suffix(".timeindex").read_bytes()
    stem.with_suffix(".indexes").write_bytes(index + tindex)
    stem.with_suffix(".rsm-manifest").write_bytes(
        build_manifest(
            original_chunk_size=CHUNK,
            original_file_size=len(data),
            transformed_sizes=[len(c) for c in chunks],
            indexes={"offset": (0, len(index)), "timestamp": (len(index), len(tindex))},
            compression=True,
            topic="bench",
            topic_id=topic_id,
            partition=p,
            segment_id=seg_id,
            start_offset=int(log.stem),
            end_offset=end,
        )
    )


def serve(port: int) -> None:
    """Child process: moto's S3 server until stdin closes; prints the bytes served on request."""
    from s3server import S3Server

    server = S3Server(port).start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "served":
            gets = server.gets()
            print(json.dumps({"gets": len(gets), "bytes": sum(g.body_bytes for g in gets)}), flush=True)
            server.reset()
    server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return
    from s3server import BUCKET, apply_env, aws_test_env, free_port

    full, tiered, stores = make_data(args.records)
    port = free_port()
    apply_env(aws_test_env(port))  # before the Spark JVM starts: its Python workers inherit it
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # moto's request log
        text=True,
        env=os.environ.copy(),
    )
    assert server.stdout is not None and server.stdin is not None
    assert server.stdout.readline().strip() == "ready"

    def served() -> dict[str, int]:
        server.stdin.write("served\n")  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]
        return json.loads(server.stdout.readline())  # type: ignore[union-attr]

    try:
        from pyarrow import fs

        from logdoctor.spark.export import run_export
        from logdoctor.spark.session import get_spark

        s3 = fs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            endpoint_override=f"http://127.0.0.1:{port}",
            allow_bucket_creation=True,
        )
        s3.create_dir(BUCKET)
        uri = {}
        for name, local in (("full", full), ("tiered", tiered), *stores.items()):
            fs.copy_files(
                str(local),
                f"{BUCKET}/{name}",
                source_filesystem=fs.LocalFileSystem(),
                destination_filesystem=s3,
            )
            uri[name] = f"s3://{BUCKET}/{name}"
        served()
        sizes = {
            name: sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
            for name, p in (("full", full), ("tiered", tiered), *stores.items())
        }
        runs = {
            "local log dir (untiered)": ([str(full)], {}),
            "log dir on S3 (untiered)": ([uri["full"]], {}),
            "tiered: local log dir, kafka-local store on S3": (
                [str(tiered)],
                {"remoteStorage": uri["kafka-local"]},
            ),
            "tiered: local log dir, aiven (zstd) store on S3": (
                [str(tiered)],
                {"remoteStorage": uri["aiven"]},
            ),
            "tiered: log dir and kafka-local store on S3": (
                [uri["tiered"]],
                {"remoteStorage": uri["kafka-local"]},
            ),
            "tiered: log dir and aiven (zstd) store on S3": (
                [uri["tiered"]],
                {"remoteStorage": uri["aiven"]},
            ),
        }
        spark = get_spark("local[2]", "bench-remote-tier")
        results: dict[str, dict[str, float]] = {}
        for name, (paths, opts) in runs.items():
            best = None
            rows = 0
            traffic: dict[str, int] = {}
            for i in range(args.repeat + 1):  # the first run starts the Python workers: not counted
                out = BENCH_TMP / "remote-tier-out"
                t0 = time.perf_counter()
                res = run_export(spark, paths, out, options=opts, mode="overwrite")
                elapsed = time.perf_counter() - t0
                traffic = served()  # of this run (the server counts from the previous call)
                rows = res.rows
                assert not res.skipped, res.skipped
                if i > 0:
                    best = elapsed if best is None else min(best, elapsed)
            results[name] = {"rows": rows, "seconds": best or 0.0, **traffic}
        spark.stop()
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    base = results["local log dir (untiered)"]
    print(f"machine: {machine()}")
    print(
        f"data: {base['rows']:,.0f} records, untiered log dir {sizes['full'] / 1e6:.0f} MB; tiered: log dir "
        f"{sizes['tiered'] / 1e6:.0f} MB + store {sizes['kafka-local'] / 1e6:.0f} MB (kafka-local) or "
        f"{sizes['aiven'] / 1e6:.0f} MB (aiven, zstd)"
    )
    print("| run | records | seconds | records/s | vs local log dir | GETs | bytes served |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['rows']:,.0f} | {r['seconds']:.2f} | {r['rows'] / r['seconds']:,.0f} | "
            f"{r['seconds'] / base['seconds']:.2f}x | {r.get('gets', 0):,} | "
            f"{r.get('bytes', 0) / 1e6:.1f} MB |"
        )


if __name__ == "__main__":
    main()

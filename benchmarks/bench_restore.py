"""`logdoctor restore` throughput (issue 33: within 1.5x of a copy of the same bytes), from a local store and
from moto's S3 server, against `cp` (local store) and pyarrow's `copy_files` (S3, what `aws s3 cp` does).

Data: bench_remote_tier.py's stores (generated once into /tmp/logdoctor-bench): a topic of 2 partitions
whose older segments (4 MiB each) are in a LocalTieredStorage store (the segment files as they are) and an
Aiven store (4 MiB zstd chunks), and, built from the first (_aiven_variants.py), Aiven stores of the
plugin's other transforms: ``aiven-plain`` (none), ``aiven-encrypted`` (AES-GCM chunks, the data key
wrapped with a generated RSA key pair, whose private key the restore is given as ``--remote-private-key``
is) and ``aiven-encrypted-compressed`` (zstd, then AES-GCM); the same for 4 segments of 64 MiB.
Each run restores every remote segment into a new empty log dir through
the apply engine (plan, stage, journal, fetch each `.log` streamed in ranged reads, hash, fsync, read back,
rename; write its indexes; checkpoints), timed from planning to the end of the apply. The copy baselines
copy the same objects (`.log`, `.index`, `.timeindex`; Aiven: `.log`, `.indexes`, `.rsm-manifest`) to a new
folder, then `sync` (the restore fsyncs every file). Best of ``--repeat``.

The rows of BENCHMARKS.md's "Restore" table follow (``benchmarks/update_table.py`` puts them in place).

Usage: .venv/bin/python benchmarks/bench_restore.py [--records 400000] [--repeat 3] [--layouts aiven,...]
       [--local-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "spark"))

from _aiven_variants import make_variants  # noqa: E402
from _common import BENCH_TMP, TableRows, machine, ratio  # noqa: E402
from bench_remote_tier import CHUNK, _segment_id, _upload_aiven, _upload_kafka_local, make_data  # noqa: E402


def make_big_stores(segment_mib: int, segments: int, small: Path) -> dict[str, Path]:
    """Stores of one partition with ``segments`` segments of ``segment_mib`` MiB (the batches of the
    generated 4 MiB segments of ``small`` repeated, their base offsets rewritten: outside the batch CRC),
    their indexes rebuilt as LogSegment.recover does."""
    import base64
    import struct
    import uuid

    from logdoctor.formats.recovery import rebuild_indexes

    root = BENCH_TMP / f"restore-big-{segment_mib}x{segments}"
    stores = {"kafka-local": root / "store-kafka-local", "aiven": root / "store-aiven"}
    if (root / ".complete").exists():
        return stores
    shutil.rmtree(root, ignore_errors=True)
    batches: list[bytes] = []
    for log in sorted(small.glob("*.log")):
        data = log.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            size = struct.unpack_from(">i", data, pos + 8)[0]
            batches.append(data[pos : pos + 12 + size])
            pos += 12 + size
    topic_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    local = root / "segments"
    local.mkdir(parents=True)
    offset, i = 0, 0
    for _ in range(segments):
        base, out = offset, bytearray()
        while len(out) < segment_mib << 20:
            b = batches[i % len(batches)]
            i += 1
            last_delta = struct.unpack_from(">i", b, 23)[0]
            out += struct.pack(">q", offset) + b[8:]
            offset += last_delta + 1
        built = rebuild_indexes(bytes(out), base)
        log = local / f"{base:020d}.log"
        log.write_bytes(out)
        log.with_suffix(".index").write_bytes(built.offset_index)
        log.with_suffix(".timeindex").write_bytes(built.time_index)
        seg_id = _segment_id()
        _upload_kafka_local(stores["kafka-local"], log, topic_id, 0, seg_id)
        _upload_aiven(stores["aiven"], log, topic_id, 0, seg_id, offset - 1)
    shutil.rmtree(local)
    (root / ".complete").touch()
    return stores


def _restore(store: str, repeat: int, key: Path | None = None) -> tuple[float, int]:
    from logdoctor.logdir.remote_store import RemoteOptions
    from logdoctor.repair.procedures import run
    from logdoctor.repair.procedures.restore import plan_restore

    best, restored = float("inf"), 0
    for i in range(repeat):
        target = BENCH_TMP / f"restore-target-{i}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(str(target) + ".backup", ignore_errors=True)
        target.mkdir(parents=True)
        t = time.perf_counter()
        options = RemoteOptions(store, private_key=str(key) if key else None)
        pp = plan_restore(target, options, backup_dir=str(target) + ".backup")
        result = run.apply(pp.plan)
        best = min(best, time.perf_counter() - t)
        assert result.status == "applied", result.error
        restored = int(pp.summary["bytes"])
        shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(str(target) + ".backup", ignore_errors=True)
    return best, restored


def _cp(src: Path, repeat: int) -> float:
    best = float("inf")
    for i in range(repeat):
        target = BENCH_TMP / f"cp-target-{i}"
        shutil.rmtree(target, ignore_errors=True)
        t = time.perf_counter()
        subprocess.run(["cp", "-r", str(src), str(target)], check=True)
        subprocess.run(["sync", "-f", str(target)], check=True)
        best = min(best, time.perf_counter() - t)
        shutil.rmtree(target, ignore_errors=True)
    return best


def _s3_copy(uri: str, repeat: int) -> float:
    from pyarrow import fs

    from logdoctor.logdir.storage import Storage

    storage, loc = Storage.of(uri)
    best = float("inf")
    for i in range(repeat):
        target = BENCH_TMP / f"s3cp-target-{i}"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        t = time.perf_counter()
        fs.copy_files(
            storage.path(loc),
            str(target),
            source_filesystem=storage.filesystem,
            destination_filesystem=fs.LocalFileSystem(),
        )
        subprocess.run(["sync", "-f", str(target)], check=True)
        best = min(best, time.perf_counter() - t)
        shutil.rmtree(target, ignore_errors=True)
    return best


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--segment-mib", type=int, default=64)
    ap.add_argument("--segments", type=int, default=4)
    ap.add_argument("--layouts", default="all", help="comma-separated layouts (default: every one)")
    ap.add_argument("--local-only", action="store_true", help="the local-store rows only (no S3)")
    args = ap.parse_args()
    from s3server import BUCKET, apply_env, aws_test_env, free_port

    full, _tiered, small_stores = make_data(args.records)
    big = make_big_stores(args.segment_mib, args.segments, next(full.glob("bench-0")))
    datasets = [("4 MiB segments", small_stores), (f"{args.segment_mib} MiB segments", big)]
    keys: dict[Path, Path] = {}
    for _, stores in datasets:
        variants, pem = make_variants(stores["kafka-local"], stores["kafka-local"].parent, CHUNK)
        stores.update(variants)
        keys.update({v: pem for k, v in variants.items() if "encrypted" in k})
    wanted = None if args.layouts == "all" else set(args.layouts.split(","))
    port = free_port()
    apply_env(aws_test_env(port))
    server = subprocess.Popen(
        [sys.executable, str(HERE / "bench_remote_tier.py"), "--serve", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=os.environ.copy(),
    )
    assert server.stdout is not None and server.stdin is not None
    assert server.stdout.readline().strip() == "ready"
    rows = []
    table = TableRows()
    try:
        from pyarrow import fs

        s3 = fs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            endpoint_override=f"http://127.0.0.1:{port}",
            allow_bucket_creation=True,
        )
        s3.create_dir(BUCKET)
        for (label, _stores), (layout, local) in ((d, item) for d in datasets for item in d[1].items()):
            if wanted is not None and layout not in wanted:
                continue
            key = f"restore-{label.split()[0]}-{layout}"
            if not args.local_only:
                fs.copy_files(
                    str(local),
                    f"{BUCKET}/{key}",
                    source_filesystem=fs.LocalFileSystem(),
                    destination_filesystem=s3,
                )
            copy_bytes = _bytes(local)
            t_restore, restored = _restore(str(local), args.repeat, keys.get(local))
            t_cp = _cp(local, args.repeat)
            rows.append(
                (
                    f"{label}, {layout}, local store",
                    restored,
                    t_restore,
                    f"cp -r + sync ({copy_bytes:,} B)",
                    t_cp,
                )
            )
            if args.local_only:
                continue
            uri = f"s3://{BUCKET}/{key}"
            t_restore, restored = _restore(uri, args.repeat, keys.get(local))
            t_cp = _s3_copy(uri, args.repeat)
            rows.append(
                (
                    f"{label}, {layout}, store on S3",
                    restored,
                    t_restore,
                    f"pyarrow copy_files + sync ({copy_bytes:,} B)",
                    t_cp,
                )
            )
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    load = os.getloadavg()
    print(f"machine: {machine()}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("| run | segment bytes restored | restore s | MB/s | copy baseline | copy s | restore / copy |")
    print("|---|---|---|---|---|---|---|")
    for name, restored, t_r, base, t_c in rows:
        print(
            f"| {name} | {restored:,} | {t_r:.2f} | {restored / t_r / 1e6:.0f} | {base} | {t_c:.2f} | "
            f"{t_r / t_c:.2f}x |"
        )
        copy = "`cp -r` + `sync -f`" if base.startswith("cp ") else "pyarrow `copy_files` + `sync -f`"
        table.add(f"restore, {name}", f"{t_r:.2f} s", f"{copy} {t_c:.2f} s", ratio(t_r, t_c))
    print(json.dumps({"rows": rows}))
    table.print()


if __name__ == "__main__":
    main()

"""`logdoctor replay --apply` against Kafka's own producer (`kafka-producer-perf-test.sh`,
org.apache.kafka.tools.ProducerPerformance) writing the same records to the same broker in the same run.

    .venv/bin/python benchmarks/bench_replay.py [--records 200000] [--size 100] [--repeat 3] [--profile]

The source is a dead broker's log dir: Kafka 4.4.0 (tests/kafka_cluster.py; `make test` installs it)
written with ``--records`` records of ``--size`` bytes (values of random capital letters, as
ProducerPerformance's payload; no key) on one partition, then stopped (kept in /tmp/logdoctor-bench while
the spec is unchanged). The target is a second 4.4.0 broker, one KRaft node on 127.0.0.1. Each round
(``--repeat`` rounds, the three runs interleaved) writes into its own empty one-partition topics, created
before the clock starts:

- **replay**: `logdoctor replay LOGDIR --bootstrap-server T --topic-map bench=NEW --apply --json`, the whole
  process (start, plan, one transactional producer, the progress committed in each transaction, acks=all);
- **perf-test acks=all**: `kafka-producer-perf-test.sh --num-records N --record-size S --throughput -1
  --producer-props acks=all bootstrap.servers=T`, the whole process (JVM start included);
- **perf-test transactional**: the same with ``--transactional-id`` and ``--transaction-duration-ms``
  (exactly once, as the replay: like for like).

Printed: the median wall time of each and records/s; the rows of BENCHMARKS.md's "Replay" table at the
end (``benchmarks/update_table.py``). ``--profile``: one more replay in this process under cProfile (the
top functions by cumulative time), to find the hot path.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

import kafka_cluster  # noqa: E402
from _common import BENCH_TMP, TableRows, machine, ratio  # noqa: E402

LOGDOCTOR = ROOT / ".venv" / "bin" / "logdoctor"


def source_log_dir(records: int, size: int) -> Path:
    """The dead broker's log dir: ``records`` records of ``size`` bytes in topic ``bench`` partition 0."""
    work = BENCH_TMP / f"replay-source-{records}x{size}"
    done = work / ".written"
    if not done.exists():
        shutil.rmtree(work, ignore_errors=True)
        cluster = kafka_cluster.KafkaCluster(work / "cluster")
        rng = random.Random(7)
        payloads = [bytes(rng.randrange(65, 91) for _ in range(size)) for _ in range(64)]
        with cluster:
            cluster.create_topic("bench", 1, config={"segment.bytes": 1 << 30})
            producer = cluster.producer(linger_ms=20, batch_size=65536)
            cluster.produce("bench", ((None, payloads[i % 64]) for i in range(records)), producer=producer)
            del producer  # closed while its broker runs
        done.touch()
    return _log_dir(work / "cluster")


def _log_dir(root: Path) -> Path:
    found = sorted(p.parent for p in root.rglob("bench-0/00000000000000000000.log"))
    if len(found) != 1:
        raise SystemExit(f"{root}: no single bench-0 partition: {found}")
    return found[0].parent


def timed(argv: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} exited {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
        )
    return wall, done.stdout


def end_offset(cluster: kafka_cluster.KafkaCluster, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "bench-check"})
    try:
        _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        return high
    finally:
        c.close()


def profile_replay(log_dir: Path, bootstrap: str, topic: str) -> None:
    import cProfile
    import pstats

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, plan_replay

    plan = plan_replay([str(log_dir)], bootstrap, opts=ReadOptions(), topic_map=TopicMap([f"bench={topic}"]))
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    apply_replay(plan, on_offsets=lambda _b: None)
    prof.disable()
    print(f"\n## cProfile of one replay in process ({time.perf_counter() - t0:.2f} s under the profiler)")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--txn-ms", type=int, default=3000, help="perf-test --transaction-duration-ms")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    table = TableRows()
    print(f"# replay vs kafka-producer-perf-test: {machine()}")
    log_dir = source_log_dir(args.records, args.size)
    perf = str(kafka_cluster.kafka_bin(kafka_cluster.NEWEST) / "kafka-producer-perf-test.sh")
    root = BENCH_TMP / "replay-target"
    shutil.rmtree(root, ignore_errors=True)
    walls: dict[str, list[float]] = {"replay": [], "perf": [], "perf-txn": []}
    with kafka_cluster.KafkaCluster(root) as cluster:
        b = cluster.bootstrap
        for r in range(args.repeat):
            for name in walls:
                topic = f"{name}-{r}"
                cluster.create_topic(topic, 1)
                if name == "replay":
                    argv = [str(LOGDOCTOR), "replay", str(log_dir), "--bootstrap-server", b,
                            "--topic-map", f"bench={topic}", "--apply", "--json"]  # fmt: skip
                else:
                    argv = [perf, "--topic", topic, "--num-records", str(args.records), "--record-size",
                            str(args.size), "--throughput", "-1", "--producer-props", "acks=all",
                            f"bootstrap.servers={b}"]  # fmt: skip
                    if name == "perf-txn":
                        argv += ["--transactional-id", f"bench-{r}", "--transaction-duration-ms",
                                 str(args.txn_ms)]  # fmt: skip
                wall, out = timed(argv)
                if name == "replay":
                    assert json.loads(out)["result"]["records"] == args.records, out[-500:]
                high = end_offset(cluster, topic)
                # the perf test's transactions each end with a marker: more offsets than records
                assert high >= args.records, f"{topic}: {high} offsets, {args.records} records"
                walls[name].append(wall)
                print(f"  round {r} {name}: {wall:.2f} s ({args.records / wall:,.0f} records/s)", flush=True)
        if args.profile:
            topic = "profiled"
            cluster.create_topic(topic, 1)
            profile_replay(log_dir, b, topic)
    med = {k: statistics.median(v) for k, v in walls.items()}
    n, size = args.records, args.size
    print(f"\n## {n:,} records of {size} B, one partition, median of {args.repeat} interleaved rounds")
    print("| run | wall | records/s |\n|---|---|---|")
    for k, w in med.items():
        print(f"| {k} | {w:.2f} s | {n / w:,.0f} |")
    label = f"{n:,} records of {size} B, one partition, whole process"
    # a rate: higher is better, the ratio is the replay's rate over the anchor's
    table.add(
        f"`replay --apply` vs `kafka-producer-perf-test.sh` acks=all, {label}",
        f"{n / med['replay']:,.0f} records/s ({med['replay']:.2f} s)",
        f"perf-test acks=all {n / med['perf']:,.0f} records/s ({med['perf']:.2f} s)",
        ratio(med["perf"], med["replay"]),
    )
    table.add(
        f"`replay --apply` vs `kafka-producer-perf-test.sh` transactional, {label}",
        f"{n / med['replay']:,.0f} records/s ({med['replay']:.2f} s)",
        f"perf-test --transactional-id, --transaction-duration-ms {args.txn_ms}: "
        f"{n / med['perf-txn']:,.0f} records/s ({med['perf-txn']:.2f} s)",
        ratio(med["perf-txn"], med["replay"]),
    )
    table.print()


if __name__ == "__main__":
    main()

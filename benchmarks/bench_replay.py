"""`logdoctor replay --apply` against Kafka's own producer (`kafka-producer-perf-test.sh`,
org.apache.kafka.tools.ProducerPerformance) writing the same records to the same broker in the same run,
and against the peer osodevops/kafka-backup's restore of its own backup of the same records.

    .venv/bin/python benchmarks/bench_replay.py [--records 200000] [--size 100] [--repeat 3] [--profile]
        [--partitions 1,4] [--kafka-backup /tmp/kafka-backup-e5ab922/target/release/kafka-backup]
        [--replay-codec zstd] [--baseline /path/to/other/checkout/src]

``--kafka-backup``: the peer's binary, built from its source (not a CI step): ``git archive`` of
osodevops/kafka-backup e5ab92234d6ebdb7acb37a2b2480ffc1c931de1d into /tmp/kafka-backup-e5ab922, then
``cargo build --release -p kafka-backup-cli`` there. It restores only its own backups of a live cluster: the
source broker, while it runs after its records are written, is backed up by ``kafka-backup backup``
(filesystem storage, its default zstd; once, kept beside the log dir), then stopped; each round then times
``kafka-backup restore`` (``topic_mapping`` to a new topic, acks -1) beside the replay of the log dir.
``--baseline``: one more replay run per round (``replay-base``) with another checkout's ``src`` first on
``PYTHONPATH`` (a worktree of the commit before a change: before and after in one run, on one broker,
alternating). ``--partitions``: the source topic's partition counts, each a source of its own (the records
round-robin over them); replay runs with its default ``--parallelism``.
Before the rounds, each replay's tree (this one, the baseline's) gets its bytecode written and must import
the C decoder (:func:`ready_tree`): a worktree without either measures the interpreter, not the replay.

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
import os
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
from _common import BENCH_TMP, TableRows, load_average, machine, ratio  # noqa: E402

LOGDOCTOR = ROOT / ".venv" / "bin" / "logdoctor"


def source_work(records: int, size: int, partitions: int) -> Path:
    return BENCH_TMP / (f"replay-source-{records}x{size}" + ("" if partitions == 1 else f"x{partitions}"))


def source_log_dir(records: int, size: int, partitions: int = 1, peer: Path | None = None) -> Path:
    """The dead broker's log dir: ``records`` records of ``size`` bytes in topic ``bench``, round-robin over
    ``partitions`` partitions; with ``peer`` (kafka-backup), the live broker backed up by it first, into
    ``work/peer`` (:func:`peer_restore` restores it)."""
    work = source_work(records, size, partitions)
    done = work / ".written"
    backed_up = work / ".backed-up"
    if not done.exists() or (peer is not None and not backed_up.exists()):
        shutil.rmtree(work, ignore_errors=True)
        cluster = kafka_cluster.KafkaCluster(work / "cluster")
        rng = random.Random(7)
        payloads = [bytes(rng.randrange(65, 91) for _ in range(size)) for _ in range(64)]
        with cluster:
            cluster.create_topic("bench", partitions, config={"segment.bytes": 1 << 30})
            producer = cluster.producer(linger_ms=20, batch_size=65536)
            for part in range(partitions):
                cluster.produce(
                    "bench", ((None, payloads[i % 64]) for i in range(part, records, partitions)),
                    producer=producer, partition=part,
                )  # fmt: skip
            del producer  # closed while its broker runs
            if peer is not None:
                config = work / "backup.yaml"
                config.write_text(
                    f"mode: backup\nbackup_id: bench\nsource:\n  bootstrap_servers: [{cluster.bootstrap}]\n"
                    f"  topics:\n    include: [bench]\nstorage:\n  backend: filesystem\n"
                    f"  path: {work / 'peer'}\n"
                    "backup:\n  continuous: false\n  start_offset: earliest\n"
                )
                wall, _ = timed([str(peer), "backup", "--config", str(config)])
                print(f"  kafka-backup backup of {partitions} partition(s): {wall:.2f} s", flush=True)
                backed_up.touch()
        done.touch()
    return _log_dir(work / "cluster")


def peer_restore(peer: Path, work: Path, bootstrap: str, topic: str) -> list[str]:
    """``kafka-backup restore`` of the backup kept in ``work`` (:func:`source_log_dir`) into ``topic``."""
    config = BENCH_TMP / f"restore-{topic}.yaml"
    config.write_text(
        f"mode: restore\nbackup_id: bench\ntarget:\n  bootstrap_servers: [{bootstrap}]\n"
        f"  topics:\n    include: [bench]\nstorage:\n  backend: filesystem\n"
        f"  path: {work / 'peer'}\n"
        f"restore:\n  create_topics: false\n  produce_acks: -1\n  topic_mapping:\n    bench: {topic}\n"
    )
    return [str(peer), "restore", "--config", str(config)]


def _log_dir(root: Path) -> Path:
    found = sorted(p.parent for p in root.rglob("bench-0/00000000000000000000.log"))
    if len(found) != 1:
        raise SystemExit(f"{root}: no single bench-0 partition: {found}")
    return found[0].parent


#: CPU seconds (user and system) of each command :func:`timed` ran, the last one's last: a figure the
#: machine's load moves less than the wall (a busy machine's wall is mostly waiting for a core)
CPU: list[float] = []


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    import resource

    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(argv)} exited {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
        )
    return wall, done.stdout


def broker_cpu(cluster: kafka_cluster.KafkaCluster) -> float:
    """CPU seconds (user and system) the target broker's JVM has used so far (``/proc/PID/stat``)."""
    pid = cluster.broker_nodes[0].proc.pid
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ready_tree(env: dict[str, str] | None, what: str) -> None:
    """The tree the replay run with ``env`` imports, made ready as an installed package is, else the bench
    stops: its modules' bytecode written (``compileall``; with PYTHONDONTWRITEBYTECODE set, as here, a
    worktree's ``src`` is compiled again by every process: ~120 modules, 0.8 s of CPU a replay, which the
    ``--baseline`` checkout, compiled once, does not pay), and the C decoder importable (a worktree's
    ``src`` has no ``_speedups`` .so unless one is built or copied there: it is not in git, and the
    pure-Python twin reads the source 4-10x slower, a 300,000-record plan 4-5 s instead of 0.2-0.5 s)."""
    python = str(ROOT / ".venv" / "bin" / "python")
    code = "import logdoctor, logdoctor.formats.batch_v2 as b; print(b.DECODERS.name, logdoctor.__file__)"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True)
    decoder, init = out.stdout.split()
    tree = Path(init).parents[1]
    compiled = dict(env or os.environ, PYTHONDONTWRITEBYTECODE="")
    subprocess.run(
        [python, "-m", "compileall", "-q", str(tree)], env=compiled, check=True, capture_output=True
    )
    print(f"  {what}: {tree} (bytecode compiled), decoder {decoder}", flush=True)
    if decoder != "c":
        raise SystemExit(f"{what}: the {decoder} decoder, not the C extension: build or copy _speedups there")


def end_offset(cluster: kafka_cluster.KafkaCluster, topic: str, partitions: int = 1) -> int:
    """The sum of the topic's partitions' end offsets."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "bench-check"})
    try:
        return sum(
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)
        )
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


#: the replay's producer settings (replay/apply.py _producer), given to the perf test: like for like
REPLAY_BATCHES = ["linger.ms=10", "batch.size=1000000"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--txn-ms", type=int, default=3000, help="perf-test --transaction-duration-ms")
    ap.add_argument("--partitions", default="1", help="the source topic's partition counts: 1,4")
    ap.add_argument("--kafka-backup", type=Path, help="the peer's binary (the module doc)")
    ap.add_argument("--replay-codec", action="append", default=[], metavar="CODEC",
                    help="one more replay run per CODEC (repeatable): `--compression CODEC` (the source "
                    "is uncompressed; kafka-backup's restore always writes zstd)")  # fmt: skip
    ap.add_argument("--baseline", type=Path, metavar="SRC",
                    help="one more replay run a round from this src directory (the module doc)")  # fmt: skip
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    table = TableRows()
    print(f"# replay vs kafka-producer-perf-test and kafka-backup: {machine()}")
    counts = [int(p) for p in args.partitions.split(",")]
    sources = {p: source_log_dir(args.records, args.size, p, args.kafka_backup) for p in counts}
    perf = str(kafka_cluster.kafka_bin(kafka_cluster.NEWEST) / "kafka-producer-perf-test.sh")
    root = BENCH_TMP / "replay-target"
    shutil.rmtree(root, ignore_errors=True)
    codecs = {f"replay-{c}": c for c in args.replay_codec}
    base = ["replay-base"] if args.baseline else []
    names = ["replay", *base, *codecs, "perf", "perf-txn"] + (["kafka-backup"] if args.kafka_backup else [])
    base_env = None if not args.baseline else dict(os.environ, PYTHONPATH=str(args.baseline.resolve()))
    ready_tree(None, "replay")
    if base_env is not None:
        ready_tree(base_env, "replay-base")
    walls: dict[tuple[int, str], list[float]] = {(p, k): [] for p in counts for k in names}
    loads: dict[tuple[int, str], list[str]] = {k: [] for k in walls}
    cpus: dict[tuple[int, str], list[float]] = {k: [] for k in walls}
    brokers: dict[tuple[int, str], list[float]] = {k: [] for k in walls}
    n, size = args.records, args.size
    with kafka_cluster.KafkaCluster(root) as cluster:
        b = cluster.bootstrap
        for r in range(args.repeat):
            for parts in counts:
                for name in names:
                    topic = f"{name}-{parts}-{r}"
                    cluster.create_topic(topic, parts)
                    if name.startswith("replay"):
                        argv = [str(LOGDOCTOR), "replay", str(sources[parts]), "--bootstrap-server", b,
                                "--topic-map", f"bench={topic}", "--apply", "--json"]  # fmt: skip
                        if name in codecs:
                            argv += ["--compression", codecs[name]]
                    elif name == "kafka-backup":
                        argv = peer_restore(args.kafka_backup, source_work(n, size, parts), b, topic)
                    else:
                        argv = [perf, "--topic", topic, "--num-records", str(n), "--record-size", str(size),
                                "--throughput", "-1", "--producer-props", "acks=all", *REPLAY_BATCHES,
                                f"bootstrap.servers={b}"]  # fmt: skip
                        if name == "perf-txn":
                            argv += ["--transactional-id", f"bench-{parts}-{r}", "--transaction-duration-ms",
                                     str(args.txn_ms)]  # fmt: skip
                    before = broker_cpu(cluster)
                    wall, out = timed(argv, base_env if name == "replay-base" else None)
                    brokers[(parts, name)].append(broker_cpu(cluster) - before)
                    if name.startswith("replay"):
                        assert json.loads(out)["result"]["records"] == n, out[-500:]
                    high = end_offset(cluster, topic, parts)
                    # the perf test's transactions each end with a marker: more offsets than records
                    assert high >= n, f"{topic}: {high} offsets, {n} records"
                    walls[(parts, name)].append(wall)
                    cpus[(parts, name)].append(CPU[-1])
                    loads[(parts, name)].append(load_average())
                    mbs = n * size / wall / 1e6
                    print(f"  round {r} {parts} partition(s) {name}: {wall:.2f} s ({mbs:.1f} MB/s), "
                          f"CPU {CPU[-1]:.2f} s, broker CPU {brokers[(parts, name)][-1]:.2f} s, "
                          f"load {loads[(parts, name)][-1]}", flush=True)  # fmt: skip
        if args.profile:
            topic = "profiled"
            cluster.create_topic(topic, counts[-1])
            profile_replay(sources[counts[-1]], b, topic)
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n## {n:,} records of {size} B, median of {args.repeat} interleaved rounds")
    print(
        "| partitions | run | wall | MB/s | records/s | CPU | broker CPU | loads |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    for (parts, k), w in med.items():
        cpu, broker = statistics.median(cpus[(parts, k)]), statistics.median(brokers[(parts, k)])
        print(f"| {parts} | {k} | {w:.2f} s | {n * size / w / 1e6:.1f} | {n / w:,.0f} | {cpu:.2f} s | "
              f"{broker:.2f} s | {', '.join(loads[(parts, k)])} |")  # fmt: skip

    def rate(parts: int, k: str) -> str:
        return f"{n * size / med[(parts, k)] / 1e6:.1f} MB/s ({med[(parts, k)]:.2f} s)"

    for parts in counts:
        where = "one partition" if parts == 1 else f"{parts} partitions"
        label = f"{n:,} records of {size} B, {where}, whole process"
        # a rate: higher is better, the ratio is the replay's rate over the anchor's
        table.add(
            f"`replay --apply` vs `kafka-producer-perf-test.sh` acks=all, {label}",
            rate(parts, "replay"), f"perf-test acks=all {' '.join(REPLAY_BATCHES)}: {rate(parts, 'perf')}",
            ratio(med[(parts, "perf")], med[(parts, "replay")]),
        )  # fmt: skip
        table.add(
            f"`replay --apply` vs `kafka-producer-perf-test.sh` transactional, {label}",
            rate(parts, "replay"),
            f"perf-test --transactional-id, --transaction-duration-ms {args.txn_ms}: "
            f"{rate(parts, 'perf-txn')}",
            ratio(med[(parts, "perf-txn")], med[(parts, "replay")]),
        )
        for run in ("replay", *codecs) if args.kafka_backup else ():
            how = "" if run == "replay" else f" --compression {codecs[run]}"
            table.add(
                f"`replay --apply`{how} vs kafka-backup restore (osodevops, e5ab922; zstd), {label}",
                rate(parts, run), f"kafka-backup restore: {rate(parts, 'kafka-backup')}",
                ratio(med[(parts, "kafka-backup")], med[(parts, run)]),
            )  # fmt: skip
    for parts in counts if args.baseline else ():
        where = "one partition" if parts == 1 else f"{parts} partitions"
        at = subprocess.run(["git", "-C", str(args.baseline), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
        table.add(
            f"`replay --apply` vs the replay before (`--baseline`), {n:,} records of {size} B, {where}, "
            "whole process",
            rate(parts, "replay"), f"replay at {at}: {rate(parts, 'replay-base')}",
            ratio(med[(parts, "replay-base")], med[(parts, "replay")]),
        )  # fmt: skip
    if len(counts) > 1:
        one, most = counts[0], counts[-1]
        table.add(
            f"`replay --apply` {most} partitions vs 1, {n:,} records of {size} B, whole process",
            rate(most, "replay"), f"1 partition: {rate(one, 'replay')}",
            ratio(med[(one, "replay")], med[(most, "replay")]),
        )  # fmt: skip
    table.print()


if __name__ == "__main__":
    main()

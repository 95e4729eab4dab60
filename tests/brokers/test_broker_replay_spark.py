"""Issue 72 at scale with real brokers: ``logdoctor replay --master``, one Spark task per source partition.

A source cluster (Kafka 4.4.0, one KRaft node) is written by real clients and stopped: its log dir is the
dead broker's, and what a ``read_committed`` consumer of it read while it ran is the oracle. A second
cluster is the target:

1. ``test_spark_replay_is_the_local_replay``: the same log dir (plain records of two partitions with
   headers, tombstones, null keys; a transactional topic with an aborted and an open transaction) replayed
   without Spark and with ``--master local[2]`` (the tests' Spark session: the CLI run in this process),
   each into topics of its own: a ``read_committed`` consumer reads the same records (offsets, keys, values,
   headers, timestamps, order) from both, the oracle's; the JSON results are the same; the offset maps
   (pyarrow's one file, Spark's Parquet folder, and a rerun's Delta table written by Spark's tasks) hold
   the same rows. The rerun sends nothing. plain was written by a zstd producer: both replays write zstd
   batches into the target's log dir (one rule, the partition plan's codec: issue 89 item 1), txn's none.
2. ``test_spark_replay_killed_and_rerun``: a Spark replay (``local[2,2]``: a task may be tried twice) in a
   process of its own; the task of partition 0 kills its Python worker after a few transactions (Spark
   retries it: the retry resumes from the committed progress), then the whole process group (the driver,
   its JVM, the workers) is killed with SIGKILL mid-way; a rerun on Spark ends the replay. Every record is
   in the target once, in order, and the offset map read back pairs it with its source offset.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

import kafka_cluster as kc

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

BASE_TS = int(time.time() * 1000) - 3_600_000  # within the target's retention
BIG = 400  # records per partition of the topic replayed under kills
TOPICS = ("plain", "txn")


def _produce(producer, topic: str, rows: list[tuple], partition: int = 0) -> None:
    for key, value, headers, ts in rows:
        producer.produce(topic, value=value, key=key, partition=partition, headers=headers, timestamp=ts)
    assert producer.flush(60) == 0


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory):
    """The dead broker: (its log dir, {(topic, partition): the read_committed oracle})."""
    cluster = kc.KafkaCluster(tmp_path_factory.mktemp("replay-spark-source"))
    cluster.start()
    try:
        cluster.create_topic("plain", 2)
        cluster.create_topic("txn", 1)
        cluster.create_topic("big", 2)
        p = cluster.producer()
        zstd = cluster.producer(compression_type="zstd")
        for part in (0, 1):
            rows = []
            for i in range(30):
                headers = (
                    [("trace", f"t{part}-{i}".encode()), ("dup", b"1"), ("dup", None)] if i % 3 else None
                )
                value = None if i == 7 else (b"" if i == 8 else f"value-{part}-{i}".encode())
                key = None if i == 9 else f"key-{i % 10}".encode()
                rows.append((key, value, headers, BASE_TS + part * 1000 + i * 7))
            _produce(zstd, "plain", rows, part)
            big = [
                (f"big-{i}".encode(), f"{part}-{i:06d}".encode() * 4, [("i", str(i).encode())], BASE_TS + i)
                for i in range(BIG)
            ]
            _produce(p, "big", big, part)
        t1 = cluster.producer(**{"transactional.id": "spark-source-t1"})
        t1.init_transactions(60)
        t1.begin_transaction()
        committed = [(b"c1", b"committed-1", [("h", b"1")], BASE_TS + 1), (b"c2", b"c-2", None, BASE_TS + 2)]
        _produce(t1, "txn", committed)
        t1.commit_transaction(60)
        t1.begin_transaction()
        _produce(t1, "txn", [(b"a1", b"aborted-1", None, BASE_TS + 3)])
        t1.abort_transaction(60)
        _produce(p, "txn", [(b"p1", b"plain-1", None, BASE_TS + 4)])
        t1.begin_transaction()
        _produce(t1, "txn", [(b"c3", b"committed-3", None, BASE_TS + 5)])
        t1.commit_transaction(60)
        # open for the module's whole run: the coordinator's decision at a restart (an Ongoing transaction
        # aborts once its timeout passed: logdir/coordinator.py) holds it open in every run, not only in those
        # within 60 s (the default) of this one
        t2 = cluster.producer(**{"transactional.id": "spark-source-t2", "transaction.timeout.ms": 600000})
        t2.init_transactions(60)
        t2.begin_transaction()
        _produce(t2, "txn", [(b"o1", b"open-1", None, BASE_TS + 6)])  # never committed nor aborted
        t1.begin_transaction()
        _produce(t1, "txn", [(b"c4", b"committed-after-open", None, BASE_TS + 7)])
        t1.commit_transaction(60)
        oracle = {
            (topic, part): kc.read_all(cluster.bootstrap, topic, part)
            for topic, part in (("plain", 0), ("plain", 1), ("txn", 0), ("big", 0), ("big", 1))
        }
        del t1, t2, p, zstd
    finally:
        cluster.stop()
    assert [r[1] for r in oracle[("txn", 0)]] == [b"c1", b"c2", b"p1", b"c3"]
    assert [len(oracle[("big", p)]) for p in (0, 1)] == [BIG, BIG]
    return cluster.broker(1).log_dirs[0], oracle


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    # a killed run's lease member expires after its session timeout: 2 s (the broker's minimum is 6 s by
    # default), so that the rerun of test_spark_replay_killed_and_rerun waits 2 s for it, not 6
    config = {"group.min.session.timeout.ms": 2000}
    with kc.KafkaCluster(tmp_path_factory.mktemp("replay-spark-target"), broker_config=config) as cluster:
        yield cluster


def _content(rows: list[tuple]) -> list[tuple]:
    return [(k, v, h, ts) for _o, k, v, h, ts in rows]


def _cli(*args: str, output: bool = False) -> tuple[int, str]:
    """``logdoctor ARGS`` in this process: with ``--master``, get_spark returns the tests' session. Its
    exit code and stdout (``output``: stdout and stderr)."""
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    res = CliRunner().invoke(app, list(args), terminal_width=400)
    return res.exit_code, res.output if output else res.stdout


def _rows(table, prefix: str) -> list[tuple]:
    """An offset map's rows, its target topics' ``prefix`` taken off, sorted."""
    out = []
    for r in table.to_pylist():
        assert r["target_topic"].startswith(prefix), r
        out.append((r["source_topic"], r["source_partition"], r["source_offset"],
                    r["target_topic"][len(prefix):], r["target_partition"], r["target_offset"]))  # fmt: skip
    return sorted(out)


def _unprefixed(result: dict, prefix: str) -> list[dict]:
    return [
        {**p, "target": p["target"].removeprefix(prefix)}
        for p in sorted(result["partitions"], key=lambda p: p["source"])
    ]


def test_spark_replay_is_the_local_replay(source, target, spark, tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    log_dir, oracle = source
    args = [str(log_dir), "--bootstrap-server", target.bootstrap, "--topics", ",".join(TOPICS), "--apply"]

    def renamed(prefix: str) -> list[str]:
        return [a for t in TOPICS for a in ("--topic-map", f"{t}={prefix}{t}")]

    # what a Spark replay cannot do: refused before anything starts (64)
    for refused, words in (
        (["--remote", "sc://127.0.0.1:9"], "--remote"),
        (["--conf", "spark.executor.cores=2"], "--conf goes with --master"),
        (["--master", "local[2]", "--max-rate", "10"], "--max-rate"),
    ):
        code, out = _cli("replay", *args, *refused, output=True)
        assert code == 64 and words in out, (refused, out)

    local_map, spark_map, delta_map = tmp_path / "local-map", tmp_path / "spark-map", tmp_path / "delta-map"
    local = kc.logdoctor_json("replay", *args, *renamed("local-"), "--offset-map", str(local_map))
    assert local["applied"] is True and local["result"]["records"] == 64, local

    started = time.monotonic()
    code, out = _cli(
        "replay", *args, *renamed("spark-"), "--master", "local[2]", "--offset-map", str(spark_map), "--json"
    )
    seconds = time.monotonic() - started
    assert code == 0, out
    got = json.loads(out)
    assert got["applied"] is True and got["result"]["records"] == 64
    assert _unprefixed(got["result"], "spark-") == _unprefixed(local["result"], "local-")
    assert sorted(t.removeprefix("spark-") for t in got["result"]["created_topics"]) == sorted(TOPICS)
    assert got["offset_map"]["rows"] == 64 and got["offset_map"]["writer"] == "spark"

    from logdoctor.formats.records import iter_batches

    for topic, part in (("plain", 0), ("plain", 1), ("txn", 0)):
        from_local = kc.read_all(target.bootstrap, f"local-{topic}", part, to_end=True)
        from_spark = kc.read_all(target.bootstrap, f"spark-{topic}", part, to_end=True)
        assert from_spark == from_local, (topic, part)  # offsets, keys, values, headers, timestamps, order
        assert _content(from_spark) == _content(oracle[(topic, part)])
        for prefix in ("local-", "spark-"):  # the codec of the batches written (not the markers)
            folder = target.broker(1).log_dirs[0] / f"{prefix}{topic}-{part}"
            codecs = {
                b.compression.label
                for seg in kc.segments(folder)
                for b in iter_batches(seg.read_bytes())
                if not b.is_control
            }
            assert codecs == {"zstd" if topic == "plain" else "none"}, (prefix, topic, part)

    want = _rows(pq.read_table(local_map / "offset-map.parquet"), "local-")
    assert len(want) == 64
    assert {n for n in os.listdir(spark_map) if not n.startswith((".", "_"))} and not (
        spark_map / "offset-map.parquet"
    ).exists()
    assert _rows(pq.read_table(spark_map), "spark-") == want  # Spark's Parquet writer: one table, same rows

    # a rerun sends nothing; its offset map as a Delta table, its files written by Spark's tasks
    code, out = _cli(
        "replay", *args, *renamed("spark-"), "--master", "local[2]", "--offset-map", str(delta_map),
        "--offset-map-format", "delta",
    )  # fmt: skip
    assert code == 0, out
    assert "Replayed 0 records of 3 partition(s)" in out and "Offset map: 64 rows" in out, out
    delta = DeltaTable(str(delta_map))
    assert delta.version() == 0
    assert _rows(delta.to_pyarrow_table(), "spark-") == want
    print(f"spark replay (CLI, local[2], tests' session): {seconds:.1f} s")


_ENTRY = """
import json, os, signal, sys, time
from pathlib import Path
from logdoctor.logdir.read_options import ReadOptions
from logdoctor.replay import TopicMap, apply_replay, plan_replay
from logdoctor.spark.replay_job import spark_runner
from logdoctor.spark.session import get_spark
args = json.loads(sys.argv[1])

def hook(pp, prog):  # in the task, after each commit
    from pyspark import TaskContext
    time.sleep(args["pause"])
    if pp.source_partition == 0 and TaskContext.get().attemptNumber() == 0 and prog.records >= args["die_at"]:
        Path(args["marker"]).write_text(str(prog.records))
        os.kill(os.getpid(), signal.SIGKILL)  # the task's Python worker: Spark tries the task again

spark = get_spark("local[2,2]", "logdoctor-replay-kill", sql=False)
plan = plan_replay([args["log_dir"]], args["bootstrap"], opts=ReadOptions(topics="big"),
                   topic_map=TopicMap({"big": args["topic"]}))
print("planned", flush=True)
runner = spark_runner(spark, on_transaction=hook)
result = apply_replay(plan, txn_records=20, session_timeout_ms=2000, runner=runner)
print("done", result.records, flush=True)
"""


def _group(pgid: int) -> list[int]:
    """The processes still alive in process group ``pgid``."""
    alive = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    alive.append(int(entry))
            except ProcessLookupError:
                continue
    return alive


def test_spark_replay_killed_and_rerun(source, target, spark, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from logdoctor.logdir.read_options import ReadOptions
    from logdoctor.replay import TopicMap, apply_replay, plan_replay
    from logdoctor.replay.target import Target
    from logdoctor.spark.replay_job import spark_runner, write_offset_map_table

    log_dir, oracle = source
    topic = "big-spark"

    def plan():
        return plan_replay(
            [str(log_dir)],
            target.bootstrap,
            opts=ReadOptions(topics="big"),
            topic_map=TopicMap({"big": topic}),
        )

    groups = {pp.target_partition: pp.group for pp in plan().partitions}
    tgt = Target(target.bootstrap)

    def committed(part: int) -> int:
        """The records of partition ``part`` whose progress is committed on the target."""
        progress, _pending = tgt.committed_progress(groups[part], topic, [part])
        return progress[part].records if part in progress else 0

    marker, log = tmp_path / "worker-killed", tmp_path / "replay.log"
    args = {"log_dir": str(log_dir), "bootstrap": target.bootstrap, "topic": topic, "pause": 0.15,
            "die_at": 100, "marker": str(marker)}  # fmt: skip
    proc = kc.spawn([sys.executable, "-c", _ENTRY, json.dumps(args)], log=log)
    try:
        kc.wait_until("a task to kill its worker", lambda: marker.exists() or proc.poll() is not None, 240)
        assert marker.exists(), log.read_text()[-3000:]
        at = int(marker.read_text())
        # the retried task resumes from the progress committed before its worker died, and goes on
        kc.wait_until("the retried task to commit", lambda: committed(0) > at or proc.poll() is not None, 120)
        assert proc.poll() is None, f"the replay ended before its kill: {log.read_text()[-3000:]}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and the Python workers
        proc.wait(30)
    kc.wait_until("every process of the killed replay to end", lambda: not _group(proc.pid), 30)
    before = committed(0) + committed(1)
    assert "done" not in log.read_text() and at < before < 2 * BIG, (before, log.read_text()[-3000:])

    again = plan()
    assert again.remaining_records == 2 * BIG - before
    result = apply_replay(again, txn_records=50, session_timeout_ms=2000, runner=spark_runner(spark))
    # a commit the killed run had begun (pending in the plan) completes when the rerun fences its producer:
    # the rerun sends what is left after it
    pending = sum(pp.pending for pp in again.partitions)
    assert 2 * BIG - before - 20 * pending <= result.records <= 2 * BIG - before, (result, pending)
    assert sorted(p.target for p in result.partitions) == [f"{topic}-0", f"{topic}-1"]
    assert [p.progress.records for p in result.partitions] == [BIG, BIG]

    written = write_offset_map_table(spark, again, str(tmp_path / "map"), 60.0)
    assert written["rows"] == 2 * BIG
    rows = pq.read_table(tmp_path / "map").to_pylist()
    for part in (0, 1):
        want = oracle[("big", part)]
        got = kc.read_all(target.bootstrap, topic, part, to_end=True)
        assert _content(got) == _content(want), part  # every record once, in order
        pairs = sorted(
            (r["source_offset"], r["target_offset"]) for r in rows if r["source_partition"] == part
        )
        assert pairs == [(s[0], t[0]) for s, t in zip(want, got, strict=True)]

"""`export`, `census` and `replay --master` on a real Spark standalone cluster (master + 2 one-core workers
on 127.0.0.1).

Bounded: the cluster starts in ~10 s, each job is a small generated log dir or the demo fleet;
the whole module takes about 2-3 minutes on 2 shared cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict

import oracle
import pyarrow.parquet as pq
import pytest
from standalone import cluster_env, spark_home

import kafka_cluster as kc
import logdoctor
import realworld
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.census import run_census
from logdoctor.spark.export import run_export

pytestmark = [pytest.mark.spark, pytest.mark.slow]
NOW_MS = 1_767_225_600_000  # 2026-01-01, fixed so both census runs judge timestamps alike
JOB_TIMEOUT_S = 420


@pytest.fixture
def master(standalone_master):
    """The standalone cluster every cluster module shares (tests/spark/conftest.py)."""
    return standalone_master


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("cluster-export") / "kafka-logs",
        [
            TopicSpec(
                "events",
                partitions=3,
                records_per_partition=900,
                records_per_batch=9,
                segment_bytes=24 * 1024,
            ),
            TopicSpec("audit", partitions=1, records_per_partition=400, records_per_batch=1),
        ],
    )
    return path


def _cli(args, env_extra=None, submit_master=None):
    if submit_master is None:
        cmd = [sys.executable, "-m", "logdoctor", *args]
    else:
        entry = os.path.join(os.path.dirname(logdoctor.__file__), "__main__.py")
        cmd = [
            os.path.join(spark_home(), "bin", "spark-submit"),
            "--master",
            submit_master,
            "--conf",
            "spark.executor.memory=512m",
            entry,
            *args,
        ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, env=cluster_env(env_extra), check=False
    )
    return proc


def _digest_table(out):
    table = pq.read_table(out)
    cols = ("topic", "partition", "offset", "key", "value")
    return oracle.digest(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def _oracle(logdir):
    return oracle.digest(
        (t, p, o, k, v) for log in logdir.glob("*/*.log") for t, p, o, _, k, v in oracle.records_of(log)
    )


def test_export_on_the_cluster_goes_through_sparks_writer(spark, master, logdir, tmp_path):
    out = tmp_path / "cluster-out"
    proc = _cli(
        [
            "export",
            str(logdir),
            "--out",
            str(out),
            "--master",
            master,
            "--json",
            "--conf",
            "spark.executor.memory=512m",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout)
    assert summary["writer"] == "spark" and summary["rows"] == 3100
    assert (out / "_SUCCESS").is_file() and not (out / "_temporary").exists()
    local = run_export(spark, [str(logdir)], tmp_path / "local-out", writer="arrow")
    assert local.rows == 3100
    assert _digest_table(out) == _digest_table(tmp_path / "local-out") == _oracle(logdir)


def test_arrow_writer_is_refused_on_a_cluster(master, logdir, tmp_path):
    proc = _cli(
        [
            "export",
            str(logdir),
            "--out",
            str(tmp_path / "o"),
            "--master",
            master,
            "--writer",
            "arrow",
            "--conf",
            "spark.executor.memory=512m",
        ]
    )
    assert proc.returncode == 64, proc.stderr[-3000:]
    assert "--writer spark" in proc.stdout + proc.stderr
    assert not (tmp_path / "o").exists()


def test_export_with_spark_submit(master, logdir, tmp_path):
    out = tmp_path / "submitted"
    proc = _cli(["export", str(logdir), "--out", str(out), "--json"], submit_master=master)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert summary["writer"] == "spark" and summary["rows"] == 3100  # the submitted master, not local[*]
    assert _digest_table(out) == _oracle(logdir)


def test_census_on_the_cluster_matches_local(spark, master, demo_fleet, tmp_path):
    demo_root = demo_fleet.root  # read only (tests/conftest.py)
    proc = _cli(
        [
            "census",
            str(demo_root),
            "--out",
            str(tmp_path / "cluster-census"),
            "--master",
            master,
            "--json",
            "--now",
            str(NOW_MS),
            "--conf",
            "spark.executor.memory=512m",
        ]
    )
    assert proc.returncode in (0, 1, 2), proc.stderr[-4000:]
    remote = json.loads(proc.stdout)
    local = json.loads(
        json.dumps(
            run_census(spark, [str(demo_root)], tmp_path / "local-census", now_ms=NOW_MS).to_json(),
            default=str,
        )
    )
    for key in ("replicas", "partitions"):
        assert remote[key] == local[key], key
    assert sorted(json.dumps(f, sort_keys=True) for f in remote["findings"]) == sorted(
        json.dumps(f, sort_keys=True) for f in local["findings"]
    )
    assert remote["findings"], "the demo fleet has planted faults"


# a real log dir of 4 partitions with records (first_topic-0..2, new_topic-0; written in 2020): test-fast's
REPLAY_SOURCE = "zk-pre2.8-volodymyrzee"


def _spark_tasks(events_dir, description: str) -> list[dict]:
    """The tasks of the job ``description`` as the one Spark event log in ``events_dir`` (the application's
    listener events, JSON lines) tells them: each one's index, executor, end reason, whether that executor
    registered with the application, and the application's master."""
    (log,) = [p for p in events_dir.iterdir() if p.name.startswith("app-") and "." not in p.name]
    events: dict[str, list[dict]] = defaultdict(list)
    for line in log.read_text().splitlines():
        event = json.loads(line)
        events[event["Event"]].append(event)
    (env,) = events["SparkListenerEnvironmentUpdate"]
    executors = {e["Executor ID"] for e in events["SparkListenerExecutorAdded"]}
    stages = {
        sid
        for e in events["SparkListenerJobStart"]
        if e["Properties"].get("spark.job.description") == description
        for sid in e["Stage IDs"]
    }
    return [
        {
            "index": e["Task Info"]["Index"],
            "executor": e["Task Info"]["Executor ID"],
            "reason": e["Task End Reason"]["Reason"],
            "registered": e["Task Info"]["Executor ID"] in executors,
            "master": env["Spark Properties"]["spark.master"],
        }
        for e in events["SparkListenerTaskEnd"]
        if e["Stage ID"] in stages
    ]


@pytest.mark.kafka
def test_replay_on_the_cluster_one_task_per_partition(spark, master, tmp_path):
    """Issue 72 item 5: ``replay --master spark://...`` of a real log dir into a real broker (Kafka 4.4.0,
    one KRaft node): a read_committed consumer of each target partition reads exactly the records ``export``
    gives of the source partition; each source partition was one task, run by the cluster's executors
    (Spark's event log); the offset map pairs every source offset with its target offset; a rerun sends 0."""
    source = str(realworld.require() / REPLAY_SOURCE)
    # the records are from 2020: no retention on the target, or its cleaner would delete them
    target = kc.KafkaCluster(tmp_path / "target", broker_config={"log.retention.ms": -1})
    target.start(wait=False)
    try:
        # meanwhile, what `logdoctor export` gives of the source (the tests' local session)
        run_export(spark, [source], tmp_path / "export", writer="arrow")
        want: dict[tuple[str, int], list[tuple]] = defaultdict(list)
        exported = pq.read_table(tmp_path / "export").to_pylist()
        for r in sorted(exported, key=lambda r: (r["topic"], r["partition"], r["offset"])):
            if not r["topic"].startswith("__"):
                headers = tuple((h["key"], h["value"]) for h in r["headers"] or ())
                ts = int(r["timestamp"].timestamp() * 1000)
                want[(r["topic"], r["partition"])].append((r["offset"], r["key"], r["value"], headers, ts))
        assert sorted(want) == [("first_topic", 0), ("first_topic", 1), ("first_topic", 2), ("new_topic", 0)]
        target.wait_started()

        events = tmp_path / "events"
        events.mkdir()
        started = time.monotonic()
        proc = _cli(
            [
                "replay", source, "--bootstrap-server", target.bootstrap, "--apply", "--master", master,
                "--offset-map", str(tmp_path / "map"), "--json",
                "--conf", "spark.executor.memory=512m", "--conf", "spark.eventLog.enabled=true",
                "--conf", f"spark.eventLog.dir={events}", "--conf", "spark.eventLog.compress=false",
                "--conf", "spark.eventLog.rolling.enabled=false",
            ]
        )  # fmt: skip
        seconds = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr[-4000:]
        got = json.loads(proc.stdout)
        total = sum(len(rows) for rows in want.values())
        assert got["applied"] is True and got["result"]["records"] == total == 43, got.get("result")
        assert sorted(got["result"]["created_topics"]) == ["first_topic", "new_topic"]
        assert {p["source"]: (p["target"], p["records"]) for p in got["result"]["partitions"]} == {
            f"{t}-{p}": (f"{t}-{p}", len(rows)) for (t, p), rows in want.items()
        }
        assert got["offset_map"]["rows"] == total and got["offset_map"]["writer"] == "spark"

        # one task per source partition, each run once, by an executor of the cluster (not the driver)
        for job in ("logdoctor replay: 4 partition(s)", "logdoctor replay: the offset map"):
            tasks = _spark_tasks(events, job)
            assert sorted(t["index"] for t in tasks) == [0, 1, 2, 3], (job, tasks)
            assert all(
                t["reason"] == "Success" and t["registered"] and t["executor"] != "driver" for t in tasks
            ), tasks
            assert {t["master"] for t in tasks} == {master}

        # the target: exactly the exported records (keys, values, headers, timestamps, order), once
        rows = pq.read_table(tmp_path / "map").to_pylist()
        for (topic, part), records in want.items():
            read = kc.read_all(target.bootstrap, topic, part, to_end=True)
            assert [r[1:] for r in read] == [r[1:] for r in records], (topic, part)
            pairs = sorted(
                (r["source_offset"], r["target_topic"], r["target_partition"], r["target_offset"])
                for r in rows
                if (r["source_topic"], r["source_partition"]) == (topic, part)
            )
            assert pairs == [(s[0], topic, part, t[0]) for s, t in zip(records, read, strict=True)]
        assert len(rows) == total

        # a rerun (the local loop: the plan reads the progress the executors committed) sends nothing
        again = kc.logdoctor_json("replay", source, "--bootstrap-server", target.bootstrap, "--apply")
        assert again["plan"]["remaining_records"] == 0 and again["result"]["records"] == 0, again
        print(f"replay --master {master}: {seconds:.1f} s (the driver's process, its Spark application)")
    finally:
        target.kill()

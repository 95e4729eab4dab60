"""`logdoctor retention` on tiered topics, judged by real Kafka 4.3.1 and 4.4.0 brokers (issue 74).

The 4.3.1 broker runs Kafka's own reference RemoteStorageManager, `LocalTieredStorage` from
kafka-storage-4.3.1-test.jar. Maven Central has no 4.4.0 test classifier, and 4.3.1's class does not load in
4.4.0 (it links org.apache.kafka.common.utils.LogContext, moved to common.utils.internals in 4.4.0:
NoClassDefFoundError at start; given through remote.log.storage.manager.class.path with 4.3.1's
kafka-clients, the first copy never finishes), so the 4.4.0 broker runs a RemoteStorageManager of plain
files (tests/brokers/rsm/DirectoryRemoteStorageManager.java) that the test compiles with javac against
4.4.0's own storage API. Both use the default TopicBasedRemoteLogMetadataManager.

The rules, read from the releases' own classes (docs/tiered-storage.md, "Local retention by release"):

- local time retention of a remote log (UnifiedLog.deleteRetentionMsBreachedSegments and
  deletableSegments) is the same in 4.3.1 and 4.4.0: a segment's age is ``now - largestTimestamp``; a
  segment whose largest timestamp is in the future is never time-breached ("contains future
  timestamp(s), making it ineligible to be deleted"), even uploaded, and the pass stops there, so every
  later segment stays local too. KAFKA-20609 (the file time as the anchor of an uploaded future
  segment) is not in 4.4.0's jar;
- 4.4.0 adds delayed upload (KIP-1241): RemoteLogManager.RLMCopyTask uploads a segment only once
  ``remote.copy.lag.ms`` has passed since its largest timestamp (or ``remote.copy.lag.bytes`` of newer
  data follow it); a future timestamp is eligible at once.

The scenario, per broker: first start with the retention check 10 minutes away, the segments produced
with chosen CreateTimes (message.timestamp.after.max.ms raised to let a day ahead in) and uploaded (and, on
4.4.0, some held back by the copy lag); the broker is stopped, the segment files' times set 3 h back (a
broker with KAFKA-20609 would then delete the uploaded future segment), and `logdoctor retention --now`
runs on a copy; the broker restarts with the check every 500 ms, and its own "Deleting segment" lines must
name exactly the segments `retention` said go, its "contains future timestamp(s)" warning the segment
`retention` names. Two broker starts per release: 72 s for both releases with the machine shared.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster

pytestmark = pytest.mark.kafka

RSM = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
FIXTURE_JAR = "kafka-storage-4.3.1-test.jar"
SEGMENT = 1 << 20  # Kafka 4.x refuses a topic segment.bytes below 1 MiB
PER_GROUP = 3000  # ~1.2 MB of records: each group spans a segment boundary
HOUR = 3_600_000
FUTURE = "future"  # old, future, old, current CreateTimes; local.retention.ms 30 min
DELAYED = "delayed"  # 4.4.0: 3 h old, 90 min old, current; local.retention.ms 2 h, remote.copy.lag.ms 1 h
LOCAL_RETENTION_MS = HOUR // 2
DELAYED_LOCAL_MS = 2 * HOUR
COPY_LAG_MS = HOUR
DELETING = re.compile(
    r"\[UnifiedLog partition=(?P<tp>\S+), dir=\S+\] Deleting segment LogSegment\(baseOffset=(?P<base>\d+),"
)
FUTURE_WARNING = re.compile(
    r"LogSegment\(baseOffset=(?P<base>\d+),.*contains future timestamp\(s\), "
    r"making it ineligible to be deleted"
)


#: 4.4.0's RemoteStorageManager: a store of files, compiled by the test (see :func:`_directory_rsm`)
DIRECTORY_RSM = "logdoctor.test.DirectoryRemoteStorageManager"
DIRECTORY_RSM_SOURCE = Path(__file__).parent / "rsm" / "DirectoryRemoteStorageManager.java"


def _value(i: int) -> bytes:
    return i.to_bytes(8, "big") * 48  # 384 bytes


def _directory_rsm(version: str, root: Path) -> tuple[Path, str]:
    """``version``'s jars and the RemoteStorageManager class to run: its own release's LocalTieredStorage
    when the test classifier is installed (4.3.1), else :data:`DIRECTORY_RSM` compiled here against
    ``version``'s storage API into a jar beside symlinks of its jars. (4.3.1's LocalTieredStorage does not
    load in 4.4.0: it links org.apache.kafka.common.utils.LogContext, which 4.4.0 moved to
    common.utils.internals; NoClassDefFoundError at broker start.)"""
    own = kafka_cluster.kafka_libs(version)
    if (own / FIXTURE_JAR).is_file():
        return own, RSM
    src = root / "rsm-src" / "logdoctor" / "test" / "DirectoryRemoteStorageManager.java"
    src.parent.mkdir(parents=True)
    src.write_text(DIRECTORY_RSM_SOURCE.read_text())
    classes = root / "rsm-classes"
    cp = ":".join(str(j) for j in own.glob("kafka-*.jar"))
    subprocess.run(
        ["javac", "--release", "17", "-nowarn", "-cp", cp, "-d", str(classes), str(src)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    libs = root / "libs"
    libs.mkdir()
    for jar in own.glob("*.jar"):
        (libs / jar.name).symlink_to(jar)
    subprocess.run(
        ["jar", "cf", str(libs / "logdoctor-test-rsm.jar"), "-C", str(classes), "."],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return libs, DIRECTORY_RSM


def _broker_config(remote: Path, check_ms: int, rsm: str = RSM) -> dict[str, object]:
    return {
        "remote.log.storage.system.enable": True,
        "remote.log.storage.manager.class.name": rsm,
        "rsm.config.dir": remote,
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.replication.factor": 1,
        "rlmm.config.remote.log.metadata.topic.num.partitions": 2,
        "remote.log.manager.task.interval.ms": 500,
        "log.retention.check.interval.ms": check_ms,
        "log.initial.task.delay.ms": check_ms,
        "log.segment.delete.delay.ms": 100,
    }


def _remote_bases(remote: Path, topic: str) -> set[int]:
    return {int(p.name[:20]) for p in (remote / "kafka-tiered-storage").glob(f"{topic}-0-*/*.log")}


def _local_bases(log_dir: Path, topic: str) -> list[int]:
    return sorted(int(p.name[:20]) for p in (log_dir / f"{topic}-0").glob("*.log"))


@dataclass
class Run:
    version: str
    now_ms: int  # when `retention` judged the copy
    copy: Path
    local_before: dict[str, list[int]]  # topic -> local segment bases at the stop
    uploaded: dict[str, set[int]]  # topic -> base offsets in remote storage at the stop
    report: dict  # `logdoctor retention --json` of the copy
    text: str  # the same, as text
    deleted: dict[str, set[int]] = field(default_factory=dict)  # the broker's "Deleting segment" lines
    future_warned: dict[str, set[int]] = field(default_factory=dict)
    local_after: dict[str, list[int]] = field(default_factory=dict)


def _part(report: dict, topic: str) -> dict:
    return next(p for p in report["partitions"] if p["topic"] == topic and p["partition"] == 0)


@pytest.fixture(scope="module", params=[kafka_cluster.EARLIER_4X, kafka_cluster.NEWEST])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    version: str = request.param
    root = tmp_path_factory.mktemp(f"tiered-retention-{version}")
    remote = root / "remote"
    libs, rsm = _directory_rsm(version, root)
    cluster = kafka_cluster.KafkaCluster(
        root / "cluster", version=version, broker_config=_broker_config(remote, 600_000, rsm)
    )
    cluster.libs = libs
    for node in cluster.nodes:
        node.libs = libs
    delayed = version != kafka_cluster.EARLIER_4X
    topics = (FUTURE, DELAYED) if delayed else (FUTURE,)
    cluster.start()
    broker = cluster.broker(1)
    log_dir = broker.log_dirs[0]
    try:
        now = int(time.time() * 1000)
        cluster.create_topic(
            FUTURE,
            1,
            1,
            {
                "remote.storage.enable": True,
                "segment.bytes": SEGMENT,
                "local.retention.ms": LOCAL_RETENTION_MS,
                "retention.ms": -1,
                "message.timestamp.after.max.ms": 48 * HOUR,
            },
        )
        groups = [now - 2 * HOUR, now + 24 * HOUR, now - 2 * HOUR, now]
        for g, ts in enumerate(groups):
            n = PER_GROUP if g < 3 else 300
            recs = [(None, _value(g * PER_GROUP + i)) for i in range(n)]
            cluster.produce(FUTURE, recs, timestamp=ts, batch_size=16384, linger_ms=2)
        if delayed:
            cluster.create_topic(
                DELAYED,
                1,
                1,
                {
                    "remote.storage.enable": True,
                    "segment.bytes": SEGMENT,
                    "local.retention.ms": DELAYED_LOCAL_MS,
                    "retention.ms": -1,
                    "remote.copy.lag.ms": COPY_LAG_MS,
                },
            )
            for g, ts in enumerate([now - 3 * HOUR, now - 90 * 60_000, now]):
                recs = [(None, _value(g * PER_GROUP + i)) for i in range(PER_GROUP)]
                cluster.produce(DELAYED, recs, timestamp=ts, batch_size=16384, linger_ms=2)

        def uploaded_all() -> bool:
            # every rolled segment of FUTURE is uploaded; DELAYED: those whose largest timestamp is
            # older than the copy lag (the rest are held: checked after the stop)
            rolled = _local_bases(log_dir, FUTURE)[:-1]
            return bool(rolled) and set(rolled) <= _remote_bases(remote, FUTURE)

        kafka_cluster.wait_until("the rolled segments uploaded", uploaded_all, timeout=120)
        time.sleep(3)  # a few more copy task rounds: what is not uploaded now is held
        cluster.stop()
        # the segment files' times well past local.retention.ms: a broker that ages an uploaded future
        # segment by its file time (KAFKA-20609) deletes it at the restart; 4.3.1 and 4.4.0 keep it
        for seg in (log_dir / f"{FUTURE}-0").glob("*.log"):
            os.utime(seg, ((now - 3 * HOUR) / 1000, (now - 3 * HOUR) / 1000))
        local_before = {t: _local_bases(log_dir, t) for t in topics}
        uploaded = {t: _remote_bases(remote, t) for t in topics}
        copy = root / "copy"
        shutil.copytree(log_dir, copy, symlinks=True)
        now_ms = int(time.time() * 1000)
        report = kafka_cluster.logdoctor_json("retention", str(copy), "--now", str(now_ms))
        text = kafka_cluster.logdoctor("retention", str(copy), "--now", str(now_ms), "--all").stdout
        out = Run(version, now_ms, copy, local_before, uploaded, report, text)

        # the judge: the retention check every 500 ms from now on
        broker.config.update(
            {k: str(v) for k, v in _broker_config(remote, 500).items() if k.startswith("log.")}
        )
        broker.write_properties()
        broker.start()
        expected = {
            t: {s["base_offset"] for s in _part(report, t)["segments"] if s["deleted"]} for t in topics
        }

        def settled() -> bool:
            log = broker.log()
            for t in topics:
                got = {int(m["base"]) for m in DELETING.finditer(log) if m["tp"] == f"{t}-0"}
                if got != expected[t] or set(_local_bases(log_dir, t)) & expected[t]:
                    return False
            return FUTURE_WARNING.search(log) is not None

        with contextlib.suppress(AssertionError):  # compared below, with what the broker did say
            kafka_cluster.wait_until("the broker's retention deletions", settled, timeout=60)
        time.sleep(2)  # more retention rounds: nothing else may go
        log = broker.log()
        for t in topics:
            out.deleted[t] = {int(m["base"]) for m in DELETING.finditer(log) if m["tp"] == f"{t}-0"}
            out.future_warned[t] = {
                int(m["base"])
                for line in log.splitlines()
                if f"partition={t}-0," in line
                for m in [FUTURE_WARNING.search(line)]
                if m is not None
            }
            out.local_after[t] = _local_bases(log_dir, t)
        cluster.stop()
        yield out
    finally:
        cluster.stop()


def test_retention_names_exactly_the_segments_the_broker_deletes(run: Run) -> None:
    for topic, deleted in run.deleted.items():
        said = {s["base_offset"] for s in _part(run.report, topic)["segments"] if s["deleted"]}
        assert said == deleted, (run.version, topic, said, deleted, run.text)
        assert deleted, (run.version, topic, "the broker deleted nothing: the scenario did not happen")


def test_future_timestamp_segment_stays_local_and_is_named(run: Run) -> None:
    part = _part(run.report, FUTURE)
    future = [s for s in part["segments"] if s.get("future_timestamp")]
    assert future, (run.version, run.text)
    first = future[0]
    # the broker names the same segment ("contains future timestamp(s), making it ineligible ...")
    assert run.future_warned[FUTURE] == {first["base_offset"]}, (run.future_warned, first)
    assert first["base_offset"] in run.uploaded[FUTURE]  # uploaded, and still local: the broker keeps it
    assert first["base_offset"] in run.local_after[FUTURE]
    assert not first["deleted"]
    assert "future" in (first.get("kept_because") or ""), first
    # everything after it stays local too (the pass stops at it)
    later = [s for s in part["segments"] if s["base_offset"] > first["base_offset"]]
    assert all(not s["deleted"] for s in later)
    assert set(run.local_after[FUTURE]) >= {s["base_offset"] for s in later if not s["active"]}
    assert "largest timestamp in the future" in run.text, run.text


def test_delayed_upload_holds_segments_local(run: Run) -> None:
    future = _part(run.report, FUTURE)
    if run.version == kafka_cluster.EARLIER_4X:
        # remote.copy.lag.* is new in 4.4.0: the 4.3.1 broker's registration says its release
        assert (
            "up to 4.3-IV0" in future["release_rule"] and "without delayed upload" in future["release_rule"]
        )
        assert not any(s["upload_held_by"] for s in future["segments"])
        return
    assert "up to 4.4-" in future["release_rule"] and "with delayed upload" in future["release_rule"]
    part = _part(run.report, DELAYED)
    rolled = [s for s in part["segments"] if not s["active"]]
    held = [s for s in rolled if s["base_offset"] not in run.uploaded[DELAYED]]
    assert held, (run.uploaded, run.text)  # the broker holds the recent segments back
    assert all(s["base_offset"] in run.local_after[DELAYED] for s in held)
    for s in rolled:
        # retention says which are held by the copy lag, and only those
        assert bool(s.get("upload_held_by")) == (s["base_offset"] not in run.uploaded[DELAYED]), s
    assert "remote.copy.lag.ms" in held[0]["upload_held_by"]
    assert "remote.copy.lag.ms" in run.text

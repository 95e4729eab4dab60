"""A corrupt index after an unclean shutdown (field report 000), judged by a real Kafka 4.4.0 broker.

One KRaft node (both roles) holds a topic of 1 MiB segments. Records go in with acks=all (the acknowledged
offsets kept) in two phases: the first ends with a clean stop, which writes the recovery point at its log
end (recovery-point-offset-checkpoint; the periodic checkpoint is put off by
``log.flush.offset.checkpoint.interval.ms``/``log.initial.task.delay.ms``); the second is cut by SIGKILL
while a producer runs, so the log dir is as an unclean shutdown leaves it: no ``.kafka_cleanshutdown``,
segments written after the recovery point, the active segment's indexes preallocated.

Then the indexes are damaged as field report 000 shows ("Corrupt index found ... has non-zero size but the
last offset is X which is no larger than the base offset X": an inactive segment's index left untrimmed,
zeros after its entries) and as a broken disk does (a truncated index, entries zeroed, garbage entries),
both in segments below the recovery point, which a 4.4 broker loads as they are (LogSegment.sanityCheck
only checks that the ``.index`` exists since KAFKA-7283), and in segments at or above it, which
LogLoader.recoverLog recovers at the next start after an unclean shutdown (from the segment holding the
recovery point: LogSegments.values starts at the floor segment; LogSegment.recover resets the three indexes
and rebuilds them from the .log). K:storage/src/main/java/org/apache/kafka/storage/internals/log/
LogLoader.java (loadSegmentFiles, recoverLog), LogSegment.java (sanityCheck, recover).

Checked:

- ``logdoctor scan`` finds every damaged index (INDEX_CORRUPT), quotes the field report's message for the
  untrimmed one, and says which of them the broker's recovery rebuilds at the next start ("Recovering
  unflushed segment N") and which it uses as is; the broker's log then lists exactly those segments as
  recovered;
- the fix scan prints for INDEX_CORRUPT, run exactly as printed (the plan, then with ``--apply`` as it says),
  leaves a dir the broker starts on with no index warning and no rebuild of a repaired index below the
  recovery point, and a consumer reads every acknowledged record at its offset, also when it seeks to the
  first, last and sampled offsets of every segment (each seek a lookup in the offset index);
- logdoctor's rebuilt indexes are the broker's byte for byte: those the broker's recovery rebuilt again
  after the repair, and, with every index of the partition deleted, those of every segment (the active one
  too, as a clean stop trims it) against logdoctor's rebuild of the same dir (INDEX_MISSING, the fix run as
  printed).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import re
import shlex
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster

pytestmark = pytest.mark.kafka

TOPIC = "orders"
SEGMENT_BYTES = 1 << 20  # the smallest segment.bytes Kafka 4.x takes for a topic
PAD = b"x" * 400
PHASE_A = 8000  # ~3.3 segments of these records: three closed segments below the recovery point
PHASE_B = (
    6000  # at least this many more acknowledged before the SIGKILL: two or more closed segments above it
)
INDEX_WARNINGS = (
    "Corrupt index found",
    "Corrupt time index found",
    "Found a corrupted index file",
    "Could not find offset index file",
    "Found invalid messages in log segment",
    "Corruption found in segment",
    "Found invalid offset during recovery",
)


def _record(n: int) -> tuple[bytes, bytes]:
    return b"k%d" % n, b"v%d-" % n + PAD


@dataclass
class Crashed:
    """The broker killed mid-produce: its dir as it was left (``pristine``), what was acknowledged."""

    cluster: KafkaCluster
    log_dir: Path
    pristine: Path
    acked: dict[int, tuple[bytes, bytes]]
    recovery_point: int
    bases: list[int]  # of the partition's segments, the last the active one
    scratch: Path
    below: list[int] = field(default_factory=list)  # closed segments wholly below the recovery point
    above: list[int] = field(default_factory=list)  # closed segments the next start recovers

    @property
    def node(self) -> kafka_cluster.Node:
        return self.cluster.broker(1)

    @property
    def partition_dir(self) -> Path:
        return self.log_dir / f"{TOPIC}-0"

    def restore(self) -> None:
        """The broker's log dir as the SIGKILL left it (the broker stopped)."""
        assert not self.node.running
        shutil.rmtree(self.log_dir)
        shutil.copytree(self.pristine, self.log_dir, symlinks=True)


def _stop_cleanly(node: kafka_cluster.Node) -> None:
    """SIGTERM, waited for (the JVM exits 143): the broker's clean shutdown leaves its marker."""
    node.stop()
    assert (node.log_dirs[0] / ".kafka_cleanshutdown").is_file(), node.log()[-3000:]


def _recovery_point(log_dir: Path) -> int:
    lines = (log_dir / "recovery-point-offset-checkpoint").read_text().split("\n")
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == TOPIC and parts[1] == "0":
            return int(parts[2])
    raise AssertionError(f"no recovery point of {TOPIC}-0 in {log_dir}: {lines}")


def _produce_until_killed(cluster: KafkaCluster, start: int, want: int) -> dict[int, tuple[bytes, bytes]]:
    """A producer in a thread while the node is SIGKILLed once ``want`` records are acknowledged; the
    acknowledged ones by offset."""
    producer = cluster.producer(batch_size=8192, message_timeout_ms=10000)
    acked: dict[int, tuple[bytes, bytes]] = {}
    stop = threading.Event()

    def report(err, msg) -> None:
        if err is None:
            acked[msg.offset()] = (msg.key(), msg.value())

    def run() -> None:
        n = start
        while not stop.is_set():
            key, value = _record(n)
            try:
                producer.produce(TOPIC, key=key, value=value, partition=0, on_delivery=report)
                n += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        producer.purge()
        producer.flush(5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        kafka_cluster.wait_until(f"{want} acknowledged records", lambda: len(acked) >= want, 180, 0.01)
        cluster.broker(1).kill()
    finally:
        stop.set()
        thread.join(60)
    return dict(acked)


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Crashed:
    root = tmp_path_factory.mktemp("corrupt-index")
    cluster = KafkaCluster(
        root / "cluster",
        version=kafka_cluster.NEWEST,
        broker_config={
            # the recovery point is checkpointed at the clean stop only (LogManager's periodic task put off)
            "log.flush.offset.checkpoint.interval.ms": 3_600_000,
            "log.initial.task.delay.ms": 3_600_000,
        },
    )
    cluster.start()
    try:
        cluster.create_topic(TOPIC, 1, 1, {"segment.bytes": SEGMENT_BYTES})
        records = [_record(n) for n in range(PHASE_A)]
        # a CreateTime a millisecond apart for each record, so that every offset-index entry of these
        # segments has a time-index entry beside it (the broker adds one only when the largest timestamp
        # grew since the last: records made within a few milliseconds left as few as 3, and the zeroed run
        # of _damage then was the file's tail, another finding)
        first = int(time.time() * 1000) - PHASE_A
        offsets = cluster.produce(TOPIC, records, batch_size=8192, timestamps=range(first, first + PHASE_A))
        assert offsets == list(range(PHASE_A))
        acked = dict(zip(offsets, records, strict=True))
        node = cluster.broker(1)
        _stop_cleanly(node)
        node.start()
        acked.update(_produce_until_killed(cluster, PHASE_A, PHASE_B))
    except BaseException:
        cluster.kill()
        raise
    log_dir = node.log_dirs[0]
    pristine = root / "pristine"
    shutil.copytree(log_dir, pristine, symlinks=True)
    rp = _recovery_point(log_dir)
    assert rp == PHASE_A, "the clean stop checkpoints the recovery point at the log end"
    assert not (log_dir / ".kafka_cleanshutdown").exists()
    bases = [int(p.stem) for p in kafka_cluster.segments(log_dir / f"{TOPIC}-0")]
    floor = max(b for b in bases if b <= rp)
    state = Crashed(cluster, log_dir, pristine, acked, rp, bases, root)
    state.below = [b for b, nxt in itertools.pairwise(bases) if nxt <= rp]
    state.above = [b for b in bases[:-1] if b >= floor]
    assert len(state.below) >= 3 and len(state.above) >= 2, (rp, bases)
    yield state
    cluster.kill()


# -- the damage ----------


@dataclass(frozen=True)
class Damage:
    """One damaged index file: which, how, and whether the next start recovers its segment."""

    path: Path
    how: str
    recovered: bool


def _index(partition_dir: Path, base: int, suffix: str) -> Path:
    return partition_dir / f"{base:020d}{suffix}"


def _damage(partition_dir: Path, c: Crashed) -> list[Damage]:
    """Field report 000's untrimmed index and a broken disk's bytes, below and above the recovery point."""
    rnd = random.Random(20190708)
    done: list[Damage] = []

    def untrimmed(base: int, recovered: bool) -> None:
        # as the broker preallocates an active index (segment.index.bytes, 10 MiB), left so by the crash
        path = _index(partition_dir, base, ".index")
        with open(path, "ab") as f:
            f.truncate(10 * 1024 * 1024)
        done.append(Damage(path, "untrimmed", recovered))

    def truncated(base: int, recovered: bool) -> None:
        path = _index(partition_dir, base, ".index")
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 3])
        done.append(Damage(path, "truncated", recovered))

    def zeroed(base: int, suffix: str, recovered: bool) -> None:
        # a run of entries read back as zeros (a lost page), entries kept after it
        path = _index(partition_dir, base, suffix)
        data = bytearray(path.read_bytes())
        entry = 8 if suffix == ".index" else 12
        start = (len(data) // entry // 4) * entry
        assert start > 0 and start + 5 * entry <= len(data), f"{path}: {len(data) // entry} entries, too few"
        data[start : start + 4 * entry] = bytes(4 * entry)
        path.write_bytes(bytes(data))
        done.append(Damage(path, "zeroed", recovered))

    def garbage(base: int, suffix: str, recovered: bool) -> None:
        path = _index(partition_dir, base, suffix)
        data = bytearray(path.read_bytes())
        entry = 8 if suffix == ".index" else 12
        at = (len(data) // entry // 2) * entry
        data[at : at + 3 * entry] = bytes(rnd.getrandbits(8) for _ in range(3 * entry))
        path.write_bytes(bytes(data))
        done.append(Damage(path, "garbage", recovered))

    b0, b1, b2 = c.below[:3]
    truncated(b0, False)
    untrimmed(
        b1, False
    )  # the field report's: "the last offset is X which is no larger than the base offset X"
    garbage(b2, ".index", False)
    zeroed(b2, ".timeindex", False)
    a0, a1 = c.above[-2:]
    zeroed(a0, ".index", True)
    garbage(a0, ".timeindex", True)
    untrimmed(a1, True)
    return done


def _findings(log_dir: Path) -> dict[str, dict]:
    report = kafka_cluster.logdoctor_json("scan", str(log_dir))
    return {f["path"]: f for f in report["findings"] if f["code"] == "INDEX_CORRUPT"}


def _printed_repair(finding: dict) -> str:
    """The repair command of a finding's fix text, exactly as printed (and as ``fix_argv`` has it)."""
    found = re.search(r"`([^`]*)` prints the plan, add --apply to make it", finding["fix"])
    assert found, finding["fix"]
    assert shlex.split(found.group(1)) == finding["fix_argv"][0]
    return found.group(1)


def _run(command: str, *, returncode: int = 0) -> str:
    done = kafka_cluster.run_printed(command)
    assert done.returncode == returncode, f"{command} exited {done.returncode}: {done.stdout}{done.stderr}"
    return done.stdout


def _apply(command: str) -> None:
    """``command --apply``: every step run; exit 1 (docs/exit-codes.md: the scan's after the repair), the
    dir's UNCLEAN_SHUTDOWN warning left, which no repair changes (the broker's next start does)."""
    out = _run(command + " --apply", returncode=1)
    applied = re.search(r"applied: (\d+) of (\d+) step\(s\) run", out)
    assert applied and applied.group(1) == applied.group(2), out
    assert "still found: WARNING UNCLEAN_SHUTDOWN" in out and "still found: ERROR" not in out, out


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in kafka_cluster.iter_files(folder)
    }


def _recovered_segments(log: str) -> set[int]:
    """The segments of the topic's partition LogLoader.recoverLog recovered, from the broker's log."""
    pattern = re.compile(rf"partition={re.escape(TOPIC)}-0,.*\] Recovering unflushed segment (\d+)\.")
    return {int(m.group(1)) for m in pattern.finditer(log)}


# -- the tests ----------


def test_scan_says_which_damaged_index_the_brokers_recovery_rebuilds(
    crashed: Crashed, tmp_path: Path
) -> None:
    """Every damaged index is an INDEX_CORRUPT finding; the untrimmed one quotes field report 000's check; a
    damaged index of a segment the next start recovers is said to be rebuilt by that recovery, never used as
    is, and one below the recovery point is said to be used as is (or rejected by the old eras only)."""
    log_dir = tmp_path / "kafka-logs"
    shutil.copytree(crashed.pristine, log_dir, symlinks=True)
    damage = _damage(log_dir / f"{TOPIC}-0", crashed)
    findings = _findings(log_dir)
    assert set(findings) == {str(d.path) for d in damage}
    for d in damage:
        text = findings[str(d.path)]["message"]
        base = int(d.path.stem)
        rebuilt = (
            "at the next start the broker recovers it "
            f"(LogLoader.recoverLog: 'Recovering unflushed segment {base}')"
        )
        if d.recovered:
            assert rebuilt in text and f"recovery point ({crashed.recovery_point})" in text, text
            assert "uses it as is" not in text and "keep using it" not in text, text
        else:
            assert rebuilt not in text, text
            assert "uses it as is" in text or "use it as is" in text, text
        if d.how == "untrimmed":
            # the field report's line, as Kafka 0.10's OffsetIndex.sanityCheck words it
            assert (
                f"Corrupt index found, index file ({d.path}) has non-zero size but the last offset is {base} "
                f"which is no larger than the base offset {base}"
            ) in text


def _seek_and_read(cluster: KafkaCluster, offsets: list[int]) -> dict[int, tuple[int, bytes, bytes]]:
    """For each offset, the first record a consumer gets after seeking there (offset, key, value)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "logdoctor-test-seeks",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 10,
        }
    )
    got: dict[int, tuple[int, bytes, bytes]] = {}
    try:
        consumer.assign([TopicPartition(TOPIC, 0, offsets[0])])
        for offset in offsets:
            # a seek drops what was fetched before it (librdkafka's fetch version barrier)
            kafka_cluster.wait_until(
                f"a seek to {offset}", lambda o=offset: consumer.seek(TopicPartition(TOPIC, 0, o)) or True, 30
            )
            msg = None
            for _ in range(60):
                msg = consumer.poll(1.0)
                if msg is not None:
                    break
            assert msg is not None and msg.error() is None, f"seek to {offset}: {msg and msg.error()}"
            got[offset] = (msg.offset(), msg.key(), msg.value())
    finally:
        consumer.close()
    return got


def _samples(c: Crashed, end: int) -> list[int]:
    """First, second, last and five spread offsets of every segment, acknowledged ones only."""
    out: set[int] = set()
    bounds = [*c.bases, end]
    for lo, hi in itertools.pairwise(bounds):
        if hi <= lo:
            continue
        step = max(1, (hi - lo) // 5)
        out.update([lo, lo + 1, hi - 1, hi - 2, *range(lo, hi, step)])
    return sorted(o for o in out if o in c.acked)


def test_printed_fix_then_the_broker_uses_the_repaired_indexes(crashed: Crashed) -> None:
    """The fix run as printed repairs every damaged index; the broker started on the dir warns of no index,
    recovers exactly the segments scan said it would (the repaired ones below the recovery point are used
    as logdoctor wrote them), leaves the indexes it rebuilt byte-identical to logdoctor's, and serves every
    acknowledged record at its offset, also to a consumer seeking into each segment."""
    crashed.restore()
    damage = _damage(crashed.partition_dir, crashed)
    findings = _findings(crashed.log_dir)
    commands = {_printed_repair(f) for f in findings.values()}
    assert len(commands) == 1, commands
    (command,) = commands

    before = _digest(crashed.log_dir)
    plan = _run(command)
    assert "Dry run: nothing was written" in plan
    assert _digest(crashed.log_dir) == before
    # one rebuild of each damaged segment (a plan of many actions is summarised: the count is whole)
    assert f"\n{len({d.path.stem for d in damage})} action(s), " in plan, plan
    _apply(command)  # the fix text: "prints the plan, add --apply to make it"
    assert _findings(crashed.log_dir) == {}
    repaired = {
        p: p.read_bytes()
        for base in {int(d.path.stem) for d in damage}
        for p in (_index(crashed.partition_dir, base, s) for s in (".index", ".timeindex"))
    }

    node = crashed.node
    node.start()
    records = crashed.cluster.consume(TOPIC, 0, isolation="read_uncommitted")
    log = node.log()
    for warning in INDEX_WARNINGS:
        assert warning not in log, [line for line in log.splitlines() if warning in line]
    floor = max(b for b in crashed.bases if b <= crashed.recovery_point)
    assert _recovered_segments(log) == {b for b in crashed.bases if b >= floor}
    recovered_by_scan = {int(d.path.stem) for d in damage if d.recovered}
    assert recovered_by_scan <= _recovered_segments(log)
    assert not {int(d.path.stem) for d in damage if not d.recovered} & _recovered_segments(log)

    by_offset = {o: (k, v) for o, k, v in records}
    assert [o for o, _k, _v in records] == list(range(len(records)))
    for offset, record in crashed.acked.items():
        assert by_offset.get(offset) == record, offset
    end = len(records)
    seeks = _samples(crashed, end)
    got = _seek_and_read(crashed.cluster, seeks)
    wrong = {o: g[0] for o, g in got.items() if (g[0], g[1], g[2]) != (o, *crashed.acked[o])}
    assert not wrong, f"seek -> first offset read: {wrong}"
    _stop_cleanly(node)

    # the broker's recovery rebuilt the repaired indexes above the recovery point: the same bytes
    changed = [str(p) for p, data in repaired.items() if p.read_bytes() != data]
    assert not changed, changed


def test_rebuilt_indexes_are_the_brokers_byte_for_byte(crashed: Crashed, tmp_path: Path) -> None:
    """With every index of the partition deleted, the broker rebuilds each segment's at its start
    (LogLoader.loadSegmentFiles: 'Could not find offset index file ...' below the recovery point, recoverLog
    above it) and a clean stop trims the active one; logdoctor's rebuild of the same dir (INDEX_MISSING's
    fix, run as printed) writes the same bytes for every segment, and the broker changed no .log."""
    crashed.restore()
    for p in [*crashed.partition_dir.glob("*.index"), *crashed.partition_dir.glob("*.timeindex")]:
        p.unlink()
    ours = tmp_path / "kafka-logs"
    shutil.copytree(crashed.log_dir, ours, symlinks=True)
    report = kafka_cluster.logdoctor_json("scan", str(ours))
    missing = [f for f in report["findings"] if f["code"] == "INDEX_MISSING"]
    assert len(missing) == len(crashed.bases)
    found = {re.search(r"`(logdoctor repair [^`]*)`", f["fix"]).group(1) for f in missing}
    assert len(found) == 1, found
    (command,) = found
    assert shlex.split(command) == missing[0]["fix_argv"][0]
    _run(command)
    _apply(command)

    logs_before = {p.name: p.read_bytes() for p in crashed.partition_dir.glob("*.log")}
    node = crashed.node
    node.start()
    kafka_cluster.wait_until(
        "the partition to load",
        lambda: crashed.cluster.describe(TOPIC)[0]["leader"] == 1,
        120,
    )
    log = node.log()
    _stop_cleanly(node)
    # below the recovery point the missing index is what makes the broker recover the segment
    for base in crashed.below:
        segment = crashed.partition_dir / f"{base:020d}.log"
        assert f"Could not find offset index file corresponding to log file {segment}" in log
    assert {p.name: p.read_bytes() for p in crashed.partition_dir.glob("*.log")} == logs_before

    differ = []
    for base in crashed.bases:
        for suffix in (".index", ".timeindex"):
            theirs = _index(crashed.partition_dir, base, suffix).read_bytes()
            mine = _index(ours / f"{TOPIC}-0", base, suffix).read_bytes()
            if theirs != mine:
                differ.append((base, suffix, len(theirs), len(mine)))
    assert not differ, differ
    assert os.path.getsize(_index(crashed.partition_dir, crashed.bases[-1], ".index")) < 10 * 1024 * 1024

"""Field report 002 (largestTime=0) with the broker's verdict: which segments a real Kafka 4.4.0 broker's
time retention deletes when a fresh segment's ``.timeindex`` is damaged, and whether ``logdoctor retention``
names exactly those segments, no more and no fewer, and whether the repair logdoctor prints makes the broker
delete only what was due.

A 4.4.0 broker writes one topic (7 partitions, each the same: three segments of records stamped three days
ago, then three fresh segments and the active one; ``retention.ms`` one day) and is stopped cleanly. Each
partition of the copies gets one damage on a fresh segment's time index: none, zeroed (size kept), cut to a
length that is not a multiple of 12 (one whole entry left), empty, zeroed on the SECOND fresh segment,
zeroed and cut to a non-multiple, and empty with the ``.log`` mtime three days back. Four copies are judged
by four brokers at once (``log.initial.task.delay.ms=0``, ``log.retention.check.interval.ms=500``): the
undamaged original, the damaged copy as it is, the damaged copy without the clean-shutdown marker and with
lowered recovery points, and the damaged copy after the repair ``logdoctor scan`` prints, run as printed.

What Kafka does, from its source (storage/src/main/java/org/apache/kafka/storage/internals/log/):
- LogSegment.sanityCheck checks only that the ``.index`` exists (and the ``.txnindex``): time and offset
  index checks are skipped at load, so a damaged time index below the recovery point is used as it is;
- AbstractIndex (createAndAssignMmap/createMappedBuffer) opens an existing index with
  ``entries = roundDown(length, 12) / 12``; TimeIndex.lastEntryFromIndexFile is the last whole entry, or
  (NO_TIMESTAMP, baseOffset) when there is none. LogSegment.largestTimestamp is that entry's timestamp when
  it is >= 0, else the ``.log`` mtime: a zeroed index gives 0 (the field report's largestTime=0), an empty
  one or one shorter than an entry the mtime;
- LogLoader.recoverLog (no ``.kafka_cleanshutdown``) re-reads every segment from the one holding the
  recovery point, rebuilding its indexes (LogSegment.recover): the damage there is gone before retention;
- UnifiedLog.deleteRetentionMsBreachedSegments / deletableSegments: oldest first, stop at the first segment
  not past retention, so a zeroed index behind a fresh segment waits.

The broker's own log says what it deleted ("Deleting segment LogSegment(baseOffset=..., lastModifiedTime=...,
largestRecordTimestamp=...) due to log retention time ...ms breach"); a consumer then says what is left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import kafka_cluster

pytestmark = pytest.mark.kafka

TOPIC = "fresh"
PARTITIONS = 7
DAY_MS = 86_400_000
OLD_RECORDS = 150  # stamped three days ago: past retention.ms
FRESH_RECORDS = 200  # stamped a minute ago
VALUE = b"v" * 1000
# internal.segment.bytes: Kafka's own test-only topic config below segment.bytes' 1 MiB floor
# (K:storage/.../log/LogConfig.java INTERNAL_SEGMENT_BYTES_CONFIG); a produce batch must fit in a segment
SEGMENT_BYTES = 65536
TOPIC_CONFIG = {
    "internal.segment.bytes": SEGMENT_BYTES,
    "retention.ms": DAY_MS,
    # the first fresh batch is three days younger than the segment's first: a time roll
    # (LogSegment.shouldRoll), so the fresh records start a segment of their own
    "segment.ms": DAY_MS,
}
# a broker that judges a copy: its first retention check at once, then every half second
JUDGE_CONFIG = {"log.initial.task.delay.ms": 0, "log.retention.check.interval.ms": 500}
DELETING = re.compile(
    r"\[UnifiedLog partition=(?P<tp>\S+), dir=\S+\] Deleting segment LogSegment\(baseOffset=(?P<base>\d+), "
    r"size=\d+, lastModifiedTime=(?P<mtime>-?\d+), largestRecordTimestamp=(?P<largest>-?\d+)\) due to log "
    r"retention time (?P<ms>\d+)ms breach"
)


# -- the damages, one per partition ----------


def _zeroed(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def _one_entry_and_a_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:17])  # one whole entry and 5 bytes


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _zeroed_odd(path: Path) -> None:
    path.write_bytes(bytes(29))  # two zero entries and 5 bytes


def _empty_old_log(path: Path) -> None:
    path.write_bytes(b"")
    old = time.time() - 3 * 86400
    os.utime(path.with_suffix(".log"), (old, old))


@dataclass(frozen=True)
class Damage:
    what: str
    second: bool  # on the second fresh segment (else the first)
    make: Callable[[Path], None]
    deleted_early: bool  # a clean start deletes the damaged segment too


DAMAGES: dict[int, Damage | None] = {
    0: None,
    1: Damage("zeroed (size kept)", False, _zeroed, True),
    2: Damage("cut to 17 bytes (one entry left)", False, _one_entry_and_a_half, False),
    3: Damage("empty (fresh .log mtime)", False, _empty, False),
    4: Damage("zeroed on the second fresh segment", True, _zeroed, False),
    5: Damage("zeroed and cut to 29 bytes", False, _zeroed_odd, True),
    6: Damage("empty, .log mtime three days back", False, _empty_old_log, True),
}


@dataclass
class Layout:
    """The segments the writing broker left in every partition (the same in each)."""

    bases: list[int]

    @property
    def old(self) -> list[int]:
        return [b for b in self.bases if b < OLD_RECORDS]

    @property
    def first_fresh(self) -> int:
        return self.bases[len(self.old)]

    @property
    def second_fresh(self) -> int:
        return self.bases[len(self.old) + 1]


def _damage(log_dir: Path, layout: Layout) -> None:
    for p, d in DAMAGES.items():
        if d is not None:
            base = layout.second_fresh if d.second else layout.first_fresh
            d.make(log_dir / f"{TOPIC}-{p}" / f"{base:020d}.timeindex")


def _unclean_recovery_points(layout: Layout) -> dict[int, int]:
    """Recovery points for the copy that starts without its clean-shutdown marker: the segment holding the
    recovery point and every later one are recovered (LogLoader.recoverLog), those below are not."""
    middle = (layout.first_fresh + layout.second_fresh) // 2
    points = {p: layout.first_fresh for p in range(PARTITIONS)}
    points[1] = layout.second_fresh  # the zeroed first fresh segment stays below it: not rebuilt
    points[5] = middle  # inside the damaged segment: that segment is recovered
    points[6] = layout.second_fresh  # the empty index below it stays empty: the old mtime decides
    return points


def _make_unclean(log_dir: Path, points: dict[int, int]) -> None:
    (log_dir / ".kafka_cleanshutdown").unlink()
    lines = (log_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    out = lines[:2]
    for line in lines[2:]:
        topic, p, offset = line.split()
        out.append(f"{topic} {p} {points[int(p)] if topic == TOPIC else offset}")
    (log_dir / "recovery-point-offset-checkpoint").write_text("\n".join(out) + "\n")


# -- writing and judging ----------


def _produce(cluster: kafka_cluster.KafkaCluster, partition: int, first: int, count: int, ts: int) -> None:
    """``count`` records with CreateTime ``ts``, ``ts + 1``, ... (the harness's produce gives one timestamp
    to a whole call); batches smaller than a segment (a bigger one is refused:
    RecordBatchTooLargeException)."""
    producer = cluster.producer(linger_ms=20, batch_size=16000)
    errors: list[str] = []
    for i in range(count):
        producer.produce(
            TOPIC,
            key=b"%d" % (first + i),
            value=VALUE,
            partition=partition,
            timestamp=ts + i,
            on_delivery=lambda err, _msg: errors.append(str(err)) if err is not None else None,
        )
        producer.poll(0)
    assert producer.flush(120) == 0 and not errors, errors[:3]


@dataclass
class Written:
    log_dir: Path
    layout: Layout


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("retention-writer")
    # no retention check while it writes: the old records must still be there when it stops
    cluster = kafka_cluster.KafkaCluster(root, broker_config={"log.initial.task.delay.ms": 3_600_000})
    with cluster:
        cluster.create_topic(TOPIC, PARTITIONS, 1, TOPIC_CONFIG)
        now = int(time.time() * 1000)
        for p in range(PARTITIONS):
            _produce(cluster, p, 0, OLD_RECORDS, now - 3 * DAY_MS)
            _produce(cluster, p, OLD_RECORDS, FRESH_RECORDS, now - 60_000)
    log_dir = cluster.broker(1).log_dirs[0]
    assert (log_dir / ".kafka_cleanshutdown").is_file()
    bases = [
        [int(s.stem) for s in kafka_cluster.segments(log_dir / f"{TOPIC}-{p}")] for p in range(PARTITIONS)
    ]
    assert all(b == bases[0] for b in bases), bases
    layout = Layout(bases[0])
    # three old segments, the fresh records from a segment of their own, two fresh inactive ones and more
    assert len(layout.old) >= 2 and OLD_RECORDS in layout.bases, layout.bases
    assert len(layout.bases) - len(layout.old) >= 3, layout.bases
    return Written(log_dir, layout)


@dataclass
class Verdict:
    """What one broker did with one copy."""

    #: partition -> {deleted base offset: the largest timestamp it went by (largestRecordTimestamp, else the
    #: .log mtime: LogSegment.largestTimestamp)}
    deleted: dict[int, dict[int, int]] = field(default_factory=dict)
    #: partition -> the offsets a consumer reads
    offsets: dict[int, list[int]] = field(default_factory=dict)
    #: partition -> the value of each record read, by offset (checked for the repaired copy)
    values_ok: dict[int, bool] = field(default_factory=dict)
    log: str = ""


def _read_all(cluster: kafka_cluster.KafkaCluster) -> tuple[dict[int, list[int]], dict[int, bool]]:
    """Every partition's records from its log start to its end with one consumer: the offsets, and whether
    each record is the one written at its offset."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "logdoctor-retention-test",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1]
            for p in range(PARTITIONS)
        }
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        offsets: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        ok = {p: True for p in range(PARTITIONS)}
        deadline = time.monotonic() + 90
        while (
            any(offsets[p][-1:] != [ends[p] - 1] for p in range(PARTITIONS)) and time.monotonic() < deadline
        ):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            p = msg.partition()
            offsets[p].append(msg.offset())
            ok[p] = ok[p] and msg.key() == b"%d" % msg.offset() and msg.value() == VALUE
        return offsets, ok
    finally:
        consumer.close()


def _judge(source: Path, root: Path, *, read: bool) -> Verdict:
    """Start a broker on a copy of ``source`` (its cluster id and node id: a copy of this broker's log dir);
    wait for its first retention round to delete in every partition, then a few rounds more; read what is
    left (``read``); stop it cleanly."""
    cluster = kafka_cluster.KafkaCluster(root, broker_config=JUDGE_CONFIG)
    node = cluster.broker(1)
    shutil.copytree(source, node.log_dirs[0], symlinks=True)
    # already formatted: started as it is (kafka-server-start.sh on the copied dir), no StorageTool run
    node.start(timeout=180)
    try:
        cluster.wait_brokers_registered([node], 180)
        verdict = Verdict()

        def every_partition_deleted() -> bool:
            seen = {m["tp"] for m in DELETING.finditer(node.log())}
            return seen >= {f"{TOPIC}-{p}" for p in range(PARTITIONS)}

        kafka_cluster.wait_until("a retention round in every partition", every_partition_deleted, 120)
        time.sleep(2.5)  # five more rounds: the first deleted all it would (one pass, oldest first)
        if read:
            verdict.offsets, verdict.values_ok = _read_all(cluster)
    finally:
        cluster.stop()
    verdict.log = node.log()
    for m in DELETING.finditer(verdict.log):
        assert int(m["ms"]) == DAY_MS
        p = int(m["tp"].rsplit("-", 1)[1])
        largest = int(m["largest"])
        verdict.deleted.setdefault(p, {})[int(m["base"])] = largest if largest >= 0 else int(m["mtime"])
    return verdict


def _logdoctor_deletes(log_dir: Path, now_ms: int) -> dict[int, dict[int, int]]:
    """``logdoctor retention --now``: partition -> {base offset it says goes: the broker's largest timestamp
    it says the broker reads}."""
    report = kafka_cluster.logdoctor_json("retention", str(log_dir), "--now", str(now_ms))
    out: dict[int, dict[int, int]] = {}
    for part in report["partitions"]:
        if part["topic"] == TOPIC:
            out[part["partition"]] = {
                s["base_offset"]: s["broker_largest_timestamp"] for s in part["segments"] if s["deleted"]
            }
    return out


@dataclass
class Judged:
    layout: Layout
    now_ms: int
    copies: dict[str, Path]
    verdicts: dict[str, Verdict]
    points: dict[int, int]
    repairs: list[tuple[str, object, object]]  # (printed command, its plan run, its --apply run)


def _printed_repairs(log_dir: Path) -> list[str]:
    """The distinct ``logdoctor repair`` commands the fixes of ``logdoctor scan`` print, in order."""
    report = kafka_cluster.logdoctor_json("scan", str(log_dir))
    commands: list[str] = []
    for finding in report["findings"]:
        for cmd in re.findall(r"`(logdoctor repair [^`]*)`", finding.get("fix") or ""):
            if cmd not in commands:
                commands.append(cmd)
    return commands


@pytest.fixture(scope="module")
def judged(written: Written, tmp_path_factory: pytest.TempPathFactory) -> Judged:
    base = tmp_path_factory.mktemp("retention-copies")
    layout = written.layout
    copies = {name: base / name / "kafka-logs" for name in ("original", "damaged", "unclean", "repaired")}
    for name, path in copies.items():
        shutil.copytree(written.log_dir, path, symlinks=True)
        if name != "original":
            _damage(path, layout)
    points = _unclean_recovery_points(layout)
    _make_unclean(copies["unclean"], points)
    # the repair the scan prints, as printed (a plan), then as its text says: with --apply
    repairs = []
    for command in _printed_repairs(copies["repaired"]):
        plan = kafka_cluster.run_printed(command)
        applied = kafka_cluster.run_printed(f"{command} --apply")
        repairs.append((command, plan, applied))
    now_ms = int(time.time() * 1000)
    with ThreadPoolExecutor(len(copies)) as pool:
        futures = {
            name: pool.submit(_judge, path, base / f"broker-{name}", read=name in ("damaged", "repaired"))
            for name, path in copies.items()
        }
        verdicts = {name: f.result() for name, f in futures.items()}
    return Judged(layout, now_ms, copies, verdicts, points, repairs)


def _expected(layout: Layout, early: set[int]) -> dict[int, list[int]]:
    return {p: layout.old + ([layout.first_fresh] if p in early else []) for p in range(PARTITIONS)}


# -- the tests ----------


def test_the_broker_deletes_the_old_segments_and_a_fresh_one_whose_time_index_reads_zero(
    judged: Judged,
) -> None:
    """The broker's own verdicts first (what the other tests hold logdoctor to): undamaged, it deletes the
    three old segments of every partition; after a clean shutdown a zeroed time index (also one cut to a
    non-multiple of 12: AbstractIndex rounds down) makes it take largestRecordTimestamp=0 and delete that
    fresh segment as well, and an empty one with an old .log mtime the mtime; one whole entry left, an empty
    index with a fresh mtime, or a zeroed index behind a fresh segment (the pass stops there) keep theirs."""
    layout = judged.layout
    v = judged.verdicts
    assert {p: sorted(d) for p, d in v["original"].deleted.items()} == _expected(layout, set())
    early = {p for p, d in DAMAGES.items() if d is not None and d.deleted_early}
    assert early == {1, 5, 6}
    assert {p: sorted(d) for p, d in v["damaged"].deleted.items()} == _expected(layout, early)
    assert v["damaged"].deleted[1][layout.first_fresh] == 0  # field report 002: largestTime=0
    assert v["damaged"].deleted[5][layout.first_fresh] == 0
    # the consumer's view: the early deletion lost the fresh segment's records
    for p in range(PARTITIONS):
        start = layout.second_fresh if p in early else layout.first_fresh
        assert v["damaged"].offsets[p] == list(range(start, OLD_RECORDS + FRESH_RECORDS)), p


def test_the_broker_rebuilds_the_time_indexes_it_recovers_after_an_unclean_shutdown(judged: Judged) -> None:
    """Without ``.kafka_cleanshutdown`` the broker recovers from the segment holding the recovery point on
    (LogLoader.recoverLog, "Recovering unflushed segment"), rebuilding those time indexes before retention:
    only a damaged segment below the recovery point (partitions 1 and 6) still goes early."""
    layout = judged.layout
    verdict = judged.verdicts["unclean"]
    assert {p: sorted(d) for p, d in verdict.deleted.items()} == _expected(layout, {1, 6})
    assert f"Recovering unflushed segment {layout.first_fresh}" in verdict.log


@pytest.mark.parametrize("copy", ["original", "damaged", "unclean"])
def test_logdoctor_retention_names_exactly_what_the_broker_deleted(judged: Judged, copy: str) -> None:
    """``logdoctor retention LOGDIR --now T`` on the copy as the broker found it (T: when the brokers
    started) names, partition by partition, exactly the segments the broker deleted, and for each the
    largest timestamp the broker went by (0 for a zeroed index, the .log mtime for an empty one)."""
    said = _logdoctor_deletes(judged.copies[copy], judged.now_ms)
    did = judged.verdicts[copy].deleted
    names = {p: DAMAGES[p].what if DAMAGES[p] else "undamaged" for p in range(PARTITIONS)}
    assert {names[p]: said.get(p, {}) for p in range(PARTITIONS)} == {
        names[p]: did.get(p, {}) for p in range(PARTITIONS)
    }, copy


def test_logdoctor_says_which_segments_go_only_because_of_the_damaged_time_index(judged: Judged) -> None:
    """The segments the damaged copy loses early are RETENTION_RISK in ``logdoctor retention`` (deleted by
    the broker's largest timestamp, kept with the records' own): exactly the partitions where the broker
    deleted a fresh segment."""
    report = kafka_cluster.logdoctor_json(
        "retention", str(judged.copies["damaged"]), "--now", str(judged.now_ms)
    )
    risks = {
        (f["severity"], f["path"].split(os.sep)[-2], f["offset"])
        for f in report["findings"]
        if f["code"] == "RETENTION_RISK"
    }
    first, second = judged.layout.first_fresh, judged.layout.second_fresh
    # partition 4's zeroed index is behind the first fresh segment, which the broker kept, and so that one too
    # (the pass stops at the first segment within retention): a warning with the date it goes (issue 77)
    assert risks == {("error", f"{TOPIC}-{p}", first) for p in (1, 5, 6)} | {
        ("warning", f"{TOPIC}-4", second)
    }
    held = next(f for f in report["findings"] if f["code"] == "RETENTION_RISK" and f["offset"] == second)
    assert (
        f"once segment {first} has gone" in held["message"]
        and "next retention check keeps it" in held["message"]
    )
    assert report["summary"]["retention_risk_segments"] == 3
    # the scan at the same time says the same, word for word
    scan = kafka_cluster.logdoctor_json("scan", str(judged.copies["damaged"]), "--now", str(judged.now_ms))

    def said(r: dict) -> list[tuple[str, str, str, str]]:
        return sorted(
            (f["severity"], f["path"], f["message"], f["fix"])
            for f in r["findings"]
            if f["code"] == "RETENTION_RISK"
        )

    assert said(scan) == said(report)


def test_the_printed_repair_makes_the_broker_delete_only_what_was_due(judged: Judged) -> None:
    """The repair ``logdoctor scan`` prints for the damaged copy, run exactly as printed (the plan, then with
    ``--apply`` as its text says), rebuilds the time indexes from the .log; a broker then deletes the same
    segments as on the undamaged original (the old ones), and a consumer reads every fresh record, each the
    one written at its offset. ``logdoctor retention`` on the repaired copy says the same."""
    assert judged.repairs, "scan printed no repair for the damaged copy"
    for command, plan, applied in judged.repairs:
        assert plan.returncode == 0, (command, plan.stdout[-2000:], plan.stderr[-2000:])
        assert "Dry run" in plan.stdout, command
        # its exit code is the scan's after it (docs/commands.md): 2 while another --only's findings are left
        assert applied.returncode in (0, 2) and "applied:" in applied.stdout, (
            command,
            applied.stdout[-2000:],
            applied.stderr[-2000:],
        )
    assert judged.repairs[-1][2].returncode == 0, judged.repairs[-1][2].stdout[-2000:]
    layout = judged.layout
    repaired = judged.verdicts["repaired"]
    original = judged.verdicts["original"]
    assert {p: sorted(d) for p, d in repaired.deleted.items()} == _expected(layout, set())
    assert {p: sorted(d) for p, d in repaired.deleted.items()} == {
        p: sorted(d) for p, d in original.deleted.items()
    }
    for p in range(PARTITIONS):
        assert repaired.offsets[p] == list(range(layout.first_fresh, OLD_RECORDS + FRESH_RECORDS)), p
        assert repaired.values_ok[p], p
    said = _logdoctor_deletes(judged.copies["repaired"], judged.now_ms)
    assert {p: sorted(d) for p, d in said.items()} == _expected(layout, set())
    # and the scan finds nothing wrong any more (the notes of what retention deletes stay)
    after = kafka_cluster.logdoctor_json("scan", str(judged.copies["repaired"]))
    assert [f["code"] for f in after["findings"] if f["severity"] != "info"] == [], json.dumps(
        after["findings"], indent=1
    )[:3000]

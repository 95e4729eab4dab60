"""``dump --deep``'s record lines on segments a real Kafka 4.4.0 broker wrote, against Kafka's own
``kafka-dump-log.sh --deep-iteration`` and against logdoctor's record-by-record Python path (issue 71,
item 5).

A text ``dump --deep`` prints a batch's record lines with one C call (``formats.record_lines``,
``_speedups.record_lines``: no Record object, event or string per field), the Python path
(``cli.dump.text``'s ``_record``) taking every batch the C function leaves to it. Both must print the same
bytes, and the fields must be what DumpLogSegments prints of each record (offset, timestamp, key and value
sizes, sequence, header keys). The broker wrote, in one short run: every codec (none, gzip, snappy, lz4,
zstd), null and empty keys and values, headers with printable ASCII keys and with keys that are not (a
Cyrillic one, one with a tab: those batches go to the Python path, which escapes the tab), an idempotent and
a plain producer (sequences and none), LogAppendTime, transactions committed and aborted (control batches,
the transaction's outcome on each record line), timestamps at the last millisecond the text shows as a date
(9999-12-31T23:59:59.999Z) and past it (shown as the number), and a compacted topic whose batches the
cleaner thinned (offsets that skip inside a batch: info findings, the same from both paths).
"""

from __future__ import annotations

import datetime as dt
import io
import re
import subprocess
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster
from logdoctor.cli.escape import printable

pytestmark = pytest.mark.kafka

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SEGMENT_BYTES = 16 * 1024
LAST_DATE_MS = 253402300799999  # 9999-12-31T23:59:59.999Z, the last millisecond datetime shows
LONG_MAX = 9223372036854775807


@dataclass
class Written:
    segments: list[Path]
    topics: dict[str, list[Path]]


def _produce_kinds(cluster: KafkaCluster, topic: str, **producer: object) -> None:
    p = cluster.producer(batch_size=8192, linger_ms=20, **producer)
    cluster.produce(topic, [(b"k%d" % i, b"v" * (i % 90)) for i in range(300)], producer=p,
                    headers=[("trace-id", b"t"), ("", None)])  # fmt: skip
    cluster.produce(topic, [(None, None)] * 60 + [(b"", b"")] * 40, producer=p)
    cluster.produce(topic, [(b"u", b"x")] * 20, producer=p, headers=[("ключ", b"v")])
    cluster.produce(topic, [(b"t", b"y")] * 20, producer=p, headers=[("tab\tkey", b"v")])
    cluster.produce(topic, [(None, b"z" * 3000)] * 50, producer=p)


def _transactions(cluster: KafkaCluster, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": "lines-txn", "compression.type": "lz4"}
    )
    producer.init_transactions(60)
    for commit in (True, False, True):
        producer.begin_transaction()
        for i in range(50):
            producer.produce(topic, key=b"t%d" % i, value=b"w" * 40, partition=0, headers=[("h", b"1")])
        assert producer.flush(60) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(60)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    root = tmp_path_factory.mktemp("dump-lines")
    cluster = KafkaCluster(
        root / "cluster", version=kafka_cluster.NEWEST, broker_config={"log.cleaner.backoff.ms": 200}
    )
    try:
        cluster.start()
        seg = {"internal.segment.bytes": SEGMENT_BYTES}
        for codec in CODECS:
            cluster.create_topic(f"codec-{codec}", 1, 1, seg)
            _produce_kinds(cluster, f"codec-{codec}", compression_type=codec)
        cluster.create_topic("plain-producer", 1, 1, seg)
        _produce_kinds(cluster, "plain-producer", enable_idempotence=False, acks=1)
        cluster.create_topic("append-time", 1, 1, {**seg, "message.timestamp.type": "LogAppendTime"})
        _produce_kinds(cluster, "append-time", compression_type="lz4")
        far = {"message.timestamp.after.max.ms": LONG_MAX, "message.timestamp.before.max.ms": LONG_MAX}
        cluster.create_topic("far-time", 1, 1, far)
        for ms in (1, LAST_DATE_MS, LAST_DATE_MS + 1, LONG_MAX // 2):
            cluster.produce("far-time", [(b"f", b"f")] * 3, timestamp=ms, compression_type="lz4")
        cluster.create_topic("txn", 1, 1, seg)
        _transactions(cluster, "txn")
        compact = {
            **seg,
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": 0.01,
            "delete.retention.ms": 100,
        }
        cluster.create_topic("compacted", 1, 1, compact)
        # every other record's key written again and again: the cleaner drops those from the older batches,
        # which keep the records between them (offsets skip inside a batch)
        thinned = [(b"k%d" % i if i % 2 else b"again", b"c" * 100) for i in range(600)]
        cluster.produce("compacted", thinned, batch_size=4096)
        cluster.broker(1).wait_for_log(r"Cleaner \d+: Beginning cleaning of log compacted-0", 90)
        cluster.broker(1).wait_for_log(r"cleaned log compacted-0", 60)
        cluster.stop()
        log_dir = cluster.broker(1).log_dirs[0]
        topics = {
            d.name.rsplit("-", 1)[0]: kafka_cluster.segments(d)
            for d in sorted(log_dir.iterdir())
            if d.is_dir() and not d.name.startswith("__")
        }
        segments = [p for paths in topics.values() for p in paths if p.stat().st_size > 0]
        yield Written(segments, topics)
    finally:
        cluster.kill()


def _text(files: list[Path], *, c_lines: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, int]]:
    """``dump --deep`` of ``files`` as text, in this process; the batches the C function printed and those it
    left to the Python path (``c_lines`` False: every batch through the Python path)."""
    from logdoctor.cli.dump import DumpOptions, run
    from logdoctor.formats import record_lines

    real = record_lines.record_lines
    taken = {"c": 0, "python": 0}

    def counted(batch, transaction_result=None):
        got = real(batch, transaction_result) if c_lines else None
        taken["c" if got is not None else "python"] += 1
        return got

    with monkeypatch.context() as m:
        m.setattr(record_lines, "record_lines", counted)
        out = io.StringIO()
        with redirect_stdout(out):
            code = run([str(p) for p in files], DumpOptions(deep=True), json_out=False)
    assert code == 0, out.getvalue()[-2000:]
    return out.getvalue(), taken


def test_record_lines_are_the_python_paths(written: Written, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bytes from both paths on every segment, the C function taking the batches it can (every
    codec) and leaving to the Python path those whose header keys are not printable ASCII."""
    from logdoctor.formats import record_lines

    if not record_lines.available():
        pytest.skip("the C extension is not built (LOGDOCTOR_PURE_PYTHON): one path only")
    for topic, paths in sorted(written.topics.items()):
        files = [p for p in paths if p.stat().st_size > 0]
        fast, taken = _text(files, c_lines=True, monkeypatch=monkeypatch)
        slow, _ = _text(files, c_lines=False, monkeypatch=monkeypatch)
        assert fast == slow, topic
        assert taken["c"] > 0, (topic, taken)
        if topic.startswith("codec-") or topic in ("plain-producer", "append-time"):
            assert taken["python"] > 0, (topic, taken)  # the batches of Cyrillic and tab header keys
            assert "headers [tab\\tkey]" in fast and "headers [ключ]" in fast
            assert "headers [trace-id, ]" in fast
    txn, _ = _text(written.topics["txn"], c_lines=True, monkeypatch=monkeypatch)
    assert "transaction committed" in txn and "transaction aborted" in txn and "control COMMIT" in txn
    compacted, _ = _text(written.topics["compacted"], c_lines=True, monkeypatch=monkeypatch)
    assert "LOG_NON_CONSECUTIVE_OFFSETS" in compacted  # the cleaner thinned the batches
    far, _ = _text(written.topics["far-time"], c_lines=True, monkeypatch=monkeypatch)
    assert "9999-12-31T23:59:59.999Z" in far and f"CreateTime {LAST_DATE_MS + 1}  " in far
    assert "CreateTime 1970-01-01T00:00:00.001Z" in far


_OURS = re.compile(
    r"    \| offset (?P<offset>-?\d+)  (?P<type>CreateTime|LogAppendTime) (?P<ts>\S+)  key (?P<key>-?\d+) B  "
    r"value (?P<value>-?\d+) B(?:  seq (?P<seq>\d+))?(?:  transaction \w+)?(?:  headers \[(?P<headers>.*)\])?"
    r"(?:  control .*)?$"
)


def _ms(text: str) -> int:
    if text == "-":
        return -1
    if text.endswith("Z"):
        when = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
        return (when - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(milliseconds=1)
    return int(text)


def _ours(text: str) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    current: list[tuple] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping ") :].split("  (", 1)[0], [])
        elif line.startswith("    | "):
            m = _OURS.match(line)
            assert m, line
            seq = -1 if m["seq"] is None else int(m["seq"])
            headers = m["headers"]
            current.append(
                (
                    int(m["offset"]),
                    m["type"],
                    _ms(m["ts"]),
                    int(m["key"]),
                    int(m["value"]),
                    seq,
                    headers or "",
                )
            )
    return out


_THEIRS = re.compile(
    r"\| offset: (?P<offset>-?\d+) (?P<type>CreateTime|LogAppendTime): (?P<ts>-?\d+) keySize: (?P<key>-?\d+) "
    r"valueSize: (?P<value>-?\d+) sequence: (?P<seq>-?\d+) headerKeys: \[(?P<headers>.*?)\]"
)


def _theirs(files: list[Path]) -> dict[str, list[tuple]]:
    script = kafka_cluster.kafka_bin(kafka_cluster.NEWEST) / "kafka-dump-log.sh"
    done = subprocess.run(
        [str(script), "--deep-iteration", "--files", ",".join(map(str, files))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, list[tuple]] = {}
    current: list[tuple] = []
    for line in done.stdout.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping ") :].strip(), [])
        elif line.startswith("| offset: "):
            m = _THEIRS.match(line)
            assert m, line
            headers = ", ".join(printable(k.strip()) for k in m["headers"].split(",")) if m["headers"] else ""
            current.append(
                (
                    int(m["offset"]),
                    m["type"],
                    int(m["ts"]),
                    int(m["key"]),
                    int(m["value"]),
                    int(m["seq"]),
                    headers,
                )
            )
    return out


def test_record_lines_are_what_kafka_dump_log_lists(
    written: Written, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each record line's fields (offset, timestamp type and time, key and value sizes, sequence, header keys)
    are what DumpLogSegments --deep-iteration prints of the same record, for every segment."""
    ours = _ours(_text(written.segments, c_lines=True, monkeypatch=monkeypatch)[0])
    theirs = _theirs(written.segments)
    assert sum(len(v) for v in theirs.values()) > 2000
    for path in written.segments:
        assert ours[str(path)] == theirs[str(path)], path

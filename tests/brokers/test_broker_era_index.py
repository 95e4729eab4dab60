"""Field report 000's own warning, logged by real brokers of its era (Kafka 1.0.2 and 2.2.2, ZooKeeper mode),
and ``logdoctor scan`` naming the same file with the broker's words (issue 77, item 2).

The report quotes "Corrupt index found, index file (...) has non-zero size but the last offset is X which
is no larger than the base offset X". A broker writes its active segment's ``.index`` and ``.timeindex``
preallocated to ``segment.index.bytes`` (zero slots after their entries) and trims them only at a roll or
a clean stop; a SIGKILL leaves them so. Kafka up to 2.2 checks every segment's indexes when it loads a log,
reading every slot as an entry, the last one a zero slot (K:core/src/main/scala/kafka/log/Log.scala
loadSegmentFiles; 1.1-2.2 through LogSegment.sanityCheck), the ``.index`` first, the ``.timeindex`` only
when the ``.index`` passed:

- up to 1.0 ``OffsetIndex.sanityCheck`` rejects a last offset equal to the base offset with ``require``
  (IllegalArgumentException, "requirement failed: ... no larger than the base offset"): the report's words,
  1.0.2 the last release to log them; 1.1 the same as a CorruptIndexException ("no greater than",
  KAFKA-6324);
- 2.0-2.2 reject only a last offset below the base (KAFKA-7076), so the ``.index`` passes and the
  ``.timeindex`` is checked: its last timestamp 0 is below its first ("Corrupt time index found");
- since 2.3 no index is checked at load (KAFKA-7283, commit 2932d32afb2).

Both run on Java 17: 1.0.2 with the ZooKeeper 3.4.10 it brings, 2.2.2 with 3.4.10 in place of its 3.4.13,
whose client never connects on Java 14+ (brokers/2.2.2/pom.xml).

Checked, for each: a broker killed (SIGKILL) after acknowledged records in many batches (so both indexes
hold entries) leaves the dir; ``scan`` and ``scan --deep`` report INDEX_PREALLOCATED_UNCLEAN on exactly the
files this broker then names at its restart (those whose ``rejected_by`` holds its era), the finding's
message quoting the line the broker logs; the broker rebuilds them and a consumer reads every acknowledged
record.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster

pytestmark = pytest.mark.kafka

TOPIC = "email-opens"
ROUNDS, PER_ROUND = 15, 200  # each round flushed: a batch or more each, so the indexes get entries
CODE = "INDEX_PREALLOCATED_UNCLEAN"
#: the era label of logdoctor's ``rejected_by`` each broker is in
ERA = {"1.0.2": "0.8-1.0", "2.2.2": "2.0-2.2"}
# what Log.loadSegmentFiles logs, up to the '}' it puts after the exception's message (its own typo)
WARNING = re.compile(
    r"WARN .*(?P<line>Found a corrupted index file (?:corresponding to log file \S+ )?due to "
    r"(?P<words>(?:requirement failed: )?Corrupt (?:time )?index found, (?:time )?index file "
    r"\((?P<path>[^)]+)\) has non-zero size but the last [^}]*))\}"
)
#: the report's words, which 1.0.2 logs
REPORT = re.compile(
    r"has non-zero size but the last offset is (\d+) which is no larger than the base offset \1\."
)


@pytest.fixture(scope="module", params=kafka_cluster.INDEX_CHECK_ERAS)
def crashed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A broker of ``param`` killed after acknowledged records: (cluster, its log dir, the acknowledged
    offsets, scan's report at each depth, its log since it was started again), the broker running."""
    root = tmp_path_factory.mktemp(f"era-index-{request.param}")
    cluster = KafkaCluster(root, version=request.param)
    with cluster:
        cluster.create_topic(TOPIC, 1, 1)
        acked: list[int] = []
        producer = cluster.producer()
        for r in range(ROUNDS):
            records = ((f"{r}-{i}".encode(), b"open " * 40) for i in range(PER_ROUND))
            acked += cluster.produce(TOPIC, records, producer=producer)
        del producer  # no client left to reconnect to the killed broker
        broker = cluster.broker(1)
        broker.kill()
        log_dir = broker.log_dirs[0]
        assert not (log_dir / ".kafka_cleanshutdown").exists()
        scans = {
            depth: kafka_cluster.logdoctor_json("scan", str(log_dir), *flags)
            for depth, flags in (("default", ()), ("deep", ("--deep",)))
        }
        # the log from this start on: a start that finds its old ZooKeeper registration (the killed
        # session not yet expired) loads the log, then exits and is started again (Node.wait_started)
        mark = broker.server_log.stat().st_size
        broker.start()
        with open(broker.server_log, "rb") as f:
            f.seek(mark)
            restarts = f.read().decode("utf-8", errors="replace")
        yield cluster, log_dir, acked, scans, restarts


def test_the_broker_logs_its_warning_for_the_files_scan_names(crashed) -> None:
    cluster, log_dir, _acked, scans, log = crashed
    era = ERA[cluster.version]
    logged = {Path(m["path"]): m for m in WARNING.finditer(log)}
    folder = (log_dir / f"{TOPIC}-0").resolve()
    # 1.0.2 names the .index (with the report's words), 2.2.2 the .timeindex
    named = folder / (f"{0:020d}.index" if era == "0.8-1.0" else f"{0:020d}.timeindex")
    assert list(logged) == [named], log[-3000:]
    if era == "0.8-1.0":
        assert REPORT.search(logged[named]["words"]), logged[named]["words"]
    for depth, report in scans.items():
        found = {Path(f["path"]).resolve(): f for f in report["findings"] if f["code"] == CODE}
        # the files this broker rejects, and no other: both preallocated indexes have a finding
        assert {p for p, f in found.items() if era in f["details"]["rejected_by"]} == set(logged), (
            depth,
            report["findings"],
        )
        assert set(found) == {folder / f"{0:020d}.index", folder / f"{0:020d}.timeindex"}
        finding = found[named]
        assert finding["severity"] == "warning"
        # a search for the broker's log line finds the finding
        assert logged[named]["words"] in finding["message"], (depth, finding["message"])
        assert logged[named]["line"] in finding["details"]["broker_log"]
        codes = {f["code"] for f in report["findings"]}
        assert "UNCLEAN_SHUTDOWN" in codes
        # --deep's cross-check too: 1.0.2 indexes each batch's first offset, 2.2.2 its last (KAFKA-6264),
        # both sound (checks/index_cross_check.py; tests/brokers/test_broker_era_scan.py)
        corrupt = [f["message"] for f in report["findings"] if f["code"] == "INDEX_CORRUPT"]
        assert corrupt == []


def test_the_broker_rebuilds_them_and_loses_no_record(crashed) -> None:
    cluster, _log_dir, acked, _scans, _log = crashed
    read = cluster.consume(TOPIC, end=acked[-1] + 1)
    assert [offset for offset, _key, _value in read] == acked
    assert [key for _offset, key, _value in read] == [
        f"{r}-{i}".encode() for r in range(ROUNDS) for i in range(PER_ROUND)
    ]

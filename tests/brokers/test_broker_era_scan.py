"""``scan --deep`` and ``dump --verify-index`` on the offset indexes real brokers of the ZooKeeper eras wrote
(issue 71, item 3), each era's indexing rule checked against the bytes the broker left.

Up to 1.1 an offset-index entry holds the FIRST offset of the batch at its position (K:core/src/main/scala/
kafka/log/LogSegment.scala at 1.1.1: ``append`` indexes ``firstOffset``, ``recover`` ``batch.baseOffset``);
since 2.0 its LAST offset (KAFKA-6264, the same file at 2.0.0). Both are sound: OffsetIndex.lookup takes the
last entry <= the target and the log is read forward from its position, so an entry is right when it is at
a batch start and after the previous batch's last offset (checks/index_cross_check.py).

For each era broker (1.0.2, 2.2.2, ZooKeeper mode), a topic written in many batches of many records, the
broker stopped cleanly:

- the broker's ``.index`` entries are what its era writes (read with this module's own parse of the v2 batch
  headers), and ``scan --deep`` finds no INDEX_CORRUPT, ``dump --verify-index`` no mismatch;
- 1.0.2: one entry moved to the previous batch's last offset (inside the order of the entries: no sanity
  check sees it) is INDEX_CORRUPT for ``scan --deep`` and INDEX_OFFSET_MISMATCH for ``dump``; the broker
  started on it proves it wrong (a consumer seeking to that offset is served from the next offset on: the
  record is skipped); the fix ``scan`` prints, run as printed, rebuilds the index with the newer rule's
  entries (last offsets), which the 1.0.2 broker then uses to serve every acknowledged record, from any
  offset.
"""

from __future__ import annotations

import json
import re
import shlex
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

import kafka_cluster
from kafka_cluster import KafkaCluster

pytestmark = pytest.mark.kafka

TOPIC = "page-views"
ROUNDS, PER_ROUND = 12, 100  # each round flushed: a batch of many records each, so first != last offset
SEGMENT_BYTES = 120_000  # a few segments: the damaged one is not the active one


@dataclass
class Era:
    cluster: KafkaCluster
    log_dir: Path
    partition_dir: Path
    acked: list[int]
    records: dict[int, tuple[bytes, bytes]]
    #: of the healthy dir, before any test changes it: each segment's batches and .index entries,
    #: ``scan --deep``'s report, ``dump --verify-index``'s exit code and events
    batches: dict[Path, list[tuple[int, int, int]]]
    entries: dict[Path, list[tuple[int, int]]]
    deep: dict
    dump: tuple[int, list[dict]]

    @property
    def first_offset_rule(self) -> bool:
        return int(self.cluster.version.split(".")[0]) < 2


def _batches(log: Path) -> list[tuple[int, int, int]]:
    """(position, base offset, last offset) of every v2 batch of ``log``, from the header alone
    (baseOffset int64, batchLength int32, ..., magic at 16, lastOffsetDelta int32 at 23)."""
    data, pos, out = log.read_bytes(), 0, []
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        assert data[pos + 16] == 2, f"{log}@{pos}: magic {data[pos + 16]}"
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((pos, base, base + delta))
        pos += 12 + length
    assert pos == len(data), f"{log}: {len(data) - pos} bytes after the last batch"
    return out


def _entries(index: Path) -> list[tuple[int, int]]:
    """(offset, position) of each entry of a trimmed .index (a clean stop trims it)."""
    base = int(index.stem)
    return [(base + rel, pos) for rel, pos in struct.iter_unpack(">ii", index.read_bytes())]


@pytest.fixture(scope="module", params=kafka_cluster.INDEX_CHECK_ERAS)
def era(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A broker of ``param`` that took acknowledged records and was stopped cleanly (ZooKeeper left up)."""
    root = tmp_path_factory.mktemp(f"era-scan-{request.param}")
    cluster = KafkaCluster(root, version=request.param)
    with cluster:
        cluster.create_topic(TOPIC, 1, 1, config={"segment.bytes": SEGMENT_BYTES})
        producer = cluster.producer()
        acked: list[int] = []
        records: dict[int, tuple[bytes, bytes]] = {}
        for r in range(ROUNDS):
            batch = [(f"{r}-{i}".encode(), b"view " * 40 + str(i).encode()) for i in range(PER_ROUND)]
            offsets = cluster.produce(TOPIC, batch, producer=producer)
            acked += offsets
            records.update(zip(offsets, batch, strict=True))
        del producer
        broker = cluster.broker(1)
        broker.stop()  # 1.x exits 143 on SIGTERM: the marker says it stopped cleanly
        log_dir = broker.log_dirs[0]
        assert (log_dir / ".kafka_cleanshutdown").exists()
        folder = log_dir / f"{TOPIC}-0"
        segs = kafka_cluster.segments(folder)
        yield Era(
            cluster,
            log_dir,
            folder,
            acked,
            records,
            {log: _batches(log) for log in segs},
            {log: _entries(log.with_suffix(".index")) for log in segs},
            kafka_cluster.logdoctor_json("scan", str(log_dir), "--deep"),
            _dump_verify([p.with_suffix(s) for p in segs for s in (".index", ".timeindex")]),
        )


def _dump_verify(paths: list[Path]) -> tuple[int, list[dict]]:
    """``dump --json --verify-index PATHS``: its exit code and events."""
    done = kafka_cluster.logdoctor("dump", "--json", "--verify-index", *map(str, paths))
    assert done.stdout.strip(), done.stderr
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def _segments(e: Era) -> list[Path]:
    return kafka_cluster.segments(e.partition_dir)


def _index_codes(report: dict) -> list[tuple[str, str, int | None]]:
    return [
        (f["code"], f["path"], f.get("position")) for f in report["findings"] if f["code"].startswith("INDEX")
    ]


def test_each_era_indexes_as_its_broker_and_scan_deep_agrees(era: Era) -> None:
    assert len(era.batches) >= 3, list(era.batches)
    n = 0
    for log, entries in era.entries.items():
        batches = {pos: (base, last) for pos, base, last in era.batches[log]}
        for offset, pos in entries:
            base, last = batches[pos]
            assert base < last  # many records a batch: the two rules differ on every entry
            assert offset == (base if era.first_offset_rule else last), (log, offset, pos)
            n += 1
    assert n >= ROUNDS // 2
    assert _index_codes(era.deep) == [], era.deep["findings"]
    assert [f for f in era.deep["findings"] if f["severity"] == "error"] == []
    code, events = era.dump
    assert code == 0 and [e for e in events if e["type"] == "finding"] == [], events
    statuses = {e["status"] for e in events if e["type"] == "index_entry"}
    assert statuses == {"ok"}, statuses


def _printed_repair(finding: dict) -> str:
    found = re.search(r"`([^`]*)` prints the plan, add --apply to make it", finding["fix"])
    assert found, finding["fix"]
    assert shlex.split(found.group(1)) == finding["fix_argv"][0]
    return found.group(1)


def _first_read_from(era: Era, offset: int) -> int:
    """The first offset a consumer that seeks to ``offset`` is served."""
    read = era.cluster.consume(TOPIC, start=offset, end=offset + 3, isolation="read_uncommitted")
    assert read, offset
    return read[0][0]


@pytest.mark.parametrize("era", ["1.0.2"], indirect=True)  # the first-offset era
def test_a_wrong_entry_is_found_and_its_rebuild_serves_a_1x_broker(era: Era) -> None:
    assert era.first_offset_rule
    log = _segments(era)[0]
    index = log.with_suffix(".index")
    batches, entries = era.batches[log], era.entries[log]
    j = len(entries) // 2
    offset, pos = entries[j]
    k = [p for p, _b, _l in batches].index(pos)
    wrong = batches[k - 1][2]  # the previous batch's last offset: the batch at pos starts after it
    assert entries[j - 1][0] < wrong < offset
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, 8 * j, wrong - int(index.stem))
    index.write_bytes(bytes(data))

    report = kafka_cluster.logdoctor_json("scan", str(era.log_dir), "--deep")
    assert _index_codes(report) == [("INDEX_CORRUPT", str(index), 8 * j)], report["findings"]
    (finding,) = [f for f in report["findings"] if f["code"] == "INDEX_CORRUPT"]
    assert f"after the entry's offset {wrong}" in finding["message"], finding["message"]
    code, events = _dump_verify([index])
    found = [(e["code"], e["slot"]) for e in events if e["type"] == "finding"]
    assert (code, found) == (2, [("INDEX_OFFSET_MISMATCH", j)]), events

    # the broker's verdict: a lookup through the entry starts past the record at `wrong`
    broker = era.cluster.broker(1)
    broker.start()
    assert _first_read_from(era, wrong) == wrong + 1
    broker.stop()

    command = _printed_repair(finding)
    applied = kafka_cluster.run_printed(command + " --apply", version=era.cluster.version)
    ran = re.search(r"applied: (\d+) of (\d+) step\(s\) run", applied.stdout)
    assert ran and ran.group(1) == ran.group(2), applied.stdout + applied.stderr
    assert _index_codes(kafka_cluster.logdoctor_json("scan", str(era.log_dir), "--deep")) == []
    lasts = {pos: last for pos, _base, last in batches}
    rebuilt = _entries(index)
    assert rebuilt and all(o == lasts[p] for o, p in rebuilt), rebuilt  # the newer rule's entries

    broker.start()
    assert "Corrupt index" not in broker.log()
    for _o, p in rebuilt:  # a seek to every batch's first offset and to each entry's own
        base = next(b for q, b, _l in batches if q == p)
        assert _first_read_from(era, base) == base
    assert _first_read_from(era, wrong) == wrong
    read = era.cluster.consume(TOPIC, isolation="read_uncommitted")
    assert [o for o, _k, _v in read] == era.acked
    assert {o: (k, v) for o, k, v in read} == era.records
    broker.stop()

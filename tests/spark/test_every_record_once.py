"""Issue 31's matrix: every input kind x every output, each cell compared record by record with
kafka-python (an independent decoder) over the segments Kafka's own classes wrote, never tiered
(../shared/tiered/original): every record exactly once, and every damaged input named in the result
with exit 1 (a clean one: nothing named, exit 0).

Inputs: a local log dir; the same log dir on S3 (moto); the tiered Kafka layout (LocalTieredStorage) and
Aiven's encrypted layout with their remote tier; a segment with one corrupt batch mid-way; a remote tier
with a segment missing; one with a segment stored twice (a retried upload's second segment id).
Outputs: Parquet (arrow and spark writers), Iceberg, Delta (each read back with the command the export
prints, run from another folder) and the ``kafka-log`` DataFrame (its damage named by
``kafka-log-segments`` over the same input). One Spark session and every input built once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

import realworld

pytestmark = [pytest.mark.spark, pytest.mark.slow]

Record = tuple[bytes | None, bytes | None, int]  # key, value, timestamp (ms)
Key = tuple[str, int, int]  # topic, partition, offset


def _records(folder: Path, topic: str, partition: int) -> dict[Key, Record]:
    """kafka-python's records of every .log of a partition folder."""
    out: dict[Key, Record] = {}
    for log in sorted(folder.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            for r in batch:
                out[(topic, partition, r.offset)] = (r.key, r.value, r.timestamp)
    return out


def _truth(topics: tuple[str, ...] = ("payments", "audit")) -> dict[Key, Record]:
    original = realworld.require_tiered() / "original" / "kafka-logs"
    out: dict[Key, Record] = {}
    for folder in sorted(original.iterdir()):
        topic, _, p = folder.name.rpartition("-")
        if folder.is_dir() and topic in topics:
            out.update(_records(folder, topic, int(p)))
    return out


@dataclass
class Input:
    """One input kind: paths, the export's options, the records expected, what must be named (a
    substring of the damage's description, and its path) or nothing."""

    paths: list[str]
    options: dict[str, str]
    expected: dict[Key, Record]
    damage: str | None = None  # text the named range holds
    damage_path: str | None = None
    cli: list[str] = field(default_factory=list)


def _cli_args(options: dict[str, str]) -> list[str]:
    names = {
        "remoteStorage": "--remote-storage",
        "remotePrivateKey": "--remote-private-key",
        "topics": "--topics",
        "kafka.isolation.level": "--isolation-level",
    }
    return [x for k, v in options.items() for x in (names[k], v)]


def _flip_mid_batch(segment: Path) -> tuple[int, int]:
    """Flip one byte inside the records of a batch in the middle of ``segment`` (its CRC no longer
    matches, its framing is intact); returns the batch's (first, last) offset, from kafka-python."""
    data = bytearray(segment.read_bytes())
    records = MemoryRecords(bytes(data))
    spans: list[tuple[int, int, int]] = []  # position, first offset, last offset
    pos = 0
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        offsets = [r.offset for r in batch]
        spans.append((pos, offsets[0], offsets[-1]))
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    position, first, last = spans[len(spans) // 2]
    data[position + 61 + 5] ^= 0xFF  # a byte of the (gzip) records section, after the 61-byte header
    segment.write_bytes(bytes(data))
    return first, last


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, s3) -> dict[str, Input]:
    tiered = realworld.require_tiered()
    base = tmp_path_factory.mktemp("inputs")
    everything = _truth()
    payments = {k: v for k, v in everything.items() if k[0] == "payments"}
    out: dict[str, Input] = {}
    original = tiered / "original" / "kafka-logs"
    out["local"] = Input([str(original)], {}, everything)
    out["s3"] = Input([s3.upload(original, "matrix/original/kafka-logs")], {}, everything)
    out["tiered-kafka-local"] = Input(
        [str(tiered / "kafka-local" / "kafka-logs")],
        {"remoteStorage": str(tiered / "kafka-local" / "remote")},
        everything,
    )
    out["tiered-aiven-encrypted"] = Input(
        [str(tiered / "aiven" / "encrypted" / "kafka-logs")],
        {
            "remoteStorage": str(tiered / "aiven" / "encrypted" / "storage"),
            "remotePrivateKey": str(tiered / "aiven" / "encrypted" / "keys" / "private.pem"),
        },
        payments,
    )
    # one corrupt batch mid-way in payments-0's first segment
    corrupt = realworld.writable_copy(original, base / "corrupt" / "kafka-logs")
    victim = corrupt / "payments-0" / f"{0:020d}.log"
    first, last = _flip_mid_batch(victim)
    out["corrupt-batch"] = Input(
        [str(corrupt)],
        {},
        {k: v for k, v in everything.items() if not (k[:2] == ("payments", 0) and first <= k[2] <= last)},
        damage="",
        damage_path=str(victim),
    )
    # a remote tier with payments-0's segment [324, 647] gone (the metadata lists it as copied)
    store = realworld.writable_copy(tiered / "kafka-local" / "remote", base / "missing" / "remote")
    folder = store / "kafka-tiered-storage" / "payments-0-cGF5bWVudHMtdG9waWMwMQ"
    [gone] = folder.glob(f"{324:020d}-*.log")
    for f in folder.glob(f"{324:020d}-*"):
        f.unlink()
    out["remote-missing"] = Input(
        [str(tiered / "kafka-local" / "kafka-logs")],
        {"remoteStorage": str(store)},
        {k: v for k, v in everything.items() if not (k[:2] == ("payments", 0) and 324 <= k[2] <= 647)},
        damage="offsets 324-647 not read",
        damage_path=str(gone),
    )
    # a remote tier with payments-0's segment [648, 971] stored twice (a second segment id)
    store = realworld.writable_copy(tiered / "kafka-local" / "remote", base / "twice" / "remote")
    folder = store / "kafka-tiered-storage" / "payments-0-cGF5bWVudHMtdG9waWMwMQ"
    second = "AAAAAAAAAAAAAAAAAAAAAA"
    for f in folder.glob(f"{648:020d}-*"):
        suffix = f.name.partition(".")[2]
        (folder / f"{648:020d}-{second}.{suffix}").write_bytes(f.read_bytes())
    out["remote-twice"] = Input(
        [str(tiered / "kafka-local" / "kafka-logs")],
        {"remoteStorage": str(store)},
        everything,
        damage=f"remote segment {second}",
        damage_path=str(folder / f"{648:020d}-{second}.log"),
    )
    # issue 45: committed, aborted and open transactions (../shared/semantics ptx-0), as each isolation
    # level's consumer reads them: Kafka's consumer recomputed from kafka-python (kp_oracle.consumer_view)
    import kp_oracle

    ptx = realworld.require_semantics() / "kafka-logs" / "ptx-0"
    records = _records(ptx, "ptx", 0)
    _labels, committed, _lso = kp_oracle.consumer_view(sorted(ptx.glob("*.log")))
    data = {k: v for k, v in records.items() if k[2] in _labels}  # the data records, no markers
    assert (len(committed), len(data)) == (230, 372)
    read_committed = {k: v for k, v in data.items() if k[2] in set(committed)}
    out["transactions"] = Input([str(ptx.parent)], {"topics": "ptx"}, read_committed)
    out["transactions-uncommitted"] = Input(
        [str(ptx.parent)], {"topics": "ptx", "kafka.isolation.level": "read_uncommitted"}, data
    )
    out["transactions-s3"] = Input(
        [s3.upload(ptx.parent, "matrix/semantics/kafka-logs")], {"topics": "ptx"}, read_committed
    )
    return out


OUTPUTS = ("parquet-arrow", "parquet-spark", "iceberg", "delta", "dataframe")
INPUTS = (
    "local",
    "s3",
    "tiered-kafka-local",
    "tiered-aiven-encrypted",
    "corrupt-batch",
    "remote-missing",
    "remote-twice",
    "transactions",
    "transactions-uncommitted",
    "transactions-s3",
)


def _export(args: list[str]):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    return CliRunner().invoke(app, ["export", *args], terminal_width=300)


def _rows_to_dict(table) -> tuple[dict[Key, Record], int]:
    cols = table.to_pydict()
    got: dict[Key, Record] = {}
    n = 0
    for t, p, o, k, v, ts in zip(
        cols["topic"],
        cols["partition"],
        cols["offset"],
        cols["key"],
        cols["value"],
        cols["timestamp"],
        strict=True,
    ):
        n += 1
        got[(str(t), int(p), int(o))] = (k, v, int(ts.timestamp() * 1000))
    return got, n


COLUMNS = ["topic", "partition", "offset", "key", "value", "timestamp"]


def _read_printed(command: str, elsewhere: Path) -> dict[Key, Record]:
    """Run the read command the export printed, from another folder, and return its rows."""
    import pyarrow.parquet as pq

    target = elsewhere / "rows.parquet"
    imports, _, expression = command.rpartition("; ")  # the printed line: imports; the table
    code = f"{imports}\nt = {expression}\nimport pyarrow.parquet as pq\n"
    code += f"pq.write_table(t.select({COLUMNS!r}), {str(target)!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return _rows_to_dict(pq.read_table(target))


def _check(got: dict[Key, Record], n: int, expected: dict[Key, Record]) -> None:
    assert n == len(got), f"{n - len(got)} offsets exported more than once"
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, f"missing {missing[:5]}... ({len(missing)}), extra {extra[:5]}..."
    wrong = [k for k in expected if got[k] != expected[k]]
    assert not wrong, f"{len(wrong)} records differ from kafka-python's, e.g. {wrong[:3]}"


def _named(entries: list[tuple[str, str]], inp: Input) -> None:
    """The damage is named (path and text) among ``entries`` ((path, error) pairs); nothing for a clean
    input."""
    if inp.damage is None:
        assert entries == [], entries
        return
    assert any(p == inp.damage_path and inp.damage in e for p, e in entries), entries


# Iceberg and Delta read their input with the arrow writer's tasks (tables/files.py write_task: the same
# read_slices as parquet-arrow) and name the damage with the same skipped_ranges; what is theirs is the
# table's commit and the printed read command. So each input goes through one of them (both for the
# clean local log dir and the corrupt batch), alternately: every input through the table export's own
# planning, each format with clean, damaged, tiered, S3 and transactional inputs; each input read by
# parquet-arrow, parquet-spark and the DataFrame as before.
TABLE_FORMAT = {
    "s3": "delta",
    "tiered-kafka-local": "iceberg",
    "tiered-aiven-encrypted": "delta",
    "remote-missing": "iceberg",
    "remote-twice": "delta",
    "transactions": "iceberg",
    "transactions-uncommitted": "delta",
    "transactions-s3": "iceberg",
}
CELLS = [
    (name, output)
    for name in INPUTS
    for output in OUTPUTS
    if output not in ("iceberg", "delta") or TABLE_FORMAT.get(name, output) == output
]


@pytest.mark.parametrize(("name", "output"), CELLS, ids=[f"{n}-{o}" for n, o in CELLS])
def test_every_record_once_or_named(spark, inputs, tmp_path, request, name, output):
    inp = inputs[name]
    if output == "dataframe":
        df = spark.read.format("kafka-log").options(**inp.options).load(inp.paths).select(*COLUMNS)
        got, n = _rows_to_dict(df.toArrow())
        _check(got, n, inp.expected)
        bad = (
            spark.read.format("kafka-log-segments")
            .options(**inp.options)
            .load(inp.paths)
            .where("error is not null or size(crc_mismatches) > 0")
            .select("path", "error", "crc_mismatches")
            .collect()
        )
        entries = [(r["path"], r["error"]) for r in bad if r["error"] is not None]
        entries += [(r["path"], c["error"]) for r in bad for c in r["crc_mismatches"] or ()]
        _named(entries, inp)
        return
    out = tmp_path / "out"
    fmt, _, writer = output.partition("-")
    args = [*inp.paths, "--out", str(out), "--format", fmt, "--json", *_cli_args(inp.options)]
    if writer:
        args += ["--writer", writer]
    res = _export(args)
    assert res.exit_code == (0 if inp.damage is None else 1), res.output
    summary = json.loads(res.stdout)
    _named([(s["path"], s["error"]) for s in summary["skipped"]], inp)
    # the tiered log dirs hold __remote_log_metadata partitions: left out, and said (item 6)
    tiered = "remoteStorage" in inp.options
    assert summary["internal_topics_left_out"] == (["__remote_log_metadata"] if tiered else [])
    if fmt == "parquet":
        import pyarrow.parquet as pq

        got, n = _rows_to_dict(pq.read_table(out, columns=COLUMNS))
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        got, n = _read_printed(summary["read_with"], elsewhere)
    assert summary["rows"] == n
    _check(got, n, inp.expected)
    assert os.path.isdir(out)

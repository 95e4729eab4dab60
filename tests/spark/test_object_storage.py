"""Log dirs on S3: a real S3-compatible server (moto's, on 127.0.0.1, s3server.py) holds copies of real
log dirs and of a generated one; discovery, index seeks, ranged reads, both data sources, export and
census are checked against the same log dirs read locally, and the bytes the server sent are counted."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import pickle
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from s3server import BUCKET, served_ranges

import realworld
from logdoctor.formats.records import Compression, iter_batches
from logdoctor.logdir import storage as storage_module
from logdoctor.logdir.discovery import InputNotFoundError, discover
from logdoctor.logdir.seek import offset_for_timestamp
from logdoctor.logdir.slices import parse_read_options, plan_slices
from logdoctor.logdir.storage import Storage
from logdoctor.sample.logdir import TopicSpec, generate_log_dir
from logdoctor.spark.sources.slice_reader import read_slice

pytestmark = pytest.mark.spark

REAL = ("kraft-3.5-greenlemont-n1", "zk-0.10.1-xpxwo100", "zk-corrupt-znsio", "zk-2.8-seanorth")
COLUMNS = ("topic", "partition", "offset", "key", "value", "timestamp")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    path, _ = generate_log_dir(
        tmp_path_factory.mktemp("s3") / "broker",
        [
            TopicSpec(
                "events",
                partitions=2,
                records_per_partition=20_000,
                records_per_batch=10,
                value_size=200,
                segment_bytes=4 * 1024 * 1024,
            ),
            TopicSpec(
                "zipped",
                partitions=1,
                records_per_partition=3000,
                records_per_batch=25,
                compression=Compression.LZ4,
                segment_bytes=64 * 1024,
            ),
        ],
    )
    return path


@pytest.fixture(scope="module")
def damaged(generated, tmp_path_factory):
    """Two partitions of the generated log dir, damaged: a CRC mismatch mid-segment, a zero-filled tail."""
    import shutil

    out = tmp_path_factory.mktemp("damaged") / "kafka-logs"
    out.mkdir()
    shutil.copy(generated / "meta.properties", out / "meta.properties")
    for name in ("events-1", "zipped-0"):
        shutil.copytree(generated / name, out / name)
    first = sorted((out / "events-1").glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF
    first.write_bytes(bytes(data))
    last = sorted((out / "zipped-0").glob("*.log"))[-1]
    last.write_bytes(last.read_bytes() + b"\x00" * 3000)
    return out


@pytest.fixture(scope="module")
def remote(s3, generated, damaged):
    """{name: (local log dir, its copy's s3:// URI)}: the generated log dir, a damaged copy of two of its
    partitions, and real log dirs when present."""
    out = {
        "generated": (generated, s3.upload(generated, "generated/kafka-logs")),
        "damaged": (damaged, s3.upload(damaged, "damaged/kafka-logs")),
    }
    if realworld.available():
        for name in REAL:
            out[name] = (
                realworld.REALWORLD / name,
                s3.upload(realworld.REALWORLD / name, f"realworld/{name}"),
            )
    return out


def pair(remote, name):
    if name not in ("generated", "damaged"):
        realworld.require()
    return remote[name]


def names():
    return ["generated", "damaged", *(REAL if realworld.available() else ())]


# --- the storage module over S3 ---------------------------------------------------------------------


def test_storage_lists_and_reads_as_the_local_file_system(remote):
    local, uri = remote["generated"]
    st, loc = Storage.of(uri + "/")
    assert not st.is_local and loc == uri and str(st) == f"s3://{BUCKET}"
    assert pickle.loads(pickle.dumps(st)) == st and "region=us-east-1" in st.fs_uri
    assert sorted((e.name, e.is_dir()) for e in st.list(loc)) == sorted(
        (p.name, p.is_dir()) for p in local.iterdir()
    )
    part = local / "events-0"
    assert {e.name: e.size for e in st.list(st.join(loc, "events-0"))} == {
        p.name: p.stat().st_size for p in part.iterdir()
    }
    log = sorted(part.glob("*.log"))[0]
    remote_log = st.join(loc, "events-0", log.name)
    data = log.read_bytes()
    assert st.read(remote_log) == data
    assert st.read_range(remote_log, 100, 50) == data[100:150]
    with st.open(remote_log) as reader:
        assert reader.size == len(data) and reader.read_at(len(data) - 10, 100) == data[-10:]
    assert st.info(remote_log).size == len(data) and st.info(st.join(loc, "nope")) is None
    assert st.dirname(remote_log) == st.join(loc, "events-0") and st.basename(remote_log) == log.name
    assert st.glob(f"{uri}/events-*") == [f"{uri}/events-0", f"{uri}/events-1"]
    assert st.glob(f"s3://{BUCKET}/gen*/kafka-logs/zipped-?/*.index") == [
        f"{uri}/zipped-0/{p.name}" for p in sorted((local / "zipped-0").glob("*.index"))
    ]


def _shape(refs, root):
    return [
        (
            r.log_dir[len(root) :],
            r.topic,
            r.partition,
            r.kind,
            r.path[len(root) :],
            [(s.base_offset, s.size, s.next_base_offset, s.path[len(root) :]) for s in r.segments],
        )
        for r in refs
    ]


@pytest.mark.parametrize("name", ["generated", "damaged", *REAL])
def test_discovery_finds_what_it_finds_locally(remote, name):
    local, uri = pair(remote, name)
    assert _shape(discover(uri), uri) == _shape(discover(str(local)), str(local))
    folder = next(p for p in sorted(local.iterdir()) if p.is_dir() and any(p.glob("*.log")))
    one = sorted(folder.glob("*.log"))[0]
    assert _shape(discover(f"{uri}/{folder.name}"), uri) == _shape(discover(str(folder)), str(local))
    assert _shape(discover(f"{uri}/{folder.name}/{one.name}"), uri) == _shape(discover(str(one)), str(local))


def test_a_missing_or_wrong_remote_path_is_a_clear_error(remote):
    _, uri = remote["generated"]
    with pytest.raises(InputNotFoundError, match="no such file or folder"):
        discover(f"{uri}/no-such-partition-0")
    with pytest.raises(InputNotFoundError):
        discover(f"s3://{BUCKET}/nothing-here")
    with pytest.raises(Exception, match="no file or folder matches"):
        discover(f"s3://{BUCKET}/nothing-*/kafka-logs")
    with pytest.raises(Exception, match=r"not a segment \.log file"):
        discover(f"{uri}/events-0/00000000000000000000.index")


# --- seeks and ranged reads, in-process ---------------------------------------------------------------


def _rows(slices, opts):
    out = []
    for sl in slices:
        for rb in read_slice(sl, opts):
            out.extend(zip(*(rb.column(c).to_pylist() for c in COLUMNS), strict=True))
    return out


def test_a_planned_slice_fetches_only_its_byte_ranges(s3, remote):
    local, uri = remote["generated"]
    start, end = 5000, 6000
    opts = parse_read_options({"startingOffsets": str(start), "endingOffsets": str(end)})
    local_slices = plan_slices(discover(str(local / "events-0")), opts)
    s3.reset()
    slices = plan_slices(discover(f"{uri}/events-0"), opts)
    assert len(slices) == len(local_slices) == 1
    sl = slices[0]
    log_name = os.path.basename(sl.segment.path)
    assert sl.read_from == local_slices[0].read_from > 0 and sl.fetch_hint is not None
    # planning read the listing, the offset index and one 17-byte header, and the segment's batches once for
    # the walk that finds every transaction's outcome from its markers (issue 45: a marker may lie anywhere
    # after the range, the last stable offset anywhere before it; logdoctor.logdir.transactions)
    data = (local / "events-0" / log_name).read_bytes()
    assert sum(g.body_bytes for g in s3.gets(log_name)) == len(data) + 17
    assert not s3.gets(".timeindex")

    s3.reset()
    rows = _rows(pickle.loads(pickle.dumps(slices)), opts)  # as an executor gets them
    assert rows == _rows(local_slices, opts)
    assert [r[2] for r in rows] == list(range(start, end))

    data = (local / "events-0" / log_name).read_bytes()
    needed_end = sl.read_from
    for batch in iter_batches(data, start=sl.read_from):
        if batch.base_offset >= end:
            break
        needed_end = batch.position + batch.size
    ranges = sorted(served_ranges(s3.gets(log_name)))
    # one read from the seek position to the hint (the index's next entry past the end offset); the
    # batch there is a look at its header at most (the reader stops before when it meets the end first)
    assert ranges[0] == (sl.read_from, sl.fetch_hint) and ranges[1:] in (
        [],
        [(sl.fetch_hint, sl.fetch_hint + 17)],
    )
    assert (
        needed_end <= sl.fetch_hint <= needed_end + 4096 + 2800
    )  # the index's interval and a batch, at most
    assert sum(b - a for a, b in ranges) < len(data) // 10
    assert not s3.gets(".index")  # the index was read when planning, not again


def test_a_large_remote_slice_is_read_in_chunks(s3, remote, monkeypatch):
    from logdoctor.logdir import ranged

    local, uri = remote["generated"]
    monkeypatch.setattr(ranged, "FIRST_CHUNK", 64 * 1024)
    monkeypatch.setattr(ranged, "MAX_CHUNK", 256 * 1024)
    opts = parse_read_options({})
    slices = plan_slices(discover(f"{uri}/events-1"), opts)
    s3.reset()
    rows = _rows(slices, opts)
    assert rows == _rows(plan_slices(discover(str(local / "events-1")), opts), opts)
    for sl in slices:
        ranges = sorted(served_ranges(s3.gets(os.path.basename(sl.segment.path))))
        assert ranges[0][0] == 0 and all(b == c for (_, b), (c, _) in itertools.pairwise(ranges))
        assert ranges[-1][1] == sl.segment.size  # every byte read once, in pieces of 256 KiB at most
        assert max(b - a for a, b in ranges) <= 256 * 1024 + 2800 and (
            sl.segment.size < 300_000 or len(ranges) > 4
        )


def test_s3_options_name_the_endpoint_and_region(s3, remote, monkeypatch):
    """``s3.endpoint`` / ``s3.region`` (data-source options) instead of AWS_ENDPOINT_URL; the storage is
    rebuilt from its picklable value in a fresh process cache, as on an executor."""
    local, uri = remote["generated"]
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    options = {"S3.Endpoint": s3.endpoint, "s3.region": "us-east-1"}
    opts = parse_read_options(options)
    refs = discover(f"{uri}/zipped-0", opts)
    assert "endpoint_override=" in refs[0].storage.fs_uri
    slices = pickle.loads(pickle.dumps(plan_slices(refs, opts)))
    monkeypatch.setattr(storage_module, "_FILESYSTEMS", {})
    assert _rows(slices, opts) == _rows(plan_slices(discover(str(local / "zipped-0")), opts), opts)


@pytest.mark.parametrize(
    "name", ["generated", "damaged", "kraft-3.5-greenlemont-n1", "zk-2.8-seanorth", "zk-0.10.1-xpxwo100"]
)
def test_timestamps_and_offsets_resolve_as_locally(remote, name):
    local, uri = pair(remote, name)
    pairs = [(lr, rr) for lr, rr in zip(discover(str(local)), discover(uri), strict=True) if lr.segments]
    pairs = [p for p in pairs if sum(s.size for s in p[0].segments) > 0][:6]
    assert pairs
    every = parse_read_options({})
    for lr, rr in pairs:
        recs = _rows(plan_slices([lr], every), every)
        if not recs:
            continue
        stamps = sorted({int(r[5].timestamp() * 1000) for r in recs if r[5] is not None})
        probes = {
            stamps[0] - 1,
            stamps[len(stamps) // 3],
            stamps[len(stamps) // 2],
            stamps[-1],
            stamps[-1] + 1,
        }
        for ts in sorted(probes):
            assert offset_for_timestamp(rr.segments, ts) == offset_for_timestamp(lr.segments, ts), (
                lr.path,
                ts,
            )
        offsets = [r[2] for r in recs]
        mid = offsets[len(offsets) // 2]
        for text in (
            {"startingOffsets": str(mid)},
            {"startingOffsets": str(offsets[1]), "endingOffsets": str(mid)},
            {"startingTimestamp": str(stamps[len(stamps) // 2])},
            {"startingTimestamp": str(stamps[0]), "endingTimestamp": str(stamps[len(stamps) // 3])},
        ):
            opts = parse_read_options(text)
            remote_slices = plan_slices([rr], opts)
            assert [s.read_from for s in remote_slices] == [
                s.read_from for s in plan_slices([lr], opts) if s.part == 0
            ], (lr.path, text)
            assert _rows(remote_slices, opts) == _rows(plan_slices([lr], opts), opts), (lr.path, text)


# --- the data sources on Spark --------------------------------------------------------------------------


def digest(df) -> tuple[int, str]:
    """Count and an order-independent SHA-256 of (topic, partition, offset, key, value, timestamp); the
    rows come to the driver as Arrow (toArrow), not one pickled Row each (collect)."""
    cols = df.select(*COLUMNS).toArrow().to_pydict()
    lines = sorted(
        "\t".join(
            [
                t,
                str(p),
                str(o),
                "-" if k is None else bytes(k).hex(),
                "-" if v is None else bytes(v).hex(),
                "-" if ts is None else ts.isoformat(),
            ]
        )
        for t, p, o, k, v, ts in zip(*(cols[c] for c in COLUMNS), strict=True)
    )
    return len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.mark.slow
def test_kafka_log_over_s3_gives_the_local_rows(spark, remote):
    got, want = {}, {}
    for name in names():
        local, uri = remote[name]
        every = spark.read.format("kafka-log").option("includeInternal", "true")  # greenlemont-n1: only __
        got[name] = digest(every.load(uri))
        want[name] = digest(every.load(str(local)))
        assert want[name][0] > 0, name
    assert got == want
    both = spark.read.format("kafka-log").load(
        [remote["generated"][1], f"s3://{BUCKET}/generated/kafka-log*"]
    )
    assert both.count() == want["generated"][0]  # the same files named twice are read once
    logs = {
        r[0]
        for r in spark.read.format("kafka-log")
        .load(remote["generated"][1])
        .select("log_dir")
        .distinct()
        .collect()
    }
    assert logs == {remote["generated"][1]}


def test_offset_and_timestamp_options_over_s3(spark, remote):
    local, uri = remote["generated"]
    ts = 1_700_000_000_000 + 7_000 * 1000  # FleetSpec: base timestamp, one second per batch
    for options in (
        {
            "startingOffsets": json.dumps({"events": {"0": 12_345, "1": 100}}),
            "endingOffsets": json.dumps({"events": {"0": 17_000}}),
        },
        {"startingTimestamp": str(ts), "endingTimestamp": str(ts + 400_000)},
        {"startingOffsets": "latest"},
        {"topics": "zipped", "startingOffsets": "1000", "endingOffsets": "2500"},
    ):
        remote_rows = digest(spark.read.format("kafka-log").options(**options).load(uri))
        assert remote_rows == digest(spark.read.format("kafka-log").options(**options).load(str(local))), (
            options
        )
    if realworld.available():
        local, uri = remote["kraft-3.5-greenlemont-n1"]
        options = {"topics": "__cluster_metadata", "startingOffsets": "5000", "endingOffsets": "20000"}
        remote_rows = digest(spark.read.format("kafka-log").options(**options).load(uri))
        assert remote_rows == digest(spark.read.format("kafka-log").options(**options).load(str(local)))
        assert remote_rows[0] > 0


SEGMENT_COLUMNS = (
    "topic",
    "partition",
    "base_offset",
    "last_offset",
    "size_bytes",
    "record_count",
    "batch_count",
    "min_timestamp",
    "max_timestamp",
    "time_index_max_timestamp",
    "codecs",
    "magic_versions",
    "valid_bytes",
    "error",
    "crc_mismatches",
)


def _segments(spark, path, root):
    rows = spark.read.format("kafka-log-segments").load(path).collect()
    out = {}
    for r in rows:
        d = {c: r[c] for c in SEGMENT_COLUMNS}
        if d["error"] is not None:
            d["error"] = d["error"].replace(root, "ROOT")
        corrupt = [f["code"] for f in r["findings"] if f["code"] == "LOG_CORRUPT"]
        out[r["path"][len(root) :]] = (d, corrupt)
    return out


def test_kafka_log_segments_over_s3_summarizes_as_locally(spark, remote):
    for name in names():
        local, uri = remote[name]
        assert _segments(spark, uri, uri) == _segments(spark, str(local), str(local)), name
    _, uri = remote["damaged"]
    segments = _segments(spark, uri, uri)
    errors = {k: v for k, v in segments.items() if v[0]["error"] is not None}
    crc = {k: v for k, v in segments.items() if v[0]["crc_mismatches"]}
    assert len(errors) == 1 and len(crc) == 1  # a CRC mismatch mid-segment skips its batch alone (issue 31)
    assert all(corrupt == ["LOG_CORRUPT"] for _, corrupt in [*errors.values(), *crc.values()])
    assert any("zero-filled tail of 3000 bytes" in d["error"] for d, _ in errors.values())
    ((d, _),) = crc.values()
    assert d["error"] is None and len(d["crc_mismatches"]) == 1


# --- export and census ----------------------------------------------------------------------------------


def _table_digest(out):
    table = pq.read_table(out)
    rows = table.select(list(COLUMNS)).to_pylist()
    lines = sorted(
        "\t".join(
            (
                r["topic"],
                str(r["partition"]),
                str(r["offset"]),
                (r["key"] or b"").hex(),
                (r["value"] or b"").hex(),
            )
        )
        for r in rows
    )
    return len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.fixture(scope="module")
def local_export(spark, remote, tmp_path_factory):
    """The export of the generated and damaged log dirs from the local file system (the default writer),
    once for both writers' exports from S3: (its result, its digest)."""
    from logdoctor.spark.export import run_export

    out = tmp_path_factory.mktemp("local-export") / "expected"
    expected = run_export(spark, [str(remote["generated"][0]), str(remote["damaged"][0])], out)
    return expected, _table_digest(out)


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_export_from_s3_to_a_local_folder(spark, remote, local_export, tmp_path, writer):
    from logdoctor.spark.export import run_export

    (_, uri), (_, broken_uri) = remote["generated"], remote["damaged"]
    result = run_export(spark, [uri, broken_uri], tmp_path / "out", writer=writer)
    expected, expected_digest = local_export
    assert result.writer == writer and result.rows == expected.rows > 0
    assert result.bytes_in == expected.bytes_in and result.segments == expected.segments
    assert _table_digest(tmp_path / "out") == expected_digest
    assert [(s.valid_bytes, s.size_bytes) for s in result.skipped] == [
        (s.valid_bytes, s.size_bytes) for s in expected.skipped
    ]
    assert len(result.skipped) == 2 and all(s.path.startswith(broken_uri) for s in result.skipped)


@pytest.mark.slow
def test_export_command_reads_s3_with_the_environment_credentials(remote, tmp_path):
    """``logdoctor export s3://...`` in a fresh process: credentials and endpoint from AWS_* only."""
    out = tmp_path / "out"
    assert remote["generated"]
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from logdoctor.cli.main import main; main()",
            "export",
            f"s3://{BUCKET}/generated/*",
            "--out",
            str(out),
            "--master",
            "local[1]",
            "--topics",
            "zipped",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["rows"] == 3000 and summary["writer"] == "arrow" and summary["skipped"] == []
    assert pq.read_table(out).num_rows == 3000


def test_export_command_exits_66_for_a_missing_remote_input(remote, tmp_path):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    res = CliRunner().invoke(
        app, ["export", f"s3://{BUCKET}/no-such/kafka-logs", "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 66, res.output
    assert "no such file or folder" in res.output


def test_census_refuses_remote_log_dirs_and_names_inventory(remote, tmp_path):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401
    from logdoctor.cli.main import app
    from logdoctor.spark.census_inputs import classify
    from logdoctor.spark.census_rules import CensusError

    _, uri = remote["generated"]
    for path in (uri, f"s3://{BUCKET}/generated", f"s3://{BUCKET}/generated/*"):
        with pytest.raises(CensusError, match="logdoctor inventory"):
            classify([path])
    res = CliRunner().invoke(app, ["census", uri, "--out", str(tmp_path / "census")], terminal_width=200)
    assert res.exit_code == 64 and "logdoctor inventory" in res.output, res.output
    assert not (tmp_path / "census").exists()

"""export --remote-storage and the data sources over ../shared/tiered: a tiered log dir and its remote tier
(Kafka's LocalTieredStorage; Aiven's plugin plain, zstd, zstd + encryption) give every record of the
tiered topic exactly once, compared record by record with kafka-python over the same partitions never
tiered (original/kafka-logs, the truth Kafka's classes wrote); from a local folder and from the moto S3
server; bad remote objects make export exit 1 naming the object and the offsets it could not read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka.record import MemoryRecords

import realworld

pytestmark = pytest.mark.spark

# variant -> (log dir, store, private key), relative to ../shared/tiered
VARIANTS = {
    "kafka-local": ("kafka-local/kafka-logs", "kafka-local/remote", None),
    "aiven-plain": ("aiven/plain/kafka-logs", "aiven/plain/storage", None),
    "aiven-compressed": ("aiven/compressed/kafka-logs", "aiven/compressed/storage", None),
    "aiven-encrypted": (
        "aiven/encrypted/kafka-logs",
        "aiven/encrypted/storage",
        "aiven/encrypted/keys/private.pem",
    ),
}
COUNTS = {0: 2000, 1: 4500}  # payments-0, payments-1 (../shared/tiered/README.md)


@pytest.fixture(scope="module")
def truth() -> dict[tuple[int, int], tuple[bytes | None, bytes | None, int]]:
    """{(partition, offset): (key, value, timestamp)} of payments as kafka-python reads the never-tiered
    partitions."""
    tiered = realworld.require_tiered()
    out: dict[tuple[int, int], tuple[bytes | None, bytes | None, int]] = {}
    for p in COUNTS:
        for log in sorted((tiered / "original" / "kafka-logs" / f"payments-{p}").glob("*.log")):
            records = MemoryRecords(log.read_bytes())
            while records.has_next():
                batch = records.next_batch()
                if batch is None:
                    break
                for r in batch:
                    out[(p, r.offset)] = (r.key, r.value, r.timestamp)
    assert {p: sum(1 for k in out if k[0] == p) for p in COUNTS} == COUNTS
    return out


def _options(tiered: Path, variant: str, store: str | None = None) -> dict[str, str]:
    _, store_rel, key = VARIANTS[variant]
    opts = {"remoteStorage": store or str(tiered / store_rel), "topics": "payments"}
    if key:
        opts["remotePrivateKey"] = str(tiered / key)
    return opts


def _check_every_record_once(out: Path, truth) -> None:
    table = pq.read_table(out, columns=["partition", "offset", "key", "value", "timestamp"]).to_pydict()
    rows = list(
        zip(
            table["partition"], table["offset"], table["key"], table["value"], table["timestamp"], strict=True
        )
    )
    assert len(rows) == len(truth) == sum(COUNTS.values())
    got = {}
    for p, o, k, v, ts in rows:
        assert (int(p), o) not in got, f"offset {o} of payments-{p} exported twice"
        got[(int(p), o)] = (k, v, int(ts.timestamp() * 1000))
    assert got == truth


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_export_gives_every_record_of_the_tiered_topic_once(spark, truth, tmp_path, variant):
    from logdoctor.spark.export import run_export

    tiered = realworld.require_tiered()
    logs = str(tiered / VARIANTS[variant][0])
    result = run_export(spark, [logs], tmp_path / "out", options=_options(tiered, variant))
    assert result.rows == 6500 and result.skipped == []
    _check_every_record_once(tmp_path / "out", truth)
    # the records of the remote tier name the store as where they were read
    table = pq.read_table(tmp_path / "out", columns=["offset", "log_dir", "partition"]).to_pydict()
    local_from = {0: 1296, 1: 2289 if variant == "kafka-local" else 1962}
    for o, d, p in zip(table["offset"], table["log_dir"], table["partition"], strict=True):
        assert d == (_options(tiered, variant)["remoteStorage"] if o < local_from[int(p)] else logs)


def test_a_segment_both_uploaded_and_still_local_is_read_once(spark, truth, tmp_path):
    """payments-0 keeps [972, 1296) locally too (uploaded, not yet deleted by local retention)."""
    from logdoctor.spark.export import run_export

    tiered = realworld.require_tiered()
    logs = realworld.writable_copy(tiered / "kafka-local" / "kafka-logs", tmp_path / "kafka-logs")
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(
            tiered / "original" / "kafka-logs" / "payments-0" / f"{972:020d}{suffix}",
            logs / "payments-0" / f"{972:020d}{suffix}",
        )
    result = run_export(spark, [str(logs)], tmp_path / "out", options=_options(tiered, "kafka-local"))
    assert result.rows == 6500
    _check_every_record_once(tmp_path / "out", truth)


def _three_replicas(tiered: Path, root: Path) -> list[Path]:
    """kafka-local's log dir as three brokers' replicas of one store; broker-2 still holds [972, 1296) of
    payments-0 locally (its local log starts lower)."""
    src = tiered / "kafka-local" / "kafka-logs"
    dirs = [realworld.writable_copy(src, root / f"broker-{b}" / "kafka-logs") for b in (1, 2, 3)]
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(
            tiered / "original" / "kafka-logs" / "payments-0" / f"{972:020d}{suffix}",
            dirs[1] / "payments-0" / f"{972:020d}{suffix}",
        )
    return dirs


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_several_replicas_read_the_remote_tier_once(spark, truth, tmp_path, writer):
    """Issue 47 item 4: three replicas of one tiered topic exported with their one store give each remote
    offset once, named by the store, and each local offset once per replica; a replica's rows with the
    store's are that replica's whole log, record for record as kafka-python reads the never-tiered one."""
    from logdoctor.spark.export import run_export

    tiered = realworld.require_tiered()
    dirs = _three_replicas(tiered, tmp_path)
    opts = _options(tiered, "kafka-local")
    store = opts["remoteStorage"]
    result = run_export(spark, [str(d) for d in dirs], tmp_path / "out", options=opts, writer=writer)
    table = pq.read_table(
        tmp_path / "out", columns=["log_dir", "partition", "offset", "key", "value", "timestamp"]
    ).to_pydict()
    rows: dict[str, dict[tuple[int, int], tuple]] = {}
    for d, p, o, k, v, ts in zip(*table.values(), strict=True):
        copy = rows.setdefault(d, {})
        assert (int(p), o) not in copy, f"offset {o} of payments-{p} twice in the rows of {d}"
        copy[(int(p), o)] = (k, v, int(ts.timestamp() * 1000))
    local_from = {0: 1296, 1: 2289}
    assert set(rows) == {store, *map(str, dirs)}
    assert sorted(rows[store]) == sorted(k for k in truth if k[1] < local_from[k[0]])
    for i, d in enumerate(dirs):
        first = {0: 972 if i == 1 else 1296, 1: 2289}
        assert sorted(rows[str(d)]) == sorted(k for k in truth if k[1] >= first[k[0]]), d
        # the replica's whole log, each record as Kafka wrote it
        assert {**rows[store], **rows[str(d)]} == truth
    assert result.rows == len(table["offset"]) == sum(len(r) for r in rows.values())
    # the store [0, 1296) and [0, 2289); brokers 1 and 3 [1296, 2000) and [2289, 4500); broker-2 from 972
    assert len(table["offset"]) == (1296 + 2289) + 2 * (704 + 2211) + (1028 + 2211)
    # the segments source lists each remote object once
    segs = (
        spark.read.format("kafka-log-segments")
        .options(**opts)
        .load(",".join(str(d) for d in dirs))
        .where(f"log_dir = '{store}'")
        .select("partition", "base_offset")
        .collect()
    )
    assert len(segs) == len({(r["partition"], r["base_offset"]) for r in segs}) > 0


@pytest.fixture(scope="module")
def on_s3(s3):
    """{variant: (log dir URI, store URI)}: ../shared/tiered uploaded to the moto S3 server."""
    tiered = realworld.require_tiered()
    out = {}
    for variant, (logs, store, _) in VARIANTS.items():
        out[variant] = (
            s3.upload(tiered / logs, f"tiered/{variant}/kafka-logs"),
            s3.upload(tiered / store, f"tiered/{variant}/store"),
        )
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_export_from_s3_gives_every_record_once(spark, truth, on_s3, tmp_path, variant):
    from logdoctor.spark.export import run_export

    tiered = realworld.require_tiered()
    logs, store = on_s3[variant]
    result = run_export(spark, [logs], tmp_path / "out", options=_options(tiered, variant, store))
    assert result.rows == 6500 and result.skipped == []
    _check_every_record_once(tmp_path / "out", truth)


def test_segments_source_lists_remote_segments(spark):
    tiered = realworld.require_tiered()
    opts = _options(tiered, "aiven-encrypted")
    rows = (
        spark.read.format("kafka-log-segments")
        .options(**opts)
        .load(str(tiered / "aiven" / "encrypted" / "kafka-logs"))
        .where("partition = 0")
        .orderBy("base_offset")
        .collect()
    )
    remote = [r for r in rows if r["log_dir"] == opts["remoteStorage"]]
    assert [r["base_offset"] for r in remote] == [0, 324, 648, 972]
    assert all(r["error"] is None and r["path"].endswith(".log") for r in remote)
    # the time index from the store's .indexes object: its last entry, the segment's largest timestamp
    assert [r["time_index_max_timestamp"] for r in remote] == [r["max_timestamp"] for r in remote]
    assert sum(r["record_count"] for r in rows) == 2000
    # kafka-log with an ending offset inside the remote tier: seeks with the store's offset index
    records = (
        spark.read.format("kafka-log")
        .options(**opts, startingOffsets='{"payments":{"0":500}}', endingOffsets='{"payments":{"0":700}}')
        .load(str(tiered / "aiven" / "encrypted" / "kafka-logs"))
        .where("partition = 0")
        .select("offset")
        .collect()
    )
    assert sorted(r["offset"] for r in records) == list(range(500, 700))


def _bad_store(tmp_path: Path, variant: str) -> tuple[Path, Path]:
    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / VARIANTS[variant][1], tmp_path / "store")
    return tiered / VARIANTS[variant][0], store


def _invoke_export(args: list[str]):
    from typer.testing import CliRunner

    from logdoctor.cli import commands  # noqa: F401  (registers every command)
    from logdoctor.cli.main import app

    return CliRunner().invoke(app, ["export", *args], terminal_width=300)


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_export_of_a_truncated_remote_object_exits_1_naming_the_offsets(spark, tmp_path, writer):
    """The arrow writer's tasks report the segment; the spark writer's segments pass finds it."""
    logs, store = _bad_store(tmp_path, "aiven-compressed")
    victim = next((store / "payments-cGF5bWVudHMtdG9waWMwMQ" / "0").glob("*00000000000000000324-*.log"))
    victim.write_bytes(victim.read_bytes()[:-500])
    res = _invoke_export(
        [
            str(logs),
            "--out",
            str(tmp_path / "out"),
            "--remote-storage",
            str(store),
            "--topics",
            "payments",
            "--master",
            "local[2]",
            "--writer",
            writer,
            "--json",
        ]
    )
    assert res.exit_code == 1, res.output
    summary = json.loads(res.stdout)
    assert summary["rows"] == 6500 - 324
    [skipped] = summary["skipped"]
    assert skipped["path"] == str(victim) and "offsets 324-647 not read" in skipped["error"]
    assert "truncated" in skipped["error"]


@pytest.mark.parametrize("damage", ["wrong-key", "manifest-99", "chunk-deleted"])
def test_export_of_bad_remote_objects_exits_1(spark, tmp_path, damage):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    logs, store = _bad_store(tmp_path, "aiven-encrypted")
    folder = store / "payments-cGF5bWVudHMtdG9waWMwMQ" / "1"
    tiered = realworld.require_tiered()
    key = tiered / VARIANTS["aiven-encrypted"][2]
    if damage == "wrong-key":
        key = tmp_path / "other.pem"
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key.write_bytes(
            other.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        expected_rows, bad = (2000 - 1296) + (4500 - 1962), 4 + 6  # every remote segment
        folder = folder.parent
    elif damage == "manifest-99":
        manifest = next(folder.glob("*00000000000000000654-*.rsm-manifest"))
        obj = json.loads(manifest.read_text())
        obj["version"] = "99"
        manifest.write_text(json.dumps(obj))
        expected_rows, bad = 6500 - 327, 1
    else:
        victim = next(folder.glob("*00000000000000001635-*.log"))
        data = victim.read_bytes()
        victim.write_bytes(data[:5000] + data[10000:])
        expected_rows, bad = 6500 - 327, 1
    res = _invoke_export(
        [
            str(logs),
            "--out",
            str(tmp_path / "out"),
            "--remote-storage",
            str(store),
            "--remote-private-key",
            str(key),
            "--topics",
            "payments",
            "--json",
        ]
    )
    assert res.exit_code == 1, res.output
    summary = json.loads(res.stdout)
    assert summary["rows"] == expected_rows and len(summary["skipped"]) == bad
    for s in summary["skipped"]:
        assert s["path"].startswith(str(folder)) and " not read: " in s["error"] and "offsets " in s["error"]
    text = {
        "wrong-key": "wrong key",
        "manifest-99": "version '99'",
        "chunk-deleted": "chunks missing",
    }[damage]
    assert all(text in s["error"] for s in summary["skipped"])


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_a_remote_segment_missing_from_the_store_is_no_silent_gap(spark, tmp_path, writer):
    """kafka-local's payments-0 [324, 647] deleted from the store: the remote log metadata among the
    inputs lists it as copied; export names the missing object and its offsets and exits 1."""
    logs, store = _bad_store(tmp_path, "kafka-local")
    folder = store / "kafka-tiered-storage" / "payments-0-cGF5bWVudHMtdG9waWMwMQ"
    [victim] = folder.glob("00000000000000000324-*.log")
    for f in folder.glob("00000000000000000324-*"):
        f.unlink()
    res = _invoke_export(
        [
            str(logs),
            "--out",
            str(tmp_path / "out"),
            "--remote-storage",
            str(store),
            "--topics",
            "payments",
            "--writer",
            writer,
            "--json",
        ]
    )
    assert res.exit_code == 1, res.output
    summary = json.loads(res.stdout)
    assert summary["rows"] == 6500 - 324
    [skipped] = summary["skipped"]
    assert skipped["path"] == str(victim)
    assert "offsets 324-647 not read" in skipped["error"]
    assert "no object of it is in the store" in skipped["error"]

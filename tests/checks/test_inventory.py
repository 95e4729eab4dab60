"""`logdoctor inventory`: one broker's rows for the census, read only, safe next to a running broker."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.inventory import (
    INVENTORY_DDL,
    METADATA_KEY,
    SCHEMA_VERSION,
    build_inventory,
    read_inventory_rows,
    write_inventory,
)
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.formats.properties import parse_meta_properties
from logdoctor.sample.fleet import generate_demo_fleet

NOW = 1_790_000_000_000

HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fcntl(F_SETLK, F_WRLCK, start 0, len 0): a broker's lock
    print("LOCKED", flush=True)
    sys.stdin.read()
    """
)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("inv") / "fleet"
    generate_demo_fleet(root, now_ms=NOW)
    return root


def tree_hash(root: Path) -> str:
    """Names, sizes, modes and contents of every file under ``root`` (mtimes too)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [*sorted(filenames), "/"]:
            p = Path(dirpath) / name if name != "/" else Path(dirpath)
            st = p.lstat()
            h.update(f"{p.relative_to(root)}|{st.st_mode}|{st.st_size}|{st.st_mtime_ns}".encode())
            if p.is_file():
                h.update(p.read_bytes())
    return h.hexdigest()


def test_rows_hold_what_the_files_say(fleet):
    dirs = sorted(str(p) for p in (fleet / "broker-4").iterdir() if p.is_dir())
    inv = build_inventory(dirs, Depth.DEFAULT, now_ms=NOW)
    report = scan(dirs, ScanOptions(Depth.DEFAULT, NOW))
    meta = parse_meta_properties((Path(dirs[0]) / "meta.properties").read_bytes())
    broker = [r for r in inv.rows if r["record"] == "broker"]
    assert len(broker) == 1 and broker[0]["broker_id"] == meta.node_id == 4
    assert broker[0]["cluster_id"] == meta.cluster_id and broker[0]["broker_running"] is False
    log_dirs = {r["log_dir"]: r for r in inv.rows if r["record"] == "log_dir"}
    assert sorted(log_dirs) == dirs
    for d, row in log_dirs.items():
        own = parse_meta_properties((Path(d) / "meta.properties").read_bytes())
        assert row["directory_id"] == own.directory_id is not None
        st = os.statvfs(d)
        assert row["disk_total_bytes"] == st.f_blocks * st.f_frsize
        names = {c["file"] for c in row["checkpoints"]}
        assert names == {n for n in os.listdir(d) if n.endswith("checkpoint")}
    replicas = [r for r in inv.rows if r["record"] == "replica"]
    assert len(replicas) == len(report.partitions)
    for r in replicas:
        folder = Path(r["path"])
        segs = sorted(folder.glob("*.log"))
        assert r["segments"] == len(segs) and r["bytes"] == sum(s.stat().st_size for s in segs)
        lec = folder / "leader-epoch-checkpoint"
        if lec.exists():
            # the file: version line, count line, then "epoch start_offset" lines
            lines = lec.read_text().split("\n")
            entries = [tuple(map(int, line.split())) for line in lines[2 : 2 + int(lines[1])]]
            assert [(e["epoch"], e["start_offset"]) for e in r["leader_epochs"]] == entries
        pm = folder / "partition.metadata"
        if pm.exists():
            assert r["topic_id"] and r["topic_id"] in pm.read_text()
    assert [r["code"] for r in inv.rows if r["record"] == "finding"] == [f.code for f in report.findings]
    assert all(set(r) == {p.split(" ", 1)[0] for p in INVENTORY_DDL.split(", ")} for r in inv.rows)


@pytest.mark.realworld
def test_the_broker_row_names_the_controller_quorum_of_its_metadata_log_dir():
    """Issue 88 item 4's input: each real KRaft dir's broker row carries the voters its quorum-state's JSON
    names (data_version 0: a static quorum; every one of these dirs' metadata logs agrees with it); a dir
    without a metadata log (ZooKeeper mode, a meta.properties alone) has none."""
    import realworld

    rw = realworld.require()
    sources = {
        "the metadata log's latest VotersRecord",
        "the voters of the metadata log's latest LeaderChangeMessage",
        "quorum-state's currentVoters",
    }
    names = [e["name"] for e in realworld.manifest()["entries"]]
    kraft = [n for n in names if n.startswith("kraft-")]
    assert len(kraft) >= 7
    for name in [*kraft, "zk-2.8-seanorth", "zk-3.0-tuyen-nnt-b0"]:
        (row,) = (
            r
            for r in build_inventory([str(rw / name)], Depth.QUICK, now_ms=NOW).rows
            if r["record"] == "broker"
        )
        state = rw / name / "__cluster_metadata-0" / "quorum-state"
        if not state.exists():
            assert (row["quorum_voters"], row["quorum_source"], row["quorum_kind"]) == (None, None, None), (
                name
            )
            continue
        facts = json.loads(state.read_text())
        assert facts["data_version"] == 0, name
        want = sorted(v["voterId"] for v in facts["currentVoters"])
        assert (row["quorum_voters"], row["quorum_kind"]) == (want, "static"), name
        assert row["quorum_source"] in sources, name


@pytest.mark.parametrize("json_lines", [False, True])
def test_written_and_read_back(fleet, tmp_path, json_lines):
    inv = build_inventory([str(fleet / "broker-1" / "kafka-logs-0")], Depth.QUICK, now_ms=NOW)
    out = tmp_path / ("b1.jsonl" if json_lines else "b1.parquet")
    write_inventory(inv, str(out), json_lines=json_lines)
    assert os.listdir(tmp_path) == [out.name]  # no temporary file left
    assert read_inventory_rows(str(out)) == inv.rows
    if not json_lines:
        assert pq.read_schema(out).metadata[METADATA_KEY] == str(SCHEMA_VERSION).encode()
    else:
        assert all(
            json.loads(line)["schema_version"] == SCHEMA_VERSION for line in out.read_text().splitlines()
        )


def test_next_to_a_running_broker(fleet, tmp_path):
    """A process holds .lock (fcntl, as the broker): inventory completes, changes nothing, says so."""
    log_dir = fleet / "broker-3" / "kafka-logs-0"
    lock = log_dir / ".lock"
    lock.touch()
    before = tree_hash(log_dir)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "LOCKED"
        out = tmp_path / "b3.parquet"
        result = CliRunner().invoke(app, ["inventory", str(log_dir), "--out", str(out), "--depth", "deep"])
        assert result.exit_code == 0, result.output
        assert holder.poll() is None  # still holding its lock
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert tree_hash(log_dir) == before
    rows = read_inventory_rows(str(out))
    assert next(r for r in rows if r["record"] == "broker")["broker_running"] is True
    assert next(r for r in rows if r["record"] == "log_dir")["locked"] is True
    assert "running" in result.output


def test_refuses_output_inside_or_above_a_log_dir(fleet):
    log_dir = fleet / "broker-3" / "kafka-logs-0"
    before = tree_hash(fleet)
    for out in (log_dir / "inv.parquet", fleet / "broker-3"):
        result = CliRunner().invoke(app, ["inventory", str(log_dir), "--out", str(out)])
        assert result.exit_code == 73, result.output
    assert tree_hash(fleet) == before


def test_bad_depth_and_missing_dir(fleet, tmp_path):
    log_dir = fleet / "broker-3" / "kafka-logs-0"
    assert (
        CliRunner()
        .invoke(app, ["inventory", str(log_dir), "--out", str(tmp_path / "x"), "--depth", "x"])
        .exit_code
        == 64
    )
    assert (
        CliRunner().invoke(app, ["inventory", str(tmp_path / "nope"), "--out", str(tmp_path / "x")]).exit_code
        == 66
    )


def test_remote_tier_columns_of_a_tiered_log_dir() -> None:
    """The replica rows of ../shared/tiered's kafka-local log dir carry each tiered partition's remote tier,
    as the store's objects say (LocalTieredStorage keeps the uploaded .log as is: its size is the bytes)."""
    import realworld
    from logdoctor.logdir.remote_metadata import metadata_partition_for

    tiered = realworld.require_tiered()
    inv = build_inventory([str(tiered / "kafka-local/kafka-logs")], Depth.DEFAULT, now_ms=NOW)
    rows = {(r["topic"], r["partition"]): r for r in inv.rows if r["record"] == "replica"}
    store = tiered / "kafka-local/remote/kafka-tiered-storage"
    for partition, local_from in ((0, 1296), (1, 2289)):
        logs = sorted((store / f"payments-{partition}-cGF5bWVudHMtdG9waWMwMQ").glob("*.log"))
        row = rows[("payments", partition)]
        assert row["remote_segments"] == len(logs)
        assert row["remote_bytes"] == sum(p.stat().st_size for p in logs)
        assert row["remote_log_start_offset"] == min(int(p.name[:20]) for p in logs) == 0
        assert row["remote_log_end_offset"] == local_from  # the README's offsets: remote up to the local part
    audit = rows[("audit", 0)]
    assert audit["remote_log_start_offset"] is None and audit["remote_log_end_offset"] is None
    read = metadata_partition_for("YXVkaXQtdG9waWMtaWQwMQ", 0) in (16, 21)
    assert audit["remote_segments"] == (0 if read else None)
    meta = rows[("__remote_log_metadata", 16)]
    assert meta["remote_segments"] is None or meta["remote_segments"] == 0
    # a log dir without remote storage: every remote column null
    plain = build_inventory([str(tiered / "original/kafka-logs")], Depth.DEFAULT, now_ms=NOW)
    for r in plain.rows:
        if r["record"] == "replica":
            assert (r["remote_segments"], r["remote_bytes"], r["remote_log_end_offset"]) == (None, None, None)


def test_json_lines_of_more_rows_than_a_batch_are_the_bytes_encoded_at_once(tmp_path):
    # written _JSON_LINES_BATCH rows at a time: byte for byte the lines of every row encoded together
    from logdoctor.checks import inventory

    n = 2 * inventory._JSON_LINES_BATCH + 3
    names = inventory.column_names()
    rows = [
        dict.fromkeys(names) | {"schema_version": SCHEMA_VERSION, "record": "replica", "partition": i}
        for i in range(n)
    ]
    inv = inventory.Inventory(rows, "broker-1", 1, False, Depth.QUICK, 0.0)
    out = tmp_path / "b1.jsonl"
    write_inventory(inv, str(out), json_lines=True)
    assert out.read_bytes() == "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode()


def test_the_rows_and_their_writing_run_without_automatic_collections(fleet, tmp_path, monkeypatch):
    # logdoctor.checks.gc_pause: no full collection walks the scan's objects while the rows are made
    import gc

    from logdoctor.checks import inventory

    seen = []
    real_json_lines = inventory._write_json_lines

    def recording(rows, fh):
        seen.append(gc.isenabled())
        real_json_lines(rows, fh)

    monkeypatch.setattr(inventory, "_write_json_lines", recording)
    assert gc.isenabled()
    inv = build_inventory([str(fleet / "broker-1" / "kafka-logs-0")], Depth.QUICK, now_ms=NOW)
    write_inventory(inv, str(tmp_path / "b1.jsonl"), json_lines=True)
    assert seen == [False] and gc.isenabled()


@pytest.mark.parametrize("name", ["i.jsonl", "i.parquet"])
def test_another_brokers_inventory_is_not_replaced(tmp_path, name):
    """Issue 32 item 4: `inventory BROKER3 --out i.jsonl`, then broker-2's dirs to the same file: refused
    (73) naming both brokers, broker-3's inventory unchanged; broker-3 again replaces its own."""
    import realworld

    forensics = realworld.require_forensics()
    b2, b3 = (str(forensics / f"broker-{b}" / "kafka-logs") for b in (2, 3))
    out = tmp_path / name
    fmt = ["--json"] if name.endswith(".jsonl") else []
    first = CliRunner().invoke(app, ["inventory", b3, "--out", str(out), "--depth", "quick", *fmt])
    assert first.exit_code == 0, first.output
    kept = out.read_bytes()
    other = CliRunner().invoke(app, ["inventory", b2, "--out", str(out), "--depth", "quick", *fmt])
    assert other.exit_code == 73, other.output
    said = " ".join(other.output.split())
    assert "broker-13 (broker id 13, cluster ShAredForensicsClustr0A)" in said  # meta.properties of broker-3
    assert "broker-12 (broker id 12, cluster ShAredForensicsClustr0A)" in said
    assert out.read_bytes() == kept and os.listdir(tmp_path) == [name]
    again = CliRunner().invoke(app, ["inventory", b3, "--out", str(out), "--depth", "quick", *fmt])
    assert again.exit_code == 0, again.output
    rows = read_inventory_rows(str(out))
    assert next(r for r in rows if r["record"] == "broker")["broker_id"] == 13

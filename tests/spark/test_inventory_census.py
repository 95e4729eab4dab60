"""`census` over inventories (`logdoctor inventory`) gives the tables of `census` over the log dirs."""

from __future__ import annotations

import base64
import math
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import RECORD_KINDS, build_inventory, write_inventory
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.spark import census_inputs
from logdoctor.spark.census import discover_brokers, partition_rows, replica_lag, run_census, scan_broker

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_790_000_000_000
TABLES = ("replicas", "partitions", "log_dirs", "findings")


LIVE_DISK = ("disk_used_bytes", "disk_available_bytes", "disk_used_fraction", "disk_used_percent")


def table(out: Path, name: str) -> list[dict[str, Any]]:
    """Every row of a written census table, in a stable order (floats compared exactly).

    A log dir's used/available bytes from statvfs are a live measurement of a shared disk (other
    processes write to it between two runs): those are left out; the simulated disks of the demo
    fleet (``simulated_disks``) are compared exactly, like every other column."""
    rows = pq.read_table(out / name).to_pylist()
    for r in rows:
        if r.get("disk_source") == "statvfs":
            for k in LIVE_DISK:
                r.pop(k)
    return sorted(rows, key=lambda r: repr(sorted(r.items(), key=lambda kv: kv[0])))


DISKS: dict[str, Any] = {}


def broker_dirs(broker: Path) -> list[str]:
    return sorted(str(p) for p in broker.iterdir() if p.is_dir() and p.name.startswith("kafka-logs"))


def collect(
    brokers: list[list[str]], folder: Path, *, json_lines: bool = False, simulated_disks: Any = None
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, dirs in enumerate(brokers):
        inv = build_inventory(dirs, Depth.DEFAULT, now_ms=NOW, simulated_disks=simulated_disks)
        path = folder / f"{inv.broker}-{i}.{'jsonl' if json_lines else 'parquet'}"
        write_inventory(inv, str(path), json_lines=json_lines)
        out.append(path)
    return out


@pytest.fixture(scope="module")
def demo(spark, small_census_confs, tmp_path_factory):
    root = tmp_path_factory.mktemp("inv-census")
    disks = generate_demo_fleet(root / "fleet", now_ms=NOW).simulated_disks
    DISKS.clear()
    DISKS.update(disks)  # the demo fleet's simulated disks, for every later census of it
    brokers = sorted((root / "fleet").glob("broker-*"))
    from_dirs = run_census(
        spark, [str(root / "fleet")], root / "from-dirs", now_ms=NOW, simulated_disks=disks
    )
    collect([broker_dirs(b) for b in brokers], root / "inventories", simulated_disks=disks)
    from_inv = run_census(spark, [str(root / "inventories")], root / "from-inv", now_ms=NOW)
    return root, brokers, from_dirs, from_inv


def test_inventories_give_every_row_of_every_table(demo):
    root, _brokers, from_dirs, from_inv = demo
    assert from_inv.inventories == 4 and from_dirs.inventories == 0
    for name in TABLES:
        expected = table(root / "from-dirs", name)
        assert expected, name
        assert table(root / "from-inv", name) == expected, name
    codes = {f["code"] for f in from_inv.findings}
    assert {
        "REPLICA_LAG",
        "INDEX_CORRUPT",
        "RETENTION_RISK",
        "LOG_DIR_NEARLY_FULL",
        "REPLICA_MISPLACED",
        "CONTROLLER_QUORUM_TOO_SMALL",  # broker-4, KRaft: its quorum-state names it the one voter
    } <= codes
    assert from_inv.counts() == from_dirs.counts() and from_inv.brokers == from_dirs.brokers == 4


ALL_TABLES = ("replicas", "partitions", "log_dirs", "findings", "consumer_groups", "compaction")


def test_each_inventory_check_names_the_kinds_of_record_it_holds(demo):
    root = demo[0]
    for path in sorted((root / "inventories").glob("*.parquet")):
        _path, error, fmt, _dirs, kinds = census_inputs.check_inventory(str(path))
        assert error is None and fmt == "parquet"
        assert kinds == sorted(set(pq.read_table(path, columns=["record"]).column(0).to_pylist()))
        assert {"broker", "log_dir", "replica"} <= set(kinds)


def test_a_kind_of_record_no_inventory_holds_is_not_read_and_the_tables_are_the_same(
    spark, demo, tmp_path, monkeypatch
):
    """Inventories without commit, txn, producer and share rows: their frames are made empty on the driver
    (no consumer ranges, no transaction-state query); the census writes the same rows as one that reads
    every kind (the check made to claim that every inventory holds every kind). Nor have they the broker
    row's quorum columns, as an inventory written before them: read, with nothing said of the quorum."""
    root = demo[0]
    folder = tmp_path / "no-consumers"
    folder.mkdir()
    dropped = ("commit", "txn", "producer", "share")
    gone = 0
    for path in sorted((root / "inventories").glob("*.parquet")):
        t = pq.read_table(path)
        keep = [r not in dropped for r in t.column("record").to_pylist()]
        gone += keep.count(False)
        t = t.drop_columns(list(census_inputs.QUORUM_COLUMNS))
        pq.write_table(t.filter(keep), folder / path.name)
    assert gone > 0  # the demo fleet's inventories hold such rows
    skipped = run_census(spark, [str(folder)], tmp_path / "skipped", now_ms=NOW)
    codes = {f["code"] for f in skipped.findings}
    assert "INVENTORY_UNREADABLE" not in codes and skipped.inventories == 4 and skipped.brokers == 4
    assert "CONTROLLER_QUORUM_TOO_SMALL" in {f["code"] for f in demo[3].findings} - codes
    check = census_inputs.inventory_check

    def every_kind(path: str) -> Any:
        verdict, rows = check(path)
        return (*verdict[:4], list(RECORD_KINDS)), rows

    monkeypatch.setattr(census_inputs, "inventory_check", every_kind)
    read = run_census(spark, [str(folder)], tmp_path / "read", now_ms=NOW)
    for name in ALL_TABLES:
        assert table(tmp_path / "skipped", name) == table(tmp_path / "read", name), name
        schemas = [pq.read_table(tmp_path / run / name).schema for run in ("skipped", "read")]
        assert schemas[0] == schemas[1], name
    assert skipped.counts() == read.counts() and skipped.findings == read.findings


def test_each_inventory_is_read_once_every_kind_but_the_replicas_from_its_check(
    spark, demo, tmp_path, monkeypatch
):
    """Each inventory is checked once on an executor and its rows other than replicas (findings, log dirs,
    commits, compaction, transaction and share rows) are the ones that check kept: no query reads the file
    again for them. The check is made to drop each file's INDEX_CORRUPT and add a finding no file holds: the
    census's tables follow the check, not the files; only the replicas come from Spark's read of them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    root = demo[0]
    check = census_inputs.inventory_check

    def edited(path: str) -> Any:
        verdict, rows = check(path)
        kept = pc.fill_null(pc.not_equal(rows.column("code"), "INDEX_CORRUPT"), True)
        rows = rows.filter(kept)
        extra = {c: None for c in rows.column_names}
        extra.update(
            record="finding", code="SEGMENT_GAP", severity="error", path=f"{path}#planted",
            message="planted by the check", fix="none", broker=verdict[3][0]["broker"],
        )  # fmt: skip
        return verdict, pa.concat_tables([rows, pa.Table.from_pylist([extra], schema=rows.schema)])

    monkeypatch.setattr(census_inputs, "inventory_check", edited)
    result = run_census(spark, [str(root / "inventories")], tmp_path / "edited", now_ms=NOW)
    planted = [f for f in table(tmp_path / "edited", "findings") if f["path"].endswith("#planted")]
    assert len(planted) == result.inventories == 4
    assert {f["message"] for f in planted} == {"planted by the check"}
    codes = [
        {f["code"] for f in table(out, "findings") if not f["path"].endswith("#planted")}
        for out in (tmp_path / "edited", root / "from-inv")
    ]
    assert "INDEX_CORRUPT" in codes[1] and codes[0] == codes[1] - {"INDEX_CORRUPT"}
    for name in ("replicas", "partitions", "log_dirs", "consumer_groups", "compaction"):  # as before
        assert table(tmp_path / "edited", name) == table(root / "from-inv", name), name


def test_the_spark_sql_join_agrees_with_the_python_rules(demo):
    """replica_lag / partition_rows (plain Python over every row) against the Spark SQL tables."""
    root, _brokers, _from_dirs, _ = demo
    rows = [r for b in discover_brokers([str(root / "fleet")]) for r in scan_broker(b, NOW)["replicas"]]
    python = replica_lag(rows)
    spark_rows = {
        (r["broker"], r["log_dir"], r["topic"], r["partition"]): r
        for r in table(root / "from-dirs", "replicas")
    }
    assert len(spark_rows) == len(python)
    for r in python:
        got = spark_rows[(r["broker"], r["log_dir"], r["topic"], r["partition"])]
        # the consumer log range is an input of the consumer-group rule, not a column of the table
        r = {k: v for k, v in r.items() if not k.startswith("consumer_log_")}
        assert {k: got[k] for k in r} == r
    spark_parts = {(p["topic"], p["partition"]): p for p in table(root / "from-dirs", "partitions")}
    for p in partition_rows(python):
        got = spark_parts[(p["topic"], p["partition"])]
        assert {k: got[k] for k in p} == p


def test_json_lines_and_a_mix_with_log_dirs(spark, demo):
    root, brokers, _from_dirs, _ = demo
    jsonl = collect(
        [broker_dirs(b) for b in brokers[:2]], root / "mix-jsonl", json_lines=True, simulated_disks=DISKS
    )
    out = root / "from-mix"
    result = run_census(
        spark, [*map(str, jsonl), *map(str, brokers[2:])], out, now_ms=NOW, simulated_disks=DISKS
    )
    assert result.inventories == 2
    for name in TABLES:
        assert table(out, name) == table(root / "from-dirs", name), name


def test_a_few_inventories_are_a_small_census(demo, tmp_path, monkeypatch):
    """census.small_inputs: an inventory file is a broker, its rows count as a log dir's folders (Parquet
    and JSON Lines): the demo fleet's inventories are a small census (the driver's path, as its log dirs);
    a row or an inventory more than SMALL_FLEET_FOLDERS or SMALL_FLEET_BROKERS allow is a big one."""
    from logdoctor.spark import census

    root, brokers, _from_dirs, _ = demo
    inputs = census_inputs.classify([str(root / "inventories")])
    assert census.small_inputs(inputs)
    rows = sum(len(pq.read_table(p).to_pylist()) for p in inputs.inventories)
    monkeypatch.setattr(census, "SMALL_FLEET_FOLDERS", rows)
    assert census.small_inputs(inputs)
    monkeypatch.setattr(census, "SMALL_FLEET_FOLDERS", rows - 1)
    assert not census.small_inputs(inputs)
    (jsonl,) = collect([broker_dirs(brokers[0])], tmp_path, json_lines=True, simulated_disks=DISKS)
    one = census_inputs.classify([str(jsonl)])
    lines = len(jsonl.read_text().splitlines())
    monkeypatch.setattr(census, "SMALL_FLEET_FOLDERS", lines)
    assert census.small_inputs(one)
    monkeypatch.setattr(census, "SMALL_FLEET_FOLDERS", lines - 1)
    assert not census.small_inputs(one)
    monkeypatch.setattr(census, "SMALL_FLEET_FOLDERS", rows)
    monkeypatch.setattr(census, "SMALL_FLEET_BROKERS", len(inputs.inventories) - 1)
    assert not census.small_inputs(inputs)


def test_a_corrupt_inventory_is_reported_and_skipped(spark, demo):
    root, brokers, _from_dirs, _ = demo
    folder = root / "with-corrupt"
    good = collect([broker_dirs(b) for b in brokers[1:]], folder)
    truncated = folder / "broker-1-truncated.parquet"
    data = collect([broker_dirs(brokers[0])], root / "whole")[0].read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    garbage = folder / "garbage.jsonl"
    garbage.write_text('{"schema_version": 1, "record": "broker"\n')
    out = root / "from-corrupt"
    result = run_census(spark, [str(folder)], out, now_ms=NOW)
    bad = {f["path"]: f for f in result.findings if f["code"] == "INVENTORY_UNREADABLE"}
    assert set(bad) == {str(truncated), str(garbage)}
    assert all(f["severity"] == "error" and f["path"] in f["message"] for f in bad.values())
    assert result.inventories == len(good) + 2 and result.brokers == 3
    others = {r["broker"] for r in table(out, "replicas")}
    assert others == {"broker-2", "broker-3", "broker-4"}


def test_a_json_lines_value_of_the_wrong_type_makes_its_inventory_unreadable(spark, demo):
    """A value Spark's JSON reader would turn into a null without a word (a log end offset that is text,
    a disk size that is not a number) makes its file an INVENTORY_UNREADABLE finding; the rest goes on."""
    import json

    root, brokers, _from_dirs, _ = demo
    folder = root / "with-wrong-types"
    files = collect([broker_dirs(b) for b in brokers[:3]], folder, json_lines=True)
    for path, (record, column, value) in zip(
        files[:2],
        (("replica", "log_end_offset", "12x"), ("log_dir", "disk_total_bytes", "lots")),
        strict=True,
    ):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        bad = next(r for r in rows if r["record"] == record)
        bad[column] = value
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_census(spark, [str(folder)], root / "from-wrong-types", now_ms=NOW)
    bad_paths = {f["path"] for f in result.findings if f["code"] == "INVENTORY_UNREADABLE"}
    assert bad_paths == {str(files[0]), str(files[1])}
    kept = {r["broker"] for r in table(root / "from-wrong-types", "log_dirs")}
    assert len(kept) == 1 and kept == {r["broker"] for r in table(root / "from-wrong-types", "replicas")}


def test_a_recreated_topic_is_its_own_topic(spark, demo, tmp_path):
    root, _brokers, _from_dirs, _ = demo
    fleet = tmp_path / "fleet"
    shutil.copytree(root / "fleet", fleet)
    # broker 3's copy of orders-0 carries another topic id: the topic was deleted and created again
    folder = next((fleet / "broker-3").glob("kafka-logs-*/orders-0"))
    new_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    (folder / "partition.metadata").write_text(f"version: 0\ntopic_id: {new_id}\n")
    inv = collect([broker_dirs(b) for b in sorted(fleet.glob("broker-*"))], tmp_path / "inv")
    result = run_census(spark, [str(p) for p in inv], tmp_path / "out", now_ms=NOW)
    found = [f for f in result.findings if f["code"] == "TOPIC_RECREATED"]
    assert len(found) == 2  # one per topic id
    assert all("orders" in f["message"] and new_id in f["message"] for f in found)
    assert {f["fix_command"] for f in found} == {
        ""
    }  # no command fixes it (a scan fixes nothing): the fix does
    rows = [r for r in table(tmp_path / "out", "replicas") if (r["topic"], r["partition"]) == ("orders", 0)]
    alone = [r for r in rows if r["topic_id"] == new_id]
    assert len(alone) == 1 and alone[0]["replica_count"] == 1 and alone[0]["broker"] == "broker-3"
    assert all(r["replica_count"] == len(rows) - 1 for r in rows if r["topic_id"] != new_id)
    parts = [
        p for p in table(tmp_path / "out", "partitions") if (p["topic"], p["partition"]) == ("orders", 0)
    ]
    assert sorted(p["replicas"] for p in parts) == sorted([1, len(rows) - 1])


def test_the_html_report_works_from_inventories(demo, tmp_path):
    from logdoctor.report import write_census_report

    _root, _brokers, _from_dirs, from_inv = demo
    page = write_census_report(from_inv, tmp_path / "report.html", now_ms=NOW)
    text = Path(page).read_text()
    assert "REPLICA_LAG" in text and "broker-3" in text


@pytest.mark.parametrize("prefix", ["zk-3.0-tuyen-nnt-b", "kraft-3.5-greenlemont-n"])
def test_real_multi_broker_sets(spark, tmp_path, prefix):
    base = realworld.require()
    dirs = sorted(str(p) for p in base.glob(prefix + "*") if p.is_dir())
    assert len(dirs) == 3
    from_dirs = run_census(spark, dirs, tmp_path / "from-dirs", now_ms=NOW)
    inv = collect([[d] for d in dirs], tmp_path / "inv")
    from_inv = run_census(spark, [str(tmp_path / "inv")], tmp_path / "from-inv", now_ms=NOW)
    expected = table(tmp_path / "from-dirs", "replicas")
    assert len(expected) > 3 and len({r["broker"] for r in expected}) == 3
    assert table(tmp_path / "from-inv", "replicas") == expected
    assert table(tmp_path / "from-inv", "partitions") == table(tmp_path / "from-dirs", "partitions")
    assert len(inv) == 3 and from_inv.brokers == from_dirs.brokers == 3
    assert not math.isnan(sum(r["bytes"] for r in expected))


def test_inventories_at_uris(spark, demo, tmp_path):
    """file:// URIs (a folder and a glob) through Spark's reader, and the pyarrow reader that remote
    URIs (s3://...) take, both give the log dirs' replica table."""
    from logdoctor.spark.census_inputs import classify, read_with_pyarrow

    root, _brokers, _from_dirs, _ = demo
    folder = (root / "inventories").as_uri()
    assert classify([folder]).inventories == classify([folder + "/*.parquet"]).inventories
    assert len(classify([folder]).inventories) == 4
    result = run_census(spark, [folder + "/*.parquet"], tmp_path / "out", now_ms=NOW)
    assert result.inventories == 4
    assert table(tmp_path / "out", "replicas") == table(root / "from-dirs", "replicas")
    df = read_with_pyarrow(spark, classify([folder]).inventories)
    got = sorted(
        tuple(r)
        for r in df.where(df.record == "replica").select("broker", "path", "log_end_offset").collect()
    )
    files = sorted((root / "inventories").glob("*.parquet"))
    expected = sorted(
        (r["broker"], r["path"], r["log_end_offset"])
        for f in files
        for r in pq.read_table(f).to_pylist()
        if r["record"] == "replica"
    )
    assert got == expected and len(got) >= 40

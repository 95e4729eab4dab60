"""One finding per root cause, its consequences listed under it (issue 24): the findings a LOG_CORRUPT
causes, a KRaft replica that looks stray only because its partition.metadata is empty, the same bad index
entry seen twice by scan --deep, META_PROPERTIES_MISMATCH once per field of one file. JSON keeps every
finding, each consequence with ``caused_by``; text lists it under its cause; repair handles it with the
cause's action. Damage is planted in copies of real log dirs; records are read back with kafka-python."""

from __future__ import annotations

import json
import shlex
import struct
import sys
from pathlib import Path

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "repair"))

import damage

from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet, generate_log_dir

runner = CliRunner()


def _scan(*args: str) -> dict:
    r = runner.invoke(app, ["scan", *args, "--json", "--jobs", "1"])
    assert r.exit_code in (0, 1, 2), r.output
    return json.loads(r.stdout)


def _text(*args: str) -> str:
    r = runner.invoke(app, [*args, "--jobs", "1"], env={"COLUMNS": "200"})
    return r.stdout


def _ref(f: dict) -> dict:
    return {"code": f["code"], "path": f["path"], "position": f["position"]}


def _top_level(text: str) -> list[str]:
    """The finding heads printed at the left margin ("ERROR   CODE path"), not under a cause."""
    return [line.split()[1] for line in text.splitlines() if line.startswith(("ERROR ", "WARNING ", "INFO "))]


def test_a_log_corrupt_lists_what_its_truncation_causes_under_it(tmp_path: Path, realworld_dir: Path) -> None:
    root = damage.copy_log_dir(realworld_dir / "zk-3.7-nikhildighe-b0", tmp_path / "logs")
    p = damage.biggest_partition(root)
    assert p is not None
    (root / ".kafka_cleanshutdown").unlink(missing_ok=True)  # the next start recovers: it truncates
    log = sorted(p.glob("*.log"))[-1]
    pos, size, _ = damage.batch_positions(log)[0]
    cut = int(log.name.split(".")[0])  # the damaged batch is the segment's first: the new log end
    data = bytearray(log.read_bytes())
    data[pos + size - 1] ^= 0xFF
    log.write_bytes(bytes(data))
    doc = _scan(str(root))
    corrupt = [f for f in doc["findings"] if f["code"] == "LOG_CORRUPT"]
    assert len(corrupt) == 1
    caused = [f for f in doc["findings"] if f.get("caused_by")]
    # the snapshot and both checkpoints hold offsets the truncation removes (read from the files themselves)
    assert sorted(f["code"] for f in caused) == [
        "CHECKPOINT_MISMATCH",
        "CHECKPOINT_MISMATCH",
        "PRODUCER_SNAPSHOT_AHEAD",
    ]
    assert all(f["caused_by"] == _ref(corrupt[0]) for f in caused)
    assert {Path(f["path"]).name for f in caused} == {
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        *(s.name for s in p.glob("*.snapshot") if int(s.name.split(".")[0]) > cut),
    }
    # every finding is still in the JSON; the text shows one problem with its consequences under it
    text = _text("scan", str(root))
    heads = _top_level(text)
    assert heads.count("LOG_CORRUPT") == 1
    assert "CHECKPOINT_MISMATCH" not in heads and "PRODUCER_SNAPSHOT_AHEAD" not in heads
    assert "consequences of it (3), handled with it:" in text
    # one root cause: one problem in the totals, its consequences counted apart (issue 32)
    roots = [f for f in doc["findings"] if not f.get("caused_by")]
    summary = doc["summary"]
    assert summary["errors"] == sum(f["severity"] == "error" for f in roots)
    assert summary["warnings"] == sum(f["severity"] == "warning" for f in roots)
    assert summary["consequences"] == 3
    assert f"{summary['errors']} error(s), {summary['warnings']} warning(s)" in text
    # the printed fix works as printed: after it, none of the four is found
    fix = corrupt[0]["fix"]
    command = fix.split("`")[1]
    argv = shlex.split(command)[1:]
    r = runner.invoke(app, [*argv, "--apply", "--backup-dir", str(tmp_path / "b"), "--jobs", "1"])
    assert r.exit_code in (0, 1), r.output
    left = {f["code"] for f in _scan(str(root))["findings"]}
    assert not left & {"LOG_CORRUPT", "CHECKPOINT_MISMATCH", "PRODUCER_SNAPSHOT_AHEAD"}
    assert max(damage.read_records(root)[p.name]) < cut


def test_an_empty_kraft_partition_metadata_is_one_problem_repaired_with_its_stray_warning(
    tmp_path: Path, realworld_dir: Path
) -> None:
    root = damage.copy_log_dir(realworld_dir / "kraft-4.2-nomanazeem", tmp_path / "logs")
    target = root / "demo-topic-0" / "partition.metadata"
    written_by_the_broker = target.read_bytes()
    for sibling in root.glob("demo-topic-*/partition.metadata"):
        if sibling != target:
            sibling.unlink()  # the topic id is then only in the broker's own metadata log
    target.write_bytes(b"")
    doc = _scan(str(root))
    by = {(f["code"], f["path"]): f for f in doc["findings"]}
    invalid = [by[("PARTITION_METADATA_INVALID", str(target))]]
    assert len(invalid) == 1
    stray = [by[("REPLICA_NOT_ASSIGNED", str(target.parent))]]
    assert stray[0]["caused_by"] == _ref(invalid[0])
    assert "cannot be read (PARTITION_METADATA_INVALID" in stray[0]["message"]
    assert f"{target} is missing" not in stray[0]["message"]  # it was reported as "missing"
    # repair: the stray warning goes with the rewrite, never "Not repaired"
    dry = runner.invoke(app, ["repair", str(root), "--json", "--jobs", "1"])
    plan = json.loads(dry.stdout)["plan"]
    assert not [u for u in plan["unrepaired"] if u["path"] == str(target.parent)], plan["unrepaired"]
    action = next(a for a in plan["actions"] if a["target"] == str(target))
    assert "REPLICA_NOT_ASSIGNED" in action["codes"] and str(target.parent) in action["finding_paths"]
    r = runner.invoke(
        app, ["repair", str(root), "--apply", "--backup-dir", str(tmp_path / "b"), "--jobs", "1"]
    )
    assert r.exit_code in (0, 1), r.output
    # the broker's own bytes, with the id from __cluster_metadata-0
    assert target.read_bytes() == written_by_the_broker
    after = _scan(str(root))["findings"]
    assert not [f for f in after if f["path"] in (str(target), str(target.parent))]


def test_the_same_bad_index_entry_found_twice_by_scan_deep_is_one_problem(tmp_path: Path) -> None:
    topics = [
        TopicSpec(
            "orders", partitions=1, records_per_partition=2000, records_per_batch=10, segment_bytes=64000
        )
    ]
    log_dir, _ = generate_log_dir(tmp_path / "gen", topics)
    index = sorted((log_dir / "orders-0").glob("*.index"))[0]
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, 12, 5)  # entry 1 points at position 5: no batch starts there
    index.write_bytes(bytes(data))
    found = [f for f in _scan(str(log_dir), "--deep")["findings"] if f["code"] == "INDEX_CORRUPT"]
    assert len(found) == 2 and {f["position"] for f in found} == {8}  # both about entry 1, slot 8
    roots = [f for f in found if not f.get("caused_by")]
    assert len(roots) == 1 and [f["caused_by"] for f in found if f.get("caused_by")] == [_ref(roots[0])]
    assert _top_level(_text("scan", str(log_dir), "--deep")).count("INDEX_CORRUPT") == 1


def test_meta_properties_mismatch_is_one_problem_per_file(tmp_path: Path) -> None:
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=[TopicSpec("orders", partitions=2, records_per_partition=20)],
            brokers=(BrokerSpec(1, log_dirs=2),),
        ),
    )
    a, b = fleet.log_dirs[1]
    # another cluster's KRaft meta.properties (same node id): two fields differ in one file
    (b / "meta.properties").write_text(
        "version=1\nnode.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\ndirectory.id=BBBBBBBBBBBBBBBBBBBBBB\n"
    )
    found = [f for f in _scan(str(a), str(b))["findings"] if f["code"] == "META_PROPERTIES_MISMATCH"]
    assert len(found) == 2 and {f["path"] for f in found} == {str(b / "meta.properties")}
    assert sum(1 for f in found if not f.get("caused_by")) == 1
    assert _top_level(_text("scan", str(a), str(b))).count("META_PROPERTIES_MISMATCH") == 1

"""repair of the small per-partition and root files the broker cannot read: partition.metadata and
meta.properties, on copies of real log dirs.

What Kafka does (see the planner's docstring for the source files): an unreadable partition.metadata
fails the log's load; an absent one is written again by the broker once it learns the topic id
(ZooKeeper mode), while KRaft treats a log without a topic id as stray. An empty meta.properties is
rewritten by a ZooKeeper-mode broker at startup. Expected bytes come from the broker's own files.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401
from logdoctor.cli.main import app
from logdoctor.repair import apply_plan, plan_repair


def _cli(*args: str):
    return CliRunner().invoke(app, [*args, "--jobs", "1"])


def _codes(root: Path) -> list[str]:
    return [f.code for f in scan([root], ScanOptions(depth=Depth.DEFAULT), jobs=1).findings]


@pytest.mark.slow
def test_znsio_empty_partition_metadata_removed_meta_properties_left_to_the_broker(tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / "zk-corrupt-znsio", tmp_path / "logs")
    empties = sorted(p for p in root.glob("*/partition.metadata") if p.stat().st_size == 0)
    assert len(empties) == 51
    assert _codes(root).count("PARTITION_METADATA_INVALID") == 51
    # the dry run shows a plan and keeps the files
    dry = _cli("repair", str(root))
    assert dry.exit_code == 0, dry.output
    assert "fix-partition-metadata" in dry.output
    assert all(p.exists() for p in empties)
    backup = tmp_path / "backup"
    r = _cli("repair", str(root), "--apply", "--backup-dir", str(backup))
    # left: warnings only (meta.properties, unclean shutdown), each with why -> exit 1, never 0
    assert r.exit_code == 1, r.output
    assert not any(p.exists() for p in empties)
    kept = [p for p in backup.rglob("partition.metadata")]
    assert len(kept) == 51 and all(p.stat().st_size == 0 for p in kept)
    after = _codes(root)
    assert "PARTITION_METADATA_INVALID" not in after
    assert "META_PROPERTIES_INVALID" in after
    assert "still found: WARNING META_PROPERTIES_INVALID" in r.output
    # what the broker does with an empty meta.properties depends on its version (issue 24: not "rewrites it")
    assert "Kafka 0.9 to 2.7 fail to start" in " ".join(r.output.split())
    # and a second run does not claim a clean bill: nothing to repair, but warnings remain -> 1
    again = _cli("repair", str(root))
    assert "Nothing to repair" in again.output and again.exit_code == 1, again.output


@pytest.mark.slow
def test_partition_metadata_rewritten_from_a_sibling_partition_is_the_brokers_bytes(tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / "zk-3.7-nikhildighe-b0", tmp_path / "logs")
    target = root / "__consumer_offsets-7" / "partition.metadata"
    original = target.read_bytes()  # written by the broker
    target.write_bytes(b"")
    plan, _ = plan_repair(
        [root], backup_dir=str(tmp_path / "backup"), jobs=1, only={"PARTITION_METADATA_INVALID"}
    )
    assert [a.kind for a in plan.actions] == ["fix-partition-metadata"]
    assert apply_plan(plan).status == "applied"
    assert target.read_bytes() == original
    assert "PARTITION_METADATA_INVALID" not in _codes(root)


@pytest.mark.slow
def test_kraft_partition_metadata_without_a_known_id_needs_a_person(tmp_path, realworld_dir):
    root = damage.copy_log_dir(realworld_dir / "kraft-3.5-greenlemont-single", tmp_path / "logs")
    # a topic whose only partition here loses its topic id: no sibling knows it, and the broker's own
    # metadata log is not among the inputs (with it, repair takes the id from it: tests/checks/
    # test_consequences.py), so only the cluster, through a person, can give the id back
    shutil.rmtree(root / "__cluster_metadata-0")
    singles = {}
    for p in sorted(x for x in root.iterdir() if x.is_dir() and (x / "partition.metadata").exists()):
        singles.setdefault(p.name.rpartition("-")[0], []).append(p)
    topic, parts = next(
        (t, ps) for t, ps in sorted(singles.items()) if len(ps) == 1 and not t.startswith("__")
    )
    target = parts[0] / "partition.metadata"
    target.write_bytes(b"")
    r = _cli("repair", str(root), "--apply", "--backup-dir", str(tmp_path / "backup"))
    assert r.exit_code == 2, r.output
    assert target.exists() and target.stat().st_size == 0  # never removed in KRaft mode
    assert "still found: ERROR PARTITION_METADATA_INVALID" in r.output
    assert "stray" in r.output and topic in r.output

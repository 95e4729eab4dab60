"""Discovery never takes a folder logdoctor wrote for a log dir (issue 32, item 7): after a repair of a
KRaft broker with two log dirs, its backup dir's ``files/<n>-<log dir>`` holds partition folders as a log
dir does; the census of the broker folders found a broker named "files" there. Census (its discovery),
scan and inventory (recognize) see the broker's two log dirs only, with the default backup dir, a
--backup-dir of any name, and an export's output folder beside them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.logdir.discovery import find_log_dirs
from logdoctor.logdir.recognize import PathKind, recognize
from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.spark.census_rules import group_log_dirs

NOW = 1_790_000_000_000


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("own") / "fleet"
    generate_demo_fleet(root, now_ms=NOW)
    return root


def _damage_and_repair(broker: Path, *extra: str) -> Path:
    """Overwrite one index in each log dir (repair keeps the originals in files/<n>-<dir>) and repair."""
    dirs = sorted(p for p in broker.iterdir() if p.name.startswith("kafka-logs-"))
    assert len(dirs) == 2 and "node.id" in (dirs[0] / "meta.properties").read_text()  # KRaft, two dirs
    for d in dirs:
        index = next(d.glob("*-*/00000000000000000000.index"))
        index.write_bytes(b"\xff" * 24)
    result = CliRunner().invoke(app, ["repair", *map(str, dirs), "--apply", *extra], terminal_width=250)
    assert result.exit_code in (0, 1), result.output
    beside = [*broker.iterdir(), *broker.glob(".logdoctor-backups/*")]  # the default's hidden folder
    (backup,) = [p for p in beside if p.name not in ("kafka-logs-0", "kafka-logs-1", ".logdoctor-backups")]
    kept = list((backup / "files").iterdir())
    assert kept and any(any(k.glob("*-*/*.index")) for k in kept)  # partition folders, as a log dir
    return backup


@pytest.mark.parametrize("backup_dir", ["default", "named"])
def test_census_scan_and_inventory_never_take_a_backup_for_a_log_dir(fleet, tmp_path, backup_dir):
    root = tmp_path / "fleet"
    shutil.copytree(fleet / "broker-4", root / "broker-4")
    shutil.copytree(fleet / "broker-3", root / "broker-3")
    broker = root / "broker-4"
    extra = ["--backup-dir", str(broker / "before-upgrade")] if backup_dir == "named" else []
    backup = _damage_and_repair(broker, *extra)
    # an export's output folder beside them too
    (broker / "wallet-0.offsets-800-1049" / "topic=orders").mkdir(parents=True)
    (broker / "wallet-0.offsets-800-1049" / "_SUCCESS").write_bytes(b"")

    real = [str(broker / "kafka-logs-0"), str(broker / "kafka-logs-1")]
    assert find_log_dirs(str(broker)) == real
    assert list(recognize(broker).log_dirs) == real
    groups = group_log_dirs([str(root / "broker-4"), str(root / "broker-3")])
    assert sorted(g.broker for g in groups) == ["broker-3", "broker-4"]
    found = sorted(d for g in groups for d in g.log_dirs)
    assert found == sorted([*real, str(root / "broker-3" / "kafka-logs-0")])

    inner = next((backup / "files").iterdir())
    seen = recognize(inner)
    assert seen.kind is PathKind.OTHER_DIR and "logdoctor backup dir" in seen.evidence
    for argv in (["scan", str(inner)], ["inventory", str(inner), "--out", str(tmp_path / "i.jsonl")]):
        result = CliRunner().invoke(app, argv, terminal_width=250)
        assert result.exit_code == 64, result.output
        assert "logdoctor backup dir" in " ".join(result.output.split())

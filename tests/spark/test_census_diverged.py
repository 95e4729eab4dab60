"""REPLICA_DIVERGED in the census of ../shared/forensics' three brokers, from their log dirs and from their
inventories: the README's table (broker-1 and broker-2 truncated to 800 by broker-3, offsets 800-1049 and
800-919 lost), nothing for stable-0 or for the leader; the fix's export works as printed (on a copy)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import realworld
from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import build_inventory, write_inventory
from logdoctor.spark.census import run_census

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("small_census_confs")]

NOW = 1_790_000_000_000
README = {"broker-1": (800, 1049), "broker-2": (800, 919)}


def _diverged(result) -> dict[str, tuple[int, int, str]]:
    out = {}
    for f in pq.read_table(result.tables["findings"]).to_pylist():
        if f["code"] != "REPLICA_DIVERGED":
            continue
        # the scan's words where the folder is readable ("loses 120 records, offsets 800 to 919"), the
        # offsets alone where it is not (an inventory of another host)
        m = re.search(
            r"truncates the log to offset (\d+) and loses (?:\d+ records, )?offsets (\d+) to (\d+)",
            f["message"],
        )
        assert m is not None, f["message"]
        assert int(m.group(1)) == int(m.group(2))
        broker = Path(f["path"]).parent.parent.name
        out[broker] = (int(m.group(2)), int(m.group(3)), f)
    return out


def test_census_reports_the_diverged_replicas_from_log_dirs_and_inventories(spark, tmp_path: Path) -> None:
    root = realworld.require_forensics()
    copy = tmp_path / "forensics"
    for n in (1, 2, 3):
        realworld.writable_copy(root / f"broker-{n}", copy / f"broker-{n}")
    dirs = [copy / f"broker-{n}" / "kafka-logs" for n in (1, 2, 3)]
    from_dirs = _diverged(run_census(spark, [str(d) for d in dirs], tmp_path / "from-dirs", now_ms=NOW))
    assert {b: v[:2] for b, v in from_dirs.items()} == README
    assert all("wallet-0" in v[2]["path"] for v in from_dirs.values())
    inv = tmp_path / "inventories"
    inv.mkdir()
    for d in dirs:
        one = build_inventory([str(d)], Depth.DEFAULT, now_ms=NOW)
        write_inventory(one, str(inv / f"{d.parent.name}.parquet"))
    from_inv = _diverged(run_census(spark, [str(inv)], tmp_path / "from-inv", now_ms=NOW))
    assert {b: v[:2] for b, v in from_inv.items()} == README
    # broker-2's fix command, run as printed: exactly offsets 800-919
    line = from_dirs["broker-2"][2]["fix_command"]
    printed = [c for c in from_dirs["broker-2"][2]["fix"].split("`") if c.startswith("logdoctor export")]
    assert printed == [line]
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *shlex.split(line)[1:]]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = tmp_path / shlex.split(line)[shlex.split(line).index("--out") + 1]
    assert sorted(pq.read_table(out).column("offset").to_pylist()) == list(range(800, 920))

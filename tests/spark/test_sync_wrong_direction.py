"""sync-replica refuses to delete records the leader lacks (issue 32, item 2), on ../shared/forensics'
diverged wallet-0: broker-1 synced from broker-3 would lose [800, 1049] (README "A", what Kafka's
fetcher computes). The refusal prints the export that saves them; it is run here as printed and saves
exactly those records (kafka-python reads them from broker-1's segments); --allow-record-loss then
syncs, and a follower that only lags (broker-2 from broker-1 loses nothing it does not fetch back) is
planned without a word."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import oracle
import pyarrow.parquet as pq
import pytest

import realworld

pytestmark = pytest.mark.spark

CLI = [sys.executable, "-c", "from logdoctor.cli.main import main; main()"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"},
        check=False,
    )


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_sync_from_a_diverged_leader_is_refused_and_the_printed_export_saves_what_it_would_delete(tmp_path):
    forensics = realworld.require_forensics()
    for b in (1, 2, 3):
        realworld.writable_copy(forensics / f"broker-{b}", tmp_path / f"broker-{b}")
    leader, follower = tmp_path / "broker-3" / "kafka-logs", tmp_path / "broker-1" / "kafka-logs"
    before = _tree(tmp_path)

    for apply in ([], ["--apply"]):
        proc = _run("sync-replica", "wallet-0", "--leader", str(leader), "--follower", str(follower), *apply)
        assert proc.returncode == 78, proc.stdout + proc.stderr
        text = proc.stdout + proc.stderr
        assert "250 record(s) at offsets [800, 1049]" in text
        assert _tree(tmp_path) == before  # nothing written

    command = next(line.strip() for line in text.splitlines() if line.strip().startswith("logdoctor export "))
    argv = shlex.split(command)
    out = Path(argv[argv.index("--out") + 1])
    assert not out.is_relative_to(follower)  # never inside a log dir
    proc = _run(*argv[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = pq.read_table(out)
    micros = table.column("timestamp").cast("int64").to_pylist()
    saved = sorted(
        zip(table.column("offset").to_pylist(), [us // 1000 for us in micros],
            table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True)
    )  # fmt: skip
    expected = sorted(
        (o, ts, k, v)
        for log in sorted((follower / "wallet-0").glob("*.log"))
        for _t, _p, o, ts, k, v in oracle.records_of(log)
        if o >= 800
    )
    assert len(expected) == 250 and [r[0] for r in expected] == list(range(800, 1050))
    assert saved == expected

    # the right direction: broker-2 lags broker-1 on the same history (epoch 1 up to 920): planned
    proc = _run(
        "sync-replica", "wallet-0", "--leader", str(tmp_path / "broker-1" / "kafka-logs"),
        "--follower", str(tmp_path / "broker-2" / "kafka-logs"), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr

    proc = _run(
        "sync-replica", "wallet-0", "--leader", str(leader), "--follower", str(follower),
        "--allow-record-loss", "--apply",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _tree(follower / "wallet-0") == _tree(leader / "wallet-0")


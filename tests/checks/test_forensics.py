"""Who loses what on ../shared/forensics (written by Kafka's own storage classes; its README gives what
Kafka computes): REPLICA_DIVERGED for the replicas an unclean leader election left behind, with the fix
run exactly as printed, and TRANSACTION_HANGING for the transaction that never ended (the truncation rule
itself: tests/logdir/test_divergence.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

import realworld
from logdoctor.checks.context import ConfigInputs, ScanOptions
from logdoctor.checks.scanner import scan


def _scan_forensics(root: Path, **kw):
    dirs = [root / f"broker-{b}" / "kafka-logs" for b in (1, 2, 3)]
    return scan(dirs, ScanOptions(**kw), jobs=1)


def _kp_records(folder: Path) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record of a partition folder, as kafka-python reads them."""
    out = []
    for log in sorted(folder.glob("*.log")):
        recs = MemoryRecords(log.read_bytes())
        while recs.has_next():
            batch = recs.next_batch()
            if batch is None:
                break
            out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
    return out


def test_scan_reports_the_diverged_replicas_as_the_readme_says() -> None:
    root = realworld.require_forensics()
    rep = _scan_forensics(root)
    diverged = {f.path: f for f in rep.findings if f.code == "REPLICA_DIVERGED"}
    b = {n: str(root / f"broker-{n}" / "kafka-logs") for n in (1, 2, 3)}
    # the README's table: broker-1 and broker-2 truncate to 800 and lose [800, 1049] and [800, 919]
    assert set(diverged) == {f"{b[1]}/wallet-0", f"{b[2]}/wallet-0"}
    for n, last in ((1, 1049), (2, 919)):
        f = diverged[f"{b[n]}/wallet-0"]
        d = f.details
        assert (d["topic"], d["partition"], d["leader"], d["truncate_to"]) == ("wallet", 0, b[3], 800)
        assert d["records_lost"] == last - 800 + 1
        assert d["lost_offsets"] == [800, last]
        assert d["lost_timestamps"] == [1710000000800, 1710000000000 + last]
        assert d["lost_leader_epochs"] == [1]
        # the records lost, as kafka-python reads this replica's log
        lost = [r for r in _kp_records(Path(b[n]) / "wallet-0") if r[0] >= 800]
        assert len(lost) == d["records_lost"]
        assert [min(r[1] for r in lost), max(r[1] for r in lost)] == d["lost_timestamps"]
    # stable-0 is the same on all three: nothing; the leader itself: nothing
    assert not any("stable-0" in f.path or f.path.startswith(b[3]) for f in diverged.values())


def test_scan_reports_the_hanging_transaction_as_the_readme_says() -> None:
    root = realworld.require_forensics()
    rep = _scan_forensics(root)
    hanging = [f for f in rep.findings if f.code == "TRANSACTION_HANGING"]
    assert len(hanging) == 1
    d = hanging[0].details
    assert hanging[0].path.startswith(str(root / "broker-1" / "kafka-logs" / "billing-0"))
    assert (d["producer_id"], d["producer_epoch"], d["first_offset"], d["last_stable_offset"]) == (
        7002,
        5,
        341,
        341,
    )
    assert (d["records_above"], d["control_records_above"], d["offsets_above"]) == (540, 1, 541)
    command = (
        "kafka-transactions.sh --bootstrap-server HOST:PORT abort --topic billing --partition 0 "
        "--start-offset 341"
    )
    assert d["command_for_running_cluster"] == command and command in hanging[0].fix
    assert "running cluster" in hanging[0].fix
    # kafka-python's count of what lies above the LSO: 540 data records and one control record
    above = [r for r in _kp_records(root / "broker-1" / "kafka-logs" / "billing-0") if r[0] >= 341]
    assert len(above) == 541


def test_a_longer_transaction_timeout_from_server_properties_is_not_late(tmp_path: Path) -> None:
    root = realworld.require_forensics()
    # the transaction was idle 3 hours: with transaction.max.timeout.ms at 4 hours it is not late
    inputs = ConfigInputs(server_properties={"transaction.max.timeout.ms": str(4 * 3600 * 1000)})
    rep = _scan_forensics(root, config_inputs=inputs)
    assert not [f for f in rep.findings if f.code == "TRANSACTION_HANGING"]
    # at 2 hours it is, and the finding names the timeout and where it came from
    inputs = ConfigInputs(server_properties={"transaction.max.timeout.ms": str(2 * 3600 * 1000)},
                          server_properties_path="/etc/kafka/server.properties")  # fmt: skip
    rep = _scan_forensics(root, config_inputs=inputs)
    (f,) = [f for f in rep.findings if f.code == "TRANSACTION_HANGING"]
    assert f.details["transaction_max_timeout_ms"] == 7200000
    assert "/etc/kafka/server.properties" in f.details["timeout_source"]


@pytest.mark.spark  # the printed fix is a `logdoctor export`: a local Spark session in the child
def test_the_replica_diverged_fix_saves_exactly_the_lost_records(tmp_path: Path) -> None:
    """broker-1's fix, run exactly as printed on a copy, saves offsets 800-1049 and nothing else, the
    records kafka-python reads there."""
    import pyarrow.parquet as pq

    root = realworld.require_forensics()
    copy = tmp_path / "forensics"
    for n in (1, 2, 3):
        realworld.writable_copy(root / f"broker-{n}", copy / f"broker-{n}")
    rep = _scan_forensics(copy)
    (f,) = [f for f in rep.findings if f.code == "REPLICA_DIVERGED" and "/broker-1/" in f.path]
    (line,) = [c for c in f.fix.split("`") if c.startswith("logdoctor export ")]
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *shlex.split(line)[1:]]
    here = tmp_path / "on-call"  # where the engineer runs it: the export writes under it (issue 77 item 3)
    here.mkdir()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, cwd=here)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    printed = Path(shlex.split(line)[shlex.split(line).index("--out") + 1])
    assert not printed.is_absolute() and printed.parts[0] == "lost-records", printed
    out = here / printed
    assert out.is_dir() and not any(p.name.endswith(".lost-records") for p in (copy / "broker-1").iterdir())
    table = pq.read_table(out).to_pydict()
    got = sorted(zip(table["offset"], table["timestamp"], table["key"], table["value"], strict=True))
    expected = [r for r in _kp_records(copy / "broker-1" / "kafka-logs" / "wallet-0") if r[0] >= 800]
    assert [g[0] for g in got] == list(range(800, 1050))
    assert [(g[0], g[2], g[3]) for g in got] == [(r[0], r[2], r[3]) for r in expected]

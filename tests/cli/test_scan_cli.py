"""`logdoctor scan` and `logdoctor retention` from the command line: output and exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.realworld
def test_exit_codes_follow_the_worst_finding(realworld_dir: Path, tmp_path: Path) -> None:
    assert invoke("scan", "--jobs", "1", str(realworld_dir / "kraft-3.5-greenlemont-n1")).exit_code == 0
    assert invoke("scan", "--jobs", "1", str(realworld_dir / "zk-2.8-seanorth")).exit_code == 1
    assert invoke("scan", "--jobs", "1", str(realworld_dir / "zk-corrupt-znsio")).exit_code == 2


def test_usage_errors_exit_64(tmp_path: Path) -> None:
    assert invoke("scan", "--quick", "--deep", str(tmp_path)).exit_code == 64
    assert invoke("scan", str(tmp_path / "missing")).exit_code == 66  # EX_NOINPUT, as for dump
    assert invoke("scan", "--no-such-option", str(tmp_path)).exit_code == 64
    assert invoke("scan").exit_code == 64
    assert invoke("retention", "--topic-config", "bad", str(tmp_path)).exit_code == 64
    assert invoke("retention", "--topic-config", "t:segment.ms=1", str(tmp_path)).exit_code == 64
    assert invoke("scan", "--broker-user", "no-such-user-xyz", str(tmp_path)).exit_code == 64


def test_empty_dir_is_no_log_dir(tmp_path: Path) -> None:
    """Issue 59 item 7: `mkdir EMPTY && logdoctor scan EMPTY` (an unmounted mount point looks so) is refused
    with "no log dir here" and the usage code 64, as `export` refuses it (docs/exit-codes.md); it used to
    exit 0 with "0 error(s)"."""
    empty = tmp_path / "EMPTY"
    empty.mkdir()
    for args in (("scan", str(empty)), ("scan", "--json", str(empty)), ("scan", "--quick", str(empty))):
        r = invoke(*args)
        assert r.exit_code == 64, r.output
        assert f"{empty}: no log dir here: an empty folder" in r.output
        assert "0 error(s)" not in r.output
    # one empty folder among real log dirs (a JBOD disk not mounted) refuses the whole scan
    ld = tmp_path / "ld"
    ld.mkdir()
    (ld / "meta.properties").write_text("version=0\nbroker.id=1\n")
    assert invoke("scan", str(ld)).exit_code == 0
    assert invoke("scan", str(ld), str(empty)).exit_code == 64


def test_empty_dir_refused_as_printed(tmp_path: Path) -> None:
    """The printed command of the issue, run as a user runs it (the installed entry point)."""
    import subprocess
    import sys

    empty = tmp_path / "EMPTY"
    empty.mkdir()
    r = subprocess.run(
        [sys.executable, "-m", "logdoctor", "scan", str(empty)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 64, r.stdout + r.stderr
    assert "no log dir here" in r.stderr and r.stdout == ""


@pytest.mark.realworld
def test_json_shape(realworld_dir: Path) -> None:
    d = realworld_dir / "zk-2.1-yuanliubei"
    r = invoke("scan", "--json", "--jobs", "2", "--deep", str(d))
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out) >= {"log_dirs", "partitions", "findings", "summary"}
    p = next(p for p in out["partitions"] if (p["topic"], p["partition"]) == ("__consumer_offsets", 17))
    assert set(p) == {
        "topic",
        "partition",
        "log_dir",
        "log_start_offset",
        "local_log_start_offset",  # tiered storage: the first offset kept locally
        "log_end_offset",
        "tiered",
        "tiered_evidence",
        "segments",
        "bytes",
        "recovery_point",
        "high_watermark",
        "topic_config",
        "cleaner",
        "read_as_of_bytes",  # a live dir's: the active .log's size as listed (docs/live-broker.md)
    }
    assert p["read_as_of_bytes"] is None  # a stopped broker's dir
    assert p["cleaner"]["min_cleanable_dirty_ratio"] == 0.5  # __consumer_offsets is compacted
    assert p["tiered"] is False and p["local_log_start_offset"] == p["log_start_offset"]
    # the retention settings used, and where they come from: __consumer_offsets is created compacted
    assert p["topic_config"]["cleanup.policy"]["value"] == ["compact"]
    assert "GroupCoordinator" in p["topic_config"]["cleanup.policy"]["source"]
    # the broker's own checkpoints agree with the log end offset we read from the log
    assert p["segments"] == 2 and p["log_end_offset"] == p["recovery_point"] == p["high_watermark"] == 60
    assert p["bytes"] == 236 + 119


@pytest.mark.realworld
def test_text_report_names_code_file_and_fix(realworld_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    realworld.writable_copy(realworld_dir / "zk-2.1-yuanliubei", d)
    for root, _dirs, files in os.walk(d):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    swap = d / "__consumer_offsets-17" / "00000000000000000000.log.swap"
    swap.write_bytes(b"")
    r = invoke("scan", str(d))
    assert r.exit_code == 1
    assert "ORPHAN_FILE" in r.stdout and "swap" in r.stdout and "fix:" in r.stdout


@pytest.mark.realworld
def test_retention_json(realworld_dir: Path) -> None:
    d = realworld_dir / "zk-3.7-nikhildighe-b0"
    r = invoke(
        "retention",
        "--json",
        "--jobs",
        "1",
        "--retention-ms",
        "1",
        "--now",
        "2030-01-01T00:00:00Z",
        "--topic-config",
        "demo_topic:retention.ms=-1",
        str(d),
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    by = {(p["topic"], p["partition"]): p for p in out["partitions"]}
    assert by[("demo_topic", 0)]["deleted_segments"] == 0 and by[("demo_topic", 0)]["retention_ms"] == -1
    demo = by[("nikhilDemo", 0)]
    assert (
        demo["log_end_offset"] > 0 and demo["deleted_segments"] == 1
    )  # its only (active) segment, after a roll
    assert demo["rolls_new_active_segment"] and demo["new_log_start_offset"] == demo["log_end_offset"]
    assert out["summary"]["retention_risk_segments"] == 0


@pytest.mark.realworld
def test_retention_text_marks_segments_deleted_early(realworld_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "logs"
    realworld.writable_copy(realworld_dir / "zk-3.7-nikhildighe-b0", d)
    for root, _dirs, files in os.walk(d):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    tindex = d / "__consumer_offsets-12" / "00000000000000000000.timeindex"
    tindex.write_bytes(bytes(tindex.stat().st_size))
    r = runner.invoke(
        app,
        [
            "retention",
            "--jobs",
            "1",
            "--now",
            "2024-07-25T00:00:00Z",
            "--topic-config",
            "__consumer_offsets:cleanup.policy=delete",
            str(d),
        ],
    )
    assert r.exit_code == 2, r.output
    assert "DELETED EARLY" in r.stdout and "RETENTION_RISK" in r.stdout
    assert "1 only because of a wrong largest timestamp" in " ".join(r.stdout.split())

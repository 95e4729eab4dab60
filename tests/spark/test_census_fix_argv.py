"""Issue 59 item 10: the census's findings carry their fix as argv lists (``fix_argv``: a list column of
the findings table, a list in --json), as the scan's findings do, and the command a person pastes
(``fix_command``) is that argv quoted (``shlex.join``). On a fleet whose path has a space and a quote
(the unquoted ``fix_command`` split such a log dir in two), every census fix runs exactly as printed."""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from logdoctor.sample.fleet import generate_demo_fleet
from logdoctor.spark.census import run_census

pytestmark = pytest.mark.spark

NOW = 1_790_000_000_000


@pytest.fixture(scope="module")
def census(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("census")
    demo = generate_demo_fleet(root / "demo fleet 'a'", now_ms=NOW)
    result = run_census(
        spark, [str(demo.root)], root / "out", now_ms=NOW, simulated_disks=demo.simulated_disks
    )
    return demo, result


def test_every_census_fix_command_is_its_argv_quoted(census) -> None:
    demo, result = census
    findings = json.loads(json.dumps(result.to_json(), default=str))["findings"]  # as --json prints them
    table = pq.read_table(result.tables["findings"]).to_pylist()
    assert [(f["code"], f["path"], f["fix_argv"]) for f in table] == [
        (f["code"], f["path"], f["fix_argv"]) for f in findings
    ]
    codes = set()
    for f in findings:
        if f["fix_command"].startswith("logdoctor "):
            (argv,) = f["fix_argv"]
            assert shlex.join(argv) == f["fix_command"], f
            assert shlex.split(f["fix_command"]) == argv, f  # pasted into a shell: the same argv
            codes.add(f["code"])
        else:
            assert f["fix_argv"] == [], f
    planted = {"REPLICA_LAG", "INDEX_CORRUPT", "RETENTION_RISK", "LOG_DIR_NEARLY_FULL", "REPLICA_MISPLACED"}
    assert planted <= codes
    # the fleet's own log dirs, whole, in the argvs (the path has a space and a quote)
    lag = next(f for f in findings if f["code"] == "REPLICA_LAG")
    assert lag["fix_argv"][0][-2:] == ["--follower", lag["log_dir"]] and " 'a'" in lag["log_dir"]
    assert lag["log_dir"].startswith(str(demo.root))


def _digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_every_census_fix_runs_as_printed(census) -> None:
    """The first census fix of each logdoctor command, run as its argv (no shell) on the fleet (written for
    this test: a copy), runs: the dry run of the fix (exit 0), changing nothing."""
    demo, result = census
    before = _digest(demo.root)
    ran = set()
    for f in result.findings:
        for argv in f["fix_argv"]:
            assert argv[0] == "logdoctor" and "--apply" not in argv, f
            if argv[1] in ran:
                continue
            run = subprocess.run(
                [sys.executable, "-m", "logdoctor", *argv[1:]], capture_output=True, text=True, timeout=600
            )
            # a dry run exits 0; `retention` is a report, and exits as scan does by what it finds (1
            # warnings, 2 errors: the demo's planted largestTime=0 segment is one), never 64 and up
            ok = (0, 1, 2) if argv[1] == "retention" else (0,)
            assert run.returncode in ok, (argv, run.stdout, run.stderr)
            ran.add(argv[1])
    assert {"repair", "sync-replica", "move-partition", "retention"} <= ran
    assert _digest(demo.root) == before

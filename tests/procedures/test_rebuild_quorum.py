"""``logdoctor rebuild-quorum``'s refusals, each before anything is written (issue 88 item 1): log dirs of
different clusters (78), a target that holds a node's metadata (78), a controller id a broker has and a
``--controller`` that does not parse (64). What it writes is judged by real brokers in
tests/brokers/test_broker_quorum_rebuild.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import helpers
import pytest

import cli_runs
import realworld


def _broker_dir(path: Path, node: int, cluster: str) -> Path:
    """A KRaft broker log dir as ``kafka-storage.sh format`` leaves it: meta.properties alone."""
    path.mkdir(parents=True)
    (path / "meta.properties").write_text(
        f"#\n#Sun Nov 29 02:00:00 UTC 2026\ncluster.id={cluster}\ndirectory.id=Zb1hYDzzRv2cnRhhmaRBbA\n"
        f"node.id={node}\nversion=1\n"
    )
    return path


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_log_dirs_of_two_clusters_are_refused(tmp_path):
    a = _broker_dir(tmp_path / "b1", 1, "AAAAAAAAAAAAAAAAAAAAAQ")
    b = _broker_dir(tmp_path / "b2", 2, "BBBBBBBBBBBBBBBBBBBBBQ")
    before = _files(tmp_path)
    done = cli_runs.logdoctor(
        "rebuild-quorum", a, b, "--controller", f"3001@h:9093={tmp_path / 'c'}", "--apply"
    )
    assert done.returncode == 78, done.stdout + done.stderr
    assert "different clusters" in done.stderr and _files(tmp_path) == before


def test_a_target_that_holds_metadata_is_refused(tmp_path):
    a = _broker_dir(tmp_path / "b1", 1, "AAAAAAAAAAAAAAAAAAAAAQ")
    target = _broker_dir(tmp_path / "old-controller", 3000, "AAAAAAAAAAAAAAAAAAAAAQ")
    before = _files(tmp_path)
    done = cli_runs.logdoctor("rebuild-quorum", a, "--controller", f"3001@h:9093={target}", "--apply")
    assert done.returncode == 78, done.stdout + done.stderr
    assert "holds meta.properties" in done.stderr and _files(tmp_path) == before


def test_bad_controllers_are_usage_errors(tmp_path):
    a = _broker_dir(tmp_path / "b1", 1, "AAAAAAAAAAAAAAAAAAAAAQ")
    for controller in ("3001@h=x", "x@h:1=d", f"1@h:9093={tmp_path / 'c'}"):  # no port, no id, a broker's id
        done = cli_runs.logdoctor("rebuild-quorum", a, "--controller", controller)
        assert done.returncode == 64, (controller, done.stdout + done.stderr)
    assert not (tmp_path / "c").exists()


def test_a_controller_without_its_endpoint_is_taken(tmp_path):
    """``--controller ID=DIR``: its CONTROLLER listener is written in no file, only in the printed config,
    so it may be left out (the scan's CONTROLLER_METADATA_LOST gives it so when nothing records it): past
    the parse, this broker's dirs hold no metadata log (78)."""
    a = _broker_dir(tmp_path / "b1", 1, "AAAAAAAAAAAAAAAAAAAAAQ")
    done = cli_runs.logdoctor("rebuild-quorum", a, "--controller", f"3001={tmp_path / 'c'}")
    assert done.returncode == 78, done.stdout + done.stderr
    assert "holds __cluster_metadata-0" in done.stderr


def test_real_copies_the_newest_is_chosen_and_a_rollback_leaves_nothing(tmp_path):
    """Three nodes of a real 3.5 cluster (combined mode): node 1 led epoch 190 (its quorum-state), the
    others' copies end in epoch 189, one offset short: node 1's copy is chosen and they are named behind.
    The apply writes both controllers' dirs, in which the scan finds only that the log's last election
    was among other voters; the rollback removes every file."""
    root = realworld.require()
    nodes = [root / f"kraft-3.5-greenlemont-n{i}" for i in (2, 1, 3)]
    state = json.loads((nodes[1] / "__cluster_metadata-0" / "quorum-state").read_text())
    assert (state["leaderId"], state["leaderEpoch"]) == (1, 190)
    targets = [tmp_path / "c1", tmp_path / "c2"]
    args = ["rebuild-quorum", *nodes, "--controller", f"3001@h1:9093={targets[0]}"]
    args += ["--controller", f"3002@h2:9093={targets[1]}", "--backup-dir", tmp_path / "backup"]
    plan = json.loads(cli_runs.logdoctor(*args, "--json").stdout)
    assert plan["summary"]["chosen"] == str(nodes[1])
    assert {(b["broker"], b["end_offset"], b["last_epoch"]) for b in plan["summary"]["behind"]} == {
        (2, 30637, 189),
        (3, 30637, 189),
    }
    done = cli_runs.logdoctor(*args, "--apply")
    assert done.returncode == 0, done.stdout + done.stderr
    for t in targets:
        # the log's last election names the lost voters until the new leader's own LeaderChangeMessage
        scan = json.loads(cli_runs.logdoctor("scan", "--deep", "--json", t).stdout)
        assert [f["code"] for f in scan["findings"]] == ["QUORUM_STATE_MISMATCH"]
        assert (t / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes() == (
            nodes[1] / "__cluster_metadata-0" / "00000000000000000000.log"
        ).read_bytes()
    undo = cli_runs.logdoctor(
        "rebuild-quorum", "--rollback", tmp_path / "backup" / "journal.jsonl", "--apply"
    )
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert [p for t in targets for p in t.iterdir()] == []


def test_scan_names_the_rebuild_when_a_controllers_metadata_log_is_gone(tmp_path):
    """Issue 88 item 4: node 1 of the real 3.5 cluster (a voter: the others' quorum-state) formatted again
    (meta.properties alone) and scanned with nodes 2 and 3, which hold the metadata log:
    CONTROLLER_METADATA_LOST names node 1 and the rebuild plan, which runs as printed (exit 0, nothing
    written: a formatted dir is not a target, the plan writes a folder beside it). The intact set has none."""
    import re
    import shlex

    root = realworld.require()
    nodes = [root / f"kraft-3.5-greenlemont-n{i}" for i in (1, 2, 3)]
    intact = json.loads(cli_runs.logdoctor("scan", "--json", *nodes).stdout)
    assert "CONTROLLER_METADATA_LOST" not in {f["code"] for f in intact["findings"]}
    formatted = tmp_path / "n1"
    formatted.mkdir()
    (formatted / "meta.properties").write_bytes((nodes[0] / "meta.properties").read_bytes())
    scan = json.loads(cli_runs.logdoctor("scan", "--json", nodes[1], nodes[2], formatted).stdout)
    lost = [f for f in scan["findings"] if f["code"] == "CONTROLLER_METADATA_LOST"]
    assert [(f["path"], f["details"]["node_id"]) for f in lost] == [(str(formatted), 1)]
    # said once: not also "its metadata log dir was not given" (KRAFT_METADATA_NOT_SCANNED)
    assert [f["path"] for f in scan["findings"] if str(formatted) in f["path"]] == [str(formatted)]
    printed = re.search(r"`(logdoctor rebuild-quorum [^`]*)`", lost[0]["fix"])
    assert printed is not None, lost[0]["fix"]
    words = shlex.split(printed.group(1))
    assert [words] == lost[0]["fix_argv"]
    assert words[-2:] == ["--controller", f"1={tmp_path / 'n1-rebuilt'}"]
    before = _files(tmp_path)
    done = cli_runs.logdoctor(*words[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "controller.quorum.voters=1@HOST:PORT" in done.stdout and _files(tmp_path) == before


@pytest.mark.parametrize("left", ["empty", "no meta.properties"])
def test_scan_names_the_rebuild_for_a_controller_dir_that_is_empty_or_unformatted(tmp_path, left):
    """Node 1's dir replaced by an empty folder (a new disk mounted), or by one without meta.properties
    (its bootstrap.checkpoint left): nothing in it says whose it is, but the copies of nodes 2 and 3 name
    node 1 a voter, and no other scanned dir is node 1: CONTROLLER_METADATA_LOST names it and the rebuild
    (into the empty folder itself; beside the other, which holds a bootstrap.checkpoint), whose plan runs as
    printed. Without the copies' word (node 2 alone: the dir goes with its only broker) the empty folder is
    refused as before (64)."""
    import shlex

    root = realworld.require()
    nodes = [root / f"kraft-3.5-greenlemont-n{i}" for i in (2, 3)]
    lost_dir = tmp_path / "n1"
    lost_dir.mkdir()
    if left != "empty":
        boot = root / "kraft-3.5-greenlemont-n1" / "bootstrap.checkpoint"
        (lost_dir / "bootstrap.checkpoint").write_bytes(boot.read_bytes())
    done = cli_runs.logdoctor("scan", "--json", *nodes, lost_dir)
    assert done.returncode == 1, done.stdout + done.stderr
    lost = [f for f in json.loads(done.stdout)["findings"] if f["code"] == "CONTROLLER_METADATA_LOST"]
    assert [(f["path"], f["details"]["node_id"]) for f in lost] == [(str(lost_dir), 1)]
    target = lost_dir if left == "empty" else tmp_path / "n1-rebuilt"
    words = lost[0]["fix_argv"][0]
    assert f"`{shlex.join(words)}`" in lost[0]["fix"]
    assert words[-2:] == ["--controller", f"1={target}"]
    before = _files(tmp_path)
    plan = cli_runs.logdoctor(*words[1:])
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert _files(tmp_path) == before
    if left == "empty":
        alone = cli_runs.logdoctor("scan", nodes[0], lost_dir)
        assert alone.returncode == 64 and "no log dir here: an empty folder" in alone.stderr, alone.stderr


def _meta_lines(path: Path) -> list[str]:
    """meta.properties but what is new at each plan: its date comment and its directory.id (random)."""
    return [ln for ln in path.read_text().splitlines() if not ln.startswith(("#", "directory.id="))]


@pytest.mark.slow  # a crash matrix: 2 x 9 runs killed (make test runs it, make test-fast does not)
def test_a_run_killed_after_each_step_resumes_to_the_same_files_or_rolls_back_to_nothing(tmp_path):
    """``--apply`` on the real 3.5 nodes SIGKILLed after each step (``LOGDOCTOR_CRASH_AFTER_STEP``, the
    repair engine's): ``--resume`` ends with the files an uninterrupted run writes, byte for byte but
    meta.properties' directory.id and date line (new at each plan); ``--rollback`` leaves the target
    empty. (A plan that appends a ProducerIdsRecord stamps it with the plan's time too: not so here.)"""
    root = realworld.require()
    nodes = [str(root / f"kraft-3.5-greenlemont-n{i}") for i in (2, 1, 3)]

    def args(work: Path) -> list[str]:
        return [
            "rebuild-quorum",
            *nodes,
            "--controller",
            f"3001@h1:9093={work / 'c'}",
            "--backup-dir",
            str(work / "backup"),
        ]

    ref = tmp_path / "ref"
    plan = json.loads(cli_runs.logdoctor(*args(ref), "--json").stdout)
    steps = len(plan["plan"]["actions"][0]["steps"])
    assert steps >= 9
    assert cli_runs.logdoctor(*args(ref), "--apply").returncode == 0
    reference = helpers.tree(ref / "c")
    for n in range(1, steps):  # after the last step there is nothing left to do
        for then in ("resume", "rollback"):
            work = tmp_path / f"{then}-{n}"
            killed = subprocess.run(
                [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *args(work), "--apply"],
                capture_output=True,
                text=True,
                env={**os.environ, "LOGDOCTOR_CRASH_AFTER_STEP": str(n)},
                timeout=300,
            )
            assert killed.returncode == -signal.SIGKILL, (n, killed.stdout + killed.stderr)
            journal = work / "backup" / "journal.jsonl"
            done = cli_runs.logdoctor("rebuild-quorum", f"--{then}", journal, "--apply")
            assert done.returncode == 0, (n, then, done.stdout + done.stderr)
            if then == "rollback":
                assert list((work / "c").iterdir()) == [], n
                continue
            got = helpers.tree(work / "c")
            meta = "meta.properties"
            assert _meta_lines(work / "c" / meta) == _meta_lines(ref / "c" / meta), n
            assert {k: v for k, v in got.items() if k != meta} == {
                k: v for k, v in reference.items() if k != meta
            }, n
            assert got.keys() == reference.keys(), n

"""``logdoctor rebuild-quorum``'s refusals, each before anything is written (issue 88 item 1): log dirs of
different clusters (78), a target that holds a node's metadata (78), a controller id a broker has and a
``--controller`` that does not parse (64). What it writes is judged by real brokers in
tests/brokers/test_broker_quorum_rebuild.py."""

from __future__ import annotations

from pathlib import Path

import cli_runs


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

"""Every command that takes log dirs refuses what is not one (never advice), and every command that writes
output refuses an output at, inside or above an input: the exit code says which, nothing is written."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.common import ExitCode
from logdoctor.cli.main import app

runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def tree_hash(root: Path) -> str:
    """Names, modes and bytes of everything under ``root`` (what any write or delete would change)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames) + [d + "/" for d in dirnames]:
            p = os.path.join(dirpath, name.rstrip("/"))
            st = os.lstat(p)
            h.update(f"{os.path.relpath(p, root)}\0{st.st_mode}\0".encode())
            if not name.endswith("/"):
                with open(p, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()


@pytest.fixture
def b1(tmp_path: Path) -> Path:
    """A copy of a real ZooKeeper-era log dir (3.0), with __consumer_offsets partitions."""
    src = realworld.require() / "zk-3.0-tuyen-nnt-b0"
    d = tmp_path / "b1"
    realworld.writable_copy(src, d)
    return d


def _partition(b1: Path) -> Path:
    return next(
        p for p in sorted(b1.iterdir()) if p.name.startswith("__consumer_offsets-") and any(p.iterdir())
    )


def _etc(tmp_path: Path) -> Path:
    etc = tmp_path / "etc"
    (etc / "python3-11").mkdir(parents=True)
    for f in ("passwd", "hosts", ".pwd.lock", "python3-11/site.py"):
        (etc / f).write_text("x\n")
    return etc


# --- 1. paths that are not log dirs ----------------------------------------------------------------


@pytest.mark.realworld
@pytest.mark.parametrize(
    "args",
    [
        ("scan",),
        ("scan", "--json"),
        ("scan", "--deep"),
        ("retention",),
        ("repair",),
        ("repair", "--apply"),
    ],
)
def test_a_partition_folder_is_refused_not_advised(b1: Path, args: tuple[str, ...]) -> None:
    part = _partition(b1)
    before = tree_hash(b1)
    r = invoke(*args, part)
    assert r.exit_code == ExitCode.USAGE, r.output
    assert f"{part} is a partition folder" in r.stderr
    assert f"its log dir is {b1}" in r.stderr
    assert "UNKNOWN_FILE" not in r.output and "fix:" not in r.output and "remove" not in r.output
    assert r.stdout == ""
    assert tree_hash(b1) == before


@pytest.mark.realworld
def test_the_log_dir_itself_is_still_scanned(b1: Path) -> None:
    r = invoke("scan", "--jobs", "1", b1)
    assert r.exit_code in (0, 1, 2), r.output
    assert "UNKNOWN_FILE" not in r.stdout


@pytest.mark.parametrize("command", ["scan", "retention", "repair"])
def test_an_etc_like_tree_and_the_source_tree_are_refused(tmp_path: Path, command: str) -> None:
    etc = _etc(tmp_path)
    src = Path(__file__).resolve().parents[2] / "src"
    for target in (etc, src):
        before = tree_hash(target)
        r = invoke(command, target)
        assert r.exit_code == ExitCode.USAGE, r.output
        assert "is not a Kafka log dir" in r.stderr
        assert "fix:" not in r.output and r.stdout == ""
        assert tree_hash(target) == before


def test_a_missing_log_dir_is_no_input(tmp_path: Path) -> None:
    for command in ("scan", "retention", "repair"):
        r = invoke(command, tmp_path / "nope")
        assert r.exit_code == ExitCode.NO_INPUT, (command, r.output)
        assert "no such file or directory" in r.stderr


@pytest.mark.realworld
def test_procedures_refuse_a_partition_folder_or_other_folder(b1: Path, tmp_path: Path) -> None:
    part = _partition(b1)
    etc = _etc(tmp_path)
    other = tmp_path / "b2"
    other.mkdir()
    before = tree_hash(b1)
    name = part.name
    r = invoke("move-partition", name, "--from", part, "--to", other, "--apply")
    assert r.exit_code == ExitCode.USAGE and "is a partition folder" in r.stderr, r.output
    r = invoke("move-partition", name, "--from", b1, "--to", etc, "--apply")
    assert r.exit_code == ExitCode.USAGE and "is not a Kafka log dir" in r.stderr, r.output
    r = invoke("sync-replica", name, "--leader", part, "--follower", b1, "--apply")
    assert r.exit_code == ExitCode.USAGE and "is a partition folder" in r.stderr, r.output
    r = invoke("sync-replica", name, "--leader", b1, "--follower", tmp_path / "missing", "--apply")
    assert r.exit_code == ExitCode.NO_INPUT, r.output
    assert tree_hash(b1) == before and not any(other.iterdir())


@pytest.mark.realworld
def test_census_refuses_a_partition_folder_before_starting_spark(b1: Path, tmp_path: Path) -> None:
    r = invoke("census", _partition(b1), "--out", tmp_path / "census")
    assert r.exit_code == ExitCode.USAGE and "is a partition folder" in r.stderr, r.output
    assert not (tmp_path / "census").exists()
    r = invoke("census", _etc(tmp_path), "--out", tmp_path / "census")
    assert r.exit_code == ExitCode.USAGE, r.output
    r = invoke("census", tmp_path / "nope", "--out", tmp_path / "census")
    assert r.exit_code == ExitCode.NO_INPUT, r.output


# --- 2. outputs at, inside or above an input ----------------------------------------------------------


@pytest.mark.realworld
@pytest.mark.parametrize(
    "out",
    [
        lambda b1: ["--out", b1],  # at
        lambda b1: ["--out", b1 / "census"],  # inside
        lambda b1: ["--out", b1.parent],  # above
        lambda b1: ["--out", b1.parent / "census", "--html", b1 / "report.html"],  # the report inside
    ],
)
def test_census_refuses_an_output_overlapping_an_input(b1: Path, out) -> None:
    root = b1.parent
    before = tree_hash(root)
    r = invoke("census", b1, *out(b1))
    assert r.exit_code == ExitCode.CANT_CREATE, r.output
    assert "refused: output" in r.stderr and "nothing was written or deleted" in r.stderr
    assert tree_hash(root) == before


@pytest.mark.realworld
def test_scan_html_inside_the_log_dir_is_refused(b1: Path) -> None:
    before = tree_hash(b1)
    r = invoke("scan", b1, "--html", b1 / "report.html")
    assert r.exit_code == ExitCode.CANT_CREATE, r.output
    assert "lies inside the input" in r.stderr and r.stdout == ""
    assert tree_hash(b1) == before


@pytest.mark.realworld
def test_demo_refuses_a_dir_inside_a_log_dir(b1: Path) -> None:
    before = tree_hash(b1)
    r = invoke("demo", b1 / "demo")
    assert r.exit_code == ExitCode.CANT_CREATE, r.output
    assert "lies inside the Kafka log dir" in r.stderr
    assert tree_hash(b1) == before
    r = invoke("demo", b1)
    assert r.exit_code == ExitCode.CANT_CREATE and "is the Kafka log dir" in r.stderr, r.output
    assert tree_hash(b1) == before


@pytest.mark.realworld
def test_demo_never_replaces_a_fleet_folder_it_did_not_write(b1: Path, tmp_path: Path) -> None:
    # `logdoctor demo /data` would delete /data/fleet: refused unless the demo wrote it
    fleet = tmp_path / "data" / "fleet"
    fleet.mkdir(parents=True)
    realworld.writable_copy(b1, fleet / "broker-1" / "kafka-logs")
    before = tree_hash(tmp_path / "data")
    r = invoke("demo", tmp_path / "data")
    assert r.exit_code == ExitCode.CANT_CREATE, r.output
    assert "was not written by logdoctor demo" in r.stderr
    assert tree_hash(tmp_path / "data") == before

"""What a path given as LOGDIR is (logdoctor.logdir.recognize), on the real log dirs of every era and
on trees that are not log dirs (an /etc-like tree, this repository's src/)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import realworld
from logdoctor.logdir.names import parse_partition_dir
from logdoctor.logdir.recognize import NotALogDirError, PathKind, recognize, require_log_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.realworld
@pytest.mark.parametrize("name", realworld.name_params())
def test_every_real_log_dir_is_a_log_dir(name: str) -> None:
    d = realworld.require() / name
    r = recognize(d)
    assert r.kind is PathKind.LOG_DIR, r
    assert r.is_log_dir


@pytest.mark.realworld
@pytest.mark.parametrize("name", realworld.name_params())
def test_every_real_partition_folder_is_a_partition_folder(name: str) -> None:
    d = realworld.require() / name
    folders = [p for p in sorted(d.iterdir()) if p.is_dir() and parse_partition_dir(p.name) is not None]
    for p in folders:
        if not any(p.iterdir()):
            continue  # an empty partition folder (zk-corrupt-znsio has some) tells nothing
        r = recognize(p)
        assert r.kind is PathKind.PARTITION_DIR, r
        assert not r.is_log_dir
        assert r.log_dir == str(d.resolve()) or r.log_dir == os.path.abspath(d)
        assert r.partition == parse_partition_dir(p.name)
        msg = r.refusal()
        assert "is a partition folder" in msg and f"its log dir is {r.log_dir}" in msg


@pytest.mark.realworld
def test_a_log_dir_named_like_a_partition_is_still_a_log_dir(tmp_path: Path) -> None:
    # log dirs are often called kafka-logs-0: the name parses as <topic>-<partition>, the content decides
    src = realworld.require() / "zk-3.0-tuyen-nnt-b1"
    d = tmp_path / "kafka-logs-0"
    realworld.writable_copy(src, d)
    assert recognize(d).kind is PathKind.LOG_DIR


@pytest.mark.realworld
def test_a_log_dir_without_meta_properties_or_checkpoints_is_recognised_by_its_partitions(
    tmp_path: Path,
) -> None:
    src = realworld.require() / "zk-2.8-seanorth"
    d = tmp_path / "logs"
    realworld.writable_copy(src, d)
    for f in d.iterdir():
        if f.is_file():
            f.unlink()
    r = recognize(d)
    assert r.kind is PathKind.LOG_DIR and "partition folder" in r.evidence


@pytest.mark.realworld
def test_a_folder_holding_log_dirs_names_them(tmp_path: Path) -> None:
    src = realworld.require()
    for n in ("zk-3.0-tuyen-nnt-b1", "zk-3.0-tuyen-nnt-b2"):
        realworld.writable_copy(src / n, tmp_path / "broker" / n)
    r = recognize(tmp_path / "broker")
    assert r.kind is PathKind.HOLDS_LOG_DIRS
    assert sorted(os.path.basename(p) for p in r.log_dirs) == ["zk-3.0-tuyen-nnt-b1", "zk-3.0-tuyen-nnt-b2"]
    with pytest.raises(NotALogDirError, match="holds 2 log dir"):
        require_log_dir(tmp_path / "broker")
    assert recognize(tmp_path / "broker", look_below=False).kind is PathKind.OTHER_DIR


def _etc_like(root: Path) -> Path:
    """A tree like /etc: config files, folders with dashes and digits (rc0.d, python3-11), a .lock."""
    etc = root / "etc"
    for sub in ("rc0.d", "python3-11", "X11", "apt/sources.list.d", "ssl-2"):
        (etc / sub).mkdir(parents=True)
    for f in ("passwd", "hosts", "fstab", ".pwd.lock", "ssl-2/cert.pem", "python3-11/sitecustomize.py"):
        (etc / f).write_text("x\n")
    return etc


def test_an_etc_like_tree_is_no_log_dir(tmp_path: Path) -> None:
    etc = _etc_like(tmp_path)
    r = recognize(etc)
    assert r.kind is PathKind.OTHER_DIR
    assert "is not a Kafka log dir" in r.refusal()
    # python3-11 and ssl-2 parse as partition folder names, but hold no file a partition has
    assert parse_partition_dir("python3-11") is not None
    assert recognize(etc / "python3-11").kind is PathKind.OTHER_DIR


def test_the_real_etc_and_this_repository_are_no_log_dirs() -> None:
    for p in (REPO / "src", REPO / "src" / "logdoctor", REPO / "tests"):
        assert recognize(p).kind is PathKind.OTHER_DIR, p
    if os.path.isdir("/etc"):
        assert recognize("/etc").kind is PathKind.OTHER_DIR


def test_empty_missing_and_file(tmp_path: Path) -> None:
    empty = tmp_path / "new-log-dir"
    empty.mkdir()
    r = recognize(empty)
    assert r.kind is PathKind.EMPTY_DIR and r.is_log_dir  # a new entry of log.dirs, not used yet
    assert require_log_dir(empty) == r
    missing = recognize(tmp_path / "nope")
    assert missing.kind is PathKind.MISSING and "no such file or directory" in missing.refusal()
    with pytest.raises(NotALogDirError) as info:
        require_log_dir(tmp_path / "nope")
    assert info.value.missing
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"")
    assert recognize(f).kind is PathKind.FILE
    assert "logdoctor dump" in recognize(f).refusal()


def test_a_freshly_formatted_log_dir_with_only_meta_properties(tmp_path: Path) -> None:
    d = tmp_path / "kraft-logs"
    d.mkdir()
    (d / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    assert recognize(d).kind is PathKind.LOG_DIR


def test_segment_files_in_a_folder_not_named_like_a_partition(tmp_path: Path) -> None:
    d = tmp_path / "copied-segments"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    (d / "00000000000000000000.index").write_bytes(b"")
    r = recognize(d)
    assert r.kind is PathKind.PARTITION_DIR and r.partition is None
    assert "not named <topic>-<partition>" in r.refusal()


def test_a_lock_file_alone_among_other_things_is_no_log_dir(tmp_path: Path) -> None:
    # pytest keeps a .lock in its numbered temp folders; Kafka's .lock alone proves nothing
    d = tmp_path / "pytest-8"
    (d / "test_something0").mkdir(parents=True)
    (d / ".lock").write_bytes(b"")
    assert recognize(d).kind is PathKind.OTHER_DIR
    only = tmp_path / "only-lock"
    only.mkdir()
    (only / ".lock").write_bytes(b"")
    assert recognize(only).kind is PathKind.LOG_DIR  # nothing but Kafka's names

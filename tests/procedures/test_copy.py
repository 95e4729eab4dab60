"""Durable verified copies: checksums against hashlib directly, metadata kept, differences found."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers

from logdoctor.repair import copies as cp


def test_copy_tree_of_a_real_partition(tmp_path, realworld_dir):
    src = helpers.copy_log_dir(realworld_dir / "zk-2.8-seanorth" / "some-topic-0", tmp_path / "src")
    os.utime(src / "00000000000000000000.log", ns=(1_000_000_000, 2_000_000_000))
    seen: list[int] = []
    sums = cp.copy_tree(src, tmp_path / "dst", progress=seen.append)
    expected = {p.name: hashlib.blake2b(p.read_bytes(), digest_size=32).hexdigest() for p in src.iterdir()}
    assert sums == expected and sum(seen) == cp.tree_size(src)
    assert helpers.tree(tmp_path / "dst") == helpers.tree(src)
    assert (tmp_path / "dst" / "00000000000000000000.log").stat().st_mtime_ns == 2_000_000_000
    assert cp.verify_tree(tmp_path / "dst", sums) == []


def test_verify_tree_reports_each_difference(tmp_path):
    (tmp_path / "a").mkdir()
    for name, data in (("x.log", b"abc"), ("y.index", b"\0" * 8)):
        (tmp_path / "a" / name).write_bytes(data)
    sums = cp.tree_checksums(tmp_path / "a")
    (tmp_path / "a" / "x.log").write_bytes(b"abd")
    (tmp_path / "a" / "y.index").unlink()
    (tmp_path / "a" / "z.snapshot").write_bytes(b"")
    problems = cp.verify_tree(tmp_path / "a", sums)
    assert len(problems) == 3
    assert any("x.log differs" in p for p in problems) and any("y.index is missing" in p for p in problems)
    assert any("z.snapshot was not in the source" in p for p in problems)
    assert cp.verify_tree(tmp_path / "nothing", sums) == [f"{tmp_path / 'nothing'} is missing"]


def test_copy_never_overwrites(tmp_path):
    (tmp_path / "s").write_bytes(b"1")
    (tmp_path / "d").write_bytes(b"2")
    with pytest.raises(FileExistsError):
        cp.copy_file(tmp_path / "s", tmp_path / "d")
    assert (tmp_path / "d").read_bytes() == b"2"

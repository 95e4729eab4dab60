"""Issue 32 item 11: `repair` gave up on the whole log dir (exit 70, dry run and --apply) when one
`.index`, `.timeindex` or checkpoint was a symlink or a FIFO. Now it plans and applies the rest, leaves
that file as it is (never read or written through), and lists its finding with why (exit per the
table: findings remain). Every variant: a symlink to a file, a dangling symlink, a symlink to a folder,
a FIFO, a socket; for a segment's `.index`, `.timeindex` and `.log`, an offset checkpoint and the
leader-epoch checkpoint."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import write_runs as wr

import tiers

pytestmark = pytest.mark.needs_root

KINDS = ("symlink-to-file", "dangling-symlink", "symlink-to-folder", "fifo", "socket")
TARGETS = ("index", "timeindex", "log", "checkpoint", "leader-epoch-checkpoint")


@pytest.fixture(scope="module")
def case(tmp_path_factory) -> wr.Case:
    return wr.repair_case(tmp_path_factory.mktemp("special"))


@pytest.fixture(scope="module")
def reference(case, tmp_path_factory) -> dict:
    """The tree a repair of the undamaged-by-this-test copy leaves."""
    work = tmp_path_factory.mktemp("special-reference")
    root = wr.clone(case.template, work / "root")
    r = wr.cli(*case.args(root, work / "backup"))
    assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, r.stderr[-2000:]
    return wr.tree(root)


def _target(root: Path, target: str) -> Path:
    logs = root / "logs"
    # the partition damage_log_dir damaged (its torn tail, padded indexes): the biggest orders partition
    part = max(logs.glob("orders-*"), key=lambda p: sum(f.stat().st_size for f in p.glob("*.log")))
    if target == "checkpoint":
        return logs / "recovery-point-offset-checkpoint"
    if target == "leader-epoch-checkpoint":
        return part / "leader-epoch-checkpoint"
    return sorted(part.glob(f"*.{target}"))[0]


def _make(kind: str, path: Path, aside: Path) -> None:
    path.unlink()
    if kind == "symlink-to-file":
        (aside / "target").write_bytes(b"\0" * 24)
        os.symlink(aside / "target", path)
    elif kind == "dangling-symlink":
        os.symlink(aside / "nowhere", path)
    elif kind == "symlink-to-folder":
        (aside / "folder").mkdir()
        os.symlink(aside / "folder", path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        here = os.getcwd()
        os.chdir(path.parent)  # a socket's path is at most 108 bytes: bind by its name
        try:
            s = socket.socket(socket.AF_UNIX)
            s.bind(path.name)
            s.close()
        finally:
            os.chdir(here)


def _what(path: Path) -> tuple:
    st = os.lstat(path)
    return (stat.S_IFMT(st.st_mode), os.readlink(path) if stat.S_ISLNK(st.st_mode) else None)


# every kind with every target in make test; make test-fast takes each kind once and each target once
@pytest.mark.parametrize(
    ("kind", "target"),
    [
        pytest.param(kind, target, marks=tiers.marks(i == j))
        for i, kind in enumerate(KINDS)
        for j, target in enumerate(TARGETS)
    ],
)
def test_repair_plans_and_applies_the_rest_around_a_special_file(tmp_path, case, reference, target, kind):
    root = wr.clone(case.template, tmp_path / "root")
    path = _target(root, target)
    _make(kind, path, tmp_path)
    what = _what(path)
    rel = str(path.relative_to(root))
    dry = wr.cli("repair", root / "logs", "--jobs", "1")
    assert dry.returncode == 0, (dry.returncode, dry.stderr[-2000:])
    r = wr.cli(*case.args(root, tmp_path / "backup"))
    assert r.returncode in (1, 2), (r.returncode, r.stdout[-3000:], r.stderr[-2000:])
    assert "applied:" in r.stdout, r.stdout[-3000:]
    assert _what(path) == what  # left exactly as it was, never followed
    left = r.stdout.split("Left after repair", 1)[1]  # its finding is still found, with why
    assert f"SYMLINK_IN_LOG_DIR {path}" in left or f"NOT_A_REGULAR_FILE {path}" in left, left
    # everything else repaired as in a log dir without the special file (what the repair would have done
    # to that one file aside; a rebuilt .index's .timeindex, or the reverse, is still rebuilt)
    after = wr.tree(root)
    expected = {k: v for k, v in reference.items() if k != rel}
    got = {k: v for k, v in after.items() if k != rel}
    if target in ("index", "timeindex", "log"):
        # the segment's own files follow from the special one (its log is not read; its index is not
        # rewritten): leave the segment's siblings of that base offset out of the comparison
        stem = path.name.rsplit(".", 1)[0]
        expected = {k: v for k, v in expected.items() if stem not in k}
        got = {k: v for k, v in got.items() if stem not in k}
    assert got == expected, sorted(set(got.items()) ^ set(expected.items()))[:6]

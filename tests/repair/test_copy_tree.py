"""The engine's copy-tree operation (the design the procedures' copy-partition shares): a real partition
folder and a single file, checksums against hashlib, a changed source refused, a damaged copy seen,
rollback removes the copies."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import realworld
from logdoctor.repair import apply_plan, rollback
from logdoctor.repair.apply import FilesChangedError, PlanChangedError
from logdoctor.repair.plan import Action, Plan
from logdoctor.repair.steps.base import AFTER, BEFORE, OTHER, StepContext
from logdoctor.repair.steps.registry import operation
from logdoctor.repair.steps.verified_copy import copy_tree


def _log_dir(tmp_path: Path, realworld_dir: Path) -> Path:
    ld = tmp_path / "kafka-logs"
    ld.mkdir()
    realworld.writable_copy(realworld_dir / "zk-2.8-seanorth" / "some-topic-0", ld / "some-topic-0")
    (ld / "recovery-point-offset-checkpoint").write_bytes(b"0\n1\nsome-topic 0 0\n")
    return ld


def _plan(ld: Path, tmp_path: Path) -> Plan:
    plan = Plan([str(ld)], str(tmp_path / "backup"))
    steps = [
        copy_tree(str(ld / "some-topic-0"), str(ld / "some-topic-0.copy")),
        copy_tree(str(ld / "recovery-point-offset-checkpoint"), str(ld / "checkpoint.copy")),
    ]
    plan.actions.append(Action("copy", "some-topic-0", "test", steps=steps))
    plan.number_steps()
    return plan


def _blake(p: Path) -> str:
    return hashlib.blake2b(p.read_bytes(), digest_size=32).hexdigest()


def test_copy_tree_folder_and_file_then_rollback(tmp_path, realworld_dir):
    ld = _log_dir(tmp_path, realworld_dir)
    plan = _plan(ld, tmp_path)
    ctx = StepContext(plan.backup_dir)
    assert [operation(s).state(s, ctx) for s in plan.steps] == [BEFORE, BEFORE]
    result = apply_plan(plan)
    assert result.status == "applied", result.error
    src, copy = ld / "some-topic-0", ld / "some-topic-0.copy"
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in src.iterdir())
    for p in src.iterdir():
        assert (copy / p.name).read_bytes() == p.read_bytes()
    assert (ld / "checkpoint.copy").read_bytes() == (ld / "recovery-point-offset-checkpoint").read_bytes()
    manifests = sorted((tmp_path / "backup" / "manifests").iterdir())
    sums = [json.loads(m.read_text())["checksums"] for m in manifests]
    assert sums[0] == {p.name: _blake(p) for p in src.iterdir()}
    assert sums[1] == {".": _blake(ld / "recovery-point-offset-checkpoint")}
    assert [operation(s).state(s, ctx) for s in plan.steps] == [AFTER, AFTER]

    original = (ld / "checkpoint.copy").read_bytes()
    (ld / "checkpoint.copy").write_bytes(b"0\n0\n")  # someone changed the copy: neither before nor after
    assert operation(plan.steps[1]).state(plan.steps[1], StepContext(plan.backup_dir)) == OTHER
    # the rollback would delete what someone wrote after the run (issue 32): refused, nothing written
    journal_bytes = Path(result.journal).read_bytes()
    with pytest.raises(FilesChangedError, match=r"checkpoint\.copy"):
        rollback(result.journal)
    assert (ld / "checkpoint.copy").read_bytes() == b"0\n0\n" and copy.is_dir()
    assert Path(result.journal).read_bytes() == journal_bytes
    (ld / "checkpoint.copy").write_bytes(original)  # as the run left it: the rollback runs

    back = rollback(result.journal)
    assert back.status == "rolled-back", back.error
    assert not copy.exists() and not (ld / "checkpoint.copy").exists() and src.is_dir()


def test_copy_tree_refuses_a_source_changed_since_the_plan(tmp_path, realworld_dir):
    ld = _log_dir(tmp_path, realworld_dir)
    plan = _plan(ld, tmp_path)
    log = sorted((ld / "some-topic-0").glob("*.log"))[0]
    with open(log, "ab") as f:
        f.write(b"\0")
    with pytest.raises(PlanChangedError, match="some-topic-0"):  # refused before anything is written
        apply_plan(plan)
    assert not (ld / "some-topic-0.copy").exists() and not (tmp_path / "backup").exists()
    assert not os.path.exists(str(ld / "some-topic-0.copy") + ".logdoctor-partial")

"""A file system that fills up while a run writes, and stays full while the run is undone (issue 48, item
10; about 1 in 60 of the audit's disk-full restores): the line said "refused (nothing written)" while
files of the run stayed in the log dir, and pointed to ``logdoctor repair --resume`` for a restore's
journal. Now :class:`PartlyWrittenError` names the run's files on disk and the command's own resume and
rollback lines, and the CLI says "failed", exit 2 (docs/exit-codes.md: a step failed)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import typer

import realworld
from logdoctor.cli.run_status import run_errors
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.repair import apply as apply_mod
from logdoctor.repair.backup import NoSpaceError, PartlyWrittenError
from logdoctor.repair.procedures.restore import plan_restore


def _full(path: str) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def test_an_undo_that_fails_too_says_what_is_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiered = realworld.require_tiered()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    opts = RemoteOptions(str(tiered / "kafka-local" / "remote"), None, None)
    pp = plan_restore(log_dir, opts, backup_dir=tmp_path / "b")
    plan = pp.plan
    plan.number_steps()
    [mkdir, fetch] = [s for s in plan.steps if s.op in ("mkdir", "fetch-remote")][:2]
    assert mkdir.op == "mkdir" and fetch.op == "fetch-remote"

    def forward(plan, journal, ctx, done, result, begun=None):  # the first two steps written, then full
        os.mkdir(mkdir.path)
        Path(fetch.path).write_bytes(b"x" * 100)
        assert begun is not None
        begun.extend([mkdir.number, fetch.number])
        raise _full(fetch.path)

    def undo(plan, journal, ctx, begun, result):
        raise _full(str(tmp_path / "b"))

    monkeypatch.setattr(apply_mod, "_run_forward", forward)
    monkeypatch.setattr(apply_mod, "_undo", undo)
    with pytest.raises(PartlyWrittenError) as err:
        apply_mod.apply_plan(plan, command="restore")
    text = str(err.value)
    assert err.value.left == [mkdir.path, fetch.path]
    assert f"the log dirs hold 2 file(s) or folder(s) of this run: {mkdir.path}, {fetch.path}" in text
    journal = tmp_path / "b" / "journal.jsonl"
    assert f"`logdoctor restore --resume {journal} --apply`" in text
    assert f"`logdoctor restore --rollback {journal} --apply`" in text
    assert "repair --resume" not in text and "nothing written" not in text


def test_the_cli_says_failed_not_nothing_written(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as info, run_errors("restore", usage=(), refusals=()):
        raise PartlyWrittenError("x: No space left on device; undoing the run failed too", ["x"])
    assert info.value.exit_code == 2
    assert capsys.readouterr().err.startswith("failed (files of this run are in the log dirs): x: No space")
    # a run undone whole is still a refusal with nothing written (73)
    with pytest.raises(typer.Exit) as info, run_errors("restore", usage=(), refusals=()):
        raise NoSpaceError("x: No space left on device; the 2 step(s) begun were undone")
    assert info.value.exit_code == 73
    assert capsys.readouterr().err.startswith("refused (nothing written): x: No space")

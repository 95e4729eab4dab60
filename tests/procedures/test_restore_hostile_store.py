"""`logdoctor restore` never writes what Kafka would reject (issue 48, items 2-4), on damaged copies of
../shared/tiered's stores:

- a remote segment whose second batch's base offset moved by +5 (outside the batch CRC), in both layouts:
  the fetch checks every batch's offsets before the rename (``consecutive_offsets_error``), the apply stops
  naming the object (exit 2), the segment is never renamed into place and ``--rollback`` leaves the log dir
  as it was (before: exit 0, offsets 378-382 lost and 432-436 twice);
- a Kafka-layout ``.index`` object truncated to 20 bytes: never copied; a finding names it and the index is
  rebuilt from the restored segment, so the scan of the result has no INDEX_CORRUPT (before: copied as it
  was);
- a store folder for topic ``..`` (Kafka's Topic.validate refuses it): a ``restore-topic-name`` finding,
  nothing written for it (before: ``LOGDIR/..-0`` with payments' topic id).
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import helpers
import pytest

import cli_runs
import realworld
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.restore import plan_restore


def _cli(*args: str) -> subprocess.CompletedProcess:
    """``logdoctor ARGS`` in this process (tests/cli_runs.py)."""
    return cli_runs.logdoctor(*args)


def _store(tmp_path: Path, store: str) -> Path:
    tiered = realworld.require_tiered()
    return realworld.writable_copy(tiered / store, tmp_path / "store")


def _object(store: Path, partition: int, base: int, suffix: str) -> Path:
    found = [
        p
        for p in store.rglob(f"{base:020d}-*.{suffix}")
        if f"-{partition}-" in str(p) or f"/{partition}/" in str(p)
    ]
    assert len(found) == 1, found
    return found[0]


def _scan_codes(log_dir: Path) -> set[str]:
    out = _cli("scan", "--deep", "--json", str(log_dir))
    return {f["code"] for f in json.loads(out.stdout)["findings"]}


@pytest.mark.parametrize("store", ["kafka-local/remote", "aiven/plain/storage"])
def test_a_batch_whose_offsets_go_back_is_never_restored(tmp_path: Path, store: str) -> None:
    copy = _store(tmp_path, store)
    bad = _object(copy, 0, 324, "log")
    data = bytearray(bad.read_bytes())  # (Aiven plain: the object is the segment's bytes, in chunks)
    second = struct.unpack_from(">i", data, 8)[0] + 12
    assert struct.unpack_from(">q", data, second)[0] == 378
    struct.pack_into(">q", data, second, 383)
    bad.write_bytes(bytes(data))
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    before = helpers.tree(log_dir)
    backup = tmp_path / "b"
    out = _cli("restore", str(log_dir), "--remote-storage", str(copy), "--apply", "--backup-dir", str(backup))
    assert out.returncode == 2, out.stdout + out.stderr
    text = " ".join((out.stdout + out.stderr).split())
    assert bad.name in text and "found base offset 383" in text, text
    assert not (log_dir / "payments-0" / f"{324:020d}.log").exists()
    out = _cli("restore", "--rollback", str(backup / "journal.jsonl"), "--apply")
    assert out.returncode == 0, out.stdout + out.stderr
    assert helpers.tree(log_dir) == before


def test_a_truncated_index_object_is_rebuilt_not_copied(tmp_path: Path) -> None:
    copy = _store(tmp_path, "kafka-local/remote")
    index = _object(copy, 0, 324, "index")
    with open(index, "r+b") as fh:
        fh.truncate(20)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(log_dir, RemoteOptions(str(copy), None, None), backup_dir=tmp_path / "b")
    named = [u for u in pp.plan.unrepaired if "stored .index" in u.why]
    assert len(named) == 1 and "offsets 324-647" in named[0].why and "rebuilt" in named[0].why, named
    restored = log_dir / "payments-0" / f"{324:020d}.index"
    assert str(restored) in pp.summary["rebuilt_indexes"]
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    original = realworld.require_tiered() / "original" / "kafka-logs" / "payments-0" / f"{324:020d}.index"
    assert restored.read_bytes() == original.read_bytes()  # rebuilt as the broker wrote it
    assert not {"INDEX_CORRUPT", "LOG_CORRUPT"} & _scan_codes(log_dir)


@pytest.mark.parametrize("store", ["kafka-local/remote", "aiven/plain/storage"])
def test_a_store_folder_of_an_illegal_topic_is_named_and_not_restored(tmp_path: Path, store: str) -> None:
    copy = _store(tmp_path, store)
    if store.startswith("kafka-local"):
        [folder] = (copy / "kafka-tiered-storage").glob("payments-0-*")
        folder.rename(folder.with_name(".." + folder.name[len("payments") :]))
    else:
        [folder] = copy.glob("payments-*")
        shutil.copytree(folder, folder.with_name(".." + folder.name[len("payments") :]))
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(log_dir, RemoteOptions(str(copy), None, None), backup_dir=tmp_path / "b")
    named = [u for u in pp.plan.unrepaired if u.code == "restore-topic-name"]
    assert len(named) == 1 and "'..'" in named[0].why and "Topic.validate" in named[0].why, named
    assert all(".." not in Path(s.path).relative_to(log_dir).parts[0] for s in pp.plan.steps)
    backup = str(tmp_path / "c")
    out = _cli("restore", str(log_dir), "--remote-storage", str(copy), "--apply", "--backup-dir", backup)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "restore-topic-name" in out.stdout
    assert not list(log_dir.glob("..-*")) and not (tmp_path / "..-0").exists()
    assert (log_dir / "payments-1").is_dir()

from __future__ import annotations

import os
import stat

import pytest

from logdoctor.logdir import atomic
from logdoctor.logdir.atomic import atomic_write, fsync_dir


def test_new_file_content_and_default_mode(tmp_path):
    target = tmp_path / "recovery-point-offset-checkpoint"
    atomic_write(target, b"0\n0\n")
    assert target.read_bytes() == b"0\n0\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temp file left


def test_replace_keeps_mode_and_owner(tmp_path):
    target = tmp_path / "meta.properties"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    if os.geteuid() == 0:
        os.chown(target, 1234, 5678)  # as a broker user would own it
    before = target.stat()
    atomic_write(target, b"new content")
    after = target.stat()
    assert target.read_bytes() == b"new content"
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert after.st_ino != before.st_ino  # replaced by rename, not rewritten in place
    assert [p.name for p in tmp_path.iterdir()] == ["meta.properties"]


def test_explicit_mode(tmp_path):
    target = tmp_path / "f"
    target.write_bytes(b"x")
    atomic_write(target, memoryview(b"yz"), mode=0o600)
    assert target.read_bytes() == b"yz"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_failure_leaves_target_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "replication-offset-checkpoint"
    target.write_bytes(b"original")

    def boom(fd):
        raise OSError(5, "EIO on fsync")

    monkeypatch.setattr(atomic.os, "fsync", boom)
    with pytest.raises(OSError, match="EIO"):
        atomic_write(target, b"replacement")
    assert target.read_bytes() == b"original"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_fsync_dir_on_a_file_is_an_error(tmp_path):
    fsync_dir(tmp_path)
    f = tmp_path / "x"
    f.write_bytes(b"")
    with pytest.raises(NotADirectoryError):
        fsync_dir(f)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_new_file_gets_requested_owner(tmp_path):
    target = tmp_path / "00000000000000000000.index"
    atomic_write(target, b"\0" * 8, uid=65534, gid=65534)
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534)
    assert target.read_bytes() == b"\0" * 8


def test_sync_barrier_fsyncs_what_was_registered_and_reports_an_error(tmp_path):
    from logdoctor.logdir.atomic import SyncBarrier, write_temp

    target = tmp_path / "a.index"
    with SyncBarrier() as barrier:
        tmp = write_temp(target, b"abc", sync=False)
        assert os.path.basename(tmp).startswith(".a.index.") and tmp.endswith(".tmp")
        barrier.file(tmp)
        barrier.folder(tmp_path)
        barrier.flush()
        assert not barrier.folders
        os.replace(tmp, target)
        barrier.file(tmp_path / "gone")  # vanished before its fsync: the flush says so, naming it
        barrier.folder(tmp_path)
        with pytest.raises(FileNotFoundError, match="gone"):
            barrier.flush()
    assert target.read_bytes() == b"abc"

"""formats.folders.list_folders: the C call (_speedups.list_folders) and its pure-Python twin give the same
result for every kind of entry a log dir's root can hold."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from logdoctor.formats import extension, folders
from logdoctor.formats.folders import list_folders_py

SPEEDUPS = extension.load()
C = getattr(SPEEDUPS, "list_folders", None)
needs_c = pytest.mark.skipif(C is None, reason="_speedups is not built (LOGDOCTOR_PURE_PYTHON or no build)")


def _root(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "logs"
    root.mkdir()
    (root / "empty-0").mkdir()
    full = root / "full-0"
    full.mkdir()
    for i in range(3000):  # more than one getdents buffer of names
        (full / f"{i:020d}.log").write_bytes(b"")
    (full / os.fsdecode(b"not-utf8-\xff\xfe")).write_bytes(b"x")  # decoded as os.listdir decodes it
    (full / "sub").mkdir()
    os.symlink(full, root / "link-0")  # followed, as os.scandir and os.stat follow it
    (root / "file-0").write_bytes(b"")
    os.symlink(root / "gone", root / "dangling-0")
    private = root / "private-0"
    private.mkdir(mode=0o700)
    os.chmod(private, stat.S_IRWXU | stat.S_ISGID)
    names = ["empty-0", "full-0", "link-0", "file-0", "missing-0", "dangling-0", "private-0", "full-0/sub"]
    return root, names


@needs_c
def test_c_and_python_list_the_same(tmp_path: Path) -> None:
    root, names = _root(tmp_path)
    got = C(str(root), names)
    assert got == list_folders_py(str(root), names)
    by = dict(zip(names, got, strict=True))
    assert by["empty-0"][3] == []
    assert by["file-0"] == errno.ENOTDIR
    assert by["missing-0"] == errno.ENOENT and by["dangling-0"] == errno.ENOENT
    assert sorted(by["link-0"][3]) == sorted(by["full-0"][3]) and len(by["full-0"][3]) == 3002
    assert os.fsdecode(b"not-utf8-\xff\xfe") in by["full-0"][3]
    st = os.stat(root / "private-0")
    assert by["private-0"][:3] == (st.st_mode, st.st_uid, st.st_gid)
    assert C(str(root), []) == list_folders_py(str(root), []) == []


@needs_c
def test_a_root_that_cannot_be_opened_raises_the_same(tmp_path: Path) -> None:
    for root in (tmp_path / "nope", tmp_path / "a-file"):
        if root.name == "a-file":
            root.write_bytes(b"")
        with pytest.raises(OSError) as c_err:
            C(str(root), ["x"])
        with pytest.raises(OSError) as py_err:
            list_folders_py(str(root), ["x"])
        assert (c_err.value.errno, c_err.value.filename) == (py_err.value.errno, py_err.value.filename)


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens any folder")
@needs_c
def test_a_folder_that_cannot_be_read_gives_its_errno(tmp_path: Path) -> None:
    root, _ = _root(tmp_path)
    (root / "closed-0").mkdir(mode=0o000)
    try:
        assert C(str(root), ["closed-0"]) == list_folders_py(str(root), ["closed-0"]) == [errno.EACCES]
    finally:
        os.chmod(root / "closed-0", 0o700)


def test_the_c_call_is_chosen_when_built() -> None:
    assert folders.list_folders is (C if C is not None else list_folders_py)

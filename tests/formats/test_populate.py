"""Issue 35: ``_speedups.populate_read`` (formats.native.populate_read) faults in the pages of a buffer
without the GIL (madvise MADV_POPULATE_READ, else one byte read per page): it only reads, whatever the
buffer (a real .log mapped, bytes, a slice that does not start on a page), lets other Python threads run
while it works, and falls back to reading the pages where the kernel refuses the advice."""

from __future__ import annotations

import errno
import mmap
import os
import sys
import threading
from pathlib import Path

import pytest

import realworld
from logdoctor.formats import native

pytestmark = pytest.mark.skipif(native.populate_read is None, reason="needs the C extension")


def _biggest_real_log() -> Path:
    realworld.require()
    return max(realworld.files(".log"), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("refused", [0, errno.EINVAL, errno.ENOSYS])
def test_a_mapped_real_log_is_populated_and_unchanged(refused: int) -> None:
    """The biggest real .log, mapped without MAP_POPULATE: after the populate (madvise, or the pages read
    where madvise is refused) the mapping's bytes are the file's; read without madvise (advise=False,
    what the early mappings use) likewise."""
    log = _biggest_real_log()
    data = log.read_bytes()
    assert len(data) > 2 * mmap.PAGESIZE
    with open(log, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    try:
        assert native.populate_read(mm, refused=refused) is (refused == 0)
        assert mm[:] == data
        view = memoryview(mm)[mmap.PAGESIZE - 7 : len(data) - 5]  # not page-aligned at either end
        assert native.populate_read(view, refused=refused) is (refused == 0)
        assert bytes(view) == data[mmap.PAGESIZE - 7 : len(data) - 5]
        assert native.populate_read(view, advise=False, refused=refused) is False
        assert bytes(view) == data[mmap.PAGESIZE - 7 : len(data) - 5]
        view.release()
    finally:
        mm.close()


@pytest.mark.parametrize("refused", [0, errno.EINVAL])
def test_bytes_and_unaligned_slices_are_left_as_they_are(refused: int) -> None:
    data = bytes(range(256)) * 4099
    copy = bytes(data)
    for buf in (data, memoryview(data)[3:], memoryview(data)[1 : len(data) - 1], memoryview(data)[5:6], b""):
        got = native.populate_read(buf, refused=refused)
        assert got is (refused == 0 and len(buf) > 0)
    assert data == copy
    private = bytearray(data)
    native.populate_read(memoryview(private)[4095:8193], refused=refused)
    native.populate_read(memoryview(private)[1:], advise=False)
    assert private == copy


def test_any_other_error_of_madvise_is_raised_and_nothing_read() -> None:
    """EFAULT (a page past the end of a file truncated since it was mapped: reading it would be SIGBUS):
    an OSError, the pages not read."""
    with pytest.raises(OSError) as got:
        native.populate_read(b"x" * 10, refused=errno.EFAULT)
    assert got.value.errno == errno.EFAULT


def test_a_mapping_past_the_end_of_its_file_is_refused_not_read(tmp_path: Path) -> None:
    """A real EFAULT: the file cut to one page under a mapping of two. madvise says EFAULT (a read of the
    second page would be SIGBUS); the process lives on."""
    path = tmp_path / "cut.log"
    path.write_bytes(b"\1" * (2 * mmap.PAGESIZE))
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    try:
        os.truncate(path, mmap.PAGESIZE)
        with pytest.raises(OSError) as got:
            native.populate_read(mm)
        assert got.value.errno == errno.EFAULT
        assert mm[: mmap.PAGESIZE] == b"\1" * mmap.PAGESIZE
    finally:
        mm.close()


@pytest.mark.parametrize(("advise", "refused"), [(True, 0), (True, errno.EINVAL), (False, 0)])
def test_another_thread_runs_while_it_populates(advise: bool, refused: int) -> None:
    """With the switch interval so long that the interpreter never takes the GIL from a thread, a thread
    that populates over and over (and does nothing else that lets the GIL go) lets the main thread run
    only if the populate releases the GIL: the main thread's step is seen by the populating thread. Held
    GIL: it never is, whatever the number of rounds (no timing: a count of rounds that ends early)."""
    mm = mmap.mmap(-1, 4 << 20)
    started, done = threading.Event(), threading.Event()
    stepped: list[int] = []
    seen: list[int] = []

    def populate() -> None:
        started.set()  # wakes the main thread, which then waits for the GIL
        for _ in range(200_000):
            native.populate_read(mm, advise=advise, refused=refused)
            if stepped:
                break
        seen.append(len(stepped))
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        thread = threading.Thread(target=populate)
        thread.start()
        started.wait()
        stepped.append(1)  # runs only once the populating thread lets the GIL go
        done.wait()
        thread.join()
    finally:
        sys.setswitchinterval(interval)
        mm.close()
    assert seen == [1]

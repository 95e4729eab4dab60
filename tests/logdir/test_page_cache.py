"""Issue 58 item 2: a read-only command leaves the page cache as it found it. Residency is measured with
util-linux's ``fincore`` (an independent tool: it asks the kernel with its own mincore), before and after
``logdoctor scan --deep`` and ``dump`` of a segment that was not cached, and of one that was: the pages the
command brought in are gone, those cached before stay; ``--keep-cache`` leaves them all.

The files live under pytest's tmp_path on a disk-backed file system (tmpfs pages cannot be dropped: the
tests skip there)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from live_reads import FINCORE, discipline_reset, resident, small_log_dir, uncache
from logdoctor.checks import walk_ahead
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app
from logdoctor.logdir import page_cache

pytestmark = [
    pytest.mark.skipif(FINCORE is None, reason="util-linux fincore is not installed"),
    pytest.mark.usefixtures(discipline_reset.__name__),
]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    """One partition of one ~8 MiB segment."""
    return small_log_dir(tmp_path_factory.mktemp("page-cache"), "live.topic", 1, 4000)


def _segment(log_dir: Path) -> Path:
    (log,) = log_dir.glob("live.topic-0/*.log")
    assert log.stat().st_size > 4 << 20
    return log


def _cache(path: Path) -> None:
    path.read_bytes()
    assert resident(path) >= path.stat().st_size - 4096


class Seen:
    """What a command did to the page cache of one file, recorded at the calls themselves: the ranges it
    advised away (``POSIX_FADV_DONTNEED``) and the pages it saw absent when it asked the kernel before
    reading (``page_cache.cached_pages`` of 0 for a range, ``page_cache.resident_pages``' zero bytes)."""

    def __init__(self) -> None:
        self.dropped: list[tuple[int, int]] = []
        self.absent: set[int] = set()  # offsets of the pages the command saw not cached

    def dropped_pages(self, size: int) -> set[int]:
        """The pages of the file (``size`` bytes) in :attr:`dropped` (a length of 0: to its end)."""
        page, pages = page_cache.PAGE, set()
        for offset, length in self.dropped:
            pages.update(range(offset - offset % page, min(offset + length, size) if length else size, page))
        return pages


def _seen_while(log: Path, monkeypatch, *args: str | Path) -> Seen:
    """:class:`Seen` of ``log`` while the command ``args`` runs: the tool's own part of what leaves the
    cache, apart from the kernel's reclaim (on a loaded machine it evicts a page or two of a file read once,
    before the command or ``fincore`` looks)."""
    st = log.stat()
    inode, size = st.st_ino, st.st_size
    seen = Seen()
    real_fadvise = os.posix_fadvise
    real_cached, real_resident = page_cache.cached_pages, page_cache.resident_pages
    page = page_cache.PAGE

    def ours(fd: int) -> bool:
        return os.fstat(fd).st_ino == inode

    def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
        if advice == os.POSIX_FADV_DONTNEED and ours(fd):
            seen.dropped.append((offset, length))
        real_fadvise(fd, offset, length, advice)

    def cached_pages(fd: int, start: int, length: int) -> int | None:
        n = real_cached(fd, start, length)
        if n == 0 and ours(fd):
            seen.absent.update(range(start - start % page, min(start + length, size), page))
        return n

    def resident_pages(fd: int, start: int, length: int) -> bytes | None:
        vec = real_resident(fd, start, length)
        if vec is not None and ours(fd):
            first = start - start % page
            seen.absent.update(first + i * page for i, b in enumerate(vec) if b == 0)
        return vec

    with monkeypatch.context() as m:
        m.setattr(os, "posix_fadvise", fadvise)
        m.setattr(page_cache, "cached_pages", cached_pages)
        m.setattr(page_cache, "resident_pages", resident_pages)
        assert _cli(*args) in (0, 1)
    return seen


def _cli(*args: str | Path) -> int:
    r = CliRunner().invoke(app, [*map(str, args)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code


@pytest.mark.parametrize("command", [("scan", "--deep"), ("dump", "--deep")])
@pytest.mark.parametrize("cached", [False, True])
def test_the_cache_is_left_as_found(log_dir, command, cached, monkeypatch):
    """Not cached before: at most 5% cached after. Cached before: nothing advised away but what the kernel
    had reclaimed before the command looked, and every page still cached (give or take that reclaim)."""
    log = _segment(log_dir)
    if cached:
        _cache(log)
    else:
        uncache(log)
    target = log_dir if command[0] == "scan" else log
    seen = _seen_while(log, monkeypatch, *command, "--json", target)
    size = log.stat().st_size
    if cached:
        # exact: it dropped only pages it saw absent before it read them; those are the kernel's reclaim
        # between the read above and the command's look (none on a quiet machine; two pages were seen under
        # two suites at once), never more than a few
        assert seen.dropped_pages(size) <= seen.absent, (seen.dropped, sorted(seen.absent))
        assert len(seen.absent) * page_cache.PAGE <= 0.05 * size, len(seen.absent)
        assert resident(log) >= 0.95 * size
    else:
        assert resident(log) <= 0.05 * size


def test_keep_cache_leaves_what_was_read(log_dir, monkeypatch):
    log = _segment(log_dir)
    uncache(log)
    assert _seen_while(log, monkeypatch, "scan", "--deep", "--json", "--keep-cache", log_dir).dropped == []
    assert resident(log) >= 0.95 * log.stat().st_size


def test_half_cached_segment_keeps_its_cached_half(log_dir, monkeypatch):
    """Only the pages that were not resident are dropped: the first half read before stays cached.

    What the scan advises away is recorded at ``posix_fadvise`` itself: no range of it reaches into the
    cached half. ``fincore`` then sees that half still cached, give or take what the kernel's own reclaim
    took meanwhile (two suites at once on a loaded machine: a page or two of a file read once, the first
    the kernel evicts; the drops recorded above are the tool's part, exact)."""
    log = _segment(log_dir)
    uncache(log)
    half = log.stat().st_size // 2
    with log.open("rb") as f:
        f.read(half)
        # the readahead of that read (still arriving) dropped: the cached half is exactly the first half
        time.sleep(0.2)
        os.posix_fadvise(f.fileno(), half, 0, os.POSIX_FADV_DONTNEED)
    before = resident(log)
    # the first half cached, give or take the kernel's reclaim before fincore looked (CI, two suites at
    # once: 4,026,368 of 4,048,200 bytes, five pages gone)
    assert before >= 0.95 * half
    seen = _seen_while(log, monkeypatch, "scan", "--deep", "--json", log_dir)
    dropped = seen.dropped
    cached_end = half - half % 4096  # the page astride the half was read: cached too
    assert dropped, "the scan dropped nothing of what it read"
    # exact: it dropped only pages it saw absent; in the cached half, those are the kernel's reclaim since
    # the read above (a few pages at most)
    assert seen.dropped_pages(log.stat().st_size) <= seen.absent, (dropped, sorted(seen.absent))
    reclaimed = {p for p in seen.absent if p < cached_end}
    assert len(reclaimed) * page_cache.PAGE <= 0.05 * half, sorted(reclaimed)
    after = resident(log)
    assert 0.95 * half <= after <= before + (256 << 10)  # the cached half (and a folio astride its end)


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    """A 48 MiB segment: several windows of the walk."""
    from logdoctor.sample.records import RecordDataSpec, write_segment

    path = tmp_path_factory.mktemp("page-cache-big") / "00000000000000000000.log"
    write_segment(path, RecordDataSpec(record_count=None, target_bytes=48 << 20, value_size=1024))
    return path


def test_chunked_walk_drops_behind_itself(big_log, monkeypatch):
    """The C walk read a chunk at a time (scan --deep of a big .log): its pages noted ahead of it (at least
    twice the file system's readahead) and dropped behind it, so the cache it fills stays bounded while it
    reads, not the whole file until its end."""
    if walk_ahead.walker() is None:
        pytest.skip("without the C extension the walk is the mapped one")
    log, size = big_log, big_log.stat().st_size
    uncache(log)
    page_cache.leave_as_found(True)
    monkeypatch.setattr(page_cache, "WINDOW", 4 << 20)
    monkeypatch.setattr(walk_ahead, "DISCIPLINE_EVERY", 1 << 20)
    resident_during: list[int] = []
    real_drop_behind = page_cache.CacheGuard.drop_behind

    def drop_behind(self, position):
        real_drop_behind(self, position)
        resident_during.append(sum(page_cache.resident_pages(self.fd, 0, size) or b"") * page_cache.PAGE)

    monkeypatch.setattr(page_cache.CacheGuard, "drop_behind", drop_behind)
    got = walk_ahead.read_walk(str(log), True, True, walk_ahead.new_chunk(512 << 10), 0)
    assert isinstance(got, walk_ahead.RawWalk) and got.size == size
    ahead = max(2 * page_cache.WINDOW, 2 * page_cache.readahead_bytes(log.stat().st_dev))
    assert len(resident_during) > 10
    # the walk's neighbourhood (its readahead, a large folio behind it), never the file
    assert max(resident_during) <= min(ahead + page_cache.FOLIO_LAG + walk_ahead.DISCIPLINE_EVERY, size // 2)
    assert resident(log) <= 0.05 * size


def test_the_kernels_two_answers_agree_with_fincore(log_dir):
    """What the guard asks (cachestat's count, mincore's page vector) is what fincore reports."""
    log = _segment(log_dir)
    size = log.stat().st_size
    uncache(log)
    with log.open("rb") as f:
        f.read(size // 3)
        time.sleep(0.2)
        os.posix_fadvise(f.fileno(), size // 3, 0, os.POSIX_FADV_DONTNEED)
        vec = page_cache.resident_pages(f.fileno(), 0, size)
        counted = page_cache.cached_pages(f.fileno(), 0, size)
    assert vec is not None and sum(vec) * page_cache.PAGE == resident(log)
    assert counted is None or counted == sum(vec)

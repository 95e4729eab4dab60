"""Issue 35: ``kept_mappings.mappings_kept`` (used by `repair`, whose planning scan, index rebuild and scan
after read the same segments): a big file is mapped once and its mapping handed out again, only while it is
the same inode at the same size; the bytes seen are always the file's bytes as they are now."""

from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path

import pytest
from state_reads import read_through_state
from typer.testing import CliRunner

from logdoctor.checks.state import early_mappings, file_records, kept_mappings
from logdoctor.cli import commands  # noqa: F401
from logdoctor.cli.main import app
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

MIB = 1 << 20


@pytest.fixture
def maps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Files of 1 MiB or more are mapped (not read); the paths of every mapping made, in order."""
    made: list[str] = []
    real = mmap.mmap

    def counted(fd: int, *args, **kwargs):
        made.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd, *args, **kwargs)

    monkeypatch.setattr(early_mappings, "MMAP_THRESHOLD", MIB)
    monkeypatch.setattr(file_records, "MMAP_THRESHOLD", MIB)
    monkeypatch.setattr(mmap, "mmap", counted)
    return made


def test_same_file_mapped_once_while_same_inode_and_size(tmp_path: Path, maps: list[str]) -> None:
    f = tmp_path / "a.log"
    f.write_bytes(os.urandom(2 * MIB))
    with kept_mappings.mappings_kept():
        assert read_through_state(f) == (f.read_bytes(), True)
        assert read_through_state(f) == (f.read_bytes(), True)
        assert maps == [str(f)]
        # written in place at the same size: the kept mapping shows the new bytes, as a new one would
        with open(f, "r+b") as w:
            w.seek(MIB)
            w.write(b"\xab" * 4096)
        assert read_through_state(f)[0] == f.read_bytes()
        assert len(maps) == 1
        # truncated (a repair's cut) to another size: mapped anew, the old mapping left alone
        os.truncate(f, MIB + 100)
        assert read_through_state(f)[0] == f.read_bytes()
        assert len(maps) == 2
        # replaced by another file of the same size (an atomic write's rename): mapped anew
        g = tmp_path / "b.tmp"
        g.write_bytes(os.urandom(MIB + 100))
        os.replace(g, f)
        assert read_through_state(f)[0] == f.read_bytes()
        assert len(maps) == 3
    # outside it: mapped at each read and unmapped at release, as before
    assert read_through_state(f) == (f.read_bytes(), False)
    assert read_through_state(f) == (f.read_bytes(), False)
    assert len(maps) == 5


def test_kept_bytes_are_limited_and_unmapped_on_leaving(
    tmp_path: Path, maps: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [tmp_path / f"{i}.log" for i in range(3)]
    for f in files:
        f.write_bytes(os.urandom(2 * MIB))
    kept: list[mmap.mmap] = []
    with kept_mappings.mappings_kept(limit=5 * MIB):
        assert kept_mappings._kept is not None
        for f in files * 2:
            assert read_through_state(f)[0] == f.read_bytes()
        kept = list(kept_mappings._kept.maps.values())
        assert len(kept) == 2  # the first two fit the limit, the third is mapped and unmapped each time
        assert maps == [str(files[0]), str(files[1]), str(files[2]), str(files[2])]
    assert kept_mappings._kept is None
    assert all(m.closed for m in kept)


def test_small_and_sparse_files_are_never_kept(tmp_path: Path, maps: list[str]) -> None:
    small = tmp_path / "small.log"
    small.write_bytes(b"x" * 1000)
    sparse = tmp_path / "sparse.log"
    with open(sparse, "wb") as w:
        w.write(b"y" * 4096)
        w.truncate(4 * MIB)  # a hole after the first page
    with kept_mappings.mappings_kept():
        assert read_through_state(small)[0] == small.read_bytes()  # read, not mapped
        # mapped without MAP_POPULATE, not kept
        assert read_through_state(sparse) == (sparse.read_bytes(), False)
        assert maps == [str(sparse)]
        assert kept_mappings._kept is not None and not kept_mappings._kept.maps


def test_forked_child_maps_as_outside(tmp_path: Path, maps: list[str]) -> None:
    f = tmp_path / "a.log"
    f.write_bytes(os.urandom(2 * MIB))
    with kept_mappings.mappings_kept():
        pid = os.fork()
        if pid == 0:  # a pool worker forked while the parent keeps mappings
            try:
                ok = read_through_state(f) == (f.read_bytes(), False)
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


def test_repair_maps_each_segment_once(tmp_path: Path, maps: list[str]) -> None:
    """`repair --apply` of a partition whose indexes are gone: its planning scan (the active segment
    with CRCs, the others for their timestamps), the rebuild of every segment and the scan after read
    each .log from one mapping; the indexes written are the broker's bytes."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=24_000, value_size=200, segment_bytes=2 * MIB)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    part = log_dir / "t-0"
    logs = sorted(part.glob("*.log"))
    assert len(logs) >= 3 and all(p.stat().st_size >= MIB for p in logs[:-1])
    expected = {}
    for p in sorted(part.glob("*index")):
        expected[p.name] = p.read_bytes()
        p.unlink()
    res = CliRunner().invoke(
        app, ["repair", "--apply", "--jobs", "1", "--backup-dir", str(tmp_path / "backup"), str(log_dir)]
    )
    assert res.exit_code == 0, res.output
    big = [str(p) for p in logs if p.stat().st_size >= MIB]
    assert sorted(m for m in maps if m.endswith(".log")) == sorted(big)  # each once
    assert {p.name: p.read_bytes() for p in sorted(part.glob("*index"))} == expected


# --- a clean CRC walk of a kept mapping, reused by the rebuild while the file is provably unchanged -----


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> float:
    """Files count as settled 50 ms after their last change (not 1 s): the seconds a test sleeps."""
    monkeypatch.setattr(early_mappings, "SETTLED_NS", 50_000_000)
    monkeypatch.setattr(kept_mappings, "SETTLED_NS", 50_000_000)
    return 0.1


def _segment(tmp_path: Path) -> tuple[Path, Path]:
    """A log dir's only partition with one big segment (mapped: MMAP_THRESHOLD is 1 MiB in these tests)
    and its .log, generated with its indexes as the broker writes them."""
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=8_000, value_size=200, segment_bytes=8 * MIB)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    (log,) = sorted((log_dir / "t-0").glob("*.log"))
    assert log.stat().st_size >= MIB
    return log_dir, log


def test_a_clean_crc_walk_is_known_while_the_file_is_unchanged(
    tmp_path: Path, maps: list[str], settled: float
) -> None:
    import time

    _, log = _segment(tmp_path)
    time.sleep(settled)
    with kept_mappings.mappings_kept():
        assert kept_mappings.crc_walked_unchanged(log) is None  # nothing walked yet
        assert file_records.walk_file(str(log), False, False).clean
        assert kept_mappings.crc_walked_unchanged(log) is None  # walked without CRCs
        assert file_records.walk_file(str(log), True, False).clean
        unchanged = kept_mappings.crc_walked_unchanged(log)
        assert unchanged is not None and unchanged()
        # one byte of a batch changed in place, the mtime put back as it was: its ctime is not
        st = _flip_a_middle_byte_keeping_mtime(log)
        assert log.stat().st_mtime_ns == st.st_mtime_ns and log.stat().st_size == st.st_size
        assert not unchanged()
        assert kept_mappings.crc_walked_unchanged(log) is None
        # and its CRC walk now finds the damage: never noted as clean
        time.sleep(settled)
        assert not file_records.walk_file(str(log), True, False).clean
        assert kept_mappings.crc_walked_unchanged(log) is None
    assert kept_mappings.crc_walked_unchanged(log) is None  # outside mappings_kept: nothing known


def _flip_a_middle_byte_keeping_mtime(path: str | os.PathLike[str]) -> os.stat_result:
    """One byte in the middle of ``path`` changed in place, its mtime put back (its ctime moves): the
    stat from before."""
    st = os.stat(path)
    with open(path, "r+b") as w:
        w.seek(st.st_size // 2)
        byte = w.read(1)
        w.seek(st.st_size // 2)
        w.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return st


def test_a_file_changed_just_before_its_walk_is_never_known_clean(tmp_path: Path, maps: list[str]) -> None:
    """A change within SETTLED_NS of the walk (here: the file was just written) could share its ctime with
    a later change (the file system's clock ticks coarsely): such a walk is not noted."""
    _, log = _segment(tmp_path)
    with kept_mappings.mappings_kept():
        assert file_records.walk_file(str(log), True, False).clean
        assert kept_mappings.crc_walked_unchanged(log) is None


def test_repair_rebuilds_the_active_segment_without_its_crcs_again_or_checks_them_when_changed(
    tmp_path: Path, maps: list[str], settled: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repair --apply` of a partition whose indexes are gone: the active segment's rebuild reads the
    mapping its planning scan walked with CRCs, and checks none again (the broker's bytes written); when
    the .log changes in place after that walk (its mtime put back), the rebuild checks every CRC and
    finds the batch changed (nothing rebuilt past it)."""
    import time

    from logdoctor.repair.rules import indexes

    seen: list[int] = []
    real_rebuild = indexes.rebuild_indexes

    def rebuild(view, base, **kw):
        seen.append(kw["crc_checked_until"])
        return real_rebuild(view, base, **kw)

    monkeypatch.setattr(indexes, "rebuild_indexes", rebuild)
    log_dir, log = _segment(tmp_path)
    part = log.parent
    expected = {}
    for p in sorted(part.glob("*index")):
        expected[p.name] = p.read_bytes()
        p.unlink()
    time.sleep(settled)
    argv = ["repair", "--apply", "--jobs", "1", "--backup-dir", str(tmp_path / "backup"), str(log_dir)]
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 0, res.output
    assert seen == [log.stat().st_size]  # not checked again: the planning scan's walk of the same bytes
    assert {p.name: p.read_bytes() for p in sorted(part.glob("*index"))} == expected

    # again, with one byte of a batch changed after the planning scan walked it (mtime put back)
    for p in part.glob("*index"):
        p.unlink()
    real_known = indexes.crc_walked_unchanged

    def changed_first(path):
        _flip_a_middle_byte_keeping_mtime(path)
        return real_known(path)

    monkeypatch.setattr(indexes, "crc_walked_unchanged", changed_first)
    seen.clear()
    time.sleep(settled)
    shutil.rmtree(tmp_path / "backup")
    CliRunner().invoke(app, argv)
    assert seen == [0]  # every CRC checked: the rebuild stops at the changed batch
    built = (part / log.with_suffix(".index").name).read_bytes()
    assert len(built) < len(expected[log.with_suffix(".index").name])


# --- unmapped ahead, while a `repair`'s apply waits on the disk ----------------------------------------


def _partition_of_segments(tmp_path: Path) -> tuple[Path, list[Path]]:
    topics = [
        TopicSpec("t", partitions=1, records_per_partition=24_000, value_size=200, segment_bytes=2 * MIB)
    ]
    log_dir, _ = generate_log_dir(tmp_path / "fleet", topics)
    logs = sorted((log_dir / "t-0").glob("*.log"))
    assert len(logs) >= 4 and all(p.stat().st_size >= MIB for p in logs[:-1])
    return log_dir, logs


def test_unmap_ahead_keeps_only_the_mappings_walked_clean_with_crcs(
    tmp_path: Path, maps: list[str], settled: float
) -> None:
    """Before a repair's apply: the mappings its scan after will not walk again (all but those a CRC walk
    found clean: the active segments) are unmapped on a thread; a file read after that is mapped anew."""
    import time

    _, logs = _partition_of_segments(tmp_path)
    time.sleep(settled)
    active, other = logs[-1], logs[0]
    if active.stat().st_size < MIB:
        active = logs[-2]
    with kept_mappings.mappings_kept():
        assert file_records.walk_file(str(active), True, False).clean  # noted: its CRCs walked clean
        assert read_through_state(other) == (other.read_bytes(), True)
        kept = kept_mappings._kept
        assert kept is not None and len(kept.maps) == 2
        other_map = next(mm for key, mm in kept.maps.items() if key not in kept.crc_clean)
        kept_mappings.unmap_ahead()
        assert len(kept.maps) == 1 and len(kept.behind) == 1
        kept.behind[0].join()
        assert other_map.closed
        assert kept_mappings.crc_walked_unchanged(active) is not None  # still kept, still known
        assert read_through_state(active) == (active.read_bytes(), True)
        assert read_through_state(other) == (other.read_bytes(), True)  # mapped anew
        assert maps.count(str(other)) == 2 and maps.count(str(active)) == 1
    kept_mappings.unmap_ahead()  # outside mappings_kept: nothing

"""``checks.indexes.whole_index_ok`` (the numpy-free pass over an index of any size that lets a good
index skip the numpy checks) says "ok" exactly when the numpy checks of ``analyze_index`` find nothing
in an index whose every slot is real: on generated indexes (plausible ones, and ones damaged a little)
and on every index of the real log dirs (../shared/realworld, ../shared/forensics, ../shared/tiered)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import realworld
import tiers
from logdoctor.checks import indexes
from logdoctor.checks.indexes import Entries, whole_index_ok
from logdoctor.formats.index import IndexKind, real_entry_count

KINDS = {".index": IndexKind.OFFSET, ".timeindex": IndexKind.TIME}


def numpy_ok(kind: IndexKind, data: bytes, base: int, log_size: int, next_base: int | None) -> bool:
    """The numpy checks of analyze_index find nothing and every slot is a real entry."""
    spec = indexes._SPECS[kind]
    n = len(data)
    if n == 0:
        return True
    if n % spec.entry_size or real_entry_count(data, spec.entry_size) != n // spec.entry_size:
        return False
    e = Entries(kind, data, base, path="i", log_name="l", log_size=log_size, next_base=next_base)
    for find, _ in spec.checks:
        bad = find(e)
        if bad is not None and bad.any():
            return False
    return True


@st.composite
def index_cases(draw):
    kind = draw(st.sampled_from([IndexKind.OFFSET, IndexKind.TIME]))
    base = draw(st.sampled_from([0, 100, 12345678901]))
    n = draw(st.integers(0, 120))  # on both sides of the old 32-entry plain-Python limit
    rel, pos, ts = [], [], []
    r, p, t = 0, 0, 10**12
    for _ in range(n):
        r += draw(st.sampled_from([1, 1, 4, 0]))
        p += draw(st.sampled_from([4096, 4200, 0]))
        t += draw(st.sampled_from([0, 1, 7]))
        rel.append(r)
        pos.append(p)
        ts.append(t)
    for _ in range(draw(st.integers(0, 3))):  # damage: a slot set to a value near or far, or zeroed
        if n:
            i = draw(st.integers(0, n - 1))
            col = draw(st.sampled_from([rel, pos, ts]))
            value = draw(st.sampled_from([0, -1, col[i] - 1, col[i] + 1, 2**31 - 1]))
            # an int32 column stays an int32 (a slot damaged twice: 2**31 - 1, then + 1, cannot be packed)
            col[i] = value if col is ts else max(-(2**31), min(value, 2**31 - 1))
    if kind is IndexKind.OFFSET:
        data = b"".join(struct.pack(">ii", a, b) for a, b in zip(rel, pos, strict=True))
    else:
        data = b"".join(struct.pack(">qi", a, b) for a, b in zip(ts, rel, strict=True))
    data += b"\0" * draw(st.sampled_from([0, 0, 0, 1, indexes.ENTRY_SIZE[kind] * 2]))  # cut, untrimmed
    log_size = draw(st.sampled_from([p + 4096, p, max(p - 1, 0), 2**31]))
    next_base = draw(st.sampled_from([None, base + r + 1, base + r, base + r // 2]))
    return kind, data, base, log_size, next_base


@settings(max_examples=tiers.examples(600))
@given(index_cases())
def test_whole_index_ok_agrees_with_the_numpy_checks(case) -> None:
    kind, data, base, log_size, next_base = case
    args = (kind, data, base, log_size, next_base)
    assert whole_index_ok(*args) == numpy_ok(*args)


def _real_indexes() -> list[Path]:
    roots = [realworld.require(), realworld.require_forensics(), realworld.require_tiered()]
    return sorted(p for root in roots for p in root.rglob("*") if p.suffix in KINDS and p.is_file())


def test_whole_index_ok_agrees_with_the_numpy_checks_on_real_indexes() -> None:
    paths = _real_indexes()
    assert len(paths) > 100
    big = 0
    for path in paths:
        data = path.read_bytes()
        base = int(path.stem) if path.stem.isdigit() else 0
        log = path.with_suffix(".log")
        log_size = log.stat().st_size if log.exists() else 0
        bases = sorted(int(p.stem) for p in path.parent.glob("*.log") if p.stem.isdigit())
        later = [b for b in bases if b > base]
        for next_base in {later[0] if later else None, None}:
            kind = KINDS[path.suffix]
            got = whole_index_ok(kind, data, base, log_size, next_base)
            assert got == numpy_ok(kind, data, base, log_size, next_base), path
        big += len(data) > 32 * indexes.ENTRY_SIZE[KINDS[path.suffix]]
    assert big > 0  # indexes past the old 32-entry limit are among them


@pytest.mark.parametrize("kind", [IndexKind.OFFSET, IndexKind.TIME])
def test_a_big_good_index_is_checked_without_numpy(kind: IndexKind, monkeypatch: pytest.MonkeyPatch) -> None:
    """A good index of 65,000 entries (a rebuilt 256 MiB segment's) passes without numpy."""
    from logdoctor.formats import lazy_numpy

    def refuse() -> None:
        raise AssertionError("numpy imported")

    monkeypatch.setattr(lazy_numpy, "_import_numpy", refuse)
    monkeypatch.setattr(lazy_numpy, "np", lazy_numpy._Numpy())
    n = 65_000
    if kind is IndexKind.OFFSET:
        data = b"".join(struct.pack(">ii", 1 + 4 * i, 4096 * i) for i in range(n))
    else:
        data = b"".join(struct.pack(">qi", 10**12 + i, 1 + 4 * i) for i in range(n))
    assert whole_index_ok(kind, data, 0, 4096 * n, 4 * n + 2)


def test_plain_checks_only_while_they_cost_less_than_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small indexes always; bigger ones within the process's budget of entries (then numpy, whose
    import pays for itself); with numpy imported already, big ones go to it at once."""
    monkeypatch.setattr(indexes, "_plain_left", 10_000)
    monkeypatch.delitem(__import__("sys").modules, "numpy", raising=False)
    assert indexes._plain_pays(indexes._SMALL)
    assert indexes._plain_pays(6_000) and indexes._plain_left == 4_000
    assert not indexes._plain_pays(6_000) and indexes._plain_left == 4_000
    assert indexes._plain_pays(4_000) and indexes._plain_left == 0
    assert indexes._plain_pays(indexes._SMALL)


@pytest.mark.realworld
@pytest.mark.parametrize("names", realworld.log_dir_tiers())
@pytest.mark.parametrize("budget", [0, 10**9], ids=["numpy", "plain"])
def test_a_scan_finds_the_same_whichever_way_its_indexes_are_checked(
    budget: int, names: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real log dir, and a generated one with indexes of ~70 entries, one of them damaged, scanned
    with every index checked the numpy way and with every good one checked in plain Python: the same
    report."""
    from logdoctor.checks.context import ScanOptions
    from logdoctor.checks.scanner import scan
    from logdoctor.sample.logdir import TopicSpec, generate_log_dir

    spec = TopicSpec(
        "orders", partitions=2, records_per_partition=900, value_size=1000, segment_bytes=300_000
    )
    copy, _ = generate_log_dir(tmp_path / "fleet", [spec])
    first = sorted((copy / "orders-0").glob("*.index"))[0]  # an inactive segment's, of ~70 entries
    data = bytearray(first.read_bytes())
    assert len(data) > 64 * 8
    data[404:408], data[412:416] = data[412:416], data[404:408]  # entries 50 and 51: positions swapped
    first.write_bytes(bytes(data))
    reports = []
    for plain_left in (0, budget):
        monkeypatch.setattr(indexes, "_plain_left", plain_left)
        options = ScanOptions(now_ms=1_800_000_000_000)
        dirs = [*(realworld.REALWORLD / n for n in names), copy]
        got = [scan([d], options, jobs=1).to_json() for d in dirs]
        for rep in got:
            rep.pop("elapsed_s", None)
            for d in rep["log_dirs"]:
                d.pop("disk")  # the file system's use moves while others write
        reports.append(got)
    assert any(f["code"] == "INDEX_CORRUPT" for f in reports[0][-1]["findings"])
    assert reports[0] == reports[1]

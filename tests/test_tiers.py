"""What `make test-fast` runs of the long matrices (tests/tiers.py) and of the real log dirs
(realworld.FAST_LOG_DIRS): every kind of real data the manifest names is still read by test-fast, and
every other case is marked ``slow`` (`make test`, CI), never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

import realworld
import tiers


def _kinds(entry: dict, root: Path) -> set[str]:
    """What the manifest (and the folder) says one real log dir holds, as words: the kinds test-fast must
    still meet."""
    kinds = {f"mode={entry['mode']}", f"meta.properties v{entry['meta_properties'].get('version')}"}
    kinds |= {f"has {k}" for k, v in entry["has"].items() if v}
    kinds |= {f"magic {m}" for m in entry["magic_versions"]}
    kinds |= {f"codec {c}" for c in entry["codecs"]}
    kinds |= {"kraft snapshots"} if entry["kraft_snapshots"] else set()
    kinds |= {"control batches"} if entry["control_batches"] else set()
    kinds |= {"transactional batches"} if entry["transactional_batches"] else set()
    kinds |= {"crc errors"} if entry["crc_errors"] else set()
    kinds |= {"problems"} if entry["problems"] else set()
    kinds |= {"no partition.metadata"} if not any(root.glob("*/partition.metadata")) else set()
    if any(len(list(p.glob("*.log"))) > 1 for p in root.iterdir() if p.is_dir()):
        kinds.add("partitions of several segments")
    if any(root.glob("*/*.index")):
        kinds.add("index files")
    return kinds


def test_test_fasts_log_dirs_hold_every_kind_the_others_hold(realworld_dir: Path) -> None:
    entries = {e["name"]: e for e in realworld.manifest()["entries"]}
    assert set(entries) >= realworld.FAST_LOG_DIRS
    fast: set[str] = set()
    every: set[str] = set()
    for name, entry in entries.items():
        kinds = _kinds(entry, realworld_dir / name)
        every |= kinds
        if name in realworld.FAST_LOG_DIRS:
            fast |= kinds
    assert every - fast == set()
    assert {"magic 1", "magic 2", "codec snappy", "mode=kraft", "kraft snapshots", "problems"} <= fast


def test_the_other_real_log_dirs_are_marked_slow_not_dropped(realworld_dir: Path) -> None:
    names = realworld.log_dir_names()
    params = realworld.params([realworld_dir / n for n in names])
    marked = {p.id: any(m.name == "slow" for m in p.marks) for p in params}
    assert marked == {n: n not in realworld.FAST_LOG_DIRS for n in names}
    assert [p.id for p in realworld.name_params()] == names
    assert {p.id: bool(p.marks) for p in realworld.name_params()} == marked
    fast, rest = realworld.log_dir_tiers()
    assert sorted(fast.values[0] + rest.values[0]) == sorted(names)
    assert not fast.marks and [m.name for m in rest.marks] == ["slow"]


def test_one_case_of_a_matrix_in_test_fast() -> None:
    cases = tiers.one_in_test_fast(["a", ("b", 1), "c"], fast=("b", 1))
    assert [c.values for c in cases] == [("a",), ("b", 1), ("c",)]
    assert [[m.name for m in c.marks] for c in cases] == [["slow"], [], ["slow"]]
    with pytest.raises(ValueError, match="not one of"):
        tiers.one_in_test_fast(["a", "b"], fast="c")


def test_property_tests_try_every_example_in_make_test_and_a_quarter_in_test_fast(monkeypatch) -> None:
    """Only the Makefile's test-fast target sets LOGDOCTOR_TEST_TIER; make test (CI) runs as written."""
    import re
    import subprocess
    import sys

    makefile = (Path(__file__).resolve().parent.parent / "Makefile").read_text()
    targets = dict(re.findall(r"^([\w-]+):.*\n((?:\t.*\n)+)", makefile, re.M))
    assert "LOGDOCTOR_TEST_TIER=fast" in targets["test-fast"]
    assert "LOGDOCTOR_TEST_TIER" not in targets["test"]
    monkeypatch.setattr(tiers, "TEST_FAST", False)
    assert [tiers.examples(n) for n in (5, 25, 300)] == [5, 25, 300]
    monkeypatch.setattr(tiers, "TEST_FAST", True)
    assert [tiers.examples(n) for n in (5, 25, 300)] == [5, 10, 75]
    # CI refuses it (tests/conftest.py), before any test runs
    tests = str(Path(__file__).resolve().parent)
    env = {"PATH": "/usr/bin:/bin", "CI": "true", "LOGDOCTOR_TEST_TIER": "fast"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                           f"{tests}/test_tiers.py"], capture_output=True, text=True, env=env)  # fmt: skip
    assert done.returncode != 0 and "CI (make test) tries every example" in done.stdout + done.stderr

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
    import subprocess
    import sys

    targets = tiers.make_targets()
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


def test_the_budget_leaves_the_slow_tests_to_make_test_and_each_module_its_cheapest() -> None:
    seconds = {
        "tests/a/test_x.py::test_quick": 0.2,
        "tests/a/test_x.py::test_slow[1]": 1.0,
        "tests/a/test_x.py::test_slow[2]": 3.5,
        "tests/b/test_y.py::TestK::test_one": 2.0,
        "tests/b/test_y.py::TestK::test_two": 1.5,
        "tests/c/test_z.py::test_only": 9.0,
    }
    assert tiers.choose_over_budget(seconds, 1.0) == {
        "tests/a/test_x.py::test_slow[1]": 1.0,
        "tests/a/test_x.py::test_slow[2]": 3.5,
        "tests/b/test_y.py::TestK::test_one": 2.0,
    }
    assert tiers.choose_over_budget(seconds, 5.0) == {}


def test_the_budget_marks_only_the_named_items_slow() -> None:
    class Item:
        def __init__(self, nodeid: str) -> None:
            self.nodeid, self.marks = nodeid, []

        def add_marker(self, mark) -> None:
            self.marks.append(mark.name)

    items = [Item("tests/a/test_x.py::test_slow[1]"), Item("tests/a/test_x.py::test_slow[10]")]
    assert tiers.apply_budget(items, {"tests/a/test_x.py::test_slow[1]": 1.0}) == 1
    assert [i.marks for i in items] == [["slow"], []]


def test_every_test_the_budget_names_is_a_test_of_the_suite(tmp_path) -> None:
    """The committed list names tests that exist (a renamed or removed test is a stale line: run
    scripts/fast-tier-budget.py again), each at or over the budget, and a line reads back."""
    root = Path(__file__).resolve().parent.parent
    over = tiers.over_budget()
    assert over, "tests/fast_tier_budget.txt is missing or empty"
    sources: dict[str, str] = {}
    for node, seconds in over.items():
        module, *names = node.split("::")
        if module not in sources:
            path = root / module
            assert path.is_file(), f"{node}: no module {module}"
            sources[module] = path.read_text()
        assert seconds >= tiers.BUDGET_SECONDS, node
        function = names[-1].split("[", 1)[0]
        assert f"def {function}(" in sources[module], f"{node}: no test {function} in {module}"
    made = tmp_path / "budget.txt"
    made.write_text("# a comment\ntests/a/test_x.py::test_slow[a b]\t1.25\n\n")
    assert tiers.over_budget(made) == {"tests/a/test_x.py::test_slow[a b]": 1.25}
    assert tiers.over_budget(tmp_path / "none.txt") == {}

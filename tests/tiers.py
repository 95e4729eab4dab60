"""Which cases of a long matrix `make test-fast` runs (docs/install.md, "Between changes"): one, named
here at the matrix; every other case is marked ``slow`` and runs in `make test` (CI). The real log dirs are
tiered the same way in tests/realworld.py (:data:`realworld.FAST_LOG_DIRS`). A property test (hypothesis)
tries a quarter of its examples in test-fast (:func:`examples`, and the ``test-fast`` profile of
tests/conftest.py for those that name no number), every one in `make test`.

The tier's time budget: a test whose own run (its call, not the fixtures it shares) took at least
:data:`BUDGET_SECONDS` in a measured test-fast run is named in ``tests/fast_tier_budget.txt`` and left to
`make test` (:func:`over_budget`, applied by tests/conftest.py in test-fast only), unless it is its module's
cheapest: every module test-fast ran keeps a test there. `python scripts/fast-tier-budget.py` measures the
tier with no budget and writes the file again (docs/tests.md)."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

# set by the Makefile's test-fast target only; `make test` (CI) never sets it
TEST_FAST = os.environ.get("LOGDOCTOR_TEST_TIER") == "fast"
# scripts/fast-tier-budget.py measures the tier with the budget off
BUDGET_ON = os.environ.get("LOGDOCTOR_TIER_BUDGET") != "off"
BUDGET_SECONDS = 0.75
BUDGET_FILE = Path(__file__).resolve().with_name("fast_tier_budget.txt")
MAKEFILE = Path(__file__).resolve().parent.parent / "Makefile"


def make_targets(makefile: Path = MAKEFILE) -> dict[str, str]:
    """The Makefile's targets: name -> its recipe's lines, as written."""
    return dict(re.findall(r"^([\w-]+):.*\n((?:\t.*\n)+)", makefile.read_text(), re.M))


def fast_tier_selection(makefile: Path = MAKEFILE) -> list[str]:
    """The ``-m`` selection of the Makefile's test-fast target as pytest arguments (``["-m", "not slow
    ..."]``): what scripts/fast-tier-budget.py measures is the tier the Makefile runs."""
    recipe = make_targets(makefile)["test-fast"]
    found = re.search(r"""\s(-m\s+(?:"[^"]*"|'[^']*'))""", recipe)
    if found is None:
        raise ValueError(f"{makefile}: test-fast's recipe selects no marker expression (-m)")
    return shlex.split(found.group(1))


def examples(n: int) -> int:
    """A property test's ``max_examples``: ``n`` in `make test` (CI), a quarter of it (at least 10) in
    `make test-fast`."""
    return max(10, n // 4) if TEST_FAST and n > 10 else n


def marks(in_test_fast: bool) -> tuple:
    """A case's marks: none when test-fast runs it, ``slow`` when only `make test` does."""
    return () if in_test_fast else (pytest.mark.slow,)


def one_in_test_fast(values: Iterable[object], fast: object) -> list:
    """``values`` for ``pytest.mark.parametrize`` (a tuple is one case of several arguments), the case
    equal to ``fast`` as it is and every other marked ``slow``; the ids are those pytest gives the values."""
    values = list(values)
    if fast not in values:
        raise ValueError(f"{fast!r} is not one of the matrix's cases {values!r}")
    return [
        pytest.param(*(v if isinstance(v, tuple) else (v,)), marks=marks(v == fast))
        for v in values
    ]


def over_budget(path: Path = BUDGET_FILE) -> dict[str, float]:
    """The tests test-fast leaves to `make test` for their time: node id -> the seconds measured (one
    ``node-id<TAB>seconds`` a line; ``#`` starts a comment)."""
    out: dict[str, float] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            node, _, seconds = line.rpartition("\t")
            out[node] = float(seconds)
    return out


def choose_over_budget(call_seconds: Mapping[str, float], budget: float = BUDGET_SECONDS) -> dict[str, float]:
    """From one test-fast run's call time per node id: those at or over ``budget``, but a module's
    cheapest test when every one of its tests is (the tier still runs each module it ran)."""
    by_module: dict[str, list[tuple[float, str]]] = {}
    for node, seconds in call_seconds.items():
        by_module.setdefault(node.split("::", 1)[0], []).append((seconds, node))
    out: dict[str, float] = {}
    for cases in by_module.values():
        over = [(s, n) for s, n in cases if s >= budget]
        if len(over) == len(cases):
            over.remove(min(over))
        out.update((n, s) for s, n in over)
    return dict(sorted(out.items()))


def apply_budget(items: list, over: Mapping[str, float]) -> int:
    """Mark ``slow`` every collected item ``over`` names (test-fast's ``-m "not slow"`` then leaves it to
    `make test`); how many were marked."""
    marked = 0
    for item in items:
        if item.nodeid in over:
            item.add_marker(pytest.mark.slow)
            marked += 1
    return marked

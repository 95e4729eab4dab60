"""Which cases of a long matrix `make test-fast` runs (docs/install.md, "Between changes"): one, named
here at the matrix; every other case is marked ``slow`` and runs in `make test` (CI). The real log dirs are
tiered the same way in tests/realworld.py (:data:`realworld.FAST_LOG_DIRS`). A property test (hypothesis)
tries a quarter of its examples in test-fast (:func:`examples`, and the ``test-fast`` profile of
tests/conftest.py for those that name no number), every one in `make test`."""

from __future__ import annotations

import os
from collections.abc import Iterable

import pytest

# set by the Makefile's test-fast target only; `make test` (CI) never sets it
TEST_FAST = os.environ.get("LOGDOCTOR_TEST_TIER") == "fast"


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

"""Which cases of a long matrix `make test-fast` runs (README "Quick start", "Between changes"): one, named
here at the matrix; every other case is marked ``slow`` and runs in `make test` (CI). The real log dirs are
tiered the same way in tests/realworld.py (:data:`realworld.FAST_LOG_DIRS`)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


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

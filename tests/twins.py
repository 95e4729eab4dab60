"""Run code with the pure-Python twins in place of the C extension (the decoder and the index rebuild's
fast lane are chosen once at import; tests compare the two in one process by swapping them here)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from logdoctor.formats import batch_v2, recovery

T = TypeVar("T")


@contextmanager
def pure_python() -> Iterator[None]:
    saved = batch_v2.DECODERS, recovery.FAST_LANE
    batch_v2.DECODERS, recovery.FAST_LANE = batch_v2.PURE_PYTHON, None
    try:
        yield
    finally:
        batch_v2.DECODERS, recovery.FAST_LANE = saved


def pure(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with the pure-Python twins."""
    with pure_python():
        return fn(*args, **kwargs)


def run(use_pure: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn`` with the pure-Python twins when ``use_pure``, else with what was chosen at import."""
    return pure(fn, *args, **kwargs) if use_pure else fn(*args, **kwargs)

"""Tests of code that runs without the GIL: the same work from several threads at once, in a different
order on each, must give every thread the serial results."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def shuffled_rounds(keys: Sequence[T], seed: int, rounds: int = 3) -> Iterator[list[T]]:
    """``rounds`` times the keys, in one order of the seed's."""
    order = list(keys)
    random.Random(seed).shuffle(order)
    for _ in range(rounds):
        yield order


def failures_on_threads(worker: Callable[[int], list[str]], threads: int = 4) -> list[str]:
    """``worker(seed)`` on ``threads`` threads at once (seeds 0..threads-1); every failure they name."""
    failures: list[str] = []

    def run(seed: int) -> None:
        failures.extend(worker(seed))

    started = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join()
    return failures

"""How many inputs the typed decoders' property tests try (issue 75; docs/reliability.md, "Hostile typed
input"), and what a long run of them measured.

CI (`make test`) runs each test's own count (a quarter in `make test-fast`: :func:`tiers.examples`). The long
fuzz run (`make fuzz`, ``FUZZ_EXAMPLES=N``, as tests/fuzz) runs ``N`` examples of each, scaled by what an
example holds so that every format gets at least ``N`` payloads and about as many as the others:

- Avro (tests/typed/test_avro_property.py, two tests, 1 to 4 payloads an example, each through both readers)
  and the registered Protobuf ``payments`` schema (1 to 8 payloads): ``N`` examples each;
- Protobuf with random schemas (protoc compiles each example's schema: ~0.2 s): ``N / 20`` each;
- JSON Schema and Connect JSON (tests/typed/test_json_hostile.py, one payload an example through 5 decoders
  and a Connect envelope): ``4 N``.

With ``FUZZ_TYPED_REPORT=PATH`` set, the run writes to PATH, per test, the examples and payloads tried and the
slowest example (seconds, its data generation included), and the process's peak RSS: the figures of the
table in docs/reliability.md.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import resource
import time
from collections.abc import Callable
from typing import Any

import tiers

FUZZ = int(os.environ["FUZZ_EXAMPLES"]) if "FUZZ_EXAMPLES" in os.environ else None


def examples(ci: int, per_fuzz_example: float = 1.0) -> int:
    """A typed property test's ``max_examples``: ``ci`` in `make test` (a quarter in `make test-fast`), or
    ``FUZZ_EXAMPLES * per_fuzz_example`` in the long fuzz run (never fewer than ``ci``)."""
    if FUZZ is None:
        return tiers.examples(ci)
    return max(ci, round(FUZZ * per_fuzz_example))


_REPORT = os.environ.get("FUZZ_TYPED_REPORT")
_STATS: dict[str, dict[str, float]] = {}
_current: list[str] = []


def timed(test: Callable[..., None]) -> Callable[..., None]:
    """``test``'s examples counted and timed (under ``@given``: each call is one example)."""
    name = f"{test.__module__}::{test.__name__}"

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        stats = _STATS.setdefault(name, {"examples": 0, "payloads": 0, "slowest_s": 0.0})
        _current[:] = [name]
        started = time.perf_counter()
        try:
            test(*args, **kwargs)
        finally:
            stats["examples"] += 1
            stats["slowest_s"] = max(stats["slowest_s"], time.perf_counter() - started)

    return run


def payloads(n: int) -> None:
    """``n`` more payloads tried by the example that runs (:func:`timed`)."""
    if _current:
        _STATS[_current[0]]["payloads"] += n


def _write() -> None:
    if _REPORT and _STATS:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        with open(_REPORT, "w") as f:
            json.dump({"fuzz_examples": FUZZ, "peak_rss_mib": peak, "tests": _STATS}, f, indent=1)


atexit.register(_write)

"""How long a test waits for something that must happen (a process to start or die, a thread to see an
event) before it calls it a hang: a generous bound, scaled by the machine's load.

A bound guards a hang; it never decides a case (a test waits for the event itself and checks what it
saw). On a loaded machine (two suites at once on 2 cores: load 10-50) a process gets a fraction of a
core, and a bound fit for a quiet one passes a hang verdict on a slow but healthy run: the bound is
multiplied by the run queue per core (1-minute load average / CPUs), at least 1 and at most
:data:`MAX_FACTOR`.
"""

from __future__ import annotations

import os

MAX_FACTOR = 20.0


def load_factor() -> float:
    """The 1-minute load average per CPU, at least 1 (1 on a system without one)."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average on this system
        return 1.0
    return min(MAX_FACTOR, max(1.0, load / (os.cpu_count() or 1)))


def patience(seconds: float) -> float:
    """``seconds`` (the bound on a quiet machine) scaled by :func:`load_factor`."""
    return seconds * load_factor()

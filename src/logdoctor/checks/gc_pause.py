"""Python's automatic garbage collector paused while a command turns a scan into output.

After a scan of 50,000 partitions the process holds a few hundred thousand long-lived objects (the
reports); the rows and JSON made from them are as many again, and every such allocation counts towards
the next automatic collection. Those collections find almost nothing (output rows hold no cycles) but
each full one walks every object alive: in ``inventory --depth quick`` of 50,000 empty partitions they
were 0.39 of the 0.67 CPU-s of its rows. The scan itself collects only young generations, by hand
(:func:`logdoctor.checks.scanner.scan`); this pauses the collector for the output that follows it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_automatic_collections"]


@contextmanager
def no_automatic_collections() -> Iterator[None]:
    """Within this block no automatic garbage collection runs (reference counting still frees what is
    not in a cycle); the collector is on again after it if it was before. Nested blocks are fine."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

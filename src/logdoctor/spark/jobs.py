"""Functions that run Spark jobs, run one after the other or at once (a thread each).

A small job's seconds are mostly the driver's: planning, scheduling, the commit of its output, a cold JVM's
first runs of that code. Independent small jobs submitted from threads of their own run at once (Spark
schedules jobs from several threads of one SparkContext), where one after the other they add up.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def run_jobs(
    jobs: dict[str, Callable[[], T]], *, together: bool = False, wait: bool = True
) -> dict[str, Future[T]]:
    """Run each of ``jobs`` (name: a function, of Spark jobs mostly) and return their Futures, by name.

    ``together`` (a small census: jobs of a task or two, whose time is the driver's planning, scheduling
    and commit): each in a thread of its own, so Spark runs them at once; else one after the other, in
    order, here. ``wait``: return when all are done, the first failure raised; else at once."""
    import threading

    futures: dict[str, Future[T]] = {name: Future() for name in jobs}

    def run(name: str) -> None:
        if futures[name].set_running_or_notify_cancel():
            try:
                futures[name].set_result(jobs[name]())
            except BaseException as exc:  # raised by result(), where the job's result is taken
                futures[name].set_exception(exc)

    if not together:
        for name in jobs:
            run(name)
    else:
        for name in jobs:
            threading.Thread(target=run, args=(name,), name=f"logdoctor-{name}", daemon=True).start()
    if wait:
        for f in futures.values():
            f.result()
    return futures

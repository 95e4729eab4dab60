"""A scan's process pool stopped at once (Ctrl-C, or the caller stopping early): the futures ``map`` has
cancelled must not come back as an InvalidStateError traceback from the pool's manager thread on stderr
(Python 3.11's ``terminate_broken``, gh-107219), the traceback that preceded `scan --deep -j 2`'s one
"interrupted" line in a CI run."""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import pytest

from logdoctor.checks import scanner
from patience import patience


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _pool_with_cancelled_futures() -> ProcessPoolExecutor:
    """Two workers busy, 38 tasks queued, then cancelled as ``Executor.map``'s iterator cancels them."""
    ex = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
    futures = [ex.submit(_sleep, 0.5) for _ in range(40)]
    time.sleep(0.1)
    for f in futures:
        f.cancel()
    return ex


@pytest.fixture
def thread_exceptions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_type.__name__))
    return seen


def _until(done: Callable[[], object], seconds: float = 30.0) -> None:
    """Wait for ``done()`` (a hang guard of :func:`patience` scaled ``seconds``: under load the manager
    thread may take longer than any fixed sleep to see its workers dead)."""
    deadline = time.monotonic() + patience(seconds)
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)


def _shutdown_late(ex: ProcessPoolExecutor) -> None:
    """The pool's own shutdown once its manager thread has seen its workers dead (the pool marked broken):
    the order in which the error happens (it happened in ~1 stop in 10 without the wait). A fixed 0.5 s
    was not always enough on a loaded machine."""
    real = ex.shutdown

    def late(*args: object, **kwargs: object) -> None:
        _until(lambda: ex._broken)  # type: ignore[attr-defined]
        real(*args, **kwargs)

    ex.shutdown = late  # type: ignore[method-assign]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 ignores the error itself (gh-107219)")
def test_without_the_guard_the_manager_thread_raises(thread_exceptions: list[str]) -> None:
    ex = _pool_with_cancelled_futures()
    for worker in list(ex._processes.values()):  # type: ignore[union-attr]
        worker.terminate()
    _until(lambda: thread_exceptions)  # the manager thread's error, however late under load
    ex.shutdown(wait=True, cancel_futures=True)
    assert thread_exceptions == ["InvalidStateError"]


def test_stop_pool_leaves_no_thread_exception(thread_exceptions: list[str]) -> None:
    for _ in range(3):
        ex = _pool_with_cancelled_futures()
        _shutdown_late(ex)
        scanner._stop_pool(ex)
        # terminated (SIGTERM) workers exit when the kernel runs them: waited for, a hang guard's time
        _until(lambda: not any(p.is_alive() for p in multiprocessing.active_children()))
        assert not any(p.is_alive() for p in multiprocessing.active_children())
    assert thread_exceptions == []
    assert threading.excepthook is not None and threading.excepthook.__name__ == "<lambda>"  # put back


def test_stop_pool_passes_other_threads_exceptions_on(thread_exceptions: list[str]) -> None:
    ex = _pool_with_cancelled_futures()
    real = ex.shutdown

    def with_another_thread_failing(*args: object, **kwargs: object) -> None:
        t = threading.Thread(target=lambda: 1 / 0)
        t.start()
        t.join()
        real(*args, **kwargs)

    ex.shutdown = with_another_thread_failing  # type: ignore[method-assign]
    scanner._stop_pool(ex)
    assert thread_exceptions == ["ZeroDivisionError"]


_TORN: dict[str, ProcessPoolExecutor] = {}


def _write_half_a_result() -> None:
    """In a worker: the first bytes of a result message (its length says 100 bytes, 10 follow), then
    nothing, as a worker terminated in the middle of sending its result leaves the pipe."""
    import os
    import struct

    fd = _TORN["ex"]._result_queue._writer.fileno()  # type: ignore[attr-defined]
    os.write(fd, struct.pack("!i", 100) + b"x" * 10)
    time.sleep(600)


def test_stop_pool_ends_when_a_worker_was_stopped_inside_a_result() -> None:
    """A worker terminated while it wrote its result leaves part of a message in the result pipe; the
    manager thread that began reading it waits for the rest. ``_stop_pool`` still returns, at once (it
    hung there for ever: `scan --deep -j 2` interrupted, 1 run in 10 at load 7)."""
    ex = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
    _TORN["ex"] = ex
    try:
        ex.submit(_write_half_a_result)
        time.sleep(1.0)  # the manager thread is inside recv(), waiting for the other 90 bytes
        stopper = threading.Thread(target=scanner._stop_pool, args=(ex,), daemon=True)
        stopper.start()
        stopper.join(timeout=patience(30))
        assert not stopper.is_alive(), "the pool never stopped: its manager thread waits for a torn result"
    finally:
        _TORN.clear()

"""A pytest plugin that lists the test modules which never call into the C extension
(``logdoctor.formats._speedups``), neither in their tests nor their fixtures nor at collection: the modules
``make asan-check`` leaves out (tests/asan_pure_python.txt), since a sanitized extension they never call
cannot report anything of them. Re-measure after changing tests/formats or tests/fuzz:

    PYTHONPATH=scripts .venv/bin/python -m pytest -q -p c_reach -p no:randomly tests/formats tests/fuzz

It prints each module that made no call. A module that runs Python in a process of its own may reach the
extension there, unseen: keep such modules in the sanitized run whatever this says."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import logdoctor.formats._speedups as _speedups
import pytest

_current: list[str | None] = [None]
_calls: dict[str, int] = {}


def _counted(fn: Any) -> Any:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if _current[0] is not None:
            _calls[_current[0]] = _calls.get(_current[0], 0) + 1
        return fn(*args, **kwargs)

    return call


# before any test module imports the extension's functions: a plugin loads before collection
for _name in dir(_speedups):
    if type(getattr(_speedups, _name)).__name__ == "builtin_function_or_method":
        setattr(_speedups, _name, _counted(getattr(_speedups, _name)))


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: Any) -> Iterator[None]:
    _current[0] = _module(collector.nodeid) or None
    _calls.setdefault(_current[0] or "", 0)
    yield
    _current[0] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
    _current[0] = _module(item.nodeid)
    _calls.setdefault(_current[0], 0)
    yield
    _current[0] = None


def pytest_terminal_summary(terminalreporter: Any) -> None:
    none = sorted(m for m, n in _calls.items() if n == 0 and m.endswith(".py"))
    terminalreporter.write_line(f"c_reach: {len(none)} modules never call logdoctor.formats._speedups:")
    for m in none:
        terminalreporter.write_line(f"  {m}")

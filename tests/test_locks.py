"""The two locks `make` installs with --no-deps (scripts/install-env.sh) are complete and agree.

requirements-run-lock.txt (`make demo`) must hold every package that kafka-logdoctor and its extras other
than ``test`` and ``docs`` need, at the versions of requirements-lock.txt (`make env`, `make test`),
which must hold everything the project needs with every extra. What each package needs is read from the
packages' own metadata (``Requires-Dist`` of the installed distributions, markers evaluated here), not
from the locks: a dependency added to pyproject.toml, or a new release's new requirement, that a lock
misses fails here instead of at run time (--no-deps installs only what a lock names)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
RUN_EXTRAS = ("spark", "report", "tables")
ALL_EXTRAS = (*RUN_EXTRAS, "test", "docs")
# built into the venv by the installer or needed only to build this checkout (--no-build-isolation)
BUILD_ONLY = {"setuptools"}


def read_lock(name: str) -> dict[str, str]:
    """{canonical name: version} of a lock file (``name[extra]==version`` lines, # comments)."""
    pins: dict[str, str] = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(\S+)", line)
        assert m, f"{name}: not a pin: {line!r}"
        key = canonicalize_name(m.group(1))
        assert key not in pins, f"{name}: {key} pinned twice"
        pins[key] = m.group(2)
    return pins


def closure(extras: tuple[str, ...]) -> set[str]:
    """Every distribution kafka-logdoctor[extras] needs, transitively, by the installed metadata."""
    seen: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [("kafka-logdoctor", frozenset(extras))]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, wanted = todo.pop()
        if (name, wanted) in done:
            continue
        done.add((name, wanted))
        seen.add(name)
        for text in metadata.requires(name) or ():
            req = Requirement(text)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return seen - {"kafka-logdoctor"}


@pytest.fixture(scope="module")
def full_lock() -> dict[str, str]:
    return read_lock("requirements-lock.txt")


@pytest.fixture(scope="module")
def run_lock() -> dict[str, str]:
    return read_lock("requirements-run-lock.txt")


def test_run_lock_pins_are_the_full_locks(run_lock, full_lock):
    assert {k: (v, full_lock.get(k)) for k, v in run_lock.items() if full_lock.get(k) != v} == {}


@pytest.mark.parametrize(("lock", "extras"), [("run", RUN_EXTRAS), ("full", ALL_EXTRAS)])
def test_lock_holds_what_the_project_needs(lock, extras, run_lock, full_lock):
    pins = run_lock if lock == "run" else full_lock
    needed = closure(extras)
    assert sorted(needed - set(pins)) == []
    for name in needed:  # the environment this runs in was installed from the locks
        assert metadata.version(name) == pins[name], name


def test_run_lock_holds_nothing_more(run_lock):
    """The demo's install is no bigger than it needs: no test tool in the run lock."""
    assert sorted(set(run_lock) - closure(RUN_EXTRAS) - BUILD_ONLY) == []

"""The CI rule of tests/conftest.py holds in a parallel run too: under ``CI=true`` a test that skips
for want of ../shared/realworld fails, whether it ran in this process or in a pytest-xdist worker (the
outcome is turned into a failure in the worker, and the report the worker sends says so), and the run
fails. Outside CI the same test skips with its reason.

The run is a real pytest on a real test of the suite (test_realworld_present.py), with the real data
pointed elsewhere (``LOGDOCTOR_REALWORLD``, read by tests/realworld.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _pytest(tmp_path: Path, ci: str, *args: str) -> subprocess.CompletedProcess[str]:
    # as make test runs it: not test-fast's tier (tests/tiers.py), which CI refuses
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CI", "LOGDOCTOR_TEST_TIER"))}
    env.update(CI=ci, LOGDOCTOR_REALWORLD=str(tmp_path / "no-realworld"))
    return subprocess.run(
        # --basetemp of its own: pytest's numbered temp dirs would make the run delete the oldest runs' trees
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfs", *args,
         "--basetemp", str(tmp_path / "basetemp"), "tests/test_realworld_present.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadfile"]], ids=["serial", "xdist"])
def test_a_realworld_skip_fails_in_ci(tmp_path: Path, workers: list[str]) -> None:
    done = _pytest(tmp_path, "true", *workers)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    # the skip is in the realworld_dir fixture: the setup's report is the one turned into a failure
    assert "1 error in" in done.stdout, out
    assert "CI must read ../shared/realworld, but this test skipped: realworld:" in done.stdout, out
    if workers:
        assert "bringing up nodes..." in done.stdout and "[gw" in done.stdout, out  # it ran in a worker


def test_outside_ci_a_realworld_skip_is_a_skip(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "", "-n", "2", "--dist", "loadfile")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "realworld: no real log dirs at" in done.stdout, done.stdout

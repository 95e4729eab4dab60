"""A pytest-xdist worker sees the terminal size variables of the run that started it: xdist starts its
workers with ``COLUMNS=80 LINES=24``, which made logdoctor's text output (cli/output.py: full lines
off a terminal unless ``COLUMNS`` is set) wrap at 80 columns in ``make test`` only, and tests reading a
printed command or a table cell fail there and pass alone (tests/conftest.py restores the
controller's values)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

PROBE = '''
import os

def test_terminal_env():
    print("TERMINAL", os.environ.get("COLUMNS"), os.environ.get("LINES"))
    assert os.environ.get("COLUMNS") == os.environ.get("EXPECT_COLUMNS")
    assert os.environ.get("LINES") == os.environ.get("EXPECT_LINES")
'''


@pytest.mark.parametrize("columns", [None, "132"], ids=["unset", "set"])
def test_a_worker_has_the_controllers_terminal_size(tmp_path: Path, columns: str | None) -> None:
    probe = REPO / "tests" / f"test_zz_probe_{os.getpid()}_{columns}.py"
    probe.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
    env.update(CI="", LOGDOCTOR_REALWORLD=str(tmp_path))
    if columns is not None:
        env.update(COLUMNS=columns, EXPECT_COLUMNS=columns)
    try:
        done = subprocess.run(
            # --basetemp of its own: pytest's numbered temp dirs would make the run delete the oldest runs'
            # trees (a whole suite's copied log dirs, ~8 s) beside this probe
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
             "--basetemp", str(tmp_path / "basetemp"), str(probe.relative_to(REPO))],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )
    finally:
        probe.unlink()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout

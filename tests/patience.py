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
import signal
import subprocess
from pathlib import Path

MAX_FACTOR = 20.0
#: how long a hung CLI sent SIGUSR1 is given to write its threads' stacks (on a quiet machine) before it is
#: killed: the handler (faulthandler's, in C) writes them the moment the process runs
STACK_SECONDS = 1.0


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


def exit_after_ctrl_c(
    proc: subprocess.Popen[str], *, stderr_file: Path | None = None, seconds: float = 120
) -> tuple[str, str]:
    """The ``(stdout, stderr)`` of ``proc``, a logdoctor CLI just sent its Ctrl-C, once it has exited.

    A CLI still running :func:`patience` (``seconds``) after its Ctrl-C hangs: it is sent SIGUSR1, on which
    logdoctor prints every thread's Python stack to its stderr (``cli/main.py``), and the test fails with
    that stderr, so the hang says where it waits. ``stderr_file``: where its stderr goes, when not to a
    pipe; its stdout is then the caller's to read (``""`` here), and this only waits for its exit.
    """

    def ended(timeout: float) -> tuple[str, str]:
        if stderr_file is None:
            out, err = proc.communicate(timeout=timeout)
            return out or "", err or ""
        proc.wait(timeout=timeout)
        return "", stderr_file.read_text()

    bound = patience(seconds)
    try:
        return ended(bound)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        try:  # faulthandler's C handler writes the stacks at once; a hung CLI does not exit after them
            _out, err = ended(patience(STACK_SECONDS))
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = ended(60)
        raise AssertionError(
            f"no exit {bound:.0f} s after Ctrl-C; its stderr, its threads' stacks last:\n{err}"
        ) from None

"""numpy's OpenBLAS runs one thread in a logdoctor command (issue 26, formats.lazy_numpy): its threads
spin waiting for work and took ~0.05 s of CPU per `scan --deep` from the walk threads (perf:
blas_thread_server). A user's own OPENBLAS_NUM_THREADS is kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = """
import os
import logdoctor.cli.main
from logdoctor.cli import registry
registry.load(registry.find("scan"))
from logdoctor.formats.lazy_numpy import np
np.zeros(1)  # numpy imported as the checks import it
print(os.environ.get("OPENBLAS_NUM_THREADS", "-"), len(os.listdir("/proc/self/task")))
"""


def _probe(env_value: str | None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    value, threads = out.stdout.split()
    return value, int(threads)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc (Linux)")
def test_the_cli_starts_no_blas_threads_and_keeps_the_users_choice() -> None:
    assert _probe(None) == ("-", 1)  # numpy imported, no thread but the main one, no variable left
    value, threads = _probe("2")
    assert value == "2"
    if (os.cpu_count() or 1) >= 2:
        assert threads == 2  # the user's choice is honoured: OpenBLAS started its second thread

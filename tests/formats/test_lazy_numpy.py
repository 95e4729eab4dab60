"""formats.lazy_numpy: numpy on first use, with one BLAS thread unless the environment says otherwise,
and an environment left as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CODE = """
import json, os, sys
from logdoctor.formats.lazy_numpy import np
before = "numpy" in sys.modules
array = np.frombuffer(b"\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00", dtype=np.int64)
print(json.dumps({
    "before": before,
    "after": "numpy" in sys.modules,
    "same": np.frombuffer is sys.modules["numpy"].frombuffer,
    "value": int(array[0]),
    "env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
}))
"""


def _run(env: dict[str, str]) -> dict[str, object]:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", CODE], env={**base, **env}, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize("env", [{}, {"OMP_NUM_THREADS": "2"}, {"OPENBLAS_NUM_THREADS": "3"}])
def test_numpy_on_first_use_and_the_environment_untouched(env: dict[str, str]) -> None:
    got = _run(env)
    assert got["before"] is False and got["after"] is True and got["same"] is True
    assert got["value"] == 1
    assert got["env"] == {
        "OPENBLAS_NUM_THREADS": env.get("OPENBLAS_NUM_THREADS"),
        "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS"),
    }


BACKGROUND = """
import json, os, sys
from logdoctor.formats import lazy_numpy
assert "numpy" not in sys.modules
lazy_numpy.import_in_background()
lazy_numpy.import_in_background()  # once
thread = lazy_numpy._background
thread.join()
print(json.dumps({
    "thread": thread.name,
    "imported": "numpy" in sys.modules,
    "value": int(lazy_numpy.np.arange(4).sum()),
    "env": os.environ.get("OPENBLAS_NUM_THREADS"),
}))
"""


def test_numpy_imported_in_the_background_once_and_then_used() -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", BACKGROUND], env=base, capture_output=True, text=True, check=True
    )
    got = json.loads(done.stdout)
    assert got == {"thread": "logdoctor-import-numpy", "imported": True, "value": 6, "env": None}

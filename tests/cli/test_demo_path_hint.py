"""Issue 47 item 7: after `make demo` every printed command runs as printed. They start with `logdoctor`,
which `make demo` runs from .venv/bin: the demo ends by saying how to put it on PATH, and that line's own
command does it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from logdoctor.cli.demo import path_hint


def test_the_hint_puts_logdoctor_on_path_as_printed(monkeypatch) -> None:
    bindir = Path(sys.executable).parent
    if not (bindir / "logdoctor").exists() or not (bindir / "activate").exists():
        import pytest

        pytest.skip("not run from a virtual environment with the logdoctor script")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.chdir(bindir.parent.parent)
    hint = path_hint()
    assert hint is not None
    (command,) = re.findall(r"`([^`]+)`", hint)
    out = subprocess.run(
        ["bash", "-c", f"{command} && command -v logdoctor"], capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert os.path.realpath(out.stdout.strip()) == os.path.realpath(bindir / "logdoctor")
    # with it on PATH, nothing to say
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    assert path_hint() is None

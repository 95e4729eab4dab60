"""A small real file system for the tests of a full or nearly full disk: a tmpfs of a given size mounted
in the test's folder (root only), unmounted after the test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted(
    folder: Path, size: int | str, *, skip_reason: str = "needs root: cannot mount a tmpfs here"
) -> Iterator[Path]:
    """``folder`` (created) with a tmpfs of ``size`` (bytes, or mount's form such as ``96k``) mounted on
    it; the test skips with ``skip_reason`` and mount's message when it cannot be mounted (a reason that
    starts with ``required:`` fails in CI instead: tests/conftest.py)."""
    folder.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
    done = subprocess.run(mount, capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"{skip_reason} ({done.stderr.decode().strip()})")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)

"""Code, tests and docs name no work session (issue 61 item 1): a figure is cited by its benchmark and
BENCHMARKS.md's table, a change by its issue; the history of the figures is in git, not in the tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SESSION = re.compile(r"\bsession\s+[0-9]", re.IGNORECASE)


def test_no_tracked_file_names_a_session() -> None:
    try:
        listed = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    hits = []
    for name in filter(None, listed.split("\0")):
        path = REPO / name
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        lines = enumerate(text.splitlines(), 1)
        hits += [f"{name}:{n}: {line.strip()}" for n, line in lines if SESSION.search(line)]
    assert not hits, "\n".join(hits)

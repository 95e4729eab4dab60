"""The `logdoctor` process freezes what is left to the garbage collector before it exits (cli.main): the
interpreter's last collection then does not walk the ~200,000 objects a scan of 50,000 partitions leaves
in cycles (~0.2 s of its exit)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# atexit runs its functions last registered first: this one runs after main() and what it registered
PROBE = (
    "import atexit, gc, sys; from logdoctor.cli.main import main; sys.argv[0] = 'logdoctor';"
    "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr)); main()"
)


@pytest.mark.parametrize(("where", "code"), [("", 0), ("missing", 66)])
def test_a_run_ends_with_its_objects_frozen(tmp_path, where, code) -> None:
    argv = [sys.executable, "-c", PROBE, "scan", "--quick", str(tmp_path / where)]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == code, r.stderr  # a failed command freezes too (main's finally)
    assert r.stderr.splitlines()[-1] == "frozen True", r.stderr

"""COMPACTION_KEYLESS_RECORDS' fix, run exactly as printed: the export saves the keyless records the next
cleaning would drop (Cleaner.shouldRetainRecord), offsets [10, 13) of the crafted compacted partition of
tests/checks/test_compaction.py, each with no key."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "checks"))
import test_compaction as tc  # noqa: E402


def test_the_keyless_records_fix_saves_them_as_printed(tmp_path: Path) -> None:
    keyless = tc._batch(10, 3, tc.T0 + tc.HOUR, key=lambda i: None)
    active = tc._batch(13, 2, tc.T0 + 2 * tc.HOUR, key=lambda i: None)
    root, _ = tc._kafka_logdir(tmp_path, [[tc._batch(0, 10, tc.T0), keyless], [active]])
    report, _part = tc._deep(root)
    (f,) = tc._codes(report, "COMPACTION_KEYLESS_RECORDS")
    (line,) = re.findall(r"`(logdoctor export [^`]+)`", f.fix)
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *shlex.split(line)[1:]]
    # run where an operator would, not in the checkout: the printed --out is relative (lost-records/...)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / shlex.split(line)[shlex.split(line).index("--out") + 1]
    table = pq.read_table(out, columns=["offset", "key"]).to_pydict()
    assert sorted(table["offset"]) == [10, 11, 12] and table["key"] == [None, None, None]

"""Issue 31 item 9, from the audit: an export to a nearly full disk (256 KiB free) exited 1 with Spark's
and pyarrow's tracebacks in all three formats, and Iceberg left its table folder and its catalog file
(Delta its folder). Now: one line naming the output, exit 73 (EX_CANTCREAT), and nothing left behind.
The disk is a real tmpfs of 256 KiB (the file system says ENOSPC; nothing is simulated)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tmpfs
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = [pytest.mark.spark, pytest.mark.needs_root]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    root, _ = generate_log_dir(
        tmp_path_factory.mktemp("full") / "logs",
        [TopicSpec("orders", partitions=2, records_per_partition=5000, value_size=200)],
    )
    return root


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs.mounted(tmp_path / "disk", "256k", skip_reason="required: a tmpfs of 256 KiB") as mnt:
        yield mnt


@pytest.mark.parametrize("fmt", ["parquet", "iceberg", "delta"])
def test_an_export_to_a_full_disk_is_one_line_73_and_leaves_nothing(logs, small_disk, fmt):
    out = small_disk / "out"
    argv = [sys.executable, "-c", "from logdoctor.cli.main import main; main()", "export", str(logs),
            "--out", str(out), "--format", fmt, "--master", "local[1]"]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 73, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"error: {out}: no space left on device" in proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert list(small_disk.iterdir()) == []  # no folder, no catalog file, no temporary files

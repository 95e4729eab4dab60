"""Issue 24, from the reliability audit: a sparse ``.log`` (a few real batches, then a hole of gigabytes).

Before: ``scan --quick`` of a 10 GiB hole took 48 s and 10.5 GB of memory (a 4 GiB hole here: 39 s and
4.2 GB), ``retention`` and ``dump --deep`` the same, and ``repair --apply`` wrote the hole into the
backup as real blocks. Now the first invalid batch header ends the walk, a hole is never read (nor
mapped in: no MAP_POPULATE), and the backup of a truncated tail keeps its holes as holes. Each command
runs as a subprocess whose peak memory is measured (``getrusage(RUSAGE_CHILDREN)`` in a wrapper).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.sample.logdir import TopicSpec, generate_log_dir

SRC = Path(__file__).resolve().parents[2] / "src"
HOLE = 4 << 30  # 4 GiB of hole after the real batches
MAX_RSS_MB = 400  # the tool's own footprint is ~60 MB; reading the hole cost more than 4,000
# CPU seconds of the command (user + system), not wall time: reading the hole is CPU (the kernel zero-fills
# each page read), and wall time on a loaded machine (two suites at once) is the load's, not the tool's
MAX_CPU_SECONDS = 30  # ~2 s here; the hole cost 39 s

# the command, then its peak memory (MB), wall time and CPU time on the last line of stderr
MEASURED = """
import json, resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run([sys.executable, "-m", "logdoctor", *sys.argv[1:]], capture_output=True, text=True)
took = time.monotonic() - t
sys.stdout.write(p.stdout)
sys.stderr.write(p.stderr)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = use.ru_utime + use.ru_stime
figures = {"rc": p.returncode, "rss_mb": use.ru_maxrss / 1024, "seconds": took, "cpu_seconds": cpu}
sys.stderr.write("\\n" + json.dumps(figures) + "\\n")
"""


def _measured(*args: object) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-c", MEASURED, *map(str, args)], env=env, capture_output=True,
                       text=True, timeout=600)  # fmt: skip
    figures = json.loads(p.stderr.strip().splitlines()[-1])
    return p, figures


@pytest.fixture
def sparse_dir(tmp_path) -> tuple[Path, Path, int]:
    """A generated log dir whose only segment is its real batches followed by a 4 GiB hole."""
    gen, _ = generate_log_dir(
        tmp_path / "gen",
        [TopicSpec("orders", partitions=1, records_per_partition=200, records_per_batch=5)],
        seed=3,
    )
    (log,) = sorted(gen.rglob("*.log"))
    valid = log.stat().st_size
    with open(log, "r+b") as f:
        f.truncate(valid + HOLE)
    st = log.stat()
    if st.st_blocks * 512 >= HOLE:
        pytest.skip("required: a file system with sparse files (the hole took real blocks)")
    return log.parent.parent, log, valid


def _bounded(figures: dict) -> None:
    assert figures["rss_mb"] < MAX_RSS_MB, figures
    assert figures["cpu_seconds"] < MAX_CPU_SECONDS, figures


@pytest.mark.parametrize("depth", [["--quick"], [], ["--deep"]])
def test_scan_of_a_sparse_log_stops_at_the_hole_with_flat_memory(sparse_dir, depth):
    log_dir, log, valid = sparse_dir
    p, figures = _measured("scan", *depth, log_dir, "--json")
    _bounded(figures)
    assert figures["rc"] == 2, p.stderr[-2000:]
    found = [f for f in json.loads(p.stdout)["findings"] if f["path"] == str(log)]
    assert found, p.stdout[-2000:]
    # the hole is named as what it is: the zero-filled tail from the end of the last valid batch
    assert any(str(valid) in f["message"] and "zero" in f["message"] for f in found), found


def test_retention_and_dump_deep_of_a_sparse_log_are_bounded(sparse_dir):
    log_dir, log, valid = sparse_dir
    p, figures = _measured("retention", log_dir)
    _bounded(figures)
    assert figures["rc"] in (0, 1, 2), p.stderr[-2000:]
    p, figures = _measured("dump", "--deep", log)
    _bounded(figures)
    assert figures["rc"] == 2 and f"position {valid}" in p.stdout, p.stdout[-2000:]


BLOCK = 1 << 20


def _sha256(path: Path) -> str:
    """A digest of the file's size and bytes: every 1 MiB block that is not all zeros, hashed with its
    number. The blocks wholly in a hole (``SEEK_DATA``/``SEEK_HOLE``) read as zeros and are not read:
    hashing the 1 GiB hole byte by byte cost ~1.5 s of CPU per call. Two files of equal size and bytes
    give equal digests, whatever their holes."""
    h = hashlib.sha256()
    zeros = bytes(BLOCK)
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        block = 0  # the first block not hashed yet
        while block * BLOCK < size:
            try:
                data = os.lseek(fd, block * BLOCK, os.SEEK_DATA)
            except OSError:  # ENXIO: no data after this offset, the rest is a hole
                break
            end = os.lseek(fd, data, os.SEEK_HOLE)
            for n in range(max(block, data // BLOCK), -(-end // BLOCK)):
                f.seek(n * BLOCK)
                chunk = f.read(BLOCK)
                if chunk != zeros[: len(chunk)]:
                    h.update(n.to_bytes(8, "big") + len(chunk).to_bytes(8, "big") + chunk)
            block = max(block, -(-end // BLOCK))
    h.update(b"size" + size.to_bytes(8, "big"))
    return h.hexdigest()


def test_repair_keeps_the_hole_a_hole_in_the_backup_and_rollback_restores_it(tmp_path):
    gen, _ = generate_log_dir(
        tmp_path / "gen",
        [TopicSpec("orders", partitions=1, records_per_partition=200, records_per_batch=5)],
        seed=3,
    )
    (log,) = sorted(gen.rglob("*.log"))
    valid = log.stat().st_size
    hole = 1 << 30
    with open(log, "r+b") as f:
        f.truncate(valid + hole)
    if log.stat().st_blocks * 512 >= hole:
        pytest.skip("required: a file system with sparse files")
    digest = _sha256(log)
    backup = tmp_path / "backup"
    p, figures = _measured("repair", log.parent.parent, "--apply", "--backup-dir", backup, "--jobs", "1")
    assert figures["rc"] in (0, 1), p.stdout[-2000:] + p.stderr[-2000:]
    assert figures["rss_mb"] < MAX_RSS_MB, figures
    assert log.stat().st_size == valid
    (tail,) = [p for p in backup.rglob("*.tail")]
    assert tail.stat().st_size == hole
    assert tail.stat().st_blocks * 512 < (1 << 20), "the hole was written into the backup as real blocks"
    p, figures = _measured("repair", "--rollback", backup / "journal.jsonl", "--apply")
    assert figures["rc"] == 0, p.stderr[-2000:]
    assert log.stat().st_size == valid + hole and log.stat().st_blocks * 512 < (1 << 20)
    assert _sha256(log) == digest


def test_the_digest_is_of_the_bytes_whatever_the_holes(tmp_path):
    """_sha256 against the bytes themselves: a dense copy digests as its sparse original, a byte changed
    inside the hole or at the end, or a longer hole, does not."""
    sparse, dense = tmp_path / "sparse", tmp_path / "dense"
    head = bytes(range(256)) * 5000  # 1.28 MB of data, then a hole of 5 MiB, then data again
    with open(sparse, "wb") as f:
        f.write(head)
        f.seek(len(head) + (5 << 20))
        f.write(b"tail")
    dense.write_bytes(sparse.read_bytes())
    assert hashlib.sha256(sparse.read_bytes()).hexdigest() == hashlib.sha256(dense.read_bytes()).hexdigest()
    assert _sha256(sparse) == _sha256(dense)
    for at in (len(head) + 3 * BLOCK + 17, sparse.stat().st_size - 1):
        changed = tmp_path / f"changed{at}"
        changed.write_bytes(sparse.read_bytes())
        with open(changed, "r+b") as f:
            f.seek(at)
            f.write(b"x")
        assert _sha256(changed) != _sha256(sparse), at
    longer = tmp_path / "longer"
    longer.write_bytes(sparse.read_bytes()[:-4] + bytes(1) + b"tail")
    assert _sha256(longer) != _sha256(sparse)

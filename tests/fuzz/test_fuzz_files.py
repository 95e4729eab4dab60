"""Mutated real files of every kind through every public parser, and mutated real log dirs through
`scan --deep`: only logdoctor's typed errors may come out (tests/fuzz/harness.py says how files are
mutated). A short run here; `make fuzz` runs FUZZ_EXAMPLES of each (docs/reliability.md)."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

import harness
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import realworld
import tiers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "checks"))

from state_reads import mapped_walk

from logdoctor.checks import walk_ahead
from logdoctor.checks.state import early_mappings, file_records
from logdoctor.formats import native

EXAMPLES = int(os.environ["FUZZ_EXAMPLES"]) if "FUZZ_EXAMPLES" in os.environ else tiers.examples(300)
SCAN_EXAMPLES = max(10, EXAMPLES // 20)
# no input may take longer than this (the audit found inputs taking seconds; a bound, not a benchmark)
PER_INPUT_SECONDS = 20

pytestmark = pytest.mark.realworld
_SAMPLES = harness.samples() if realworld.available() else {}
_KINDS = sorted(_SAMPLES) or ["none"]


@contextmanager
def bounded(seconds: int):
    def expire(signum, frame):
        raise TimeoutError(f"an input took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module", autouse=True)
def warm_imports():
    """Import what the parsers import lazily once, so the time bound is about the input."""
    realworld.require()
    for kind, paths in _SAMPLES.items():
        harness.untyped_errors(kind, paths[0].read_bytes())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(_KINDS), seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 6))
def test_every_parser_raises_only_typed_errors(kind: str, seed: int, steps: int) -> None:
    rng = random.Random(seed)
    path = rng.choice(_SAMPLES[kind])
    data = harness.mutate(path.read_bytes(), rng, steps)
    with bounded(PER_INPUT_SECONDS):
        bad = harness.untyped_errors(kind, data)
    assert bad == [], f"{kind} from {path} (seed {seed}, {steps} steps): {bad}"


@settings(max_examples=max(20, EXAMPLES // 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 3))
def test_index_entries_with_negative_positions_give_typed_findings(seed: int, steps: int) -> None:
    """The mutation class of issue 24: an offset index entry with a negative position, verified against
    a log with no valid batch (the audit's IndexError, exit 70) and one with a batch, after 0-3 other
    mutations."""
    rng = random.Random(seed)
    path = rng.choice(_SAMPLES.get("index") or pytest.skip("realworld: no offset index samples"))
    data = harness.negative_position(path.read_bytes(), rng)
    if steps:
        data = harness.mutate(data, rng, steps)
    with bounded(PER_INPUT_SECONDS):
        bad = harness.untyped_errors("index", data)
    assert bad == [], f"index from {path} (seed {seed}, {steps} steps): {bad}"


SCAN_DIRS = ["zk-2.8-seanorth", "kraft-4.2-nomanazeem", "zk-3.7-nikhildighe-b0"]


@settings(max_examples=SCAN_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(name=st.sampled_from(SCAN_DIRS), seed=st.integers(0, 2**32 - 1), files=st.integers(1, 8))
def test_scan_deep_of_a_mutated_log_dir_finishes_with_findings(tmp_path_factory, name, seed, files) -> None:
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    rng = random.Random(seed)
    d = tmp_path_factory.mktemp("fuzz") / name
    realworld.writable_copy(realworld.REALWORLD / name, d)
    candidates = sorted(p for p in d.rglob("*") if p.is_file() and harness.kind_of(p) is not None)
    for p in rng.sample(candidates, min(files, len(candidates))):
        p.write_bytes(harness.mutate(p.read_bytes(), rng, rng.randint(1, 4)))
    try:
        with bounded(PER_INPUT_SECONDS * 3):
            report = scan([d], ScanOptions(depth=Depth.DEEP, now_ms=1_800_000_000_000), jobs=1)
        assert report.log_dirs and report.log_dirs[0].path == str(d)
    finally:
        shutil.rmtree(d.parent, ignore_errors=True)


def test_the_harness_can_see_an_untyped_error(monkeypatch) -> None:
    """The check above can fail: a parser raising a plain exception is reported, a typed one is not."""
    from logdoctor.errors import FormatError

    def plain(data: bytes) -> None:
        raise OverflowError("int too big to convert")

    def typed(data: bytes) -> None:
        raise FormatError("x", source="f", position=0, found="y")

    monkeypatch.setitem(harness.PARSERS, "log", [plain, typed])
    assert [b.split(":")[1].strip() for b in harness.untyped_errors("log", b"")] == ["OverflowError"]


@settings(
    max_examples=max(10, EXAMPLES // 10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.integers(1, 6),
    chunk=st.sampled_from([61, 4096, 65_536 + 3]),
    max_batch=st.sampled_from([walk_ahead.MAX_BATCH_READ, 3000]),
)
def test_chunked_read_of_a_mutated_log_is_the_mapped_walk_or_sent_back(
    tmp_path_factory, seed: int, steps: int, chunk: int, max_batch: int
) -> None:
    """A mutated real .log walked a chunk at a time in C (``file_records._walk_read``:
    ``_speedups.walk_read_v2``, batches bigger than the chunk read into a buffer of their own up to
    ``MAX_BATCH_READ``) gives the walk of the mapped file, or sends the file back to it (None), with and
    without CRCs and positions."""
    if native.scan_v2 is None:
        pytest.skip("needs the C extension and crc32c")
    rng = random.Random(seed)
    src = rng.choice(_SAMPLES["log"])
    path = tmp_path_factory.mktemp("walk") / "00000000000000000000.log"
    path.write_bytes(harness.mutate(src.read_bytes(), rng, steps))
    with pytest.MonkeyPatch.context() as m, bounded(PER_INPUT_SECONDS):
        m.setattr(early_mappings, "MMAP_THRESHOLD", 1)
        m.setattr(file_records, "MMAP_THRESHOLD", 1)
        m.setattr(file_records, "READ_CHUNK", chunk)
        m.setattr(walk_ahead, "MAX_BATCH_READ", max_batch)
        for crc, positions in ((True, True), (True, False), (False, False)):
            got = file_records._walk_read(str(path), crc, positions)
            if got is not None:
                assert got == mapped_walk(str(path), crc, positions), (src, seed, steps, crc, positions)

"""Issue 57 items 1-3 through the export: damaged transactional data exported as Kafka's consumers read it,
against the facts of ../shared/semantics/README.md (hostile_semantics rebuilds each damaged copy), and a
marker Kafka's validation refuses named in the export's skipped ranges (exit 1), never a silent cut."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import hostile_semantics as hs
from logdoctor.spark.export import run_export

pytestmark = [pytest.mark.spark, pytest.mark.realworld]

CASES = {
    "torn": (hs.torn, [o for o in hs.READ_COMMITTED if o < 50 or o >= 202]),
    "lying-marker": (hs.lying_marker, hs.READ_COMMITTED),
    "marker-without-txn-bit": (hs.marker_without_txn_bit, hs.READ_COMMITTED),
}


def _offsets(out: Path) -> list[int]:
    return sorted(pq.read_table(out, columns=["offset"]).column("offset").to_pylist())


@pytest.mark.parametrize("case", list(CASES))
def test_export_reads_committed_as_kafka(spark, tmp_path: Path, case: str) -> None:
    build, expected = CASES[case]
    logs = build(tmp_path / "in")
    out = tmp_path / "out"
    result = run_export(spark, [str(logs)], str(out), options={"topics": "ptx"}, writer="arrow")
    assert _offsets(out) == expected
    (entry,) = result.transactions
    assert entry["last_stable_offset"] == hs.LSO
    markers = [s for s in result.skipped if "marker Kafka's validation refuses" in s.error]
    if case == "lying-marker":
        (m,) = markers
        assert (Path(m.path).name, m.range_start, m.base_offset, m.last_offset) == (
            hs.SEGMENT_0,
            hs.ABORT_201_POSITION,
            201,
            200,
        )
    else:
        assert not markers
    if case == "torn":
        assert entry["error"] is not None and any("truncated" in s.error for s in result.skipped)


def test_cli_names_a_refused_marker_once_and_exits_1(tmp_path: Path) -> None:
    """`export --writer spark --json`: the README's 230 records, the marker named once among the skipped
    ranges (the segments pass may name the same batch: not twice), exit 1 (EX_WARNINGS)."""
    logs = hs.lying_marker(tmp_path / "in")
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "logdoctor", "export", str(logs), "--out", str(out), "--topics", "ptx"]
    res = subprocess.run([*cmd, "--writer", "spark", "--json"], capture_output=True, text=True, check=False)
    assert res.returncode == 1, res.stderr
    summary = json.loads(res.stdout)
    assert summary["rows"] == len(hs.READ_COMMITTED) == 230
    assert _offsets(out) == hs.READ_COMMITTED
    at_marker = [s for s in summary["skipped"] if s["start"] == hs.ABORT_201_POSITION]
    assert len(at_marker) == 1 and at_marker[0]["base_offset"] == 201
    (entry,) = summary["transactions"]
    assert [m["base_offset"] for m in entry["invalid_markers"]] == [201]

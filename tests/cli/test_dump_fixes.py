"""dump output that reads like Kafka's tools and agrees with itself (issue 17): summaries without
``None``, byte counts within the file, control records and small files without Python reprs, index
checks that agree with and without --verify-index, and DumpLogSegments' --verify-index-only."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_dump import dump, kafka_python_batches

import realworld

LEGACY_LOG = "zk-0.10.1-xpxwo100/TEST-TOPIC-0/00000000000000000000.log"  # magic v1, one message per entry
KRAFT = "kraft-3.5-greenlemont-single"
ZK_PART = "zk-3.7-nikhildighe-b0/__consumer_offsets-12"


@pytest.fixture(scope="module")
def legacy_log() -> Path:
    return realworld.require() / LEGACY_LOG


def test_max_bytes_summary_names_the_first_offset(legacy_log):
    first = kafka_python_batches(legacy_log.read_bytes())[0]
    run = dump("--max-bytes", "100", legacy_log)
    assert "None" not in run.stdout, run.stdout
    assert f"offsets {first.base_offset}..{first.last_offset}" in run.stdout
    js = dump("--json", "--max-bytes", "100", legacy_log)
    (summary,) = js.of_type("summary")
    assert summary["first_offset"] == first.base_offset


def test_timestamps_on_magic_v1_never_read_more_than_the_file(legacy_log):
    size = legacy_log.stat().st_size
    batches = kafka_python_batches(legacy_log.read_bytes())
    lo = max(r.timestamp for r in batches[len(batches) // 3].records)
    for rng in ("0:99999999999999", f"{lo}:"):
        run = dump("--json", "--timestamps", rng, legacy_log)
        (summary,) = run.of_type("summary")
        assert summary["bytes_read"] <= size, (rng, summary)
        text = dump("--timestamps", rng, legacy_log).stdout
        read = int(text.split("; read ")[1].split(" of ")[0].replace(",", ""))
        assert read <= size


def test_leader_change_and_small_files_print_like_kafka():
    root = realworld.require() / KRAFT
    run = dump("-d", root / "__cluster_metadata-0" / "00000000000000000000.log")
    lines = [ln for ln in run.stdout.splitlines() if "LEADER_CHANGE" in ln]
    assert lines
    for ln in lines:
        # LeaderChangeMessageJsonConverter's form: camelCase, no Python dict reprs or None
        payload = json.loads(ln.split("LEADER_CHANGE ", 1)[1])
        assert set(payload) >= {"version", "leaderId", "voters", "grantingVoters"}
        assert all(set(v) == {"voterId"} for v in payload["voters"])
        assert "None" not in ln and "'" not in ln
    small = dump(root / "meta.properties", root / "__cluster_metadata-0" / "quorum-state")
    assert "None" not in small.stdout, small.stdout
    assert "directory_id" not in small.stdout  # absent in this meta.properties: left out, as Kafka does


def test_garbage_index_without_log_agrees_with_and_without_verify_index(tmp_path):
    garbage = tmp_path / "00000000000000000000.index"
    garbage.write_bytes(bytes((i * 37 + 11) % 256 for i in range(100)))  # 12 entries + 4 stray bytes
    plain = dump("--json", garbage)
    verify = dump("--json", "--verify-index", garbage)
    assert plain.exit_code == 2 and verify.exit_code == 2, (plain.exit_code, verify.exit_code)
    for run in (plain, verify):
        (summary,) = run.of_type("summary")
        codes = {f["code"] for f in run.of_type("finding")}
        assert "INDEX_PARTIAL_ENTRY" in codes
        assert summary["findings"] == len(run.of_type("finding")) >= 1
    text = dump(garbage).stdout
    assert "; 0 findings" not in text


def test_verify_index_only_is_quiet_like_dump_log_segments(tmp_path):
    part = realworld.require() / ZK_PART
    index = part / "00000000000000000000.index"
    full = dump("--json", "--verify-index", index)
    quiet = dump("--json", "--verify-index-only", index)
    assert quiet.exit_code == full.exit_code == 0
    assert full.of_type("index_entry") and not quiet.of_type("index_entry")
    assert quiet.of_type("summary")[0]["entries"] == full.of_type("summary")[0]["entries"]
    # an index that does not match its log: the mismatch is still reported, the entries are not
    d = tmp_path / "p"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes((part / "00000000000000000000.log").read_bytes())
    data = bytearray(index.read_bytes())
    data[4:8] = (int.from_bytes(data[4:8], "big") + 1).to_bytes(4, "big")  # entry 0 inside a batch
    (d / "00000000000000000000.index").write_bytes(bytes(data))
    bad = dump("--json", "--verify-index-only", d / "00000000000000000000.index")
    assert bad.exit_code == 2
    assert bad.of_type("finding") and not bad.of_type("index_entry")
    text = dump("--verify-index-only", d / "00000000000000000000.index").stdout
    rows = [ln for ln in text.splitlines() if re.match(r"^\s+\d+\s+-?\d+\s+-?\d+", ln)]
    assert not rows, text
    assert "summary:" in text


def test_verify_index_only_of_a_negative_position_is_a_finding(tmp_path):
    """Issue 24 (audit, 246 of 60,001 fuzzed inputs): an entry with a negative position beside a .log
    with no valid batch raised IndexError (exit 70); it is a typed finding, exit 2."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"\xff" * 40)  # no valid batch header
    index = d / "00000000000000000000.index"
    index.write_bytes((0).to_bytes(4, "big") + (-7).to_bytes(4, "big", signed=True))
    run = dump("--json", "--verify-index-only", index)
    assert run.exit_code == 2, run.stdout + run.stderr
    codes = [f["code"] for f in run.of_type("finding")]
    assert "INDEX_POSITION_NEGATIVE" in codes, codes
    text = dump("--verify-index-only", index)
    assert text.exit_code == 2 and "position -7 is negative" in text.stdout

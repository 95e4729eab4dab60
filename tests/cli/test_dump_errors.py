"""Bad input: one stderr line naming the file and position, a non-zero exit, the other files still dumped."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from test_dump import dump, kafka_python_batches

import realworld

GOOD = "zk-pre2.8-volodymyrzee/__consumer_offsets-18/00000000000000000000.log"
CHECKPOINT = "zk-pre2.8-volodymyrzee/recovery-point-offset-checkpoint"


@pytest.fixture
def good(realworld_dir) -> Path:
    return realworld_dir / CHECKPOINT


@pytest.fixture
def log_copy(tmp_path, realworld_dir) -> Path:
    p = tmp_path / "t-0" / "00000000000000000000.log"
    p.parent.mkdir()
    realworld.writable_copy(realworld_dir / GOOD, p)
    return p


def _one_error_line(run, path: Path) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"error: {path}"), lines[0]  # as every command's error line starts
    return lines[0]


def _still_dumped(run, good: Path) -> None:
    assert any(o.get("file") == str(good) and o["type"] == "checkpoint_entry" for o in run.objects)


def test_truncated_log(log_copy, good):
    expected = kafka_python_batches(log_copy.read_bytes())
    cut = expected[-1].position + 20
    with open(log_copy, "r+b") as f:
        f.truncate(cut)
    run = dump("--json", log_copy, good)
    assert run.exit_code == 2
    line = _one_error_line(run, log_copy)
    assert f"@{expected[-1].position}" in line and "truncated" in line
    assert len(run.of_type("batch")) == len(expected) - 1  # everything before the torn batch
    finding = [f for f in run.of_type("finding") if f["code"] == "LOG_INVALID_BYTES"]
    assert finding and "Found 20 invalid bytes at the end" in finding[0]["message"]
    _still_dumped(run, good)


def test_corrupt_size_field(log_copy, good):
    expected = kafka_python_batches(log_copy.read_bytes())
    data = bytearray(log_copy.read_bytes())
    struct.pack_into(">i", data, expected[3].position + 8, 5)  # size < 14
    log_copy.write_bytes(bytes(data))
    run = dump("--json", log_copy, good)
    assert run.exit_code == 2
    line = _one_error_line(run, log_copy)
    assert f"@{expected[3].position + 8}" in line and "corrupt" in line
    assert len(run.of_type("batch")) == 3
    _still_dumped(run, good)


def test_crc_mismatch_is_reported_and_the_walk_goes_on(log_copy, good):
    expected = kafka_python_batches(log_copy.read_bytes())
    data = bytearray(log_copy.read_bytes())
    data[expected[2].position + 70] ^= 0xFF  # a byte inside the records of batch 2
    log_copy.write_bytes(bytes(data))
    run = dump("--json", log_copy, good)
    assert run.exit_code == 2
    batches = run.of_type("batch")
    assert len(batches) == len(expected)
    assert [b["crc_valid"] for b in batches].count(False) == 1 and batches[2]["crc_valid"] is False
    assert [f["code"] for f in run.of_type("finding")] == ["LOG_CRC_MISMATCH"]


def test_zero_filled_tail(log_copy, good):
    size = log_copy.stat().st_size
    with open(log_copy, "ab") as f:
        f.write(bytes(4096))
    run = dump("--json", log_copy, good)
    assert run.exit_code == 2
    assert f"@{size}" in _one_error_line(run, log_copy)


def test_empty_small_files(tmp_path, good):
    for name in ("meta.properties", "quorum-state"):
        p = tmp_path / name
        p.write_bytes(b"")
        run = dump("--json", p, good)
        assert run.exit_code == 2
        assert "empty" in _one_error_line(run, p)
        _still_dumped(run, good)


def test_empty_log_and_index_are_fine(tmp_path):
    for name in (
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "cleaner-offset-checkpoint",
    ):
        (tmp_path / name).write_bytes(b"")
    run = dump("--json", *sorted(tmp_path.iterdir()))
    assert run.exit_code == 0, run.stderr
    assert len(run.of_type("summary")) == 4


def test_permission_denied(log_copy, good, monkeypatch):
    os.chmod(log_copy, 0)
    if os.access(log_copy, os.R_OK):  # root reads anything: make the check see what a user would
        import logdoctor.cli.dump as dump_module

        real = dump_module._readable
        monkeypatch.setattr(dump_module, "_readable", lambda p: False if Path(p) == log_copy else real(p))
    run = dump("--json", log_copy, good)
    assert run.exit_code == 77
    assert "permission denied" in _one_error_line(run, log_copy)
    _still_dumped(run, good)


def test_directory(tmp_path, good):
    run = dump("--json", tmp_path, good)
    assert run.exit_code == 66
    assert "directory" in _one_error_line(run, tmp_path)
    _still_dumped(run, good)


def test_missing_file(tmp_path, good):
    p = tmp_path / "00000000000000000000.log"
    run = dump("--json", p, good)
    assert run.exit_code == 66
    assert "no such file" in _one_error_line(run, p)
    _still_dumped(run, good)


def test_file_of_another_kind(tmp_path, good, realworld_dir):
    # a broker's text log named like a segment
    text = tmp_path / "00000000000000000000.log"
    text.write_text(
        "[2020-04-22 19:08:04,106] INFO Kafka version: 2.4.0 (org.apache.kafka.common.utils)\n" * 3
    )
    run = dump("--json", text, good)
    assert run.exit_code == 2
    line = _one_error_line(run, text)
    assert "@0" in line and "Kafka log segment" in line
    # a log segment named like an index
    fake = tmp_path / "00000000000000000000.index"
    realworld.writable_copy(realworld_dir / GOOD, fake)
    run = dump("--json", fake, good)
    assert run.exit_code == 2
    assert "index" in _one_error_line(run, fake)
    _still_dumped(run, good)


def test_unknown_file_name(tmp_path, good):
    p = tmp_path / "notes.txt"
    p.write_text("hello")
    run = dump("--json", p, good)
    assert run.exit_code == 64
    assert "unknown file kind" in _one_error_line(run, p)
    _still_dumped(run, good)


@pytest.mark.parametrize(
    "args",
    [
        ["--offsets", "5:3"],
        ["--offsets", "x"],
        ["--timestamps", "yesterday"],
        ["--max-bytes", "0"],
        ["--no-such-option"],
        ["--decoder", "nope"],
        [],
    ],
)
def test_usage_errors_exit_64(args, good):
    run = dump(*args, *([good] if args else []))
    assert run.exit_code == 64, (run.exit_code, run.stdout, run.stderr)

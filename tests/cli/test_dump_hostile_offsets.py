"""``dump`` names what ``scan --deep`` names about a segment's offsets (issue 48, item 7): a first batch whose
base offset is below the segment's base offset (from its file name) is LOG_OFFSET_BELOW_BASE, an error, as
the scan's SEGMENT_BASE_OFFSET_MISMATCH (LogSegment.recover: ensureOffsetInRange throws
InvalidOffsetException and the broker deletes the segment's data). Built from ../shared/tiered's audit-0,
read in place and damaged in a tmp copy."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

import realworld
from logdoctor.cli import commands  # noqa: F401  (registers every command)
from logdoctor.cli.main import app


def _findings(output: str) -> list[dict]:
    out = []
    for line in output.splitlines():
        if line.startswith("{"):
            ev = json.loads(line)
            if ev["type"] == "finding":
                out.append(ev)
    return out


@pytest.fixture
def below_base(tmp_path: Path) -> Path:
    tiered = realworld.require_tiered()
    folder = tmp_path / "audit-0"
    shutil.copytree(tiered / "original" / "kafka-logs" / "audit-0", folder)
    log = folder / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, 0, -1)  # the base offset is outside the CRC
    log.write_bytes(bytes(data))
    return log


@pytest.mark.parametrize("deep", [False, True])
def test_dump_names_a_batch_below_the_segments_base(below_base: Path, deep: bool) -> None:
    args = ["dump", "--json", str(below_base)] + (["--deep"] if deep else [])
    res = CliRunner().invoke(app, args, terminal_width=200)
    assert res.exit_code == 2, res.output
    [found] = [f for f in _findings(res.output) if f["code"] == "LOG_OFFSET_BELOW_BASE"]
    assert found["severity"] == "error"
    assert found["log"] == {"position": 0, "base_offset": -1, "segment_base_offset": 0}
    # the scan says the same of it
    scan = CliRunner().invoke(app, ["scan", "--deep", "--json", str(below_base.parent.parent)])
    codes = {f["code"] for f in json.loads(scan.output)["findings"]}
    assert "SEGMENT_BASE_OFFSET_MISMATCH" in codes


def test_an_intact_segment_has_no_such_finding() -> None:
    tiered = realworld.require_tiered()
    log = tiered / "original" / "kafka-logs" / "audit-0" / f"{195:020d}.log"
    res = CliRunner().invoke(app, ["dump", "--json", str(log)], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert not _findings(res.output)


# --- issue 48, item 5: a remote object that runs past its segment's end, into the next segment


def test_dump_of_a_remote_object_running_into_the_next_segment_names_it_and_prints_each_offset_once(
    tmp_path: Path,
) -> None:
    tiered = realworld.require_tiered()
    copy = realworld.writable_copy(tiered / "kafka-local", tmp_path / "kafka-local")
    [folder] = (copy / "remote" / "kafka-tiered-storage").glob("payments-0-*")
    [first] = folder.glob(f"{0:020d}-*.log")
    [second] = folder.glob(f"{324:020d}-*.log")
    data = second.read_bytes()
    size = struct.unpack_from(">i", data, 8)[0] + 12
    assert struct.unpack_from(">q", data, 0)[0] == 324
    with open(first, "ab") as fh:  # the object goes on with the next segment's first batch (324..377)
        fh.write(data[:size])
    partition = str(copy / "kafka-logs" / "payments-0")
    args = ["dump", "--deep", "--json", "--remote-storage", str(copy / "remote"), partition]
    res = CliRunner().invoke(app, args, terminal_width=200)
    assert res.exit_code == 2, res.output
    offsets: list[int] = []
    for line in res.output.splitlines():
        if line.startswith("{") and json.loads(line)["type"] == "record":
            offsets.append(json.loads(line)["offset"])
    assert offsets == list(range(1296))  # each offset once, in order
    [found] = [f for f in _findings(res.output) if f["code"] == "LOG_PAST_REMOTE_SEGMENT"]
    log = found["log"]
    assert (log["base_offset"], log["last_offset"], log["end"]) == (324, 377, 323)

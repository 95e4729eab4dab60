"""A writing plan lists, before --apply, the consumer groups it moves out of their partition's log range.

A copy of a real log dir (zk-pre2.8-volodymyrzee: groups committed offset 11 of first_topic-0, whose log
ends at 11) with one batch of first_topic-0 damaged: the repair truncates the log before that batch, so
each group whose commit lies beyond the new end will reset. The expected groups come from the independent
reading of __consumer_offsets (tests/consumer_offsets_oracle.py) and the new end from kafka-python's
batches; the dry run prints them as notes (text and --json), and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import kafka_schemas as ks
import realworld
from consumer_offsets_oracle import commits
from kp_oracle import batches
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.repair.planner import plan_repair


def _damaged_copy(tmp_path: Path) -> tuple[Path, int]:
    src = realworld.require() / "zk-pre2.8-volodymyrzee"
    copy = realworld.writable_copy(src, tmp_path / "logs")
    log = copy / "first_topic-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    found = batches(bytes(data))
    pos, size, _last, _ts = found[5]  # the batch of offset 5: its last byte flipped (a CRC mismatch)
    data[pos + size - 1] ^= 0xFF
    log.write_bytes(bytes(data))
    return copy, found[4][2] + 1  # recovery keeps the batches before it: the log then ends at offset 5


def test_the_repair_dry_run_lists_the_groups_its_truncation_moves_beyond_the_log(tmp_path: Path) -> None:
    ks.require()
    copy, new_end = _damaged_copy(tmp_path)
    held = {k: v for co in copy.glob("__consumer_offsets-*") for k, v in commits(co).items()}
    expected = {g for (g, t, p), c in held.items() if (t, p) == ("first_topic", 0) and c > new_end}
    assert expected  # the real groups committed beyond offset 5
    plan, _ = plan_repair([copy], backup_dir=str(tmp_path / "backup"), jobs=1)
    notes = [n for n in plan.notes if n.startswith("consumer group ")]
    assert {n.split()[2].rstrip(":") for n in notes} == expected
    for n in notes:
        g = n.split()[2].rstrip(":")
        c = held[(g, "first_topic", 0)]
        assert f"committed offset {c} of first_topic-0 will be beyond its new log end" in n
        assert f"log end {new_end})" in n and f"reads {new_end} offsets again" in n
    # the CLI's dry run prints them before --apply, in text and JSON, and writes nothing
    before = sorted((p, p.stat().st_mtime_ns) for p in copy.rglob("*"))
    text = CliRunner().invoke(app, ["repair", str(copy), "--backup-dir", str(tmp_path / "b2")])
    assert all(g in text.stdout for g in expected), text.stdout
    assert "consumer group" in text.stdout
    out = CliRunner().invoke(app, ["repair", str(copy), "--backup-dir", str(tmp_path / "b3"), "--json"])
    doc = json.loads(out.stdout)
    plan_json = doc.get("plan", doc)
    groups = {n.split()[2].rstrip(":") for n in plan_json["notes"] if n.startswith("consumer group ")}
    assert groups == expected
    assert sorted((p, p.stat().st_mtime_ns) for p in copy.rglob("*")) == before


def test_a_plan_that_truncates_nothing_lists_no_group(tmp_path: Path) -> None:
    ks.require()
    src = realworld.require() / "zk-pre2.8-volodymyrzee"
    copy = realworld.writable_copy(src, tmp_path / "logs")
    plan, _ = plan_repair([copy], backup_dir=str(tmp_path / "backup"), jobs=1)
    assert not [n for n in plan.notes if n.startswith("consumer group ")]

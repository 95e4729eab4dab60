"""repair that ends honestly: a CRC-mismatched batch mid-segment that only ``scan --deep`` finds.

The damage: a real log dir's biggest partition split into segments, one byte of a batch in the
middle of its first (inactive, below the recovery point) segment flipped, and its .index (and in
one variant its .timeindex) overwritten. Expectations are derived independently: the truncation
point is the damaged batch's position (read with kafka-python before the damage), the new log end
is the offset after the last batch before it, later segments go to the backup as LogLoader.recoverLog
deletes them, and every record before the cut stays readable with kafka-python.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kafka.record import MemoryRecords
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))

import damage

from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401
from logdoctor.cli.main import app
from logdoctor.formats.checkpoint import parse_offset_checkpoint
from logdoctor.logdir.names import RECOVERY_POINT_CHECKPOINT
from logdoctor.repair import apply_plan, plan_repair, rollback

NAME = "zk-3.7-nikhildighe-b0"
SRC = Path(__file__).resolve().parents[2] / "src"


def _kafka_python_batches(data: bytes) -> list[tuple[int, int, int]]:
    """(position, size, last offset) of each batch, read with kafka-python (an independent reader)."""
    out, pos = [], 0
    mr = MemoryRecords(data)
    while mr.has_next():
        b = mr.next_batch()
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
        last = b.base_offset + b.last_offset_delta
        out.append((pos, size, last))
        pos += size
    return out


def _damaged(tmp_path: Path, realworld_dir: Path, *, timeindex: bool) -> dict:
    root = damage.copy_log_dir(realworld_dir / NAME, tmp_path / "logs")
    p = damage.biggest_partition(root)
    assert p is not None
    logs = sorted(p.glob("*.log"))
    bases = damage.split_into_segments(p, 3) if len(logs) == 1 else [int(x.name.split(".")[0]) for x in logs]
    assert len(bases) >= 2
    log = p / f"{bases[0]:020d}.log"
    original = log.read_bytes()
    batches = _kafka_python_batches(original)
    k = len(batches) // 2
    assert k >= 1
    pos, size, _ = batches[k]
    bad = bytearray(original)
    bad[pos + size - 1] ^= 0xFF  # inside the CRC-covered bytes of batch k
    log.write_bytes(bytes(bad))
    (p / f"{bases[0]:020d}.index").write_bytes(b"\x01" * 24)
    if timeindex:
        (p / f"{bases[0]:020d}.timeindex").write_bytes(b"\0" * 24)
    later = {
        f.name: f.read_bytes()
        for b in bases[1:]
        for f in p.iterdir()
        if f.name.startswith(f"{b:020d}.") and f.suffix in (".log", ".index", ".timeindex")
    }
    topic, _, num = p.name.rpartition("-")
    return {
        "root": root,
        "p": p,
        "log": log,
        "cut": pos,
        "tail": bytes(bad[pos:]),
        "new_leo": batches[k - 1][2] + 1,
        "later": later,
        "tp": (topic, int(num)),
        # kafka-python's reading of the undamaged bytes: the records the truncation removes, last offset
        "lost": _kafka_python_records(original[pos:])
        + sum(_kafka_python_records(v) for k, v in later.items() if k.endswith(".log")),
        "last_offset": max(
            last
            for data in [original, *(v for k, v in later.items() if k.endswith(".log"))]
            for _p, _s, last in _kafka_python_batches(data)
        ),
    }


def _kafka_python_records(data: bytes) -> int:
    n = 0
    mr = MemoryRecords(data)
    while mr.has_next():
        n += sum(1 for _ in mr.next_batch())
    return n


def _cli(*args: str):
    return CliRunner().invoke(app, [*args, "--jobs", "1"])


def _deep_codes(root: Path) -> set[str]:
    return {f.code for f in scan([root], ScanOptions(depth=Depth.DEEP), jobs=1).findings}


@pytest.mark.slow
@pytest.mark.parametrize("timeindex", [False, True], ids=["index", "index+timeindex"])
def test_default_repair_does_not_claim_a_clean_end(tmp_path, realworld_dir, timeindex):
    """A CRC mismatch in a segment whose .index does not fit: the default depth walks that segment whole
    with CRCs (issue 59 item 2), so the default repair cuts it as recovery does and no LOG_CORRUPT is left;
    a follow-up run on one code never says "Nothing to repair" with 0 while an error is there."""
    d = _damaged(tmp_path, realworld_dir, timeindex=timeindex)
    assert "LOG_CORRUPT" in _deep_codes(d["root"])
    r = _cli("repair", str(d["root"]), "--apply", "--backup-dir", str(tmp_path / "b1"))
    assert "truncate-log" in r.output and "still found: ERROR LOG_CORRUPT" not in r.output, r.output
    assert "LOG_CORRUPT" not in _deep_codes(d["root"])
    r2 = _cli(
        "repair", str(d["root"]), "--only", "RETENTION_RISK", "--apply", "--backup-dir", str(tmp_path / "b2")
    )
    default_code = scan([d["root"]], ScanOptions(depth=Depth.DEFAULT), jobs=1).exit_code
    assert r2.exit_code == max(default_code, 0), r2.output
    if default_code:
        assert "still found:" in r2.output


@pytest.mark.slow
def test_repair_deep_truncates_like_recovery(tmp_path, realworld_dir):
    d = _damaged(tmp_path, realworld_dir, timeindex=True)
    root, p = d["root"], d["p"]
    readable_before = damage.read_records(root)[p.name]
    rp_before = dict(
        ((t, n), o)
        for t, n, o in parse_offset_checkpoint((root / RECOVERY_POINT_CHECKPOINT).read_bytes()).entries
    ).get(d["tp"])

    dry = _cli("repair", str(root), "--deep", "--json")
    assert dry.exit_code == 0, dry.output
    kinds = {a["kind"] for a in json.loads(dry.output)["plan"]["actions"]}
    assert "truncate-log" in kinds

    backup = tmp_path / "backup"
    r = _cli("repair", str(root), "--deep", "--apply", "--backup-dir", str(backup))
    after = scan([root], ScanOptions(depth=Depth.DEEP), jobs=1)
    assert r.exit_code == after.exit_code, r.output
    assert "LOG_CORRUPT" not in {f.code for f in after.findings}
    # cut exactly at the damaged batch; the cut bytes are in the backup
    assert d["log"].stat().st_size == d["cut"]
    tails = list((backup / "tails").rglob("*.tail"))
    assert [t.read_bytes() for t in tails] == [d["tail"]]
    # later segments deleted (to the backup, byte for byte), as recoverLog does after a truncation
    for name, data in d["later"].items():
        assert not (p / name).exists(), name
        kept = [f for f in backup.rglob(name) if f.is_file()]
        assert any(f.read_bytes() == data for f in kept), name
    # every record before the cut still readable (kafka-python), none after it
    readable_after = damage.read_records(root)[p.name]
    assert readable_after == {o: v for o, v in readable_before.items() if o < d["new_leo"]}
    assert max(readable_after) + 1 == d["new_leo"]
    # recovery point: min(checkpoint, new log end), LogLoader.recoverLog's RecoveryOffsets
    if rp_before is not None:
        rp_after = dict(
            ((t, n), o)
            for t, n, o in parse_offset_checkpoint((root / RECOVERY_POINT_CHECKPOINT).read_bytes()).entries
        )[d["tp"]]
        assert rp_after == min(rp_before, d["new_leo"])
    # the same depth now finds nothing to repair, and says so with the scan's exit code
    again = _cli("repair", str(root), "--deep")
    assert "Nothing to repair" in again.output
    assert again.exit_code == after.exit_code


@pytest.mark.slow
def test_repair_deep_rolls_back_and_resumes(tmp_path, realworld_dir):
    d = _damaged(tmp_path, realworld_dir, timeindex=False)
    root = d["root"]
    original = damage.tree(root)
    plan, _ = plan_repair([root], backup_dir=str(tmp_path / "b1"), jobs=1, deep=True)
    assert plan.depth == "deep"
    assert any(a.kind == "truncate-log" for a in plan.actions)
    assert apply_plan(plan).status == "applied"
    assert rollback(tmp_path / "b1" / "journal.jsonl").status == "rolled-back"
    assert damage.tree(root) == original
    # killed (SIGKILL) after the first step, then --resume from the journal: finishes at --deep depth
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\nfrom logdoctor.cli.main import main\nsys.argv[0] = 'logdoctor'\nmain()",
            "repair",
            str(root),
            "--deep",
            "--apply",
            "--backup-dir",
            str(tmp_path / "b2"),
            "--jobs",
            "1",
        ],
        env={**os.environ, "PYTHONPATH": str(SRC), "LOGDOCTOR_CRASH_AFTER_STEP": "1"},
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    r = _cli("repair", "--resume", str(tmp_path / "b2" / "journal.jsonl"), "--apply", "--json")
    out = json.loads(r.output)
    assert out["result"]["status"] == "applied", r.output
    assert d["log"].stat().st_size == d["cut"]
    assert "LOG_CORRUPT" not in _deep_codes(root)
    # the damaged partition is __consumer_offsets-12: the cut drops the tombstones of a deleted group's
    # commits, so the coordinator loads older commits again, and those are below their partitions' log
    # start: warnings (exit 1), exactly those, each announced by the plan
    expected = _moved_groups(root, d["p"])
    assert expected, "the test data no longer truncates a group's commits"
    remaining = out["remaining"]
    assert {f["code"] for f in remaining} == {"CONSUMER_OFFSET_OUT_OF_RANGE"}, r.output
    found = {
        tuple(
            f["details"][k]
            for k in ("group", "topic", "partition", "committed_offset", "log_start_offset", "log_end_offset")
        )
        for f in remaining
    }
    assert found == expected
    assert len(remaining) == len(expected)
    assert r.exit_code == 1, r.output
    for group, topic, n, committed, start, end in expected:
        side = "below its new log start" if committed < start else "beyond its new log end"
        note = f"consumer group {group}: its committed offset {committed} of {topic}-{n} will be {side} "
        assert any(x.startswith(note) and f"(log start {start}, log end {end})" in x for x in plan.notes), (
            note,
            plan.notes,
        )


def _moved_groups(root: Path, consumer_offsets: Path) -> set[tuple[str, str, int, int, int, int]]:
    """(group, topic, partition, committed offset, log start, log end) of every commit the records left in
    ``consumer_offsets`` hold outside its partition's range, decoded here from kafka-python's records
    (OffsetCommit key: version, group, topic, partition; value: version, offset; a null value deletes)."""

    def string(b: bytes, i: int) -> tuple[str, int]:
        n = int.from_bytes(b[i : i + 2], "big")
        return b[i + 2 : i + 2 + n].decode(), i + 2 + n

    commits: dict[tuple[str, str, int], int] = {}
    for _o, (key, value, _ts) in sorted(damage.read_records(root)[consumer_offsets.name].items()):
        if key is None or int.from_bytes(key[:2], "big") not in (0, 1):
            continue
        group, i = string(key, 2)
        topic, i = string(key, i)
        k = (group, topic, int.from_bytes(key[i : i + 4], "big"))
        if value is None:
            commits.pop(k, None)
        else:
            commits[k] = int.from_bytes(value[2:10], "big", signed=True)
    starts = {
        (t, n): o
        for t, n, o in parse_offset_checkpoint((root / "log-start-offset-checkpoint").read_bytes()).entries
    }
    records = damage.read_records(root)
    out = set()
    for (group, topic, n), committed in commits.items():
        part = root / f"{topic}-{n}"
        if committed < 0 or not part.is_dir():
            continue
        bases = sorted(int(f.name.split(".")[0]) for f in part.glob("*.log"))
        start = max(starts.get((topic, n), bases[0]), bases[0])
        offsets = records.get(part.name) or {}
        end = max(offsets) + 1 if offsets else bases[-1]
        if not start <= committed <= end:
            out.add((group, topic, n, committed, start, end))
    return out


def _dup_offsets_log_dir(root: Path) -> tuple[Path, int]:
    """A segment whose third batch repeats the second one's offset (offsets 0, 1, 1, 2)."""
    from logdoctor.formats.record_types import RecordSpec
    from logdoctor.formats.writer import build_record_batch

    part = root / "t-0"
    part.mkdir(parents=True)
    (root / "meta.properties").write_text("version=0\nbroker.id=1\ncluster.id=abc\n")
    batches = [
        bytes(build_record_batch([RecordSpec(b"v%d" % i, timestamp=1_700_000_000_000 + i)], base_offset=o))
        for i, o in enumerate([0, 1, 1, 2])
    ]
    (part / "00000000000000000000.log").write_bytes(b"".join(batches))
    return part / "00000000000000000000.log", len(b"".join(batches))


def test_index_offset_error_truncates_the_whole_segment_like_recover_log(tmp_path):
    """OffsetIndex.append throws InvalidOffsetException on the repeated offset once an index entry is
    due (index.interval.bytes=1 here); LogLoader.recoverLog then truncates the segment to its base
    offset: 0 bytes, not the bytes before the batch."""
    log, size = _dup_offsets_log_dir(tmp_path / "logs")
    plan, report = plan_repair(
        [tmp_path / "logs"], backup_dir=str(tmp_path / "b"), deep=True, index_interval_bytes=1, jobs=1
    )
    assert "LOG_CORRUPT" in {f.code for f in report.findings}
    (trunc,) = [a for a in plan.actions if a.kind == "truncate-log"]
    change = next(c for c in trunc.changes if c.path == str(log))
    assert (change.size_before, change.size_after) == (size, 0)
    # with the default interval no entry is due at that batch: recovery reads it as valid, nothing to cut
    plan2, _ = plan_repair([tmp_path / "logs"], backup_dir=str(tmp_path / "b2"), deep=True, jobs=1)
    assert not [a for a in plan2.actions if a.kind == "truncate-log"]
    assert any(u.code == "LOG_CORRUPT" and "nothing to cut" in u.why for u in plan2.unrepaired)


def test_the_fix_scan_deep_prints_is_the_repair_that_works(tmp_path, realworld_dir):
    """`scan --deep` advised `repair DIR --only LOG_CORRUPT`, which plans at default depth: "Nothing to
    repair", exit 0, the corruption left. The printed command now plans from a deep scan, and its text says
    what the plan also does, with counts checked against kafka-python's reading of the same files."""
    d = _damaged(tmp_path, realworld_dir, timeindex=False)
    root, p = d["root"], d["p"]
    lost = d["lost"]
    later_logs = sum(1 for name in d["later"] if name.endswith(".log"))
    assert lost > 0 and later_logs >= 1
    found = json.loads(_cli("scan", str(root), "--deep", "--json").output)["findings"]
    mine = [f for f in found if f["code"] == "LOG_CORRUPT" and f["path"] == str(d["log"])]
    assert len(mine) == 1, mine
    fix = " ".join(mine[0]["fix"].split())
    command = re.search(r"`(logdoctor repair [^`]*)`", fix).group(1)
    assert command == f"logdoctor repair {root} --only LOG_CORRUPT --deep"
    assert f"truncates {d['log']} to the {d['cut']} valid bytes" in fix
    assert f"moves the {later_logs} later segment(s)" in fix
    assert f"; {lost:,} record(s) leave the log (offsets {d['new_leo']} to {d['last_offset']})" in fix, fix
    assert f"the log end becomes offset {d['new_leo']}" in fix
    # run exactly as printed: a plan that truncates, nothing written
    tree = damage.tree(root)
    argv = shlex.split(command)[1:]
    dry = _cli(*argv, "--json")
    assert dry.exit_code == 0, dry.output
    actions = json.loads(dry.output)["plan"]["actions"]
    assert [a["kind"] for a in actions if a["kind"] == "truncate-log"] == ["truncate-log"]
    moved_logs = [s for a in actions for s in a["steps"] if s["op"] == "move" and s["path"].endswith(".log")]
    assert len(moved_logs) == later_logs
    assert damage.tree(root) == tree
    # and with --apply it repairs: a deep scan no longer finds the corruption
    applied = _cli(*argv, "--apply", "--backup-dir", str(tmp_path / "b"))
    assert applied.exit_code in (0, 1, 2), applied.output
    assert "LOG_CORRUPT" not in _deep_codes(root)
    assert max(damage.read_records(root)[p.name]) + 1 == d["new_leo"]


def test_the_census_fix_of_a_deep_inventorys_log_corrupt_is_the_deep_repair(tmp_path, realworld_dir):
    """An inventory collected at --depth deep carries the deep scan's LOG_CORRUPT; the census's fix command
    for it is the repair that plans from a deep scan (the printed one runs and plans the truncation)."""
    from logdoctor.checks.inventory import build_inventory
    from logdoctor.spark.census_rules import BrokerInput, scan_fix

    d = _damaged(tmp_path, realworld_dir, timeindex=False)
    root = d["root"]
    inv = build_inventory([str(root)], Depth.DEEP, jobs=1)
    rows = [r for r in inv.rows if r["record"] == "finding" and r["code"] == "LOG_CORRUPT"]
    assert rows
    fix = scan_fix(rows[0], [BrokerInput(rows[0]["broker"], None, (str(root),))])
    assert fix.command == f"logdoctor repair {root} --only LOG_CORRUPT --deep"
    assert fix.argv == [shlex.split(fix.command)]
    dry = _cli(*fix.argv[0][1:], "--json")
    assert dry.exit_code == 0, dry.output
    assert "truncate-log" in {a["kind"] for a in json.loads(dry.output)["plan"]["actions"]}


def _kafka_python_rows(data: bytes, skip_position: int | None = None) -> list[tuple]:
    """(offset, timestamp, key, value) of every record kafka-python reads in ``data``, the batch starting
    at byte ``skip_position`` left out (the damaged one: its records are not intact)."""
    rows, pos = [], 0
    mr = MemoryRecords(data)
    while mr.has_next():
        b = mr.next_batch()
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
        if pos != skip_position:
            for r in b:
                key = None if r.key is None else bytes(r.key)
                value = None if r.value is None else bytes(r.value)
                rows.append((r.offset, r.timestamp, key, value))
        pos += size
    return rows


def test_repair_deep_saves_the_intact_records_it_removes_as_parquet(tmp_path, realworld_dir):
    """Issue 32 item 5: one byte flipped mid-segment; the truncation the broker would make removes the
    intact batches after it too. The plan says how many records, which offsets and where they go; --apply
    saves them first (Parquet of export's columns, beside the backup), equal to kafka-python's reading of
    the undamaged batches removed; rollback restores the log dir byte for byte."""
    import pyarrow.parquet as pq

    d = _damaged(tmp_path, realworld_dir, timeindex=False)
    root, backup = d["root"], tmp_path / "bk"
    damaged_tree = damage.tree(root)
    intact = _kafka_python_rows(d["log"].read_bytes(), skip_position=d["cut"])
    intact = [r for r in intact if r[0] >= d["new_leo"]]
    for name, data in sorted(d["later"].items()):
        if name.endswith(".log"):
            intact.extend(_kafka_python_rows(data))
    assert 0 < len(intact) < d["lost"]  # the damaged batch's records are not intact; the others are

    plan = _cli("repair", str(root), "--deep", "--backup-dir", str(backup))
    text = " ".join(plan.output.split())
    first, last = min(r[0] for r in intact), max(r[0] for r in intact)
    where = f"{backup}.records/{d['tp'][0]}-{d['tp'][1]}.offsets-{first}-{last}.parquet"
    assert f"the {len(intact)} intact record(s) (offsets [{first}, {last}]" in text, text
    assert where in text
    m = re.search(r"removes (\d+) record\(s\) at offsets \[(\d+), (\d+)\]", text)
    assert m is not None and int(m.group(1)) >= len(intact)
    assert (int(m.group(2)), int(m.group(3))) == (d["new_leo"], d["last_offset"])

    applied = _cli("repair", str(root), "--deep", "--backup-dir", str(backup), "--apply")
    assert applied.exit_code in (0, 1), applied.output
    table = pq.read_table(where)
    micros = table.column("timestamp").cast("int64").to_pylist()
    saved = sorted(
        zip(table.column("offset").to_pylist(), [us // 1000 for us in micros],
            table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True)
    )  # fmt: skip
    assert saved == sorted(intact)
    assert set(table.column("topic").to_pylist()) == {d["tp"][0]}

    r = _cli("repair", "--rollback", str(backup / "journal.jsonl"), "--apply")
    assert r.exit_code == 0, r.output
    assert damage.tree(root) == damaged_tree

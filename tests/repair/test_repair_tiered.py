"""repair never loses the remote tier, and never makes intact records unreadable by the log start offset.

- The tiered log dirs of ../shared/tiered (Kafka's classes, LocalTieredStorage, Aiven's plugin) keep
  ``payments 0 0`` and ``payments 1 0`` in log-start-offset-checkpoint, below their local segments, as a
  broker with remote storage does. Any other finding that makes repair rewrite that file must leave both
  entries exactly as they were: a broker with remote storage would delete every remote segment below a
  raised log start (RemoteLogManager.RLMExpirationTask), and the data exists nowhere else.
- An entry below the first local segment of a partition that is NOT known to be tiered is left too
  (LogLoader.load takes max(entry, first segment) itself without remote storage).
- Issue 24: an entry beyond the log end (999999 for [0, 8000)) made the broker delete every segment at
  startup (LogLoader.recoverLog); repair sets it to the first offset on disk, and says what was claimed.
  For a tiered partition the entry is not lowered (the remote tier's start is unknown offline): refused.

Records are read back with kafka-python (tests/procedures/helpers.read_records), not with logdoctor.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "procedures"))

import helpers

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan
from logdoctor.cli import commands  # noqa: F401  (registers every command on the app)
from logdoctor.cli.main import app
from logdoctor.repair import plan_repair
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

LSO = "log-start-offset-checkpoint"
VARIANTS = ["kafka-local", "aiven/plain", "aiven/compressed", "aiven/encrypted"]


def _cli(*args: str):
    return CliRunner().invoke(app, [*args, "--jobs", "1"], terminal_width=200)


def _tiered_copy(variant: str, tmp_path: Path) -> Path:
    src = realworld.require_tiered() / variant / "kafka-logs"
    return realworld.writable_copy(src, tmp_path / "kafka-logs")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _repair_apply(d: Path) -> str:
    dry = _cli("repair", str(d))
    assert dry.exit_code in (0, 1, 2), dry.output
    res = _cli("repair", str(d), "--apply")
    assert res.exit_code in (0, 1, 2), res.output  # 1/2: the missing meta.properties stays (no repair)
    assert "Traceback" not in res.output
    return " ".join((dry.output + res.output).split())


@pytest.mark.parametrize("variant", VARIANTS)
def test_unrelated_checkpoint_finding_keeps_the_tiered_log_start(variant, tmp_path):
    d = _tiered_copy(variant, tmp_path)
    before = (d / LSO).read_text()
    assert _lines(d / LSO)[2:] == ["payments 0 0", "payments 1 0"]
    # an entry of a partition that is not here, with the count line to match: a CHECKPOINT_MISMATCH
    (d / LSO).write_text("0\n3\npayments 0 0\ngone 7 5\npayments 1 0\n")
    records = {p: helpers.read_records(d / p) for p in ("payments-0", "payments-1")}
    text = _repair_apply(d)
    assert (d / LSO).read_text() == before, text  # gone-7 dropped, both tiered entries as they were
    assert "payments-0 0 kept as it is (tiered" in text
    assert "tiered partitions" in text and "RemoteLogManager" in text
    for p, recs in records.items():
        assert helpers.read_records(d / p) == recs
    after = scan([d], ScanOptions(depth=Depth.DEFAULT), jobs=1)
    assert not [f for f in after.findings if f.code == "CHECKPOINT_MISMATCH"]
    starts = {(p.topic, p.partition): p.log_start_offset for p in after.partitions if p.topic == "payments"}
    assert starts == {("payments", 0): 0, ("payments", 1): 0}


def test_wrong_count_line_keeps_the_tiered_log_start(tmp_path):
    d = _tiered_copy("kafka-local", tmp_path)
    (d / LSO).write_text("0\n5\npayments 0 0\npayments 1 0\n")  # the broker rejects the whole file
    text = _repair_apply(d)
    assert _lines(d / LSO) == ["0", "2", "payments 0 0", "payments 1 0"], text


def test_truncation_of_a_tiered_partition_keeps_its_log_start(tmp_path):
    """A torn tail after an unclean shutdown: the truncation clamps the other checkpoints of payments-0
    to its new log end, but its log start entry stays 0 (the old code raised it to 1296)."""
    d = _tiered_copy("kafka-local", tmp_path)
    (d / ".kafka_cleanshutdown").unlink()
    active = sorted((d / "payments-0").glob("*.log"))[-1]
    with open(active, "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x07\xd0\x00\x00\x01\x00garbage" + b"\xff" * 64)
    (d / "recovery-point-offset-checkpoint").write_text(
        (d / "recovery-point-offset-checkpoint").read_text().replace("payments 0 2000", "payments 0 1500")
    )
    plan, _ = plan_repair([d], jobs=1)
    assert any(a.kind == "truncate" or "LOG_CORRUPT" in a.codes for a in plan.actions), plan.to_json()
    text = _repair_apply(d)
    assert _lines(d / LSO)[2:] == ["payments 0 0", "payments 1 0"], text


def test_tiered_log_start_beyond_the_local_log_end_is_left_and_said(tmp_path):
    d = _tiered_copy("kafka-local", tmp_path)
    (d / LSO).write_text("0\n2\npayments 0 999999\npayments 1 0\n")
    plan, _ = plan_repair([d], jobs=1)
    whys = [u.why for u in plan.unrepaired if u.path == str(d / LSO)]
    assert len(whys) == 1 and "999999" in whys[0] and "not known offline" in whys[0], plan.to_json()
    _repair_apply(d)
    assert _lines(d / LSO)[2:] == ["payments 0 999999", "payments 1 0"]


# --- generated log dirs (not tiered) -----------------------------------------------------------------


def _generated(tmp_path: Path) -> Path:
    d, _ = generate_log_dir(
        tmp_path / "gen",
        [TopicSpec("orders", 2, records_per_partition=8000, records_per_batch=50, segment_bytes=64 << 10)],
    )
    return d


def test_log_start_beyond_the_log_end_keeps_every_record_readable(tmp_path):
    """Issue 24: 999999 for a partition holding [0, 8000): the entry becomes 0 (the old code set 8000,
    below which all 8000 intact records were unreadable), and the plan says what was claimed."""
    d = _generated(tmp_path)
    (d / LSO).write_text("0\n1\norders 0 999999\n")
    records = helpers.read_records(d / "orders-0")
    assert sorted(records) == list(range(8000))
    text = _repair_apply(d)
    assert _lines(d / LSO) == ["0", "1", "orders 0 0"]
    assert "the checkpoint claimed log start 999999, beyond the log end 8000" in text
    assert "Deleting all segments because logEndOffset (8000) is smaller than logStartOffset 999999" in text
    assert helpers.read_records(d / "orders-0") == records
    after = scan([d], ScanOptions(depth=Depth.DEFAULT), jobs=1)
    p = next(p for p in after.partitions if (p.topic, p.partition) == ("orders", 0))
    assert (p.log_start_offset, p.log_end_offset) == (0, 8000)
    assert not [f for f in after.findings if f.code == "CHECKPOINT_MISMATCH"]


def test_entry_below_the_first_segment_of_an_untiered_partition_is_left(tmp_path):
    """Segments deleted below an entry (no remote storage anywhere): the entry is not raised to the first
    segment (the broker takes the max itself), though the file is rewritten for another finding."""
    d = _generated(tmp_path)
    part = d / "orders-0"
    logs = sorted(part.glob("*.log"))
    first_kept = int(logs[2].stem)
    for log in logs[:2]:
        for suffix in (".log", ".index", ".timeindex", ".snapshot"):
            log.with_suffix(suffix).unlink(missing_ok=True)
    (d / LSO).write_text("0\n2\norders 0 0\nvanished 0 3\n")
    report = scan([d], ScanOptions(depth=Depth.DEFAULT), jobs=1)
    p = next(p for p in report.partitions if (p.topic, p.partition) == ("orders", 0))
    assert not p.remote_log_enabled and "nothing else shows remote storage" in p.tiering_evidence
    assert (p.log_start_offset, p.local_log_start_offset) == (first_kept, first_kept)
    text = _repair_apply(d)
    assert _lines(d / LSO) == ["0", "1", "orders 0 0"], text
    assert f"orders-0 0 kept as it is (below the first local segment {first_kept}" in text


def test_generated_dirs_keep_their_other_results(tmp_path):
    """A healthy untiered dir: nothing tiered, nothing planned, offsets as before (max(entry, first))."""
    d = _generated(tmp_path)
    shutil.copyfile(d / LSO, tmp_path / "lso.before")
    report = scan([d], ScanOptions(depth=Depth.DEFAULT), jobs=1)
    assert all(not p.remote_log_enabled for p in report.partitions)
    assert all(p.log_start_offset == p.local_log_start_offset == 0 for p in report.partitions)
    plan, _ = plan_repair([d], jobs=1, report=report)
    assert plan.empty and plan.notes == []


def test_a_claim_hiding_the_tiering_is_left_with_a_command_that_works(tmp_path):
    """Both payments entries beyond the log end: nothing shows whether payments is tiered, but the log dir
    shows remote storage; in doubt the entries are left, and the printed command (for a topic known not to
    be tiered) sets them to the first offsets on disk when run exactly as printed.

    (tiered-integ: the remote log metadata now is evidence, and it shows payments tiered; so that nothing
    shows it here, the metadata partitions are replaced by the remote-log-index-cache/ a broker with
    remote storage also leaves; with them, see test_a_claim_beyond_the_log_end_of_a_partition_the_metadata_
    shows_tiered_is_refused)"""
    import shlex

    d = _tiered_copy("kafka-local", tmp_path)
    for n in (16, 21):
        shutil.rmtree(d / f"__remote_log_metadata-{n}")
    rp = d / "recovery-point-offset-checkpoint"  # as a broker never holding them would (no finding)
    kept = [x for x in _lines(rp)[2:] if not x.startswith("__remote_log_metadata ")]
    rp.write_text("".join(f"{x}\n" for x in ["0", str(len(kept)), *kept]))
    (d / "remote-log-index-cache").mkdir()
    (d / LSO).write_text("0\n2\npayments 0 999999\npayments 1 888888\n")
    plan, _ = plan_repair([d], jobs=1)
    whys = [u.why for u in plan.unrepaired if u.path == str(d / LSO)]
    assert len(whys) == 2 and "nothing says whether payments is tiered" in whys[0], whys
    command = whys[0].split("`")[1]
    assert command.startswith("logdoctor repair ")
    _repair_apply(d)
    assert _lines(d / LSO)[2:] == ["payments 0 999999", "payments 1 888888"]
    args = shlex.split(command)[1:]
    res = _cli(*args, "--apply")
    assert res.exit_code in (0, 1, 2) and "Traceback" not in res.output, res.output
    assert _lines(d / LSO) == ["0", "2", "payments 0 1296", "payments 1 2289"], res.output


def test_a_claim_beyond_the_log_end_of_a_partition_the_metadata_shows_tiered_is_refused(tmp_path):
    """The same claims with __remote_log_metadata in the log dir: its replay lists payments' uploaded
    segments, so payments is tiered (checks.tiered step 4) and the entries are refused as a tiered
    partition's, named with that evidence; `repair --apply` leaves them byte for byte."""
    d = _tiered_copy("kafka-local", tmp_path)
    (d / LSO).write_text("0\n2\npayments 0 999999\npayments 1 888888\n")
    before = (d / LSO).read_bytes()
    plan, _ = plan_repair([d], jobs=1)
    whys = [u.why for u in plan.unrepaired if u.path == str(d / LSO)]
    assert len(whys) == 2 and all("is tiered (__remote_log_metadata-" in w for w in whys), whys
    assert "COPY_SEGMENT_FINISHED" in whys[0]
    _repair_apply(d)
    assert (d / LSO).read_bytes() == before


def test_recovery_point_below_the_local_log_start_is_repaired_by_the_printed_command(tmp_path):
    """Issue 32 item 8: with remote storage on, scan printed `repair DIR --only CHECKPOINT_MISMATCH` for a
    recovery point below the local log start, and that repair answered "Nothing to repair". The broker
    raises it to the local log start (UnifiedLog updateLocalLogStartOffset); so does the repair now."""
    from typer.testing import CliRunner

    import realworld
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan
    from logdoctor.cli.main import app

    tiered = realworld.require_tiered()
    d = realworld.writable_copy(tiered / "kafka-local" / "kafka-logs", tmp_path / "kafka-logs")
    rp = d / "recovery-point-offset-checkpoint"
    rp.write_text(rp.read_text().replace("payments 0 2000", "payments 0 5"))

    def mismatches():
        report = scan([str(d)], ScanOptions(Depth.DEFAULT, 1_800_000_000_000), jobs=1)
        return [f for f in report.findings if f.code == "CHECKPOINT_MISMATCH"]

    (f,) = mismatches()
    assert "recovery point 5 of payments-0" in f.message
    command = f.fix.split("`")[1]
    assert command == f"logdoctor repair {d} --only CHECKPOINT_MISMATCH"
    result = CliRunner().invoke(app, [*command.split()[1:], "--apply"], terminal_width=250)
    assert result.exit_code in (0, 1), result.output
    assert mismatches() == []
    assert "payments 0 1296\n" in rp.read_text()  # README: payments-0 keeps [1296, 2000) locally

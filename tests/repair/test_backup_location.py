"""Issue 59 item 6: backup dirs beside the log dir broke globs (`logdoctor export
out/demo/fleet/broker-*/kafka-logs-*` matched `kafka-logs-0.logdoctor-backup-<time>`: 64), and two repairs
in the same second took the same backup dir name (the second `--apply`: 78, "exists and is not empty").
Default backup dirs now go to a hidden `.logdoctor-backups` beside the log dir, under a name unique to the
nanosecond and the process; an input that is logdoctor's own backup (an old one beside the log dirs, found
by its journal and README) is left out with a note, never an error; resume and rollback after `kill -9`
still find the journal there."""

from __future__ import annotations

import glob
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import write_runs as wr

from logdoctor.logdir.discovery import discover
from logdoctor.sample.logdir import TopicSpec, generate_log_dir

pytestmark = pytest.mark.needs_root  # write_runs' trees compare owners


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """broker-1 with two log dirs (kafka-logs-0: orders, kafka-logs-1: payments), generated."""
    work = tmp_path_factory.mktemp("backups")
    broker = work / "template" / "broker-1"
    for k, topic in enumerate(("orders", "payments")):
        spec = TopicSpec(topic, partitions=2, records_per_partition=300)
        gen, _ = generate_log_dir(work / f"gen{k}", [spec], seed=59)
        shutil.copytree(gen, broker / f"kafka-logs-{k}")
    return work / "template"


def _damage(log_dir: Path) -> None:
    for p in sorted(log_dir.glob("orders-*/*.index")):
        p.unlink()


def test_two_repairs_planned_in_the_same_millisecond_get_two_backup_dirs(tmp_path, template):
    """The same moment (``now_ms``) twice, as two runs in one second had: each applies, each its backup."""
    from logdoctor.repair import apply_plan, plan_repair

    root = wr.clone(template, tmp_path / "fleet")
    log_dir = root / "broker-1" / "kafka-logs-0"
    results = []
    for _ in range(2):
        _damage(log_dir)
        plan, _ = plan_repair([str(log_dir)], jobs=1, now_ms=1_764_000_000_000)
        results.append(apply_plan(plan))
    assert [r.status for r in results] == ["applied", "applied"], [r.error for r in results]
    assert results[0].backup_dir != results[1].backup_dir


def test_default_backups_are_hidden_from_globs_of_log_dirs(tmp_path, template):
    root = wr.clone(template, tmp_path / "fleet")
    log_dir = root / "broker-1" / "kafka-logs-0"
    _damage(log_dir)
    r = wr.cli("repair", log_dir, "--apply")
    assert r.returncode in (0, 1, 2) and "applied:" in r.stdout, r.stderr[-2000:]
    (backup,) = (root / "broker-1" / ".logdoctor-backups").iterdir()
    assert f"backup dir: {backup}" in r.stdout and (backup / "journal.jsonl").is_file()
    logs = [root / "broker-1" / "kafka-logs-0", root / "broker-1" / "kafka-logs-1"]
    for pattern in ("broker-*/kafka-logs-*", "broker-1/kafka-logs-*", "broker-*/*", "*/*/*"):
        matched = sorted(Path(p) for p in glob.glob(str(root / pattern)))
        assert all(".logdoctor" not in str(p) for p in matched), (pattern, matched)
    glob_arg = str(root / "broker-*" / "kafka-logs-*")
    scan = wr.cli("scan", *sorted(glob.glob(glob_arg)))  # as the shell expands it: no hidden folder
    assert scan.returncode == 0, (scan.stdout[-2000:], scan.stderr[-2000:])
    assert {r.log_dir for r in discover(glob_arg)} == {str(p) for p in logs}


def test_an_old_backup_beside_the_log_dirs_is_left_out_with_a_note(tmp_path, template):
    """A backup dir where older versions put it (``<log dir>.logdoctor-backup-<time>``, beside the log
    dirs): matched by the glob, left out of scan, inventory, retention, repair and export's discovery with
    a note; a folder merely named so (no journal) is no backup: it stays an input (and is refused as
    what it is)."""
    root = wr.clone(template, tmp_path / "fleet")
    log_dir = root / "broker-1" / "kafka-logs-0"
    _damage(log_dir)
    old = root / "broker-1" / "kafka-logs-0.logdoctor-backup-20261101T000000Z"
    r = wr.cli("repair", log_dir, "--apply", "--backup-dir", old)
    assert r.returncode in (0, 1, 2) and (old / "journal.jsonl").is_file(), r.stderr[-2000:]
    inputs = sorted(glob.glob(str(root / "broker-*" / "kafka-logs-*")))
    assert str(old) in inputs
    note = f"note: left out {old}: it is a logdoctor backup dir (it holds journal.jsonl and README.txt)"
    for args in (
        ("scan", *inputs),
        ("scan", "--json", *inputs),
        ("retention", *inputs),
        ("repair", *inputs),
        ("inventory", *inputs, "--out", tmp_path / "inv.json"),
    ):
        r = wr.cli(*args)
        assert r.returncode in (0, 1, 2), (args, r.returncode, r.stderr[-2000:])
        assert note in r.stderr, (args, r.stderr[-2000:])
    from logdoctor.spark.census_inputs import classify  # census's door (no Spark started)

    classified = classify(inputs)
    assert str(old) not in classified.items
    assert classified.left_out == [f"{note[len('note: ') :]}: {old}, not a log dir"]
    refs = discover(inputs)  # export's door
    assert {r.log_dir for r in refs} == {str(log_dir), str(root / "broker-1" / "kafka-logs-1")}
    assert not [r for r in refs if ".logdoctor" in r.path]
    # only a backup: nothing to read, a usage error naming why
    r = wr.cli("scan", old)
    assert r.returncode == 64 and note in r.stderr, r.stderr
    # named like a backup, holding no journal: not left out by its name, refused as not a log dir
    fake = root / "broker-1" / "kafka-logs-9.logdoctor-backup-20261101T000000Z"
    fake.mkdir()
    (fake / "notes.txt").write_text("mine")
    r = wr.cli("scan", log_dir, fake)
    assert r.returncode == 64 and "left out" not in r.stderr, r.stderr


def test_resume_and_rollback_after_kill_find_the_hidden_backup(tmp_path, template):
    root = wr.clone(template, tmp_path / "fleet")
    log_dir = root / "broker-1" / "kafka-logs-0"
    _damage(log_dir)
    damaged = wr.tree(log_dir)
    crashed = wr.cli("repair", log_dir, "--apply", "--jobs", "1", LOGDOCTOR_CRASH_AFTER_STEP="1")
    assert crashed.returncode == -9, crashed.stderr[-2000:]
    (backup,) = (root / "broker-1" / ".logdoctor-backups").iterdir()
    refused = wr.cli("repair", log_dir, "--apply")  # the unfinished run is found in .logdoctor-backups
    assert refused.returncode == 65, (refused.returncode, refused.stderr[-2000:])
    resume, rollback = wr.printed_commands(refused.stderr)
    assert str(backup / "journal.jsonl") in resume
    r = wr.run_printed(rollback)
    assert r.returncode == 0, r.stderr[-2000:]
    assert wr.tree(log_dir) == damaged
    r = wr.cli("repair", log_dir, "--apply")  # finished (rolled back): a new run goes ahead
    assert r.returncode == 0 and "applied:" in r.stdout, r.stderr[-2000:]
    assert len(list((root / "broker-1" / ".logdoctor-backups").iterdir())) == 2

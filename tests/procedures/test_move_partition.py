"""move-partition on copies of real log dirs and generated fleets: folders, checkpoints, scan, records
(kafka-python), cross-file-system copies, refusals, and crashes at every step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers

import cli_runs
import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.findings import Severity
from logdoctor.checks.scanner import scan
from logdoctor.errors import BrokerRunningError
from logdoctor.repair import copies as cp
from logdoctor.repair.apply import PHASES, CrashHook
from logdoctor.repair.backup import NoSpaceError
from logdoctor.repair.procedures import apply, plan_move, resume_journal, rollback_journal, verify
from logdoctor.repair.procedures.common import ProcedureRefused
from logdoctor.sample.logdir import BrokerSpec, FleetSpec, TopicSpec, generate_fleet

# (log dir, what to move: a partition folder name, or "topic:<name>")
CASES = [
    ("zk-0.10.1-xpxwo100", "TEST-TOPIC-0"),
    ("zk-2.1-yuanliubei", "topic1-0"),
    ("zk-pre2.8-volodymyrzee", "topic:first_topic"),
    ("zk-3.0-tuyen-nnt-b0", "topic:my-first-topic"),
    ("zk-3.6-saikrupa82-a", "data-stream-0"),
    ("kraft-3.5-greenlemont-n3", "payment-create-request-0"),
    ("kraft-4.2-nomanazeem", "topic:demo-topic"),
]


def _cases():
    if not realworld.available():
        return realworld.absent(2)
    return [pytest.param(n, w, id=f"{n}:{w}") for n, w in CASES]


def _errors(log_dirs: list[Path]) -> set[tuple[str, str]]:
    """(code, partition folder or root file name) of every error finding: comparable across dirs."""
    report = scan(log_dirs, ScanOptions(depth=Depth.DEFAULT), jobs=1)
    out = set()
    for f in report.findings:
        if f.severity is Severity.ERROR:
            rel = Path(f.path)
            for d in log_dirs:
                if rel.is_relative_to(d):
                    rel = rel.relative_to(d)
            out.add((f.code, rel.parts[0] if rel.parts else ""))
    return out


def _moved(src: Path, what: str) -> list[str]:
    if what.startswith("topic:"):
        topic = what.split(":", 1)[1]
        return sorted(p for p in helpers.live_partitions(src) if p.rpartition("-")[0] == topic)
    return [what]


def _check_moved(src: Path, dst: Path, names: list[str], before_cps: dict, records: dict) -> None:
    for name in names:
        assert name not in helpers.live_partitions(src)
        assert name in helpers.live_partitions(dst)
        assert helpers.read_records(dst / name) == records[name]
    assert not helpers.other_dirs(src) and not helpers.other_dirs(dst)
    tps = {(n.rpartition("-")[0], int(n.rpartition("-")[2])) for n in names}
    for cp_name in helpers.CHECKPOINTS:
        src_after, dst_after = helpers.checkpoint(src, cp_name), helpers.checkpoint(dst, cp_name)
        src_before, dst_before = before_cps[(src, cp_name)], before_cps[(dst, cp_name)]
        assert not tps & set(src_after)
        for tp in tps:
            assert dst_after.get(tp) == src_before.get(tp), (cp_name, tp)
        # the entries of the other partitions are untouched
        assert {k: v for k, v in src_after.items()} == {k: v for k, v in src_before.items() if k not in tps}
        assert {k: v for k, v in dst_after.items() if k not in tps} == {
            k: v for k, v in dst_before.items() if k not in tps
        }


def _cps(*dirs: Path) -> dict:
    return {(d, n): helpers.checkpoint(d, n) for d in dirs for n in helpers.CHECKPOINTS}


def _plan(src: Path, dst: Path, what: str, **kw):
    if what.startswith("topic:"):
        return plan_move(src, dst, topics=[what.split(":", 1)[1]], **kw)
    topic, _, p = what.rpartition("-")
    return plan_move(src, dst, [(topic, int(p))], **kw)


@pytest.mark.parametrize(("name", "what"), _cases())
def test_move_realworld(name, what, tmp_path, realworld_dir):
    src = helpers.copy_log_dir(realworld_dir / name, tmp_path / "disk1" / "kafka-logs")
    dst = helpers.second_log_dir(src, tmp_path / "disk2" / "kafka-logs")
    names = _moved(src, what)
    assert names
    records = {n: helpers.read_records(src / n) for n in names}
    errors_before = _errors([src, dst])
    before_cps = _cps(src, dst)
    before_tree = helpers.tree(src), helpers.tree(dst)

    pp = _plan(src, dst, what, backup_dir=tmp_path / "backup")
    assert (helpers.tree(src), helpers.tree(dst)) == before_tree  # planning writes nothing
    assert pp.summary["method"] == "rename"
    result = apply(pp.plan)
    assert result.status == "applied", result.error
    assert verify(pp.plan) == []
    _check_moved(src, dst, names, before_cps, records)
    assert _errors([src, dst]) <= errors_before


def test_move_across_file_systems(tmp_path, realworld_dir):
    """/dev/shm is another file system here: the folder is copied, verified, then removed."""
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system at /dev/shm (test_move_forced_copy covers the copy path)")
    src = helpers.copy_log_dir(realworld_dir / "zk-0.10.1-xpxwo100", tmp_path / "kafka-logs")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        dst = helpers.second_log_dir(src, Path(shm) / "kafka-logs")
        records = {"TEST-TOPIC-0": helpers.read_records(src / "TEST-TOPIC-0")}
        before_cps = _cps(src, dst)
        errors_before = _errors([src, dst])
        pp = plan_move(src, dst, [("TEST-TOPIC", 0)], backup_dir=tmp_path / "backup")
        assert pp.summary["method"] == "copy" and not pp.summary["same_file_system"]
        assert [s.op for s in pp.plan.steps if s.op in ("copy-partition", "remove-copied")] == [
            "copy-partition",
            "remove-copied",
        ]
        seen: list[int] = []
        result = apply(pp.plan, progress=seen.append)
        assert result.status == "applied", result.error
        assert sum(seen) == pp.summary["bytes"] > 0
        assert verify(pp.plan) == []
        _check_moved(src, dst, ["TEST-TOPIC-0"], before_cps, records)
        assert _errors([src, dst]) <= errors_before
        # mtimes kept: time retention falls back to the .log mtime
        for p in (dst / "TEST-TOPIC-0").iterdir():
            assert p.stat().st_mtime_ns > 0
        # a rollback copies it back from the verified copy
        res = rollback_journal(result.journal)[0]
        assert res.status == "rolled-back", res.error
        assert helpers.read_records(src / "TEST-TOPIC-0") == records["TEST-TOPIC-0"]
        assert "TEST-TOPIC-0" not in helpers.live_partitions(dst)


def _fleet(tmp_path: Path, partitions: int = 3) -> tuple[Path, Path]:
    fleet = generate_fleet(
        tmp_path / "fleet",
        FleetSpec(
            topics=[
                TopicSpec(
                    "orders",
                    partitions=partitions,
                    records_per_partition=200,
                    segment_bytes=6000,
                    records_per_batch=3,
                )
            ],
            brokers=(BrokerSpec(0, log_dirs=2),),
        ),
    )
    return fleet.log_dirs[0][0], fleet.log_dirs[0][1]


def test_move_forced_copy_keeps_mtimes_modes_and_bytes(tmp_path):
    src, dst = _fleet(tmp_path)
    part = sorted(helpers.live_partitions(src))[0]
    stats = {p.name: (p.stat().st_mtime_ns, p.stat().st_mode) for p in (src / part).iterdir()}
    files = helpers.tree(src / part)
    before_cps = _cps(src, dst)
    records = {part: helpers.read_records(src / part)}
    topic, _, p = part.rpartition("-")
    pp = plan_move(src, dst, [(topic, int(p))], force_copy=True, backup_dir=tmp_path / "backup")
    assert pp.summary["method"] == "copy"
    assert apply(pp.plan).status == "applied"
    assert verify(pp.plan) == []
    assert helpers.tree(dst / part) == files
    assert {q.name: (q.stat().st_mtime_ns, q.stat().st_mode) for q in (dst / part).iterdir()} == stats
    _check_moved(src, dst, [part], before_cps, records)
    manifest = json.loads((tmp_path / "backup" / "manifests" / f"{part}.json").read_text())
    assert manifest["hash"] == cp.HASH_NAME and set(manifest["checksums"]) == set(files) - {"."}


def test_verification_catches_a_changed_byte(tmp_path):
    src, dst = _fleet(tmp_path)
    pp = plan_move(src, dst, [("orders", 0)], force_copy=True, backup_dir=tmp_path / "backup")
    assert apply(pp.plan).status == "applied"
    log = sorted((dst / "orders-0").glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[100] ^= 1
    log.write_bytes(bytes(data))
    problems = verify(pp.plan)
    assert len(problems) == 1 and log.name in problems[0]


# --- refusals: nothing written, and why --------------------------------------------------------------


def _refused(tmp_path, src, dst, exc, match, **kw):
    before = helpers.tree(tmp_path)
    with pytest.raises(exc, match=match):
        plan_move(src, dst, [("orders", 0)], backup_dir=tmp_path / "backup", **kw)
    assert helpers.tree(tmp_path) == before


def test_refuses_when_a_broker_holds_a_lock(tmp_path):
    src, dst = _fleet(tmp_path)
    for locked in (src, dst):
        with helpers.broker_holding_lock(locked) as pid:
            _refused(tmp_path, src, dst, BrokerRunningError, str(pid))


def test_refuses_existing_destination(tmp_path):
    src, dst = _fleet(tmp_path)
    (dst / "orders-0").mkdir()
    _refused(tmp_path, src, dst, ProcedureRefused, "already has orders-0")
    (dst / "orders-0").rmdir()
    (dst / "orders-0.0123456789abcdef0123456789abcdef-future").mkdir()
    _refused(tmp_path, src, dst, ProcedureRefused, "future copy")


def test_refuses_without_space(tmp_path, monkeypatch):
    src, dst = _fleet(tmp_path)
    monkeypatch.setattr(cp, "free_bytes", lambda path: 1 << 20)
    _refused(tmp_path, src, dst, NoSpaceError, "bytes free", force_copy=True)


def test_refuses_other_cluster_or_broker(tmp_path):
    src, dst = _fleet(tmp_path)
    meta = dst / "meta.properties"
    original = meta.read_text()
    meta.write_text(original.replace("broker.id=0", "broker.id=7"))
    _refused(tmp_path, src, dst, ProcedureRefused, "broker 7")
    cluster = next(line for line in original.splitlines() if line.startswith("cluster.id="))
    meta.write_text(original.replace(cluster, "cluster.id=AAAAAAAAAAAAAAAAAAAAAA"))
    _refused(tmp_path, src, dst, ProcedureRefused, "cluster")


# --- crashes --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("force_copy", [False, True], ids=["rename", "copy"])
@pytest.mark.parametrize("finish", ["resume", "rollback"])
def test_kill_at_every_step(tmp_path, force_copy, finish):
    """SIGKILL at every phase of every step, then --resume or --rollback: the partition is in exactly
    one of the two dirs, with its records, and the checkpoints are well formed."""
    runs = 0
    base = tmp_path / "base"
    src0, dst0 = _fleet(base, partitions=2)
    n_steps = len(
        plan_move(
            src0, dst0, [("orders", 0)], force_copy=force_copy, backup_dir=tmp_path / "unused"
        ).plan.steps
    )
    records = helpers.read_records(src0 / "orders-0")
    for step in range(1, n_steps + 1):
        for phase in PHASES:
            work = tmp_path / f"w{step}-{phase}"
            src, dst = _fleet(work, partitions=2)
            original = helpers.tree(work / "fleet")
            pp = plan_move(src, dst, [("orders", 0)], force_copy=force_copy, backup_dir=work / "backup")
            status = helpers.run_forked(lambda p=pp, at=(step, phase): apply(p.plan, crash=CrashHook(at=at)))
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            assert killed or os.WEXITSTATUS(status) == 0, (step, phase, status)
            runs += killed
            journal = work / "backup" / "journal.jsonl"
            if not journal.exists():  # killed before the journal's first record: nothing changed
                assert helpers.tree(work / "fleet") == original
                continue
            if finish == "resume":
                res, plan = resume_journal(journal)
                assert res.status == "applied", (step, phase, res.error)
                assert verify(plan) == [], (step, phase)
                holder, other = dst, src
            else:
                res, _ = rollback_journal(journal)
                assert res.status == "rolled-back", (step, phase, res.error)
                assert helpers.tree(work / "fleet") == original, (step, phase)
                holder, other = src, dst
            assert "orders-0" in helpers.live_partitions(
                holder
            ) and "orders-0" not in helpers.live_partitions(other)
            assert not helpers.other_dirs(src) and not helpers.other_dirs(dst), (step, phase)
            assert helpers.read_records(holder / "orders-0") == records
            for d in (src, dst):
                for name in helpers.CHECKPOINTS:
                    helpers.checkpoint(d, name)  # strict parse: well formed, count right
    assert runs >= n_steps  # the hook fired at least once per step


# --- the command line --------------------------------------------------------------------------------


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command in this process (tests/cli_runs.py); a run killed at a step (``LOGDOCTOR_CRASH_AT``:
    SIGKILL) in a process of its own."""
    if "LOGDOCTOR_CRASH_AT" not in (env or {}):
        return cli_runs.logdoctor(*args, env=env)
    return subprocess.run(
        [sys.executable, "-c", "from logdoctor.cli.main import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_cli_dry_run_json_apply_and_resume_after_kill(tmp_path):
    src, dst = _fleet(tmp_path)
    before = helpers.tree(tmp_path)
    out = _cli("move-partition", "orders-0", "orders-2", "--from", str(src), "--to", str(dst), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["applied"] is False and [p["partition"] for p in doc["summary"]["partitions"]] == [
        "orders-0",
        "orders-2",
    ]
    assert helpers.tree(tmp_path) == before
    text = _cli("move-partition", "orders-0", "--from", str(src), "--to", str(dst))
    assert text.returncode == 0 and "Dry run" in text.stdout and "disk usage before" in text.stdout
    # killed inside the copy of the second partition, then finished with `logdoctor repair --resume`
    backup = tmp_path / "backup"
    out = _cli(
        "move-partition",
        "orders-0",
        "orders-2",
        "--from",
        str(src),
        "--to",
        str(dst),
        "--copy",
        "--apply",
        "--backup-dir",
        str(backup),
        env={"LOGDOCTOR_CRASH_AT": "5:temp-written"},
    )
    assert out.returncode == -signal.SIGKILL, out.stderr
    assert helpers.other_dirs(dst)  # a partial copy was left
    # without --apply, --resume and --rollback print the steps they would run and write nothing
    # (docs/safety.md: every writing command writes only with --apply)
    killed = helpers.tree(tmp_path)
    for command, mode in (("repair", "--resume"), ("move-partition", "--rollback"), ("repair", "--rollback")):
        dry = _cli(command, mode, str(backup / "journal.jsonl"))
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert "Dry run: nothing was written" in dry.stdout and "step 5:" in dry.stdout, dry.stdout
        printed = f"logdoctor {command} {mode} {backup / 'journal.jsonl'} --apply"
        assert printed in " ".join(dry.stdout.split()), dry.stdout
        assert helpers.tree(tmp_path) == killed, (command, mode)
    dry = json.loads(_cli("move-partition", "--resume", str(backup / "journal.jsonl"), "--json").stdout)
    assert dry["applied"] is False and dry["preview"]["mode"] == "resume"
    assert dry["preview"]["steps"][0]["n"] == 5
    assert helpers.tree(tmp_path) == killed
    out = _cli("repair", "--resume", str(backup / "journal.jsonl"), "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert {"orders-0", "orders-2"} <= helpers.live_partitions(dst)
    assert not ({"orders-0", "orders-2"} & helpers.live_partitions(src))
    assert not helpers.other_dirs(src) and not helpers.other_dirs(dst)
    # and undone with move-partition --rollback
    out = _cli("move-partition", "--rollback", str(backup / "journal.jsonl"), "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["result"]["status"] == "rolled-back"
    assert {"orders-0", "orders-2"} <= helpers.live_partitions(src)


def test_cli_refusal_exit_codes(tmp_path):
    src, dst = _fleet(tmp_path)
    (dst / "orders-0").mkdir()
    out = _cli("move-partition", "orders-0", "--from", str(src), "--to", str(dst), "--apply")
    # 78 (EX_CONFIG): refused for the state of the log dirs; 65 is kept for "changed since planning"
    assert out.returncode == 78 and "already has orders-0" in out.stderr
    with helpers.broker_holding_lock(src):
        out = _cli("move-partition", "orders-1", "--from", str(src), "--to", str(dst), "--apply")
    assert out.returncode == 75 and "locked" in out.stderr
    out = _cli("move-partition", "nodash", "--from", str(src), "--to", str(dst))
    assert out.returncode == 64

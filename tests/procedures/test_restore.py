"""`logdoctor restore`: tiered partitions back from the remote tier, on ../shared/tiered (Kafka's
LocalTieredStorage and Aiven's plugin, plain, compressed and encrypted), checked against ``original/``
(the same partitions never tiered) byte for byte and with kafka-python as the independent decoder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import helpers
import pytest
from kafka.record import MemoryRecords

import cli_runs
import realworld
import tiers
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.restore import plan_restore

#: variant, store folder, private key (relative to ../shared/tiered)
VARIANTS = [
    ("kafka-local", "kafka-local/remote", None),
    ("aiven/plain", "aiven/plain/storage", None),
    ("aiven/compressed", "aiven/compressed/storage", None),
    ("aiven/encrypted", "aiven/encrypted/storage", "aiven/encrypted/keys/private.pem"),
]
IDS = [v[0] for v in VARIANTS]
RECORDS = {"payments-0": 2000, "payments-1": 4500}


def _opts(tiered: Path, store: str, key: str | None) -> RemoteOptions:
    return RemoteOptions(str(tiered / store), None, str(tiered / key) if key else None)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _records_once(folder: Path, n: int) -> None:
    """Every offset 0..n-1 once, in order, with the key the data was written with (kafka-python)."""
    offsets = []
    for log in sorted(folder.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            for rec in batch:
                assert rec.key == f"key-{rec.offset}".encode()
                offsets.append(rec.offset)
    assert offsets == list(range(n))


def _apply(log_dir: Path, opts: RemoteOptions, backup: Path):
    pp = plan_restore(log_dir, opts, backup_dir=backup)
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    return pp


@pytest.mark.parametrize(("variant", "store", "key"), VARIANTS, ids=IDS)
def test_restore_into_the_brokers_log_dir_gives_the_original(tmp_path, variant, store, key):
    tiered = realworld.require_tiered()
    log_dir = realworld.writable_copy(tiered / variant / "kafka-logs", tmp_path / "logs")
    before = helpers.tree(log_dir)
    pp = plan_restore(log_dir, _opts(tiered, store, key), backup_dir=tmp_path / "backup")
    assert helpers.tree(log_dir) == before  # the plan writes nothing
    assert not pp.plan.unrepaired, pp.plan.unrepaired
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    original = tiered / "original" / "kafka-logs"
    for part, n in RECORDS.items():
        # every file of the partition: segments, indexes, snapshots, leader-epoch-checkpoint
        assert _files(log_dir / part) == _files(original / part), part
        _records_once(log_dir / part, n)
    # entries the broker wrote stay as they were (log start 0, recovery points)
    for name in ("log-start-offset-checkpoint", "recovery-point-offset-checkpoint"):
        assert (log_dir / name).read_bytes() == (tiered / variant / "kafka-logs" / name).read_bytes()
    # a second plan finds nothing left to restore
    assert run.apply(
        plan_restore(log_dir, _opts(tiered, store, key), backup_dir=tmp_path / "b2").plan
    ).status == ("nothing-to-do")


@pytest.mark.parametrize(("variant", "store", "key"), VARIANTS, ids=IDS)
def test_restore_into_an_empty_log_dir_gives_the_remote_part(tmp_path, variant, store, key):
    tiered = realworld.require_tiered()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = _apply(log_dir, _opts(tiered, store, key), tmp_path / "backup")
    original = tiered / "original" / "kafka-logs"
    local = tiered / variant / "kafka-logs"
    for part, row in zip(RECORDS, pp.summary["partitions"], strict=True):
        local_start = min(int(p.name[:20]) for p in (local / part).glob("*.log"))
        assert row["offsets"] == [0, local_start - 1]
        restored = _files(log_dir / part)
        for name, data in restored.items():
            assert data == (original / part / name).read_bytes(), name
        want = {
            p.name
            for p in (original / part).iterdir()
            if p.name[:20].isdigit()
            and (int(p.name[:20]) < local_start or p.name == f"{local_start:020d}.snapshot")
        }
        assert set(restored) == want | {"leader-epoch-checkpoint", "partition.metadata"}
        _records_once(log_dir / part, local_start)
    ends = {f"payments-{r['partition'][-1]}": r["offsets"][1] + 1 for r in pp.summary["partitions"]}
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        assert helpers.checkpoint(log_dir, name) == {("payments", int(p[-1])): e for p, e in ends.items()}
    assert helpers.checkpoint(log_dir, "log-start-offset-checkpoint") == {
        ("payments", 0): 0,
        ("payments", 1): 0,
    }


def _scan_findings(log_dir: Path) -> set[tuple[str, str]]:
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    report = scan([log_dir], ScanOptions(depth=Depth.DEEP), jobs=1)
    # the twins of the broker's load-time checks: not RETENTION_DUE, what its first retention check (minutes
    # after the start) deletes by today's clock, as it would of the records' original log dir
    return {(f.code, os.path.relpath(f.path, log_dir)) for f in report.findings if f.code != "RETENTION_DUE"}


def test_scan_of_the_restored_log_dirs_is_clean(tmp_path):
    """The project's twins of Kafka's load-time checks (LogLoader, the indexes' sanity checks) find
    nothing in the restored partitions: into an empty dir only the two findings of any new log dir (no
    meta.properties yet, no clean-shutdown marker: docs/restore.md); into the
    broker's dir nothing the unrestored dir did not have."""
    tiered = realworld.require_tiered()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    opts = _opts(tiered, "aiven/encrypted/storage", "aiven/encrypted/keys/private.pem")
    _apply(log_dir, opts, tmp_path / "b")
    assert _scan_findings(log_dir) == {
        ("UNCLEAN_SHUTDOWN", ".kafka_cleanshutdown"),
        ("META_PROPERTIES_INVALID", "meta.properties"),
    }
    broker = realworld.writable_copy(tiered / "aiven/encrypted/kafka-logs", tmp_path / "broker")
    before = _scan_findings(broker)
    _apply(broker, opts, tmp_path / "b2")
    assert _scan_findings(broker) <= before


def test_topics_option_and_a_broker_holding_the_lock(tmp_path):
    tiered = realworld.require_tiered()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    opts = _opts(tiered, "kafka-local/remote", None)
    from logdoctor.logdir.remote_store import RemoteTierError

    with pytest.raises(RemoteTierError, match="no tiered partition of audit"):
        plan_restore(log_dir, opts, topics=["audit"], backup_dir=tmp_path / "b")
    only = plan_restore(log_dir, opts, topics=["payments"], backup_dir=tmp_path / "b")
    assert [r["partition"] for r in only.summary["partitions"]] == ["payments-0", "payments-1"]
    with helpers.broker_holding_lock(log_dir):
        from logdoctor.errors import BrokerRunningError

        with pytest.raises(BrokerRunningError):
            plan_restore(log_dir, opts, backup_dir=tmp_path / "b")


# --- faults --------------------------------------------------------------------------------------------


def _store_copy(tmp_path: Path, store: str) -> Path:
    tiered = realworld.require_tiered()
    return realworld.writable_copy(tiered / store, tmp_path / "store")


def _object(store: Path, partition: int, base: int, suffix: str) -> Path:
    found = [
        p
        for p in store.rglob(f"{base:020d}-*.{suffix}")
        if f"-{partition}-" in str(p) or f"/{partition}/" in str(p)
    ]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("store", "damage"),
    [
        ("kafka-local/remote", "missing"),
        ("kafka-local/remote", "truncated"),
        ("aiven/plain/storage", "truncated"),
        ("aiven/plain/storage", "manifest-version"),
        ("aiven/encrypted/storage", "wrong-key"),
    ],
)
def test_bad_objects_are_findings_naming_object_and_offsets(tmp_path, store, damage):
    tiered = realworld.require_tiered()
    copy = _store_copy(tmp_path, store)
    key = tiered / "aiven/encrypted/keys/private.pem" if "encrypted" in store else None
    if damage == "missing":
        bad = _object(copy, 0, 324, "log")
        bad.unlink()  # its other files are still there
    elif damage == "truncated":
        bad = _object(copy, 0, 324, "log")
        with open(bad, "r+b") as fh:
            fh.truncate(bad.stat().st_size - 100)
    elif damage == "manifest-version":
        bad = _object(copy, 0, 324, "rsm-manifest")
        bad.write_text(bad.read_text().replace('"version":"1"', '"version":"99"'))
    else:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key = tmp_path / "other.pem"
        key.write_bytes(
            other.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        bad = _object(copy, 0, 324, "log")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(
        log_dir, RemoteOptions(str(copy), None, str(key) if key else None), backup_dir=tmp_path / "b"
    )
    findings = [u for u in pp.plan.unrepaired if u.code == "restore-remote-object"]
    assert findings, pp.plan.unrepaired
    text = " ".join(f"{u.path} {u.why}" for u in findings)
    row = next(r for r in pp.summary["partitions"] if r["partition"] == "payments-0")
    if damage == "wrong-key":  # every segment: the newest is named, nothing of the partition restored
        assert "wrong key" in text and str(_object(copy, 0, 972, "log")) in text, text
        assert row["segments"] == 0
        return
    assert str(bad).rsplit(".", 1)[0] in text and "offsets 0-647 stay missing" in text, text
    # a deleted object is missing, not truncated (issue 47); a cut one is truncated
    said = (": missing: " in text, ": truncated: " in text)
    assert said == (damage == "missing", damage == "truncated"), text
    # the intact older segment (offsets 0-323) left out says why (issue 47: it was left out silently)
    (left,) = [u for u in pp.plan.unrepaired if u.code == "restore-segment-left-out"]
    assert left.path == str(_object(copy, 0, 0, "log")) and "offsets from 0" in left.why, left
    assert "newer remote segment from 324 cannot be" in left.why and left.severity == "warning"
    # payments-0: only what is above the bad segment is restored (no gap), newest first
    assert row["offsets"][0] == 648, row


def test_a_differing_local_segment_is_kept_and_named(tmp_path):
    tiered = realworld.require_tiered()
    log_dir = realworld.writable_copy(tiered / "kafka-local" / "kafka-logs", tmp_path / "logs")
    part = log_dir / "payments-0"
    remote = _object(tiered / "kafka-local/remote", 0, 972, "log")
    data = bytearray(remote.read_bytes())
    data[100] ^= 0xFF  # same size, one byte differs
    (part / f"{972:020d}.log").write_bytes(bytes(data))
    pp = plan_restore(log_dir, _opts(tiered, "kafka-local/remote", None), backup_dir=tmp_path / "b")
    differs = [u for u in pp.plan.unrepaired if u.code == "restore-segment-differs"]
    assert len(differs) == 1 and differs[0].path == str(part / f"{972:020d}.log")
    assert str(remote) in differs[0].why
    # the differing segment is never a target; what is below it is restored (every offset once)
    targets = {s.path for s in pp.plan.steps}
    assert str(part / f"{972:020d}.log") not in targets
    assert str(part / f"{648:020d}.log") in targets


# --- kill -9 at any step: resume or roll back ------------------------------------------------------------


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


def _steps(plan_json: dict) -> list[dict]:
    return [s for a in plan_json["actions"] for s in a["steps"]]


class Uninterrupted:
    """What the kill tests compare with, made once per module and store (each test made its own: a dry
    run and, for a resume, a whole restore, ~0.45 s of CPU a test): the steps of the dry run of a restore
    into an empty log dir, and the tree (helpers.tree, relative paths) an uninterrupted ``--apply`` leaves
    there. Neither depends on the log dir's path; nothing writes to them after."""

    def __init__(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._tmp = tmp_path_factory
        self._steps: dict[str, list[dict]] = {}
        self._trees: dict[str, dict] = {}

    def steps(self, store: str) -> list[dict]:
        if store not in self._steps:
            empty = self._tmp.mktemp("dry") / "logs"
            empty.mkdir()
            dry = _cli("restore", str(empty), "--remote-storage", store, "--json")
            assert dry.returncode == 0, dry.stderr
            self._steps[store] = _steps(json.loads(dry.stdout)["plan"])
            assert list(empty.iterdir()) == []
        return self._steps[store]

    def tree(self, store: str) -> dict:
        if store not in self._trees:
            reference = self._tmp.mktemp("uninterrupted") / "reference"
            reference.mkdir()
            assert _cli("restore", str(reference), "--remote-storage", store, "--apply").returncode == 0
            self._trees[store] = helpers.tree(reference)
        return self._trees[store]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Uninterrupted:
    return Uninterrupted(tmp_path_factory)


@pytest.mark.parametrize(
    "point",
    tiers.one_in_test_fast(
        [
            "1:applied",  # mkdir
            "2:temp-written",  # fetch-remote: partial file written
            "2:backed-up",  # fetch-remote: checksum saved, not renamed
            "2:applied",
            "3:temp-written",  # an index's write
            "last:applied",  # the last checkpoint
        ],
        fast="2:temp-written",
    ),
)
@pytest.mark.parametrize("then", ["resume", "rollback"])
def test_kill_at_any_step_then_resume_or_rollback(tmp_path, uninterrupted, point, then):
    tiered = realworld.require_tiered()
    store = str(tiered / "aiven/compressed/storage")
    empty = tmp_path / "logs"
    empty.mkdir()
    before = helpers.tree(empty)
    n_steps = len(uninterrupted.steps(store))
    point = point.replace("last", str(n_steps))
    backup = tmp_path / "backup"
    out = _cli(
        "restore",
        str(empty),
        "--remote-storage",
        store,
        "--apply",
        "--backup-dir",
        str(backup),
        env={"LOGDOCTOR_CRASH_AT": point},
    )
    assert out.returncode == -signal.SIGKILL, out.stdout + out.stderr
    journal = str(backup / "journal.jsonl")
    out = _cli("restore", f"--{then}", journal, "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    if then == "rollback":
        after = helpers.tree(empty)
        assert after == before
    else:
        assert helpers.tree(empty) == uninterrupted.tree(store)


def test_cli_dry_run_says_what_it_writes_and_writes_nothing(tmp_path):
    tiered = realworld.require_tiered()
    target = tmp_path / "new-log-dir"
    out = _cli("restore", str(target), "--remote-storage", str(tiered / "kafka-local/remote"))
    assert out.returncode == 0, out.stderr
    assert "Dry run" in out.stdout and "offsets 0-323" in out.stdout and "does not exist" in out.stdout
    assert not target.exists()
    shutil.rmtree(tmp_path / "nothing", ignore_errors=True)


# --- --remote-log-metadata ------------------------------------------------------------------------------


def _segments_by_kafka_schema(log_dir: Path) -> dict[str, tuple]:
    """segment id -> (metadata partition, topic id, partition, start, end, epochs, max timestamp, size,
    final state) from every ``__remote_log_metadata-N`` partition, batches read by kafka-python and values
    by Kafka's own JSON schemas (tests/kafka_schemas.py), replayed in offset order."""
    import kafka_schemas as ks

    ks.require()
    specs = {
        0: ks.Spec(ks.load("storage/RemoteLogSegmentMetadataRecord.json")),
        1: ks.Spec(ks.load("storage/RemoteLogSegmentMetadataUpdateRecord.json")),
    }
    out: dict[str, list] = {}
    for folder in sorted(log_dir.glob("__remote_log_metadata-*")):
        mp = int(folder.name.rsplit("-", 1)[1])
        for log in sorted(folder.glob("*.log")):
            records = MemoryRecords(log.read_bytes())
            while (batch := records.next_batch()) is not None:
                for rec in batch:
                    r = ks._In(rec.value)
                    assert r.uvarint() == 1  # frame version
                    api_key, version = r.uvarint(), r.uvarint()
                    value, end = ks.read(specs[api_key], rec.value, version, r.pos)
                    assert end == len(rec.value)
                    sid = value["remote_log_segment_id"]
                    tip = sid["topic_id_partition"]
                    if api_key == 0:
                        epochs = tuple(
                            (e["leader_epoch"], e["offset"]) for e in value["segment_leader_epochs"]
                        )
                        out[sid["id"]] = [
                            mp,
                            tip["id"],
                            tip["partition"],
                            value["start_offset"],
                            value["end_offset"],
                            epochs,
                            value["max_timestamp_ms"],
                            value["segment_size_in_bytes"],
                            value["remote_log_segment_state"],
                        ]
                    else:
                        out[sid["id"]][-1] = value["remote_log_segment_state"]
    return {k: tuple(v) for k, v in out.items()}


@pytest.mark.parametrize(("variant", "store", "key"), VARIANTS, ids=IDS)
def test_remote_log_metadata_rebuilt_from_the_objects(tmp_path, variant, store, key):
    tiered = realworld.require_tiered()
    lost = _segments_by_kafka_schema(tiered / variant / "kafka-logs")
    assert len(lost) == len(list((tiered / store).rglob("*.log")))  # one per segment object
    log_dir = realworld.writable_copy(tiered / variant / "kafka-logs", tmp_path / "logs")
    for folder in log_dir.glob("__remote_log_metadata-*"):
        shutil.rmtree(folder)
    from logdoctor.repair.procedures.restore_metadata import plan_restore_metadata

    pp = plan_restore_metadata(log_dir, _opts(tiered, store, key), backup_dir=tmp_path / "b")
    assert not pp.plan.unrepaired, pp.plan.unrepaired
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    assert _segments_by_kafka_schema(log_dir) == lost
    # the rebuilt partitions load: the project's twins of the broker's load-time checks find nothing new
    assert {c for c, p in _scan_findings(log_dir) if "__remote_log_metadata" in p} == set()
    # an existing metadata partition is never replaced
    again = plan_restore_metadata(log_dir, _opts(tiered, store, key), backup_dir=tmp_path / "b2")
    assert again.plan.steps == [] and {u.code for u in again.plan.unrepaired} == {"restore-metadata-exists"}


def test_metadata_partition_count_from_server_properties(tmp_path):
    tiered = realworld.require_tiered()
    props = tmp_path / "server.properties"
    props.write_text("rlmm.config.remote.log.metadata.topic.num.partitions=7\n")
    from logdoctor.logdir.remote_metadata import metadata_partition_for
    from logdoctor.repair.procedures.restore_metadata import plan_restore_metadata

    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore_metadata(
        log_dir, _opts(tiered, "kafka-local/remote", None), backup_dir=tmp_path / "b", server_properties=props
    )
    want = {metadata_partition_for("cGF5bWVudHMtdG9waWMwMQ", p, 7) for p in (0, 1)}
    assert {r["metadata_partition"] for r in pp.summary["partitions"]} == want
    assert {
        os.path.basename(a.target) for a in pp.plan.actions if a.kind == "restore-remote-log-metadata"
    } == {f"__remote_log_metadata-{n}" for n in want}


def test_cli_apply_with_a_bad_object_restores_the_rest_and_exits_2(tmp_path):
    realworld.require_tiered()
    copy = _store_copy(tmp_path, "aiven/plain/storage")
    bad = _object(copy, 1, 654, "log")
    with open(bad, "r+b") as fh:
        fh.truncate(1000)
    target = tmp_path / "logs"
    out = _cli(
        "restore", str(target), "--remote-storage", str(copy), "--apply", "--backup-dir", str(tmp_path / "b")
    )
    assert out.returncode == 2, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "restore-remote-object" in text and bad.name in text and "offsets 0-980 stay missing" in text, text
    assert sorted(p.name for p in (target / "payments-1").glob("*.log"))[0] == f"{981:020d}.log"
    assert sorted(p.name for p in (target / "payments-0").glob("*.log"))[0] == f"{0:020d}.log"


def test_cli_refusals(tmp_path):
    tiered = realworld.require_tiered()
    store = str(tiered / "kafka-local/remote")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    with helpers.broker_holding_lock(log_dir):
        out = _cli("restore", str(log_dir), "--remote-storage", store, "--apply")
    assert out.returncode == 75 and "lock" in out.stderr, out.stderr
    assert sorted(p.name for p in log_dir.iterdir()) == [".lock"]
    not_a_log_dir = tmp_path / "src"
    (not_a_log_dir / "pkg").mkdir(parents=True)
    (not_a_log_dir / "pkg" / "x.py").write_text("")
    assert _cli("restore", str(not_a_log_dir), "--remote-storage", store).returncode == 64
    # a missing input is 66 (EX_NOINPUT), as for every command: the store, and the key file, in the dry run
    # and with --apply alike, never a "corrupt" segment or "Nothing to repair" (issue 47)
    out = _cli("restore", str(log_dir), "--remote-storage", str(tmp_path / "nowhere"))
    assert out.returncode == 66 and "nowhere" in out.stderr, out.stderr
    encrypted = str(tiered / "aiven/encrypted/storage")
    for apply in ([], ["--apply", "--backup-dir", str(tmp_path / "b")]):
        for key in (tmp_path / "no-key.pem", tmp_path):  # missing; a folder, not a file
            args = ("restore", str(log_dir), "--remote-storage", encrypted, "--remote-private-key", str(key))
            out = _cli(*args, *apply)
            assert out.returncode == 66 and str(key) in out.stderr, (apply, out.stdout, out.stderr)
            assert "corrupt" not in out.stdout + out.stderr and "Nothing to repair" not in out.stdout
    assert sorted(p.name for p in log_dir.iterdir()) == [".lock"]


def test_indexes_the_store_lacks_are_rebuilt_by_the_restore_itself(tmp_path):
    """A segment whose time index object is gone: the restore writes its stored .index byte for byte and
    rebuilds the .timeindex in the same run (no repair command left to run), as the original has them."""
    tiered = realworld.require_tiered()
    copy = _store_copy(tmp_path, "kafka-local/remote")
    _object(copy, 0, 324, "timeindex").unlink()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    out = _cli(
        "restore", str(log_dir), "--remote-storage", str(copy), "--apply", "--backup-dir", str(tmp_path / "b")
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "logdoctor repair" not in " ".join(out.stdout.split())
    part = log_dir / "payments-0"
    original = tiered / "original" / "kafka-logs" / "payments-0"
    for suffix in (".index", ".timeindex"):
        name = f"{324:020d}{suffix}"
        assert (part / name).read_bytes() == (original / name).read_bytes()


@pytest.mark.parametrize(
    "point", tiers.one_in_test_fast(["2:temp-written", "3:applied", "last:backed-up"], fast="2:temp-written")
)
@pytest.mark.parametrize("then", ["resume", "rollback"])
def test_remote_log_metadata_kill_then_resume_or_rollback(tmp_path, point, then):
    tiered = realworld.require_tiered()
    store = str(tiered / "kafka-local/remote")
    log_dir = realworld.writable_copy(tiered / "kafka-local" / "kafka-logs", tmp_path / "logs")
    for folder in log_dir.glob("__remote_log_metadata-*"):
        shutil.rmtree(folder)
    reference = realworld.writable_copy(log_dir, tmp_path / "reference")
    before = helpers.tree(log_dir)
    args = ("restore", "--remote-storage", store, "--remote-log-metadata")
    dry = _cli(args[0], str(log_dir), *args[1:], "--json")
    assert dry.returncode == 0, dry.stderr
    point = point.replace("last", str(len(_steps(json.loads(dry.stdout)["plan"]))))
    backup = tmp_path / "backup"
    out = _cli(
        args[0],
        str(log_dir),
        *args[1:],
        "--apply",
        "--backup-dir",
        str(backup),
        env={"LOGDOCTOR_CRASH_AT": point},
    )
    assert out.returncode == -signal.SIGKILL, out.stdout + out.stderr
    out = _cli("restore", f"--{then}", str(backup / "journal.jsonl"), "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    if then == "rollback":
        assert helpers.tree(log_dir) == before
    else:
        assert _cli(args[0], str(reference), *args[1:], "--apply").returncode == 0
        assert helpers.tree(log_dir) == helpers.tree(reference)


def test_log_start_entry_and_topic_id_decide_what_is_restored(tmp_path):
    """Segments wholly below the partition's log-start-offset entry are deleted data: not restored (the
    entry is kept); a local partition of another topic id (another incarnation of the topic): a finding."""
    tiered = realworld.require_tiered()
    log_dir = realworld.writable_copy(tiered / "kafka-local" / "kafka-logs", tmp_path / "logs")
    (log_dir / "log-start-offset-checkpoint").write_text("0\n2\npayments 0 500\npayments 1 0\n")
    meta = log_dir / "payments-1" / "partition.metadata"
    meta.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    pp = plan_restore(log_dir, _opts(tiered, "kafka-local/remote", None), backup_dir=tmp_path / "b")
    rows = {r["partition"]: r for r in pp.summary["partitions"]}
    assert rows["payments-0"]["offsets"] == [324, 1295]
    assert rows["payments-1"]["segments"] == 0
    assert [(u.code, u.path) for u in pp.plan.unrepaired] == [
        ("restore-topic-id", str(log_dir / "payments-1"))
    ]
    assert not any(s.path.endswith("log-start-offset-checkpoint") for s in pp.plan.steps)


def test_a_segment_damaged_inside_a_batch_stops_the_apply_and_rolls_back(tmp_path):
    """A bit flipped inside a batch (same size: the plan's tail walk cannot see it): the fetch walks the
    restored bytes as LogSegment.recover does, the step fails naming the object, nothing is renamed into
    place, and --rollback leaves the log dir as it was."""
    realworld.require_tiered()
    copy = _store_copy(tmp_path, "kafka-local/remote")
    bad = _object(copy, 0, 324, "log")
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad.write_bytes(bytes(data))
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    before = helpers.tree(log_dir)
    backup = tmp_path / "b"
    out = _cli("restore", str(log_dir), "--remote-storage", str(copy), "--apply", "--backup-dir", str(backup))
    assert out.returncode == 2, out.stdout + out.stderr
    text = " ".join((out.stdout + out.stderr).split())
    assert bad.name in text and "offsets from 324" in text, text
    assert not (log_dir / "payments-0" / f"{324:020d}.log").exists()
    out = _cli("restore", "--rollback", str(backup / "journal.jsonl"), "--apply")
    assert out.returncode == 0, out.stdout + out.stderr
    assert helpers.tree(log_dir) == before


def _records(journal: Path) -> list[dict]:
    return [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]


def test_the_restore_shares_its_durability_in_groups(tmp_path):
    """Into an empty log dir every step writes a new file or folder: the apply engine runs them as one
    group (every begin record, then every done record: one journal fsync each, one barrier for the files)
    instead of a begin and a done per step, and the result is still the original's bytes."""
    tiered = realworld.require_tiered()
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    _apply(log_dir, _opts(tiered, "kafka-local/remote", None), tmp_path / "backup")
    kinds = [r["t"] for r in _records(tmp_path / "backup" / "journal.jsonl")]
    n = kinds.count("begin")
    assert n > 10 and kinds == ["plan"] + ["begin"] * n + ["done"] * n + ["end"], kinds
    original = tiered / "original" / "kafka-logs"
    for log in (log_dir / "payments-0").glob("*.log"):
        assert log.read_bytes() == (original / "payments-0" / log.name).read_bytes()
    assert not list(log_dir.rglob("*.logdoctor-partial")) and not list(log_dir.rglob(".*.tmp"))


#: kill points inside the group: (step, phase) with "mid" the plan's middle step and "last" its last one
GROUP_POINTS = [
    "1:begin",  # the group's begin records written, nothing changed
    "mid:begin",  # half the group's new files made under temp names, not fsynced
    "mid:synced",  # every new file durable under its temp name, none renamed into place
    "mid:applied",  # half of them renamed into place
    "last:verified",  # all in place, none journaled done
]


@pytest.mark.parametrize("point", tiers.one_in_test_fast(GROUP_POINTS, fast="mid:applied"))
@pytest.mark.parametrize("then", ["resume", "rollback"])
def test_kill_inside_the_group_then_resume_or_rollback(tmp_path, uninterrupted, point, then):
    """SIGKILL at points inside the grouped steps of a restore into an empty log dir, then --resume
    (the log dir byte for byte as ``original/``'s older segments and an uninterrupted restore leave it)
    or --rollback (as before: empty)."""
    tiered = realworld.require_tiered()
    store = str(tiered / "kafka-local/remote")
    empty = tmp_path / "logs"
    empty.mkdir()
    before = helpers.tree(empty)
    steps = uninterrupted.steps(store)
    mid = next(i for i, s in enumerate(steps, 1) if i >= len(steps) // 2 and s["op"] == "fetch-remote")
    point = point.replace("mid", str(mid)).replace("last", str(len(steps)))
    backup = tmp_path / "backup"
    out = _cli(
        "restore", str(empty), "--remote-storage", store, "--apply", "--backup-dir", str(backup),
        env={"LOGDOCTOR_CRASH_AT": point},
    )  # fmt: skip
    assert out.returncode == -signal.SIGKILL, out.stdout + out.stderr
    journal = backup / "journal.jsonl"
    assert [r["t"] for r in _records(journal)].count("done") == 0  # killed inside the one group
    out = _cli("restore", f"--{then}", str(journal), "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    if then == "rollback":
        assert helpers.tree(empty) == before
        return
    assert helpers.tree(empty) == uninterrupted.tree(store)
    original = tiered / "original" / "kafka-logs"
    for part in RECORDS:
        for name, data in _files(empty / part).items():
            if name not in ("leader-epoch-checkpoint", "partition.metadata"):
                assert data == (original / part / name).read_bytes(), name


def test_the_read_back_and_the_batch_walk_each_catch_what_the_other_cannot(tmp_path):
    """The two checks of a restored segment (steps.fetch_remote._check_restored), on a real segment of
    ``original/``: a changed partition leader epoch (a batch-header byte no batch CRC covers) passes the
    walk and fails the read-back against the source's CRC-32C; bytes after the last batch (present in
    the object too: both CRCs agree) fail the walk; the segment as it is passes both."""
    from logdoctor.formats.crc import crc32c
    from logdoctor.repair.steps.base import StepStateError
    from logdoctor.repair.steps.fetch_remote import _check_restored

    tiered = realworld.require_tiered()
    data = (tiered / "original" / "kafka-logs" / "payments-0" / f"{324:020d}.log").read_bytes()
    source = {"log": "store/00000000000000000324-x.log", "base_offset": 324}
    path = tmp_path / "seg.log"
    path.write_bytes(data)
    assert _check_restored(str(path), source, f"{crc32c(data):08x}") == f"{crc32c(data):08x}"
    epoch = bytearray(data)
    epoch[12] ^= 0x01  # the first batch's partitionLeaderEpoch: outside its CRC
    path.write_bytes(bytes(epoch))
    with pytest.raises(StepStateError, match="does not read back"):
        _check_restored(str(path), source, f"{crc32c(data):08x}")
    _check_restored(str(path), source, f"{crc32c(epoch):08x}")  # the walk alone does not see it
    trailing = data + b"\x00" * 7
    path.write_bytes(trailing)
    with pytest.raises(StepStateError, match=r"324-x\.log \(offsets from 324\): "):
        _check_restored(str(path), source, f"{crc32c(trailing):08x}")


def test_a_segment_that_fails_its_check_while_the_next_is_fetched(tmp_path):
    """A segment's checks (read-back CRC-32C, batch walk) run on a thread while the group fetches the next
    segment (steps.base.StepContext.check_behind): a bit flipped inside a batch of the second segment of
    payments-0 fails the apply naming the object; neither it nor the segment fetched meanwhile (648) is
    left in the log dir, renamed or partial, and nothing is renamed into place. --rollback then leaves
    the log dir as it was; or, once the object is right again, --resume of the failed run restores
    ``original/``'s segments byte for byte."""
    from logdoctor.repair.apply import resume, rollback

    tiered = realworld.require_tiered()
    copy = _store_copy(tmp_path, "kafka-local/remote")
    bad = _object(copy, 0, 324, "log")
    good = bad.read_bytes()
    data = bytearray(good)
    data[len(data) // 2] ^= 0x01
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    before = helpers.tree(log_dir)
    part = log_dir / "payments-0"
    for then in ("rollback", "resume"):
        bad.write_bytes(bytes(data))
        backup = tmp_path / f"b-{then}"
        pp = plan_restore(log_dir, RemoteOptions(str(copy)), backup_dir=backup)
        result = run.apply(pp.plan)
        assert result.status == "failed"
        assert bad.name in (result.error or "") and "offsets from 324" in (result.error or ""), result.error
        assert not list(log_dir.rglob("*.log")), "a segment was renamed into place"
        for base in (324, 648):
            assert not (part / f"{base:020d}.log.logdoctor-partial").exists(), base
        if then == "rollback":
            assert rollback(backup / "journal.jsonl").status == "rolled-back"
            assert helpers.tree(log_dir) == before
            continue
        bad.write_bytes(good)
        assert resume(backup / "journal.jsonl").status == "applied"
    original = tiered / "original" / "kafka-logs"
    logs = sorted(part.glob("*.log"))
    assert [p.name for p in logs] == [f"{b:020d}.log" for b in (0, 324, 648, 972)]
    for log in logs:
        assert log.read_bytes() == (original / "payments-0" / log.name).read_bytes()
    assert not list(log_dir.rglob("*.logdoctor-partial")) and not list(log_dir.rglob(".*.tmp"))


def test_the_segments_checksums_in_one_file_a_torn_line_then_resume(tmp_path):
    """The CRC-32C of every restored segment (what resume, rollback and verify know it by) is one line
    of one file of the backup dir (``manifests/fetched.jsonl``, fsynced once per group), not a file per
    segment. A kill with every segment fetched and none renamed into place, the file then as a kill inside
    its first append leaves it (half a line): --resume restores the same bytes as an uninterrupted run, its
    own lines starting on a line of their own, and the restore's verify finds every segment by them."""
    from logdoctor.repair.procedures.restore import verify_restore

    tiered = realworld.require_tiered()
    store = str(tiered / "kafka-local/remote")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    dry = _cli("restore", str(log_dir), "--remote-storage", store, "--json")
    steps = _steps(json.loads(dry.stdout)["plan"])
    fetches = [i for i, s in enumerate(steps, 1) if s["op"] == "fetch-remote"]
    backup = tmp_path / "b"
    out = _cli(
        "restore", str(log_dir), "--remote-storage", store, "--apply", "--backup-dir", str(backup),
        env={"LOGDOCTOR_CRASH_AT": f"{fetches[-1]}:synced"},
    )  # fmt: skip
    assert out.returncode == -signal.SIGKILL, out.stdout + out.stderr
    assert [p.name for p in (backup / "manifests").iterdir()] == ["fetched.jsonl"]
    lines = (backup / "manifests" / "fetched.jsonl").read_bytes().splitlines()
    assert sorted(json.loads(line)["step"] for line in lines) == fetches
    # as a kill inside the file's first append leaves it: one torn line, no newline
    (backup / "manifests" / "fetched.jsonl").write_bytes(lines[0][: len(lines[0]) // 2])
    out = _cli("restore", "--resume", str(backup / "journal.jsonl"), "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    reference = tmp_path / "reference"
    reference.mkdir()
    pp = _apply(reference, RemoteOptions(store), tmp_path / "b-ref")
    assert helpers.tree(log_dir) == helpers.tree(reference)
    assert len((tmp_path / "b-ref" / "manifests" / "fetched.jsonl").read_bytes().splitlines()) == len(fetches)
    plan = pp.plan
    plan.backup_dir = str(backup)
    for s in plan.steps:
        s.path = s.path.replace(str(reference), str(log_dir))
    assert verify_restore(plan) == []


def test_a_fifo_as_the_newest_object_says_what_stays_missing(tmp_path):
    """A FIFO in the store at the newest segment of payments-0 (offsets from 972, no next segment): the
    finding never says "offsets 0-(its end)" as if that segment started at 0; it names the segment's own
    start, that its last offset is not known, and the older segments left out with it (issue 57)."""
    copy = _store_copy(tmp_path, "aiven/plain/storage")
    bad = _object(copy, 0, 972, "log")
    bad.unlink()
    os.mkfifo(bad)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(log_dir, RemoteOptions(str(copy), None, None), backup_dir=tmp_path / "b")
    (finding,) = [u for u in pp.plan.unrepaired if u.code == "restore-remote-object"]
    assert finding.path == str(bad) and "FIFO" in finding.why, finding
    assert "(its end)" not in finding.why
    assert (
        "offsets from 0 to the last offset of the segment from 972 (not known: the segment cannot be read) "
        "stay missing: the segment from 972 and 3 older one(s) under it"
    ) in finding.why, finding.why
    left = [u for u in pp.plan.unrepaired if u.code == "restore-segment-left-out"]
    assert sorted(int(Path(u.path).name.split("-")[0]) for u in left) == [0, 324, 648]

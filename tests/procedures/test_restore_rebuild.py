"""`logdoctor restore` with index files the store lacks: they are rebuilt from the restored `.log` in the
same plan and run (``rebuild-index`` steps) and come out byte-identical to the ones Kafka's broker wrote
(``original/`` of ../shared/tiered, the same partitions never tiered); the indexes the store has are still
copied byte for byte. Every variant (LocalTieredStorage; Aiven plain, compressed, encrypted), into the
broker's log dir and into an empty one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import helpers
import pytest

import cli_runs
import realworld
import tiers
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.restore import plan_restore

VARIANTS = {
    "kafka-local": ("kafka-local/remote", None),
    "aiven/plain": ("aiven/plain/storage", None),
    "aiven/compressed": ("aiven/compressed/storage", None),
    "aiven/encrypted": ("aiven/encrypted/storage", "aiven/encrypted/keys/private.pem"),
}
PARTS = ("payments-0", "payments-1")

# (variant, damage): what is deleted from the copy of the store
CASES = [
    ("kafka-local", "offset-index"),  # payments-0 segment 324's .index
    ("kafka-local", "time-index"),  # payments-1 segment 0's .timeindex
    ("kafka-local", "no-indexes"),  # every .index/.timeindex/.txnindex of the store
    # a segment's .indexes object; the offset index's manifest entry; every .indexes object
    *[
        (v, d)
        for v in ("aiven/plain", "aiven/compressed", "aiven/encrypted")
        for d in ("object", "entry", "no-indexes")
    ],
]


def _obj(store: Path, part: str, base: int, suffix: str) -> Path:
    n = part.rsplit("-", 1)[1]
    found = [p for p in store.rglob(f"{base:020d}-*.{suffix}") if f"-{n}-" in str(p) or f"/{n}/" in str(p)]
    assert len(found) == 1, found
    return found[0]


def _damage(store: Path, damage: str) -> list[tuple[str, int]]:
    """Damage the store copy; the (partition, base offset) of segments whose `.indexes` object is gone
    (their producer snapshot and leader-epoch checkpoint go with it)."""
    if damage == "offset-index":
        _obj(store, "payments-0", 324, "index").unlink()
    elif damage == "time-index":
        _obj(store, "payments-1", 0, "timeindex").unlink()
    elif damage == "no-indexes" and "kafka-tiered-storage" in {p.name for p in store.iterdir()}:
        for suffix in ("index", "timeindex", "txnindex"):
            for p in store.rglob(f"*.{suffix}"):
                p.unlink()
    elif damage == "object":
        _obj(store, "payments-0", 324, "indexes").unlink()
        return [("payments-0", 324)]
    elif damage == "entry":  # the manifest names no offset index (Aiven writes null for an absent one)
        m = _obj(store, "payments-1", 0, "rsm-manifest")
        text = m.read_text()
        manifest = json.loads(text)
        assert manifest["segmentIndexes"]["offset"] is not None
        manifest["segmentIndexes"]["offset"] = None
        m.write_text(json.dumps(manifest, separators=(",", ":")))
    else:  # no-indexes, Aiven
        gone = []
        for p in store.rglob("*.indexes"):
            gone.append(("payments-" + p.parent.name, int(p.name[:20])))
            p.unlink()
        return gone
    return []


def _scan_findings(log_dir: Path) -> set[tuple[str, str]]:
    from logdoctor.checks.context import Depth, ScanOptions
    from logdoctor.checks.scanner import scan

    report = scan([log_dir], ScanOptions(depth=Depth.DEEP), jobs=1)
    # the twins of the broker's load-time checks: not RETENTION_DUE, what its first retention check (minutes
    # after the start) deletes by today's clock, as it would of the records' original log dir
    return {(f.code, os.path.relpath(f.path, log_dir)) for f in report.findings if f.code != "RETENTION_DUE"}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _bases(folder: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in folder.glob("*.log"))


def _lost(original: Path, gone: list[tuple[str, int]]) -> dict[str, set[str]]:
    """The producer snapshots that went with the deleted `.indexes` objects (``<segment end + 1>``)."""
    out: dict[str, set[str]] = {p: set() for p in PARTS}
    for part, base in gone:
        bases = _bases(original / part)
        out[part].add(f"{bases[bases.index(base) + 1]:020d}.snapshot")
    return out


@pytest.mark.parametrize("target", ["brokers-log-dir", "empty-log-dir"])
@pytest.mark.parametrize(("variant", "damage"), CASES, ids=[f"{v}-{d}" for v, d in CASES])
def test_missing_indexes_are_rebuilt_as_the_broker_wrote_them(tmp_path, variant, damage, target):
    tiered = realworld.require_tiered()
    store_rel, key = VARIANTS[variant]
    store = realworld.writable_copy(tiered / store_rel, tmp_path / "store")
    gone = _damage(store, damage)
    opts = RemoteOptions(str(store), None, str(tiered / key) if key else None)
    local = tiered / variant / "kafka-logs"
    if target == "brokers-log-dir":
        log_dir = realworld.writable_copy(local, tmp_path / "logs")
    else:
        log_dir = tmp_path / "logs"
        log_dir.mkdir()
    before = helpers.tree(log_dir)
    pp = plan_restore(log_dir, opts, backup_dir=tmp_path / "backup")
    assert helpers.tree(log_dir) == before  # the plan writes nothing
    # only a gone `.indexes` object is a finding (a warning naming it); nothing else is left undone
    assert sorted(u.path for u in pp.plan.unrepaired) == sorted(
        str(store / _obj(tiered / store_rel, p, b, "indexes").relative_to(tiered / store_rel))
        for p, b in gone
    )
    assert all(u.severity == "warning" for u in pp.plan.unrepaired)
    rebuilt = {s.path for s in pp.plan.steps if s.op == "rebuild-index"}
    assert rebuilt and set(pp.summary["rebuilt_indexes"]) == rebuilt
    copied = {s.path for s in pp.plan.steps if s.op == "write" and s.path.endswith("index")}
    assert not rebuilt & copied
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    original = tiered / "original" / "kafka-logs"
    lost = _lost(original, gone)
    for part in PARTS:
        local_start = _bases(local / part)[0]
        want = {
            name: data
            for name, data in _files(original / part).items()
            if (name not in lost[part] or (target == "brokers-log-dir" and (local / part / name).exists()))
            and (
                target == "brokers-log-dir"
                or name in ("partition.metadata", "leader-epoch-checkpoint", f"{local_start:020d}.snapshot")
                or (name[:20].isdigit() and int(name[:20]) < local_start)
            )
        }
        got = _files(log_dir / part)
        assert got == want, (part, sorted(set(got) ^ set(want)))
    if damage == "no-indexes":  # the twins of the broker's load-time checks find nothing new either
        found = _scan_findings(log_dir)
        if target == "empty-log-dir":
            assert found == {
                ("UNCLEAN_SHUTDOWN", ".kafka_cleanshutdown"),
                ("META_PROPERTIES_INVALID", "meta.properties"),
            }
        else:
            assert found <= _scan_findings(local)
    # every rebuilt index that exists is one of the broker's own, byte for byte (checked above); a rebuilt
    # .txnindex of these segments (no transactions) is not written, as Kafka writes none
    assert not [p for p in rebuilt if p.endswith(".txnindex") and os.path.exists(p)]


# --- the CLI: dry run first, the plan names what it rebuilds; kill -9 in a rebuild step ------------------


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


def _store_without_a_time_index(tmp_path: Path) -> Path:
    tiered = realworld.require_tiered()
    store = realworld.writable_copy(tiered / "kafka-local/remote", tmp_path / "store")
    _obj(store, "payments-0", 324, "timeindex").unlink()
    return store


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The tree (helpers.tree, relative paths) an uninterrupted restore from _store_without_a_time_index
    leaves in an empty log dir: what each resumed run is compared with, made once for the module (each
    test made its own, ~0.25 s of CPU). It does not depend on the paths; nothing writes to it after."""
    work = tmp_path_factory.mktemp("uninterrupted")
    store = _store_without_a_time_index(work)
    reference = work / "reference"
    reference.mkdir()
    assert _cli("restore", str(reference), "--remote-storage", str(store), "--apply").returncode == 0
    return helpers.tree(reference)


def test_dry_run_names_the_rebuilt_indexes_and_writes_nothing(tmp_path):
    store = _store_without_a_time_index(tmp_path)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    out = _cli("restore", str(log_dir), "--remote-storage", str(store))
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    part = log_dir / "payments-0"
    assert f"{part / f'{324:020d}.timeindex'}: (rebuilt from the .log as LogSegment.recover writes it" in text
    assert (
        "2 index file(s) the store lacks are rebuilt" in text
        and "payments-0/00000000000000000324.timeindex" in text
    )
    assert "logdoctor repair" not in text  # no hint left to run: the restore does it
    assert list(log_dir.iterdir()) == []
    plan = json.loads(_cli("restore", str(log_dir), "--remote-storage", str(store), "--json").stdout)
    ops = [(s["op"], s["path"]) for a in plan["plan"]["actions"] for s in a["steps"]]
    assert ("rebuild-index", str(part / f"{324:020d}.timeindex")) in ops


@pytest.mark.parametrize(
    ("which", "phase"),
    tiers.one_in_test_fast(
        [
            ("timeindex", "backed-up"),  # rebuilt, its sha256 saved, nothing written
            ("timeindex", "temp-written"),  # the temp file written, not renamed
            ("timeindex", "applied"),
            ("txnindex", "backed-up"),  # no aborted transaction: nothing to write
            ("txnindex", "applied"),
        ],
        fast=("timeindex", "temp-written"),
    ),
)
@pytest.mark.parametrize("then", ["resume", "rollback"])
def test_kill_in_a_rebuild_step_then_resume_or_rollback(tmp_path, uninterrupted, which, phase, then):
    store = _store_without_a_time_index(tmp_path)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    before = helpers.tree(log_dir)
    dry = json.loads(_cli("restore", str(log_dir), "--remote-storage", str(store), "--json").stdout)
    steps = [s for a in dry["plan"]["actions"] for s in a["steps"]]
    n = next(i for i, s in enumerate(steps, 1) if s["op"] == "rebuild-index" and s["path"].endswith(which))
    backup = tmp_path / "backup"
    out = _cli(
        "restore",
        str(log_dir),
        "--remote-storage",
        str(store),
        "--apply",
        "--backup-dir",
        str(backup),
        env={"LOGDOCTOR_CRASH_AT": f"{n}:{phase}"},
    )
    assert out.returncode == -signal.SIGKILL, out.stdout + out.stderr
    out = _cli("restore", f"--{then}", str(backup / "journal.jsonl"), "--apply", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    if then == "rollback":
        assert helpers.tree(log_dir) == before
        return
    original = realworld.require_tiered() / "original" / "kafka-logs" / "payments-0"
    name = f"{324:020d}.timeindex"
    assert (log_dir / "payments-0" / name).read_bytes() == (original / name).read_bytes()
    assert helpers.tree(log_dir) == uninterrupted


# --- a .txnindex of a segment with an aborted transaction ----------------------------------------------
# ../shared/tiered has no transactions; this store is built here in LocalTieredStorage's layout: producer 7
# opens a transaction in segment 0 (offsets 0-1) that an ABORT marker in segment 3 (offset 4) ends. The
# store keeps segment 0's producer snapshot (at offset 3: producer 7's transaction open since 0), not
# segment 3's indexes. The expected .txnindex is written out from Kafka's AbortedTxn layout (version 0,
# producer id, first offset, last offset, last stable offset: K:storage/.../log/AbortedTxn.java), with
# the values this data implies: aborted 0-4, no other transaction open, so the LSO is 5.

TOPIC_ID = "dHhucy10b3BpYy1pZC0wMQ"


def _txn_store(tmp_path: Path, with_snapshot: bool) -> Path:
    from logdoctor.formats.control import build_end_txn_marker
    from logdoctor.formats.producer_snapshot import (
        ProducerSnapshot,
        ProducerSnapshotEntry,
        write_producer_snapshot,
    )
    from logdoctor.formats.record_types import RecordSpec
    from logdoctor.formats.writer import build_record_batch

    def txn(offset: int, n: int) -> bytes:
        records = [
            RecordSpec(key=f"key-{offset + i}".encode(), value=b"t", timestamp=1000 + offset + i)
            for i in range(n)
        ]
        return build_record_batch(
            records,
            base_offset=offset,
            producer_id=7,
            producer_epoch=0,
            base_sequence=offset,
            is_transactional=True,
        )

    key, value = build_end_txn_marker(False, 3)
    abort = build_record_batch(
        [RecordSpec(key=key, value=value, timestamp=1004)],
        base_offset=4,
        producer_id=7,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    plain = build_record_batch([RecordSpec(key=b"key-5", value=b"p", timestamp=1005)], base_offset=5)
    folder = tmp_path / "store" / "kafka-tiered-storage" / f"txns-0-{TOPIC_ID}"
    folder.mkdir(parents=True)
    seg0, seg3 = (
        folder / "00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA",
        folder / "00000000000000000003-AQAAAAAAAAAAAAAAAAAAAA",
    )
    Path(f"{seg0}.log").write_bytes(
        txn(0, 2) + build_record_batch([RecordSpec(value=b"p", timestamp=1002)], base_offset=2)
    )
    Path(f"{seg3}.log").write_bytes(txn(3, 1) + abort + plain)
    Path(f"{seg0}.index").write_bytes(b"")  # under index.interval.bytes: no entry
    Path(f"{seg0}.timeindex").write_bytes(b"")
    if with_snapshot:
        entry = ProducerSnapshotEntry(7, 0, 1, 1, 1, 1001, -1, 0)  # transaction open since offset 0
        Path(f"{seg0}.snapshot").write_bytes(write_producer_snapshot(ProducerSnapshot(1, [entry])))
    for seg in (seg0, seg3):
        Path(f"{seg}.leader_epoch_checkpoint").write_bytes(b"0\n0\n")
    return tmp_path / "store"


@pytest.mark.parametrize("with_snapshot", [True, False], ids=["from-the-snapshot", "replayed"])
def test_a_lost_txn_index_is_rebuilt_with_the_open_transaction(tmp_path, with_snapshot):
    import struct

    store = _txn_store(tmp_path, with_snapshot)
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(log_dir, RemoteOptions(str(store), None, None), backup_dir=tmp_path / "b")
    assert not pp.plan.unrepaired, pp.plan.unrepaired
    part = log_dir / "txns-0"
    assert {os.path.basename(p) for p in pp.summary["rebuilt_indexes"]} == {
        f"{3:020d}.index",
        f"{3:020d}.timeindex",
        f"{3:020d}.txnindex",
    }
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    assert (part / f"{3:020d}.txnindex").read_bytes() == struct.pack(">hqqqq", 0, 7, 0, 4, 5)
    assert not (part / f"{0:020d}.txnindex").exists()  # the store has indexes there: none is none
    # the time index: the close's entry, the largest timestamp (1005) at its offset (5), relative to 3
    assert (part / f"{3:020d}.timeindex").read_bytes() == struct.pack(">qi", 1005, 2)
    assert (part / f"{3:020d}.index").read_bytes() == b""


def test_index_interval_bytes_option_sets_the_rebuilt_offset_index(tmp_path):
    """--index-interval-bytes 20000: LogSegment.recover adds (last offset - base, position) for a batch
    when its position is more than the interval past the last entry's (K:.../log/LogSegment.java
    ``recover``); batches read here with struct from the v2 header (baseOffset int64, batchLength int32
    at 8, lastOffsetDelta int32 at 23)."""
    import struct

    store = _store_without_a_time_index(tmp_path)
    _obj(store, "payments-0", 324, "index").unlink()
    log_dir = tmp_path / "logs"
    args = ["restore", str(log_dir), "--remote-storage", str(store), "--index-interval-bytes", "20000"]
    out = _cli(*args, "--apply", "--backup-dir", str(tmp_path / "b"))
    assert out.returncode == 0, out.stdout + out.stderr
    log = (log_dir / "payments-0" / f"{324:020d}.log").read_bytes()
    want, pos, last_entry = b"", 0, 0
    while pos < len(log):
        base, length = struct.unpack_from(">qi", log, pos)
        (last_delta,) = struct.unpack_from(">i", log, pos + 23)
        if pos - last_entry > 20000:
            want += struct.pack(">ii", base + last_delta - 324, pos)
            last_entry = pos
        pos += 12 + length
    original = realworld.require_tiered() / "original/kafka-logs/payments-0" / f"{324:020d}.index"
    assert want and want != original.read_bytes()  # not what the default interval gives
    assert (log_dir / "payments-0" / f"{324:020d}.index").read_bytes() == want


def test_an_index_file_left_without_its_log_goes_to_the_backup_and_comes_back_on_rollback(tmp_path):
    store = _store_without_a_time_index(tmp_path)
    log_dir = tmp_path / "logs"
    stale = log_dir / "payments-0" / f"{324:020d}.timeindex"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"\x00" * 24)  # what an unclean shutdown can leave of a preallocated index
    before = helpers.tree(log_dir)
    pp = plan_restore(log_dir, RemoteOptions(str(store), None, None), backup_dir=tmp_path / "b")
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    original = realworld.require_tiered() / "original/kafka-logs/payments-0" / stale.name
    assert stale.read_bytes() == original.read_bytes()
    res, _ = run.rollback_journal(result.journal)
    assert res.status == "rolled-back", res.error
    assert helpers.tree(log_dir) == before


def test_a_file_put_where_an_index_is_to_be_rebuilt_after_the_plan_refuses_the_run(tmp_path):
    """The precondition check of every step before the run (issue "Every write checks what it replaces"):
    nothing is written."""
    from logdoctor.repair.apply import PlanChangedError

    store = _store_without_a_time_index(tmp_path)
    log_dir = realworld.writable_copy(
        realworld.require_tiered() / "kafka-local/kafka-logs", tmp_path / "logs"
    )
    pp = plan_restore(log_dir, RemoteOptions(str(store), None, None), backup_dir=tmp_path / "b")
    target = log_dir / "payments-0" / f"{324:020d}.timeindex"
    target.write_bytes(b"x")
    before = helpers.tree(log_dir)
    with pytest.raises(PlanChangedError, match="rebuild-index"):
        run.apply(pp.plan)
    assert helpers.tree(log_dir) == before

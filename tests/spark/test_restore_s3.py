"""`logdoctor restore` from a store on S3 (moto's server): the same bytes as from the local folder, every
object read in ranged GETs (no Spark needed; here for the shared S3 server fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

import realworld
from logdoctor.logdir.remote_store import RemoteOptions
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.restore import plan_restore

VARIANTS = [
    ("kafka-local", "kafka-local/remote", None),
    ("aiven/encrypted", "aiven/encrypted/storage", "aiven/encrypted/keys/private.pem"),
]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize(("variant", "store", "key"), VARIANTS, ids=[v[0] for v in VARIANTS])
def test_restore_from_s3_gives_the_original(s3, tmp_path, variant, store, key):
    tiered = realworld.require_tiered()
    uri = s3.upload(tiered / store, f"restore/{variant}/store")
    log_dir = realworld.writable_copy(tiered / variant / "kafka-logs", tmp_path / "logs")
    pp = plan_restore(
        log_dir, RemoteOptions(uri, None, str(tiered / key) if key else None), backup_dir=tmp_path / "b"
    )
    assert not pp.plan.unrepaired, pp.plan.unrepaired
    s3.reset()
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    for part in ("payments-0", "payments-1"):
        assert _files(log_dir / part) == _files(tiered / "original" / "kafka-logs" / part)
    # the segments were fetched while applying, each in ranged reads (never a plain GET of an object)
    log_gets = s3.gets(".log")
    assert log_gets and all(g.range is not None for g in log_gets), log_gets[:3]


def test_aiven_segments_in_many_spans_from_s3(s3, tmp_path, monkeypatch):
    """An Aiven segment read span by span on two threads from one S3 object (concurrent ranged GETs, each
    span's chunks in one): into an empty log dir, the original's bytes."""
    from logdoctor.repair import copies

    monkeypatch.setattr(copies, "CHUNK", 2 * 8192)  # spans of 2 of the store's 8192-byte chunks
    tiered = realworld.require_tiered()
    uri = s3.upload(tiered / "aiven/compressed/storage", "restore/spans/store")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pp = plan_restore(log_dir, RemoteOptions(uri), backup_dir=tmp_path / "b")
    assert not pp.plan.unrepaired, pp.plan.unrepaired
    s3.reset()
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    original = tiered / "original" / "kafka-logs"
    for part in ("payments-0", "payments-1"):
        logs = sorted((log_dir / part).glob("*.log"))
        assert logs
        for log in logs:
            assert log.read_bytes() == (original / part / log.name).read_bytes(), log
    log_gets = s3.gets(".log")
    assert len(log_gets) >= 4 * len(list(log_dir.rglob("*.log"))), len(log_gets)  # 4 spans a segment
    assert all(g.range is not None for g in log_gets), log_gets[:3]


def test_each_aiven_object_read_once_per_restore(s3, tmp_path):
    """A restore run (plan and apply in one process) reads each segment's objects once: one GET of its
    ``.rsm-manifest``, one HEAD of its ``.log`` (opened at planning, the fetch reading through the same
    handle). The previous code read each manifest three times (two at planning, one at the fetch) and
    opened each ``.log`` twice (a HEAD each)."""
    from collections import Counter

    tiered = realworld.require_tiered()
    uri = s3.upload(tiered / "aiven/compressed/storage", "restore/once/store")
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    s3.reset()
    pp = plan_restore(log_dir, RemoteOptions(uri), backup_dir=tmp_path / "b")
    assert not pp.plan.unrepaired, pp.plan.unrepaired
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    served = s3.served
    manifests = Counter(s.path for s in served if s.method == "GET" and s.path.endswith(".rsm-manifest"))
    heads = Counter(s.path for s in served if s.method == "HEAD" and s.path.endswith(".log"))
    restored = sorted(log_dir.rglob("*.log"))
    assert restored and len(manifests) == len(heads) == len(restored)
    assert set(manifests.values()) == {1}, manifests  # each manifest read once (3 times before)
    assert set(heads.values()) == {1}, heads  # each segment object opened once (twice before)

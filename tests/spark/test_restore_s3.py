"""`logdoctor restore` from a store on S3 (moto's server): the same bytes as from the local folder, every
object read in ranged GETs (no Spark needed; here for the shared S3 server fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

import realworld
from logdoctor.logdir.remote_tier import RemoteOptions
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

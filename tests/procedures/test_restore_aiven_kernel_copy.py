"""A restore from a local Aiven store whose plugin stored the segments untransformed (no compression, no
encryption: the ``.log`` object is the segment, byte for byte) copies them in the kernel
(``os.copy_file_range``) as it does LocalTieredStorage's; compressed or encrypted ones are streamed through
their chunks. Either way the restored segments are the original's bytes."""

from __future__ import annotations

import os

import pytest

import realworld
from logdoctor.logdir.remote_tier import RemoteOptions
from logdoctor.repair.procedures import run
from logdoctor.repair.procedures.restore import plan_restore


@pytest.mark.parametrize(
    ("variant", "key", "kernel"),
    [("plain", None, True), ("compressed", None, False), ("encrypted", "keys/private.pem", False)],
    ids=["plain", "compressed", "encrypted"],
)
def test_untransformed_aiven_objects_are_copied_by_the_kernel(tmp_path, monkeypatch, variant, key, kernel):
    tiered = realworld.require_tiered()
    copied: list[int] = []
    real = os.copy_file_range

    def counting(src: int, dst: int, count: int, *args: int) -> int:
        n = real(src, dst, count, *args)
        copied.append(n)
        return n

    monkeypatch.setattr(os, "copy_file_range", counting)
    store = tiered / "aiven" / variant
    opts = RemoteOptions(str(store / "storage"), None, str(store / key) if key else None)
    target = tmp_path / "logs"
    target.mkdir()
    pp = plan_restore(target, opts, backup_dir=tmp_path / "b")
    result = run.apply(pp.plan)
    assert result.status == "applied", result.error
    assert run.verify(pp.plan) == []
    logs = sorted(target.glob("payments-*/*.log"))
    assert len(logs) >= 4
    for log in logs:
        original = tiered / "original" / "kafka-logs" / log.parent.name / log.name
        assert log.read_bytes() == original.read_bytes(), log
    assert (sum(copied) == sum(log.stat().st_size for log in logs)) if kernel else not copied

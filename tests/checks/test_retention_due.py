"""RETENTION_DUE (issue 59 item 4) against `logdoctor retention`, the command that simulates the broker's
next retention round segment by segment: on every real log dir, at a time past retention and at one within
it, the scan's notes name the same segments and bytes, per partition, as the command's table."""

from __future__ import annotations

import pytest

import realworld
from logdoctor.checks.context import ScanOptions
from logdoctor.checks.retention import retention
from logdoctor.checks.scanner import scan

#: 2027-01-15: every 2024 record of a delete topic is past the default 7 days; 2019-01-01: none is
NOWS = (1_800_000_000_000, 1_546_300_800_000)


@pytest.mark.realworld
@pytest.mark.parametrize("name", realworld.log_dir_names() or ["absent"])
def test_the_scan_states_what_retention_deletes(name: str) -> None:
    d = realworld.require() / name
    for now in NOWS:
        told = retention([d], now_ms=now, jobs=1)
        want = {
            p.path: ([s.base_offset for s in p.deleted], sum(s.size for s in p.deleted))
            for p in told.partitions
            if p.deleted and not p.tiered
        }
        rep = scan([d], ScanOptions(now_ms=now), jobs=1)
        due = [f for f in rep.findings if f.code == "RETENTION_DUE"]
        got = {f.path.rsplit("/", 1)[0]: (f.details["segments"], f.details["bytes"]) for f in due}
        assert got == want, (name, now)
        assert rep.exit_code == max([0, *(f.severity for f in rep.findings if f.code != "RETENTION_DUE")])

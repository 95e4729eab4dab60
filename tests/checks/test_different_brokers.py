"""Log dirs of different brokers scanned together: one finding says so, not one error per partition copy."""

from __future__ import annotations

from collections import Counter

import pytest

import realworld
from logdoctor.checks.context import Depth, ScanOptions
from logdoctor.checks.scanner import scan

NOW = 1_800_000_000_000


def _scan(*dirs):
    return scan([str(d) for d in dirs], ScanOptions(Depth.DEFAULT, NOW), jobs=1)


@pytest.mark.realworld
@pytest.mark.parametrize(
    "names",
    [
        ("zk-3.0-tuyen-nnt-b0", "zk-3.0-tuyen-nnt-b1", "zk-3.0-tuyen-nnt-b2"),  # one ZooKeeper cluster
        ("kraft-3.5-greenlemont-n1", "kraft-3.5-greenlemont-n2", "kraft-3.5-greenlemont-n3"),  # one KRaft
        ("zk-3.7-nikhildighe-b0", "zk-2.8-seanorth"),  # two clusters
    ],
)
def test_brokers_scanned_together_get_one_finding(names: tuple[str, ...]) -> None:
    rw = realworld.require()
    dirs = [rw / n for n in names]
    together = _scan(*dirs)
    codes = Counter(f.code for f in together.findings)
    assert codes["LOG_DIRS_OF_DIFFERENT_BROKERS"] == 1
    assert codes["DUPLICATE_PARTITION"] == 0 and codes["META_PROPERTIES_MISMATCH"] == 0
    one = next(f for f in together.findings if f.code == "LOG_DIRS_OF_DIFFERENT_BROKERS")
    assert all(str(d) in one.message for d in dirs)
    assert len(one.details["brokers"]) == len(names)
    # everything else is exactly what each broker's own scan finds
    alone = Counter()
    for d in dirs:
        alone.update((f.code, f.path, f.message) for f in _scan(d).findings)
    rest = Counter((f.code, f.path, f.message) for f in together.findings if f is not one)
    assert rest == alone


@pytest.mark.realworld
def test_the_log_dirs_of_one_broker_are_not_flagged() -> None:
    rw = realworld.require()
    report = _scan(rw / "zk-3.7-nikhildighe-b0")
    assert "LOG_DIRS_OF_DIFFERENT_BROKERS" not in {f.code for f in report.findings}

"""What the census-against-scan tests of issue 47 share: the keys a finding is compared by, and the census
of the same brokers through their inventories (each broker's `logdoctor inventory`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from logdoctor.checks.context import Depth
from logdoctor.checks.inventory import build_inventory, write_inventory


def finding_keys(findings: Iterable[Mapping[str, Any]], codes: Iterable[str]) -> Counter:
    """(code, path, offset, message, fix) of each finding of ``codes``, counted."""
    wanted = set(codes)
    keys = ((f["code"], f["path"], f["offset"], f["message"], f["fix"]) for f in findings)
    return Counter(k for k in keys if k[0] in wanted)


def scan_keys(report: Any, codes: Iterable[str]) -> Counter:
    """:func:`finding_keys` of a scan report's findings."""
    return finding_keys(
        ({"code": f.code, "path": f.path, "offset": f.offset, "message": f.message, "fix": f.fix}
         for f in report.findings),
        codes,
    )  # fmt: skip


def census_findings(result: Any) -> list[dict[str, Any]]:
    return pq.read_table(result.tables["findings"]).to_pylist()


def census_of_inventories(spark: Any, dirs: list[str], root: Path, now_ms: int) -> Any:
    """The census of one inventory per broker (``dirs``: one log dir each), written under ``root``: made
    as a big fleet's (on the executors: persisted window, the cross-broker rules over Arrow batches), which
    these few inventories would not be (census.small_inputs), so that the big path's rules are checked on
    inventories against the scan; the small path's on the same kinds of row is test_inventory_census's."""
    from unittest import mock

    from logdoctor.spark import census

    inv = root / "inventories"
    inv.mkdir()
    for i, d in enumerate(dirs):
        write_inventory(build_inventory([d], Depth.DEFAULT, now_ms=now_ms), str(inv / f"b{i}.parquet"))
    with mock.patch.object(census, "SMALL_FLEET_BROKERS", 0):
        return census.run_census(spark, [str(inv)], root / "census-inv", now_ms=now_ms)


def forensics_copies(root: Path) -> list[Path]:
    """A writable copy of ../shared/forensics' three brokers' log dirs under ``root`` (skips without it)."""
    import realworld

    shared = realworld.require_forensics()
    return [
        realworld.writable_copy(shared / f"broker-{n}" / "kafka-logs", root / f"broker-{n}" / "kafka-logs")
        for n in (1, 2, 3)
    ]

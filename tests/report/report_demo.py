"""The demo fleet for the report tests and the screenshot docs/report-demo.png.

The fleet is :func:`logdoctor.sample.fleet.generate_demo_fleet` (three brokers with planted faults:
an out-of-ISR replica, a corrupt offset index, a zeroed time index, a nearly full disk). Its census is
the real Spark job's (:func:`logdoctor.spark.census.run_census`, on the session the caller gives: the
report tests' module-scoped ``spark`` fixture, tests/report/conftest.py), so the report is rendered
from what `logdoctor census` writes.

``--now`` is chosen from what the generator wrote: the retention cut-off falls in the middle of the
segment whose time index was zeroed, so that segment is kept by its true timestamps and deleted
early by the broker's (RETENTION_RISK).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logdoctor.checks.context import DEFAULT_RETENTION_MS, Depth, ScanOptions
from logdoctor.checks.scanner import ScanReport, scan
from logdoctor.sample.fleet import (
    CorruptOffsetIndex,
    NearlyFullDisk,
    OutOfIsrReplica,
    generate_demo_fleet,
)
from logdoctor.sample.fleet import DemoFleet as SampleDemoFleet
from logdoctor.sample.logdir import GeneratedFleet, ZeroedTimeIndex
from logdoctor.spark.census import CensusResult, run_census

RETENTION_MS = DEFAULT_RETENTION_MS


@dataclass
class DemoFleet:
    root: Path
    fleet: GeneratedFleet
    now_ms: int
    census: CensusResult  # the Spark census job's result
    risk: tuple[int, str, int, Path]  # broker id, topic, partition, the .log whose .timeindex was zeroed
    corrupt: tuple[int, str, int, Path]  # broker id, topic, partition, the corrupt .index
    lagging: tuple[int, str, int, int]  # broker id, topic, partition, lag in records
    full_disk: tuple[int, Path, float]  # broker id, log dir, fraction used

    def scan(self, broker_id: int) -> ScanReport:
        """One broker's scan at the demo's --now (for the scan report)."""
        options = ScanOptions(depth=Depth.DEFAULT, now_ms=self.now_ms, retention_ms=RETENTION_MS)
        return scan(self.fleet.log_dirs[broker_id], options, jobs=1)


def _faults(fleet: GeneratedFleet) -> dict[type, Any]:
    return {type(f): f for f in fleet.spec.faults}


def build_demo_fleet(root: Path, spark: Any, demo: SampleDemoFleet | None = None) -> DemoFleet:
    """Generate the demo fleet under ``root`` (or take ``demo``, one generated already, whose root is
    ``root``) and run the census over it with ``spark``."""
    if demo is None:
        demo = generate_demo_fleet(root)
    assert demo.root == root
    fleet = demo.fleet
    faults = _faults(fleet)
    zt: ZeroedTimeIndex = faults[ZeroedTimeIndex]
    seg = fleet.replica(zt.broker_id, zt.topic, zt.partition).segments[zt.segment]
    first_ts = fleet.spec.base_timestamp_ms + seg.base_offset * fleet.spec.timestamp_step_ms
    now_ms = (first_ts + seg.max_timestamp) // 2 + RETENTION_MS
    census = run_census(
        spark,
        [str(root)],
        root.parent / (root.name + "-census"),
        now_ms=now_ms,
        simulated_disks=demo.simulated_disks,
    )
    ci: CorruptOffsetIndex = faults[CorruptOffsetIndex]
    cseg = fleet.replica(ci.broker_id, ci.topic, ci.partition).segments[ci.segment]
    lag: OutOfIsrReplica = faults[OutOfIsrReplica]
    full: NearlyFullDisk = faults[NearlyFullDisk]
    return DemoFleet(
        root, fleet, now_ms, census,
        risk=(zt.broker_id, zt.topic, zt.partition, seg.path),
        corrupt=(ci.broker_id, ci.topic, ci.partition, cseg.path.with_suffix(".index")),
        lagging=(lag.broker_id, lag.topic, lag.partition, lag.lag),
        full_disk=(full.broker_id, fleet.log_dirs[full.broker_id][full.log_dir_index], full.used),
    )


def main(argv: list[str]) -> None:
    """``python tests/report/report_demo.py OUT.png``: docs/report-demo.png (needs /usr/bin/chromium)."""
    import subprocess
    import tempfile

    from logdoctor.report import write_census_report
    from logdoctor.spark.session import get_spark

    out = Path(argv[0] if argv else "docs/report-demo.png").resolve()
    spark = get_spark("local[2]", "logdoctor report demo")
    with tempfile.TemporaryDirectory() as tmp:
        demo = build_demo_fleet(Path(tmp) / "fleet", spark)
        page = write_census_report(demo.census, Path(tmp) / "fleet.html", now_ms=demo.now_ms,
                                   retention=RETENTION_MS, title="logdoctor census: demo fleet")
        subprocess.run(
            ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--no-first-run",
             f"--user-data-dir={tmp}/profile", "--hide-scrollbars", "--window-size=1400,1900",
             "--virtual-time-budget=5000", f"--screenshot={out}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )
    print(out)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

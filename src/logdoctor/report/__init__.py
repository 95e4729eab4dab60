"""Self-contained HTML reports of a scan or a fleet census (plotly, embedded for offline use).

Interface-level package: imports checks/logdir/formats, never cli or spark.
"""

from __future__ import annotations

from logdoctor.report.html import (
    render_census_report,
    render_report,
    render_scan_report,
    write_census_report,
    write_scan_report,
)
from logdoctor.report.model import census_from_scans, from_census, from_scan

__all__ = [
    "census_from_scans",
    "from_census",
    "from_scan",
    "render_census_report",
    "render_report",
    "render_scan_report",
    "write_census_report",
    "write_scan_report",
]

"""Checks of a log dir: `logdoctor scan` (scanner) and `logdoctor retention` (retention).

Public names are loaded on first use so that importing one check module stays cheap.
"""

from __future__ import annotations

from logdoctor._lazy_exports import lazy_exports

_EXPORTS = {
    "Finding": "logdoctor.checks.findings",
    "Severity": "logdoctor.checks.findings",
    "CATALOG": "logdoctor.checks.catalog",
    "Depth": "logdoctor.checks.context",
    "ScanOptions": "logdoctor.checks.context",
    "ScanReport": "logdoctor.checks.scanner",
    "scan": "logdoctor.checks.scanner",
    "RetentionConfig": "logdoctor.checks.retention_round",
    "RetentionReport": "logdoctor.checks.retention_round",
    "retention": "logdoctor.checks.retention",
    "simulate": "logdoctor.checks.retention_round",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS)

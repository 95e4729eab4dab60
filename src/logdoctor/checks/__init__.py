"""Checks of a log dir: `logdoctor scan` (scanner) and `logdoctor retention` (retention).

Public names are loaded on first use so that importing one check module stays cheap.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Finding": "logdoctor.checks.findings",
    "Severity": "logdoctor.checks.findings",
    "CATALOG": "logdoctor.checks.catalog",
    "Depth": "logdoctor.checks.context",
    "ScanOptions": "logdoctor.checks.context",
    "ScanReport": "logdoctor.checks.scanner",
    "scan": "logdoctor.checks.scanner",
    "RetentionConfig": "logdoctor.checks.retention",
    "RetentionReport": "logdoctor.checks.retention",
    "retention": "logdoctor.checks.retention",
    "simulate": "logdoctor.checks.retention",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'logdoctor.checks' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

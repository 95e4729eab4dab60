"""The one catalog of findings: stable codes, default severity, message and fix templates.

Every code logdoctor reports is here, in three scopes: ``scan`` (per log dir: `logdoctor scan`,
`repair`), ``fleet`` (across brokers: `logdoctor census`) and ``dump`` (the entry-level mismatches of
`logdoctor dump --verify-index`, named after what DumpLogSegments reports; the dump builds its own
messages and points to the scan codes for the fix).

Codes never change meaning once released; new conditions get new codes. Each template is a
``str.format`` string over the fields a check passes to :func:`make` (``path`` is always there;
``logdir`` is the log dir the finding belongs to; ``repair`` is filled in by :func:`make` as the
dry-run ``logdoctor repair`` command for the code). Fix texts name only real commands and options
(tests/checks/test_fix_commands.py parses every one with the CLI). Where a rule is subtle the Kafka
source it follows is named (K: = path in apache/kafka).

This package is the door: :data:`CATALOG` (lookup by code), :func:`make`, :func:`codes` and the
fix-building helpers checks use. The entries live in modules named for their subject (:data:`SUBJECTS`);
the entry type and the fix rendering in :mod:`logdoctor.checks.catalog.entry`. A code is defined in
exactly one subject module (asserted here and in tests/checks/test_catalog_modules.py).
"""

from __future__ import annotations

import enum
from typing import Any

from logdoctor.checks.catalog import (
    broker_state,
    checkpoint_files,
    consumer_groups,
    dir_contents,
    directory_assignment,
    dump_mismatches,
    fleet,
    kraft_metadata,
    retention_compaction,
    segments,
    tiered_storage,
    transactions,
)
from logdoctor.checks.catalog.dump_mismatches import DUMP_FIXED_BY
from logdoctor.checks.catalog.entry import (
    LOGDIR_PLACEHOLDER,
    Case,
    CommandText,
    Entry,
    command,
    command_phrase,
    render_fix,
    repair_argv,
    repair_command,
    repair_hint,
)
from logdoctor.checks.findings import Finding, Severity

__all__ = [
    "CATALOG",
    "DUMP_FIXED_BY",
    "LOGDIR_PLACEHOLDER",
    "SUBJECTS",
    "Case",
    "CommandText",
    "Entry",
    "FindingCode",
    "Severity",
    "codes",
    "command",
    "command_phrase",
    "make",
    "render_fix",
    "repair_argv",
    "repair_command",
    "repair_hint",
]

#: the modules that hold the entries, one subject each
SUBJECTS = (
    segments,
    retention_compaction,
    checkpoint_files,
    broker_state,
    dir_contents,
    transactions,
    directory_assignment,
    kraft_metadata,
    tiered_storage,
    fleet,
    consumer_groups,
    dump_mismatches,
)
_ENTRIES: tuple[Entry, ...] = tuple(e for subject in SUBJECTS for e in subject.ENTRIES)

CATALOG: dict[str, Entry] = {e.code: e for e in _ENTRIES}
assert len(CATALOG) == len(_ENTRIES), "duplicate catalog code"

#: the dump's codes as an enum (logdoctor.checks.verify_index re-exports it as FindingCode)
FindingCode = enum.StrEnum("FindingCode", [(e.code, e.code) for e in _ENTRIES if e.scope == "dump"])
FindingCode.__doc__ = "Stable codes of `logdoctor dump` findings (catalog scope 'dump')."


class _Fields(dict):
    """Missing template fields render as '' instead of raising."""

    def __missing__(self, key: str) -> str:
        return ""


def make(
    code: str,
    path: str,
    *,
    case: str | None = None,
    position: int | None = None,
    offset: int | None = None,
    severity: Severity | None = None,
    details: dict[str, Any] | None = None,
    **fields: Any,
) -> Finding:
    """Build a Finding from the catalog (unknown codes are a programming error: KeyError).

    ``case`` picks one of the entry's :class:`Case` templates; their fields must all be passed (a
    missing one is a KeyError, not an empty string).
    """
    entry = CATALOG[code]
    values: dict[str, Any] = dict(fields) if case is not None else _Fields(fields)
    values.setdefault("path", path)
    values.setdefault("logdir", LOGDIR_PLACEHOLDER)
    values.setdefault("repair", repair_hint(DUMP_FIXED_BY.get(code, code), values["logdir"]))
    if position is not None:
        values.setdefault("position", position)
    if offset is not None:
        values.setdefault("offset", offset)
    message, fix = entry.message, entry.fix
    if case is not None:
        chosen = entry.cases[case]
        message, fix = chosen.message, chosen.fix if chosen.fix is not None else entry.fix
    fix_text, fix_argv = render_fix(fix, values)
    return Finding(
        code=code,
        severity=entry.severity if severity is None else severity,
        path=path,
        message=message.format_map(values),
        fix=fix_text,
        position=position,
        offset=offset,
        details=dict(details or {}),
        fix_argv=fix_argv,
    )


def codes(scope: str | None = None) -> list[str]:
    """Every catalog code, or those of one scope (scan, fleet, dump)."""
    return [c for c, e in CATALOG.items() if scope is None or e.scope == scope]

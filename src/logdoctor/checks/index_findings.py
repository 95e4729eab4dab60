"""What an index check reports (``dump --verify-index`` and the scan's index checks): one finding with
the index entry involved and what the log holds there. Kept apart from the checks themselves so a
reader of findings needs no numpy."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from logdoctor.checks.catalog import FindingCode

__all__ = ["Finding", "FindingCode", "Severity"]


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem, with the index entry involved and what the log holds there."""

    code: FindingCode
    severity: Severity
    file: str | None
    message: str
    slot: int | None = None  # entry number in the index
    entry: dict[str, int] | None = None  # {"offset", "position"} or {"timestamp", "offset"}
    log: dict[str, Any] | None = None  # what the log holds (batch bounds, timestamps, ...)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "finding",
            "code": self.code.value,
            "severity": self.severity.value,
            "file": self.file,
            "slot": self.slot,
            "message": self.message,
            "entry": self.entry,
            "log": self.log,
        }

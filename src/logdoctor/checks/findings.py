"""One finding of a scan: what is wrong, where (file and byte position), and how to fix it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Severity(enum.IntEnum):
    """Ordered so that ``max()`` gives the worst; the scan's exit code follows the worst finding."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class FindingRef:
    """Which finding another one points at: its code, path and byte position."""

    code: str
    path: str
    position: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "path": self.path, "position": self.position}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> FindingRef:
        return cls(obj["code"], obj["path"], obj.get("position"))


@dataclass(frozen=True, slots=True)
class Finding:
    """One catalogued problem.

    ``path`` is the file (or folder) the finding is about; ``position`` the byte position in that
    file when the problem is at a place in it; ``offset`` the Kafka offset when one applies.
    ``details`` holds machine-readable figures (e.g. both timestamps of a RETENTION_RISK).
    ``caused_by`` names the finding this one is a consequence of (:func:`FindingRef`; set by
    :mod:`logdoctor.checks.consequences`): people see it under its cause, JSON keeps both with the link.
    """

    code: str
    severity: Severity
    path: str
    message: str
    fix: str
    position: int | None = None
    offset: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    caused_by: FindingRef | None = None
    #: the commands of ``fix`` as argv lists (``fix`` quotes each with ``shlex.join``; checks.catalog.make)
    fix_argv: tuple[tuple[str, ...], ...] = ()

    @property
    def ref(self) -> FindingRef:
        return FindingRef(self.code, self.path, self.position)

    def sort_key(self) -> tuple:
        return (self.path, -1 if self.position is None else self.position, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.label,
            "path": self.path,
            "position": self.position,
            "offset": self.offset,
            "message": self.message,
            "fix": self.fix,
            "fix_argv": [list(argv) for argv in self.fix_argv],
        }
        if self.details:
            out["details"] = self.details
        if self.caused_by is not None:
            out["caused_by"] = self.caused_by.to_json()
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Finding:
        return cls(
            code=obj["code"],
            severity=Severity[obj["severity"].upper()],
            path=obj["path"],
            message=obj["message"],
            fix=obj["fix"],
            position=obj.get("position"),
            offset=obj.get("offset"),
            details=dict(obj.get("details") or {}),
            caused_by=FindingRef.from_json(obj["caused_by"]) if obj.get("caused_by") else None,
            fix_argv=tuple(tuple(argv) for argv in obj.get("fix_argv") or ()),
        )


def worst(findings: list[Finding]) -> Severity | None:
    return max((f.severity for f in findings), default=None)


def exit_code(findings: list[Finding]) -> int:
    """0 clean (info only), 1 warnings only, 2 errors."""
    w = worst(findings)
    if w is None or w is Severity.INFO:
        return 0
    return 1 if w is Severity.WARNING else 2
